// ONNX 1.12's text parser gives `int64[] m` no shape at all, as it gives
// `int64 m` (shape unknown), and the checker refuses a graph input without
// one. For a test model whose shapeless ports are all scalars, this says so,
// in its bodies (Loop, If, Scan) too.
#pragma once

#include <onnx/onnx_pb.h>

namespace hetero::test {

inline void give_scalars_their_shape(onnx::GraphProto& graph) {
  for (auto* list : {graph.mutable_input(), graph.mutable_output()})
    for (onnx::ValueInfoProto& v : *list)
      if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape())
        v.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (onnx::NodeProto& node : *graph.mutable_node())
    for (onnx::AttributeProto& a : *node.mutable_attribute())
      if (a.has_g()) give_scalars_their_shape(*a.mutable_g());
}

}  // namespace hetero::test
