#include "capi/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/regular_file.h"

namespace hetero::capi {

namespace {

// Closes a descriptor on every path out of a function.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  // A regular file or an error naming what it is: a FIFO would block the
  // caller, a device would be read without end (core/regular_file.h). As
  // large as the file was when it was opened, so that one that grows while
  // it is read cannot outgrow the buffer.
  const core::RegularFile file(path);
  std::vector<uint8_t> bytes(static_cast<size_t>(file.size()));
  file.read_into(bytes.data(), bytes.size());
  return bytes;
}

void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  // A name unique to this process and call; O_EXCL refuses anything already
  // there. open() (not mkstemp) so that the file gets the umask's mode.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  Fd f;
  for (int attempt = 0; f.fd < 0; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f.fd < 0 && (errno != EEXIST || attempt > 100))
      fail_errno(errno, path + ": cannot create a temporary file next to it");
  }
  // From here on the temporary file is removed on every failure.
  auto fail_and_unlink = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_errno(err, what);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_and_unlink(path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(f.fd) != 0) fail_and_unlink(path);
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) fail_and_unlink(path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_and_unlink(path);
}

}  // namespace hetero::capi
