// A model's main graph as the abstract DAG the subgraph selection works on
// (partition/dag.h): compute nodes numbered in graph order, an edge wherever
// a node reads a value another one produces. Constant nodes are left out:
// they are copied into every submodel that reads them, never cut.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "partition/dag.h"

namespace hetero::partition {

inline constexpr uint32_t kNotInDag = UINT32_MAX;

struct GraphDag {
  Dag dag;
  std::vector<uint32_t> dag_id;    // per Node::index; kNotInDag for constants
  std::vector<size_t> node_index;  // per DAG node: its Node::index
};

// The graph must be sorted topologically (as import leaves it).
GraphDag graph_dag(const core::Graph& graph);

// True for nodes that only produce a constant (they are never cut).
bool is_constant_node(const core::Node& node);

}  // namespace hetero::partition
