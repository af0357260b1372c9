#include "partition/graph_dag.h"

namespace hetero::partition {

bool is_constant_node(const core::Node& node) {
  return node.domain.empty() && node.op_type == "Constant" && node.inputs.empty();
}

GraphDag graph_dag(const core::Graph& graph) {
  GraphDag g;
  const auto& nodes = graph.nodes();
  g.dag_id.assign(nodes.size(), kNotInDag);
  for (const auto& node : nodes) {
    if (is_constant_node(*node)) continue;
    g.dag_id[node->index] = static_cast<uint32_t>(g.node_index.size());
    g.node_index.push_back(node->index);
  }
  std::vector<Dag::Edge> edges;
  std::vector<const core::Value*> reads;
  for (size_t id = 0; id < g.node_index.size(); ++id) {
    reads.clear();
    core::values_read(*nodes[g.node_index[id]], graph, reads);
    for (const core::Value* v : reads)
      if (v->producer && g.dag_id[v->producer->index] != kNotInDag)
        edges.emplace_back(g.dag_id[v->producer->index], static_cast<uint32_t>(id));
  }
  g.dag = Dag(static_cast<uint32_t>(g.node_index.size()), edges);
  return g;
}

}  // namespace hetero::partition
