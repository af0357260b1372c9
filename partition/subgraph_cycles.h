// Cycles between subgraphs (docs/partitioning.md). The selection keeps every
// subgraph free of self-references, but not the set of them: subgraph A may
// feed B through one edge while B feeds A through another (each stays
// convex), and then no order runs them. The smallest case: a1 -> a3 <- a2 on
// one device, b2 -> b3 <- b1 on the other, plus a1 -> b1 and b2 -> a2.
//
// break_subgraph_cycles() repairs such a plan after the selection, leaving
// every subgraph outside a cycle untouched. Inside a strongly connected group
// of subgraphs it numbers each node with the most subgraph changes on any
// path into it from the group (a longest path where an edge between two
// subgraphs weighs 1 and an edge inside one weighs 0), and splits each
// subgraph of the group by that number. Every edge between two resulting
// parts then goes to a higher number, so the parts form a DAG.
#pragma once

#include <span>
#include <vector>

#include "partition/dag.h"
#include "partition/subgraph_selection.h"

namespace hetero::partition {

// True iff contracting each subgraph to one node leaves the graph acyclic.
// The subgraphs must hold every node of the graph exactly once; otherwise
// throws hetero::Failure (HETERO_INVALID_ARGUMENT) naming the node.
bool subgraphs_acyclic(const Dag& dag, std::span<const Subgraph> subgraphs);

// Splits the subgraphs that lie on a cycle (see above); each part takes its
// subgraph's place in the list, parts in ascending number. Returns the input
// unchanged when there is no cycle. Same precondition as subgraphs_acyclic.
std::vector<Subgraph> break_subgraph_cycles(const Dag& dag, std::vector<Subgraph> subgraphs);

}  // namespace hetero::partition
