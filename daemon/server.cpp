#include "daemon/server.h"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "core/log.h"
#include "core/progress.h"
#include "core/thread_slice.h"
#include "daemon/log_sink.h"
#include "daemon/model_check.h"
#include "daemon/peer_credentials.h"
#include "daemon/systemd_notify.h"
#include "daemon/uv_status.h"

namespace hetero::daemon {

namespace {

// How long the teardown after the loop may take (models' running inferences
// cancelled, the loader's compile finished) before the process exits anyway.
constexpr std::chrono::seconds kTeardownLimit{5};

void info(const std::string& message) { core::log(core::LogLevel::Info, message); }
void warn(const std::string& message) { core::log(core::LogLevel::Warning, message); }

std::string ms_since(std::chrono::steady_clock::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

template <typename Handle>
Server* server_of(Handle* handle) {
  return static_cast<Server*>(handle->data);
}

}  // namespace

Server::Server(Config config) : config_(std::move(config)) {
  uv_check(uv_loop_init(&loop_), "uv_loop_init");
}

Server::~Server() {
  // run() closed every handle; a constructor-only Server has none open. A
  // handle left open (UV_EBUSY) is a bug worth a line in the log.
  uv_ok(uv_loop_close(&loop_), "uv_loop_close");
}

namespace {

// Every driver, driver failure and device with its metrics, logged as they
// are found. Any thread.
wire::ListDevicesReply list_devices(hetero_core_t* core) {
  wire::ListDevicesReply listing;
  size_t count = 0;
  hetero_core_get_driver_count(core, &count);
  for (size_t k = 0; k < count; ++k) {
    const char *name = nullptr, *version = nullptr, *path = nullptr;
    hetero_core_get_driver(core, &name, &version, &path, k);
    info(std::string("driver ") + name + " " + version + " (" + path + ")");
    const char* no_device = "";
    hetero_core_get_driver_no_device_reason(core, &no_device, k);
    // Said once, here: LEVEL_ZERO without a GPU driver, for one.
    if (*no_device) warn(std::string("the ") + name + " driver has no device: " + no_device);
    wire::Driver* driver = listing.add_drivers();
    driver->set_name(name);
    driver->set_version(version);
    driver->set_path(path);
    driver->set_no_device_reason(no_device);
  }
  hetero_core_get_driver_failure_count(core, &count);
  for (size_t k = 0; k < count; ++k) {
    const char *path = nullptr, *reason = nullptr;
    hetero_core_get_driver_failure(core, &path, &reason, k);
    warn(std::string("driver module ") + path + " not used: " + reason);
    wire::DriverFailure* failure = listing.add_driver_failures();
    failure->set_path(path);
    failure->set_reason(reason);
  }
  // Devices and their metrics are fixed for the core's life: listed once.
  hetero_core_get_device_count(core, &count);
  for (size_t k = 0; k < count; ++k) {
    const char *name = nullptr, *full = nullptr;
    hetero_core_get_device_name(core, &name, k);
    hetero_core_get_device_full_name(core, &full, k);
    wire::Device* device = listing.add_devices();
    device->set_name(name);
    device->set_full_name(full);
    char* properties = nullptr;
    if (hetero_core_get_metric(core, &properties, name, "SUPPORTED_PROPERTIES") != HETERO_OK) continue;
    std::string list = properties;
    hetero_free(properties);
    size_t pos = 0;
    while (pos < list.size()) {
      const size_t end = std::min(list.find(' ', pos), list.size());
      const std::string metric = list.substr(pos, end - pos);
      char* value = nullptr;
      if (!metric.empty() && hetero_core_get_metric(core, &value, name, metric.c_str()) == HETERO_OK) {
        (*device->mutable_metrics())[metric] = value;
        hetero_free(value);
      }
      pos = end + 1;
    }
    info(std::string("device ") + name + ": " + full);
  }
  if (count == 0) warn("no devices: every model will fail to load");
  return listing;
}

}  // namespace

void Server::list_devices_for(Connection& connection, uint64_t id) {
  if (devices_) {
    wire::Response response;
    response.set_id(id);
    *response.mutable_list_devices() = *devices_;
    return reply(connection, response);
  }
  const bool asked_before = !device_waiters_.empty();  // the releaser is listing already
  device_waiters_.push_back({connection.shared_from_this(), id});
  if (asked_before) return;
  // Listing starts every driver's runtime: PoCL's takes half a second here,
  // which the loop thread would take from every client. The releaser thread
  // lists; the loop answers everyone who asked meanwhile.
  releaser_->post([this, core = core_.get(), post = post_] {
    auto listing = std::make_shared<wire::ListDevicesReply>(list_devices(core));
    post->post([this, listing] {
      devices_ = std::move(*listing);
      for (const Waiter& w : std::exchange(device_waiters_, {}))
        if (auto c = w.connection.lock(); c && c->open()) list_devices_for(*c, w.id);
    });
  });
}

std::string Server::status_line() const {
  const size_t ready = registry_->count(ModelState::Ready), failed = registry_->count(ModelState::Failed);
  std::string s = "serving " + std::to_string(ready) + " model" + (ready == 1 ? "" : "s");
  if (failed) s += ", " + std::to_string(failed) + " failed";
  s += " on " + listener_->path();
  return s;
}

void Server::start_loop_handles() {
  // Each failure here is a start-up error: the daemon would otherwise run
  // without accepting clients, answering signals or expiring requests.
  uv_check(uv_poll_init(&loop_, &listen_poll_, listener_->fd()), "uv_poll_init on " + listener_->path());
  listen_poll_.data = this;
  uv_check(poll_listener(), "uv_poll_start on " + listener_->path());

  auto on_signal = [](uv_signal_t* h, int signum) {
    Server* self = server_of(h);
    if (signum == SIGHUP)
      self->start_reload(nullptr);
    else
      self->begin_shutdown(signum == SIGTERM ? "SIGTERM" : "SIGINT");
  };
  struct Watched {
    uv_signal_t* handle;
    int signum;
    const char* name;
  };
  for (const Watched& s : {Watched{&sighup_, SIGHUP, "SIGHUP"}, {&sigterm_, SIGTERM, "SIGTERM"}, {&sigint_, SIGINT, "SIGINT"}}) {
    uv_check(uv_signal_init(&loop_, s.handle), std::string("uv_signal_init (") + s.name + ")");
    s.handle->data = this;
    uv_check(uv_signal_start(s.handle, on_signal, s.signum), std::string("uv_signal_start (") + s.name + ")");
  }

  uv_check(uv_timer_init(&loop_, &watchdog_timer_), "uv_timer_init (watchdog)");
  if (const uint64_t us = systemd::watchdog_interval_us()) {
    // Keep-alives at half the interval; a loop stuck for longer misses them.
    uv_check(uv_timer_start(&watchdog_timer_, [](uv_timer_t*) { systemd::notify_watchdog(); }, 0,
                            std::max<uint64_t>(1, us / 2000)),
             "uv_timer_start (watchdog)");
  }
  uv_check(uv_timer_init(&loop_, &sweep_timer_), "uv_timer_init (timeouts)");
  sweep_timer_.data = this;
  // Deadlines are kept to within a sweep: clients may ask for shorter ones
  // than the config's (Infer.timeout_ms, a gRPC deadline).
  const uint64_t sweep_ms = std::clamp<uint64_t>(config_.limits.request_timeout_ms / 4, 10, 100);
  uv_check(uv_timer_start(&sweep_timer_, [](uv_timer_t* h) { server_of(h)->sweep(); }, sweep_ms, sweep_ms),
           "uv_timer_start (timeouts)");
  uv_check(uv_timer_init(&loop_, &deadline_timer_), "uv_timer_init (deadlines)");
  deadline_timer_.data = this;
  uv_check(uv_timer_init(&loop_, &accept_timer_), "uv_timer_init (accept back-off)");
  accept_timer_.data = this;
  uv_check(uv_timer_init(&loop_, &grace_timer_), "uv_timer_init (shutdown grace period)");
  grace_timer_.data = this;
}

int Server::poll_listener() {
  return uv_poll_start(&listen_poll_, UV_READABLE, [](uv_poll_t* h, int, int) { server_of(h)->accept_clients(); });
}

void Server::sweep() {
  for (const auto& model : registry_->serving()) model->expire();
  const Clock::time_point now = Clock::now();
  registry_->expire_sequences(now);
  for (const auto& connection : open_connections()) connection->check_timeouts(now, config_.limits);
}

void Server::keep_deadline(Clock::time_point when) {
  if (!deadline_timer_.data || when >= deadline_due_) return;  // before the loop's handles, or already kept
  deadline_due_ = when;
  // To the millisecond after it: expire() answers deadlines already passed.
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now()).count() + 1;
  uv_ok(uv_timer_start(&deadline_timer_, [](uv_timer_t* h) { server_of(h)->on_deadline(); },
                       static_cast<uint64_t>(std::max<int64_t>(wait, 0)), 0),
        "uv_timer_start (deadlines)");
}

void Server::on_deadline() {
  deadline_due_ = Clock::time_point::max();
  Clock::time_point next = Clock::time_point::max();
  for (const auto& model : registry_->serving()) {
    model->expire();
    next = std::min(next, model->next_deadline());
  }
  if (next != Clock::time_point::max()) keep_deadline(next);
}

size_t Server::connections_of(uid_t uid) const {
  if (is_admin(uid)) return 0;
  return static_cast<size_t>(std::count_if(connections_.begin(), connections_.end(), [uid](const auto& c) {
    return c.second->open() && c.second->peer().uid == uid;
  }));
}

void Server::accept_clients() {
  // At most this many per turn of the loop: the listening socket stays
  // readable, so the rest are accepted on the next turn, after the requests
  // of the clients already connected. Each costs the loop about 25 us of
  // CPU, so a burst of 300 (SilentConnections in tests/daemon/
  // test_hostile.cpp) held it for 7 ms in one go.
  constexpr int kAcceptsPerTurn = 16;
  for (int accepted = 0; accepted < kAcceptsPerTurn; ++accepted) {
    const int fd = ::accept4(listener_->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) return back_off_accepting(e);
      if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR && e != ECONNABORTED)
        warn(std::string("accept: ") + std::strerror(e));
      if (e == EINTR || e == ECONNABORTED) continue;
      return;
    }
    accept_delay_ms_ = 0;
    wire::UniqueFd owned(fd);
    PeerCredentials peer;
    try {
      peer = peer_credentials(fd);
    } catch (const Failure& e) {
      warn(e.what());
      continue;
    }
    auto connection = std::make_shared<Connection>(*this, std::move(owned), peer, config_.limits.max_frame_bytes);
    connections_[connection.get()] = connection;
    // A connection that cannot be polled has closed itself, saying why.
    if (!connection->start(&loop_)) continue;
    if (!peer_allowed(peer, config_)) {
      connection->send_fatal(0, HETERO_PERMISSION_DENIED,
                             "uid " + std::to_string(peer.uid) + " is not allowed by " + config_.file +
                                 " (access.allowed_uids / allowed_gids)");
    } else if (connections_.size() > config_.limits.max_connections) {
      connection->send_fatal(0, HETERO_BUSY, "too many connections (limits.max_connections = " +
                                                 std::to_string(config_.limits.max_connections) + ")");
    } else if (const size_t held = connections_of(peer.uid); held > config_.limits.max_connections_per_uid) {
      connection->send_fatal(0, HETERO_BUSY,
                             "uid " + std::to_string(peer.uid) + " has " + std::to_string(held - 1) +
                                 " connections open (limits.max_connections_per_uid = " +
                                 std::to_string(config_.limits.max_connections_per_uid) + ")");
    } else {
      core::log(core::LogLevel::Debug, "client " + peer.describe() + " connected");
    }
  }
}

// Out of descriptors or memory, accept() fails at once while the client waits
// in the backlog, and the listening socket stays readable: polling it would
// spin. Stop polling and try again later, each time twice as late up to a
// second; say so at most once a minute.
void Server::back_off_accepting(int error) {
  accept_delay_ms_ = std::clamp<uint64_t>(accept_delay_ms_ * 2, 10, 1000);
  ++accept_failures_;
  const Clock::time_point now = Clock::now();
  if (now - last_accept_warning_ > std::chrono::minutes(1)) {
    warn(std::string("accept: ") + std::strerror(error) + " (" + std::to_string(accept_failures_) +
         " times since the last warning); accepting again in " + std::to_string(accept_delay_ms_) + " ms");
    last_accept_warning_ = now;
    accept_failures_ = 0;
  }
  uv_ok(uv_poll_stop(&listen_poll_), "uv_poll_stop on " + listener_->path());
  const int rc = uv_timer_start(
      &accept_timer_,
      [](uv_timer_t* h) {
        Server* self = server_of(h);
        if (!self->stopping_) uv_ok(self->poll_listener(), "uv_poll_start on " + self->listener_->path());
      },
      accept_delay_ms_, 0);
  uv_ok(rc, "uv_timer_start (accept back-off)");
}

std::vector<std::shared_ptr<Connection>> Server::open_connections() const {
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(connections_.size());
  for (const auto& [ptr, connection] : connections_) all.push_back(connection);
  return all;
}

void Server::connection_closed(Connection& connection) {
  core::log(core::LogLevel::Debug, "client " + connection.peer().describe() + " disconnected");
  connections_.erase(&connection);
  registry_->sequences().end_connection(&connection);
  // Its inferences stop at their next node boundary, freeing their slots.
  for (const auto& model : registry_->serving()) model->cancel_orphans();
  connection_progress();
}

namespace {

// Gives the allocator's free pages back to the system now. heterod links
// jemalloc where it is built with it (daemon/allocator.cpp), which would
// otherwise return them over dirty_decay_ms; its mallctl is looked up rather
// than linked, so that this works (with glibc's malloc_trim) in whatever
// process the daemon's library runs, the tests' included.
void give_back_free_pages() {
  using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
  static const auto mallctl = reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl)
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL, every arena
  else
    ::malloc_trim(0);
}

}  // namespace

void Server::trim_heap() {
  if (!releaser_ || trim_pending_->exchange(true)) return;
  releaser_->post([pending = trim_pending_] {
    *pending = false;
    give_back_free_pages();
  });
}

bool Server::charge_frame_bytes(size_t& charged, size_t bytes) {
  const uint64_t before = frame_bytes_in_flight_;
  const uint64_t others = before - charged;
  const bool fits = others + bytes <= config_.limits.max_frame_bytes_in_flight;
  charged = fits ? bytes : 0;
  frame_bytes_in_flight_ = others + charged;
  // Large frames are rare (large tensors travel as memfds), so looking at
  // every connection when one ends costs little.
  if (frame_bytes_in_flight_ < before)
    for (const auto& connection : open_connections()) connection->resume_reading();
  return fits;
}

void Server::take_reply_bytes(size_t bytes) {
  const bool was_spent = reply_budget_spent();
  reply_bytes_queued_ -= bytes;
  if (was_spent && !reply_budget_spent())
    for (const auto& connection : open_connections()) connection->resume_reading();
}

void Server::connection_progress() {
  if (!stopping_) return;
  for (const auto& [name, entry] : registry_->models())
    if (entry.model && entry.model->pending() > 0) return;
  for (const auto& [ptr, connection] : connections_)
    if (!connection->idle()) return;
  uv_stop(&loop_);
}

void Server::begin_shutdown(const char* why) {
  if (stopping_) {
    warn(std::string(why) + " again: exiting without waiting");
    uv_stop(&loop_);
    return;
  }
  stopping_ = true;
  registry_->stopping();
  info(std::string(why) + ": no new requests; finishing those in flight");
  systemd::notify_stopping("finishing requests in flight");
  uv_ok(uv_poll_stop(&listen_poll_), "uv_poll_stop on " + listener_->path());
  listener_->close();
  for (auto& front_end : front_ends_) front_end->stop_accepting();
  for (auto& [ptr, connection] : connections_) connection->stop_reading();
  const int rc = uv_timer_start(
      &grace_timer_,
      [](uv_timer_t* h) {
        warn("shutdown grace period over: exiting with requests unanswered");
        uv_stop(h->loop);
      },
      config_.limits.shutdown_grace_ms, 0);
  // Without the timer the wait would be unbounded: exit now instead.
  if (rc < 0) {
    core::log(core::LogLevel::Error,
              uv_failure("uv_timer_start (shutdown grace period)", rc) + ": exiting without waiting");
    uv_stop(&loop_);
    return;
  }
  connection_progress();
}

void Server::start_reload(const Waiter* waiter) {
  if (stopping_) return;
  if (reloading_) {
    // The file may have changed since this reload read it: read it again
    // afterwards, and answer this waiter when that reload is done.
    if (waiter) next_reload_waiters_.push_back(*waiter);
    reload_again_ = true;
    return;
  }
  if (waiter) reload_waiters_.push_back(*waiter);
  reloading_ = true;
  systemd::notify_reloading();
  info("reloading " + config_.file);
  Config next;
  try {
    next = read_config(config_.file);
  } catch (const std::exception& e) {
    // Whatever went wrong (an empty file, a directory or a FIFO at its path,
    // bad YAML, a filesystem error), the daemon serves on as it was: an
    // exception out of this signal callback would end it.
    const auto* error = dynamic_cast<const Failure*>(&e);
    const hetero_status status = error ? error->status() : HETERO_INTERNAL;
    core::log(core::LogLevel::Error, std::string("reload: ") + e.what() + "; keeping the running config");
    for (const Waiter& w : reload_waiters_)
      if (auto c = w.connection.lock()) reply_error(*c, w.id, status, e.what());
    reload_waiters_.clear();
    reloading_ = false;
    systemd::notify_ready(status_line());
    return;
  }
  auto shared_next = std::make_shared<Config>(std::move(next));
  registry_->reload(*shared_next, [this, shared_next](ReloadCounts counts) {
    finish_reload(std::move(*shared_next), counts);
  });
}

void Server::finish_reload(Config next, ReloadCounts counts) {
  if (next.socket_path != config_.socket_path || next.socket_mode != config_.socket_mode ||
      next.socket_group != config_.socket_group || next.driver_path != config_.driver_path ||
      next.cache_dir != config_.cache_dir || next.driver_config != config_.driver_config || next.kserve != config_.kserve)
    warn("reload: socket, kserve, driver and cache settings take effect at the next start");
  // Limits and access lists apply from now on; the core and the front ends
  // keep their settings.
  next.socket_path = config_.socket_path;
  next.kserve = config_.kserve;
  set_log_level(next.log_level);
  config_ = std::move(next);
  info("reloaded: " + std::to_string(counts.added) + " added, " + std::to_string(counts.changed) + " changed, " +
       std::to_string(counts.removed) + " removed, " + std::to_string(counts.failed) + " failed");
  for (const Waiter& w : reload_waiters_) {
    auto c = w.connection.lock();
    if (!c || !c->open()) continue;
    wire::Response response;
    response.set_id(w.id);
    wire::ReloadReply& reply_counts = *response.mutable_reload();
    reply_counts.set_added(counts.added);
    reply_counts.set_changed(counts.changed);
    reply_counts.set_removed(counts.removed);
    reply_counts.set_failed(counts.failed);
    reply(*c, response);
  }
  reload_waiters_.clear();
  reloading_ = false;
  systemd::notify_ready(status_line());
  if (reload_again_) {
    reload_again_ = false;
    reload_waiters_ = std::move(next_reload_waiters_);
    next_reload_waiters_.clear();
    start_reload(nullptr);
  }
}

void Server::close_handles() {
  if (post_) post_->close();
  uv_walk(
      &loop_,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  // Closing connections may have called uv_stop() again (connection_progress),
  // which makes the next uv_run() return before its first turn: run until
  // every close callback has run.
  while (uv_run(&loop_, UV_RUN_DEFAULT) != 0) {
  }
}

int Server::run() {
  started_ = std::chrono::steady_clock::now();
  // Each of the daemon's threads runs when a client's request wakes it: the
  // loop, the loaders, the CPU driver's streams. With a short time slice,
  // taken by every thread started from here, the wake-up preempts a busy
  // process at once instead of waiting out its slice (core/thread_slice.h).
  core::request_time_slice(core::kShortSlice, core::SliceInherited::kYes);
  try {
    listener_ = std::make_unique<Listener>(config_);
    info("listening on " + listener_->path());
    post_ = std::make_shared<LoopPost>(&loop_);
    releaser_ = std::make_shared<core::WorkerThread>();
    // Drivers and devices are listed when a client first asks
    // (list_devices_for), not here: listing them starts every driver's
    // runtime, and a box that serves CPU models would pay for the GPU
    // runtimes it never uses (PoCL alone maps 54 MiB of LLVM and Clang). A
    // model's load starts only its own device's runtime.
    core_ = create_core(config_);
    const ServedModel::Threads threads{post_, releaser_, [this](Clock::time_point when) { keep_deadline(when); }};
    registry_ = std::make_unique<ModelRegistry>(config_, core_.get(), threads, [this] { trim_heap(); },
                                                [this] { connection_progress(); });
    registry_->load_configured_models();
    // What compiling and importing them freed goes back now, not over the
    // allocator's next seconds while the first clients arrive.
    trim_heap();
    start_loop_handles();
    start_front_ends(*registry_, &loop_, front_ends_);
  } catch (...) {
    close_handles();  // so that the loop closes cleanly on the way out
    throw;
  }
  const std::string status = status_line();
  info(status + " (ready in " + ms_since(started_) + ")");
  systemd::notify_ready(status);

  uv_run(&loop_, UV_RUN_DEFAULT);

  // Teardown: connections, then every handle, then the models once their
  // running inferences have stopped. An inference or a compile that does not
  // stop (a kernel that never reaches a node boundary, a compile that never
  // ends) must not keep the process alive: past kTeardownLimit it exits as
  // it is.
  struct Teardown {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
  };
  auto teardown = std::make_shared<Teardown>();
  std::thread([teardown] {
    std::unique_lock lock(teardown->mutex);
    if (teardown->done_cv.wait_for(lock, kTeardownLimit, [&] { return teardown->done; })) return;
    core::log(core::LogLevel::Error, "an inference or a compile did not stop within " +
                                         std::to_string(kTeardownLimit.count()) + " s of the end: exiting without it");
    std::_Exit(EXIT_FAILURE);
  }).detach();
  for (const auto& connection : open_connections()) connection->close();
  close_handles();
  registry_->stop_and_wait();
  // Calls of other protocols still unanswered (the grace period ran out)
  // are answered now, while the models their jobs point into still exist.
  for (auto& front_end : front_ends_) front_end->shutdown();
  // Shut down, the front ends hold nothing a client can see. Destroying one
  // would end gRPC, which then waits up to 10 s for the connections of v2
  // clients still connected; the process is about to exit, so they are left
  // to it (kept reachable: not a leak).
  static auto* const left_to_exit = new std::vector<std::unique_ptr<FrontEnd>>();
  for (auto& front_end : front_ends_) left_to_exit->push_back(std::move(front_end));
  front_ends_.clear();
  registry_->forget();
  releaser_.reset();  // joined: the models are destroyed before "stopped"
  listener_.reset();
  {
    std::lock_guard lock(teardown->mutex);
    teardown->done = true;
  }
  teardown->done_cv.notify_one();
  info("stopped");
  return 0;
}

}  // namespace hetero::daemon
