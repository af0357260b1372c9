// What the C ABI's handles stand on. The hetero_* functions (api_*.cpp) only
// check arguments, translate errors and manage handles; the work is done by a
// Backend. There are two: in-process (local_backend.cpp, on core::Runtime) and
// a client of the daemon (remote/remote_backend.cpp, hetero_core_connect), so
// no api_*.cpp file may reach past these interfaces into core::Runtime or a
// driver.
//
// Tensors are not behind this interface: they always live in the caller's
// process (a remote backend copies or passes them as memfds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "hetero/hetero.h"
#include "hetero/hetero.hpp"

namespace hetero::core {
class Model;
}

namespace hetero::capi {

using Config = std::map<std::string, std::string>;

// A model or compiled model input/output is reported as the public C++
// header's hetero::Port (include/hetero/hetero.hpp): no shape when even the
// rank is unknown, -1 for a dynamic dim. The C getters lend out its strings
// and dims.
using Port = hetero::Port;

struct QueryNode {
  std::string name;
  std::string op_type;
  bool supported = false;
  std::string reason;
};

// What a core lists (hetero_core_list_*), as the public C++ header has it.
using DeviceEntry = hetero::Device;
using DriverEntry = hetero::DriverInfo;
using DriverFailureEntry = hetero::DriverFailure;
using ServedModelEntry = hetero::ServedModel;  // a model a daemon serves

// Counters and latencies of one served model (hetero_core_get_stats).
struct ModelStatsEntry {
  std::string name;
  uint64_t requests = 0, errors = 0, busy = 0, timeouts = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0;
  uint32_t queue_depth = 0, in_flight = 0;
};

struct StatsSnapshot {
  std::vector<ModelStatsEntry> models;
  uint64_t uptime_ms = 0;
  uint32_t connections = 0;
};

class InferRequestImpl {
 public:
  virtual ~InferRequestImpl() = default;
  virtual void set_input(size_t index, const core::Tensor& tensor) = 0;
  // The tensor plus whatever must stay alive for its memory to stay valid
  // (for a local backend, the driver module whose deleter frees it).
  virtual core::Tensor output(size_t index, std::shared_ptr<const void>& keepalive) = 0;
  virtual void infer() = 0;
  // `done` runs once, on another thread, with null or the failure.
  virtual void start_async(std::function<void(std::exception_ptr)> done) = 0;
  // Until the last inference and its `done` have ended; its failure, if any.
  // Both kinds keep the rules of core/request_state.h.
  virtual std::exception_ptr wait() = 0;
  // Asks the running inference to stop (hetero_infer_request_cancel).
  virtual void cancel() = 0;
  // hetero_infer_request_release_memory().
  virtual void release_memory() = 0;
  // hetero_infer_request_set_sequence(): the next call's sequence (0: none)
  // and flags. A daemon keeps a sequence's state for its clients, the
  // compiled model in process (capi/local_sequences.h).
  virtual void set_sequence(uint64_t id, uint32_t flags) = 0;
};

class CompiledModelImpl {
 public:
  virtual ~CompiledModelImpl() = default;
  virtual const std::vector<Port>& inputs() const = 0;
  virtual const std::vector<Port>& outputs() const = 0;
  virtual const std::string& device() const = 0;
  // One device per submodel, in execution order (one for a plain device).
  virtual const std::vector<std::string>& submodel_devices() const = 0;
  // A complete blob (container header included).
  virtual std::vector<uint8_t> export_blob() const = 0;
  virtual std::unique_ptr<InferRequestImpl> create_infer_request() = 0;
  // Its state pairs (output, input): a daemon's for its model, or found by
  // their names in process.
  virtual const std::vector<std::pair<std::string, std::string>>& state_pairs() const = 0;
  // Whether a daemon's config gives input `index` a value.
  virtual bool input_given(size_t) const { return false; }
  // hetero_compiled_model_end_sequence().
  virtual void end_sequence(uint64_t id) = 0;
  // Imported from the core's blob cache rather than compiled.
  bool from_cache = false;
};

class ModelImpl {
 public:
  virtual ~ModelImpl() = default;
  virtual const std::vector<Port>& inputs() const = 0;
  virtual const std::vector<Port>& outputs() const = 0;
  // hetero_model_describe_json()'s document.
  virtual std::string describe_json() const = 0;
  // The core's model, for a model read in process; null for one a daemon
  // read (it lives there, and only its own backend compiles it).
  virtual const core::Model* core_model() const { return nullptr; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // hetero_core_set_progress(): the callback of later reads, compiles,
  // imports and plans (empty: none). Only the in-process backend reports;
  // a daemon compiles its models itself, so the default drops it.
  using ProgressFn = std::function<void(const char* stage, uint64_t done, uint64_t total)>;
  virtual void set_progress(ProgressFn) {}

  // Fixed for the backend's life, so the C ABI can lend out their strings.
  virtual const std::vector<DeviceEntry>& devices() const = 0;
  virtual const std::vector<DriverEntry>& drivers() const = 0;
  virtual const std::vector<DriverFailureEntry>& driver_failures() const = 0;
  virtual std::string metric(const std::string& device, const std::string& name) const = 0;

  using InputShapes = std::map<std::string, core::Shape>;
  virtual std::unique_ptr<ModelImpl> read_model_file(const std::string& path, const InputShapes& shapes) = 0;
  virtual std::unique_ptr<ModelImpl> read_model_memory(std::span<const uint8_t> bytes, const InputShapes& shapes) = 0;
  // `model` comes from this backend's kind; another kind fails with INVALID_ARGUMENT.
  virtual std::vector<QueryNode> query(const ModelImpl& model, const std::string& device,
                                       const Config& config) const = 0;
  virtual std::unique_ptr<CompiledModelImpl> compile(const ModelImpl& model, const std::string& device,
                                                     const Config& config) = 0;
  virtual std::unique_ptr<CompiledModelImpl> import_blob(std::span<const uint8_t> blob, const Config& config) = 0;
  // hetero_compile_file(): read_model_file() then compile(), except that a
  // valid cached blob is imported without reading the model.
  virtual std::unique_ptr<CompiledModelImpl> compile_file(const std::string& path, const InputShapes& shapes,
                                                          const std::string& device, const Config& config) = 0;
  // hetero_partition(): the HETERO plan of `model` in `format`.
  virtual std::string partition(const ModelImpl& model, const std::string& device, hetero_plan_format format,
                                const Config& config) = 0;

  // Models served by a daemon (API 0.3). Only a daemon connection serves
  // models; the defaults say so.
  virtual std::vector<ServedModelEntry> list_models() { no_daemon(); }
  virtual std::unique_ptr<CompiledModelImpl> open_model(const std::string&) { no_daemon(); }
  // From a path the daemon reads, or from `bytes` when `path` is empty.
  virtual void load_model(const std::string&, const std::string&, std::span<const uint8_t>, const std::string&,
                          const Config&) {
    no_daemon();
  }
  virtual void unload_model(const std::string&) { no_daemon(); }
  virtual StatsSnapshot stats() { no_daemon(); }
  virtual void reload() { no_daemon(); }

 private:
  [[noreturn]] static void no_daemon() {
    throw Failure(HETERO_NOT_SUPPORTED, "served models need a daemon connection (hetero_core_connect)");
  }
};

// The in-process backend. `options` are the hetero_core_create() pairs.
std::shared_ptr<Backend> make_local_backend(const Config& options);
// A client of the daemon listening on `socket_path` (hetero_core_connect).
std::shared_ptr<Backend> make_remote_backend(const std::string& socket_path);

}  // namespace hetero::capi
