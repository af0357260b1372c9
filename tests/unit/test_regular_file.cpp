// core/regular_file.h: a path that names a FIFO, a device or a directory is
// refused at once, naming it and what it is, before anything is read; a
// bounded whole-file read refuses a file over its limit unread.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/regular_file.h"

namespace hetero::core {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("regular-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  // The error `call` fails with: its status and message. Run on another
  // thread and given 5 s: a call that blocks on a FIFO fails the test (the
  // FIFO is then opened for writing, which lets it go) rather than hang it.
  std::pair<hetero_status, std::string> error_of(const std::function<void()>& call, const std::string& fifo = {}) {
    auto result = std::async(std::launch::async, [&]() -> std::pair<hetero_status, std::string> {
      try {
        call();
      } catch (const Failure& e) {
        return {e.status(), e.what()};
      }
      return {HETERO_OK, "(no error)"};
    });
    if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << "still blocked after 5 s";
      if (!fifo.empty()) {
        const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (w >= 0) ::close(w);
      }
    }
    return result.get();
  }

  fs::path dir_;
};

TEST_F(RegularFileTest, ReadsARegularFile) {
  const std::string p = write("policy.yaml", "devices: [CPU]\n");
  const RegularFile file(p);
  EXPECT_EQ(file.size(), 15u);
  EXPECT_EQ(file.path(), p);
  EXPECT_EQ(read_regular_file(p, 1 << 20, "a policy file"), "devices: [CPU]\n");
  // Exactly at the limit is allowed; an empty file is read as empty.
  EXPECT_EQ(read_regular_file(p, 15, "a policy file").size(), 15u);
  EXPECT_EQ(read_regular_file(write("empty", ""), 15, "a policy file"), "");
  const MappedBytes mapped = map_file(p);
  ASSERT_EQ(mapped.size, 15u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(mapped.data), mapped.size), "devices: [CPU]\n");
}

TEST_F(RegularFileTest, FifoIsRefusedWithoutBlocking) {
  const std::string fifo = path("model.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const auto start = std::chrono::steady_clock::now();
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { RegularFile f(fifo); },
           [&] { read_regular_file(fifo, 1 << 20, "a config file"); },
           [&] { map_file(fifo); },
       }) {
    const auto [status, message] = error_of(call, fifo);
    EXPECT_EQ(status, HETERO_IO_ERROR) << message;
    EXPECT_EQ(message, fifo + " is a FIFO, not a regular file");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(RegularFileTest, DirectoryIsRefused) {
  const auto [status, message] = error_of([&] { read_regular_file(dir_.string(), 1 << 20, "a config file"); });
  EXPECT_EQ(status, HETERO_IO_ERROR) << message;
  EXPECT_EQ(message, dir_.string() + " is a directory, not a regular file");
  EXPECT_EQ(error_of([&] { map_file(dir_.string()); }).second, message);
}

TEST_F(RegularFileTest, DevZeroIsRefusedUnread) {
  // Read whole, /dev/zero would never end.
  const auto [status, message] = error_of([&] { read_regular_file("/dev/zero", 1 << 20, "a policy file"); });
  EXPECT_EQ(status, HETERO_IO_ERROR) << message;
  EXPECT_EQ(message, "/dev/zero is a character device, not a regular file");
  EXPECT_EQ(error_of([&] { map_file("/dev/zero"); }).second, message);
}

TEST_F(RegularFileTest, OversizeFileIsRefusedForTheBoundedRead) {
  const std::string p = write("big.yaml", std::string(1025, '#'));
  const auto [status, message] = error_of([&] { read_regular_file(p, 1024, "a config file"); });
  EXPECT_EQ(status, HETERO_INVALID_ARGUMENT) << message;
  EXPECT_EQ(message, p + " is 1025 bytes; a config file may be at most 1 KiB");
  // Opening it is fine: only the bounded read has a limit.
  EXPECT_EQ(RegularFile(p).size(), 1025u);
}

TEST_F(RegularFileTest, MissingAndUnreadableFilesKeepTheirStatus) {
  const auto [status, message] = error_of([&] { RegularFile f(path("missing.onnx")); });
  EXPECT_EQ(status, HETERO_NOT_FOUND) << message;
  EXPECT_EQ(message.rfind(path("missing.onnx") + ": ", 0), 0u) << message;
  // Under a regular file: ENOTDIR, also "not found".
  const std::string file = write("file", "x");
  EXPECT_EQ(error_of([&] { RegularFile f(file + "/child"); }).first, HETERO_NOT_FOUND);
}

TEST(FileTypeName, NamesEachKind) {
  EXPECT_STREQ(file_type_name(S_IFREG | 0644), "a regular file");
  EXPECT_STREQ(file_type_name(S_IFDIR | 0755), "a directory");
  EXPECT_STREQ(file_type_name(S_IFIFO | 0600), "a FIFO");
  EXPECT_STREQ(file_type_name(S_IFCHR | 0666), "a character device");
  EXPECT_STREQ(file_type_name(S_IFBLK | 0660), "a block device");
  EXPECT_STREQ(file_type_name(S_IFSOCK | 0777), "a socket");
}

}  // namespace
}  // namespace hetero::core
