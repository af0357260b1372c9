// What the daemon benchmarks share: a model served by heterod, an infer
// request bound to a zero-filled input (in process or through a daemon),
// percentiles, and starting and stopping the real daemon.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hetero/hetero.h"
#include "tests/daemon/daemon_process.h"

namespace hetero::bench {

using Clock = std::chrono::steady_clock;
using test::DaemonProcess;
using test::TempDir;

struct Served {
  std::string name, path, shape_yaml;  // shape_yaml: "{x: [1, 4]}" or ""
  std::vector<int64_t> dims;
};

inline void require(hetero_status status, const char* what) {
  if (status != HETERO_OK) {
    std::fprintf(stderr, "bench: %s: %s\n", what, hetero_last_error());
    std::exit(1);
  }
}

// The models part of a config: each served with `parallel` infer requests.
inline std::string models_yaml(const std::vector<Served>& models, uint32_t parallel) {
  std::string c = "models:\n";
  for (const Served& m : models) {
    c += "  - name: " + m.name + "\n    path: " + m.path + "\n    parallel: " + std::to_string(parallel) +
         "\n    queue: 4096\n";
    if (!m.shape_yaml.empty()) c += "    shapes: " + m.shape_yaml + "\n";
  }
  return c;
}

// One request bound to a zero-filled input, in process or through a daemon.
struct Runner {
  hetero_compiled_model_t* compiled = nullptr;
  hetero_infer_request_t* request = nullptr;
  hetero_tensor_t* input = nullptr;

  Runner(hetero_compiled_model_t* c, const std::vector<int64_t>& dims) : compiled(c) {
    require(hetero_infer_request_create(&request, compiled), "infer request");
    hetero_dtype dtype{};
    hetero_compiled_model_get_input_dtype(compiled, &dtype, 0);
    require(hetero_tensor_create(&input, dtype, dims.data(), dims.size()), "input tensor");
    require(hetero_infer_request_set_input(request, 0, input), "set input");
  }
  ~Runner() {
    hetero_tensor_release(input);
    hetero_infer_request_release(request);
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  void infer() { require(hetero_infer_request_infer(request), "infer"); }
};

inline double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// `m` compiled in process for the CPU, its first input fixed to m.dims.
inline hetero_compiled_model_t* compile_local(hetero_core_t* core, const Served& m) {
  hetero_model_t* model = nullptr;
  require(hetero_model_read_file(&model, core, m.path.c_str(), nullptr, nullptr, nullptr, 0), m.path.c_str());
  const char* name = nullptr;
  hetero_model_get_input_name(model, &name, 0);
  const std::string input = name;
  hetero_model_release(model);
  const char* names[] = {input.c_str()};
  const int64_t* dims[] = {m.dims.data()};
  const size_t ranks[] = {m.dims.size()};
  hetero_compiled_model_t* compiled = nullptr;
  require(hetero_compile_file(&compiled, core, m.path.c_str(), names, dims, ranks, 1, "CPU", nullptr, nullptr, 0),
          "compile");
  return compiled;
}

inline hetero_compiled_model_t* open_served(hetero_core_t* core, const std::string& name) {
  hetero_compiled_model_t* compiled = nullptr;
  require(hetero_compiled_model_open(&compiled, core, name.c_str()), "open served model");
  return compiled;
}

inline std::unique_ptr<DaemonProcess> start_daemon(const TempDir& dir, const std::string& config,
                                                   const std::string& socket) {
  auto daemon = std::make_unique<DaemonProcess>(dir.path(), config);
  if (!daemon->wait_ready(socket, std::chrono::minutes(5))) {
    std::fprintf(stderr, "bench: heterod did not start:\n%s", daemon->log().c_str());
    std::exit(1);
  }
  return daemon;
}

inline void stop_daemon(DaemonProcess& daemon) {
  daemon.signal(SIGTERM);
  daemon.wait_exit();
}

// Where scripts/setup.sh --test-data put the real models.
inline std::string test_cache() {
  if (const char* c = std::getenv("HETERO_TEST_CACHE")) return c;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string base = xdg ? xdg : std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache";
  return base + "/heterod-test";
}

}  // namespace hetero::bench
