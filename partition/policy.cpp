#include "partition/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "core/device_string.h"
#include "core/error.h"
#include "core/regular_file.h"
#include "partition/strict_yaml.h"

namespace hetero::partition {

namespace {

[[noreturn]] void fail_at(const std::string& source, const YAML::Node& node, const std::string& what) {
  const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  fail(HETERO_INVALID_ARGUMENT, source + ":" + std::to_string(line) + ": " + what);
}

std::vector<std::string> string_list(const std::string& source, const YAML::Node& node, const std::string& field) {
  if (!node.IsSequence()) fail_at(source, node, "'" + field + "' must be a list of strings");
  std::vector<std::string> out;
  out.reserve(node.size());
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) fail_at(source, item, "'" + field + "' must be a list of strings");
    out.push_back(item.Scalar());
  }
  return out;
}

std::string device_name(const std::string& source, const YAML::Node& node, const std::string& text) {
  try {
    const core::DeviceString ds = core::parse_device_string(text);
    if (ds.hetero) fail_at(source, node, "'" + text + "' is a HETERO device; name plain devices here");
    return ds.devices.front().to_string();
  } catch (const Failure& e) {
    if (std::string(e.what()).rfind(source + ":", 0) == 0) throw;
    fail_at(source, node, e.what());
  }
}

PolicyRule parse_rule(const std::string& source, const YAML::Node& node, const std::vector<std::string>& devices) {
  if (!node.IsMap()) fail_at(source, node, "a rule must be a mapping with 'device' and 'nodes' or 'ops'");
  PolicyRule rule;
  rule.line = node.Mark().line + 1;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key == "device") {
      if (!kv.second.IsScalar()) fail_at(source, kv.second, "'device' must be a device name");
      rule.device = device_name(source, kv.second, kv.second.as<std::string>());
      if (std::find(devices.begin(), devices.end(), rule.device) == devices.end())
        fail_at(source, kv.second, "rule device '" + rule.device + "' is not among the policy's devices");
    } else if (key == "nodes") {
      rule.nodes = NamePatterns(string_list(source, kv.second, "nodes"), NamePatterns::Globs::Allowed);
    } else if (key == "ops") {
      rule.ops = NamePatterns(string_list(source, kv.second, "ops"), NamePatterns::Globs::None);
    } else {
      fail_at(source, kv.first, "unknown rule key '" + key + "' (keys: device, nodes, ops)");
    }
  }
  if (rule.device.empty()) fail_at(source, node, "rule has no 'device'");
  if (rule.nodes.empty() && rule.ops.empty()) fail_at(source, node, "rule has neither 'nodes' nor 'ops'");
  return rule;
}

}  // namespace

bool PolicyRule::matches(const core::Node& node) const { return ops.matches(node.op_type) || nodes.matches(node.name); }

const PolicyRule* Policy::rule_for(const core::Node& node) const {
  for (const PolicyRule& r : rules)
    if (r.matches(node)) return &r;
  return nullptr;
}

std::vector<std::string> Policy::unused_rule_warnings(const core::Graph& graph) const {
  std::vector<std::string> warnings;
  for (const PolicyRule& r : rules) {
    const bool used = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                                  [&](const auto& n) { return r.matches(*n); });
    if (!used)
      warnings.push_back(source + ":" + std::to_string(r.line) + ": rule for " + r.device +
                         " matches no node of the model");
  }
  return warnings;
}

Policy parse_policy(const std::string& text, const std::string& source) {
  const YAML::Node root = load_strict_yaml(text, source);
  if (!root.IsMap()) fail(HETERO_INVALID_ARGUMENT, source + ":1: a policy must be a mapping with 'devices'");
  Policy policy;
  policy.source = source;
  YAML::Node rules;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "devices") {
        for (const std::string& d : string_list(source, kv.second, "devices")) {
          const std::string name = device_name(source, kv.second, d);
          if (std::find(policy.devices.begin(), policy.devices.end(), name) != policy.devices.end())
            fail_at(source, kv.second, "device '" + name + "' is listed twice");
          policy.devices.push_back(name);
        }
      } else if (key == "fallback") {
        if (!kv.second.IsScalar()) fail_at(source, kv.second, "'fallback' must be true or false");
        const std::string v = kv.second.as<std::string>();
        if (v != "true" && v != "false") fail_at(source, kv.second, "'fallback' must be true or false");
        policy.fallback = v == "true";
      } else if (key == "rules") {
        if (!kv.second.IsSequence()) fail_at(source, kv.second, "'rules' must be a list");
        rules = kv.second;
      } else {
        fail_at(source, kv.first, "unknown key '" + key + "' (keys: devices, fallback, rules)");
      }
    }
    if (policy.devices.empty()) fail(HETERO_INVALID_ARGUMENT, source + ":1: the policy names no 'devices'");
    if (rules)
      for (const YAML::Node& r : rules) policy.rules.push_back(parse_rule(source, r, policy.devices));
  } catch (const YAML::Exception& e) {
    fail(HETERO_INVALID_ARGUMENT, source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return policy;
}

Policy load_policy(const std::string& path) {
  // A policy is a few rules (tens of thousands of node names at most);
  // anything larger is a wrong path, not a policy. Read as a regular file
  // only: a FIFO would block the loader, /dev/zero would never end.
  constexpr uint64_t kMaxPolicyBytes = uint64_t{1} << 20;
  return parse_policy(core::read_regular_file(path, kMaxPolicyBytes, "a policy file"), path);
}

Policy policy_for_devices(const std::vector<std::string>& devices) {
  Policy p;
  p.source = "<device string>";
  p.devices = devices;
  return p;
}

}  // namespace hetero::partition
