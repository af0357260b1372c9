// Tensors on the wire: checking a received wire::Tensor before anything is
// allocated for it, and viewing its bytes where they already are (inside the
// decoded message, or in a memfd mapped read-only) instead of copying them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "protocol/heterod.pb.h"
#include "protocol/socket_io.h"
#include "protocol/tensor_view.h"

namespace hetero::wire {

// Ranks above this are refused (ONNX Runtime's own limit is lower in practice).
inline constexpr size_t kMaxRank = 16;

// The memfd mappings that decoded views point into.
struct TensorMappings {
  std::vector<std::unique_ptr<MappedMemfd>> maps;
};

// Checks `tensor` (dtype, rank, dims, byte size against its data) and views
// its data. The view borrows from `tensor` (inline data) or from a mapping
// added to `mappings` (memfd data from `fds`, the frame's descriptors).
// Fails with PROTOCOL_ERROR naming `what` ("input 'x'") and the field.
TensorView decode_tensor(const Tensor& tensor, std::span<const UniqueFd> fds, TensorMappings& mappings,
                         const std::string& what);

// Writes `tensors` into `into` (a message's repeated Tensor field, empty),
// the way both ends of the protocol send them: inline when they take fewer
// than `memfd_threshold` bytes together (always when it is 0), else in one
// sealed memfd named `memfd_name`, returned, which the message carries as
// its frame's descriptor 0 and each tensor refers to at an offset aligned to
// 64 bytes. Null when inline.
UniqueFd encode_tensors(std::span<const OutgoingTensor> tensors, uint64_t memfd_threshold,
                        google::protobuf::RepeatedPtrField<Tensor>& into, const char* memfd_name);

// Byte size of a tensor of `dtype` and `dims`; false on overflow, a negative
// dim, an unknown dtype or one without a fixed size (string).
bool tensor_byte_size(int32_t dtype, std::span<const int64_t> dims, size_t& out);

}  // namespace hetero::wire
