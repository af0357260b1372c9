// Writes the v2 tests' and benchmark's models into the directory argv[1]:
//   typed.onnx  for each element type the v2 protocol has a typed contents
//               field for, input x_T T[2, 3] and output y_T = Transpose(x_T):
//               typed contents (and their narrowing, INT8 in int_contents)
//               checked bit for bit in each type;
//   echo.onnx   y = Neg(x) over x float[n]: as many bytes out as in and next
//               to no compute, to time how tensors travel (n fixed per model
//               in the config).
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/model_text.h"

namespace {

// The ONNX text names of the types with a typed field (FP16 and BF16 travel
// raw only); the tests spell the ports the same way.
constexpr const char* kTypedTypes[] = {"float", "uint8",  "int8", "uint16", "int16",  "int32",
                                       "int64", "bool",   "double", "uint32", "uint64"};

std::string typed_model() {
  std::string inputs, outputs, body;
  for (const char* t : kTypedTypes) {
    const std::string name(t);
    inputs += (inputs.empty() ? "" : ", ") + name + "[2, 3] x_" + name;
    outputs += (outputs.empty() ? "" : ", ") + name + "[3, 2] y_" + name;
    body += "  y_" + name + " = Transpose<perm = [1, 0]>(x_" + name + ")\n";
  }
  return "<ir_version: 8, opset_import: [\"\" : 17], producer_name: \"heterod-kserve-tests\">\n"
         "typed (" + inputs + ") => (" + outputs + ") {\n" + body + "}\n";
}

constexpr const char* kEcho = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-kserve-tests">
echo (float[n] x) => (float[n] y) {
  y = Neg(x)
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
    std::fprintf(stderr, "usage: make_kserve_models OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    const bool ok = write_model(dir + "/typed.onnx", typed_model()) && write_model(dir + "/echo.onnx", kEcho);
    if (!ok) std::fprintf(stderr, "make_kserve_models: cannot write the models to %s\n", dir.c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_kserve_models: %s\n", e.what());
    return 1;
  }
}
