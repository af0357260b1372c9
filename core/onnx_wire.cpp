#include "core/onnx_wire.h"

#include "core/error.h"

namespace hetero::core {

namespace {

// Field numbers of onnx.proto that lead to initializer payloads.
constexpr uint32_t kModelGraph = 7;         // ModelProto.graph
constexpr uint32_t kGraphInitializer = 5;   // GraphProto.initializer
constexpr uint32_t kTensorRawData = 9;      // TensorProto.raw_data

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

[[noreturn]] void malformed(const std::string& what, size_t at) {
  fail(HETERO_INVALID_MODEL,
       "not a valid ONNX model (truncated, or not a protobuf): at byte " + std::to_string(at) + ", " + what);
}

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  size_t tag_begin = 0;    // first byte of the tag
  size_t value_begin = 0;  // first byte after the tag (a length prefix for kLen)
  size_t payload_begin = 0;  // kLen only: first byte of the payload
  size_t end = 0;            // one past the field's last byte
};

// Walks the fields of one message occupying [pos, end) of `buf`. Every length
// is checked against `end` before it is used, so a lying length can neither
// read out of bounds nor make us allocate.
class Reader {
 public:
  Reader(std::span<const uint8_t> buf, size_t begin, size_t end) : buf_(buf), pos_(begin), end_(end) {}

  bool done() const noexcept { return pos_ >= end_; }

  Field next() {
    Field f;
    f.tag_begin = pos_;
    const uint64_t tag = varint();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.number == 0 || (tag >> 3) > 0x1fffffff) malformed("invalid field tag", f.tag_begin);
    f.value_begin = pos_;
    switch (f.wire_type) {
      case kVarint:
        varint();
        break;
      case kFixed64:
        skip(8, f.tag_begin);
        break;
      case kFixed32:
        skip(4, f.tag_begin);
        break;
      case kLen: {
        const uint64_t len = varint();
        f.payload_begin = pos_;
        if (len > end_ - pos_)
          malformed("field " + std::to_string(f.number) + " claims " + std::to_string(len) + " bytes but only " +
                        std::to_string(end_ - pos_) + " remain",
                    f.tag_begin);
        pos_ += static_cast<size_t>(len);
        break;
      }
      default:  // groups (3, 4) are not used by onnx.proto; 6 and 7 do not exist
        malformed("unsupported wire type " + std::to_string(f.wire_type), f.tag_begin);
    }
    f.end = pos_;
    return f;
  }

 private:
  uint64_t varint() {
    const size_t start = pos_;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end_) malformed("varint runs past the end", start);
      const uint8_t b = buf_[pos_++];
      if (shift == 63 && b > 1) malformed("varint overflows 64 bits", start);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    malformed("varint longer than 10 bytes", start);
  }

  void skip(size_t n, size_t field_start) {
    if (n > end_ - pos_) malformed("fixed-size field runs past the end", field_start);
    pos_ += n;
  }

  std::span<const uint8_t> buf_;
  size_t pos_;
  size_t end_;
};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

class Scanner {
 public:
  Scanner(std::span<const uint8_t> buf, size_t inline_max, bool rewrite)
      : buf_(buf), inline_max_(inline_max), rewrite_(rewrite) {}

  WireScan scan() {
    WireScan result;
    std::string* out = rewrite_ ? &result.slim : nullptr;
    Reader r(buf_, 0, buf_.size());
    while (!r.done()) {
      const Field f = r.next();
      if (f.number == kModelGraph && f.wire_type == kLen) {
        rewrite_nested(f, out, [&](std::string* sub) { graph(f, sub); });
      } else if (out) {
        append(*out, f.tag_begin, f.end);
      }
    }
    result.initializers = std::move(initializers_);
    result.stripped_any = stripped_any_;
    return result;
  }

 private:
  // Runs `body` to produce the payload of the kLen field `f`; when rewriting,
  // emits the original tag followed by the new payload's length and bytes.
  template <typename Body>
  void rewrite_nested(const Field& f, std::string* out, Body body) {
    if (!out) {
      body(nullptr);
      return;
    }
    std::string payload;
    body(&payload);
    append(*out, f.tag_begin, f.value_begin);
    put_varint(*out, payload.size());
    out->append(payload);
  }

  void graph(const Field& g, std::string* out) {
    Reader r(buf_, g.payload_begin, g.end);
    while (!r.done()) {
      const Field f = r.next();
      if (f.number == kGraphInitializer && f.wire_type == kLen) {
        initializers_.emplace_back();
        rewrite_nested(f, out, [&](std::string* sub) { tensor(f, sub, initializers_.back()); });
      } else if (out) {
        append(*out, f.tag_begin, f.end);
      }
    }
  }

  void tensor(const Field& t, std::string* out, WireInitializer& init) {
    Reader r(buf_, t.payload_begin, t.end);
    while (!r.done()) {
      const Field f = r.next();
      if (f.number == kTensorRawData && f.wire_type == kLen) {
        // Protobuf keeps the last occurrence of a repeated scalar field.
        init.has_raw_data = true;
        init.raw_offset = f.payload_begin;
        init.raw_size = f.end - f.payload_begin;
        init.stripped = init.raw_size > inline_max_;
        if (init.stripped) {
          stripped_any_ = true;
          if (out) {
            append(*out, f.tag_begin, f.value_begin);
            put_varint(*out, 0);
          }
          continue;
        }
      }
      if (out) append(*out, f.tag_begin, f.end);
    }
  }

  void append(std::string& out, size_t begin, size_t end) const {
    out.append(reinterpret_cast<const char*>(buf_.data()) + begin, end - begin);
  }

  std::span<const uint8_t> buf_;
  size_t inline_max_;
  bool rewrite_;
  bool stripped_any_ = false;
  std::vector<WireInitializer> initializers_;
};

}  // namespace

WireScan scan_model_wire(std::span<const uint8_t> bytes, size_t inline_max) {
  // First pass records offsets only; the slim copy is built in a second pass
  // only when a payload is worth leaving out (most small models have none).
  WireScan scan = Scanner(bytes, inline_max, false).scan();
  if (!scan.stripped_any) return scan;
  return Scanner(bytes, inline_max, true).scan();
}

}  // namespace hetero::core
