// What the CPU driver does beyond the driver contract every device meets
// (tests/driver_contract): its plan's output buffers, device_count, and
// control flow reading outer values.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/runtime.h"
#include "tests/unit/model_text.h"

using namespace hetero;
using namespace hetero::core;

namespace {

constexpr const char* kSmallNet = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[N, 4] x) => (float[N, 4] y, float[N, 4] z) {
  w = Constant <value = float[4, 4] {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4}> ()
  m = MatMul (x, w)
  y = Relu (m)
  z = Neg (y)
}
)ONNX";

Tensor input(std::vector<float> values, int64_t rows) {
  return Tensor::from_vector(values, {rows, 4});
}

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

}  // namespace

// The CPU plan allocates each run's outputs anew: a second run does not
// write into the tensors a caller kept from the first (the C ABI promises
// less, see hetero_infer_request_get_output).
TEST(CpuDriver, ASecondRunLeavesEarlierOutputsAlone) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  auto req = compiled->create_infer_request();
  req->set_input(0, input({1, -1, 1, 1}, 1));
  req->infer();
  Tensor first = req->output(0);
  req->set_input(0, input({2, 2, 2, 2, 1, 1, 1, 1}, 2));
  req->infer();
  EXPECT_EQ(std::vector<float>(first.values<float>().begin(), first.values<float>().end()),
            (std::vector<float>{1, 0, 3, 4}));
  EXPECT_EQ(req->output(1).shape(), (Shape{2, 4}));
}

// device_count lists the one processor as several devices (the contract
// suite runs CPU.1 and HETERO:CPU.1,CPU on it); it is a driver setting, given
// when the core is created, and a compile refuses it.
TEST(CpuDriver, DeviceCountIsADriverSettingNotACompileSetting) {
  auto model = test::model_from_text(kSmallNet);
  try {
    runtime().compile(*model, "CPU", {{"device_count", "3"}});
    ADD_FAILURE() << "a compile took device_count";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("CPU.device_count when the core is created"), std::string::npos)
        << e.what();
  }
}

// An If branch reading a value the outer graph computed earlier, and that no
// outer node reads directly: the value must live until the If has run.
TEST(CpuDriver, BranchReadsAnOuterValueNothingElseReads) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x, bool c) => (float[3] y) {
  m = Neg (x)
  y = If (c) <then_branch = t () => (float[3] out) { out = Relu (m) },
              else_branch = e () => (float[3] out) { out = Identity (m) }>
}
)ONNX");
  auto req = runtime().compile(*model, "CPU")->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{1, -2, 3}, {3}));
  Tensor c = Tensor::allocate(DType::Bool, {});
  c.data<uint8_t>()[0] = 1;
  req->set_input(1, c);
  req->infer();
  EXPECT_EQ(std::vector<float>(req->output(0).values<float>().begin(), req->output(0).values<float>().end()),
            (std::vector<float>{0, 2, 0}));
}
