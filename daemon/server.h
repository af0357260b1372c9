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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/c_api.h"
#include "daemon/config.h"
#include "daemon/connection.h"
#include "daemon/front_end.h"
#include "daemon/listener.h"
#include "daemon/loop_post.h"
#include "daemon/model_registry.h"
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
  // and returns the exit status. Start-up failures throw Failure.
  int run();

  // From connections (loop thread).
  void handle_frame(Connection& connection, wire::Frame frame);
  // Measures `payload`, all or the first bytes of a frame's payload of
  // `payload_length`, against what a request may parse into; one past it
  // (a frame crafted to grow) ends the connection with OUT_OF_MEMORY: true.
  bool refuse_if_it_grows(Connection& connection, std::span<const uint8_t> payload, size_t payload_length);
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
  // while one is pending make one trim. With jemalloc (daemon/allocator.cpp)
  // a trim purges every arena's free pages at once, which its background
  // thread would otherwise return over five seconds.
  void trim_heap();
  // A copy of the connections, to go through while some of them close (and
  // leave connections_).
  std::vector<std::shared_ptr<Connection>> open_connections() const;

  const Config& config() const noexcept { return config_; }
  // The models served, for the native requests and the other protocols'
  // front ends (daemon/kserve/). Loop thread only; made by run().
  ModelRegistry& registry() noexcept { return *registry_; }

 private:
  struct Waiter {
    std::weak_ptr<Connection> connection;
    uint64_t id;
  };

  // Start-up and lifecycle (server.cpp).
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
  // The deadline timer: fires at the soonest deadline of a job, where the
  // sweep alone would keep it to within its interval (up to 100 ms late).
  void keep_deadline(Clock::time_point when);
  void on_deadline();
  void begin_shutdown(const char* why);
  void start_reload(const Waiter* waiter);
  void finish_reload(Config next, ReloadCounts counts);
  std::string status_line() const;

  // Requests (request_handlers.cpp).
  void reply(Connection& connection, wire::Response& response);
  void reply_error(Connection& connection, uint64_t id, hetero_status status, const std::string& message);
  void handle_hello(Connection& connection, const wire::Request& request);
  // ListDevices: answered from devices_, or once the listing is made.
  void list_devices_for(Connection& connection, uint64_t id);
  void handle_list_models(Connection& connection, const wire::Request& request);
  void handle_load(Connection& connection, std::unique_ptr<wire::Request> request, std::vector<wire::UniqueFd> fds);
  void handle_unload(Connection& connection, const wire::Request& request);
  void handle_cancel(Connection& connection, const wire::Request& request);
  void handle_end_sequence(Connection& connection, const wire::Request& request);
  void handle_infer(Connection& connection, std::unique_ptr<wire::Request> request, std::vector<wire::UniqueFd> fds);
  void handle_stats(Connection& connection, const wire::Request& request);
  void handle_health(Connection& connection, const wire::Request& request);
  void handle_reload(Connection& connection, const wire::Request& request);
  // A model's row of ListModels, whatever its state.
  void describe(const ModelEntry& entry, wire::ModelInfo& info) const;

  Config config_;
  uv_loop_t loop_{};
  std::unique_ptr<Listener> listener_;
  uv_poll_t listen_poll_{};
  uv_signal_t sighup_{}, sigterm_{}, sigint_{};
  uv_timer_t watchdog_timer_{}, sweep_timer_{}, grace_timer_{}, accept_timer_{}, deadline_timer_{};
  Clock::time_point deadline_due_ = Clock::time_point::max();  // when deadline_timer_ fires
  uint64_t accept_delay_ms_ = 0;  // while accept() fails for want of descriptors or memory
  uint64_t accept_failures_ = 0;  // since the last warning
  std::chrono::steady_clock::time_point last_accept_warning_{};
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<core::WorkerThread> releaser_;  // ServedModel::Threads, trim_heap
  CorePtr core_;
  // The ListDevices reply: every driver, driver failure and device with its
  // metrics, listed (and logged) when a client first asks, not at start,
  // since listing starts every driver's runtime (list_devices_for).
  std::optional<wire::ListDevicesReply> devices_;
  std::vector<Waiter> device_waiters_;  // asked while the listing is made; none: not listing
  std::map<Connection*, std::shared_ptr<Connection>> connections_;
  uint64_t frame_bytes_in_flight_ = 0;  // charged by connections (charge_frame_bytes)
  std::atomic<uint64_t> reply_bytes_queued_ = 0;  // add_reply_bytes
  // trim_heap. Shared with the trim it posts: a model that outlives the
  // server keeps the releaser, and that trim, past the server's end.
  std::shared_ptr<std::atomic<bool>> trim_pending_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<ModelRegistry> registry_;
  std::chrono::steady_clock::time_point started_;
  // The protocols served next to the native one (daemon/kserve/).
  std::vector<std::unique_ptr<FrontEnd>> front_ends_;

  bool stopping_ = false;
  bool reloading_ = false;
  bool reload_again_ = false;
  std::vector<Waiter> reload_waiters_;       // answered when this reload is done
  std::vector<Waiter> next_reload_waiters_;  // ... when the one after it is
};

}  // namespace hetero::daemon
