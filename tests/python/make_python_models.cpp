// Writes the Python package tests' models into the directory argv[1]:
//   dtypes.onnx       for each element type T a tensor can hold, input x_T
//                     T[2, 3] and output y_T = Transpose(x_T): every byte moves
//                     through the runtime, so NumPy round trips are checked
//                     bit for bit in each type;
//   affine.onnx       y = 2x + 1 over x float[1, 8] (exact in float32 for the
//                     inputs the tests use, so answers are checked exactly);
//   passthrough.onnx  y = Identity(x) over float[4], and a constant output c:
//                     outputs that are the input's memory and the model's;
//   accumulate.onnx   total = state + x over float[1, 4]: a stateful stream,
//                     each frame's output fed back as the next frame's state.
//   lstm_step.onnx    one LSTM step over float[1, 1, 4] with its state (h, c)
//                     as inputs and outputs: a recurrent stream;
//   lstm_sequence.onnx the same LSTM (same weights) over 50 frames at once,
//                     from a zero state: what the stream must reproduce.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/model_text.h"

namespace {

// The ONNX text names of the types heterod tensors hold, which are also the
// suffixes of the dtypes model's ports (the tests spell them the same way).
constexpr const char* kTypes[] = {"float", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "bool", "float16", "double", "uint32", "uint64", "bfloat16"};

std::string dtypes_model() {
  std::string inputs, outputs, body;
  for (const char* t : kTypes) {
    const std::string name(t);
    inputs += (inputs.empty() ? "" : ", ") + name + "[2, 3] x_" + name;
    outputs += (outputs.empty() ? "" : ", ") + name + "[3, 2] y_" + name;
    body += "  y_" + name + " = Transpose<perm = [1, 0]>(x_" + name + ")\n";
  }
  return "<ir_version: 8, opset_import: [\"\" : 17], producer_name: \"heterod-python-tests\">\n"
         "dtypes (" + inputs + ") => (" + outputs + ") {\n" + body + "}\n";
}

constexpr const char* kAffine = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-python-tests">
affine (float[1, 8] x) => (float[1, 8] y) {
  two = Constant<value = float {2.0}>()
  one = Constant<value = float {1.0}>()
  x2 = Mul(x, two)
  y = Add(x2, one)
}
)ONNX";

constexpr const char* kPassthrough = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-python-tests">
passthrough (float[4] x) => (float[4] y, float[3] c) {
  y = Identity(x)
  c = Constant<value = float[3] {1.0, 2.0, 3.0}>()
}
)ONNX";

constexpr const char* kAccumulate = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-python-tests">
accumulate (float[1, 4] x, float[1, 4] state) => (float[1, 4] total) {
  total = Add(state, x)
}
)ONNX";

// The LSTM's weights: fixed pseudo-random values in [-0.5, 0.5), written as
// ONNX text so that both LSTM models share them exactly.
std::string lstm_weights() {
  uint32_t seed = 12345;
  auto values = [&seed](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) {
      seed = seed * 1664525u + 1013904223u;
      text += (i ? ", " : "") + std::to_string(static_cast<double>(seed >> 8) / (1u << 24) - 0.5);
    }
    return text;
  };
  constexpr int kInput = 4, kHidden = 8;
  return "  W = Constant<value = float[1, 32, 4] {" + values(4 * kHidden * kInput) + "}>()\n" +
         "  R = Constant<value = float[1, 32, 8] {" + values(4 * kHidden * kHidden) + "}>()\n" +
         "  B = Constant<value = float[1, 64] {" + values(8 * kHidden) + "}>()\n";
}

constexpr const char* kLstmHeader =
    "<ir_version: 8, opset_import: [\"\" : 17], producer_name: \"heterod-python-tests\">\n";

std::string lstm_step_model() {
  return std::string(kLstmHeader) +
         "lstm_step (float[1, 1, 4] x, float[1, 1, 8] h, float[1, 1, 8] c) => "
         "(float[1, 1, 8] h_out, float[1, 1, 8] c_out) {\n" +
         lstm_weights() + "  y, h_out, c_out = LSTM<hidden_size = 8>(x, W, R, B, , h, c)\n}\n";
}

std::string lstm_sequence_model() {
  return std::string(kLstmHeader) + "lstm_sequence (float[50, 1, 4] xs) => (float[50, 1, 1, 8] ys) {\n" +
         lstm_weights() + "  ys = LSTM<hidden_size = 8>(xs, W, R, B)\n}\n";
}

bool write_model(const std::string& path, const std::string& text) {
  const std::vector<uint8_t> bytes = hetero::test::onnx_bytes(text.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_python_models OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    const bool ok = write_model(dir + "/dtypes.onnx", dtypes_model()) && write_model(dir + "/affine.onnx", kAffine) &&
                    write_model(dir + "/passthrough.onnx", kPassthrough) &&
                    write_model(dir + "/accumulate.onnx", kAccumulate) &&
                    write_model(dir + "/lstm_step.onnx", lstm_step_model()) &&
                    write_model(dir + "/lstm_sequence.onnx", lstm_sequence_model());
    if (!ok) std::fprintf(stderr, "make_python_models: cannot write the models to %s\n", dir.c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_python_models: %s\n", e.what());
    return 1;
  }
}
