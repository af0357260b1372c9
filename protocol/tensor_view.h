// Tensors viewed where their bytes already are, in and out, so that the
// daemon's serving core and the protocols meet without either knowing the
// other's types. No protocol's message type is needed to use them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace hetero::wire {

// An input as a request's decoder leaves it: the native protocol's
// (tensor_codec.h: inside the message or a mapped memfd) and the KServe v2
// listener's (daemon/kserve/tensor_convert.h).
struct TensorView {
  std::string name;
  core::DType dtype = core::DType::Undefined;
  std::vector<int64_t> dims;
  const uint8_t* data = nullptr;  // borrowed from whoever decoded it
  size_t bytes = 0;
};

// A tensor to send, borrowed: an output of a finished inference as the
// serving core hands it to a front end (daemon/served_model.h), and what
// encode_tensors() (tensor_codec.h) writes into a message.
struct OutgoingTensor {
  std::string_view name;
  int32_t dtype = 0;  // hetero_dtype
  std::span<const int64_t> dims;
  const void* data = nullptr;
  size_t bytes = 0;
};

}  // namespace hetero::wire
