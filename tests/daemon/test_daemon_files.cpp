// heterod given paths that are not what they should be: a FIFO, a directory
// or an empty file where a model, a policy or its own config should be (at
// start, through LoadModel, at SIGHUP), and `heterod --check` naming what the
// daemon would refuse. A FIFO that were opened to be read would block a
// thread for good, so each case also says that the answer came quickly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_client.h"
#include "tests/daemon/daemon_process.h"

namespace hetero::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::vector<int64_t> kDemoDims = {1, 3, 32, 32};

// The served models as the daemon lists them.
struct ModelRow {
  std::string name, state, error;
  bool operator==(const ModelRow&) const = default;
};

// What `heterod ARGS...` printed (stdout and stderr together) and its exit
// status; -1 when it had to be killed after 30 s.
struct RunResult {
  int status = -1;
  std::string output;
};

RunResult run_heterod(const std::vector<std::string>& args) {
  // Everything the child needs is made before fork(): it only execs.
  const std::string exe = heterod_path();
  std::vector<char*> argv = {const_cast<char*>(exe.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  RunResult result;
  const auto deadline = Clock::now() + 30s;
  for (;;) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    char buffer[4096];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class DaemonFiles : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directory(models_dir()); }

  std::string models_dir() const { return dir_.path() + "/models"; }

  // demo and scale, then `extra_models` ("  - name: ..." entries).
  std::string config(const std::string& extra_models = "") const {
    std::string c;
    c += "socket:\n  path: " + dir_.path() + "/heterod.sock\n";
    c += "cache_dir: " + dir_.path() + "/cache\n";
    c += "model_dirs: [" + models_dir() + "]\n";
    c += "models:\n";
    c += "  - name: demo\n    path: " + demo_model_path() + "\n    shapes: {image: [1, 3, 32, 32]}\n";
    c += "  - name: scale\n    path: " + fixture_path("scale.onnx") + "\n";
    return c + extra_models;
  }

  void start(const std::string& extra_models = "") {
    socket_ = dir_.path() + "/heterod.sock";
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), config(extra_models));
    ASSERT_TRUE(daemon_->wait_ready(socket_, 30s)) << daemon_->log();
  }

  void TearDown() override {
    if (!daemon_ || !daemon_->running()) return;
    daemon_->signal(SIGTERM);
    EXPECT_EQ(daemon_->wait_exit(), 0) << daemon_->log();
  }

  // Waits (polling) until the daemon's log holds `text` `times` times.
  bool log_has(const std::string& text, size_t times = 1, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const std::string log = daemon_->log();
      size_t found = 0;
      for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++found;
      if (found >= times) return true;
      if (Clock::now() >= deadline || !daemon_->running()) return false;
      std::this_thread::sleep_for(10ms);
    }
  }

  std::vector<ModelRow> models() {
    std::vector<ModelRow> rows;
    hetero_core_t* core = connect_or_fail(socket_);
    if (!core) return rows;
    hetero_model_list_t* list = nullptr;
    EXPECT_EQ(hetero_core_list_models(&list, core), HETERO_OK) << hetero_last_error();
    size_t count = 0;
    if (list) hetero_model_list_get_count(list, &count);
    for (size_t k = 0; k < count; ++k) {
      const char *name = nullptr, *state = nullptr, *error = nullptr;
      hetero_model_list_get(list, &name, nullptr, &state, &error, k);
      rows.push_back({name, state, error});
    }
    hetero_model_list_release(list);
    hetero_core_release(core);
    return rows;
  }

  const ModelRow* find(const std::vector<ModelRow>& rows, const std::string& name) {
    for (const ModelRow& r : rows)
      if (r.name == name) return &r;
    return nullptr;
  }

  // One demo inference through the daemon, on a fresh connection.
  bool demo_works() {
    std::vector<float> out;
    return infer_served(socket_, "demo", kDemoDims, seeded_input(3 * 32 * 32, 3), out) == HETERO_OK &&
           out.size() == 10;
  }

  TempDir dir_;
  std::string socket_;
  std::unique_ptr<DaemonProcess> daemon_;
};

// ---- Models and policies -------------------------------------------------------

TEST_F(DaemonFiles, LoadModelOfAFifoOrADirectoryIsRefusedAtOnce) {
  start();
  const std::string fifo = models_dir() + "/fifo.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = models_dir() + "/dir.onnx";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  hetero_core_t* core = connect_or_fail(socket_);
  ASSERT_TRUE(core);
  const auto start = Clock::now();
  EXPECT_NE(hetero_core_load_model(core, "fifo", fifo.c_str(), "CPU", nullptr, nullptr, 0), HETERO_OK);
  EXPECT_NE(std::string(hetero_last_error()).find(fifo + " is a FIFO, not a regular file"), std::string::npos)
      << hetero_last_error();
  EXPECT_NE(hetero_core_load_model(core, "dir", dir.c_str(), "CPU", nullptr, nullptr, 0), HETERO_OK);
  EXPECT_NE(std::string(hetero_last_error()).find(dir + " is a directory, not a regular file"), std::string::npos)
      << hetero_last_error();
  EXPECT_LT(Clock::now() - start, 5s);
  hetero_core_release(core);
  // Neither is listed; the loader and the loop are free: the daemon answers.
  const std::vector<ModelRow> rows = models();
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_FALSE(find(rows, "fifo"));
  EXPECT_TRUE(demo_works());
}

// At start the models load one by one on the main thread: a FIFO that were
// read would keep the daemon from ever answering.
TEST_F(DaemonFiles, FifoModelOrPolicyInTheConfigFailsOnlyThatModel) {
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  start("  - name: fifo-model\n    path: " + fifo + "\n" +
        "  - name: fifo-policy\n    path: " + demo_model_path() +
        "\n    device: HETERO:CPU.1,CPU\n    policy: " + fifo + "\n    shapes: {image: [1, 3, 32, 32]}\n");
  const std::vector<ModelRow> rows = models();
  ASSERT_EQ(rows.size(), 4u);
  for (const char* name : {"fifo-model", "fifo-policy"}) {
    const ModelRow* r = find(rows, name);
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->state, "failed") << name;
    EXPECT_NE(r->error.find(fifo + " is a FIFO, not a regular file"), std::string::npos) << name << ": " << r->error;
  }
  EXPECT_EQ(find(rows, "demo")->state, "ready");
  EXPECT_TRUE(demo_works());
}

// `cp new.onnx served.onnx` truncates the served file in place and writes
// it anew; an allowed user who can write to model_dirs can stop halfway on
// purpose. The daemon read the file when it loaded it, so the model serves
// on, with its answers, instead of the daemon dying of SIGBUS.
TEST_F(DaemonFiles, AModelTruncatedUnderTheDaemonServesOn) {
  const std::string served = models_dir() + "/truncated.onnx";
  std::filesystem::copy_file(demo_model_path(), served);
  start();
  hetero_core_t* core = connect_or_fail(socket_);
  ASSERT_TRUE(core);
  EXPECT_EQ(hetero_core_load_model(core, "truncated", served.c_str(), "CPU", nullptr, nullptr, 0), HETERO_OK)
      << hetero_last_error();
  hetero_core_release(core);
  ASSERT_EQ(::truncate(served.c_str(), 0), 0);
  std::ofstream(served, std::ios::binary) << "not all of it";
  std::vector<float> out;
  EXPECT_EQ(infer_served(socket_, "truncated", kDemoDims, seeded_input(3 * 32 * 32, 3), out), HETERO_OK);
  EXPECT_EQ(out.size(), 10u);
  EXPECT_TRUE(daemon_->running()) << daemon_->log();
  EXPECT_TRUE(demo_works());
}

// ---- The config at SIGHUP --------------------------------------------------------

// An empty file, a directory and a FIFO in the config's place: each reload
// fails with the reason in the log, and the daemon serves on with the models
// and settings it had.
TEST_F(DaemonFiles, SighupWithAnEmptyFileADirectoryOrAFifoKeepsTheRunningConfig) {
  start();
  const std::vector<ModelRow> before = models();
  ASSERT_EQ(before.size(), 2u);
  const std::string config = daemon_->config_path();
  const std::string kept = "; keeping the running config";

  daemon_->write_config("# everything commented out\n");
  daemon_->signal(SIGHUP);
  EXPECT_TRUE(log_has("reload: " + config + ": the file is empty")) << daemon_->log();
  EXPECT_TRUE(log_has(kept, 1)) << daemon_->log();
  EXPECT_EQ(models(), before);
  EXPECT_TRUE(demo_works());

  ASSERT_EQ(::rename(config.c_str(), (config + ".away").c_str()), 0);
  ASSERT_EQ(::mkdir(config.c_str(), 0700), 0);
  daemon_->signal(SIGHUP);
  EXPECT_TRUE(log_has("reload: " + config + " is a directory, not a regular file" + kept)) << daemon_->log();
  EXPECT_EQ(models(), before);
  EXPECT_TRUE(demo_works());

  ASSERT_EQ(::rmdir(config.c_str()), 0);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  daemon_->signal(SIGHUP);
  EXPECT_TRUE(log_has("reload: " + config + " is a FIFO, not a regular file" + kept)) << daemon_->log();
  EXPECT_EQ(models(), before);
  EXPECT_TRUE(demo_works());
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(daemon_->log().find("reloaded:"), std::string::npos) << daemon_->log();
}

// ---- The log level ----------------------------------------------------------------

TEST_F(DaemonFiles, TheLogLevelComesFromTheConfigAndItsReloads) {
  socket_ = dir_.path() + "/heterod.sock";
  daemon_ = std::make_unique<DaemonProcess>(dir_.path(), "log_level: warning\n" + config());
  ASSERT_TRUE(daemon_->wait_ready(socket_, 30s)) << daemon_->log();
  EXPECT_TRUE(demo_works());
  EXPECT_EQ(daemon_->log().find("heterod: info:"), std::string::npos) << daemon_->log();

  // At debug, each client's connection is logged with its credentials.
  daemon_->write_config("log_level: debug\n" + config());
  daemon_->signal(SIGHUP);
  ASSERT_TRUE(log_has("reloaded:")) << daemon_->log();
  EXPECT_TRUE(demo_works());
  EXPECT_TRUE(log_has(" connected")) << daemon_->log();
  EXPECT_TRUE(log_has(" disconnected")) << daemon_->log();

  std::ofstream(dir_.path() + "/loud.yaml") << "log_level: loud\n" + config();
  const RunResult bad = run_heterod({"--config", dir_.path() + "/loud.yaml", "--check"});
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_NE(bad.output.find("loud.yaml:1: 'log_level' must be debug, info, warning or error"), std::string::npos)
      << bad.output;
  const RunResult flag = run_heterod({"--config", dir_.path() + "/loud.yaml", "--log-level", "loud"});
  EXPECT_EQ(flag.status, 2) << flag.output;
  EXPECT_NE(flag.output.find("--log-level 'loud' must be debug, info, warning or error"), std::string::npos)
      << flag.output;
}

// ---- heterod --check ---------------------------------------------------------------

TEST_F(DaemonFiles, CheckFindsWhatAStartWouldFail) {
  const std::string path = dir_.path() + "/check.yaml";
  auto check = [&](const std::string& text) {
    std::ofstream(path) << text;
    return run_heterod({"--config", path, "--check"});
  };
  const RunResult good = check(config());
  EXPECT_EQ(good.status, 0) << good.output;
  EXPECT_NE(good.output.find(path + ": ok (2 models)"), std::string::npos) << good.output;

  // A cache_dir that is a regular file: --check says so, and the daemon
  // refuses to start with the same words.
  const std::string cache_file = dir_.path() + "/cache-file";
  std::ofstream(cache_file) << "not a directory";
  std::string bad_cache = config();
  bad_cache.replace(bad_cache.find(dir_.path() + "/cache\n"), dir_.path().size() + 7, cache_file + "\n");
  const RunResult cache = check(bad_cache);
  const std::string cache_message = path + ":3: cache_dir: " + cache_file + " is a regular file, not a directory";
  EXPECT_EQ(cache.status, 1) << cache.output;
  EXPECT_NE(cache.output.find(cache_message), std::string::npos) << cache.output;
  const RunResult started = run_heterod({"--config", path});
  EXPECT_EQ(started.status, 1) << started.output;
  EXPECT_NE(started.output.find(cache_message), std::string::npos) << started.output;

  const std::string gone = dir_.path() + "/gone.onnx";
  const RunResult missing = check(config("  - name: gone\n    path: " + gone + "\n"));
  EXPECT_EQ(missing.status, 1) << missing.output;
  EXPECT_NE(missing.output.find(path + ":11: model 'gone': " + gone + ": No such file or directory"), std::string::npos)
      << missing.output;

  // A compiled blob is checked as its import checks it: one flipped byte in
  // a section fails its checksum.
  hetero_core_t* local = nullptr;
  ASSERT_EQ(hetero_core_create(&local, nullptr, nullptr, 0), HETERO_OK) << hetero_last_error();
  hetero_compiled_model_t* compiled = nullptr;
  ASSERT_EQ(hetero_compiled_model_open_file(&compiled, local, fixture_path("scale.onnx").c_str(), nullptr, nullptr,
                                            nullptr, 0, "CPU", nullptr, nullptr, 0),
            HETERO_OK)
      << hetero_last_error();
  const std::string blob = dir_.path() + "/scale.blob";
  ASSERT_EQ(hetero_compiled_model_export_file(compiled, blob.c_str()), HETERO_OK) << hetero_last_error();
  hetero_compiled_model_release(compiled);
  hetero_core_release(local);
  const std::string with_blob = config("  - name: compiled\n    path: " + blob + "\n");
  const RunResult intact = check(with_blob);
  EXPECT_EQ(intact.status, 0) << intact.output;
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-8, std::ios::end);
    const char byte = static_cast<char>(f.get());
    f.seekp(-8, std::ios::end);
    f.put(static_cast<char>(byte ^ 0x5a));
  }
  const RunResult corrupt = check(with_blob);
  EXPECT_EQ(corrupt.status, 1) << corrupt.output;
  EXPECT_NE(corrupt.output.find(path + ":11: model 'compiled': " + blob + ": "), std::string::npos) << corrupt.output;
  EXPECT_NE(corrupt.output.find("checksum"), std::string::npos) << corrupt.output;

  // What a start resolves, --check resolves too (short of compiling): the
  // device, the inputs `shapes:` names, the driver's config keys.
  const RunResult unresolved = check(config(
      "  - name: on-gpu\n    path: " + fixture_path("scale.onnx") + "\n    device: GPU\n" +
      "  - name: typo\n    path: " + demo_model_path() + "\n    shapes: {imag: [1, 3, 32, 32]}\n" +
      "  - name: hetero-typo\n    path: " + fixture_path("scale.onnx") + "\n    device: HETERO:OPNECL,CPU\n" +
      "  - name: key\n    path: " + fixture_path("scale.onnx") + "\n    config: {num_thread: 2}\n"));
  EXPECT_EQ(unresolved.status, 1) << unresolved.output;
  for (const std::string& expected :
       {path + ":11: model 'on-gpu': device GPU: no GPU driver is loaded (devices: CPU",
        path + ":14: model 'typo': " + demo_model_path() + ": input shape given for 'imag', which is not an input",
        path + ":17: model 'hetero-typo': device OPNECL: no OPNECL driver is loaded",
        path + ":20: model 'key': the CPU driver has no config key 'num_thread'"})
    EXPECT_NE(unresolved.output.find(expected), std::string::npos) << expected << "\n" << unresolved.output;

  // An empty config is an error at start as at --check.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--config", path, "--check"},
                                               std::vector<std::string>{"--config", path}}) {
    std::ofstream(path) << "# nothing yet\n";
    const RunResult empty = run_heterod(args);
    EXPECT_EQ(empty.status, 1) << empty.output;
    EXPECT_NE(empty.output.find(path + ": the file is empty"), std::string::npos) << empty.output;
  }
}

}  // namespace
}  // namespace hetero::test
