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
// possible, or after never_map_files()). Fails with NOT_FOUND,
// PERMISSION_DENIED or IO_ERROR naming `path`; a FIFO, a device or a
// directory is refused at once, unread (core/regular_file.h).
MappedBytes map_file(const std::string& path);

// From now on map_file reads files into memory instead of mapping them. For
// a process that serves files others can write (heterod's model_dirs): a
// file truncated in place under a mapping (what `cp new.onnx served.onnx`
// does) faults the next read of a page past its new end with SIGBUS, which
// would kill the process. A copy cannot change under it; a file that shrinks
// while it is read is an IO_ERROR naming it. Call before reading any file.
void never_map_files() noexcept;

// A 64-byte aligned heap block of at least `size` bytes; OUT_OF_MEMORY if not.
std::shared_ptr<const void> aligned_block(size_t size);

}  // namespace hetero::core
