// Opening the files the project reads on someone's word: models, blobs,
// external weights, affinity policies, the daemon's config, PEM files,
// tensor files. Any of these paths may name something that is not a file: a
// FIFO, whose open() waits for a writer that never comes and freezes the
// thread (the daemon's loader, or its main loop at a reload); /dev/zero,
// which a whole-file read reads until memory runs out; a directory. Every
// such read goes through here, so that each of those fails at once with the
// path and what it is.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hetero::core {

// What a st_mode's file type is, for messages: "a directory", "a FIFO", "a
// character device", "a block device", "a socket", "a regular file".
const char* file_type_name(mode_t mode) noexcept;

// A regular file open for reading; the descriptor closes with the object.
class RegularFile {
 public:
  // Opens `path` with O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY and checks
  // with fstat that it is a regular file before anything reads it. Fails with
  // NOT_FOUND or PERMISSION_DENIED ("<path>: <strerror>"), or IO_ERROR, for
  // instance "<path> is a FIFO, not a regular file".
  explicit RegularFile(std::string path);
  ~RegularFile();
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }
  // Its size when it was opened.
  uint64_t size() const noexcept { return static_cast<uint64_t>(stat_.st_size); }
  const struct stat& stat() const noexcept { return stat_; }

  // Reads the first `size` bytes into `dst`; IO_ERROR naming the file when it
  // has fewer now (it shrank since it was opened) or a read fails.
  void read_into(void* dst, size_t size) const;

 private:
  std::string path_;
  int fd_ = -1;
  struct stat stat_ {};
};

// The whole of regular file `path`, read with RegularFile. A file larger than
// `max_bytes` is refused unread: INVALID_ARGUMENT "<path> is N bytes; <what>
// may be at most <max_bytes>" (`what`: "a policy", "a config file", ...). A
// file that grows while it is read is read as large as it was when opened.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace hetero::core
