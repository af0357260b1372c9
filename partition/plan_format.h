// A HETERO plan in words, for `hetero partition` and hetero_partition_plan():
// text for people, JSON for programs, Graphviz DOT for a picture.
#pragma once

#include <string>

#include "core/graph.h"
#include "partition/plan.h"

namespace hetero::partition {

// Subgraphs in execution order: device, nodes, the tensors that enter and
// leave it; then the transfer count and the policy's warnings.
std::string plan_text(const Plan& plan);

// {"device": "HETERO:A,B", "devices": [...], "subgraphs": [{"device", "nodes",
//  "inputs", "outputs"}, ...], "transfers": N, "warnings": [...]}
std::string plan_json(const Plan& plan, const std::string& device);

// The model's nodes coloured by device, each subgraph a cluster labelled with
// its place in the execution order, edges labelled with the tensors that
// cross from one subgraph to another.
std::string plan_dot(const Plan& plan, const core::Model& model);

}  // namespace hetero::partition
