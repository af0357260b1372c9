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

namespace hetero::test {

// ONNX 1.12's parser gives `int64[] m` no shape at all, as it does `int64 m`
// (shape unknown), and the checker refuses graph inputs without one: for a
// model whose shapeless ports are scalars, this says so, in bodies too.
inline void give_scalars_their_shape(onnx::GraphProto& graph) {
  for (auto* list : {graph.mutable_input(), graph.mutable_output()})
    for (onnx::ValueInfoProto& v : *list)
      if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape())
        v.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (onnx::NodeProto& node : *graph.mutable_node())
    for (onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.has_g()) give_scalars_their_shape(*a.mutable_g());
}

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
