// Inlining of an ONNX FunctionProto in place of a node: the engine behind
// expand_function (schema functions) and the import of model-local functions.
// Internal to core/.
#pragma once

#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/graph.h"

namespace hetero::core {

// Replaces `node` of `graph` by the nodes of `body`. Attributes a body node
// takes by reference (ref_attr_name) come from the node, else from
// `defaults` (the schema's default values), else are left out. Body nodes use
// the opsets `body` imports, falling back to `model_opsets`. New values and
// nodes are named "<node name>/<body name>". Everything is converted and
// checked before the graph is touched, so a failure (NOT_SUPPORTED for a body
// this IR cannot hold, INVALID_MODEL for an inconsistent one) leaves it as it
// was. Re-sorts the graph; `node` is destroyed.
void inline_function(Graph& graph, Node& node, const onnx::FunctionProto& body,
                     const std::map<std::string, int64_t>& model_opsets,
                     const std::map<std::string, onnx::AttributeProto>& defaults);

}  // namespace hetero::core
