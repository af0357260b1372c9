// Small helpers over the C ABI for the daemon tests: one inference of a
// float model with given inputs, through a daemon or in process.
#pragma once

#include <string>
#include <vector>

#include "hetero/hetero.h"

namespace hetero::test {

// Deterministic input values for request number `seed`.
std::vector<float> seeded_input(size_t count, uint64_t seed);

// Runs `request` (bound to `input` of `dims`) once; the first output's
// values, or the failure status (and `error`, when not null).
hetero_status infer_once(hetero_infer_request_t* request, const std::vector<int64_t>& dims,
                         const std::vector<float>& input, std::vector<float>& output, std::string* error = nullptr);

// One inference of `model`, served by the daemon on `socket`, on a fresh
// connection: the first output's values, or the failure status (the current
// test is failed then, with the reason).
hetero_status infer_served(const std::string& socket, const std::string& model, const std::vector<int64_t>& dims,
                           const std::vector<float>& input, std::vector<float>& output);

// A compiled model in process (the reference results): demo.onnx with its
// batch fixed to 1, on CPU.
class LocalReference {
 public:
  LocalReference(const std::string& model, const std::vector<int64_t>& dims);
  ~LocalReference();
  std::vector<float> run(const std::vector<float>& input);

 private:
  hetero_core_t* core_ = nullptr;
  hetero_compiled_model_t* compiled_ = nullptr;
  hetero_infer_request_t* request_ = nullptr;
  std::vector<int64_t> dims_;
};

}  // namespace hetero::test
