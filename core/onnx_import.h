// ONNX → heterod IR, through libonnx (checker, shape inference).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "core/graph.h"

namespace hetero::core {

struct ImportOptions {
  // Input name → static shape given by the user; replaces dynamic dims before
  // shape inference so that downstream shapes become static.
  std::map<std::string, Shape> input_shapes;
  // Run onnx::checker (on by default; tests of raw kernels may turn it off).
  bool check = true;
};

// What Model::source_sha256 is for a model read from `bytes` with
// `input_shapes`: so that a cache can be asked before the model is read.
Sha256Digest source_sha256(std::span<const uint8_t> bytes, const std::map<std::string, Shape>& input_shapes);

// Reads a model file. External data files are resolved relative to the model's
// directory and may not escape it. Initializers view the mapped files rather
// than copies of them. Fails with INVALID_MODEL (or IO_ERROR / NOT_FOUND)
// naming the file and the field or node at fault.
std::unique_ptr<Model> import_onnx_file(const std::string& path, const ImportOptions& options = {});

// Reads a model from memory. External data is refused (there is no directory
// to resolve it against). `bytes` is copied if the model keeps views into it.
std::unique_ptr<Model> import_onnx_bytes(std::span<const uint8_t> bytes, const ImportOptions& options = {},
                                         const std::string& source_name = "<memory>");

}  // namespace hetero::core
