// Subgraph selection: the worked example of docs/partitioning.md step by
// step, graphs written by hand, and the fast selection against the literal
// one (oracle) on random DAGs.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <iostream>
#include <ostream>
#include <random>
#include <vector>

#include "core/error.h"
#include "oracle.h"
#include "partition/dag.h"
#include "partition/subgraph_cycles.h"
#include "partition/subgraph_selection.h"

namespace hetero::partition {

// Readable failures: gtest prints these instead of bytes.
void PrintTo(const Subgraph& s, std::ostream* os) {
  *os << "{device " << s.device << ":";
  for (uint32_t v : s.nodes) *os << " " << v;
  *os << "}";
}

void PrintTo(const Step& s, std::ostream* os) {
  auto list = [os](const std::vector<uint32_t>& l) {
    *os << "[";
    for (size_t i = 0; i < l.size(); ++i) *os << (i ? "," : "") << l[i];
    *os << "]";
  };
  *os << step_kind_name(s.kind) << " " << s.node << " (device " << s.device << ") subgraph ";
  list(s.subgraph);
  *os << " rejected ";
  list(s.rejected);
  *os << (s.condition_ok ? " ok" : " reject");
  if (s.kind == StepKind::SelectRoot) {
    *os << " roots ";
    list(s.possible_roots);
  }
}

namespace {

using Nodes = std::vector<uint32_t>;

struct Case {
  Dag dag;
  std::vector<int> affinity;
  int devices;
};

// Reachability by brute force, for the invariants.
std::vector<std::vector<char>> closure(const Dag& dag) {
  const uint32_t n = dag.size();
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (uint32_t u = n; u-- > 0;) {
    for (uint32_t s : dag.successors(u)) {
      reach[u][s] = 1;
      for (uint32_t v = 0; v < n; ++v) reach[u][v] |= reach[s][v];
    }
  }
  return reach;
}

// What every plan must satisfy: a partition of the nodes into non-empty,
// ascending, single-device subgraphs, none of which reaches itself through
// an outside node. The selection's subgraphs are also connected (grown
// through adjacency, rolled back in reverse order); the cycle repair's parts
// need not be.
void expect_invariants(const Case& c, const std::vector<Subgraph>& plan, bool connected) {
  const uint32_t n = c.dag.size();
  const auto reach = closure(c.dag);
  std::vector<int> owner(n, -1);
  for (size_t i = 0; i < plan.size(); ++i) {
    const Subgraph& s = plan[i];
    ASSERT_FALSE(s.nodes.empty());
    EXPECT_TRUE(std::is_sorted(s.nodes.begin(), s.nodes.end()));
    for (uint32_t v : s.nodes) {
      ASSERT_LT(v, n);
      EXPECT_EQ(owner[v], -1) << "node " << v << " twice";
      owner[v] = static_cast<int>(i);
      EXPECT_EQ(c.affinity[v], s.device) << "node " << v;
    }
  }
  for (uint32_t v = 0; v < n; ++v) EXPECT_NE(owner[v], -1) << "node " << v << " missing";
  for (size_t i = 0; i < plan.size(); ++i) {
    const Nodes& nodes = plan[i].nodes;
    // Convex: no outside node x with a -> x -> b for a, b inside.
    for (uint32_t x = 0; x < n; ++x) {
      if (owner[x] == static_cast<int>(i)) continue;
      bool from = false, to = false;
      for (uint32_t a : nodes) from |= reach[a][x] != 0, to |= reach[x][a] != 0;
      EXPECT_FALSE(from && to) << "subgraph " << i << " reaches itself through " << x;
    }
    if (!connected) continue;
    std::vector<char> seen(n, 0);
    std::vector<uint32_t> todo{nodes.front()};
    seen[nodes.front()] = 1;
    size_t count = 0;
    while (!todo.empty()) {
      uint32_t v = todo.back();
      todo.pop_back();
      ++count;
      auto visit = [&](uint32_t w) {
        if (!seen[w] && owner[w] == static_cast<int>(i)) seen[w] = 1, todo.push_back(w);
      };
      for (uint32_t w : c.dag.successors(v)) visit(w);
      for (uint32_t w : c.dag.predecessors(v)) visit(w);
    }
    EXPECT_EQ(count, nodes.size()) << "subgraph " << i << " is not connected";
  }
}

// The fast selection, the traced one and the oracle must agree, steps
// included; the cycle repair must leave a valid acyclic plan. Returns the
// plan and tells whether the selection itself was acyclic.
std::vector<Subgraph> check(const Case& c, bool* acyclic = nullptr) {
  std::vector<Step> traced_steps, oracle_steps;
  const auto fast = select_subgraphs(c.dag, c.affinity, c.devices);
  const auto traced = select_subgraphs_traced(c.dag, c.affinity, c.devices, traced_steps);
  const auto expected = oracle::select(c.dag, c.affinity, c.devices, &oracle_steps);
  EXPECT_EQ(fast, expected);
  EXPECT_EQ(traced, expected);
  EXPECT_EQ(traced_steps, oracle_steps);
  expect_invariants(c, fast, true);
  const bool ok = subgraphs_acyclic(c.dag, fast);
  if (acyclic) *acyclic = ok;
  const auto repaired = break_subgraph_cycles(c.dag, fast);
  if (ok) {
    EXPECT_EQ(repaired, fast);
  }
  EXPECT_TRUE(subgraphs_acyclic(c.dag, repaired));
  expect_invariants(c, repaired, false);
  return fast;
}

Case make(uint32_t n, std::vector<Dag::Edge> edges, std::vector<int> affinity, int devices = 2) {
  return {Dag(n, edges), std::move(affinity), devices};
}

// docs/partitioning.md numbers the example's nodes from 1.
Nodes doc(std::initializer_list<uint32_t> nodes) {
  Nodes out;
  for (uint32_t v : nodes) out.push_back(v - 1);
  return out;
}

Step step(StepKind kind, int device, uint32_t node, Nodes subgraph, Nodes rejected, bool ok,
          Nodes roots = {}) {
  return {kind, device, node - 1, std::move(subgraph), std::move(rejected), ok, std::move(roots)};
}

Case doc_example() {
  // 1->2, 2->3, 2->4, 3->5, 4->5, 5->6, 6->7; node 4 on the second device.
  return make(7, {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}, {5, 6}}, {0, 0, 0, 1, 0, 0, 0});
}

TEST(SubgraphSelection, DocExampleResult) {
  const auto plan = check(doc_example());
  const std::vector<Subgraph> expected{{0, doc({3, 5, 6, 7})}, {0, doc({1, 2})}, {1, doc({4})}};
  EXPECT_EQ(plan, expected);
}

TEST(SubgraphSelection, DocExampleSteps) {
  using enum StepKind;
  const Case c = doc_example();
  // docs/partitioning.md's walk through the example, step by step: device
  // A's two rounds, then device B.
  const std::vector<Step> expected{
      step(SelectRoot, 0, 1, doc({1}), {}, true, doc({1, 2, 3, 5, 6, 7})),
      step(Merge, 0, 2, doc({1, 2}), {}, true),
      step(Merge, 0, 3, doc({1, 2, 3}), {}, true),
      step(Merge, 0, 5, doc({1, 2, 3, 5}), {}, true),
      step(Merge, 0, 6, doc({1, 2, 3, 5, 6}), {}, true),
      step(Merge, 0, 7, doc({1, 2, 3, 5, 6, 7}), {}, true),
      step(FailedMerge, 0, 4, doc({1, 2, 3, 5, 6, 7}), doc({4}), false),
      step(Rollback, 0, 7, doc({1, 2, 3, 5, 6}), doc({4, 7}), false),
      step(Rollback, 0, 6, doc({1, 2, 3, 5}), doc({4, 6, 7}), false),
      step(Rollback, 0, 5, doc({1, 2, 3}), doc({4, 5, 6, 7}), true),
      step(End, 0, 1, doc({1, 2, 3}), doc({4, 5, 6, 7}), true),
      step(SelectRoot, 0, 5, doc({5}), {}, true, doc({5, 6, 7})),
      step(Merge, 0, 6, doc({5, 6}), {}, true),
      step(Merge, 0, 7, doc({5, 6, 7}), {}, true),
      step(Merge, 0, 3, doc({3, 5, 6, 7}), {}, true),
      step(Merge, 0, 2, doc({2, 3, 5, 6, 7}), {}, true),
      step(FailedMerge, 0, 4, doc({2, 3, 5, 6, 7}), doc({4}), false),
      step(Rollback, 0, 2, doc({3, 5, 6, 7}), doc({2, 4}), true),
      step(End, 0, 5, doc({3, 5, 6, 7}), doc({2, 4}), true),
      step(Commit, 0, 5, doc({3, 5, 6, 7}), {}, true),
      step(SelectRoot, 0, 1, doc({1}), {}, true, doc({1, 2})),
      step(Merge, 0, 2, doc({1, 2}), {}, true),
      step(FailedMerge, 0, 3, doc({1, 2}), doc({3}), true),
      step(FailedMerge, 0, 4, doc({1, 2}), doc({3, 4}), true),
      step(End, 0, 1, doc({1, 2}), doc({3, 4}), true),
      step(Commit, 0, 1, doc({1, 2}), {}, true),
      step(SelectRoot, 1, 4, doc({4}), {}, true, doc({4})),
      step(FailedMerge, 1, 5, doc({4}), doc({5}), true),
      step(FailedMerge, 1, 2, doc({4}), doc({2, 5}), true),
      step(End, 1, 4, doc({4}), doc({2, 5}), true),
      step(Commit, 1, 4, doc({4}), {}, true),
  };
  std::vector<Step> traced, literal;
  select_subgraphs_traced(c.dag, c.affinity, c.devices, traced);
  oracle::select(c.dag, c.affinity, c.devices, &literal);
  EXPECT_EQ(traced, expected);
  EXPECT_EQ(literal, expected);
}

TEST(SubgraphSelection, SingleDeviceIsOneSubgraph) {
  const auto plan = check(make(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}, {0, 0, 0, 0}, 1));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0, 1, 2, 3}}}));
}

TEST(SubgraphSelection, DiamondWithForeignBranchTiesGoToFirstRoot) {
  // 0 -> {1, 2} -> 3, node 2 elsewhere. Roots 0 and 3 both find two nodes
  // ([0,1] and [1,3]); the first found wins, and 3 is left alone.
  const auto plan = check(make(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}, {0, 0, 1, 0}));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0, 1}}, {0, {3}}, {1, {2}}}));
}

TEST(SubgraphSelection, ParallelBranches) {
  // 0 -> 1 -> 2 -> 5 and 0 -> 3 -> 4 -> 5; 3 elsewhere: the long branch and
  // its ends cannot stay with 4, which reaches 5 only.
  const auto plan = check(make(6, {{0, 1}, {1, 2}, {2, 5}, {0, 3}, {3, 4}, {4, 5}},
                               {0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {1, 2, 4, 5}}, {0, {0}}, {1, {3}}}));
}

TEST(SubgraphSelection, SeveralInputsAndOutputs) {
  // Inputs 0, 1 -> 2 -> outputs 3, 4, 5; 4 elsewhere is a leaf: no cut.
  const auto plan = check(make(6, {{0, 2}, {1, 2}, {2, 3}, {2, 4}, {2, 5}}, {0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0, 1, 2, 3, 5}}, {1, {4}}}));
}

TEST(SubgraphSelection, OnlyWayBackThroughAnotherDevice) {
  // 0 -> 1 -> 2 and 0 -> 2, node 1 elsewhere: 0 and 2 must part.
  const auto plan = check(make(3, {{0, 1}, {1, 2}, {0, 2}}, {0, 1, 0}));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0}}, {0, {2}}, {1, {1}}}));
}

TEST(SubgraphSelection, NestedCycles) {
  // a1 -> b1 -> a2 -> b2 -> add(b2, a1): a* and add on one device, b* on the
  // other. Every a-node is cut off from the others by a b-node.
  const auto plan = check(make(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}}, {0, 1, 0, 1, 0}));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0}}, {0, {2}}, {0, {4}}, {1, {1}}, {1, {3}}}));
}

TEST(SubgraphSelection, DisconnectedIslandsStayApart) {
  const auto plan = check(make(5, {{0, 1}, {2, 3}, {3, 4}}, {0, 0, 0, 0, 0}, 1));
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {2, 3, 4}}, {0, {0, 1}}}));
}

TEST(SubgraphSelection, ThreeDevicesInPriorityOrder) {
  // A chain 0..7 with a detour 2 -> 6: devices 0 0 1 1 2 1 0 0.
  const auto plan = check(make(8, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {2, 6}},
                               {0, 0, 1, 1, 2, 1, 0, 0}, 3));
  EXPECT_EQ(plan, (std::vector<Subgraph>{
                      {0, {0, 1}}, {0, {6, 7}}, {1, {2, 3}}, {1, {5}}, {2, {4}}}));
}

TEST(SubgraphSelection, CycleBetweenSubgraphsIsRepaired) {
  // The smallest plan the selection leaves cyclic (see
  // subgraph_cycles.h): a1=0 b2=1 a2=2 a3=3 b1=4 b3=5.
  bool acyclic = true;
  const Case c = make(6, {{0, 3}, {2, 3}, {0, 4}, {4, 5}, {1, 5}, {1, 2}}, {0, 1, 0, 0, 1, 1});
  const auto plan = check(c, &acyclic);
  EXPECT_EQ(plan, (std::vector<Subgraph>{{0, {0, 2, 3}}, {1, {1, 4, 5}}}));
  EXPECT_FALSE(acyclic);
  EXPECT_EQ(break_subgraph_cycles(c.dag, plan),
            (std::vector<Subgraph>{{0, {0}}, {0, {2, 3}}, {1, {1}}, {1, {4, 5}}}));
}

TEST(SubgraphSelection, EmptyGraph) {
  EXPECT_TRUE(check(make(0, {}, {})).empty());
}

TEST(SubgraphSelection, BadInputsAreNamed) {
  const std::vector<Dag::Edge> backwards{{0, 1}, {2, 1}};
  try {
    Dag(3, backwards);
    ADD_FAILURE() << "accepted a backward edge";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("edge 1 (2 -> 1)"), std::string::npos) << e.what();
  }
  const std::vector<Dag::Edge> outside{{0, 3}};
  EXPECT_THROW(Dag(3, outside), Failure);
  const std::vector<Dag::Edge> loop{{1, 1}};
  EXPECT_THROW(Dag(3, loop), Failure);
  const Dag dag(2, std::vector<Dag::Edge>{{0, 1}});
  try {
    select_subgraphs(dag, std::vector<int>{0, 2}, 2);
    ADD_FAILURE() << "accepted device 2 of 2";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("node 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select_subgraphs(dag, std::vector<int>{0}, 2), Failure);
  EXPECT_THROW(select_subgraphs(dag, std::vector<int>{0, 0}, 0), Failure);
  EXPECT_THROW(subgraphs_acyclic(dag, std::vector<Subgraph>{{0, {0}}}), Failure);
  EXPECT_THROW(subgraphs_acyclic(dag, std::vector<Subgraph>{{0, {0, 1}}, {0, {1}}}), Failure);
}

// Random DAGs in three shapes: uniform density, edges only within a window
// (chains, like real models), and sparse long skips on top of a chain.
Case random_case(std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const uint32_t n = 1 + rng() % 40;
  const int shape = static_cast<int>(rng() % 3);
  const double density = 0.02 + 0.58 * unit(rng);
  const uint32_t window = 1 + rng() % 4;
  std::vector<Dag::Edge> edges;
  for (uint32_t u = 0; u < n; ++u) {
    for (uint32_t v = u + 1; v < n; ++v) {
      bool edge = false;
      if (shape == 0) edge = unit(rng) < density;
      if (shape == 1) edge = v - u <= window && unit(rng) < density + 0.3;
      if (shape == 2) edge = v == u + 1 || unit(rng) < density * 0.15;
      if (edge) edges.push_back({u, v});
    }
  }
  const int devices = 2 + static_cast<int>(rng() % 2);
  const double main_share = 0.3 + 0.65 * unit(rng);  // of device 0
  std::vector<int> affinity(n);
  for (int& a : affinity) {
    a = unit(rng) < main_share ? 0 : 1 + static_cast<int>(rng() % (devices - 1));
  }
  return {Dag(n, edges), std::move(affinity), devices};
}

TEST(SubgraphSelection, MatchesOracleOnRandomDags) {
  constexpr uint32_t kCases = 3000;
  uint32_t cases = 0, cyclic = 0;
  for (uint32_t seed = 1; seed <= kCases; ++seed, ++cases) {
    std::mt19937 rng(seed);
    const Case c = random_case(rng);
    bool acyclic = true;
    check(c, &acyclic);
    cyclic += acyclic ? 0 : 1;
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failing seed " << seed << " (" << c.dag.size() << " nodes)";
      break;
    }
  }
  // How often the selection alone leaves a cycle between subgraphs.
  RecordProperty("random_dags", static_cast<int>(cases));
  RecordProperty("cyclic_before_repair", static_cast<int>(cyclic));
  std::cout << "[ info ] " << cases << " random DAGs, " << cyclic
            << " with a cycle between subgraphs before repair\n";
}

// Beyond the oracle's reach: the incremental rounds against the traced ones
// (which regrow every candidate every round) on larger chain-like graphs.
TEST(SubgraphSelection, MatchesTracedOnLargerDags) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t n = 100 + rng() % 500;
    const uint32_t window = 2 + rng() % 12;
    const double density = 0.05 + 0.4 * unit(rng), foreign = 0.01 + 0.2 * unit(rng);
    std::vector<Dag::Edge> edges;
    for (uint32_t v = 1; v < n; ++v) {
      edges.push_back({v - 1, v});
      for (uint32_t u = v >= window ? v - window : 0; u + 1 < v; ++u) {
        if (unit(rng) < density) edges.push_back({u, v});
      }
    }
    const int devices = 2 + static_cast<int>(rng() % 2);
    std::vector<int> affinity(n, 0);
    for (int& a : affinity) {
      if (unit(rng) < foreign) a = 1 + static_cast<int>(rng() % (devices - 1));
    }
    const Dag dag(n, edges);
    std::vector<Step> steps;
    const auto fast = select_subgraphs(dag, affinity, devices);
    ASSERT_EQ(fast, select_subgraphs_traced(dag, affinity, devices, steps)) << "seed " << seed;
    expect_invariants({dag, affinity, devices}, fast, true);
  }
}

}  // namespace
}  // namespace hetero::partition
