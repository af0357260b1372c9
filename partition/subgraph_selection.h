// HETERO subgraph selection (docs/partitioning.md, "Subgraph selection",
// with a worked example): given a DAG and the device each node is pinned to,
// cut the graph into single-device subgraphs, largest first, none of which
// reaches itself through a node outside it.
//
// The algorithm as HETERO first described it leaves some choices open; this
// implementation fixes them so that its worked example (the seven-node graph
// of docs/partitioning.md) comes out step for step:
//
//  * Rounds. For each device in priority order, rounds repeat until every node
//    of the device is in a committed subgraph. A round grows one candidate
//    from each possible root and commits the largest. The possible roots are
//    the device's nodes in no committed subgraph and in no candidate grown
//    earlier in the same round, taken in ascending order (the example's
//    second list of possible roots is [5,6,7], without 1,2,3). Growing may
//    still merge a node of an earlier candidate of the round (the example's
//    root 5 merges 3); only committed subgraphs are closed.
//  * Neighbour order. The next node examined is the first eligible neighbour
//    (successors ascending, then predecessors ascending) of the most recently
//    merged node of the present subgraph that still has one; eligible means
//    neither merged nor rejected. A depth-first walk, in short. The example's
//    order (root 1: 2,3,5,6,7 then 4; root 5: 6,7,3,2 then 4) rules out
//    breadth-first and lowest-number-first orders.
//  * Rejection. A node of another device, or of a committed subgraph, is
//    rejected when examined ("Failed to merge"). After every merge or
//    rejection, while a rejected node lies on a path from the subgraph back
//    into it, the most recently merged node is rolled back into the rejected
//    list.
//  * Ties. Among candidates of equal size the one found first (smallest
//    root) wins. The original description only says that the larger one
//    is always selected; its example has no tie, and first-found keeps the
//    result independent of container order.
//
// Each subgraph is single-device, connected and convex (no path leaves it and
// comes back). The selection does NOT guarantee that the subgraphs
// together form a DAG: two convex subgraphs can each feed the other. See
// partition/subgraph_cycles.h for the check and the repair.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "partition/dag.h"

namespace hetero::partition {

struct Subgraph {
  int device = 0;
  std::vector<uint32_t> nodes;  // ascending
  bool operator==(const Subgraph&) const = default;
};

enum class StepKind {
  SelectRoot,   // a root starts a candidate; possible_roots lists the choices
  Merge,        // node merged into the candidate
  FailedMerge,  // node of another device or committed subgraph: rejected
  Rollback,     // node removed from the candidate and rejected
  End,          // no eligible neighbour left: the candidate is complete
  Commit,       // the round's largest candidate is committed
};

const char* step_kind_name(StepKind kind) noexcept;

// One step of the worked example's lists. subgraph and rejected are ascending and
// describe the state after the step; condition_ok is the global condition
// then (false while a rollback is still due).
struct Step {
  StepKind kind = StepKind::SelectRoot;
  int device = 0;
  uint32_t node = 0;  // root, merged, rejected or rolled back node; for Commit the root
  std::vector<uint32_t> subgraph;
  std::vector<uint32_t> rejected;
  bool condition_ok = true;
  std::vector<uint32_t> possible_roots;  // SelectRoot: remaining roots, this one first
  bool operator==(const Step&) const = default;
};

// affinity[v] is node v's device, 0 = highest priority; device_count bounds
// it. Returns the subgraphs in commit order (device by device). Throws
// hetero::Failure (HETERO_INVALID_ARGUMENT) naming a node whose affinity is out
// of range, or when affinity and the graph differ in size.
std::vector<Subgraph> select_subgraphs(const Dag& dag, std::span<const int> affinity,
                                       int device_count);

// The same selection, recomputing every candidate of every round as the
// algorithm is worded and recording each step. Slower (rounds x nodes); for
// tests and debugging.
std::vector<Subgraph> select_subgraphs_traced(const Dag& dag, std::span<const int> affinity,
                                              int device_count, std::vector<Step>& trace);

}  // namespace hetero::partition
