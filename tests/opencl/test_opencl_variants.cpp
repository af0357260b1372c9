// Every kernel variant of the heavy nodes (kernel_variants.h: tiled
// convolutions along the row and along the channels, depthwise, gemm for
// MatMul and 1x1 convolutions, the plain kernels, the GEMM library with its
// bias and post-ops after it) against the CPU driver, on
// random shapes that mostly do not divide the tiles. The variants are built
// directly on a device of the OpenCL driver's own (the driver would pick one
// variant per node; here each one runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/network.h"
#include "drivers/gpu/program.h"
#include "drivers/opencl/cl_device.h"
#include "tests/opencl/opencl_test_util.h"

namespace hetero::test {
namespace {

std::shared_ptr<gpu::Device> opencl_device() {
  static std::shared_ptr<gpu::Device> device = [] {
    std::string why;
    auto infos = opencl::enumerate_devices(why);
    return infos.empty() ? nullptr : std::make_shared<opencl::ClDevice>(infos[0], "OPENCL-variants");
  }();
  return device;
}

#define REQUIRE_DEVICE() \
  if (!opencl_device()) GTEST_SKIP() << "no OpenCL device"

// The default variant, the plain kernel, the GEMM library (CLBlast, where
// the driver has it), and every tiled kind at widths 16, 8, 4 and 1 (the
// scalar path) with tiles that divide none of the shapes below, the last
// also with an explicit work-group size (which rounds the global size up).
std::vector<gpu::KernelVariant> variants_to_test(const gpu::ProgramNode& n, const gpu::ProgramGraph& g) {
  using K = gpu::KernelVariant::Kind;
  std::vector<gpu::KernelVariant> out = {gpu::default_variant(n, g, opencl_device()->traits()), {}};
  const bool depthwise = n.prim.kind == gpu::PrimKind::Conv && gpu::conv_geometry(n, g).ocg == 1;
  const gpu::KernelVariant library{K::Library};
  if (opencl_device()->traits().library_gemm && gpu::variant_fits(library, n, g)) out.push_back(library);
  for (K kind : {K::Gemm, K::Spatial, K::Channel})
    for (const auto& [vw, rows, cols] : std::vector<std::array<uint32_t, 3>>{{16, 5, 2}, {8, 3, 1}, {4, 2, 3}, {1, 3, 1}}) {
      const gpu::KernelVariant v{kind, vw, kind == K::Spatial && depthwise ? 1 : rows, cols};
      if (gpu::variant_fits(v, n, g) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
  gpu::KernelVariant grouped = out.back();
  grouped.local = {2, 1, 1};
  if (grouped.kind != K::Plain && grouped.kind != K::Library) out.push_back(grouped);
  return out;
}

// The driver opens CLBlast when a device first asks for it
// (drivers/opencl/clblast_library.h); a build with it must find it here, or
// the library variant would go untested without a word.
TEST(OpenClVariants, TheGemmLibraryOpensWhereTheBuildHasIt) {
  REQUIRE_DEVICE();
#if HETERO_HAVE_CLBLAST
  EXPECT_TRUE(opencl_device()->traits().library_gemm) << "built with CLBlast, but libclblast.so.1 did not open";
#else
  GTEST_SKIP() << "built without CLBlast (-Dclblast=disabled)";
#endif
}

// Runs `text` on CPU, then its heavy node with each variant on the device,
// and compares (rtol 1e-3, atol 1e-4). Returns how many variants ran.
size_t check_variants(const std::string& text, const std::vector<core::Tensor>& inputs, const std::string& what) {
  SCOPED_TRACE(what);
  auto m = model(text);
  const std::vector<core::Tensor> want = run_on(*m, "CPU", inputs);
  gpu::ProgramGraph g = gpu::init_program(gpu::build_topology(m->graph));
  gpu::passes::fold_channel_constants(g);
  gpu::passes::fuse_post_ops(g);
  size_t heavy = g.nodes.size();
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (gpu::has_variants(g.nodes[i])) heavy = i;
  EXPECT_LT(heavy, g.nodes.size()) << "no Conv or MatMul left after fusion";
  if (heavy == g.nodes.size()) return 0;

  // Every variant's program, built together as the tuner builds them.
  const auto variants = variants_to_test(g.nodes[heavy], g);
  std::vector<gpu::ProgramGraph> graphs;
  std::map<std::string, std::string> codes;
  for (const gpu::KernelVariant& v : variants) {
    gpu::ProgramGraph one = g;
    for (gpu::ProgramNode& n : one.nodes)
      if (gpu::has_variants(n)) n.variant = gpu::default_variant(n, one, {});
    one.nodes[heavy].variant = v;
    gpu::passes::reorder_weights(one);
    for (const auto& [name, code] : gpu::select_kernels(one, opencl_device()->max_work_group_size()))
      codes.emplace(name, code);
    graphs.push_back(std::move(one));
  }
  const gpu::BuiltKernels built = gpu::build_kernels(*opencl_device(), codes, 8, 2);
  for (size_t i = 0; i < variants.size(); ++i) {
    SCOPED_TRACE(variants[i].text());
    gpu::Network network(gpu::assemble_program(graphs[i], opencl_device(), built));
    const std::vector<core::Tensor> got = network.execute(inputs);
    EXPECT_TRUE(same_values(want, got));
  }
  return variants.size();
}

std::string conv_case(std::mt19937& rng, const core::Shape& xs, int64_t cout, int64_t k, int64_t stride, int64_t dil,
                      int64_t pad, int64_t group, bool bias, const std::string& post, core::Shape& ys) {
  const bool two_d = xs.size() == 4;
  auto out_dim = [&](int64_t in) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; };
  ys = two_d ? core::Shape{xs[0], cout, out_dim(xs[2]), out_dim(xs[3])} : core::Shape{xs[0], cout, out_dim(xs[2])};
  const core::Shape ws = two_d ? core::Shape{cout, xs[1] / group, k, k} : core::Shape{cout, xs[1] / group, k};
  auto pair = [&](int64_t v) { return two_d ? std::to_string(v) + "," + std::to_string(v) : std::to_string(v); };
  const std::string pads = two_d ? pair(pad) + "," + pair(pad) : pair(pad) + "," + pair(pad);
  const std::string attrs = "<group = " + std::to_string(group) + ", strides = [" + pair(stride) + "], dilations = [" +
                            pair(dil) + "], pads = [" + pads + "]>";
  std::string inits = initializer("w", ws, rng) + (bias ? ", " + initializer("b", {cout}, rng) : "");
  std::string body = "c = Conv " + attrs + "(x, w" + (bias ? ", b" : "") + ")\n";
  std::string in = type_text("float", xs) + " x";
  if (post == "relu") {
    body += "y = Relu(c)";
  } else if (post == "residual") {
    in += ", " + type_text("float", ys) + " r";
    body += "d = Add(c, r)\ny = LeakyRelu <alpha = 0.1> (d)";
  } else if (post == "scale" || post == "row scale") {
    // Per channel (as a squeeze-excite block scales), or per row: an
    // operand at run time, broadcast over the tile or not.
    core::Shape ss(ys.size(), 1);
    ss[post == "scale" ? 1 : 2] = ys[post == "scale" ? 1 : 2];
    in += ", " + type_text("float", ss) + " s";
    body += "y = Mul(c, s)";
  } else {
    body += "y = Identity(c)";
  }
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + in + ") => (" + type_text("float", ys) + " y) <" + inits +
         "> {\n" + body + "\n}\n";
}

TEST(OpenClVariants, Convolutions) {
  REQUIRE_DEVICE();
  std::mt19937 rng(11);
  struct Case {
    core::Shape x;
    int64_t cout, k, stride, dil, pad, group;
    const char* post;
  };
  const Case cases[] = {
      {{1, 5, 7, 19}, 13, 3, 1, 1, 1, 1, "relu"},       // rows and channels that divide no tile
      {{2, 3, 9, 37}, 7, 3, 2, 1, 1, 1, "residual"},    // stride 2, batch 2
      {{1, 4, 11, 23}, 9, 2, 3, 1, 0, 1, ""},           // stride 3, even kernel
      {{1, 6, 10, 21}, 6, 3, 1, 2, 2, 1, "relu"},       // dilation
      {{1, 12, 6, 17}, 12, 5, 1, 1, 2, 12, "residual"},  // depthwise 5x5
      {{1, 16, 9, 33}, 16, 3, 2, 1, 1, 16, "relu"},     // depthwise, stride 2
      {{1, 8, 5, 18}, 12, 3, 1, 1, 1, 4, "scale"},      // grouped
      {{1, 19, 6, 21}, 21, 1, 1, 1, 0, 1, "residual"},  // 1x1: gemm
      {{1, 9, 7, 40}, 11, 1, 1, 1, 0, 1, "scale"},      // 1x1
      {{1, 6, 5, 40}, 10, 1, 1, 1, 0, 1, "row scale"},  // 1x1, an operand varying inside a plane
      {{2, 7, 3, 5}, 18, 1, 1, 1, 0, 1, "relu"},        // 1x1, fewer columns than a vector
      {{1, 3, 61}, 10, 7, 4, 1, 3, 1, "relu"},          // 1-D, stride 4
      {{1, 1, 300}, 17, 32, 16, 1, 0, 1, ""},           // 1-D, long kernel, long stride (a spectrogram)
  };
  size_t ran = 0;
  for (const Case& c : cases) {
    core::Shape ys;
    const bool bias = rng() % 2;
    const std::string text = conv_case(rng, c.x, c.cout, c.k, c.stride, c.dil, c.pad, c.group, bias, c.post, ys);
    std::vector<core::Tensor> inputs = {random_tensor(c.x, rng)};
    if (std::string(c.post) == "residual") inputs.push_back(random_tensor(ys, rng));
    if (std::string(c.post) == "scale") inputs.push_back(random_tensor({1, ys[1], 1, 1}, rng));
    if (std::string(c.post) == "row scale") inputs.push_back(random_tensor({1, 1, ys[2], 1}, rng));
    ran += check_variants(text, inputs, "conv x" + type_text("", c.x) + " oc " + std::to_string(c.cout) + " k" +
                                            std::to_string(c.k) + " s" + std::to_string(c.stride) + " g" +
                                            std::to_string(c.group) + (bias ? " bias " : " ") + c.post);
  }
  EXPECT_GT(ran, 6 * std::size(cases));
}

TEST(OpenClVariants, MatMuls) {
  REQUIRE_DEVICE();
  std::mt19937 rng(12);
  auto text = [](const std::string& in, const core::Shape& ys, const std::string& body, const std::string& inits) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + in + ") => (" + type_text("float", ys) + " y)" +
           (inits.empty() ? "" : " <" + inits + ">") + " {\n" + body + "\n}\n";
  };
  // Both operands at run time, batch broadcast.
  check_variants(text("float[2,3,5,19] a, float[3,19,21] b", {2, 3, 5, 21}, "y = MatMul(a, b)", ""),
                 {random_tensor({2, 3, 5, 19}, rng), random_tensor({3, 19, 21}, rng)}, "batched");
  // Constant B, fused bias and activation (a classifier head).
  check_variants(text("float[7,33] a", {7, 2}, "m = MatMul(a, b)\nc = Add(m, bias)\ny = Sigmoid(c)",
                      initializer("b", {33, 2}, rng) + ", " + initializer("bias", {2}, rng)),
                 {random_tensor({7, 33}, rng)}, "narrow N");
  // Gemm with B given transposed: stored back as [K, N] for gemm.cl.
  check_variants(text("float[9,17] a", {9, 23}, "y = Gemm <transB = 1>(a, b, c)",
                      initializer("b", {23, 17}, rng) + ", " + initializer("c", {23}, rng)),
                 {random_tensor({9, 17}, rng)}, "gemm transB");
  // A long row (spectrogram frames times a mel matrix) with post-ops.
  check_variants(text("float[1,1,13,37] a", {1, 1, 13, 5}, "m = MatMul(a, b)\nc = Clip(m, lo, hi)\ny = Log(c)",
                      initializer("b", {37, 5}, rng, 0.f, 1.f) + ", float lo = {0.01}, float hi = {100}"),
                 {random_tensor({1, 1, 13, 37}, rng, 0.f, 1.f)}, "row of frames");
}

}  // namespace
}  // namespace hetero::test
