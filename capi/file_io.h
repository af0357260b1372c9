// Whole-file reads and atomic writes for the C ABI's file functions (model
// blobs, tensor files), with errors that name the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hetero::capi {

// The bytes of `path`. NOT_FOUND, PERMISSION_DENIED or IO_ERROR naming it; a
// FIFO, a device or a directory is refused unread (core/regular_file.h).
std::vector<uint8_t> read_file_bytes(const std::string& path);

// Writes `bytes` to a temporary file next to `path` and renames it over
// `path`, so that readers see the old file or the complete new one, never a
// half-written one. IO_ERROR / PERMISSION_DENIED naming `path`.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace hetero::capi
