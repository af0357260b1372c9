// Inlining of an ONNX FunctionProto in place of a node: the engine behind
// expand_function (schema functions) and the import of model-local functions.
// Internal to core/.
#pragma once

#include <map>
#include <string>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "core/graph.h"

namespace hetero::core {

// Replaces nodes of one graph by the nodes of function bodies, many at a
// time. The names in use are gathered once, and the replaced nodes are
// erased and the graph re-sorted once, in finish(): inlining n calls costs
// about the n bodies, where re-reading and re-sorting the graph for each
// made a 1 KB model of nested functions (2^16 nodes once inlined) take
// minutes to load.
class FunctionInliner {
 public:
  explicit FunctionInliner(Graph& graph);

  // Adds the nodes of `body` in place of `node`. Attributes a body node
  // takes by reference (ref_attr_name) come from the node, else from
  // `defaults` (the schema's default values), else are left out. Body nodes
  // use the opsets `body` imports, falling back to `model_opsets`. New
  // values and nodes are named "<node name>/<body name>". Everything is
  // converted and checked before the graph is touched, so a failure
  // (NOT_SUPPORTED for a body this IR cannot hold, INVALID_MODEL for an
  // inconsistent one) leaves it as it was. The new nodes go at the end of
  // graph.nodes(); `node` stays there, unsorted, until finish().
  void inline_call(Node& node, const onnx::FunctionProto& body, const std::map<std::string, int64_t>& model_opsets,
                   const std::map<std::string, onnx::AttributeProto>& defaults);
  // Whether `node` was replaced (it is erased by finish()).
  bool replaced(const Node& node) const { return replaced_.count(&node) > 0; }
  // Erases the replaced nodes and re-sorts the graph.
  void finish();

 private:
  Graph& graph_;
  std::unordered_set<std::string> node_names_, value_names_;
  std::unordered_set<const Node*> replaced_;
};

}  // namespace hetero::core
