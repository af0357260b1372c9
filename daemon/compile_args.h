// A model spec's compile config and shapes as the C ABI's parallel arrays,
// for the loader (served_model.cpp) and for `heterod --check`
// (model_check.cpp), which must ask the runtime the same question.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config.h"

namespace hetero::daemon {

// The C ABI's parallel arrays for a spec's compile config and shapes (a
// blob's import ignores the policy).
struct CompileArgs {
  std::vector<std::string> keys, values;
  std::vector<const char*> key_ptrs, value_ptrs;
  std::vector<const char*> shape_names;
  std::vector<const int64_t*> shape_dims;
  std::vector<size_t> shape_ranks;

  explicit CompileArgs(const ModelSpec& spec) {
    for (const auto& [k, v] : spec.config) {
      keys.push_back(k);
      values.push_back(v);
    }
    if (!spec.policy.empty()) {
      keys.push_back("policy");
      values.push_back(spec.policy);
    }
    if (!spec.priority.empty()) {
      keys.push_back("priority");
      values.push_back(spec.priority);
    }
    for (size_t k = 0; k < keys.size(); ++k) {
      key_ptrs.push_back(keys[k].c_str());
      value_ptrs.push_back(values[k].c_str());
    }
    for (const auto& [name, dims] : spec.shapes) {
      shape_names.push_back(name.c_str());
      shape_dims.push_back(dims.data());
      shape_ranks.push_back(dims.size());
    }
  }
};

}  // namespace hetero::daemon
