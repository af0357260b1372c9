// What `heterod --check` asks the runtime, without compiling anything: the
// question a start asks of each model, up to the compile. Kept next to the
// core's creation so that both see the same drivers, driver config and cache.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "daemon/c_api.h"
#include "daemon/config.h"

namespace hetero::daemon {

// The runtime `c` asks for: its driver_path, driver_config and blob cache.
// Fails naming the config file when a driver setting is refused.
CorePtr create_core(const Config& c);

// Each model resolved as its load will resolve it, up to the compile: an
// ONNX file is read with its `shapes:` (an input the model lacks is an
// error) and its device queried with its config and policy (an unknown
// device, driver key or policy device is an error); a blob's device is
// resolved (whether the blob suits it is its import's to say). One problem
// per model, none fatal: at a start that model fails alone. The models in
// `skip` (their files are already known to be wrong) are not read.
std::vector<FileProblem> check_models(hetero_core_t* core, const Config& c, const std::set<std::string>& skip);

}  // namespace hetero::daemon
