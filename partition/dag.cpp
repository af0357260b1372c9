#include "partition/dag.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace hetero::partition {

namespace {

[[noreturn]] void bad_edge(size_t index, const Dag::Edge& edge, const std::string& why) {
  fail(HETERO_INVALID_ARGUMENT, "edge " + std::to_string(index) + " (" + std::to_string(edge.first) +
                                    " -> " + std::to_string(edge.second) + "): " + why);
}

}  // namespace

Dag::Dag(uint32_t node_count, std::span<const Edge> edges) : node_count_(node_count) {
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    if (e.first >= node_count || e.second >= node_count) {
      bad_edge(i, e, "node out of range (the graph has " + std::to_string(node_count) + " nodes)");
    }
    if (e.first >= e.second) {
      bad_edge(i, e, "nodes must be numbered in topological order (source below target)");
    }
  }
  // Sorting by (source, target) leaves every successor row ascending, and
  // filling predecessor rows in that same order leaves them ascending too.
  std::vector<Edge> sorted(edges.begin(), edges.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());

  succ_begin_.assign(size_t{node_count} + 1, 0);
  pred_begin_.assign(size_t{node_count} + 1, 0);
  for (const Edge& e : sorted) {
    ++succ_begin_[e.first + 1];
    ++pred_begin_[e.second + 1];
  }
  for (uint32_t v = 0; v < node_count; ++v) {
    succ_begin_[v + 1] += succ_begin_[v];
    pred_begin_[v + 1] += pred_begin_[v];
  }
  succ_.resize(sorted.size());
  pred_.resize(sorted.size());
  std::vector<uint32_t> pred_fill(pred_begin_.begin(), pred_begin_.end() - 1);
  for (size_t i = 0; i < sorted.size(); ++i) {
    succ_[i] = sorted[i].second;  // rows are contiguous in sorted order
    pred_[pred_fill[sorted[i].second]++] = sorted[i].first;
  }
}

}  // namespace hetero::partition
