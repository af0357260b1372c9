#include "core/blob_container.h"

#include <algorithm>
#include <cstring>

#include "core/byte_io.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "core/json.h"
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

void put_string(ByteWriter& w, const std::string& s) {
  if (s.size() > kMaxString) fail(HETERO_INVALID_ARGUMENT, "blob header string is longer than 4096 bytes");
  w.string(s);
}

}  // namespace

bool has_blob_magic(std::span<const uint8_t> bytes) noexcept {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

const BlobSection& BlobView::section(const std::string& name) const {
  for (const BlobSection& s : sections)
    if (s.name == name) return s;
  fail(HETERO_BLOB_CORRUPT, "blob has no section '" + name + "'");
}

std::vector<uint8_t> write_blob(const BlobHeader& header, std::span<const BlobSection> sections) {
  ByteWriter w;
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u32(kBlobFormatVersion);
  w.u32(0);  // header size, set below
  put_string(w, HETERO_VERSION);
  put_string(w, header.driver);
  put_string(w, header.driver_version);
  put_string(w, header.device);
  auto config = header.config;
  std::sort(config.begin(), config.end());
  w.u32(static_cast<uint32_t>(config.size()));
  for (const auto& [key, value] : config) {
    put_string(w, key);
    put_string(w, value);
  }
  w.raw(header.model_sha256);
  w.u32(static_cast<uint32_t>(sections.size()));
  std::vector<uint8_t>& out = w.bytes();
  std::vector<size_t> offset_at;
  for (const BlobSection& s : sections) {
    put_string(w, s.name);
    put_string(w, s.device);
    offset_at.push_back(out.size());
    w.u64(0);  // offset, set below
    w.u64(s.bytes.size());
    w.u32(crc32c(s.bytes));
  }
  if (out.size() - 16 > kMaxHeaderBytes) fail(HETERO_INVALID_ARGUMENT, "blob header is larger than 1 MiB");
  w.patch_u32(12, static_cast<uint32_t>(out.size() - 16));
  const size_t header_crc_at = out.size();
  w.u32(0);
  for (size_t i = 0; i < sections.size(); ++i) {
    w.align(kAlign);
    w.patch_u64(offset_at[i], out.size());
    w.raw(sections[i].bytes);
  }
  // The checksum covers the offsets, so it is taken last.
  w.patch_u32(header_crc_at, crc32c(std::span(out).first(header_crc_at)));
  return std::move(out);
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

std::string describe_blob_json(const BlobView& view, size_t blob_size) {
  const BlobHeader& h = view.header;
  const json::Value doc = json::object();
  json::set(doc.get(), "format_version", json::integer(h.format_version));
  json::set(doc.get(), "size", json::integer(static_cast<int64_t>(blob_size)));
  json::set(doc.get(), "library_version", json::string(h.library_version));
  json::set(doc.get(), "this_library", json::Value(json_boolean(h.library_version == HETERO_VERSION)));
  json::set(doc.get(), "driver", json::string(h.driver));
  json::set(doc.get(), "driver_version", json::string(h.driver_version));
  json::set(doc.get(), "device", json::string(h.device));
  json::Value config = json::array();
  for (const auto& [key, value] : h.config) {
    json::Value pair = json::object();
    json::set(pair.get(), "key", json::string(key));
    json::set(pair.get(), "value", json::string(value));
    json::append(config.get(), std::move(pair));
  }
  json::set(doc.get(), "config", std::move(config));
  json::set(doc.get(), "model_sha256", json::string(to_hex(h.model_sha256)));
  json::Value sections = json::array();
  for (const BlobSection& s : view.sections) {
    json::Value section = json::object();
    json::set(section.get(), "name", json::string(s.name));
    json::set(section.get(), "device", json::string(s.device));
    json::set(section.get(), "size", json::integer(static_cast<int64_t>(s.bytes.size())));
    json::append(sections.get(), std::move(section));
  }
  json::set(doc.get(), "sections", std::move(sections));
  return json::dump(doc.get());
}

BlobView read_blob(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "blob");
  if (!has_blob_magic(r.take(sizeof kMagic, "magic"))) fail(HETERO_BLOB_CORRUPT, "not a heterod blob (bad magic)");
  BlobView view;
  view.header.format_version = static_cast<uint32_t>(r.uint(4, "format_version"));
  if (view.header.format_version != kBlobFormatVersion)
    fail(HETERO_BLOB_MISMATCH, "blob format_version is " + std::to_string(view.header.format_version) +
                                   ", this library reads " + std::to_string(kBlobFormatVersion));
  const uint32_t header_size = r.count("header_size", kMaxHeaderBytes);
  // The checksum first: no field of a damaged header is believed.
  const auto header = r.take(header_size, "header");
  const uint32_t header_crc = static_cast<uint32_t>(r.uint(4, "header_checksum"));
  if (header_crc != crc32c(bytes.first(16 + header_size))) fail(HETERO_BLOB_CORRUPT, "blob header checksum does not match");

  ByteReader h(header, "blob header");
  view.header.library_version = h.string("library_version", kMaxString);
  view.header.driver = h.string("driver", kMaxString);
  view.header.driver_version = h.string("driver_version", kMaxString);
  view.header.device = h.string("device", kMaxString);
  const uint32_t config_count = h.count("config_count", kMaxConfig);
  for (uint32_t i = 0; i < config_count; ++i) {
    std::string key = h.string("config key", kMaxString);
    view.header.config.emplace_back(std::move(key), h.string("config value", kMaxString));
  }
  const auto hash = h.take(view.header.model_sha256.size(), "model_sha256");
  std::copy(hash.begin(), hash.end(), view.header.model_sha256.begin());

  const uint32_t section_count = h.count("section_count", kMaxSections);
  uint64_t end = 16 + uint64_t{header_size} + 4;  // sections follow the header checksum, in order
  for (uint32_t i = 0; i < section_count; ++i) {
    const std::string field = "section " + std::to_string(i);
    BlobSection s;
    s.name = h.string(field + " name", kMaxString);
    s.device = h.string(field + " device", kMaxString);
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
    if (crc != crc32c(s.bytes)) fail(HETERO_BLOB_CORRUPT, "blob section '" + s.name + "' checksum does not match");
    end = offset + size;
    view.sections.push_back(std::move(s));
  }
  if (h.remaining() != 0) fail(HETERO_BLOB_CORRUPT, "blob header has " + std::to_string(h.remaining()) + " stray bytes");
  if (end != bytes.size())
    fail(HETERO_BLOB_CORRUPT, "blob has " + std::to_string(bytes.size() - end) + " bytes after its last section");
  return view;
}

}  // namespace hetero::core
