// The API-neutral GPU parts (drivers/gpu) on a fake device: program building
// (passes, kernel batching), the memory plan, and the blob codec on every
// truncation and on flipped bytes. No OpenCL here, so these run in the
// 'unit' suite and under ASan/UBSan; tests/opencl runs the same code on PoCL.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "core/error.h"
#include "core/ports.h"
#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/memory_pool.h"
#include "drivers/gpu/program.h"
#include "drivers/gpu/tuner.h"
#include "tests/unit/expect_error.h"
#include "tests/unit/model_text.h"

namespace hetero::gpu {
namespace {

class FakeBuffer final : public Buffer {
 public:
  explicit FakeBuffer(size_t n) : size_(n) {}
  size_t size() const override { return size_; }

 private:
  size_t size_;
};

class FakeExecutable final : public Executable {
 public:
  explicit FakeExecutable(std::vector<uint8_t> bin) : bin_(std::move(bin)) {}
  std::vector<uint8_t> binary() const override { return bin_; }

 private:
  std::vector<uint8_t> bin_;
};

class FakeKernel final : public Kernel {
 public:
  void set_arg(uint32_t, Buffer&) override {}
};

// Runs nothing, at once: enough for the tuner to time candidates.
class FakeQueue final : public Queue {
 public:
  EventPtr write(Buffer&, const void*, size_t, const std::vector<EventPtr>&) override { return done(); }
  EventPtr read(Buffer&, void*, size_t, const std::vector<EventPtr>&) override { return done(); }
  EventPtr launch(Kernel&, const Range&, const std::vector<EventPtr>&) override { return done(); }
  void wait(const std::vector<EventPtr>&) override {}

 private:
  static EventPtr done() { return std::make_shared<Event>(); }
};

// Builds nothing; counts what it was asked to do. With `traits`, a device of
// that kind (a CPU one, with its compute units); with `runs`, one whose
// queue runs nothing (else it has none, and so cannot tune).
class FakeDevice final : public Device {
 public:
  explicit FakeDevice(DeviceTraits traits = {}, bool runs = false) : traits_(traits), runs_(runs) {}
  std::string name() const override { return "FAKE"; }
  size_t max_work_group_size() const override { return 256; }
  DeviceTraits traits() const override { return traits_; }
  std::shared_ptr<Buffer> allocate(size_t bytes, const void*) override { return std::make_shared<FakeBuffer>(bytes); }
  std::shared_ptr<Executable> build(const std::string& source, const std::string&) override {
    ++builds;
    return std::make_shared<FakeExecutable>(std::vector<uint8_t>(source.begin(), source.end()));
  }
  std::shared_ptr<Executable> load(std::span<const uint8_t> binary, const std::string&) override {
    ++loads;
    return std::make_shared<FakeExecutable>(std::vector<uint8_t>(binary.begin(), binary.end()));
  }
  std::unique_ptr<Kernel> kernel(const Executable&, const std::string&) override { return std::make_unique<FakeKernel>(); }
  std::unique_ptr<Queue> queue() override { return runs_ ? std::make_unique<FakeQueue>() : nullptr; }
  uint64_t source_builds() const override { return builds; }
  std::atomic<uint64_t> builds{0}, loads{0};

 private:
  DeviceTraits traits_;
  bool runs_;
};

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,4] y) <
  float[4,3,3,3] w1 = {1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
                       1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
                       1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,
                       1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9},
  float[4] s = {1,2,3,4}, float[4] b = {0,1,0,1}, float[4] m = {0,0,0,0}, float[4] v = {1,1,1,1},
  float[4,4] fc = {1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1}, int64[1] zero = {0}, int64[1] one = {1}, int64[1] minus = {-1}> {
  c = Conv <pads = [1,1,1,1]>(x, w1)
  n = BatchNormalization(c, s, b, m, v)
  r = Relu(n)
  e = Exp(r)
  a = Add(e, r)
  p = GlobalAveragePool(a)
  sh = Shape(p)
  bs = Slice(sh, zero, one)
  new = Concat <axis = 0>(bs, minus)
  f = Reshape(p, new)
  mm = MatMul(f, fc)
  y = Softmax <axis = 1>(mm)
}
)";

TEST(GpuProgram, PassesFoldFuseAndBatchKernels) {
  auto model = test::model_from_text(kModel);
  ProgramGraph g = init_program(build_topology(model->graph));
  // Shape arithmetic folded: no Shape/Slice/Concat node is left.
  for (const ProgramNode& n : g.nodes) EXPECT_NE(n.prim.op, "Shape");
  const size_t before = g.nodes.size();
  passes::fold_channel_constants(g);
  passes::fuse_post_ops(g);
  passes::reorder_weights(g);
  EXPECT_LT(g.nodes.size(), before);
  ASSERT_FALSE(g.nodes.empty());
  EXPECT_EQ(g.nodes[0].prim.kind, PrimKind::Conv);
  EXPECT_FALSE(g.nodes[0].post_ops.empty()) << "Relu after the folded BatchNormalization";

  auto device = std::make_shared<FakeDevice>();
  BuildOptions o;
  o.kernels_per_batch = 2;
  auto program = build_program(*model, device, o);
  const size_t kernels = program->plan.kernels.size();
  EXPECT_EQ(program->plan.programs.size(), (kernels + 1) / 2);
  EXPECT_EQ(device->builds.load(), program->plan.programs.size());
  EXPECT_LT(program->plan.pool_total_bytes(), program->plan.intermediate_bytes + 1);
  for (size_t s = 0; s < program->plan.steps.size(); ++s)
    for (uint32_t d : program->plan.steps[s].deps) EXPECT_LT(d, s);
}

TEST(GpuProgram, BlobRoundTripLoadsBinariesOnly) {
  auto model = test::model_from_text(kModel);
  auto device = std::make_shared<FakeDevice>();
  auto program = build_program(*model, device, {});
  const uint64_t builds = device->builds;
  const std::vector<uint8_t> blob = export_program(*program);
  auto imported = import_program(blob, device);
  EXPECT_EQ(device->builds.load(), builds);
  EXPECT_EQ(device->loads.load(), program->plan.programs.size());
  EXPECT_EQ(imported->plan.steps.size(), program->plan.steps.size());
  EXPECT_EQ(imported->plan.pool_bytes, program->plan.pool_bytes);
  EXPECT_EQ(export_program(*imported), blob);
}

TEST(GpuProgram, DamagedBlobsAreErrorsNeverCrashes) {
  auto model = test::model_from_text(kModel);
  auto device = std::make_shared<FakeDevice>();
  const std::vector<uint8_t> blob = export_program(*build_program(*model, device, {}));
  for (size_t cut = 0; cut < blob.size(); cut += 1 + cut / 16) {
    try {
      import_program(std::span(blob.data(), cut), device);
      ADD_FAILURE() << "a blob cut at " << cut << " of " << blob.size() << " was imported";
    } catch (const Failure& e) {
      EXPECT_EQ(e.status(), HETERO_BLOB_CORRUPT) << e.what();
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bad = blob;
    bad[rng() % bad.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    try {
      (void)import_program(bad, device);  // a flip inside data may still decode
    } catch (const Failure& e) {
      EXPECT_TRUE(e.status() == HETERO_BLOB_CORRUPT || e.status() == HETERO_INVALID_ARGUMENT ||
                  e.status() == HETERO_OUT_OF_MEMORY)
          << e.what();
    }
  }
}

// A model whose convolution is heavy enough to tune (2 x 16 x 32 x 32 x
// 8 x 9 FLOPs) and whose MatMul is a library call's shape.
std::string heavy_model() {
  std::string w = "float[16,8,3,3] w = {";
  for (int i = 0; i < 16 * 8 * 9; ++i) {
    if (i) w += ',';
    w += std::to_string((i % 7) * 0.1);
  }
  return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,32,32] x, float[1,16,32,8] m) => (float[1,16,32,8] y) <)" + w + R"(}> {
  c = Conv <pads = [1,1,1,1]>(x, w)
  y = MatMul(c, m)
}
)";
}

TEST(GpuProgram, TuningChoicesTravelInBlobsAndSeedTheCache) {
  auto model = test::model_from_text(heavy_model().c_str());
  auto device = std::make_shared<FakeDevice>();
  // Untuned: every Conv and MatMul shape has its default, recorded as such.
  auto untuned = build_program(*model, device, {});
  ASSERT_EQ(untuned->plan.tuning.size(), 2u);
  for (const TuningRecord& r : untuned->plan.tuning) EXPECT_EQ(r.level, 0) << r.key;
  const TuningRecord& conv = untuned->plan.tuning[0].key.rfind("conv", 0) == 0 ? untuned->plan.tuning[0] : untuned->plan.tuning[1];

  // A blob's choice seeds the process's cache for its device: compiling the
  // same shape then takes it without timing anything (this device cannot
  // time: its queue is null).
  const std::string chosen = "channel vw4 r2 c3 l0x0x0";
  remember_choices(device->name(), {{conv.key, chosen, static_cast<uint8_t>(Tuning::Fast)}});
  BuildOptions fast;
  fast.tuning = Tuning::Fast;
  auto tuned = build_program(*model, device, fast);
  bool found = false;
  for (const TuningRecord& r : tuned->plan.tuning)
    if (r.key == conv.key) {
      EXPECT_EQ(r.variant, chosen);
      EXPECT_EQ(r.level, static_cast<uint8_t>(Tuning::Fast));
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(tuning_runs(device->name()), 0u);
  // The records survive export and import.
  EXPECT_EQ(import_program(export_program(*tuned), device)->plan.tuning, tuned->plan.tuning);
}

// A fast compile times the twelve heaviest shapes; a shape past them keeps
// its default variant in every node that has it (the second and later ones
// were left with the plain kernel, 25x slower on PP-OCR det's depthwise
// convolutions).
TEST(GpuProgram, UntunedShapesKeepTheirDefaultInEveryNode) {
  // Two convolutions of one shape (16 -> 16 channels), then thirteen heavier
  // shapes (16 -> 24, 24 -> 25, ..., 36 -> 37), weights as inputs.
  std::string inputs = "float[1,16,16,16] x", body;
  std::string prev = "x";
  std::vector<int64_t> channels = {16, 16, 16, 24};
  for (int64_t c = 25; c <= 37; ++c) channels.push_back(c);
  for (size_t i = 1; i < channels.size(); ++i) {
    const std::string w = "w" + std::to_string(i), y = i + 1 == channels.size() ? "y" : "c" + std::to_string(i);
    inputs += ", float[" + std::to_string(channels[i]) + "," + std::to_string(channels[i - 1]) + ",3,3] " + w;
    body += "  " + y + " = Conv <pads = [1,1,1,1]> (" + prev + ", " + w + ")\n";
    prev = y;
  }
  auto model = test::model_from_text(("<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + inputs +
                                      ") => (float[1,37,16,16] y) {\n" + body + "}\n").c_str());
  BuildOptions fast;
  fast.tuning = Tuning::Fast;
  auto program = build_program(*model, std::make_shared<FakeDevice>(DeviceTraits{}, true), fast);
  ASSERT_EQ(program->plan.tuning.size(), 15u);
  size_t tuned = 0;
  for (const TuningRecord& r : program->plan.tuning) tuned += r.level != 0;
  EXPECT_EQ(tuned, 12u);
  ASSERT_GE(program->plan.steps.size(), 2u);
  EXPECT_EQ(program->plan.steps[0].kernel, program->plan.steps[1].kernel) << "one shape, one variant";
}

// On a CPU device (PoCL) a tiled launch is split into at least four groups
// per compute unit, every group the same size, so that no thread idles while
// one runs a whole convolution; elsewhere the runtime chooses.
TEST(GpuProgram, TiledLaunchesGiveEveryComputeUnitWork) {
  auto model = test::model_from_text(heavy_model().c_str());
  DeviceTraits cpu;
  cpu.cpu = true;
  cpu.vector_width = 8;
  cpu.compute_units = 2;
  for (const DeviceTraits& traits : {cpu, DeviceTraits{}}) {
    auto program = build_program(*model, std::make_shared<FakeDevice>(traits), {});
    size_t tiled = 0;
    for (const Step& s : program->plan.steps) {
      if (s.range.dims != 3) continue;
      ++tiled;
      if (!traits.cpu) {
        EXPECT_EQ(s.range.local, (std::array<size_t, 3>{0, 0, 0})) << s.node;
        continue;
      }
      size_t groups = 1;
      for (size_t d = 0; d < 3; ++d) {
        ASSERT_GT(s.range.local[d], 0u) << s.node;
        EXPECT_EQ(s.range.global[d] % s.range.local[d], 0u) << s.node;
        groups *= s.range.global[d] / s.range.local[d];
      }
      EXPECT_GE(groups, 8u) << s.node;
    }
    EXPECT_EQ(tiled, 2u) << "the convolution and the MatMul";
  }
}

// A squeeze-and-excitation block's pooling and two 1x1 convolutions are one
// step; the scaling Mul stays a step of its own, unless a 1x1 convolution
// reads it, which then scales its input itself.
TEST(GpuProgram, SqueezeExciteIsOneStep) {
  auto model = test::model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] x) => (float[1,4,6,6] y) <float[2,4,1,1] w1 = {1,2,3,4,5,6,7,8}, float[2] b1 = {0,1},
                                           float[4,2,1,1] w2 = {1,2,3,4,5,6,7,8}> {
  p = GlobalAveragePool(x)
  h = Conv(p, w1, b1)
  r = Relu(h)
  e = Conv(r, w2)
  s = Sigmoid(e)
  y = Mul(x, s)
}
)");
  auto program = build_program(*model, std::make_shared<FakeDevice>(), {});
  ASSERT_EQ(program->plan.steps.size(), 2u);
  EXPECT_EQ(program->plan.steps[0].node, "Conv_3") << "named after the second convolution";

  auto projected = test::model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] x) => (float[1,3,6,6] y) <float[2,4,1,1] w1 = {1,2,3,4,5,6,7,8}, float[4,2,1,1] w2 = {1,2,3,4,5,6,7,8},
                                           float[3,4,1,1] w3 = {1,2,3,4,5,6,7,8,9,10,11,12}> {
  p = GlobalAveragePool(x)
  h = Conv(p, w1)
  e = Conv(h, w2)
  m = Mul(x, e)
  y = Conv(m, w3)
}
)");
  program = build_program(*projected, std::make_shared<FakeDevice>(), {});
  ASSERT_EQ(program->plan.steps.size(), 2u);
  EXPECT_EQ(program->plan.steps[1].node, "Conv_4") << "the projection";
}

TEST(GpuProgram, LibraryCallsPastTheirBuffersAreCorruptBlobs) {
  class LibraryDevice final : public Device {
   public:
    std::string name() const override { return "FAKE-LIBRARY"; }
    size_t max_work_group_size() const override { return 256; }
    DeviceTraits traits() const override { return {false, 4, true}; }
    std::shared_ptr<Buffer> allocate(size_t bytes, const void*) override { return std::make_shared<FakeBuffer>(bytes); }
    std::shared_ptr<Executable> build(const std::string& s, const std::string&) override {
      return std::make_shared<FakeExecutable>(std::vector<uint8_t>(s.begin(), s.end()));
    }
    std::shared_ptr<Executable> load(std::span<const uint8_t> b, const std::string&) override {
      return std::make_shared<FakeExecutable>(std::vector<uint8_t>(b.begin(), b.end()));
    }
    std::unique_ptr<Kernel> kernel(const Executable&, const std::string&) override { return std::make_unique<FakeKernel>(); }
    std::unique_ptr<Queue> queue() override { return nullptr; }
    uint64_t source_builds() const override { return 0; }
  };
  auto device = std::make_shared<LibraryDevice>();
  auto model = test::model_from_text(heavy_model().c_str());
  ProgramGraph g = init_program(build_topology(model->graph));
  for (ProgramNode& n : g.nodes)
    if (has_variants(n))
      n.variant = n.prim.kind == PrimKind::MatMul ? KernelVariant{KernelVariant::Kind::Library} : default_variant(n, g, {});
  passes::reorder_weights(g);
  BuiltKernels built = build_kernels(*device, select_kernels(g, 256), 8, 1);
  auto program = assemble_program(g, device, built);
  program->inputs = core::ports_of(model->graph.inputs);
  program->outputs = core::ports_of(model->graph.outputs);
  size_t library_steps = 0;
  for (const Step& s : program->plan.steps) library_steps += s.gemm.has_value();
  ASSERT_EQ(library_steps, 1u);
  EXPECT_NO_THROW(import_program(export_program(*program), device));
  for (auto harm : {+[](LibraryGemm& g) { g.m *= 2; }, +[](LibraryGemm& g) { g.batch *= 2; },
                    +[](LibraryGemm& g) { g.c_stride = uint64_t(1) << 62; }}) {
    auto bad = std::make_shared<CompiledProgram>(*program);
    for (Step& s : bad->plan.steps)
      if (s.gemm) harm(*s.gemm);
    try {
      import_program(export_program(*bad), device);
      ADD_FAILURE() << "a library call past its buffers was imported";
    } catch (const Failure& e) {
      EXPECT_EQ(e.status(), HETERO_BLOB_CORRUPT) << e.what();
      EXPECT_NE(std::string(e.what()).find("library call"), std::string::npos) << e.what();
    }
  }
}

TEST(GpuProgram, UnsupportedNodesNameThemselves) {
  auto model = test::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3,4] x, int64[2] i) => (float[2,4] y) {
  y = Gather(x, i)
}
)");
  std::vector<std::string> reasons(1);
  build_topology(model->graph, &reasons);
  EXPECT_NE(reasons[0].find("Gather"), std::string::npos) << reasons[0];
  try {
    build_program(*model, std::make_shared<FakeDevice>(), {});
    ADD_FAILURE() << "built a program with a Gather";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
    EXPECT_NE(std::string(e.what()).find("Gather"), std::string::npos) << e.what();
  }
}

// Asked what it runs of a model with a dynamic dim, the GPU says of each
// node of a QDQ chain that a shape is missing, the DequantizeLinear after a
// QuantizeLinear it could not take included (which once threw map::at).
TEST(GpuProgram, ADynamicQdqChainNamesTheMissingShape) {
  auto model = test::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x, float[N,4] b) => (float[N,4] y) {
  s = Constant<value = float {0.5}>()
  zp = Constant<value = uint8 {128}>()
  q = QuantizeLinear(x, s, zp)
  d = DequantizeLinear(q, s, zp)
  y = Sum(d, b, b)
}
)");
  std::vector<std::string> reasons(model->graph.nodes().size());
  build_topology(model->graph, &reasons);
  for (const auto& node : model->graph.nodes()) {
    if (node->op_type == "Constant") continue;
    EXPECT_NE(reasons[node->index].find("has no static shape"), std::string::npos)
        << node->op_type << ": " << reasons[node->index];
  }
}

// A Reshape is a view: the GPU takes the shape its output is declared with.
// One declared other than its shape input makes (the same element count) is
// an invalid model, not a tensor of the declared shape. ONNX's shape
// inference catches that in a main graph, not in an If's branch.
TEST(GpuProgram, ReshapeDeclaredOtherThanItsShapeInputIsInvalid) {
  auto model = test::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[6] x) => (float[2,3] y) {
  c = Constant<value = bool {1}>()
  y = If(c) <
    then_branch = t () => (float[2,3] ty) {
      s = Constant<value = int64[2] {3, 2}>()
      ty = Reshape(x, s)
    },
    else_branch = e () => (float[2,3] ey) {
      s2 = Constant<value = int64[2] {2, 3}>()
      ey = Reshape(x, s2)
    }
  >
}
)");
  test::expect_error([&] { build_topology(model->graph); }, HETERO_INVALID_MODEL,
                     {"its shape input makes 3x2, but its output 'ty' is declared 2x3"});
}

}  // namespace
}  // namespace hetero::gpu
