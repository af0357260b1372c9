// The daemon runs models through the public C ABI, like any other client of
// libhetero: these are its RAII handles and the check that turns a failed
// call into a hetero::Failure carrying hetero_last_error().
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "hetero/hetero.h"

namespace hetero::daemon {

inline void check(hetero_status status, const std::string& what) {
  if (status != HETERO_OK) fail(status, what + ": " + hetero_last_error());
}

struct CoreDeleter {
  void operator()(hetero_core_t* p) const noexcept { hetero_core_release(p); }
};
struct CompiledDeleter {
  void operator()(hetero_compiled_model_t* p) const noexcept { hetero_compiled_model_release(p); }
};
struct RequestDeleter {
  void operator()(hetero_infer_request_t* p) const noexcept { hetero_infer_request_release(p); }
};
struct TensorDeleter {
  void operator()(hetero_tensor_t* p) const noexcept { hetero_tensor_release(p); }
};
struct ModelDeleter {
  void operator()(hetero_model_t* p) const noexcept { hetero_model_release(p); }
};
struct QueryResultDeleter {
  void operator()(hetero_query_result_t* p) const noexcept { hetero_query_result_release(p); }
};

using CorePtr = std::unique_ptr<hetero_core_t, CoreDeleter>;
using CompiledPtr = std::unique_ptr<hetero_compiled_model_t, CompiledDeleter>;
using RequestPtr = std::unique_ptr<hetero_infer_request_t, RequestDeleter>;
using TensorPtr = std::unique_ptr<hetero_tensor_t, TensorDeleter>;
using ModelPtr = std::unique_ptr<hetero_model_t, ModelDeleter>;
using QueryResultPtr = std::unique_ptr<hetero_query_result_t, QueryResultDeleter>;

}  // namespace hetero::daemon
