// The graph the subgraph selection works on: N nodes numbered 0..N-1 in
// topological order, and the edges between them. Nothing of the ONNX IR
// reaches partition/subgraph_selection: the caller maps its nodes to these
// numbers, which keeps the algorithm testable on graphs written by hand.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hetero::partition {

class Dag {
 public:
  using Edge = std::pair<uint32_t, uint32_t>;  // (source, target)

  Dag() = default;

  // Every edge must go from a lower to a higher number: the selection prunes
  // its reachability searches by node number, which is only sound when the
  // numbering is topological. Repeated edges count once. Throws hetero::Failure
  // (HETERO_INVALID_ARGUMENT) naming the first edge that breaks a rule.
  Dag(uint32_t node_count, std::span<const Edge> edges);

  uint32_t size() const noexcept { return node_count_; }

  // Both ascending: the selection's neighbour order is defined on them.
  std::span<const uint32_t> successors(uint32_t node) const noexcept {
    return {succ_.data() + succ_begin_[node], succ_.data() + succ_begin_[node + 1]};
  }
  std::span<const uint32_t> predecessors(uint32_t node) const noexcept {
    return {pred_.data() + pred_begin_[node], pred_.data() + pred_begin_[node + 1]};
  }

 private:
  uint32_t node_count_ = 0;
  // Compressed rows: the neighbours of node v are [begin[v], begin[v + 1]).
  std::vector<uint32_t> succ_begin_{0}, succ_;
  std::vector<uint32_t> pred_begin_{0}, pred_;
};

}  // namespace hetero::partition
