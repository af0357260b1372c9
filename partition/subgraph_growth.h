// Growing one candidate subgraph from a root: steps 2-4 of a round of the
// selection in docs/partitioning.md, with the neighbour order and rollback
// rule described in partition/subgraph_selection.h. Internal to partition/.
//
// Checked literally (as tests/partition/oracle.cpp does), the global
// condition intersects, for every pair of subgraph nodes, the nodes on paths
// between them with the rejected list: quadratic in the subgraph at every
// step. Here the set of "between" nodes (not in the subgraph, but reachable
// from it and reaching it) is kept up to date instead: the condition fails
// exactly when a rejected node is a between node, so it is a counter. Merging
// node y adds the nodes on paths subgraph -> y and y -> subgraph; rollbacks
// undo merges in reverse order, so each merge logs what it added. The path
// searches stop at subgraph nodes and at node numbers outside the subgraph's
// span, which keeps them local on the chain-like graphs of real models.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "partition/dag.h"
#include "partition/subgraph_selection.h"

namespace hetero::partition {

class SubgraphGrowth {
 public:
  explicit SubgraphGrowth(const Dag& dag);

  // mergeable[v] != 0 iff node v has the device being planned and is in no
  // committed subgraph; `root` must be mergeable. Fills `nodes` (ascending)
  // with the candidate and `examined` with every node merged or rejected on
  // the way (the candidate depends on nothing else of the selection state).
  // With `trace`, appends a SelectRoot step without possible_roots (the
  // caller knows them) and the steps that follow, End included.
  void grow(uint32_t root, int device, std::span<const uint8_t> mergeable,
            std::vector<uint32_t>& nodes, std::vector<uint32_t>& examined,
            std::vector<Step>* trace);

 private:
  struct MergeRecord {
    uint32_t node;
    uint32_t undo_begin;      // first entry of between_log_ this merge added
    uint32_t prev_lo, prev_hi;
    bool was_between;
  };
  struct Frame {  // a merged node whose neighbours are not all examined yet
    uint32_t node;
    uint32_t cursor;  // index into successors, then predecessors
  };

  static constexpr uint8_t kMerged = 1;
  static constexpr uint8_t kRejected = 2;

  bool touched(uint32_t v) const { return stamp_[v] == epoch_; }
  bool merged(uint32_t v) const { return touched(v) && state_[v] == kMerged; }
  bool rejected(uint32_t v) const { return touched(v) && state_[v] == kRejected; }
  bool between(uint32_t v) const { return between_[v] == epoch_; }

  void start_run();
  void start_search();
  bool next_candidate(uint32_t& out);
  void merge(uint32_t y);
  void reject(uint32_t x);
  void rollback();
  void add_between(uint32_t v);
  void add_paths_to(uint32_t y);
  void add_paths_from(uint32_t y);
  void record(std::vector<Step>& trace, StepKind kind, int device, uint32_t node) const;

  const Dag& dag_;
  uint32_t epoch_ = 0;        // stamps valid for the current run
  uint32_t search_epoch_ = 0; // stamps valid for the current path search
  std::vector<uint32_t> stamp_;     // == epoch_: merged or rejected this run
  std::vector<uint8_t> state_;      // kMerged / kRejected where stamped
  std::vector<uint32_t> between_;   // == epoch_: a between node
  std::vector<uint32_t> seen_;      // == search_epoch_: found by this search
  std::vector<uint32_t> qualified_; // == search_epoch_: on a path that counts

  std::vector<MergeRecord> merges_;  // the subgraph, in merge order
  std::vector<Frame> frames_;
  std::vector<uint32_t> between_log_;
  std::vector<uint32_t> touched_list_;
  uint32_t violations_ = 0;  // rejected nodes that are between nodes
  uint32_t lo_ = 0, hi_ = 0; // lowest and highest node number merged

  std::vector<uint32_t> found_, stack_;  // search scratch
};

}  // namespace hetero::partition
