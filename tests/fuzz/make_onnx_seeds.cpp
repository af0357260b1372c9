// Writes seeds for fuzz_onnx_import that reach the importer's nesting and
// function inlining, which the backend test data's models do not:
//   functions.onnx  local functions that call each other in a doubling
//                   chain, 5 deep (32 nodes once inlined): mutants make
//                   recursion, missing functions and bombs the budget
//                   must refuse;
//   loop_calls.onnx a Loop whose body calls a local function that calls
//                   another: inlining inside a subgraph;
//   nested_if.onnx  If inside If, 12 deep, each branch reading the
//                   outermost graph's values.
//   make_onnx_seeds OUTDIR
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <optional>
#include <string>

#include "tests/unit/onnx_doubling.h"
#include "tests/unit/onnx_model_file.h"
#include "tests/unit/onnx_scalars.h"

namespace {

const char* const kLoopCalls = R"ONNX(
<ir_version: 8, opset_import: ["" : 17, "local" : 1], producer_name: "heterod-fuzz-seeds">
loop_calls (int64[] m, float[1, 4] x) => (float[1, 4] y) {
  go = Constant<value = bool {1}>()
  y = Loop(m, go, x) <body = step (int64[] i, bool[] c, float[1, 4] v) => (bool[] c_out, float[1, 4] v_out) {
    c_out = Identity(c)
    v_out = local.g(v)
  }>
}
<domain: "local", opset_import: ["" : 17, "local" : 1]>
g (x) => (y) {
  a = local.h(x)
  y = Add(a, x)
}
<domain: "local", opset_import: ["" : 17]>
h (x) => (y) {
  y = Neg(x)
}
)ONNX";

std::string nested_ifs(int depth) {
  std::string body = "Neg(x)";
  for (int k = 0; k < depth; ++k) {
    const std::string n = std::to_string(k);
    body = "If(c) <then_branch = t" + n + " () => (float[2] a" + n + ") {\n  a" + n + " = " + body +
           "\n}, else_branch = e" + n + " () => (float[2] b" + n + ") {\n  b" + n + " = Identity(x)\n}>";
  }
  return R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-fuzz-seeds">
nested_if (bool c, float[2] x) => (float[2] y) {
  y = )ONNX" + body + "\n}\n";
}

bool write_model(const std::string& path, const std::string& text) {
  std::optional<onnx::ModelProto> model = hetero::test::parse_model_text("make_onnx_seeds", path, text);
  if (!model) return false;
  hetero::test::give_scalars_their_shape(*model->mutable_graph());
  return hetero::test::write_message(path, *model);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_onnx_seeds OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = write_model(dir + "/functions.onnx", hetero::test::doubling_functions(5)) &&
                  write_model(dir + "/loop_calls.onnx", kLoopCalls) &&
                  write_model(dir + "/nested_if.onnx", nested_ifs(12));
  return ok ? 0 : 1;
}
