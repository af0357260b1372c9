#include "core/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "core/error.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace hetero::core {

namespace {

[[noreturn]] void fail_not_regular(const std::string& path, mode_t mode) {
  fail(HETERO_IO_ERROR, path + " is " + file_type_name(mode) + ", not a regular file");
}

// "16 MiB" for a round limit, else "N bytes".
std::string byte_count(uint64_t n) {
  constexpr uint64_t kMiB = uint64_t{1} << 20, kKiB = uint64_t{1} << 10;
  if (n >= kMiB && n % kMiB == 0) return std::to_string(n / kMiB) + " MiB";
  if (n >= kKiB && n % kKiB == 0) return std::to_string(n / kKiB) + " KiB";
  return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}

}  // namespace

const char* file_type_name(mode_t mode) noexcept {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

RegularFile::RegularFile(std::string path) : path_(std::move(path)) {
  // stat() first: a FIFO or a device is refused without being opened at
  // all, since opening some devices does something (a tape rewinds, a
  // watchdog arms). The fstat() below still decides, as the path may be
  // swapped between the two calls.
  struct stat before {};
  if (::stat(path_.c_str(), &before) != 0) fail_errno(errno, path_);
  if (!S_ISREG(before.st_mode)) fail_not_regular(path_, before.st_mode);
  // O_NONBLOCK: were it a FIFO after all, open() returns at once instead of
  // waiting for a writer (reads of a regular file ignore the flag).
  // O_NOCTTY: a terminal never becomes the daemon's controlling terminal.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) fail_errno(errno, path_);
  if (::fstat(fd_, &stat_) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail_errno(err, path_);
  }
  if (!S_ISREG(stat_.st_mode)) {
    const mode_t mode = stat_.st_mode;
    ::close(fd_);
    fd_ = -1;
    fail_not_regular(path_, mode);
  }
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), stat_(other.stat_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    stat_ = other.stat_;
  }
  return *this;
}

void RegularFile::read_into(void* dst, size_t size) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(errno, path_);
    if (n == 0) fail(HETERO_IO_ERROR, path_ + ": the file shrank while it was being read");
    done += static_cast<size_t>(n);
  }
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const RegularFile file(path);
  if (file.size() > max_bytes)
    fail(HETERO_INVALID_ARGUMENT, path + " is " + byte_count(file.size()) + "; " + what + " may be at most " +
                                      byte_count(max_bytes));
  std::string bytes(static_cast<size_t>(file.size()), '\0');
  file.read_into(bytes.data(), bytes.size());
  return bytes;
}

}  // namespace hetero::core
