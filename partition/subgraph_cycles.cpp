#include "partition/subgraph_cycles.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/error.h"

namespace hetero::partition {

namespace {

// owner[v] = index of the subgraph holding node v.
std::vector<uint32_t> owners(const Dag& dag, std::span<const Subgraph> subgraphs) {
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> owner(dag.size(), kNone);
  for (uint32_t s = 0; s < subgraphs.size(); ++s) {
    if (subgraphs[s].nodes.empty()) {
      fail(HETERO_INVALID_ARGUMENT, "subgraph " + std::to_string(s) + " is empty");
    }
    for (uint32_t v : subgraphs[s].nodes) {
      if (v >= dag.size()) {
        fail(HETERO_INVALID_ARGUMENT, "subgraph " + std::to_string(s) + " holds node " +
                                          std::to_string(v) + ", outside the graph");
      }
      if (owner[v] != kNone) {
        fail(HETERO_INVALID_ARGUMENT, "node " + std::to_string(v) + " is in subgraphs " +
                                          std::to_string(owner[v]) + " and " + std::to_string(s));
      }
      owner[v] = s;
    }
  }
  for (uint32_t v = 0; v < dag.size(); ++v) {
    if (owner[v] == kNone) {
      fail(HETERO_INVALID_ARGUMENT, "node " + std::to_string(v) + " is in no subgraph");
    }
  }
  return owner;
}

// The contracted graph: one vertex per subgraph, an edge wherever a graph
// edge crosses from one subgraph to another.
std::vector<std::vector<uint32_t>> contract(const Dag& dag, const std::vector<uint32_t>& owner,
                                            size_t count) {
  std::vector<std::vector<uint32_t>> out(count);
  for (uint32_t u = 0; u < dag.size(); ++u) {
    for (uint32_t v : dag.successors(u)) {
      if (owner[u] != owner[v]) out[owner[u]].push_back(owner[v]);
    }
  }
  for (auto& row : out) {
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
  }
  return out;
}

// Strongly connected components (Kosaraju, iterative: plans may have
// thousands of subgraphs). component[s] numbers them; sizes counts members.
void components(const std::vector<std::vector<uint32_t>>& out, std::vector<uint32_t>& component,
                std::vector<uint32_t>& sizes) {
  const size_t count = out.size();
  std::vector<std::vector<uint32_t>> in(count);
  for (uint32_t s = 0; s < count; ++s) {
    for (uint32_t t : out[s]) in[t].push_back(s);
  }
  std::vector<uint32_t> order;  // by finishing time
  std::vector<char> done(count, 0);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t s = 0; s < count; ++s) {
    if (done[s]) continue;
    done[s] = 1;
    stack.push_back({s, 0});
    while (!stack.empty()) {
      auto& [v, i] = stack.back();
      if (i < out[v].size()) {
        uint32_t t = out[v][i++];
        if (!done[t]) {
          done[t] = 1;
          stack.push_back({t, 0});
        }
      } else {
        order.push_back(v);
        stack.pop_back();
      }
    }
  }
  constexpr uint32_t kNone = UINT32_MAX;
  component.assign(count, kNone);
  sizes.clear();
  std::vector<uint32_t> todo;
  for (size_t i = order.size(); i-- > 0;) {
    if (component[order[i]] != kNone) continue;
    const auto c = static_cast<uint32_t>(sizes.size());
    sizes.push_back(0);
    component[order[i]] = c;
    todo.push_back(order[i]);
    while (!todo.empty()) {
      uint32_t v = todo.back();
      todo.pop_back();
      ++sizes[c];
      for (uint32_t t : in[v]) {
        if (component[t] == kNone) {
          component[t] = c;
          todo.push_back(t);
        }
      }
    }
  }
}

}  // namespace

bool subgraphs_acyclic(const Dag& dag, std::span<const Subgraph> subgraphs) {
  const std::vector<uint32_t> owner = owners(dag, subgraphs);
  std::vector<uint32_t> component, sizes;
  components(contract(dag, owner, subgraphs.size()), component, sizes);
  return sizes.size() == subgraphs.size();
}

std::vector<Subgraph> break_subgraph_cycles(const Dag& dag, std::vector<Subgraph> subgraphs) {
  const std::vector<uint32_t> owner = owners(dag, subgraphs);
  std::vector<uint32_t> component, sizes;
  components(contract(dag, owner, subgraphs.size()), component, sizes);
  if (sizes.size() == subgraphs.size()) return subgraphs;

  auto in_cycle = [&](uint32_t v) { return sizes[component[owner[v]]] > 1; };
  // A path between two nodes of a group never leaves it (a subgraph it
  // passes would be in the group too), so predecessors outside the group do
  // not count. Node numbers are topological, so one ascending pass suffices.
  std::vector<uint32_t> level(dag.size(), 0);
  for (uint32_t v = 0; v < dag.size(); ++v) {
    if (!in_cycle(v)) continue;
    for (uint32_t p : dag.predecessors(v)) {
      if (component[owner[p]] != component[owner[v]]) continue;
      level[v] = std::max(level[v], level[p] + (owner[p] != owner[v] ? 1u : 0u));
    }
  }
  std::vector<Subgraph> out;
  for (Subgraph& s : subgraphs) {
    if (!in_cycle(s.nodes.front())) {
      out.push_back(std::move(s));
      continue;
    }
    std::map<uint32_t, std::vector<uint32_t>> parts;  // level -> nodes, ascending
    for (uint32_t v : s.nodes) parts[level[v]].push_back(v);
    for (auto& [lvl, nodes] : parts) out.push_back({s.device, std::move(nodes)});
  }
  return out;
}

}  // namespace hetero::partition
