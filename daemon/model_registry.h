// The models heterod serves, whichever front end asks for them (the native
// protocol's handlers in request_handlers.cpp, the v2 listener in
// daemon/kserve/): each by name with its state, its owner (the config, or
// the client that loaded it), its loads on loader threads, and the memory a
// client's models hold together. It speaks no protocol: a front end turns
// what it answers into its own messages. Loop thread only, but for the
// compiles it runs on loader threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/worker_thread.h"
#include "daemon/client_memory.h"
#include "daemon/config.h"
#include "daemon/loop_post.h"
#include "daemon/sequences.h"
#include "daemon/served_model.h"
#include "hetero/hetero.h"

namespace hetero::daemon {

enum class ModelState { Loading, Ready, Failed };

struct ModelEntry {
  ModelSpec spec;
  bool from_config = false;
  ModelState state = ModelState::Loading;
  std::string error;
  std::shared_ptr<ServedModel> model;  // null while loading or failed
  uint64_t load_ticket = 0;            // the client load under way, if any
};

// What one compile gave: the model, or why not.
struct LoadResult {
  ModelSpec spec;
  std::shared_ptr<ServedModel> model;
  std::string error;                            // when model is null...
  hetero_status status = HETERO_INVALID_MODEL;  // ...and its kind
};

// What a reload did to the config's models.
struct ReloadCounts {
  uint32_t added = 0, changed = 0, removed = 0, failed = 0;
};

class ModelRegistry {
 public:
  // `config` is the daemon's, replaced in place by each reload; `core`
  // compiles the models; `trim_heap` gives what a load or an unload freed
  // back to the system (Server::trim_heap); `answered` is told when a front
  // end has answered a job, as a stopping daemon waits for the last.
  ModelRegistry(const Config& config, hetero_core_t* core, ServedModel::Threads threads,
                std::function<void()> trim_heap, std::function<void()> answered);
  ~ModelRegistry();
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  const Config& config() const noexcept { return config_; }
  const std::shared_ptr<LoopPost>& loop_post() const noexcept { return threads_.loop; }
  const std::map<std::string, ModelEntry>& models() const noexcept { return models_; }
  // A front end answered a job (loop thread).
  void answered() const { answered_(); }
  // The serving models, to run through (expire, cancel); null-free.
  std::vector<std::shared_ptr<ServedModel>> serving() const;

  // The sequences of stateful models, whichever front end's (daemon/sequences.h).
  SequenceTable& sequences() noexcept { return sequences_; }
  // Every sweep: idle sequences end, and those of a model replaced or
  // unloaded give back their state.
  void expire_sequences(Clock::time_point now);

  // Every model of the config ready and the daemon not stopping (health).
  bool healthy() const;
  // The daemon is stopping: healthy() is false from now on.
  void stopping() noexcept { stopping_ = true; }
  size_t count(ModelState state) const;

  // The model `name` when it serves; otherwise null, with NOT_FOUND (not
  // loaded, or failed) or BUSY (still loading) and why in `why`.
  std::shared_ptr<ServedModel> ready_model(const std::string& name, hetero_status& status, std::string& why) const;
  // The real path of a model file a client names, when it is under one of
  // the config's model_dirs; otherwise NOT_FOUND or PERMISSION_DENIED, and
  // `why` says which.
  hetero_status check_model_path(const std::string& model, const std::string& path, std::string& real,
                                 std::string& why) const;
  // OK when `requester` (a uid, or kOwnedByTcpClients) may unload or
  // replace the model: a client's model by the uid that loaded it or by an
  // admin (is_admin()); the config's by nobody, as only a reload unloads
  // it. Otherwise PERMISSION_DENIED, and `why` says whose it is.
  hetero_status check_owner(const ModelEntry& entry, int64_t requester, const std::string& action,
                            std::string& why) const;
  // A model a client loads, through either front end, under the limits of
  // a client's model: `spec` becomes the model of `client` (a uid, or
  // kOwnedByTcpClients), at most at limits.max_client_priority, with one
  // inference bounded by limits.max_client_inference_mb (CPU), compiled
  // within limits.max_compile_ms on the client's own loader. Refused (BUSY)
  // past the client's limits.max_models_per_client or
  // max_model_bytes_per_client (its file's size, or `upload_bytes`), and
  // (INVALID_ARGUMENT) for a bad priority or a policy; `why` says which.
  // A model of the same name the client replaces is not counted.
  hetero_status admit_client_model(ModelSpec& spec, int64_t client, uint64_t upload_bytes, std::string& why) const;

  // Compiles spec.path, or `bytes` uploaded when the path is empty, and logs
  // how it went, within spec.max_compile_ms. On a loader thread.
  LoadResult load(const ModelSpec& spec, std::span<const uint8_t> bytes = {}) const;
  // The config's models, one by one, at start-up.
  void load_configured_models();
  // Registers the load of spec.name and runs `compile` on a loader thread:
  // the client's own for a client's load (spec.client_uid), else the
  // config's. `done` runs on the loop thread with HETERO_OK once the model
  // serves, or an error. A model already loaded goes on serving until its
  // new version replaces it (a failed load keeps it).
  using LoadDone = std::function<void(hetero_status status, const std::string& message)>;
  void start_load(const ModelSpec& spec, bool from_config, std::function<LoadResult()> compile, LoadDone done);
  // start_load() of spec.path, checked by the caller.
  void load_model(const ModelSpec& spec, bool from_config, LoadDone done);
  // Unloads `name` if check_owner() lets `requester`; requests already
  // queued or running are answered CANCELLED. NOT_FOUND: not loaded.
  hetero_status unload_model(const std::string& name, int64_t requester, std::string& why);

  // SIGHUP: compiles, on the config's loader, the models `next` adds or
  // changes (or whose file changed), then on the loop thread puts them in
  // place, removes the config's models `next` no longer names, and calls
  // `done`. A model that fails to compile again serves on as it was.
  void reload(const Config& next, std::function<void(ReloadCounts)> done);

  // Teardown: every request answered CANCELLED, the loaders joined, the
  // running inferences waited for; then forget() drops the models.
  void stop_and_wait();
  void forget() { models_.clear(); }

 private:
  ReloadCounts apply_reload(std::vector<LoadResult> results, const std::vector<std::string>& removed);
  // A client's model, loaded, is charged to its owner.
  void charge_to_owner(ServedModel& model, const ModelSpec& spec);

  const Config& config_;
  hetero_core_t* core_;
  ServedModel::Threads threads_;
  std::function<void()> trim_heap_, answered_;
  bool stopping_ = false;
  std::map<std::string, ModelEntry> models_;
  SequenceTable sequences_;
  uint64_t load_tickets_ = 0;
  std::unique_ptr<core::WorkerThread> loader_;  // the config's models: reload, v2 loads
  // A client's load runs on a loader thread of its uid's, started with its
  // first load and ended after its last, so that a slow compile of one
  // client's upload delays that client's later loads only, not other
  // clients' nor a reload. (The uids are bounded by max_connections, the
  // loads of each by max_models_per_client.)
  struct ClientLoader {
    std::unique_ptr<core::WorkerThread> thread;
    uint32_t loads = 0;  // posted and not yet finished
  };
  std::map<int64_t, ClientLoader> client_loaders_;
  // What each client's models hold for their inferences, by owner (a uid,
  // or kOwnedByTcpClients); alive while a model of the client is.
  std::map<int64_t, std::weak_ptr<ClientMemory>> client_memory_;
};

}  // namespace hetero::daemon
