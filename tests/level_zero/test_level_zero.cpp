// The Level Zero driver on a host with no Level Zero driver installed (the
// loader is, the GPU driver is not), beyond the driver contract every device
// meets (tests/driver_contract): the reason is the loader's, and
// HETERO:LEVEL_ZERO,CPU falls back to CPU unless the policy pins nodes to
// LEVEL_ZERO; and the parts that need no device: the native-binary wrapper
// blobs carry, launch geometry, the build-time SPIR-V modules, and run-time
// SPIR-V builds of the kernels the shared kernel selector instantiates for a
// real model.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "core/error.h"
#include "core/runtime.h"
#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/program.h"
#include "drivers/level_zero/spirv_compiler.h"
#include "drivers/level_zero/ze_codec.h"
#include "partition/hetero_driver.h"
#include "tests/unit/model_text.h"

namespace hetero::level_zero {
namespace {

core::Runtime& runtime() {
  static core::Runtime rt = [] {
    core::RuntimeOptions o;
    o.make_hetero_driver = partition::make_hetero_driver;
    return core::Runtime(o);
  }();
  return rt;
}

const driver::Driver* level_zero() { return runtime().registry().find("LEVEL_ZERO"); }

bool no_level_zero_device() {
  const driver::Driver* d = level_zero();
  return d && d->devices().empty();
}

std::string error_of(const std::function<void()>& fn, hetero_status expected) {
  try {
    fn();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// A small CNN: Conv + bias + Relu, MaxPool, Flatten, MatMul + Add, Softmax,
// with a Sigmoid and a Transpose and a ReduceMean and a Concat on the side.
constexpr const char* kSmallCnn = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 3, 8, 8] x) => (float[1, 4] y, float[1, 2, 4, 4] s, float[1, 2, 1, 1] m) {
  w = Constant <value = float[2, 3, 3, 3] {1,0,-1,1,0,-1,1,0,-1, 0,1,0,0,1,0,0,1,0, 1,1,1,0,0,0,-1,-1,-1,
                                           1,0,1,0,1,0,1,0,1, -1,0,1,-1,0,1,-1,0,1, 0,0,0,1,1,1,0,0,0}> ()
  b = Constant <value = float[2] {0.5, -0.5}> ()
  c = Conv <pads = [1, 1, 1, 1]> (x, w, b)
  r = Relu (c)
  p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r)
  s = Sigmoid (p)
  t = Transpose <perm = [0, 1, 3, 2]> (p)
  u = Concat <axis = 1> (s, t)
  m = ReduceMean <axes = [2, 3]> (p)
  f = Flatten (u)
  k = Constant <value = float[64, 4] {0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16,
    0.01,0.02,0.03,0.04,0.05,0.06,0.07,0.08,0.09,0.1,0.11,0.12,0.13,0.14,0.15,0.16}> ()
  kb = Constant <value = float[4] {0.1, 0.2, 0.3, 0.4}> ()
  mm = MatMul (f, k)
  a = Add (mm, kb)
  y = Softmax <axis = 1> (a)
}
)ONNX";

core::Tensor test_input() {
  std::vector<float> v(3 * 8 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 17) / 8.0f - 1.0f;
  return core::Tensor::from_vector(v, {1, 3, 8, 8});
}

std::vector<core::Tensor> run(driver::CompiledModel& compiled) {
  auto req = compiled.create_infer_request();
  req->set_input(0, test_input());
  req->infer();
  std::vector<core::Tensor> out;
  for (size_t i = 0; i < compiled.outputs().size(); ++i) out.push_back(req->output(i));
  return out;
}

// ---- No Level Zero driver (these machines) --------------------------------

// The driver contract (tests/driver_contract, LEVEL_ZERO instances) checks
// that a driver without devices loads, lists none and gives its reason on
// every call; here, that the reason is the Level Zero loader's own.
TEST(NoLevelZeroDriver, TheReasonIsTheLoaders) {
  const driver::Driver* d = level_zero();
  ASSERT_NE(d, nullptr) << "the LEVEL_ZERO module itself must load";
  if (!no_level_zero_device()) GTEST_SKIP() << "a Level Zero device is present";
  const std::string why = d->no_device_reason();
  EXPECT_TRUE(why.find("zeInit") != std::string::npos || why.find("zeDriverGet") != std::string::npos) << why;
}

TEST(NoLevelZeroDriver, HeteroFallsBackToCpu) {
  if (!no_level_zero_device()) GTEST_SKIP() << "a Level Zero device is present";
  const auto model = test::model_from_text(kSmallCnn);
  auto split = runtime().compile(*model, "HETERO:LEVEL_ZERO,CPU");
  for (const std::string& device : split->submodel_devices()) EXPECT_EQ(device, "CPU");
  auto whole = runtime().compile(*model, "CPU");
  const auto a = run(*split), b = run(*whole);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    for (size_t k = 0; k < a[i].numel(); ++k) EXPECT_EQ(a[i].values<float>()[k], b[i].values<float>()[k]);
  }
}

TEST(NoLevelZeroDriver, HeteroPinnedToLevelZeroFailsNamingNodesAndReason) {
  if (!no_level_zero_device()) GTEST_SKIP() << "a Level Zero device is present";
  const auto model = test::model_from_text(kSmallCnn);
  for (const char* fallback : {"true", "false"}) {
    const std::string path = ::testing::TempDir() + "l0-pin-" + fallback + ".yaml";
    std::ofstream(path) << "devices: [LEVEL_ZERO, CPU]\nfallback: " << fallback
                        << "\nrules:\n  - device: LEVEL_ZERO\n    ops: [Conv]\n";
    const std::string why = error_of(
        [&] { runtime().compile(*model, "HETERO:LEVEL_ZERO,CPU", {{"policy", path}}); },
        HETERO_NOT_FOUND);
    EXPECT_NE(why.find("pinned to LEVEL_ZERO by " + path), std::string::npos) << why;
    EXPECT_NE(why.find("'Conv_2'"), std::string::npos) << why;  // the Conv node (named by the importer)
    EXPECT_NE(why.find("zeInit"), std::string::npos) << why;
  }
}

// ---- Native binaries in blobs ---------------------------------------------

const DeviceUuid kUuid{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

TEST(LevelZeroBinary, RoundTripsAFakeNativeBinary) {
  const std::vector<uint8_t> native = {0x7f, 'E', 'L', 'F', 1, 2, 3, 4, 5};
  const auto wrapped = encode_native_binary(native, kUuid);
  EXPECT_EQ(decode_native_binary(wrapped, kUuid), native);
  EXPECT_TRUE(decode_native_binary(encode_native_binary({}, kUuid), kUuid).empty());
}

TEST(LevelZeroBinary, RefusesDamagedOrForeignBinaries) {
  const std::vector<uint8_t> native(100, 0xab);
  const auto good = encode_native_binary(native, kUuid);
  auto why = [&](std::vector<uint8_t> bytes, const DeviceUuid& uuid, hetero_status status) {
    return error_of([&] { decode_native_binary(bytes, uuid); }, status);
  };
  EXPECT_NE(why({1, 2, 3}, kUuid, HETERO_BLOB_CORRUPT).find("not a Level Zero native binary"), std::string::npos);
  // An OpenCL program binary (no header) is refused, not handed to the device.
  EXPECT_NE(why(native, kUuid, HETERO_BLOB_CORRUPT).find("not a Level Zero"), std::string::npos);
  auto v = good;
  v[4] = 9;
  EXPECT_NE(why(v, kUuid, HETERO_BLOB_MISMATCH).find("format version 9"), std::string::npos);
  DeviceUuid other = kUuid;
  other[0] = 99;
  EXPECT_NE(why(good, other, HETERO_BLOB_MISMATCH).find("another device"), std::string::npos);
  v = good;
  v.pop_back();
  EXPECT_NE(why(v, kUuid, HETERO_BLOB_CORRUPT).find("holds 99"), std::string::npos);
  v = good;
  v.back() ^= 1;
  EXPECT_NE(why(v, kUuid, HETERO_BLOB_CORRUPT).find("checksum"), std::string::npos);
}

// ---- Launch geometry ------------------------------------------------------

TEST(LevelZeroLaunch, GroupCountsCoverTheRange) {
  gpu::Range r;
  r.global = {1000, 1, 1};
  r.local = {64, 0, 0};
  Launch l = launch_geometry(r, {128, 1, 1});  // the plan's local size wins: a kernel may need it
  EXPECT_EQ(l.group_size[0], 64u);
  EXPECT_EQ(l.group_count[0], 16u);
  r.local = {0, 0, 0};
  l = launch_geometry(r, {128, 1, 1});  // left open: zeKernelSuggestGroupSize's size
  EXPECT_EQ(l.group_size, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(l.group_count, (std::array<uint32_t, 3>{8, 1, 1}));  // 1024 >= 1000: the kernels check bounds
  l = launch_geometry(r, {0, 0, 0});  // neither: one item per group
  EXPECT_EQ(l.group_size[0], 1u);
  EXPECT_EQ(l.group_count[0], 1000u);
  r.dims = 2;
  r.global = {16, 9, 7};  // the third dimension is ignored for dims = 2
  l = launch_geometry(r, {4, 4, 4});
  EXPECT_EQ(l.group_size, (std::array<uint32_t, 3>{4, 4, 1}));
  EXPECT_EQ(l.group_count, (std::array<uint32_t, 3>{4, 3, 1}));
  r.dims = 4;
  error_of([&] { launch_geometry(r, {1, 1, 1}); }, HETERO_INVALID_ARGUMENT);
  r.dims = 1;
  r.global = {size_t(1) << 40, 1, 1};
  EXPECT_NE(error_of([&] { launch_geometry(r, {1, 1, 1}); }, HETERO_INVALID_ARGUMENT).find("32-bit"),
            std::string::npos);
}

// ---- SPIR-V ---------------------------------------------------------------

TEST(LevelZeroSpirv, BuildTimeModulesCoverEveryTemplateAndValidate) {
  const SpirvToolchain tools = SpirvToolchain::from_build();
  std::set<std::string> names;
  for (const PrebuiltSpirv& m : prebuilt_spirv()) {
    names.insert(m.name);
    ASSERT_GE(m.size, 20u) << m.name;
    EXPECT_EQ(std::memcmp(m.data, "\x03\x02\x23\x07", 4), 0) << m.name << ": no SPIR-V magic";
    EXPECT_EQ(validate_spirv(tools, std::vector<uint8_t>(m.data, m.data + m.size)), "") << m.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"binary", "concat", "conv", "conv_channel", "conv_spatial", "conv_transpose",
                                          "gather", "gemm", "lstm", "matmul", "pad", "pool", "reduce", "resize",
                                          "softmax", "squeeze_excite", "transpose", "unary", "where"}));
  // The validator really validates: a damaged module fails.
  const PrebuiltSpirv conv = prebuilt_spirv().front();  // a copy: the list is a temporary
  std::vector<uint8_t> bad(conv.data, conv.data + conv.size);
  bad.resize(bad.size() / 2);
  EXPECT_NE(validate_spirv(tools, bad), "");
}

// A device with no hardware behind it: build() is the Level Zero driver's
// run-time SPIR-V step (what ZeDevice::build does before zeModuleCreate).
class SpirvOnlyDevice final : public gpu::Device {
 public:
  struct Exe final : gpu::Executable {
    std::vector<uint8_t> spirv;
    std::vector<uint8_t> binary() const override { return spirv; }
  };
  struct Buf final : gpu::Buffer {
    size_t n;
    explicit Buf(size_t n) : n(n) {}
    size_t size() const override { return n; }
  };
  std::string name() const override { return "SPIRV"; }
  size_t max_work_group_size() const override { return 256; }
  std::shared_ptr<gpu::Buffer> allocate(size_t bytes, const void*) override { return std::make_shared<Buf>(bytes); }
  std::shared_ptr<gpu::Executable> build(const std::string& source, const std::string& options) override {
    auto e = std::make_shared<Exe>();
    e->spirv = compile_to_spirv(tools_, source, options);
    ++builds_;
    return e;
  }
  std::shared_ptr<gpu::Executable> load(std::span<const uint8_t>, const std::string&) override {
    fail(HETERO_NOT_SUPPORTED, "no device");
  }
  std::unique_ptr<gpu::Kernel> kernel(const gpu::Executable&, const std::string&) override {
    fail(HETERO_NOT_SUPPORTED, "no device");
  }
  std::unique_ptr<gpu::Queue> queue() override { fail(HETERO_NOT_SUPPORTED, "no device"); }
  uint64_t source_builds() const override { return builds_; }

 private:
  SpirvToolchain tools_ = SpirvToolchain::from_build();
  std::atomic<uint64_t> builds_{0};
};

TEST(LevelZeroSpirv, RunTimeBuildsOfTheSelectedKernelsValidate) {
  const auto model = test::model_from_text(kSmallCnn);
  auto device = std::make_shared<SpirvOnlyDevice>();
  gpu::BuildOptions options;
  options.kernels_per_batch = 3;
  const auto program = gpu::build_program(*model, device, options);
  ASSERT_GE(program->executables.size(), 2u);
  EXPECT_EQ(device->source_builds(), program->executables.size());
  std::set<std::string> kinds;
  for (const auto& exe : program->executables) {
    const auto spirv = exe->binary();
    ASSERT_GE(spirv.size(), 20u);
    EXPECT_EQ(std::memcmp(spirv.data(), "\x03\x02\x23\x07", 4), 0);
  }
  EXPECT_GE(program->plan.kernels.size(), 7u);  // conv, pool, sigmoid, transpose, concat, reduce, matmul, softmax
}

TEST(LevelZeroSpirv, RunTimeBuildRefusesOptionsAndReportsCompilerErrors) {
  const SpirvToolchain tools = SpirvToolchain::from_build();
  EXPECT_NE(error_of([&] { compile_to_spirv(tools, "__kernel void k() {}", "-Xclang -load"); },
                     HETERO_INVALID_ARGUMENT)
                .find("'-Xclang'"),
            std::string::npos);
  const std::string why =
      error_of([&] { compile_to_spirv(tools, "__kernel void k(__global float* y) { y[0] = nope; }", ""); },
               HETERO_DRIVER_ERROR);
  EXPECT_NE(why.find("nope"), std::string::npos) << why;
  SpirvToolchain missing = tools;
  missing.clang = "/nonexistent/clang";
  EXPECT_NE(error_of([&] { compile_to_spirv(missing, "__kernel void k() {}", gpu::kernel_build_options()); },
                     HETERO_DRIVER_ERROR)
                .find("could not be run"),
            std::string::npos);
}

}  // namespace
}  // namespace hetero::level_zero
