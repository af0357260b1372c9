// The structs behind the opaque handles of hetero/hetero.h. They live in the
// global namespace because the public header declares them there.
#pragma once

#include <memory>

#include "capi/backend.h"
#include "core/tensor.h"

struct hetero_core {
  std::shared_ptr<hetero::capi::Backend> backend;
};

struct hetero_model {
  std::unique_ptr<hetero::capi::ModelImpl> impl;
};

struct hetero_model_list {
  std::vector<hetero::capi::ServedModelEntry> models;
};

struct hetero_query_result {
  std::vector<hetero::capi::QueryNode> nodes;
};

struct hetero_compiled_model {
  // Shared with its requests, which must not outlive it.
  std::shared_ptr<hetero::capi::CompiledModelImpl> impl;
};

struct hetero_tensor {
  // Keeps the code that frees `tensor`'s memory loaded (an output's driver).
  // Declared first so that it is destroyed after `tensor`.
  std::shared_ptr<const void> keepalive;
  hetero::core::Tensor tensor;
};

struct hetero_infer_request {
  std::shared_ptr<hetero::capi::CompiledModelImpl> compiled;
  // Keeps its own state: core/request_state.h's rules, whichever backend.
  std::unique_ptr<hetero::capi::InferRequestImpl> impl;
};
