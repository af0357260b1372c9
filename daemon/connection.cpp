#include "daemon/connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "core/error.h"
#include "core/log.h"
#include "daemon/server.h"
#include "daemon/uv_status.h"
#include "protocol/socket_io.h"
#include "protocol/utf8.h"

namespace hetero::daemon {

wire::EncodedFrame error_frame(uint64_t id, hetero_status status, const std::string& message) {
  wire::Response response;
  response.set_id(id);
  response.set_status(status);
  response.set_message(wire::escape_invalid_utf8(message));
  return {wire::encode_frame(response), {}};
}

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Reads per wake-up before other clients get their turn.
constexpr int kReadsPerWake = 8;
// A connection closing with this much buffered returns it to the system.
constexpr size_t kTrimAfterBytes = 1u << 20;
// The first prefix of a frame measured for growth (prefix_checked_): empty
// repeated entries pass the limit of 65536 messages within 128 KiB.
constexpr size_t kFirstPrefixCheck = 256 * 1024;

}  // namespace

Connection::Connection(Server& server, wire::UniqueFd fd, PeerCredentials peer, size_t max_frame_bytes)
    : server_(server),
      fd_(std::move(fd)),
      peer_(std::move(peer)),
      decoder_(std::min(max_frame_bytes, kHelloFrameBytes)),
      max_out_bytes_(connection_reply_bytes(max_frame_bytes)),
      max_frame_bytes_(max_frame_bytes) {}

void Connection::greet() {
  greeted_ = true;
  decoder_.set_max_payload(max_frame_bytes_);
}

void Connection::check_timeouts(Clock::time_point now, const Limits& limits) {
  using std::chrono::milliseconds;
  if (closed_) return;
  // Its last words waiting for a client that does not read them.
  if (closing_) {
    if (now - closing_since_ > milliseconds(limits.frame_timeout_ms)) close();
    return;
  }
  bool replies_stalled = false;
  {
    std::lock_guard<std::mutex> lock(out_mutex_);
    replies_stalled = !out_.empty() && now - out_moved_ > milliseconds(limits.frame_timeout_ms);
  }
  std::string why;
  if (!greeted_ && now - accepted_ > milliseconds(limits.handshake_timeout_ms))
    why = "no Hello within limits.handshake_timeout_ms (" + std::to_string(limits.handshake_timeout_ms) + " ms)";
  else if (replies_stalled)
    why = "its replies have waited limits.frame_timeout_ms (" + std::to_string(limits.frame_timeout_ms) +
          " ms) to be read";
  else if (decoder_.partial_bytes() > 0 && now - frame_started_ > milliseconds(limits.frame_timeout_ms))
    why = "a frame took longer than limits.frame_timeout_ms (" + std::to_string(limits.frame_timeout_ms) +
          " ms) to arrive";
  else if (limits.idle_timeout_ms && idle() && decoder_.partial_bytes() == 0 &&
           now - last_active_ > milliseconds(limits.idle_timeout_ms) && !bytes_unread())
    why = std::string(wire::kIdleCloseMessage) + " (" + std::to_string(limits.idle_timeout_ms) + " ms)";
  if (why.empty()) return;
  // Said if the socket takes it now; a client that does not read is not
  // waited for.
  send_fatal(0, HETERO_TIMEOUT, why);
  close();
}

Connection::~Connection() = default;

bool Connection::start(uv_loop_t* loop) {
  poll_ = new uv_poll_t{};
  if (const int rc = uv_poll_init(loop, poll_, fd_.get()); rc < 0) {
    delete poll_;
    poll_ = nullptr;
    drop(uv_failure("uv_poll_init", rc));
    return false;
  }
  poll_->data = this;
  update_poll();
  return !closed_;
}

bool Connection::nothing_queued() const {
  std::lock_guard<std::mutex> lock(out_mutex_);
  return out_.empty();
}

// A request has arrived and waits for the loop to read it: the connection
// is in use, not idle, and closing it would turn the request away unread.
bool Connection::bytes_unread() const {
  int bytes = 0;
  return ::ioctl(fd_.get(), SIOCINQ, &bytes) == 0 && bytes > 0;
}

bool Connection::idle() const { return closed_ || (nothing_queued() && in_flight == 0); }

void Connection::update_poll() {
  if (closed_ || !poll_) return;
  int events = 0;
  {
    std::lock_guard<std::mutex> lock(out_mutex_);
    // Backpressure: a client's further requests wait in its socket, and
    // its writes block, which costs the loop nothing.
    // - A large frame that does not fit the daemon's frame budget waits;
    //   other connections' small frames go on.
    // - At its limit of requests in flight, the answers come first (a
    //   burst read in one go past it still gets BUSY).
    // - With answers it has not read yet: while those and its requests
    //   running add up to that limit, or fill its share of queued bytes.
    // - While all clients' unread answers fill the daemon's budget, one
    //   request at a time: none read while one runs or its answer waits.
    const uint32_t max_in_flight = server_.config().limits.max_in_flight_per_client;
    const bool behind =
        in_flight >= max_in_flight ||
        (!out_.empty() && (in_flight + out_.size() >= max_in_flight || out_bytes_ >= max_out_bytes_)) ||
        ((in_flight > 0 || !out_.empty()) && server_.reply_budget_spent());
    if (reading_ && !closing_ && !behind && !waiting_for_budget_) events |= UV_READABLE;
    if (!out_.empty()) events |= UV_WRITABLE;
  }
  if (events == polled_events_) return;
  const int rc = events ? uv_poll_start(poll_, events, &Connection::on_poll) : uv_poll_stop(poll_);
  // A connection the loop cannot watch would hang its client: end it.
  if (rc < 0) return drop(uv_failure(events ? "uv_poll_start" : "uv_poll_stop", rc));
  polled_events_ = events;
}

void Connection::drop(const std::string& why) {
  core::log(core::LogLevel::Warning, "client " + peer_.describe() + ": " + why + "; disconnecting it");
  close();
}

void Connection::on_poll(uv_poll_t* handle, int status, int events) {
  auto* self = static_cast<Connection*>(handle->data);
  // The server may drop its reference while this runs.
  const std::shared_ptr<Connection> keep = self->shared_from_this();
  if (status < 0) {
    self->drop(uv_failure("polling its socket", status));
    return;
  }
  if (events & UV_WRITABLE) self->flush();
  if ((events & UV_READABLE) && !self->closed_) self->on_readable();
}

void Connection::on_readable() {
  uint8_t buffer[kReadChunk];
  for (int k = 0; k < kReadsPerWake && reading_ && !closing_ && !closed_; ++k) {
    std::vector<wire::UniqueFd> fds;
    const ssize_t n = wire::receive(fd_.get(), buffer, fds);
    if (n == -EAGAIN || n == -EWOULDBLOCK) break;
    if (n == 0 || (n < 0 && n != -EPROTO)) {  // the client went away
      close();
      return;
    }
    try {
      if (n == -EPROTO) fail(HETERO_PROTOCOL_ERROR, "descriptors were dropped: more than the per-frame limit");
      const bool between_frames = decoder_.partial_bytes() == 0;
      decoder_.add_fds(std::move(fds));
      decoder_.feed({buffer, static_cast<size_t>(n)});
      last_active_ = Clock::now();
      if (between_frames) frame_started_ = last_active_;
    } catch (const Failure& e) {
      send_fatal(0, e.status(), e.what());
      return;
    }
    while (!closing_ && !closed_) {
      std::optional<wire::Frame> frame = decoder_.next();
      if (!frame) break;
      // Memory running out while handling one client's request costs that
      // client its connection, not the daemon its life.
      prefix_checked_ = 0;
      try {
        server_.handle_frame(*this, std::move(*frame));
      } catch (const std::bad_alloc&) {
        send_fatal(0, HETERO_OUT_OF_MEMORY, "out of memory handling this client's request");
      } catch (const std::exception& e) {
        send_fatal(0, HETERO_INTERNAL, std::string("handling this client's request: ") + e.what());
      }
    }
    if (closing_ || closed_) break;
    const std::span<const uint8_t> partial = decoder_.partial_payload();
    if (partial.size() >= std::max(kFirstPrefixCheck, 2 * prefix_checked_)) {
      prefix_checked_ = partial.size();
      if (server_.refuse_if_it_grows(*this, partial, decoder_.announced_bytes() - wire::kFrameHeaderSize)) break;
    }
    if (!charge_frame()) break;
    if (static_cast<size_t>(n) < sizeof buffer) break;  // drained
  }
  update_poll();
}

bool Connection::charge_frame() {
  if (closed_) return false;  // close() has given back what it held
  const size_t announced = decoder_.announced_bytes();
  const size_t wanted = announced > kHelloFrameBytes ? announced : 0;
  waiting_for_budget_ = wanted != frame_charge_ && !server_.charge_frame_bytes(frame_charge_, wanted);
  return !waiting_for_budget_;
}

void Connection::resume_reading() {
  if (closed_ || (waiting_for_budget_ && !charge_frame())) return;
  update_poll();
}

void Connection::enqueue(wire::EncodedFrame frame) {
  if (out_.empty()) out_moved_ = Clock::now();
  out_bytes_ += frame.bytes.size();
  server_.add_reply_bytes(frame.bytes.size());
  out_.push_back(std::move(frame));
}

void Connection::send(wire::EncodedFrame frame) {
  if (closed_) return;
  last_active_ = Clock::now();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(out_mutex_);
    enqueue(std::move(frame));
    first = out_.size() == 1;
  }
  if (first) flush();
  update_poll();
}

void Connection::reply_infer(wire::EncodedFrame frame) {
  --in_flight;
  send(std::move(frame));
  server_.connection_progress();
}

bool Connection::try_reply_now(wire::EncodedFrame& frame) {
  std::lock_guard<std::mutex> lock(out_mutex_);
  if (closed_ || !out_.empty()) return false;
  std::vector<int> fds;
  for (const wire::UniqueFd& fd : frame.fds) fds.push_back(fd.get());
  // Counted as answered before the client can read the answer: it may send
  // its next request at once, and must not find itself over its limit.
  --in_flight;
  // Nothing written (a full socket) or a failing socket: the loop's send()
  // queues the frame, or finds the client gone.
  const ssize_t n = wire::send(fd_.get(), frame.bytes, fds);
  if (n <= 0) {
    ++in_flight;
    return false;
  }
  if (static_cast<size_t>(n) < frame.bytes.size()) {
    // The rest goes from the loop when the socket has room (reply_sent()
    // starts polling for it); the descriptors have gone with the first byte.
    enqueue(std::move(frame));
    out_offset_ = static_cast<size_t>(n);
  }
  return true;
}

void Connection::reply_sent() {
  last_active_ = Clock::now();
  update_poll();
  server_.connection_progress();
}

void Connection::send_fatal(uint64_t id, hetero_status status, const std::string& message) {
  core::log(core::LogLevel::Warning, "client " + peer_.describe() + ": " + message + "; disconnecting it");
  send(error_frame(id, status, message));
  closing_ = true;
  closing_since_ = Clock::now();
  if (nothing_queued()) close();
  update_poll();
}

bool Connection::write_queued(size_t& done) {
  while (!out_.empty()) {
    wire::EncodedFrame& front = out_.front();
    std::vector<int> fds;
    if (out_offset_ == 0)
      for (const wire::UniqueFd& fd : front.fds) fds.push_back(fd.get());
    const ssize_t n = wire::send(fd_.get(), std::span<const uint8_t>(front.bytes).subspan(out_offset_), fds);
    if (n == -EAGAIN || n == -EWOULDBLOCK) break;
    if (n < 0) return false;
    out_moved_ = Clock::now();
    out_offset_ += static_cast<size_t>(n);
    if (out_offset_ < front.bytes.size()) continue;
    out_bytes_ -= front.bytes.size();
    done += front.bytes.size();
    out_.pop_front();
    out_offset_ = 0;
  }
  return true;
}

void Connection::flush() {
  if (closed_) return;
  bool ok = false, sent_all = false;
  size_t sent = 0;
  {
    std::lock_guard<std::mutex> lock(out_mutex_);
    ok = write_queued(sent);
    sent_all = out_.empty();
  }
  server_.take_reply_bytes(sent);
  if (!ok) {
    close();
    return;
  }
  if (closing_ && sent_all) {
    close();
    return;
  }
  update_poll();
  server_.connection_progress();
}

void Connection::stop_reading() {
  reading_ = false;
  update_poll();
}

void Connection::close() {
  if (closed_) return;
  size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(out_mutex_);
    closed_ = true;  // from here on no driver thread writes to fd_
    queued = out_bytes_;
    out_.clear();
    out_bytes_ = 0;
  }
  const size_t held = queued + decoder_.partial_bytes();
  server_.take_reply_bytes(queued);
  server_.charge_frame_bytes(frame_charge_, 0);
  if (poll_) {
    uv_ok(uv_poll_stop(poll_), "uv_poll_stop for client " + peer_.describe());
    // The handle keeps this connection alive until its close callback, on a
    // later turn of the loop: close() may run deep inside its own methods.
    poll_->data = new std::shared_ptr<Connection>(shared_from_this());
    uv_close(reinterpret_cast<uv_handle_t*>(poll_), [](uv_handle_t* h) {
      delete static_cast<std::shared_ptr<Connection>*>(h->data);
      delete reinterpret_cast<uv_poll_t*>(h);
    });
    poll_ = nullptr;
  }
  fd_.reset();
  // Replies a client never read and frames it never finished were large
  // allocations: give their memory back to the system, not to the heap.
  if (held >= kTrimAfterBytes) server_.trim_heap();
  server_.connection_closed(*this);
}

}  // namespace hetero::daemon
