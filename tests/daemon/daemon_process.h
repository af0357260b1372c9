// The real heterod, started by a test on a temporary socket: a config file
// written for the test, the daemon spawned with it, and helpers to talk to
// it through the C ABI (hetero_core_connect) or byte by byte.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "hetero/hetero.h"

namespace hetero::test {

// A scratch directory removed (recursively) with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct SpawnOptions {
  // Descriptor to hand over as socket activation (LISTEN_FDS=1), or -1.
  int activation_fd = -1;
  // Extra environment entries ("NAME=value").
  std::vector<std::string> env;
  // Resource limits to start it under (setrlimit: resource, soft = hard).
  std::vector<std::pair<int, rlim_t>> rlimits;
};

class DaemonProcess {
 public:
  // Writes `config_yaml` to DIR/heterod.yaml and starts heterod with it.
  DaemonProcess(const std::string& dir, const std::string& config_yaml, SpawnOptions options = {});
  // SIGKILLs a daemon still running (a test that failed half-way).
  ~DaemonProcess();

  pid_t pid() const { return pid_; }
  const std::string& config_path() const { return config_path_; }
  // Waits until `socket` answers a Hello (or the daemon exits). False on timeout.
  bool wait_ready(const std::string& socket, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  void signal(int signum);
  // Waits for the daemon to exit; its exit status, or -1 on timeout (or a signal).
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  bool running();
  // What the daemon wrote to stderr so far.
  std::string log() const;
  // Rewrites the config (for a reload).
  void write_config(const std::string& config_yaml);
  // Open descriptors of the daemon (/proc/PID/fd).
  size_t fd_count() const;
  // Its resident memory in KiB (VmRSS), and the CPU time it has used (user
  // and system) in clock ticks; -1 once it has gone.
  long rss_kib() const;
  long cpu_ticks() const;

 private:
  std::string config_path_, log_path_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// Paths the build gives the tests.
std::string heterod_path();
std::string demo_model_path();
std::string fixture_dir();                          // where make_daemon_models wrote them
std::string fixture_path(const std::string& name);  // scale.onnx, slow.onnx

// hetero_core_connect that fails the current test (and returns null) on error.
hetero_core_t* connect_or_fail(const std::string& socket);

}  // namespace hetero::test
