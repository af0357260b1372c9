#include "core/blob_container.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "hetero_build_config.h"

namespace hetero::core {

namespace {

constexpr char kMagic[8] = {'H', 'E', 'T', 'E', 'R', 'O', 'B', 'L'};
constexpr size_t kAlign = 64;
// Bounds that no honest blob comes near; beyond them a count or length is
// corruption, refused before anything is allocated for it.
constexpr uint32_t kMaxHeaderBytes = 1 << 20;
constexpr uint32_t kMaxString = 4096;
constexpr uint32_t kMaxConfig = 256;
constexpr uint32_t kMaxSections = 4096;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  if (s.size() > kMaxString) fail(HETERO_INVALID_ARGUMENT, "blob header string is longer than 4096 bytes");
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
void set_u32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void set_u64(std::vector<uint8_t>& out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Bounds-checked little-endian reader over part of the blob.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  std::span<const uint8_t> take(size_t n, const std::string& field) {
    if (n > remaining())
      fail(HETERO_BLOB_CORRUPT, "blob is truncated: field '" + field + "' needs " + std::to_string(n) + " bytes, " +
                                    std::to_string(remaining()) + " left");
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
  uint32_t count(const std::string& field, uint32_t max) {
    const uint64_t n = uint(4, field);
    if (n > max) fail(HETERO_BLOB_CORRUPT, "blob field '" + field + "' is " + std::to_string(n) + ", above " +
                                               std::to_string(max));
    return static_cast<uint32_t>(n);
  }
  std::string string(const std::string& field) {
    auto s = take(count(field, kMaxString), field);
    return std::string(s.begin(), s.end());
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t seed) {
  // zlib's: several times a byte-table loop's speed, which a blob of a model's
  // weights notices at every import.
  uLong c = seed;
  while (!bytes.empty()) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size(), 1u << 30));
    c = ::crc32(c, bytes.data(), n);
    bytes = bytes.subspan(n);
  }
  return static_cast<uint32_t>(c);
}

const BlobSection& BlobView::section(const std::string& name) const {
  for (const BlobSection& s : sections)
    if (s.name == name) return s;
  fail(HETERO_BLOB_CORRUPT, "blob has no section '" + name + "'");
}

std::vector<uint8_t> write_blob(const BlobHeader& header, std::span<const BlobSection> sections) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_u32(out, kBlobFormatVersion);
  put_u32(out, 0);  // header size, set below
  put_string(out, HETERO_VERSION);
  put_string(out, header.driver);
  put_string(out, header.driver_version);
  put_string(out, header.device);
  auto config = header.config;
  std::sort(config.begin(), config.end());
  put_u32(out, static_cast<uint32_t>(config.size()));
  for (const auto& [key, value] : config) {
    put_string(out, key);
    put_string(out, value);
  }
  out.insert(out.end(), header.model_sha256.begin(), header.model_sha256.end());
  put_u32(out, static_cast<uint32_t>(sections.size()));
  std::vector<size_t> offset_at;
  for (const BlobSection& s : sections) {
    put_string(out, s.name);
    put_string(out, s.device);
    offset_at.push_back(out.size());
    put_u64(out, 0);  // offset, set below
    put_u64(out, s.bytes.size());
    put_u32(out, crc32(s.bytes));
  }
  if (out.size() - 16 > kMaxHeaderBytes) fail(HETERO_INVALID_ARGUMENT, "blob header is larger than 1 MiB");
  set_u32(out, 12, static_cast<uint32_t>(out.size() - 16));
  const size_t header_crc_at = out.size();
  put_u32(out, 0);
  for (size_t i = 0; i < sections.size(); ++i) {
    out.resize((out.size() + kAlign - 1) / kAlign * kAlign, 0);
    set_u64(out, offset_at[i], out.size());
    out.insert(out.end(), sections[i].bytes.begin(), sections[i].bytes.end());
  }
  // The checksum covers the offsets, so it is taken last.
  set_u32(out, header_crc_at, crc32(std::span(out).first(header_crc_at)));
  return out;
}

std::string describe_blob(const BlobView& view, size_t blob_size) {
  const BlobHeader& h = view.header;
  std::string config;
  for (const auto& [key, value] : h.config) config += (config.empty() ? "" : " ") + key + "=" + value;
  std::string out = "format:          heterod blob, version " + std::to_string(h.format_version) + ", " +
                    std::to_string(blob_size) + " bytes\n";
  out += "library_version: " + h.library_version + (h.library_version == HETERO_VERSION ? "" : " (not this library's)") +
         "\n";
  out += "driver:          " + h.driver + " " + h.driver_version + "\n";
  out += "device:          " + h.device + "\n";
  out += "config:          " + (config.empty() ? std::string("(none)") : config) + "\n";
  out += "model_sha256:    " + to_hex(h.model_sha256) + "\n";
  out += "sections:        " + std::to_string(view.sections.size()) + "\n";
  for (const BlobSection& s : view.sections)
    out += "  " + s.name + (s.device.empty() ? "" : " (" + s.device + ")") + ": " + std::to_string(s.bytes.size()) +
           " bytes, checksum ok\n";
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
  const uint32_t header_size = r.count("header_size", kMaxHeaderBytes);
  // The checksum first: no field of a damaged header is believed.
  const auto header = r.take(header_size, "header");
  const uint32_t header_crc = static_cast<uint32_t>(r.uint(4, "header_checksum"));
  if (header_crc != crc32(bytes.first(16 + header_size))) fail(HETERO_BLOB_CORRUPT, "blob header checksum does not match");

  Reader h(header);
  view.header.library_version = h.string("library_version");
  view.header.driver = h.string("driver");
  view.header.driver_version = h.string("driver_version");
  view.header.device = h.string("device");
  const uint32_t config_count = h.count("config_count", kMaxConfig);
  for (uint32_t i = 0; i < config_count; ++i) {
    std::string key = h.string("config key");
    view.header.config.emplace_back(std::move(key), h.string("config value"));
  }
  const auto hash = h.take(view.header.model_sha256.size(), "model_sha256");
  std::copy(hash.begin(), hash.end(), view.header.model_sha256.begin());

  const uint32_t section_count = h.count("section_count", kMaxSections);
  uint64_t end = 16 + uint64_t{header_size} + 4;  // sections follow the header checksum, in order
  for (uint32_t i = 0; i < section_count; ++i) {
    const std::string field = "section " + std::to_string(i);
    BlobSection s;
    s.name = h.string(field + " name");
    s.device = h.string(field + " device");
    const uint64_t offset = h.uint(8, field + " offset"), size = h.uint(8, field + " size");
    const uint32_t crc = static_cast<uint32_t>(h.uint(4, field + " checksum"));
    if (offset < end || offset > bytes.size() || size > bytes.size() - offset)
      fail(HETERO_BLOB_CORRUPT, "blob section '" + s.name + "' claims bytes " + std::to_string(offset) + ".." +
                                    std::to_string(offset + size) + " of a " + std::to_string(bytes.size()) +
                                    "-byte blob (truncated or corrupt)");
    // No checksum covers the alignment padding: it must be zeros, so that no
    // byte of a blob can change unnoticed.
    for (uint64_t at = end; at < offset; ++at)
      if (bytes[at] != 0) fail(HETERO_BLOB_CORRUPT, "blob padding before section '" + s.name + "' is not zero");
    s.bytes = bytes.subspan(offset, size);
    if (crc != crc32(s.bytes)) fail(HETERO_BLOB_CORRUPT, "blob section '" + s.name + "' checksum does not match");
    end = offset + size;
    view.sections.push_back(std::move(s));
  }
  if (h.remaining() != 0) fail(HETERO_BLOB_CORRUPT, "blob header has " + std::to_string(h.remaining()) + " stray bytes");
  if (end != bytes.size())
    fail(HETERO_BLOB_CORRUPT, "blob has " + std::to_string(bytes.size() - end) + " bytes after its last section");
  return view;
}

}  // namespace hetero::core
