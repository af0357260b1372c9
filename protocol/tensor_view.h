// A tensor viewed where its bytes already are, as a request's decoder leaves
// it: the native protocol's (tensor_codec.h: inside the message or a mapped
// memfd) and the KServe v2 listener's (daemon/kserve/tensor_convert.h) both
// give the daemon's serving core its inputs this way. No protocol's message
// type is needed to use one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hetero::wire {

struct TensorView {
  std::string name;
  core::DType dtype = core::DType::Undefined;
  std::vector<int64_t> dims;
  const uint8_t* data = nullptr;  // borrowed from whoever decoded it
  size_t bytes = 0;
};

}  // namespace hetero::wire
