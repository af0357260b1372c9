// The subgraph selection of docs/partitioning.md, written as literally as
// possible and with no regard for speed: the reference the fast
// implementation is tested against. Self-references are found the literal
// way: transitive closure, path nodes per pair of subgraph nodes (cached),
// intersection with the rejected list. The next node
// to examine is found by scanning the subgraph from its most recent merge
// down, rather than with cursors as partition/subgraph_growth.cpp does.
#pragma once

#include <span>
#include <vector>

#include "partition/dag.h"
#include "partition/subgraph_selection.h"

namespace hetero::partition::oracle {

// Same contract and step list as select_subgraphs_traced(); trace may be null.
std::vector<Subgraph> select(const Dag& dag, std::span<const int> affinity, int device_count,
                             std::vector<Step>* trace);

}  // namespace hetero::partition::oracle
