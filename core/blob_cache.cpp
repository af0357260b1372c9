#include "core/blob_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <random>

#include "core/error.h"

namespace hetero::core {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffix = ".blob";

bool is_temporary(const std::string& name) { return name.size() > 4 && name.front() == '.' && name.ends_with(".tmp"); }

// Removes a writer's temporary file if the writer is gone: a writer holds
// an exclusive lock on its file from creating it until it is renamed into
// place, and the kernel drops the lock when the writer dies (kill -9, a
// power cut), in any process, container or PID namespace.
void remove_if_abandoned(const fs::path& temp) {
  const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(temp.c_str());
  ::close(fd);
}

void write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno(n < 0 ? errno : EIO, "cache entry " + path);
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

}  // namespace

BlobCache::BlobCache(BlobCacheOptions options) : options_(std::move(options)) {
  if (options_.dir.empty()) fail(HETERO_INVALID_ARGUMENT, "cache_dir is empty");
  if (::mkdir(options_.dir.c_str(), 0750) != 0 && errno != EEXIST) fail_errno(errno, "cache directory " + options_.dir);
  struct stat st;
  if (::stat(options_.dir.c_str(), &st) != 0) fail_errno(errno, "cache directory " + options_.dir);
  if (!S_ISDIR(st.st_mode)) fail(HETERO_INVALID_ARGUMENT, "cache directory " + options_.dir + " is not a directory");
  // What a killed writer left, and entries over a limit lowered since.
  evict();
}

std::string BlobCache::path_of(const Sha256Digest& key) const {
  return (fs::path(options_.dir) / (to_hex(key) + kSuffix)).string();
}

std::optional<MappedBytes> BlobCache::get(const Sha256Digest& key) const {
  const std::string path = path_of(key);
  try {
    MappedBytes bytes = map_file(path);
    // Recency for eviction: a hit makes the entry the newest.
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    return bytes;
  } catch (const Failure&) {
    return std::nullopt;  // absent, or unreadable: a miss either way
  }
}

void BlobCache::put(const Sha256Digest& key, std::span<const uint8_t> blob) const {
  const std::string path = path_of(key);
  // A name no other writer (process or thread) can have chosen.
  // (Appended piece by piece: GCC 12 warns, wrongly, on "." + std::string.)
  std::random_device rd;
  std::string name(1, '.');
  name.append(to_hex(key)).append(1, '.').append(std::to_string(::getpid()));
  name.append(1, '.').append(std::to_string(rd())).append(".tmp");
  const std::string temp = (fs::path(options_.dir) / name).string();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) fail_errno(errno, "cache entry " + temp);
  // Held until the file has its final name: a file of this kind whose lock
  // is free was left by a writer that died (remove_if_abandoned).
  ::flock(fd, LOCK_EX);
  try {
    ::fchmod(fd, 0640);  // whatever the umask says
    write_all(fd, blob, temp);
    if (::fsync(fd) != 0) fail_errno(errno, "cache entry " + temp);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail_errno(errno, "cache entry " + path);
  } catch (...) {
    ::unlink(temp.c_str());
    ::close(fd);
    throw;
  }
  ::close(fd);  // the data is on disk already (fsync)
  // The rename itself must survive a power cut.
  if (const int dir_fd = ::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  evict();
}

void BlobCache::remove(const Sha256Digest& key) const { ::unlink(path_of(key).c_str()); }

void BlobCache::evict() const {
  struct Entry {
    fs::path path;
    uint64_t size;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.dir, ec)) {
    std::error_code stat_ec;
    const std::string name = e.path().filename().string();
    const auto used = e.last_write_time(stat_ec);
    if (stat_ec || !e.is_regular_file(stat_ec)) continue;
    if (is_temporary(name)) {
      remove_if_abandoned(e.path());
      continue;
    }
    if (!name.ends_with(kSuffix)) continue;  // not ours: never touched
    const uint64_t size = e.file_size(stat_ec);
    if (stat_ec) continue;
    entries.push_back({e.path(), size, used});
    total += size;
  }
  if (total <= options_.max_bytes) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= options_.max_bytes) break;
    std::error_code rm_ec;
    if (fs::remove(e.path, rm_ec) || !fs::exists(e.path)) total -= e.size;  // or another process removed it
  }
}

}  // namespace hetero::core
