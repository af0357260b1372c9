// Planning time of the subgraph selection on a model-shaped graph: a chain
// of residual blocks (x -> conv -> relu -> add(x, relu)), 1% of the nodes,
// scattered at random, pinned to the second device. Prints one line per size,
// medians of 5 runs:
//   nodes=N subgraphs=S select_ms=X plan_ms=Y
// select_ms is the subgraph selection alone; plan_ms adds building the DAG
// from the edge list and the repair of cycles between subgraphs, everything
// between a graph and its list of subgraphs.
// Usage: bench_plan [sizes...]   (default 1000 10000 100000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "partition/dag.h"
#include "partition/subgraph_cycles.h"
#include "partition/subgraph_selection.h"

namespace {

using hetero::partition::Dag;

struct Model {
  uint32_t nodes;
  std::vector<Dag::Edge> edges;
  std::vector<int> affinity;
};

Model residual_chain(uint32_t nodes, uint32_t seed) {
  std::vector<Dag::Edge> edges;
  uint32_t x = 0;  // node 0: the stem producing the first block's input
  uint32_t next = 1;
  while (next + 3 <= nodes) {
    const uint32_t conv = next, relu = next + 1, add = next + 2;
    edges.insert(edges.end(), {{x, conv}, {conv, relu}, {relu, add}, {x, add}});
    x = add;
    next += 3;
  }
  for (; next < nodes; ++next) edges.push_back({next - 1, next});  // a short tail
  std::vector<int> affinity(nodes, 0);
  std::mt19937 rng(seed);
  std::vector<uint32_t> order(nodes);
  for (uint32_t v = 0; v < nodes; ++v) order[v] = v;
  std::shuffle(order.begin(), order.end(), rng);
  for (uint32_t i = 0; i < nodes / 100; ++i) affinity[order[i]] = 1;
  return {nodes, std::move(edges), std::move(affinity)};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes{1000, 10000, 100000};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)));
  }
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (uint32_t n : sizes) {
    const Model model = residual_chain(n, 42);
    std::vector<double> select_ms, plan_ms;
    size_t subgraphs = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = Clock::now();
      const Dag dag(model.nodes, model.edges);
      const auto select_start = Clock::now();
      auto selected = hetero::partition::select_subgraphs(dag, model.affinity, 2);
      select_ms.push_back(ms_since(select_start));
      subgraphs = hetero::partition::break_subgraph_cycles(dag, std::move(selected)).size();
      plan_ms.push_back(ms_since(start));
    }
    std::printf("nodes=%u subgraphs=%zu select_ms=%.2f plan_ms=%.2f\n", n, subgraphs, median(select_ms),
                median(plan_ms));
  }
  return 0;
}
