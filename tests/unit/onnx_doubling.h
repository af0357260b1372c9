// A model, in ONNX's text syntax, whose local function f<depth> calls
// f<depth-1> twice, down to f0, which computes `leaf` (an op over x): a few
// hundred bytes that inline to 2^depth leaf nodes. The importer's function
// budget and inlining are tested with it (tests/unit/test_onnx_import.cpp),
// the daemon's slow uploads and bombs are made of it
// (tests/daemon/make_daemon_models.cpp), and the fuzzer mutates it
// (tests/fuzz/make_onnx_seeds.cpp).
#pragma once

#include <string>

namespace hetero::test {

inline std::string doubling_functions(int depth, const std::string& leaf = "Neg(x)",
                                      const std::string& type = "float[1, 4]") {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17, \"local\" : 1], producer_name: \"heterod-tests\">\n"
                     "doubling (" + type + " X) => (" + type + " Y) {\n  Y = local.f" + std::to_string(depth) +
                     "(X)\n}\n<domain: \"local\", opset_import: [\"\" : 17]>\nf0 (x) => (y) {\n  y = " + leaf + "\n}\n";
  for (int k = 1; k <= depth; ++k)
    text += "<domain: \"local\", opset_import: [\"\" : 17, \"local\" : 1]>\nf" + std::to_string(k) +
            " (x) => (y) {\n  a = local.f" + std::to_string(k - 1) + "(x)\n  y = local.f" + std::to_string(k - 1) +
            "(a)\n}\n";
  return text;
}

}  // namespace hetero::test
