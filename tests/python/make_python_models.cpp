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
                    write_model(dir + "/accumulate.onnx", kAccumulate);
    if (!ok) std::fprintf(stderr, "make_python_models: cannot write the models to %s\n", dir.c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_python_models: %s\n", e.what());
    return 1;
  }
}
