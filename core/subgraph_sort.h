// Topological sorting that also honours the values a node's subgraphs (If,
// Loop, Scan bodies) take from the enclosing graph. Graph::sort_topologically
// only sees explicit inputs, so a node with such implicit inputs could land
// before their producers. Internal to core/.
#pragma once

#include "core/graph.h"

namespace hetero::core {

// Every value that `node`'s subgraphs, at any depth, use from `graph`.
std::vector<Value*> implicit_inputs(const Node& node, const Graph& graph);

// Graph::sort_topologically with implicit inputs counted as inputs; a cycle
// through them is INVALID_MODEL naming a node, as for explicit ones.
void sort_with_implicit_inputs(Graph& graph);

}  // namespace hetero::core
