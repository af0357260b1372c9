// What the CPU driver does beyond the driver contract every device meets
// (tests/driver_contract): its plan's output buffers, device_count, and
// control flow reading outer values, constant folding.
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
  } catch (const Failure& e) {
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

// Arithmetic on constants, in a branch too, runs once at compile time
// (drivers/cpu/graph_constants.cpp); what comes out is what running it gave.
// Silero VAD v5 slices and concatenates its LSTM weights this way.
TEST(CpuDriver, ConstantArithmeticInABranchGivesTheSameAnswer) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, bool c) => (float[2] y) {
  w = Constant <value = float[4] {1, 2, 3, 4}> ()
  y = If (c) <then_branch = t () => (float[2] out) {
                 starts = Constant <value = int64[1] {2}> ()
                 ends = Constant <value = int64[1] {4}> ()
                 tail = Slice (w, starts, ends)
                 out = Mul (x, tail)
               },
              else_branch = e () => (float[2] out) { out = Identity (x) }>
}
)ONNX");
  auto req = runtime().compile(*model, "CPU")->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{10, 100}, {2}));
  Tensor c = Tensor::allocate(DType::Bool, {});
  c.data<uint8_t>()[0] = 1;
  req->set_input(1, c);
  req->infer();
  EXPECT_EQ(std::vector<float>(req->output(0).values<float>().begin(), req->output(0).values<float>().end()),
            (std::vector<float>{30, 400}));
}

// Nodes whose inputs are constants but whose outputs are not a function of
// them stay run-time work: random values differ from inference to inference.
TEST(CpuDriver, RandomNodesAreNotFolded) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) {
  r = RandomUniform <shape = [4], dtype = 1> ()
  y = Add (x, r)
}
)ONNX");
  auto req = runtime().compile(*model, "CPU")->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{0, 0, 0, 0}, {4}));
  req->infer();
  const auto first = req->output(0).values<float>();
  const std::vector<float> a(first.begin(), first.end());
  req->infer();
  const auto second = req->output(0).values<float>();
  EXPECT_NE(a, std::vector<float>(second.begin(), second.end()));
}

// A constant node whose output would be too large to keep in the compiled
// model (2^21 elements here, over the folding limit) still runs, at
// inference time.
TEST(CpuDriver, LargeConstantOutputsStayRunTimeWork) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1] x) => (float[1] y) {
  shape = Constant <value = int64[1] {2097152}> ()
  big = ConstantOfShape <value = float[1] {0.5}> (shape)
  total = ReduceSum <keepdims = 1> (big)
  y = Add (x, total)
}
)ONNX");
  auto req = runtime().compile(*model, "CPU")->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{1}, {1}));
  req->infer();
  EXPECT_FLOAT_EQ(req->output(0).values<float>()[0], 1048577.0f);
}
