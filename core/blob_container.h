// The compiled-blob container (format in core/blob-format.md): a header that
// says what the blob was compiled from and for, then one section per device
// part, each with its own checksum. Reading checks every length against the
// bytes actually there before it trusts or allocates anything, and refuses a
// blob with an error naming the field at fault.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/sha256.h"

namespace hetero::core {

inline constexpr uint32_t kBlobFormatVersion = 2;

struct BlobHeader {
  uint32_t format_version = kBlobFormatVersion;
  std::string library_version;  // set by write_blob: this library's
  std::string driver;           // "CPU", "HETERO"
  std::string driver_version;
  std::string device;           // "CPU", "CPU.1", "HETERO:OPENCL,CPU"
  // The compile config the blob was made with, sorted by key.
  std::vector<std::pair<std::string, std::string>> config;
  Sha256Digest model_sha256{};  // the source model (core::Model::source_sha256)
};

struct BlobSection {
  std::string name;    // "driver"; for HETERO "plan", "part0", ...
  std::string device;  // the device whose driver reads it; "" for none
  std::span<const uint8_t> bytes;
};

struct BlobView {
  BlobHeader header;
  std::vector<BlobSection> sections;  // bytes view the blob given to read_blob
  // The section called `name`; fails with BLOB_CORRUPT when there is none.
  const BlobSection& section(const std::string& name) const;
};

// Whether `bytes` start with the blob magic: how a blob is told from an ONNX
// model (hetero_compiled_model_open_file), and the magic's only definition.
bool has_blob_magic(std::span<const uint8_t> bytes) noexcept;

// Sections start 64-byte aligned (from the start of the blob), so that a
// mapped blob's weights can be used in place.
std::vector<uint8_t> write_blob(const BlobHeader& header, std::span<const BlobSection> sections);

// Parses and checks a blob's structure: magic, format version, lengths and
// offsets against the actual size, header and section checksums. Fails with
// BLOB_CORRUPT or BLOB_MISMATCH naming the field. Whether the blob was made
// by this library, driver and device is the importer's to check
// (core::Runtime::import_blob), so that a foreign blob can still be described.
BlobView read_blob(std::span<const uint8_t> bytes);

// The header and section table in words, one "field: value" a line, for
// `hetero blob info`.
std::string describe_blob(const BlobView& view, size_t blob_size);
// The same as one JSON object: format_version, size, library_version,
// this_library, driver, driver_version, device, config [{key, value}],
// model_sha256, sections [{name, device, size}].
std::string describe_blob_json(const BlobView& view, size_t blob_size);

}  // namespace hetero::core
