// Affinity policies: which device runs which nodes of a model, written in
// YAML (see conf/policy-example.yaml):
//
//   devices: [OPENCL, CPU]     # priority order
//   fallback: true             # a node its device cannot run goes to the next device
//   rules:                     # first match wins
//     - device: CPU
//       nodes: ["4", "head/*"] # node names, exact or glob
//     - device: OPENCL
//       ops: [Conv, Relu]      # op types
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "partition/name_patterns.h"

namespace hetero::partition {

struct PolicyRule {
  std::string device;
  NamePatterns nodes;  // node names or fnmatch(3) globs
  NamePatterns ops;    // op types, exact
  int line = 0;        // 1-based, in the policy's source
  // Whether the node's name or op type is listed: a few hash lookups.
  bool matches(const core::Node& node) const;
};

struct Policy {
  std::string source;                // file path, for messages
  std::vector<std::string> devices;  // device names, priority order
  bool fallback = true;
  std::vector<PolicyRule> rules;

  // The first rule matching `node`, or null.
  const PolicyRule* rule_for(const core::Node& node) const;
  // "file:line: rule for DEVICE matches no node of the model" per useless rule.
  std::vector<std::string> unused_rule_warnings(const core::Graph& graph) const;
};

// Parses a policy; every error names source:line and the field at fault
// (malformed YAML, an unknown key, a wrong type, a rule's device not among
// `devices`, a rule with neither nodes nor ops). Status INVALID_ARGUMENT.
Policy parse_policy(const std::string& text, const std::string& source);
// Reads and parses the policy file `path`: NOT_FOUND / PERMISSION_DENIED /
// IO_ERROR naming it when it cannot be read (a FIFO, a device or a directory
// is refused unread), INVALID_ARGUMENT when it is larger than 1 MiB.
Policy load_policy(const std::string& path);

// The policy a plain device list stands for ("HETERO:OPENCL,CPU"): those
// devices in that order, fallback on, no rules.
Policy policy_for_devices(const std::vector<std::string>& devices);

}  // namespace hetero::partition
