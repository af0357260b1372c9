#include "tests/daemon/daemon_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace hetero::test {

TempDir::TempDir() {
  char pattern[] = "/tmp/heterod-test-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  path_ = made ? made : "";
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string heterod_path() { return HETEROD_PATH; }
std::string demo_model_path() { return DEMO_MODEL_PATH; }
std::string fixture_dir() { return DAEMON_FIXTURE_DIR; }
std::string fixture_path(const std::string& name) { return fixture_dir() + "/" + name; }

DaemonProcess::DaemonProcess(const std::string& dir, const std::string& config_yaml, SpawnOptions options)
    : config_path_(dir + "/heterod.yaml"), log_path_(dir + "/heterod.log") {
  write_config(config_yaml);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) ::dup2(log, STDERR_FILENO);
    if (options.activation_fd >= 0) {
      if (options.activation_fd != 3) ::dup2(options.activation_fd, 3);
      ::fcntl(3, F_SETFD, 0);
      ::setenv("LISTEN_FDS", "1", 1);
      ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    } else {
      ::unsetenv("LISTEN_FDS");
    }
    ::unsetenv("NOTIFY_SOCKET");
    for (const std::string& e : options.env) ::putenv(const_cast<char*>(e.c_str()));
    for (const auto& [resource, limit] : options.rlimits) {
      const rlimit both{limit, limit};
      if (::setrlimit(resource, &both) != 0) ::_exit(126);
    }
    const std::string exe = heterod_path();
    ::execl(exe.c_str(), exe.c_str(), "--config", config_path_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
}

DaemonProcess::~DaemonProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(10));
  }
}

void DaemonProcess::write_config(const std::string& config_yaml) {
  const std::string tmp = config_path_ + ".tmp";
  std::ofstream(tmp) << config_yaml;
  std::filesystem::rename(tmp, config_path_);
}

bool DaemonProcess::running() {
  if (status_ != -1 || pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = status;
    return false;
  }
  return true;
}

bool DaemonProcess::wait_ready(const std::string& socket, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return false;
    hetero_core_t* core = nullptr;
    if (hetero_core_connect(&core, socket.c_str()) == HETERO_OK) {
      hetero_core_release(core);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void DaemonProcess::signal(int signum) { ::kill(pid_, signum); }

int DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

std::string DaemonProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t DaemonProcess::fd_count() const {
  size_t n = 0;
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (!dir) return 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

long DaemonProcess::rss_kib() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

long DaemonProcess::cpu_ticks() const {
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return -1;
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  long utime = 0, stime = 0;
  for (int k = 3; fields >> field; ++k) {
    if (k == 14) utime = std::stol(field);
    if (k == 15) {
      stime = std::stol(field);
      break;
    }
  }
  return utime + stime;
}

hetero_core_t* connect_or_fail(const std::string& socket) {
  hetero_core_t* core = nullptr;
  const hetero_status status = hetero_core_connect(&core, socket.c_str());
  EXPECT_EQ(status, HETERO_OK) << hetero_last_error();
  return status == HETERO_OK ? core : nullptr;
}

}  // namespace hetero::test
