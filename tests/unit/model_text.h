// Test models written in ONNX's text syntax (onnx/defs/parser.h) and turned
// into heterod models through the real importer.
#pragma once

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/onnx_import.h"
#include "tests/unit/onnx_scalars.h"

namespace hetero::test {

// `shapeless_are_scalars`: see give_scalars_their_shape().
inline std::vector<uint8_t> onnx_bytes(const char* text, bool shapeless_are_scalars = false) {
  onnx::ModelProto proto;
  const auto status = onnx::OnnxParser::Parse(proto, text);
  if (!status.IsOK()) throw std::runtime_error("bad test model: " + status.ErrorMessage());
  if (shapeless_are_scalars) give_scalars_their_shape(*proto.mutable_graph());
  std::string bytes;
  proto.SerializeToString(&bytes);
  return {bytes.begin(), bytes.end()};
}

inline std::unique_ptr<core::Model> model_from_text(const char* text, const core::ImportOptions& options = {}) {
  return core::import_onnx_bytes(onnx_bytes(text), options, "<test model>");
}

}  // namespace hetero::test
