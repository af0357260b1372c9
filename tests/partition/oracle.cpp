#include "oracle.h"

#include <algorithm>
#include <map>
#include <utility>

namespace hetero::partition::oracle {

namespace {

class Oracle {
 public:
  Oracle(const Dag& dag, std::span<const int> affinity, std::vector<Step>* trace)
      : dag_(dag), affinity_(affinity), trace_(trace), n_(dag.size()) {
    // Step 1 of the detection: reach_[u][v] iff a path u -> v exists.
    reach_.assign(n_, std::vector<char>(n_, 0));
    for (uint32_t u = n_; u-- > 0;) {
      for (uint32_t s : dag_.successors(u)) {
        reach_[u][s] = 1;
        for (uint32_t v = 0; v < n_; ++v) reach_[u][v] |= reach_[s][v];
      }
    }
  }

  std::vector<Subgraph> run(int device_count) {
    std::vector<Subgraph> out;
    committed_.assign(n_, 0);
    for (int d = 0; d < device_count; ++d) {
      for (;;) {
        // Possible roots: this device, in no subgraph constructed so far
        // (committed, or a candidate of this round).
        std::vector<char> constructed(committed_.begin(), committed_.end());
        std::vector<std::vector<uint32_t>> candidates;
        std::vector<uint32_t> roots;
        for (;;) {
          std::vector<uint32_t> possible;
          for (uint32_t v = 0; v < n_; ++v) {
            if (affinity_[v] == d && !constructed[v]) possible.push_back(v);
          }
          if (possible.empty()) break;
          std::vector<uint32_t> candidate = grow(possible.front(), d, possible);
          for (uint32_t v : candidate) constructed[v] = 1;
          candidates.push_back(candidate);
          roots.push_back(possible.front());
        }
        if (candidates.empty()) break;
        size_t best = 0;  // "a larger one is always selected"; ties: first found
        for (size_t i = 0; i < candidates.size(); ++i) {
          if (candidates[i].size() > candidates[best].size()) best = i;
        }
        if (trace_) {
          Step s;
          s.kind = StepKind::Commit;
          s.device = d;
          s.node = roots[best];
          s.subgraph = candidates[best];
          trace_->push_back(s);
        }
        for (uint32_t v : candidates[best]) committed_[v] = 1;
        out.push_back({d, candidates[best]});
      }
    }
    return out;
  }

 private:
  // Step 2 of the detection, cached as step 3 says.
  const std::vector<uint32_t>& path_nodes(uint32_t src, uint32_t dst) {
    auto [it, fresh] = paths_.try_emplace({src, dst});
    if (fresh) {
      for (uint32_t v = 0; v < n_; ++v) {
        if (reach_[src][v] && reach_[v][dst]) it->second.push_back(v);
      }
    }
    return it->second;
  }

  // Steps 4 and 5 of the detection.
  bool global_condition_ok(const std::vector<uint32_t>& subgraph,
                           const std::vector<char>& rejected) {
    for (uint32_t a : subgraph) {
      for (uint32_t b : subgraph) {
        if (a == b || !reach_[a][b]) continue;
        for (uint32_t v : path_nodes(a, b)) {
          if (rejected[v]) return false;
        }
      }
    }
    return true;
  }

  void record(StepKind kind, int device, uint32_t node, const std::vector<uint32_t>& subgraph,
              const std::vector<char>& rejected, bool ok,
              std::vector<uint32_t> possible_roots = {}) {
    if (!trace_) return;
    Step s;
    s.kind = kind;
    s.device = device;
    s.node = node;
    s.subgraph = subgraph;
    std::sort(s.subgraph.begin(), s.subgraph.end());
    for (uint32_t v = 0; v < n_; ++v) {
      if (rejected[v]) s.rejected.push_back(v);
    }
    s.condition_ok = ok;
    s.possible_roots = std::move(possible_roots);
    trace_->push_back(std::move(s));
  }

  // Steps 1-7 of the selection from one root.
  std::vector<uint32_t> grow(uint32_t root, int device, const std::vector<uint32_t>& possible) {
    std::vector<uint32_t> subgraph{root};  // in merge order
    std::vector<char> in_subgraph(n_, 0), rejected(n_, 0);
    in_subgraph[root] = 1;
    record(StepKind::SelectRoot, device, root, subgraph, rejected, true, possible);
    for (;;) {
      // Step 2: an adjacent node not merged and not rejected; the most recent
      // merge's neighbours first, successors before predecessors.
      bool found = false;
      uint32_t next = 0;
      for (size_t i = subgraph.size(); i-- > 0 && !found;) {
        std::vector<uint32_t> neighbours;
        for (uint32_t v : dag_.successors(subgraph[i])) neighbours.push_back(v);
        for (uint32_t v : dag_.predecessors(subgraph[i])) neighbours.push_back(v);
        for (uint32_t v : neighbours) {
          if (!in_subgraph[v] && !rejected[v]) {
            next = v;
            found = true;
            break;
          }
        }
      }
      if (!found) break;
      // Steps 3-4.
      const bool same = affinity_[next] == device && !committed_[next];
      if (same) {
        subgraph.push_back(next);
        in_subgraph[next] = 1;
      } else {
        rejected[next] = 1;
      }
      bool ok = global_condition_ok(subgraph, rejected);
      record(same ? StepKind::Merge : StepKind::FailedMerge, device, next, subgraph, rejected, ok);
      // Steps 5-6.
      while (!ok) {
        uint32_t last = subgraph.back();
        subgraph.pop_back();
        in_subgraph[last] = 0;
        rejected[last] = 1;
        ok = global_condition_ok(subgraph, rejected);
        record(StepKind::Rollback, device, last, subgraph, rejected, ok);
      }
    }
    record(StepKind::End, device, root, subgraph, rejected, true);
    std::sort(subgraph.begin(), subgraph.end());
    return subgraph;
  }

  const Dag& dag_;
  std::span<const int> affinity_;
  std::vector<Step>* trace_;
  uint32_t n_;
  std::vector<std::vector<char>> reach_;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> paths_;
  std::vector<char> committed_;
};

}  // namespace

std::vector<Subgraph> select(const Dag& dag, std::span<const int> affinity, int device_count,
                             std::vector<Step>* trace) {
  return Oracle(dag, affinity, trace).run(device_count);
}

}  // namespace hetero::partition::oracle
