#include "core/blob_container.h"

#include <array>
#include <cstring>

#include "core/error.h"
#include "hetero_build_config.h"

namespace hetero::core {

namespace {

constexpr char kMagic[8] = {'H', 'E', 'T', 'E', 'R', 'O', 'B', 'L'};
// Header strings are short; a length beyond this is corruption, not a name.
constexpr uint32_t kMaxHeaderString = 4096;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// Bounds-checked little-endian reader over the blob.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t position() const { return pos_; }
  std::span<const uint8_t> take(size_t n, const char* field) {
    if (n > remaining())
      fail(HETERO_BLOB_CORRUPT, std::string("blob is truncated: field '") + field + "' needs " + std::to_string(n) +
                                    " bytes, " + std::to_string(remaining()) + " left");
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint(size_t width, const char* field) {
    auto s = take(width, field);
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(s[i]) << (8 * i);
    return v;
  }
  std::string string(const char* field) {
    const uint64_t n = uint(4, field);
    if (n > kMaxHeaderString)
      fail(HETERO_BLOB_CORRUPT, std::string("blob field '") + field + "' claims " + std::to_string(n) + " bytes");
    auto s = take(n, field);
    return std::string(s.begin(), s.end());
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t seed) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = ~seed;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xffu] ^ (c >> 8);
  return ~c;
}

std::vector<uint8_t> write_blob(const BlobHeader& header, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_u32(out, kBlobFormatVersion);
  put_string(out, HETERO_VERSION);
  put_string(out, header.driver);
  put_string(out, header.driver_version);
  put_string(out, header.device);
  put_u32(out, crc32(out));
  put_u64(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
  put_u32(out, crc32(payload));
  return out;
}

BlobView read_blob(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  auto magic = r.take(sizeof kMagic, "magic");
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
    fail(HETERO_BLOB_CORRUPT, "not a heterod blob (bad magic)");
  BlobView view;
  view.header.format_version = static_cast<uint32_t>(r.uint(4, "format_version"));
  if (view.header.format_version != kBlobFormatVersion)
    fail(HETERO_BLOB_MISMATCH, "blob format_version is " + std::to_string(view.header.format_version) +
                                   ", this library reads " + std::to_string(kBlobFormatVersion));
  view.header.library_version = r.string("library_version");
  view.header.driver = r.string("driver");
  view.header.driver_version = r.string("driver_version");
  view.header.device = r.string("device");
  const size_t header_end = r.position();
  const uint32_t header_crc = static_cast<uint32_t>(r.uint(4, "header_checksum"));
  if (header_crc != crc32(bytes.first(header_end))) fail(HETERO_BLOB_CORRUPT, "blob header checksum does not match");
  if (view.header.library_version != HETERO_VERSION)
    fail(HETERO_BLOB_MISMATCH, "blob library_version is " + view.header.library_version + ", this library is " +
                                   std::string(HETERO_VERSION));
  const uint64_t n = r.uint(8, "payload_size");
  if (n > r.remaining())
    fail(HETERO_BLOB_CORRUPT, "blob is truncated: payload claims " + std::to_string(n) + " bytes, " +
                                  std::to_string(r.remaining()) + " left");
  view.payload = r.take(n, "payload");
  const uint32_t payload_crc = static_cast<uint32_t>(r.uint(4, "payload_checksum"));
  if (payload_crc != crc32(view.payload)) fail(HETERO_BLOB_CORRUPT, "blob payload checksum does not match");
  if (r.remaining() != 0) fail(HETERO_BLOB_CORRUPT, "blob has " + std::to_string(r.remaining()) + " trailing bytes");
  return view;
}

}  // namespace hetero::core
