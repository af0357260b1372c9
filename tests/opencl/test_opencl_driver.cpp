// What the OpenCL driver does beyond the driver contract every device meets
// (tests/driver_contract, OPENCL instances): PoCL and its metrics, the ops its
// kernels lack, a CNN in PP-OCR's shape, blobs that import without compiling
// kernel source, the memory pool's reuse, and a host with no OpenCL platform.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "core/error.h"
#include "drivers/gpu/memory_pool.h"
#include "drivers/gpu/program.h"
#include "tests/opencl/opencl_test_util.h"

namespace hetero::test {
namespace {

// What the driver contract (tests/driver_contract) leaves to each device: the
// tests expect PoCL, and the OpenCL driver counts its kernel source builds.
TEST(OpenClDriver, PoclWithItsOwnMetrics) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  EXPECT_NE(rt.metric("OPENCL", "FULL_DEVICE_NAME").find("Portable Computing Language"), std::string::npos)
      << "the tests expect PoCL";
  EXPECT_NE(rt.metric("OPENCL", "SUPPORTED_PROPERTIES").find("KERNEL_SOURCE_BUILDS"), std::string::npos);
}

// The tuning key (the rest of the config: tests/driver_contract).
TEST(OpenClDriver, TuningIsOffFastOrFull) {
  REQUIRE_OPENCL();
  driver::Driver* d = runtime().registry().find("OPENCL");
  EXPECT_EQ(d->get_config("tuning"), "fast");
  try {
    d->set_config({{"tuning", "maybe"}});
    ADD_FAILURE() << "accepted tuning=maybe";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("off, fast or full"), std::string::npos) << e.what();
  }
}

// What its kernels lack (a Gather with indices known at run time, a
// reduction of int64: the numeric kernels take float32) is named.
TEST(OpenClDriver, QueryNamesWhatItsKernelsLack) {
  REQUIRE_OPENCL();
  auto m = model(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[3,4] x, int64[2] i, int64[3] k) => (float[2,4] y, int64[1] j, float[3,4] z) {\n"
      "r = Relu(x)\ny = Gather(r, i)\nj = ReduceSum(k)\nz = Sigmoid(x)\n}\n");
  const auto support = runtime().query(*m, "OPENCL");
  ASSERT_EQ(support.size(), 4u);
  EXPECT_TRUE(support[0].supported) << support[0].reason;
  EXPECT_FALSE(support[1].supported);
  EXPECT_NE(support[1].reason.find("Gather"), std::string::npos) << support[1].reason;
  EXPECT_FALSE(support[2].supported);
  EXPECT_NE(support[2].reason.find("int64"), std::string::npos) << support[2].reason;
  EXPECT_TRUE(support[3].supported) << support[3].reason;
}

TEST(OpenClDriver, PpOcrClsShapedCnnMatchesCpu) {
  REQUIRE_OPENCL();
  std::mt19937 rng(3);
  const std::vector<core::Tensor> in = {random_tensor({1, 3, 16, 16}, rng)};
  expect_same_as_cpu(small_cnn(), in, "small CNN");
}

// Convolutions heavy enough for the tuner (over a million FLOPs each), of
// shapes no other test uses: the process's tuning cache has not seen them.
std::string tunable_cnn(int64_t width) {
  std::mt19937 rng(43);
  const std::string w = std::to_string(width);
  return std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                     "g (float[1,8,20,") + w + "] x) => (float[1,24,20," + w + "] y) <" +
         initializer("w1", {16, 8, 3, 3}, rng) + ", " + initializer("b1", {16}, rng) + ", " +
         initializer("w2", {24, 16, 1, 1}, rng) + "> {\n"
         "c = Conv <pads = [1,1,1,1]>(x, w1, b1)\nr = Relu(c)\ny = Conv(r, w2)\n}\n";
}

TEST(OpenClDriver, TuningIsPaidOnceAndImportedBlobsNeitherBuildNorTune) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  auto metric = [&](const char* name) { return std::stoull(rt.metric("OPENCL", name)); };
  auto m = model(tunable_cnn(97));
  std::mt19937 rng(8);
  const core::Tensor x = random_tensor({1, 8, 20, 97}, rng);
  auto run = [&](driver::CompiledModel& c) {
    auto r = c.create_infer_request();
    r->set_input(0, x);
    r->infer();
    return r->output(0);
  };

  const uint64_t runs_before = metric("KERNEL_TUNING_RUNS");
  auto compiled = rt.compile(*m, "OPENCL", {{"tuning", "fast"}});
  const uint64_t runs_after = metric("KERNEL_TUNING_RUNS");
  EXPECT_GE(runs_after, runs_before + 4) << "two heavy convolutions, a few candidates each";
  // The same shapes again: the process remembers its choices.
  auto again = rt.compile(*m, "OPENCL", {{"tuning", "fast"}});
  EXPECT_EQ(metric("KERNEL_TUNING_RUNS"), runs_after) << "a repeated shape was tuned again";

  const std::vector<uint8_t> blob = rt.export_blob(*compiled, {});
  const uint64_t builds = metric("KERNEL_SOURCE_BUILDS");
  auto imported = rt.import_blob(blob);
  const core::Tensor a = run(*compiled), b = run(*imported);
  EXPECT_EQ(metric("KERNEL_SOURCE_BUILDS"), builds) << "an imported blob built kernel source";
  EXPECT_EQ(metric("KERNEL_TUNING_RUNS"), runs_after) << "an imported blob was tuned";
  ASSERT_EQ(a.shape(), b.shape());
  for (size_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  expect_same_as_cpu(tunable_cnn(97), {x}, "tuned");
}

TEST(OpenClDriver, TuningOffCompilesWithoutTiming) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  auto metric = [&](const char* name) { return std::stoull(rt.metric("OPENCL", name)); };
  EXPECT_NE(rt.metric("OPENCL", "SUPPORTED_PROPERTIES").find("KERNEL_TUNING_RUNS"), std::string::npos);
  const uint64_t runs = metric("KERNEL_TUNING_RUNS");
  std::mt19937 rng(9);
  // The same results with every level (each picks its own variants).
  expect_same_as_cpu(tunable_cnn(89), {random_tensor({1, 8, 20, 89}, rng)}, "tuning=off", {{"tuning", "off"}});
  EXPECT_EQ(metric("KERNEL_TUNING_RUNS"), runs) << "tuning=off timed kernels";
  // As the driver's config too.
  driver::Driver* d = rt.registry().find("OPENCL");
  d->set_config({{"tuning", "off"}});
  rt.compile(*model(tunable_cnn(83)), "OPENCL");
  d->set_config({{"tuning", "fast"}});
  EXPECT_EQ(metric("KERNEL_TUNING_RUNS"), runs) << "tuning=off (driver config) timed kernels";
}

TEST(OpenClDriver, ImportedBlobCompilesNoKernelSource) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  auto m = model(small_cnn());
  std::mt19937 rng(4);
  const core::Tensor x = random_tensor({1, 3, 16, 16}, rng);
  auto builds = [&] { return std::stoull(rt.metric("OPENCL", "KERNEL_SOURCE_BUILDS")); };

  const uint64_t before_compile = builds();
  auto compiled = rt.compile(*m, "OPENCL");
  const uint64_t after_compile = builds();
  EXPECT_GT(after_compile, before_compile) << "compiling builds kernel source";
  const std::vector<uint8_t> blob = rt.export_blob(*compiled, {});

  auto imported = rt.import_blob(blob);
  EXPECT_EQ(builds(), after_compile) << "an imported blob built kernel source";
  EXPECT_EQ(imported->device(), "OPENCL");

  auto run = [&](driver::CompiledModel& c) {
    auto r = c.create_infer_request();
    r->set_input(0, x);
    r->infer();
    return r->output(0);
  };
  const core::Tensor a = run(*compiled), b = run(*imported);
  ASSERT_EQ(a.shape(), b.shape());
  for (size_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  EXPECT_EQ(builds(), after_compile) << "running an imported blob built kernel source";
  // A second compile exports a blob that runs the same. (Not byte for byte:
  // the device binaries inside are the OpenCL implementation's, and PoCL's
  // differ between builds when its own kernel cache is off.)
  auto again = rt.import_blob(rt.export_blob(*rt.compile(*m, "OPENCL"), {}));
  const core::Tensor c = run(*again);
  for (size_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], c.data<float>()[i]) << i;
}

// A model that branches on an input compiles a program per outcome; its
// blob carries them all and the condition, and the import runs either
// branch building no kernel source. An outcome whose branch the GPU cannot
// compile (an op it has no kernel for) fails only the inferences that take it.
TEST(OpenClDriver, BlobOfAModelThatBranchesOnAnInput) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  auto m = model(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[2,3] x, int64 rate) => (float[2,3] y) <int64 k = {16000}> {\n"
      "c = Equal(rate, k)\n"
      "g2 = Greater(rate, k)\n"
      "y = If(c) <then_branch = b1 () => (float[2,3] t) { t = Neg(x) },\n"
      "  else_branch = b2 () => (float[2,3] e) {\n"
      "    e = If(g2) <then_branch = b3 () => (float[2,3] u) { u = Shrink(x) },\n"
      "                else_branch = b4 () => (float[2,3] v) { v = Relu(x) }>\n"
      "  }>\n}\n");
  std::mt19937 rng(19);
  const core::Tensor x = random_tensor({2, 3}, rng);
  auto builds = [&] { return std::stoull(rt.metric("OPENCL", "KERNEL_SOURCE_BUILDS")); };
  auto compiled = rt.compile(*m, "OPENCL");
  const uint64_t after_compile = builds();
  auto imported = rt.import_blob(rt.export_blob(*compiled, {}));
  EXPECT_EQ(builds(), after_compile) << "an imported blob built kernel source";
  auto run = [&](driver::CompiledModel& c, int64_t rate) {
    auto r = c.create_infer_request();
    r->set_input(0, x);
    r->set_input(1, core::Tensor::from_vector<int64_t>({rate}, {}));
    r->infer();
    return r->output(0);
  };
  for (driver::CompiledModel* c : {compiled.get(), imported.get()}) {
    const core::Tensor neg = run(*c, 16000), relu = run(*c, 8000);
    for (size_t i = 0; i < x.numel(); ++i) {
      EXPECT_EQ(neg.data<float>()[i], -x.data<float>()[i]) << i;
      EXPECT_EQ(relu.data<float>()[i], std::max(0.0f, x.data<float>()[i])) << i;
    }
    try {
      run(*c, 44100);
      ADD_FAILURE() << "a branch with an op the GPU lacks ran";
    } catch (const Failure& e) {
      EXPECT_NE(std::string(e.what()).find("a branch the GPU could not compile"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(builds(), after_compile) << "running an imported blob built kernel source";
}

// A model with dynamic input dims compiles per input shapes as inferences
// bring them, keeps the last few, and its blob carries those: the import
// runs them building no kernel source, and compiles only a new shape.
TEST(OpenClDriver, DynamicShapesCompileWhenFirstSeen) {
  REQUIRE_OPENCL();
  core::Runtime& rt = runtime();
  std::mt19937 rng(20);
  auto m = model("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                 "g (float[N,4,H,W] x) => (float[N,6,H,W] y) <" +
                 initializer("w", {6, 4, 3, 3}, rng) + ", " + initializer("b", {6}, rng) +
                 "> {\nc = Conv <pads = [1,1,1,1]>(x, w, b)\ny = Relu(c)\n}\n");
  auto cpu = rt.compile(*m, "CPU");
  auto builds = [&] { return std::stoull(rt.metric("OPENCL", "KERNEL_SOURCE_BUILDS")); };
  auto run = [](driver::CompiledModel& c, const core::Tensor& x) {
    auto r = c.create_infer_request();
    r->set_input(0, x);
    r->infer();
    return r->output(0);
  };
  auto compiled = rt.compile(*m, "OPENCL");
  const std::vector<core::Tensor> xs = {random_tensor({1, 4, 8, 8}, rng), random_tensor({2, 4, 5, 7}, rng),
                                        random_tensor({1, 4, 8, 8}, rng)};
  uint64_t before = builds();
  for (size_t k = 0; k < xs.size(); ++k) {
    EXPECT_TRUE(same_values({run(*cpu, xs[k])}, {run(*compiled, xs[k])})) << "shape " << core::shape_to_string(xs[k].shape());
    const uint64_t after = builds();
    if (k < 2) EXPECT_GT(after, before) << "a new shape compiles";
    else EXPECT_EQ(after, before) << "a shape seen before compiled again";
    before = after;
  }
  EXPECT_FALSE(compiled->inputs()[0].shape[0].known()) << "the compiled model's input stays dynamic";

  auto imported = rt.import_blob(rt.export_blob(*compiled, {}));
  const uint64_t after_import = builds();
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(same_values({run(*cpu, xs[k])}, {run(*imported, xs[k])}));
  EXPECT_EQ(builds(), after_import) << "the blob's shapes built kernel source";
  const core::Tensor x3 = random_tensor({1, 4, 3, 9}, rng);
  EXPECT_TRUE(same_values({run(*cpu, x3)}, {run(*imported, x3)}));
  EXPECT_GT(builds(), after_import) << "a shape the blob lacks compiles";
}

// The memory pool on the API-neutral program (no device needed): buffers
// are shared only between tensors whose live ranges do not overlap.
TEST(GpuMemoryPool, ReusesBuffersOfEndedLiveRanges) {
  auto m = model(small_cnn());
  gpu::ProgramGraph g = gpu::init_program(gpu::build_topology(m->graph));
  gpu::passes::fuse_post_ops(g);
  const auto codes = gpu::select_kernels(g, 64);
  std::map<std::string, uint32_t> index;
  for (const auto& [name, code] : codes) index.emplace(name, static_cast<uint32_t>(index.size()));
  gpu::NetworkPlan plan;
  gpu::plan_network(g, index, plan);
  EXPECT_LT(plan.pool_total_bytes(), plan.intermediate_bytes);
  // Replay: no step may write a pool buffer another live tensor holds. A
  // buffer is live from its write until its last read.
  std::map<uint32_t, size_t> last_read;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (const gpu::Ref& r : plan.steps[s].args)
      if (r.kind == gpu::Ref::Kind::Pool) last_read[r.index] = s;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (uint32_t d : plan.steps[s].deps) EXPECT_LT(d, s);
  }
  EXPECT_FALSE(plan.steps.empty());
}

// Run with OCL_ICD_VENDORS pointing at an empty directory (meson test
// 'opencl-no-platform'): the driver lists no device and says why; the CPU
// and everything else work as before.
TEST(NoOpenClPlatform, ZeroDevicesWithAReasonAndCpuStillWorks) {
  if (!std::getenv("HETERO_TEST_NO_OPENCL")) GTEST_SKIP() << "needs OCL_ICD_VENDORS set to an empty directory";
  core::Runtime& rt = runtime();
  const driver::Driver* d = rt.registry().find("OPENCL");
  ASSERT_NE(d, nullptr) << "the OPENCL module itself must load";
  EXPECT_TRUE(d->devices().empty());
  EXPECT_NE(d->no_device_reason().find("no OpenCL platform"), std::string::npos) << d->no_device_reason();
  for (const core::DeviceInfo& info : rt.devices()) EXPECT_NE(info.driver, "OPENCL");
  try {
    rt.compile(*model(small_cnn()), "OPENCL");
    ADD_FAILURE() << "compiled for a device that is not there";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("no OpenCL platform"), std::string::npos) << e.what();
  }
  std::mt19937 rng(6);
  const auto out = run_on(*model(small_cnn()), "CPU", {random_tensor({1, 3, 16, 16}, rng)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (core::Shape{1, 4}));
}

}  // namespace
}  // namespace hetero::test
