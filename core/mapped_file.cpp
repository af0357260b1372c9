#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace hetero::core {

[[noreturn]] void fail_errno(int err, const std::string& what) {
  const hetero_status status = err == ENOENT || err == ENOTDIR ? HETERO_NOT_FOUND
                               : err == EACCES || err == EPERM ? HETERO_PERMISSION_DENIED
                                                               : HETERO_IO_ERROR;
  fail(status, what + ": " + std::strerror(err));
}

std::shared_ptr<const void> aligned_block(size_t size) {
  void* p = std::aligned_alloc(64, size == 0 ? 64 : (size + 63) / 64 * 64);
  if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) + " bytes");
  return std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
}

// Maps a whole file read-only. Read-only on purpose: initializers view these
// pages, and a kernel writing into a weight should fault, not corrupt it.
MappedBytes map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail_errno(err, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(HETERO_IO_ERROR, path + ": not a regular file");
  }
  MappedBytes b;
  b.size = static_cast<size_t>(st.st_size);
  if (b.size == 0) {
    ::close(fd);
    return b;
  }
  void* base = ::mmap(nullptr, b.size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (base != MAP_FAILED) {
    ::close(fd);
    const size_t size = b.size;
    b.owner = std::shared_ptr<const void>(base, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  } else {
    // Some file systems cannot map; read into memory instead.
    auto block = aligned_block(b.size);
    auto* dst = static_cast<uint8_t*>(const_cast<void*>(block.get()));
    for (size_t done = 0; done < b.size;) {
      const ssize_t n = ::read(fd, dst + done, b.size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        fail_errno(err, path);
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    b.owner = std::move(block);
  }
  b.data = static_cast<const uint8_t*>(b.owner.get());
  return b;
}

}  // namespace hetero::core
