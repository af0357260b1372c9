#include "tests/driver_contract/contract_models.h"

#include <sstream>

namespace hetero::contract {

namespace {

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 13]>\n";

// n values in [-1, 1) in steps of 1/8, a different sequence per seed.
std::vector<float> pattern(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + seed * 11) % 17) / 8.0f - 1.0f;
  return v;
}

std::string list(const std::vector<float>& values) {
  std::ostringstream s;
  for (size_t i = 0; i < values.size(); ++i) s << (i ? "," : "") << values[i];
  return s.str();
}

}  // namespace

const TestModel& two_outputs_model() {
  static const TestModel m{"two outputs",
                           std::string(kHeader) + R"ONNX(
two_outputs (float[2, 4] x) => (float[2, 4] y, float[2, 4] z) {
  w = Constant <value = float[4, 4] {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4}> ()
  m = MatMul (x, w)
  y = Relu (m)
  z = Neg (y)
}
)ONNX",
                           {{{2, 4}, {1, -1, 1, 1, 2, 2, -2, 0.5f}}}};
  return m;
}

std::vector<float> two_outputs_expected_y() { return {1, 0, 3, 4, 2, 4, 0, 2}; }

const TestModel& three_inputs_model() {
  static const TestModel m{"three inputs",
                           std::string(kHeader) + R"ONNX(
three_inputs (float[2, 3] x, float[3] b, float[2, 3] unused) => (float[2, 3] y, float[2, 3] z, float[2, 3] x_again) {
  c = Constant <value = float[3] {0.5, -2, 4}> ()
  s = Sub (x, b)
  r = Relu (s)
  y = Mul (r, c)
  z = Add (y, s)
  x_again = Identity (x)
}
)ONNX",
                           {{{2, 3}, {1, 2, -3, -4, 5, 0.5f}}, {{3}, {0.5f, -1, 2}}, {{2, 3}, {0, 0, 0, 0, 0, 0}}}};
  return m;
}

const TestModel& small_cnn_model() {
  static const TestModel m{"small CNN",
                           std::string(kHeader) +
                               "small_cnn (float[1, 2, 6, 6] x) => (float[1, 3] y, float[1, 3, 3, 3] p) {\n"
                               "  w = Constant <value = float[3, 2, 3, 3] {" +
                               list(pattern(3 * 2 * 3 * 3, 1)) +
                               "}> ()\n"
                               "  b = Constant <value = float[3] {0.125, -0.25, 0.5}> ()\n"
                               "  c = Conv <pads = [1, 1, 1, 1]> (x, w, b)\n"
                               "  r = Relu (c)\n"
                               "  p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r)\n"
                               "  g = GlobalAveragePool (p)\n"
                               "  f = Flatten (g)\n"
                               "  y = Softmax <axis = 1> (f)\n"
                               "}\n",
                           {{{1, 2, 6, 6}, pattern(2 * 6 * 6, 2)}}};
  return m;
}

std::vector<const TestModel*> test_models() {
  return {&two_outputs_model(), &three_inputs_model(), &small_cnn_model()};
}

const char* const kReluInverseModel = R"ONNX(
<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
relu_inverse (float[2, 2] x) => (float[2, 2] y) {
  a = Relu (x)
  y = com.microsoft.Inverse (a)
}
)ONNX";

const char* const kDynamicBatchModel = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
dynamic_batch (float[N, 4] x) => (float[N, 4] y) {
  w = Constant <value = float[4, 4] {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4}> ()
  m = MatMul (x, w)
  y = Relu (m)
}
)ONNX";

}  // namespace hetero::contract
