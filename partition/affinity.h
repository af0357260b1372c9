// Which device runs each node: policy pins first, then each device's query()
// in priority order.
#pragma once

#include <string>
#include <vector>

#include "core/driver.h"
#include "partition/policy.h"

namespace hetero::partition {

// What one of the policy's devices says about the graph's nodes.
struct DeviceSupport {
  bool present = false;                     // false: planning offline, pins only
  std::vector<driver::NodeSupport> nodes;   // per node index, when present
  std::string absent_reason;                // why not present (for messages)
};

inline constexpr int kFollowsConsumers = -1;

struct Affinity {
  // Index into policy.devices per node (Node::index); kFollowsConsumers for
  // Constant nodes, which are copied to every subgraph that uses them.
  std::vector<int> device;
  std::vector<std::string> warnings;  // rules that match nothing
};

// `support` has one entry per policy device. Fails with NOT_SUPPORTED naming
// the node and op when no device can run a node, or when a node is pinned to a
// device that cannot run it and the policy has fallback off.
Affinity resolve_affinity(const core::Graph& graph, const Policy& policy, const std::vector<DeviceSupport>& support);

}  // namespace hetero::partition
