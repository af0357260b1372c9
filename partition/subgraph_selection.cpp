// The selection's rounds, twice: select_subgraphs_traced() runs them as
// docs/partitioning.md words them, select_subgraphs() reaches the same result
// without regrowing what a commit cannot have changed.
//
// Why the fast path is exact. A candidate grown from root r depends only on
// the graph, the device, and whether each node it examined (merged or
// rejected) was mergeable: the path searches read the static graph, not the
// committed set. A commit changes mergeability of the committed nodes only,
// so a candidate stays valid until a commit includes a node it examined.
// Which roots a round grows from is a function of the candidates: u is a
// root iff it is mergeable and no root below u has u in its candidate (the
// shrinking lists of possible roots). That relation only looks
// downwards, so after a commit the root set is repaired by one ascending
// sweep over the nodes whose cover count may have changed, regrowing only
// the candidates the commit invalidated. On a chain of residual blocks that
// is the two neighbours of the committed subgraph, instead of every root.
#include "partition/subgraph_selection.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>

#include "core/error.h"
#include "partition/subgraph_growth.h"

namespace hetero::partition {

const char* step_kind_name(StepKind kind) noexcept {
  switch (kind) {
    case StepKind::SelectRoot: return "select root";
    case StepKind::Merge: return "merge";
    case StepKind::FailedMerge: return "failed to merge";
    case StepKind::Rollback: return "rollback";
    case StepKind::End: return "end";
    case StepKind::Commit: return "commit";
  }
  return "?";
}

namespace {

void check_inputs(const Dag& dag, std::span<const int> affinity, int device_count) {
  if (device_count < 1) {
    fail(HETERO_INVALID_ARGUMENT, "subgraph selection: device count " +
                                      std::to_string(device_count) + " is below 1");
  }
  if (affinity.size() != dag.size()) {
    fail(HETERO_INVALID_ARGUMENT, "subgraph selection: " + std::to_string(affinity.size()) +
                                      " affinities for a graph of " +
                                      std::to_string(dag.size()) + " nodes");
  }
  for (uint32_t v = 0; v < dag.size(); ++v) {
    if (affinity[v] < 0 || affinity[v] >= device_count) {
      fail(HETERO_INVALID_ARGUMENT, "subgraph selection: node " + std::to_string(v) +
                                        " has device " + std::to_string(affinity[v]) +
                                        ", outside 0.." + std::to_string(device_count - 1));
    }
  }
}

// The incremental rounds of one selection (see the file comment).
class IncrementalRounds {
 public:
  IncrementalRounds(const Dag& dag, std::span<const int> affinity)
      : dag_(dag), affinity_(affinity), growth_(dag) {}

  void select_device(int device, std::vector<Subgraph>& out) {
    reset(device);
    size_t remaining = 0;
    for (uint32_t v = 0; v < dag_.size(); ++v) {
      if (!mergeable_[v]) continue;
      ++remaining;
      if (cover_[v] == 0) make_root(v);
    }
    while (remaining > 0) {
      const Run& best = runs_[pop_best()];
      out.push_back({device_, best.nodes});
      remaining -= best.nodes.size();
      commit(out.back().nodes);
      sweep();
    }
  }

 private:
  struct Run {
    uint32_t root;
    bool valid;
    std::vector<uint32_t> nodes;
  };
  struct Offer {  // a root's candidate, as the best-candidate heap sees it
    uint32_t size, root;
    int32_t run;
    bool operator<(const Offer& o) const {  // heap top: largest, then smallest root
      return size != o.size ? size < o.size : root > o.root;
    }
  };

  void reset(int device) {
    const uint32_t n = dag_.size();
    device_ = device;
    mergeable_.assign(n, 0);
    for (uint32_t v = 0; v < n; ++v) mergeable_[v] = affinity_[v] == device;
    runs_.clear();
    run_of_.assign(n, -1);
    root_run_.assign(n, -1);
    cover_.assign(n, 0);
    queued_.assign(n, 0);
    examined_head_.assign(n, -1);
    examined_next_.clear();
    examined_run_.clear();
    best_ = {};
  }

  int32_t grow(uint32_t root) {
    growth_.grow(root, device_, mergeable_, nodes_, examined_, nullptr);
    const auto id = static_cast<int32_t>(runs_.size());
    runs_.push_back({root, true, nodes_});
    run_of_[root] = id;
    for (uint32_t v : examined_) {
      examined_run_.push_back(id);
      examined_next_.push_back(examined_head_[v]);
      examined_head_[v] = static_cast<int32_t>(examined_run_.size() - 1);
    }
    return id;
  }

  void enqueue(uint32_t v) {
    if (!queued_[v]) {
      queued_[v] = 1;
      sweep_.push(v);
    }
  }

  void make_root(uint32_t u) {
    int32_t id = run_of_[u];
    if (id < 0 || !runs_[id].valid) id = grow(u);
    root_run_[u] = id;
    for (uint32_t v : runs_[id].nodes) {
      // A root that gains a cover below it stops being a root.
      if (v > u && cover_[v]++ == 0 && root_run_[v] >= 0) enqueue(v);
    }
    best_.push({static_cast<uint32_t>(runs_[id].nodes.size()), u, id});
  }

  void unroot(uint32_t u) {
    const int32_t id = root_run_[u];
    root_run_[u] = -1;
    for (uint32_t v : runs_[id].nodes) {
      if (v > u && --cover_[v] == 0 && mergeable_[v]) enqueue(v);
    }
  }

  int32_t pop_best() {
    for (;;) {
      Offer top = best_.top();
      best_.pop();
      if (root_run_[top.root] == top.run) return top.run;  // else superseded
    }
  }

  void commit(const std::vector<uint32_t>& nodes) {
    for (uint32_t k : nodes) mergeable_[k] = 0;
    for (uint32_t k : nodes) {
      for (int32_t e = examined_head_[k]; e >= 0; e = examined_next_[e]) {
        Run& run = runs_[examined_run_[e]];
        if (!run.valid) continue;
        run.valid = false;
        if (root_run_[run.root] == examined_run_[e]) {
          unroot(run.root);
          enqueue(run.root);
        }
      }
    }
  }

  // Ascending, so a node's root status is decided after every node below it;
  // deciding it only enqueues nodes above it.
  void sweep() {
    while (!sweep_.empty()) {
      const uint32_t u = sweep_.top();
      sweep_.pop();
      queued_[u] = 0;
      if (!mergeable_[u]) continue;
      const bool should = cover_[u] == 0;
      const bool is = root_run_[u] >= 0;
      if (should && !is) make_root(u);
      if (!should && is) unroot(u);
    }
  }

  const Dag& dag_;
  std::span<const int> affinity_;
  SubgraphGrowth growth_;
  int device_ = 0;
  std::vector<uint8_t> mergeable_;  // this device, not committed
  std::vector<Run> runs_;
  std::vector<int32_t> run_of_;     // latest run grown from the node, or -1
  std::vector<int32_t> root_run_;   // run of a root of the current round, or -1
  std::vector<uint32_t> cover_;     // roots below the node whose candidate holds it
  std::vector<uint8_t> queued_;
  // Per node, a list of the runs that examined it (indices into the arrays).
  std::vector<int32_t> examined_head_, examined_next_, examined_run_;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> sweep_;
  std::priority_queue<Offer> best_;
  std::vector<uint32_t> nodes_, examined_;  // growth output scratch
};

}  // namespace

std::vector<Subgraph> select_subgraphs(const Dag& dag, std::span<const int> affinity,
                                       int device_count) {
  check_inputs(dag, affinity, device_count);
  std::vector<Subgraph> out;
  IncrementalRounds rounds(dag, affinity);
  for (int d = 0; d < device_count; ++d) rounds.select_device(d, out);
  return out;
}

std::vector<Subgraph> select_subgraphs_traced(const Dag& dag, std::span<const int> affinity,
                                              int device_count, std::vector<Step>& trace) {
  check_inputs(dag, affinity, device_count);
  const uint32_t n = dag.size();
  SubgraphGrowth growth(dag);
  std::vector<Subgraph> out;
  std::vector<uint8_t> mergeable(n), in_candidate(n);
  std::vector<uint32_t> nodes, examined;
  for (int d = 0; d < device_count; ++d) {
    for (uint32_t v = 0; v < n; ++v) mergeable[v] = affinity[v] == d;
    for (;;) {
      std::fill(in_candidate.begin(), in_candidate.end(), 0);
      std::vector<Subgraph> candidates;
      std::vector<uint32_t> roots;
      for (uint32_t u = 0; u < n; ++u) {
        if (!mergeable[u] || in_candidate[u]) continue;
        const size_t first_step = trace.size();
        growth.grow(u, d, mergeable, nodes, examined, &trace);
        for (uint32_t v = u; v < n; ++v) {
          if (mergeable[v] && !in_candidate[v]) trace[first_step].possible_roots.push_back(v);
        }
        for (uint32_t v : nodes) in_candidate[v] = 1;
        candidates.push_back({d, nodes});
        roots.push_back(u);
      }
      if (candidates.empty()) break;
      size_t best = 0;
      for (size_t i = 1; i < candidates.size(); ++i) {
        if (candidates[i].nodes.size() > candidates[best].nodes.size()) best = i;
      }
      Step commit;
      commit.kind = StepKind::Commit;
      commit.device = d;
      commit.node = roots[best];
      commit.subgraph = candidates[best].nodes;
      trace.push_back(std::move(commit));
      for (uint32_t v : candidates[best].nodes) mergeable[v] = 0;
      out.push_back(std::move(candidates[best]));
    }
  }
  return out;
}

}  // namespace hetero::partition
