// What parsing a protobuf message would allocate, read off its wire bytes
// before anything is parsed. A message's wire form can be far smaller than
// its parsed form: an empty entry of a repeated message field is 2 bytes on
// the wire and a few hundred bytes parsed, so 16 MiB of them (or 61 KB
// gzip-compressed) parse into gigabytes. Both front ends (the native
// protocol's frames, the v2 listener's ModelInfer) measure a request with
// this first and refuse it when it would be too big, instead of letting the
// parse take the daemon's memory or end it with std::bad_alloc. It follows
// the fields by a descriptor: for the native protocol, whose classes are
// built for protobuf's lite runtime, that of its full-runtime copy
// (hetero::wire_schema, protocol/schema_proto.py).
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <span>

namespace hetero::wire {

struct DecodedSize {
  uint64_t bytes = 0;     // estimated memory of the parsed message
  uint64_t messages = 0;  // message objects in it (map entries included), the root not counted
  // The walk stopped at the first of bytes or messages past the limit it
  // was given: the figures are then as far as it went.
  bool over_limit = false;
};

// Walks the wire form of a `type` message read from `input`, following its
// fields by the descriptor, and adds up what the parse would allocate: each
// message object at its empty size, each string or bytes field at its length,
// each repeated scalar at its in-memory element size, unknown fields at their
// wire size. It stops as soon as the bytes or the messages pass `limit`'s
// (size.over_limit), so a crafted message costs no more than a legitimate
// one to measure. False when the bytes are not a well-formed message (a
// parse would fail too) or nest deeper than protobuf's parser allows.
bool estimate_decoded_size(google::protobuf::io::ZeroCopyInputStream& input,
                           const google::protobuf::Descriptor& type, const DecodedSize& limit,
                           DecodedSize& size);
bool estimate_decoded_size(std::span<const uint8_t> bytes, const google::protobuf::Descriptor& type,
                           const DecodedSize& limit, DecodedSize& size);

// The limit both front ends hold a request to, for a request of at most
// `wire_bytes` on the wire: its tensors travel inside it as bytes and parse
// at about their size, so twice that plus 1 MiB, in at most 65536 messages
// (inputs, outputs, parameters, config entries: a real request has a few
// dozen). Past it the request is a message crafted to grow.
DecodedSize request_parse_limit(uint64_t wire_bytes);

}  // namespace hetero::wire
