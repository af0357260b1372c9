// The blob cache directory: least-recently-used eviction under the size
// limit, and no torn entry when a writer is killed mid-write.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "core/blob_cache.h"
#include "core/blob_container.h"

using namespace hetero::core;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("blob-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

Sha256Digest key(int i) { return sha256({reinterpret_cast<const uint8_t*>(&i), sizeof i}); }

// A valid blob of about `size` bytes.
std::vector<uint8_t> blob_of(size_t size, uint8_t fill) {
  BlobHeader h;
  h.driver = "CPU";
  h.device = "CPU";
  const std::vector<uint8_t> payload(size, fill);
  const BlobSection section{"driver", "CPU", payload};
  return write_blob(h, {&section, 1});
}

uint64_t dir_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".blob") total += e.file_size();
  return total;
}

TEST(BlobCache, EvictsLeastRecentlyUsedUnderTheLimit) {
  const std::string dir = fresh_dir("lru");
  BlobCache cache({dir, 3 * 4096 + 2048});  // room for three 4 KiB entries
  for (int i = 0; i < 3; ++i) {
    cache.put(key(i), blob_of(4000, uint8_t(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(cache.get(key(0)));  // entry 0 is now the most recently used
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.put(key(3), blob_of(4000, 3));
  EXPECT_LE(dir_bytes(dir), 3u * 4096 + 2048);
  EXPECT_TRUE(cache.get(key(0)));
  EXPECT_FALSE(cache.get(key(1))) << "the least recently used entry should have gone";
  EXPECT_TRUE(cache.get(key(3)));
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  EXPECT_EQ(fs::status(cache.path_of(key(3))).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::remove_all(dir);
}

// A writer killed at a random moment of writing 16 MiB entries leaves whole
// entries or none: every *.blob file in the directory reads as valid.
TEST(BlobCache, KilledWriterLeavesNoTornEntry) {
  const std::string dir = fresh_dir("kill");
  std::mt19937 rng(7);
  for (int round = 0; round < 4; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      BlobCache cache({dir, uint64_t{1} << 30});
      const std::vector<uint8_t> big = blob_of(16 << 20, 0x5a);
      for (int i = 0;; ++i) cache.put(key(round * 1000 + i), big);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  size_t entries = 0, temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    temporaries += e.path().extension() == ".tmp";
    if (e.path().extension() != ".blob") continue;  // a dead writer's temporary file is no entry
    ++entries;
    const MappedBytes bytes = map_file(e.path().string());
    EXPECT_NO_THROW(read_blob({bytes.data, bytes.size})) << e.path();
  }
  std::printf("[ info ] %zu whole entries and %zu temporary files after 4 killed writers\n", entries, temporaries);
  // The next start (a cache opened on the directory) removes what the dead
  // writers left; a live writer's file stays.
  const std::string live = dir + "/.live.tmp";
  const int fd = ::open(live.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0640);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  BlobCache reopened({dir, uint64_t{1} << 30});
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tmp") left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{".live.tmp"});
  ::close(fd);
  fs::remove_all(dir);
}

}  // namespace
