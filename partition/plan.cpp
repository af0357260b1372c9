#include "partition/plan.h"

#include <algorithm>

#include "core/error.h"
#include "core/progress.h"
#include "partition/graph_dag.h"
#include "partition/subgraph_cycles.h"
#include "partition/subgraph_selection.h"

namespace hetero::partition {

namespace {

constexpr const char* kPlanningStage = "planning HETERO";

const core::DeviceString& hetero_device(const core::DeviceString& device) {
  if (!device.hetero) fail(HETERO_INVALID_ARGUMENT, "device " + device.to_string() + " is not a HETERO device");
  return device;
}

// What each device of the policy says about the model's nodes; a device that
// is not here is planned for from the policy's pins alone.
std::vector<DeviceSupport> device_support(const core::Runtime& runtime, const core::Model& model,
                                          const core::DeviceString& device, const HeteroConfig& config) {
  std::vector<DeviceSupport> support(config.policy.devices.size());
  // Each device's query, then the subgraphs (make_plan): devices + 1 steps.
  const uint64_t steps = support.size() + 1;
  for (size_t d = 0; d < support.size(); ++d) {
    core::report_progress(kPlanningStage, d, steps);
    const core::DeviceName& name = device.devices[d];  // the policy's devices are the string's
    std::pair<driver::Driver*, std::string> resolved;
    try {
      resolved = runtime.resolve(name);
    } catch (const Failure& e) {
      // A device this box lacks gets the nodes a policy pins to it (plans
      // made offline for another box); a name no driver has and no rule
      // pins to is a typo (HETERO:OPNECL,CPU), refused with the devices.
      const bool pinned = std::any_of(config.policy.rules.begin(), config.policy.rules.end(),
                                      [&](const PolicyRule& rule) { return rule.device == config.policy.devices[d]; });
      if (!runtime.knows_driver(name.driver) && !pinned) throw;
      support[d].absent_reason = e.what();
      continue;
    }
    // A bad config key or a failing query is an error, not an absent device.
    support[d].nodes = resolved.first->query(model, resolved.second, config.device_config[d]);
    support[d].present = true;
    if (support[d].nodes.size() != model.graph.nodes().size())
      fail(HETERO_DRIVER_ERROR, "the driver of " + config.policy.devices[d] + " answered a query about " +
                                    std::to_string(model.graph.nodes().size()) + " nodes with " +
                                    std::to_string(support[d].nodes.size()) + " entries");
  }
  core::report_progress(kPlanningStage, support.size(), steps);
  return support;
}

}  // namespace

HeteroConfig parse_hetero_config(const core::DeviceString& device, const driver::Config& config) {
  std::vector<std::string> devices;
  for (const core::DeviceName& d : device.devices) devices.push_back(d.to_string());
  const std::string device_text = device.to_string();

  HeteroConfig out;
  if (auto it = config.find("policy"); it != config.end()) {
    out.policy = load_policy(it->second);
    if (out.policy.devices != devices) {
      std::string listed;
      for (const std::string& d : out.policy.devices) listed += (listed.empty() ? "" : ",") + d;
      fail(HETERO_INVALID_ARGUMENT, it->second + ": the policy's devices [" + listed + "] differ from the device " +
                                        device_text + "; name the same devices in the same order");
    }
  } else {
    out.policy = policy_for_devices(devices);
  }

  out.device_config = split_device_config(device, config);
  return out;
}

std::vector<driver::Config> split_device_config(const core::DeviceString& device, const driver::Config& config) {
  std::vector<driver::Config> out(device.devices.size());
  for (const auto& [key, value] : config) {
    if (key == "policy") continue;
    // A HETERO model's priority is every submodel's, on every device.
    if (key == "priority") {
      for (driver::Config& c : out) c.emplace(key, value);
      continue;
    }
    const size_t colon = key.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == key.size())
      fail(HETERO_INVALID_ARGUMENT, "HETERO config key '" + key +
                                        "' is neither 'policy', 'priority' nor DEVICE:key (as in CPU.1:ops or CPU:num_threads)");
    const std::string target = key.substr(0, colon), device_key = key.substr(colon + 1);
    bool matched = false;
    for (size_t d = 0; d < device.devices.size(); ++d) {
      if (device.devices[d].to_string() == target || device.devices[d].driver == target) {
        out[d][device_key] = value;
        matched = true;
      }
    }
    if (!matched)
      fail(HETERO_INVALID_ARGUMENT, "HETERO config key '" + key + "' names " + target + ", which is not a device of " +
                                        device.to_string());
  }
  return out;
}

Plan make_plan(const core::Runtime& runtime, const core::Model& model, const core::DeviceString& device,
               const driver::Config& config) {
  Plan plan;
  plan.config = parse_hetero_config(hetero_device(device), config);
  const Policy& policy = plan.config.policy;
  plan.affinity = resolve_affinity(model.graph, policy, device_support(runtime, model, device, plan.config));

  const GraphDag g = graph_dag(model.graph);
  std::vector<int> affinity(g.node_index.size());
  for (size_t id = 0; id < affinity.size(); ++id) affinity[id] = plan.affinity.device[g.node_index[id]];
  const std::vector<Subgraph> subgraphs = break_subgraph_cycles(
      g.dag, select_subgraphs(g.dag, affinity, static_cast<int>(policy.devices.size())));

  std::vector<Part> parts;
  for (const Subgraph& s : subgraphs) {
    Part part;
    part.device = s.device;
    for (uint32_t id : s.nodes) part.nodes.push_back(g.node_index[id]);
    parts.push_back(std::move(part));
  }
  plan.cut = cut_model(model, parts);
  core::report_progress(kPlanningStage, policy.devices.size() + 1, policy.devices.size() + 1);
  return plan;
}

std::vector<driver::NodeSupport> query_hetero(const core::Runtime& runtime, const core::Model& model,
                                              const core::DeviceString& device, const driver::Config& config) {
  const HeteroConfig hc = parse_hetero_config(hetero_device(device), config);
  const std::vector<DeviceSupport> support = device_support(runtime, model, device, hc);
  std::vector<driver::NodeSupport> out(model.graph.nodes().size());
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t d = 0; d < support.size() && !out[i].supported; ++d)
      out[i].supported = support[d].present && support[d].nodes[i].supported;
    if (out[i].supported) continue;
    for (size_t d = 0; d < support.size(); ++d)
      out[i].reason += (out[i].reason.empty() ? "" : "; ") + hc.policy.devices[d] + ": " +
                       (support[d].present ? support[d].nodes[i].reason : support[d].absent_reason);
  }
  return out;
}

}  // namespace hetero::partition
