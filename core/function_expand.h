// Ops that ONNX defines as functions of other ops (LayerNormalization,
// SoftmaxCrossEntropyLoss, Celu, MeanVarianceNormalization, Range, ...) can run
// on a driver without a kernel of their own: the node is replaced by the
// function body from ONNX's schema for the model's opset.
#pragma once

#include <cstddef>
#include <functional>

#include "core/graph.h"

namespace hetero::core {

// True when ONNX has a function body (plain or context-dependent) for `node`
// at its opset.
bool has_function_body(const Node& node);

// Replaces `node` of `graph` by the nodes of its function body, wiring the
// body's inputs/outputs to the node's values and giving new intermediate
// values and nodes unique names prefixed by the node's name. Re-sorts the
// graph. Returns false (graph untouched) when there is no body. Node pointers
// other than `node` stay valid; `node` is destroyed.
bool expand_function(Graph& graph, Node& node, const Model& model);

// Replaces every node of `graph` for which `wanted` holds and that has a
// function body, then the same for the nodes those bodies bring, until none
// is left; re-sorts the graph once per level of nesting. Returns how many
// nodes were replaced.
size_t expand_functions(Graph& graph, const Model& model, const std::function<bool(const Node&)>& wanted);

}  // namespace hetero::core
