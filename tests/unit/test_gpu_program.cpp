// The API-neutral GPU parts (drivers/gpu) on a fake device: program building
// (passes, kernel batching), the memory plan, and the blob codec on every
// truncation and on flipped bytes. No OpenCL here, so these run in the
// 'unit' suite and under ASan/UBSan; tests/opencl runs the same code on PoCL.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "core/error.h"
#include "drivers/gpu/memory_pool.h"
#include "drivers/gpu/program.h"
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

// Builds nothing; counts what it was asked to do.
class FakeDevice final : public Device {
 public:
  std::string name() const override { return "FAKE"; }
  size_t max_work_group_size() const override { return 256; }
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
  std::unique_ptr<Queue> queue() override { return nullptr; }
  uint64_t source_builds() const override { return builds; }
  std::atomic<uint64_t> builds{0}, loads{0};
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
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), HETERO_BLOB_CORRUPT) << e.what();
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bad = blob;
    bad[rng() % bad.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    try {
      (void)import_program(bad, device);  // a flip inside data may still decode
    } catch (const Error& e) {
      EXPECT_TRUE(e.status() == HETERO_BLOB_CORRUPT || e.status() == HETERO_INVALID_ARGUMENT ||
                  e.status() == HETERO_OUT_OF_MEMORY)
          << e.what();
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
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
    EXPECT_NE(std::string(e.what()).find("Gather"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hetero::gpu
