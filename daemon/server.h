// heterod's server: the libuv loop, the listening socket, the models it
// serves and the lifecycle around them (start-up, SIGHUP reload, SIGTERM
// drain). Everything here runs on the loop thread; compiling happens on the
// loader thread and inference on the drivers' threads.
#pragma once

#include <uv.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daemon/c_api.h"
#include "daemon/client_memory.h"
#include "daemon/config.h"
#include "daemon/connection.h"
#include "daemon/front_end.h"
#include "daemon/listener.h"
#include "daemon/loop_post.h"
#include "daemon/served_model.h"
#include "core/worker_thread.h"

namespace hetero::daemon {

class Server {
 public:
  explicit Server(Config config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts (socket, drivers, models, READY=1), serves until SIGTERM/SIGINT
  // and returns the exit status. Start-up failures throw Error.
  int run();

  // From connections (loop thread).
  void handle_frame(Connection& connection, wire::Frame frame);
  void connection_closed(Connection& connection);
  // A reply went out or a connection went idle: a shutdown may be complete.
  void connection_progress();
  // The budget for large frames being received, all connections together
  // (limits.max_frame_bytes_in_flight). A connection that holds `charged`
  // bytes of it asks for `bytes` instead: true, and charged = bytes, when
  // they fit beside the others'; false, and charged = 0, when not. Whatever
  // this frees lets connections waiting for the budget try again.
  bool charge_frame_bytes(size_t& charged, size_t bytes);
  // The replies queued for clients that have not read them, all connections
  // together (limits.max_reply_bytes_queued). Added to from any thread;
  // taken from on the loop thread only, where falling back under the budget
  // lets the connections it paused read again.
  void add_reply_bytes(size_t bytes) noexcept { reply_bytes_queued_ += bytes; }
  void take_reply_bytes(size_t bytes);
  bool reply_budget_spent() const noexcept {
    return reply_bytes_queued_.load(std::memory_order_relaxed) >= config_.limits.max_reply_bytes_queued;
  }
  // Gives the heap's free pages back to the system after something large
  // was freed, on the releaser thread: a trim of a big heap takes
  // milliseconds, which the loop thread would take from every client, and
  // there it runs after the models let go of before it are destroyed. Calls
  // while one is pending make one trim. (glibc's heap: where heterod
  // allocates with jemalloc, its background thread gives pages back,
  // daemon/allocator.cpp, and this trims a heap that holds next to nothing.)
  void trim_heap();
  // A copy of the connections, to go through while some of them close (and
  // leave connections_).
  std::vector<std::shared_ptr<Connection>> open_connections() const;

  // ---- The model registry, for the native requests and the other
  // protocols' front ends (daemon/kserve/). Loop thread only.
  struct ModelEntry {
    ModelSpec spec;
    bool from_config = false;
    wire::ModelInfo::State state = wire::ModelInfo::LOADING;
    std::string error;
    std::shared_ptr<ServedModel> model;  // null while loading or failed
    uint64_t load_ticket = 0;            // the client load under way, if any
  };
  const std::map<std::string, ModelEntry>& models() const noexcept { return models_; }
  const Config& config() const noexcept { return config_; }
  const std::shared_ptr<LoopPost>& loop_post() const noexcept { return post_; }
  bool stopping() const noexcept { return stopping_; }
  // Every model of the config ready and the daemon not stopping (Health's ok).
  bool healthy() const;
  // The model `name` when it serves; otherwise null, with NOT_FOUND (not
  // loaded, or failed) or BUSY (still loading) and why in `why`.
  std::shared_ptr<ServedModel> ready_model(const std::string& name, hetero_status& status, std::string& why) const;
  // Fills `info` for a model whatever its state.
  void describe(const ModelEntry& entry, wire::ModelInfo& info) const;
  // The real path of a model file a client names, when it is under one of
  // the config's model_dirs; otherwise NOT_FOUND or PERMISSION_DENIED, and
  // `why` says which.
  hetero_status check_model_path(const std::string& model, const std::string& path, std::string& real,
                                 std::string& why) const;
  // Loads spec.path (checked by the caller) on the loader thread; `done`
  // runs on the loop thread with HETERO_OK once the model serves, or an
  // error. A model already loaded goes on serving until its new version
  // replaces it (a failed load keeps it).
  using LoadDone = std::function<void(hetero_status status, const std::string& message)>;
  void load_model(const ModelSpec& spec, bool from_config, LoadDone done);
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
  // Unloads `name` if check_owner() lets `requester`; requests already
  // queued or running are answered CANCELLED. NOT_FOUND: not loaded.
  hetero_status unload_model(const std::string& name, int64_t requester, std::string& why);

 private:
  struct LoadResult {
    ModelSpec spec;
    std::shared_ptr<ServedModel> model;
    std::string error;                          // when model is null...
    hetero_status status = HETERO_INVALID_MODEL;  // ...and its kind
  };
  struct Waiter {
    std::weak_ptr<Connection> connection;
    uint64_t id;
  };

  // Start-up and lifecycle (server.cpp).
  void create_core();
  void load_configured_models();
  void start_loop_handles();
  // Closes every handle of the loop and runs it until their close callbacks
  // have run (teardown, and a start-up that failed half-way).
  void close_handles();
  void accept_clients();
  // The open connections of `uid` (0 for root and the daemon's user, whom
  // limits.max_connections_per_uid does not count).
  size_t connections_of(uid_t uid) const;
  int poll_listener();  // a libuv status
  void back_off_accepting(int error);
  // Every sweep interval: request deadlines and connection timeouts.
  void sweep();
  void begin_shutdown(const char* why);
  void start_reload(const Waiter* waiter);
  void apply_reload(Config next, std::vector<LoadResult> results, std::vector<std::string> removed);
  std::string status_line() const;
  // Loads the model at spec.path, or `bytes` uploaded when the path is
  // empty, and logs how it went, within spec.max_compile_ms. Runs on a
  // loader thread.
  LoadResult load(const ModelSpec& spec, std::span<const uint8_t> bytes = {}) const;

  // Requests (request_handlers.cpp).
  void reply(Connection& connection, wire::Response& response);
  void reply_error(Connection& connection, uint64_t id, hetero_status status, const std::string& message);
  void handle_hello(Connection& connection, const wire::Request& request);
  void handle_list_models(Connection& connection, const wire::Request& request);
  void handle_load(Connection& connection, std::unique_ptr<wire::Request> request, std::vector<wire::UniqueFd> fds);
  void handle_unload(Connection& connection, const wire::Request& request);
  void handle_cancel(Connection& connection, const wire::Request& request);
  void handle_infer(Connection& connection, std::unique_ptr<wire::Request> request, std::vector<wire::UniqueFd> fds);
  void handle_stats(Connection& connection, const wire::Request& request);
  void handle_health(Connection& connection, const wire::Request& request);
  void handle_reload(Connection& connection, const wire::Request& request);
  // Registers the load of spec.name and runs `compile` on a loader thread:
  // the client's own for a client's load (spec.client_uid), else loader_.
  void start_load(const ModelSpec& spec, bool from_config, std::function<LoadResult()> compile, LoadDone done);

  Config config_;
  uv_loop_t loop_{};
  std::unique_ptr<Listener> listener_;
  uv_poll_t listen_poll_{};
  uv_signal_t sighup_{}, sigterm_{}, sigint_{};
  uv_timer_t watchdog_timer_{}, sweep_timer_{}, grace_timer_{}, accept_timer_{};
  uint64_t accept_delay_ms_ = 0;  // while accept() fails for want of descriptors or memory
  uint64_t accept_failures_ = 0;  // since the last warning
  std::chrono::steady_clock::time_point last_accept_warning_{};
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<core::WorkerThread> releaser_;  // ServedModel::Threads, trim_heap
  CorePtr core_;
  wire::ListDevicesReply devices_;
  std::map<std::string, ModelEntry> models_;
  std::map<Connection*, std::shared_ptr<Connection>> connections_;
  uint64_t frame_bytes_in_flight_ = 0;  // charged by connections (charge_frame_bytes)
  std::atomic<uint64_t> reply_bytes_queued_ = 0;  // add_reply_bytes
  // trim_heap. Shared with the trim it posts: a model that outlives the
  // server keeps the releaser, and that trim, past the server's end.
  std::shared_ptr<std::atomic<bool>> trim_pending_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<core::WorkerThread> loader_;  // the config's models: start-up, reload, v2 loads
  // A client's LoadModel runs on a loader thread of its uid's, started with
  // its first load and ended after its last, so that a slow compile of one
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
  // Loop thread: a client's model, loaded, is charged to its owner.
  void charge_to_owner(ServedModel& model, const ModelSpec& spec);
  std::chrono::steady_clock::time_point started_;
  uint64_t load_tickets_ = 0;
  // The protocols served next to the native one (daemon/kserve/).
  std::vector<std::unique_ptr<FrontEnd>> front_ends_;

  bool stopping_ = false;
  bool reloading_ = false;
  bool reload_again_ = false;
  std::vector<Waiter> reload_waiters_;       // answered when this reload is done
  std::vector<Waiter> next_reload_waiters_;  // ... when the one after it is
};

}  // namespace hetero::daemon
