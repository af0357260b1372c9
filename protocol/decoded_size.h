// What parsing a protobuf message would allocate, read off its wire bytes
// before anything is parsed. A message's wire form can be far smaller than
// its parsed form: an empty entry of a repeated message field is 2 bytes on
// the wire and a few hundred bytes parsed, so 16 MiB of them (or 61 KB
// gzip-compressed) parse into gigabytes. The v2 listener measures each
// ModelInfer request with this first and refuses it when it would be too
// big, instead of letting the parse end the daemon with std::bad_alloc.
// It follows the fields by the message's descriptor, so it takes messages of
// the full protobuf runtime (the v2 protocol's); the native protocol's are
// built for the lite runtime, which has no descriptors.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <span>

namespace hetero::wire {

struct DecodedSize {
  uint64_t bytes = 0;     // estimated memory of the parsed message
  uint64_t messages = 0;  // message objects in it (map entries included), the root not counted
};

// Walks the wire form of a `type` message read from `input`, following its
// fields by the descriptor, and adds up what the parse would allocate: each
// message object at its empty size, each string or bytes field at its length,
// each repeated scalar at its in-memory element size, unknown fields at their
// wire size. False when the bytes are not a well-formed message (a parse
// would fail too) or nest deeper than protobuf's parser allows; `size` then
// holds what was counted.
bool estimate_decoded_size(google::protobuf::io::ZeroCopyInputStream& input,
                           const google::protobuf::Descriptor& type, DecodedSize& size);
bool estimate_decoded_size(std::span<const uint8_t> bytes, const google::protobuf::Descriptor& type,
                           DecodedSize& size);

}  // namespace hetero::wire
