// Read-only views of whole files (model files, external weight files), kept
// alive by a shared owner so that tensors can point into them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hetero::core {

// `owner.get()` is the first byte, so an owner compares equal to the mapping it
// came from (Model::mappings, Tensor::owner()). Empty files have no owner.
struct MappedBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

// Maps a regular file read-only (reads it into memory where mapping is not
// possible). Fails with NOT_FOUND, PERMISSION_DENIED or IO_ERROR naming `path`;
// a FIFO, a device or a directory is refused at once, unread
// (core/regular_file.h).
MappedBytes map_file(const std::string& path);

// A 64-byte aligned heap block of at least `size` bytes; OUT_OF_MEMORY if not.
std::shared_ptr<const void> aligned_block(size_t size);

// Fails with the status that fits errno value `err`, message "<what>: <strerror>".
[[noreturn]] void fail_errno(int err, const std::string& what);

}  // namespace hetero::core
