#include "core/subgraph_sort.h"

#include <algorithm>

namespace hetero::core {

namespace {

void collect(const Graph& sub, const Graph& outer, std::vector<Value*>& out) {
  auto add = [&](Value* v) {
    if (v && v->owner == &outer && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (const auto& n : sub.nodes()) {
    for (Value* v : n->inputs) add(v);
    for (const Attribute& a : n->attributes) {
      if (a.g) collect(*a.g, outer, out);
      for (const auto& g : a.graphs) collect(*g, outer, out);
    }
  }
  for (Value* v : sub.outputs) add(v);
}

}  // namespace

std::vector<Value*> implicit_inputs(const Node& node, const Graph& graph) {
  std::vector<Value*> out;
  for (const Attribute& a : node.attributes) {
    if (a.g) collect(*a.g, graph, out);
    for (const auto& g : a.graphs) collect(*g, graph, out);
  }
  return out;
}

void sort_with_implicit_inputs(Graph& graph) {
  // Wire the implicit inputs as extra explicit ones for the sort, then take
  // them off again (uses included), leaving the graph as it was but ordered.
  struct Extra {
    Node* node;
    size_t first;  // index of the first extra input
  };
  std::vector<Extra> extras;
  for (const auto& n : graph.nodes()) {
    const std::vector<Value*> implicit = implicit_inputs(*n, graph);
    if (implicit.empty()) continue;
    extras.push_back({n.get(), n->inputs.size()});
    for (Value* v : implicit) graph.set_input(n.get(), n->inputs.size(), v);
  }
  auto unwire = [&] {
    for (const Extra& e : extras) {
      for (size_t i = e.first; i < e.node->inputs.size(); ++i) {
        auto& uses = e.node->inputs[i]->uses;
        std::erase_if(uses, [&](const Use& u) { return u.node == e.node && u.input_index == i; });
      }
      e.node->inputs.resize(e.first);
    }
  };
  try {
    graph.sort_topologically();
  } catch (...) {
    unwire();
    throw;
  }
  unwire();
}

}  // namespace hetero::core
