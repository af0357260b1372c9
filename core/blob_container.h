// The compiled-blob container: a header naming what the blob was compiled
// for, then the driver's own bytes, with a checksum. Import checks every field
// before trusting the payload.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hetero::core {

struct BlobHeader {
  uint32_t format_version = 0;
  std::string library_version;
  std::string driver;          // "CPU"
  std::string driver_version;
  std::string device;          // "CPU", "CPU.1"
};

inline constexpr uint32_t kBlobFormatVersion = 1;

std::vector<uint8_t> write_blob(const BlobHeader& header, std::span<const uint8_t> payload);

struct BlobView {
  BlobHeader header;
  std::span<const uint8_t> payload;  // points into the bytes given to read_blob
};

// Parses and checks a blob: magic, format version, lengths against the actual
// size, checksum. Fails with BLOB_CORRUPT or BLOB_MISMATCH saying which field.
BlobView read_blob(std::span<const uint8_t> bytes);

// CRC-32 (IEEE), for the container's checksums.
uint32_t crc32(std::span<const uint8_t> bytes, uint32_t seed = 0);

}  // namespace hetero::core
