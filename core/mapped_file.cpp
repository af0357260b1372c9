#include "core/mapped_file.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/regular_file.h"

namespace hetero::core {

namespace {
std::atomic<bool> map_files{true};
}  // namespace

void never_map_files() noexcept { map_files.store(false, std::memory_order_relaxed); }

std::shared_ptr<const void> aligned_block(size_t size) {
  void* p = std::aligned_alloc(64, size == 0 ? 64 : (size + 63) / 64 * 64);
  if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) + " bytes");
  return std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
}

// Maps a whole file read-only. Read-only on purpose: initializers view these
// pages, and a kernel writing into a weight should fault, not corrupt it.
MappedBytes map_file(const std::string& path) {
  // Opened as a regular file or refused (a FIFO would block, a device or a
  // directory cannot be mapped as a model): core/regular_file.h.
  const RegularFile file(path);
  MappedBytes b;
  b.size = static_cast<size_t>(file.size());
  if (b.size == 0) return b;
  void* base = map_files.load(std::memory_order_relaxed)
                   ? ::mmap(nullptr, b.size, PROT_READ, MAP_PRIVATE, file.fd(), 0)
                   : MAP_FAILED;
  if (base != MAP_FAILED) {
    const size_t size = b.size;
    b.owner = std::shared_ptr<const void>(base, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  } else {
    // Some file systems cannot map; read into memory instead.
    auto block = aligned_block(b.size);
    file.read_into(const_cast<void*>(block.get()), b.size);
    b.owner = std::move(block);
  }
  b.data = static_cast<const uint8_t*>(b.owner.get());
  return b;
}

}  // namespace hetero::core
