// The ONNX runner the tests share (the conformance runner, the CPU kernel
// unit tests): one ONNX backend test case (a directory holding model.onnx and
// test_data_set_*/{input,output}_*.pb) run through heterod's own path:
// core::import_onnx_file, Runtime::compile on a device (the real driver
// module), an infer request per data set, and the backend-test comparison of
// every output (tensor_compare.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/runtime.h"

namespace hetero::onnx_case {

// Progress notes a case emits while it runs, so that whoever watches it (the
// runner's parent process) can say where a crash or a hang happened and which
// ops were involved even when the case never returns.
enum class Note : char {
  Stage = 'S',        // "import", "compile", "infer test_data_set_0", ...
  Ops = 'O',          // op types of the main graph, comma-separated, in order
  Unsupported = 'U',  // op types the device's query() refuses, comma-separated
};
using NoteFn = std::function<void(Note, const std::string&)>;

struct CaseResult {
  bool pass = false;
  std::string reason;  // one line; empty on pass
};

// The op types of the case's main graph, each once, in order of first use
// ("domain.Op" outside ai.onnx). Throws std::runtime_error naming the file
// when model.onnx cannot be read.
std::vector<std::string> case_op_types(const std::string& dir);

// Runs the case in `dir` on `device`. Never throws: every failure (including
// exceptions from the core or the driver) becomes a CaseResult with a reason
// prefixed by the stage it happened in.
CaseResult run_case(const std::string& dir, const core::Runtime& runtime, const std::string& device,
                    const NoteFn& note);

}  // namespace hetero::onnx_case
