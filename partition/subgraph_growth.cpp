#include "partition/subgraph_growth.h"

#include <algorithm>
#include <cassert>

namespace hetero::partition {

SubgraphGrowth::SubgraphGrowth(const Dag& dag)
    : dag_(dag),
      stamp_(dag.size(), 0),
      state_(dag.size(), 0),
      between_(dag.size(), 0),
      seen_(dag.size(), 0),
      qualified_(dag.size(), 0) {}

// Stamps instead of clearing: a run touches a few hundred nodes of a graph
// that may have a hundred thousand, and there is a run per candidate.
void SubgraphGrowth::start_run() {
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    std::fill(between_.begin(), between_.end(), 0);
    epoch_ = 1;
  }
  merges_.clear();
  frames_.clear();
  between_log_.clear();
  touched_list_.clear();
  violations_ = 0;
}

void SubgraphGrowth::start_search() {
  if (++search_epoch_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    std::fill(qualified_.begin(), qualified_.end(), 0);
    search_epoch_ = 1;
  }
  found_.clear();
  stack_.clear();
}

// Ineligible neighbours never become eligible again within a run (merged
// nodes leave the subgraph only into the rejected list), so a frame's cursor
// only moves forward and an exhausted frame can be dropped for good.
bool SubgraphGrowth::next_candidate(uint32_t& out) {
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    auto succ = dag_.successors(f.node);
    auto pred = dag_.predecessors(f.node);
    const uint32_t degree = static_cast<uint32_t>(succ.size() + pred.size());
    for (; f.cursor < degree; ++f.cursor) {
      uint32_t v = f.cursor < succ.size() ? succ[f.cursor] : pred[f.cursor - succ.size()];
      if (!touched(v)) {
        out = v;
        return true;
      }
    }
    frames_.pop_back();
  }
  return false;
}

void SubgraphGrowth::add_between(uint32_t v) {
  between_[v] = epoch_;
  between_log_.push_back(v);
  if (rejected(v)) ++violations_;
}

// Nodes on paths subgraph -> y, not yet between nodes. Such a node v reaches
// y without passing the subgraph (else it already reaches the subgraph and,
// being reachable from it, is a between node), so a backward search from y
// that stops at subgraph nodes finds it; nothing numbered below the subgraph
// is reachable from it. A node found that is already a between node is
// reachable from the subgraph, so it seeds the second pass, but its own
// ancestors need not be searched: those reachable from the subgraph are
// between nodes already, or reach y by another way the search takes. The
// second pass keeps the found nodes reachable from the subgraph.
void SubgraphGrowth::add_paths_to(uint32_t y) {
  start_search();
  stack_.push_back(y);
  while (!stack_.empty()) {
    uint32_t v = stack_.back();
    stack_.pop_back();
    for (uint32_t p : dag_.predecessors(v)) {
      if (p < lo_) continue;
      if (merged(p)) {
        if (v != y) qualified_[v] = search_epoch_;
        continue;
      }
      if (seen_[p] == search_epoch_) continue;
      seen_[p] = search_epoch_;
      found_.push_back(p);
      if (between(p)) {
        qualified_[p] = search_epoch_;
      } else {
        stack_.push_back(p);
      }
    }
  }
  for (uint32_t v : found_) {
    if (qualified_[v] == search_epoch_) stack_.push_back(v);
  }
  while (!stack_.empty()) {
    uint32_t v = stack_.back();
    stack_.pop_back();
    for (uint32_t s : dag_.successors(v)) {
      if (seen_[s] == search_epoch_ && qualified_[s] != search_epoch_) {
        qualified_[s] = search_epoch_;
        stack_.push_back(s);
      }
    }
  }
  for (uint32_t v : found_) {
    if (qualified_[v] == search_epoch_ && !between(v)) add_between(v);
  }
}

// Nodes on paths y -> subgraph: the mirror image of add_paths_to.
void SubgraphGrowth::add_paths_from(uint32_t y) {
  start_search();
  stack_.push_back(y);
  while (!stack_.empty()) {
    uint32_t v = stack_.back();
    stack_.pop_back();
    for (uint32_t s : dag_.successors(v)) {
      if (s > hi_) continue;
      if (merged(s)) {
        if (v != y) qualified_[v] = search_epoch_;
        continue;
      }
      if (seen_[s] == search_epoch_) continue;
      seen_[s] = search_epoch_;
      found_.push_back(s);
      if (between(s)) {
        qualified_[s] = search_epoch_;
      } else {
        stack_.push_back(s);
      }
    }
  }
  for (uint32_t v : found_) {
    if (qualified_[v] == search_epoch_) stack_.push_back(v);
  }
  while (!stack_.empty()) {
    uint32_t v = stack_.back();
    stack_.pop_back();
    for (uint32_t p : dag_.predecessors(v)) {
      if (seen_[p] == search_epoch_ && qualified_[p] != search_epoch_) {
        qualified_[p] = search_epoch_;
        stack_.push_back(p);
      }
    }
  }
  for (uint32_t v : found_) {
    if (qualified_[v] == search_epoch_ && !between(v)) add_between(v);
  }
}

void SubgraphGrowth::merge(uint32_t y) {
  MergeRecord rec{y, static_cast<uint32_t>(between_log_.size()), lo_, hi_, between(y)};
  if (!merges_.empty()) {
    add_paths_to(y);
    add_paths_from(y);
    lo_ = std::min(lo_, y);
    hi_ = std::max(hi_, y);
  } else {
    lo_ = hi_ = y;
  }
  // y was eligible, hence not rejected: leaving the between set changes no count.
  if (rec.was_between) between_[y] = 0;
  stamp_[y] = epoch_;
  state_[y] = kMerged;
  touched_list_.push_back(y);
  merges_.push_back(rec);
  frames_.push_back({y, 0});
}

void SubgraphGrowth::reject(uint32_t x) {
  stamp_[x] = epoch_;
  state_[x] = kRejected;
  touched_list_.push_back(x);
  if (between(x)) ++violations_;
}

// Undoes the most recent merge exactly (between set, span, frame), then
// rejects the node.
void SubgraphGrowth::rollback() {
  const MergeRecord rec = merges_.back();
  merges_.pop_back();
  for (size_t i = between_log_.size(); i > rec.undo_begin; --i) {
    uint32_t v = between_log_[i - 1];
    between_[v] = 0;
    if (rejected(v)) --violations_;
  }
  between_log_.resize(rec.undo_begin);
  // Frames are a subsequence of the merge order, so the node's frame, if
  // still open, is the last one.
  if (!frames_.empty() && frames_.back().node == rec.node) frames_.pop_back();
  lo_ = rec.prev_lo;
  hi_ = rec.prev_hi;
  state_[rec.node] = kRejected;
  if (rec.was_between) {
    between_[rec.node] = epoch_;
    ++violations_;
  }
}

void SubgraphGrowth::record(std::vector<Step>& trace, StepKind kind, int device,
                            uint32_t node) const {
  Step step;
  step.kind = kind;
  step.device = device;
  step.node = node;
  for (const MergeRecord& m : merges_) step.subgraph.push_back(m.node);
  for (uint32_t v : touched_list_) {
    if (state_[v] == kRejected) step.rejected.push_back(v);
  }
  std::sort(step.subgraph.begin(), step.subgraph.end());
  std::sort(step.rejected.begin(), step.rejected.end());
  step.condition_ok = violations_ == 0;
  trace.push_back(std::move(step));
}

void SubgraphGrowth::grow(uint32_t root, int device, std::span<const uint8_t> mergeable,
                          std::vector<uint32_t>& nodes, std::vector<uint32_t>& examined,
                          std::vector<Step>* trace) {
  start_run();
  merge(root);
  if (trace) record(*trace, StepKind::SelectRoot, device, root);
  uint32_t v = 0;
  while (next_candidate(v)) {
    if (mergeable[v]) {
      merge(v);
      if (trace) record(*trace, StepKind::Merge, device, v);
    } else {
      reject(v);
      if (trace) record(*trace, StepKind::FailedMerge, device, v);
    }
    // A self-reference needs two subgraph nodes, so the root is never rolled back.
    while (violations_ > 0) {
      assert(merges_.size() > 1);
      uint32_t last = merges_.back().node;
      rollback();
      if (trace) record(*trace, StepKind::Rollback, device, last);
    }
  }
  if (trace) record(*trace, StepKind::End, device, root);
  nodes.clear();
  for (const MergeRecord& m : merges_) nodes.push_back(m.node);
  std::sort(nodes.begin(), nodes.end());
  examined.assign(touched_list_.begin(), touched_list_.end());
}

}  // namespace hetero::partition
