#include "partition/affinity.h"

#include "core/error.h"
#include "partition/graph_dag.h"

namespace hetero::partition {

namespace {

// Whether device d may run `node`: an absent device is trusted for pins
// (offline planning) but never chosen for unpinned nodes.
bool runs(const DeviceSupport& s, const core::Node& node) {
  return s.present && node.index < s.nodes.size() && s.nodes[node.index].supported;
}

std::string why_not(const Policy& policy, const std::vector<DeviceSupport>& support, const core::Node& node) {
  std::string out;
  for (size_t d = 0; d < support.size(); ++d) {
    out += out.empty() ? "" : "; ";
    out += policy.devices[d] + ": ";
    if (!support[d].present)
      out += support[d].absent_reason.empty() ? "not present" : support[d].absent_reason;
    else if (node.index < support[d].nodes.size())
      out += support[d].nodes[node.index].reason;
  }
  return out;
}

}  // namespace

Affinity resolve_affinity(const core::Graph& graph, const Policy& policy, const std::vector<DeviceSupport>& support) {
  if (support.size() != policy.devices.size())
    fail(HETERO_INTERNAL, "affinity: support for " + std::to_string(support.size()) + " devices, policy has " +
                              std::to_string(policy.devices.size()));
  Affinity result;
  result.device.assign(graph.nodes().size(), kFollowsConsumers);
  result.warnings = policy.unused_rule_warnings(graph);

  for (const auto& node_ptr : graph.nodes()) {
    const core::Node& node = *node_ptr;
    if (is_constant_node(node)) continue;
    int chosen = -1;
    if (const PolicyRule* rule = policy.rule_for(node)) {
      int pinned = 0;
      while (policy.devices[pinned] != rule->device) ++pinned;
      const DeviceSupport& s = support[pinned];
      if (!s.present || runs(s, node)) {
        chosen = pinned;
      } else if (!policy.fallback) {
        fail(HETERO_NOT_SUPPORTED, node.describe() + " is pinned to " + rule->device + " by " + policy.source + ":" +
                                       std::to_string(rule->line) + ", which cannot run it (" +
                                       s.nodes[node.index].reason + ") and the policy has fallback: false");
      }
    }
    // Unpinned (or fallen back): the first device in priority that runs it.
    for (size_t d = 0; chosen < 0 && d < support.size(); ++d)
      if (runs(support[d], node)) chosen = static_cast<int>(d);
    if (chosen < 0)
      fail(HETERO_NOT_SUPPORTED, node.describe() + ": no device runs it (" +
                                     why_not(policy, support, node) + ")");
    result.device[node.index] = chosen;
  }
  return result;
}

}  // namespace hetero::partition
