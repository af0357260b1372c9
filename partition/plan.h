// A HETERO plan: the policy and per-device config a HETERO device string and
// its compile config stand for, which device runs each node, and the
// submodels the model is cut into. Planning needs no device to be present
// for the nodes the policy pins (offline planning for another box); the
// devices that are present are asked about the rest.
#pragma once

#include <string>
#include <vector>

#include "core/device_string.h"
#include "core/driver.h"
#include "core/graph.h"
#include "core/runtime.h"
#include "partition/affinity.h"
#include "partition/cut.h"
#include "partition/policy.h"

namespace hetero::partition {

// The compile config of a HETERO device, split:
//   policy=FILE       an affinity policy (YAML); its devices must be the
//                     device string's, in the same order
//   DEVICE:key=VALUE  a config key for one device of the list
//                     ("CPU.1:ops=Conv,Relu"), or for every device of a
//                     driver ("CPU:num_threads=2")
struct HeteroConfig {
  Policy policy;
  std::vector<driver::Config> device_config;  // one per policy device
};

// Fails with INVALID_ARGUMENT naming the key or device at fault.
HeteroConfig parse_hetero_config(const core::DeviceString& device, const driver::Config& config);
// The DEVICE:key part alone, one config per device of `device` ("policy" is
// skipped: an imported plan needs no policy).
std::vector<driver::Config> split_device_config(const core::DeviceString& device, const driver::Config& config);

struct Plan {
  HeteroConfig config;
  Affinity affinity;  // device per node (Node::index), warnings of the policy
  CutModel cut;       // submodels in execution order; Submodel::device indexes policy.devices
};

// `device` must be a HETERO device. Fails as parse_hetero_config() does,
// with NOT_SUPPORTED naming a node no device runs, and with the policy's own
// errors.
Plan make_plan(const core::Runtime& runtime, const core::Model& model, const core::DeviceString& device,
               const driver::Config& config);

// Per node of the main graph: whether some device of the HETERO device runs
// it, and each device's reason where none does.
std::vector<driver::NodeSupport> query_hetero(const core::Runtime& runtime, const core::Model& model,
                                              const core::DeviceString& device, const driver::Config& config);

}  // namespace hetero::partition
