#include "protocol/decoded_size.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message.h>
#include <google/protobuf/wire_format_lite.h>

#include <climits>
#include <map>
#include <mutex>
#include <string>

namespace hetero::wire {

namespace {

namespace pb = google::protobuf;
using pb::internal::WireFormatLite;

// protobuf's own parser stops at this depth.
constexpr int kMaxDepth = 100;
// A std::string's own footprint, before a heap buffer for longer text.
constexpr uint64_t kStringBytes = sizeof(std::string);
// A map entry's node: hash-map links and the key's and value's shells.
constexpr uint64_t kMapNodeBytes = 64;
// An unknown scalar field, kept with its tag among the unknown fields.
constexpr uint64_t kUnknownScalarBytes = 16;

// The parsed size of an empty message of `type`, from its prototype. Cached:
// a type's size never changes.
uint64_t empty_message_bytes(const pb::Descriptor& type) {
  static std::mutex mutex;
  static std::map<const pb::Descriptor*, uint64_t> sizes;
  std::lock_guard lock(mutex);
  auto [it, added] = sizes.emplace(&type, 0);
  if (added) {
    // A map's entries are nodes of its hash map, not messages (and a map
    // entry's prototype cannot measure itself); their keys and values are
    // counted as the walk reaches them.
    const pb::Message* prototype =
        type.options().map_entry() ? nullptr : pb::MessageFactory::generated_factory()->GetPrototype(&type);
    it->second = prototype ? static_cast<uint64_t>(prototype->SpaceUsedLong()) : kMapNodeBytes;
  }
  return it->second;
}

// In-memory bytes of one element of a repeated scalar field; 0 for a
// message, string or bytes field.
uint64_t scalar_bytes(const pb::FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_BOOL: return 1;
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_ENUM: return 4;
    case pb::FieldDescriptor::CPPTYPE_INT64:
    case pb::FieldDescriptor::CPPTYPE_UINT64:
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return 8;
    default: return 0;
  }
}

// Elements in a packed field's payload of `length` bytes.
bool count_packed(pb::io::CodedInputStream& in, const pb::FieldDescriptor& field, uint32_t length,
                  uint64_t& count) {
  switch (WireFormatLite::WireTypeForFieldType(static_cast<WireFormatLite::FieldType>(field.type()))) {
    case WireFormatLite::WIRETYPE_FIXED32:
      count = length / 4;
      return in.Skip(static_cast<int>(length));
    case WireFormatLite::WIRETYPE_FIXED64:
      count = length / 8;
      return in.Skip(static_cast<int>(length));
    default: {  // varints: one element per byte without the continuation bit
      count = 0;
      const pb::io::CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
      uint64_t value = 0;
      while (in.BytesUntilLimit() > 0) {
        if (!in.ReadVarint64(&value)) return false;
        ++count;
      }
      in.PopLimit(limit);
      return true;
    }
  }
}

bool walk(pb::io::CodedInputStream& in, const pb::Descriptor& type, int depth, const DecodedSize& limit,
          DecodedSize& size) {
  if (depth > kMaxDepth) return false;
  for (;;) {
    if (size.bytes > limit.bytes || size.messages > limit.messages) {
      size.over_limit = true;
      return true;
    }
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();  // the end, not a zero tag
    const pb::FieldDescriptor* field =
        type.FindFieldByNumber(static_cast<int>(WireFormatLite::GetTagFieldNumber(tag)));
    // A repeated scalar's element size (0 for anything else), and what one
    // scalar on the wire costs: a repeated field's element, nothing for a
    // singular one (the message holds it), an unknown field kept with its tag.
    const uint64_t element = field && field->is_repeated() ? scalar_bytes(*field) : 0;
    const uint64_t one_scalar = field ? element : kUnknownScalarBytes;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t value = 0;
        if (!in.ReadVarint64(&value)) return false;
        size.bytes += one_scalar;
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED32:
        if (!in.Skip(4)) return false;
        size.bytes += one_scalar;
        break;
      case WireFormatLite::WIRETYPE_FIXED64:
        if (!in.Skip(8)) return false;
        size.bytes += one_scalar;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(INT_MAX)) return false;
        if (field && field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          const pb::Descriptor& nested = *field->message_type();
          size.bytes += empty_message_bytes(nested);
          ++size.messages;
          const pb::io::CodedInputStream::Limit end = in.PushLimit(static_cast<int>(length));
          if (!walk(in, nested, depth + 1, limit, size)) return false;
          if (size.over_limit) return true;
          if (in.BytesUntilLimit() != 0) return false;
          in.PopLimit(end);
        } else if (field && element) {  // a packed repeated scalar
          uint64_t count = 0;
          if (!count_packed(in, *field, length, count)) return false;
          size.bytes += count * element;
        } else {  // a string, bytes, or an unknown field kept as bytes
          if (!in.Skip(static_cast<int>(length))) return false;
          size.bytes += kStringBytes + length;
        }
        break;
      }
      default:
        return false;  // groups: no heterod message has one
    }
  }
}

}  // namespace

bool estimate_decoded_size(pb::io::ZeroCopyInputStream& input, const pb::Descriptor& type, const DecodedSize& limit,
                           DecodedSize& size) {
  pb::io::CodedInputStream in(&input);
  in.SetTotalBytesLimit(INT_MAX);
  return walk(in, type, 0, limit, size);
}

bool estimate_decoded_size(std::span<const uint8_t> bytes, const pb::Descriptor& type, const DecodedSize& limit,
                           DecodedSize& size) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return false;
  pb::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
  return estimate_decoded_size(input, type, limit, size);
}

DecodedSize request_parse_limit(uint64_t wire_bytes) {
  constexpr uint64_t kSlackBytes = uint64_t{1} << 20;
  constexpr uint64_t kMaxMessages = 65536;
  return {2 * wire_bytes + kSlackBytes, kMaxMessages};
}

}  // namespace hetero::wire
