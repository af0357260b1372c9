// Little-endian encoding for heterod's binary formats (the blob container,
// the IR codec). The reader checks every length against the bytes that are
// there before it trusts or allocates anything, and names the field it was
// reading when it fails (BLOB_CORRUPT).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace hetero::core {

class ByteWriter {
 public:
  std::vector<uint8_t>& bytes() { return out_; }
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { uint(v, 4); }
  void u64(uint64_t v) { uint(v, 8); }
  void i64(int64_t v) { uint(static_cast<uint64_t>(v), 8); }
  void f32(float v) {
    uint32_t bits;
    static_assert(sizeof bits == sizeof v);
    __builtin_memcpy(&bits, &v, sizeof bits);
    u32(bits);
  }
  void raw(std::span<const uint8_t> bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  // A u64 byte count, then the bytes (ByteReader::sized reads them back).
  void sized(std::span<const uint8_t> bytes) {
    u64(bytes.size());
    raw(bytes);
  }
  void string(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  // Zeros up to the next multiple of `alignment` (from the start).
  void align(size_t alignment) { out_.resize((out_.size() + alignment - 1) / alignment * alignment, 0); }
  // Overwrites a field written earlier (a size or offset known only later).
  void patch_u32(size_t at, uint32_t v) { patch(at, v, 4); }
  void patch_u64(size_t at, uint64_t v) { patch(at, v, 8); }

 private:
  void uint(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void patch(size_t at, uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.at(at + static_cast<size_t>(i)) = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  // `what` prefixes messages: "blob", "CPU blob".
  ByteReader(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  size_t position() const { return pos_; }

  std::span<const uint8_t> take(size_t n, const std::string& field) {
    if (n > remaining())
      fail(HETERO_BLOB_CORRUPT, what_ + " is truncated: field '" + field + "' needs " + std::to_string(n) +
                                    " bytes, " + std::to_string(remaining()) + " left");
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint(size_t width, const std::string& field) {
    auto s = take(width, field);
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(s[i]) << (8 * i);
    return v;
  }
  uint8_t u8(const std::string& field) { return static_cast<uint8_t>(uint(1, field)); }
  int64_t i64(const std::string& field) { return static_cast<int64_t>(uint(8, field)); }
  float f32(const std::string& field) {
    const auto bits = static_cast<uint32_t>(uint(4, field));
    float v;
    __builtin_memcpy(&v, &bits, sizeof v);
    return v;
  }
  // A count of at most `max`, each item needing at least `min_item_bytes`
  // more bytes: a count the rest of the input cannot hold is refused before
  // anything is reserved for it.
  uint32_t count(const std::string& field, uint32_t max, size_t min_item_bytes = 1) {
    const uint64_t n = uint(4, field);
    if (n > max || n * min_item_bytes > remaining())
      fail(HETERO_BLOB_CORRUPT, what_ + " field '" + field + "' is " + std::to_string(n) +
                                    ", more than the data can hold");
    return static_cast<uint32_t>(n);
  }
  std::string string(const std::string& field, uint32_t max = 1 << 20) {
    auto s = take(count(field, max), field);
    return std::string(s.begin(), s.end());
  }
  // What ByteWriter::sized wrote: a u64 byte count, then the bytes; a count
  // past the end of the input is refused before anything is taken.
  std::span<const uint8_t> sized(const std::string& field) {
    const uint64_t n = uint(8, field + " size");
    if (n > remaining()) corrupt(field + " of " + std::to_string(n) + " bytes runs past the end");
    return take(static_cast<size_t>(n), field);
  }
  void align(size_t alignment, const std::string& field) {
    const size_t to = (pos_ + alignment - 1) / alignment * alignment;
    take(to - pos_, field);
  }
  [[noreturn]] void corrupt(const std::string& why) const { fail(HETERO_BLOB_CORRUPT, what_ + ": " + why); }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  std::string what_;
};

}  // namespace hetero::core
