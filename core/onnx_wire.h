// A scan of a serialized ONNX ModelProto at the protobuf wire level, so that
// initializer payloads can be viewed in the mapped file instead of being copied
// into protobuf strings (and from there into tensors). Internal to core/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hetero::core {

// Where one initializer of the main graph (ModelProto.graph.initializer, in
// the order protobuf will parse them) keeps its raw_data in the scanned bytes.
struct WireInitializer {
  bool has_raw_data = false;
  size_t raw_offset = 0;  // byte offset of the payload in the scanned buffer
  size_t raw_size = 0;
  // The payload was left out of WireScan::slim: the parsed TensorProto holds an
  // empty raw_data and the data lives only at raw_offset.
  bool stripped = false;
};

struct WireScan {
  std::vector<WireInitializer> initializers;
  // The model with large raw_data payloads emptied, for protobuf to parse. Empty
  // when nothing was stripped: parse the original bytes then.
  std::string slim;
  bool stripped_any = false;
};

// Payloads up to this size stay in the parsed copy: shape inference needs the
// values of small constants (Reshape shapes, Slice starts), and copying them
// costs nothing worth saving.
inline constexpr size_t kInlineRawDataMax = 4096;

// Scans `bytes` as a ModelProto. Fails with INVALID_MODEL naming the byte offset
// when a length or tag runs past the end or is malformed (truncated file, not
// a protobuf); it never allocates more than the input's size.
WireScan scan_model_wire(std::span<const uint8_t> bytes, size_t inline_max = kInlineRawDataMax);

}  // namespace hetero::core
