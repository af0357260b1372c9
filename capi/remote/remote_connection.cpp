#include "capi/remote/remote_connection.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "protocol/socket_io.h"

namespace hetero::capi {

namespace {

// Replies can be large (outputs inline); the daemon's own limit is in its
// HelloReply, this only guards against a daemon gone mad.
constexpr size_t kMaxReplyBytes = size_t{1} << 31;
constexpr int kHelloTimeoutSeconds = 30;

// A synchronous call whose replies come quickly polls the socket for its
// reply, for at most this long, instead of sleeping in recvmsg until the
// daemon's write wakes it. Waking a sleeping thread costs tens of
// microseconds on a virtual machine (it may have to wake a vCPU), more than
// a small model's whole inference (bench_daemon's round trip: about 45 us
// added by the daemon without this, 35 with it). Calls that usually wait
// longer than this, as a real model's do, never spin.
constexpr auto kMaxSpin = std::chrono::microseconds(100);

void write_all(int fd, std::span<const uint8_t> bytes, std::span<const int> fds, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = wire::send(fd, bytes, fds);
    if (n < 0) fail(HETERO_CONNECTION_ERROR, "writing to " + path + ": " + std::strerror(static_cast<int>(-n)));
    bytes = bytes.subspan(static_cast<size_t>(n));
    fds = {};  // they went with the first byte
  }
}

// Sleeps until `fd` has something to read, its end included. Why not
// sleep in recvmsg: a thread asleep there is woken each time the daemon
// reads what this side wrote (a Unix socket's write-space wake-up does not
// say which event it is for), so every call would wake its caller once for
// nothing, as the daemon takes the request; on a virtual machine that is a
// sleeping vCPU's wake-up. poll() sleeps for the events it names.
void await_readable(int fd) {
  pollfd ready{fd, POLLIN | POLLRDHUP, 0};
  while (::poll(&ready, 1, -1) < 0 && errno == EINTR) {
  }
}

}  // namespace

// The highest status this library knows (include/hetero/status.h); a newer
// daemon's other codes arrive as INTERNAL.
#define HETERO_STATUS_VALUE_(name, value, message) value,
constexpr int32_t kLastStatus = std::max({HETERO_STATUS_MAP(HETERO_STATUS_VALUE_)});
#undef HETERO_STATUS_VALUE_

hetero_status reply_status(const wire::Response& response) {
  const int32_t status = response.status();
  return status >= 0 && status <= kLastStatus ? static_cast<hetero_status>(status) : HETERO_INTERNAL;
}

void throw_reply_error(const wire::Response& response) {
  fail(reply_status(response), response.message().empty() ? "the daemon refused the request" : response.message());
}

wire::UniqueFd RemoteConnection::dial(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    fail(HETERO_INVALID_ARGUMENT, "socket path '" + path + "' is empty or too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) fail(HETERO_CONNECTION_ERROR, std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    fail(e == EACCES ? HETERO_PERMISSION_DENIED : HETERO_CONNECTION_ERROR,
         "cannot connect to heterod at " + path + ": " + std::strerror(e));
  }
  return fd;
}

void RemoteConnection::greet() {
  greeted_ = false;
  // A daemon that accepts but never answers (stopped, or something else on
  // the socket) must not hang the caller.
  const timeval timeout{kHelloTimeoutSeconds, 0};
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  try {
    wire::Request request;
    wire::Hello* hello = request.mutable_hello();
    hello->set_min_version(wire::kProtocolVersion);
    hello->set_max_version(wire::kProtocolVersion);
    hello->set_client("libhetero");
    hello_ = call_once(request, {}).response.hello();
  } catch (...) {
    // The daemon may have refused this client (an error frame, then close)
    // before the Hello was even written: read on until it closes to see it.
    ::shutdown(fd_.get(), SHUT_WR);
    while (refusal_status_ == HETERO_OK && read_once()) {
    }
    if (refusal_status_ != HETERO_OK) fail(refusal_status_, refusal_);
    throw;
  }
  // From now on a read waits as long as it takes.
  greeted_ = true;
  const timeval forever{0, 0};
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
}

RemoteConnection::RemoteConnection(const std::string& socket_path)
    : path_(socket_path), fd_(dial(socket_path)), typical_wait_(kMaxSpin / 2), decoder_(kMaxReplyBytes),
      buffer_(64 * 1024) {
  completions_ = std::make_unique<core::WorkerThread>();
  greet();
}

void RemoteConnection::hear_last_words(std::unique_lock<std::mutex>& lock) {
  if (!broken_.empty()) return;
  // Has the daemon said anything since the last reply? With nothing
  // pending, only its closing words (or the end of the stream) can come.
  pollfd ready{fd_.get(), POLLIN | POLLRDHUP, 0};
  while (!ended_ && ::poll(&ready, 1, 0) > 0) read_in_turn(lock);
}

void RemoteConnection::reconnect_if_idle_closed(std::unique_lock<std::mutex>& lock) {
  hear_last_words(lock);
  if (!idle_closed_) return;
  reconnecting_ = true;
  lock.unlock();
  try {
    wire::UniqueFd fd = dial(path_);
    {
      std::lock_guard<std::mutex> write_lock(write_mutex_);
      fd_ = std::move(fd);
    }
    // The reading role's state, for the new stream; no one holds the role
    // (nothing is pending, and calls wait while reconnecting_).
    decoder_ = wire::FrameDecoder(kMaxReplyBytes);
    refusal_status_ = HETERO_OK;
    refusal_.clear();
    ended_ = false;
    {
      std::lock_guard<std::mutex> relock(pending_mutex_);
      broken_.clear();
      idle_closed_ = false;
    }
    greet();
  } catch (...) {
    lock.lock();
    reconnecting_ = false;
    read_cv_.notify_all();
    throw;
  }
  lock.lock();
  reconnecting_ = false;
  read_cv_.notify_all();
}

RemoteConnection::~RemoteConnection() {
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    stopping_ = true;
  }
  read_cv_.notify_all();
  // Wakes a reader in recv() with end-of-stream; whatever is still pending fails.
  ::shutdown(fd_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
  fail_pending(HETERO_CONNECTION_ERROR, "the connection to heterod at " + path_ + " was closed");
  completions_.reset();
}

uint64_t RemoteConnection::new_id() {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  return next_id_++;
}

void RemoteConnection::send(wire::Request& request, std::span<const int> fds, Pending pending) {
  try {
    send_once(request, fds, pending);
    return;
  } catch (const Failure&) {
    // The write failed: the daemon had closed the connection before the
    // request reached it. If for being idle, its last words, already here,
    // say so, and the request goes again on a new connection.
    std::unique_lock<std::mutex> lock(pending_mutex_);
    if (request.has_hello() || !pending.deliver) throw;
    if (pending_.empty() && !reading_) hear_last_words(lock);
    if (!idle_closed_) throw;
  }
  send_once(request, fds, pending);
}

void RemoteConnection::send_once(wire::Request& request, std::span<const int> fds, Pending& pending) {
  uint64_t id;
  {
    std::unique_lock<std::mutex> lock(pending_mutex_);
    if (!request.has_hello()) {
      // After an idle close, the reading role is let go as the stream ends.
      read_cv_.wait(lock, [this] { return !reconnecting_ && !(idle_closed_ && reading_); });
      if (pending_.empty() && !reading_) reconnect_if_idle_closed(lock);
    }
    if (!broken_.empty()) fail(HETERO_CONNECTION_ERROR, broken_);
    id = request.id() ? request.id() : next_id_++;
    if (pending.async) ++async_pending_;
    pending_[id] = std::move(pending);
  }
  request.set_id(id);
  try {
    const std::vector<uint8_t> frame = wire::encode_frame(request, fds.size());
    std::lock_guard<std::mutex> lock(write_mutex_);
    write_all(fd_.get(), frame, fds, path_);
  } catch (...) {
    // Given back to the caller, unless the connection's end failed it already.
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (auto it = pending_.find(id); it != pending_.end()) {
      if (it->second.async) --async_pending_;
      pending = std::move(it->second);
      pending_.erase(it);
    }
    throw;
  }
}

Reply RemoteConnection::call(wire::Request& request, std::span<const int> fds) {
  try {
    return call_once(request, fds);
  } catch (const Failure&) {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    // Closed for being idle as the request went: the daemon did not read it.
    if (!idle_closed_) throw;
  }
  return call_once(request, fds);
}

Reply RemoteConnection::call_once(wire::Request& request, std::span<const int> fds) {
  std::unique_ptr<Reply> reply;
  std::exception_ptr error;
  bool done = false;
  send(request, fds, {[&](std::unique_ptr<Reply> r, std::exception_ptr e) {
                        std::lock_guard<std::mutex> lock(pending_mutex_);
                        reply = std::move(r);
                        error = e;
                        done = true;
                        read_cv_.notify_all();
                      },
                      false});
  const Clock::time_point sent = Clock::now();
  std::unique_lock<std::mutex> lock(pending_mutex_);
  // Spin for twice the usual wait while that is short; never for more.
  const Clock::duration spin =
      typical_wait_ < kMaxSpin ? std::min<Clock::duration>(2 * typical_wait_, kMaxSpin) : Clock::duration{};
  const Clock::time_point spin_until = sent + spin;
  while (!done) {
    if (reading_)
      read_cv_.wait(lock);
    else
      read_in_turn(lock, spin_until);  // no one reads: this caller does, and hears its own reply first hand
  }
  typical_wait_ = (3 * typical_wait_ + (Clock::now() - sent)) / 4;
  lock.unlock();
  if (error) std::rethrow_exception(error);
  if (reply->response.status() != HETERO_OK) throw_reply_error(reply->response);
  return std::move(*reply);
}

void RemoteConnection::call_async(wire::Request request, std::vector<wire::UniqueFd> fds, Done done) {
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (!reader_.joinable() && !stopping_) reader_ = std::thread([this] { reader_loop(); });
  }
  send_async(std::make_shared<AsyncCall>(AsyncCall{std::move(request), std::move(fds), std::move(done)}), false);
}

void RemoteConnection::send_async(const std::shared_ptr<AsyncCall>& call, bool again) {
  std::vector<int> fds;
  for (const wire::UniqueFd& fd : call->fds) fds.push_back(fd.get());
  send(call->request, fds,
       {[this, call, again](std::unique_ptr<Reply> reply, std::exception_ptr error) {
          // Closed for being idle as the request arrived: the daemon did not
          // read it, and it goes again on a new connection.
          bool resend = false;
          if (error && !again) {
            std::lock_guard<std::mutex> lock(pending_mutex_);
            resend = idle_closed_ && !stopping_;
          }
          std::shared_ptr<Reply> shared_reply(std::move(reply));
          completions_->post([this, call, shared_reply, error, resend] {
            if (resend) {
              try {
                send_async(call, true);
              } catch (...) {
                call->done(nullptr, std::current_exception());
              }
              return;
            }
            call->done(shared_reply.get(), error);
          });
        },
        true});
  read_cv_.notify_all();  // the reader thread takes the role if no one holds it
}

void RemoteConnection::reader_loop() {
  std::unique_lock<std::mutex> lock(pending_mutex_);
  for (;;) {
    read_cv_.wait(lock, [this] { return stopping_ || (async_pending_ > 0 && !reading_); });
    if (stopping_) return;
    read_in_turn(lock);
  }
}

void RemoteConnection::read_in_turn(std::unique_lock<std::mutex>& lock, Clock::time_point spin_until) {
  reading_ = true;
  lock.unlock();
  read_once(spin_until);
  lock.lock();
  reading_ = false;
  read_cv_.notify_all();  // someone else may be waiting for the role
}

void RemoteConnection::fail_pending(hetero_status status, const std::string& why) {
  std::map<uint64_t, Pending> pending;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    if (broken_.empty()) broken_ = why;
    pending.swap(pending_);
    async_pending_ = 0;
  }
  const auto error = std::make_exception_ptr(Failure(status, why));
  for (auto& [id, p] : pending) p.deliver(nullptr, error);
}

bool RemoteConnection::read_once(Clock::time_point spin_until) {
  if (ended_) return false;
  std::vector<wire::UniqueFd> fds;
  ssize_t n = -EAGAIN;
  while (greeted_ && Clock::now() < spin_until) {  // before the Hello's reply, EAGAIN means its timeout
    n = wire::receive(fd_.get(), buffer_, fds, MSG_DONTWAIT);
    if (n != -EAGAIN && n != -EINTR) break;
    ::sched_yield();  // a daemon thread waiting for this core runs first
  }
  if (n == -EAGAIN || n == -EINTR) {
    do {
      if (greeted_) await_readable(fd_.get());
      n = wire::receive(fd_.get(), buffer_, fds, greeted_ ? MSG_DONTWAIT : 0);
    } while (n == -EINTR || ((n == -EAGAIN || n == -EWOULDBLOCK) && greeted_));
  }
  if (n == -EAGAIN || n == -EWOULDBLOCK)  // the receive timeout, before the Hello's reply
    return end(HETERO_CONNECTION_ERROR,
               "heterod at " + path_ + " did not answer within " + std::to_string(kHelloTimeoutSeconds) + " s");
  if (n <= 0) {
    if (refusal_status_ != HETERO_OK) return end(refusal_status_, refusal_);
    return end(HETERO_CONNECTION_ERROR, n == 0 ? "heterod closed the connection (" + path_ + ")"
                                               : "reading from " + path_ + ": " + std::strerror(static_cast<int>(-n)));
  }
  try {
    decoder_.add_fds(std::move(fds));
    decoder_.feed({buffer_.data(), static_cast<size_t>(n)});
    while (std::optional<wire::Frame> frame = decoder_.next()) {
      auto reply = std::make_unique<Reply>();
      if (!reply->response.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size())))
        fail(HETERO_PROTOCOL_ERROR, "heterod sent a frame that is not a Response");
      reply->fds = std::move(frame->fds);
      Deliver deliver;
      {
        std::lock_guard<std::mutex> lock(pending_mutex_);
        auto it = pending_.find(reply->response.id());
        if (it != pending_.end()) {
          if (it->second.async) --async_pending_;
          deliver = std::move(it->second.deliver);
          pending_.erase(it);
        }
      }
      if (deliver)
        deliver(std::move(reply), nullptr);
      else if (reply->response.status() != HETERO_OK) {  // id 0: about the connection itself
        refusal_status_ = reply_status(reply->response);
        refusal_ = reply->response.message();
        if (refusal_status_ == HETERO_TIMEOUT && refusal_.starts_with(wire::kIdleCloseMessage)) {
          std::lock_guard<std::mutex> lock(pending_mutex_);
          idle_closed_ = true;
        }
      }
    }
  } catch (const Failure& e) {
    ::shutdown(fd_.get(), SHUT_RDWR);
    return end(e.status(), e.what());
  }
  return true;
}

bool RemoteConnection::end(hetero_status status, const std::string& why) {
  ended_ = true;
  fail_pending(status, why);
  return false;
}

}  // namespace hetero::capi
