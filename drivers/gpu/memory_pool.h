// The memory pool: assigns every intermediate tensor a pooled buffer, reusing
// a buffer once the live range of the tensor that held it has ended, and
// computes the events each step must wait for (read-after-write,
// write-after-read and write-after-write on the same buffer), so that a queue
// that runs commands out of order still runs them correctly.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "drivers/gpu/network_plan.h"
#include "drivers/gpu/program.h"

namespace hetero::gpu {

// Fills plan.steps (kernel refs taken from `kernel_index`), plan.pool_bytes,
// plan.constants, plan.input_bytes, plan.outputs and plan.intermediate_bytes
// from the program's nodes and their launches.
void plan_network(const ProgramGraph& g, const std::map<std::string, uint32_t>& kernel_index, NetworkPlan& plan);

}  // namespace hetero::gpu
