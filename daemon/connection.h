// One client on the socket: reads frames as they arrive (recvmsg, so memfds
// can come with them), hands each to the server, and writes replies in the
// order they are ready. Loop thread only, except try_reply_now(): a driver
// thread writes an infer reply itself when nothing is queued before it, so
// the reply does not wait for the loop to wake (out_mutex_ guards what the
// two share: the socket's write side and the queue of replies).
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "daemon/peer_credentials.h"
#include "daemon/served_model.h"
#include "protocol/frame.h"
#include "protocol/heterod.pb.h"

namespace hetero::daemon {

class Server;

// An error Response to request `id`.
wire::EncodedFrame error_frame(uint64_t id, hetero_status status, const std::string& message);

class Connection final : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server& server, wire::UniqueFd fd, PeerCredentials peer, size_t max_frame_bytes);

  // Until Hello, a frame may be at most this large: a client that has not
  // said who it is gets no large buffer.
  static constexpr size_t kHelloFrameBytes = 64 * 1024;
  ~Connection();

  // Starts polling the socket. False when libuv cannot: the connection has
  // then closed itself, saying why in the log.
  bool start(uv_loop_t* loop);
  void send(wire::EncodedFrame frame);
  // Replies with an error that ends the connection, closed once it is sent.
  void send_fatal(uint64_t id, hetero_status status, const std::string& message);
  // Stops reading new requests (shutdown); replies still go out.
  void stop_reading();
  // Looks again at what keeps it from reading: the frame budget it waits
  // for (Server::charge_frame_bytes), the replies' budget
  // (Server::reply_budget_spent); reads on when neither does.
  void resume_reading();
  // Closes at once; queued replies are dropped.
  void close();

  bool open() const { return !closed_; }
  // The answer to one of its infer requests (loop thread).
  void reply_infer(wire::EncodedFrame frame);
  // Any thread (the driver's, as the inference completes): sends the answer
  // at once, taking the frame, when nothing is queued before it; then
  // reply_sent() follows on the loop thread. False leaves it to reply_infer().
  bool try_reply_now(wire::EncodedFrame& frame);
  void reply_sent();

  const PeerCredentials& peer() const noexcept { return peer_; }
  // The Hello exchange has happened: frames up to max_frame_bytes from now on.
  void greet();
  bool greeted() const noexcept { return greeted_; }
  // Loop thread, from the server's sweep: closes a connection that has not
  // said Hello within handshake_timeout_ms, whose frame has been arriving for
  // longer than frame_timeout_ms, whose queued replies have not moved for
  // frame_timeout_ms, or that has been idle (nothing asked, nothing
  // pending) for idle_timeout_ms; and one whose last error reply has waited
  // frame_timeout_ms for a client that does not read it.
  void check_timeouts(Clock::time_point now, const Limits& limits);
  std::atomic<uint32_t> in_flight = 0;  // infer requests not answered yet
  // Nothing left to send, nothing being read into.
  bool idle() const;

 private:
  static void on_poll(uv_poll_t* handle, int status, int events);
  void on_readable();
  void flush();
  bool nothing_queued() const;
  bool bytes_unread() const;
  // out_mutex_ held: writes queued replies until the socket is full, adding
  // the bytes of the replies it finished to `done`. False when the socket
  // failed (the client has gone).
  bool write_queued(size_t& done);
  // out_mutex_ held: `frame` joins the queue (the server's reply budget is
  // charged for it).
  void enqueue(wire::EncodedFrame frame);
  void update_poll();
  // Logs why (a libuv failure) and closes.
  void drop(const std::string& why);

  Server& server_;
  wire::UniqueFd fd_;
  PeerCredentials peer_;
  uv_poll_t* poll_ = nullptr;  // freed by its close callback
  // The events poll_ watches now. uv_poll_start() re-registers the socket
  // with epoll (a DEL and an ADD) even when the events are the same, so
  // update_poll() calls it only when they change.
  int polled_events_ = 0;
  wire::FrameDecoder decoder_;
  mutable std::mutex out_mutex_;
  std::deque<wire::EncodedFrame> out_;
  size_t out_offset_ = 0;  // bytes of out_.front() already sent
  size_t out_bytes_ = 0;   // bytes queued in all
  size_t max_out_bytes_;   // above this, reading pauses until the client reads
  Clock::time_point out_moved_{};  // the queue's last byte sent, or its first frame queued
  size_t max_frame_bytes_;
  // Bytes of the daemon's frame budget this connection holds: the whole
  // announced size of the frame being received when that is over
  // kHelloFrameBytes (smaller frames are free). Reserving it whole when the
  // header arrives means a frame let in can always complete; partial
  // reservations could fill the budget with frames none of which fits.
  size_t frame_charge_ = 0;
  bool waiting_for_budget_ = false;  // for the frame whose header is in
  // Reserves the budget the decoder's frame needs, or releases it once the
  // frame is complete; false (and waiting_for_budget_) when it does not fit.
  bool charge_frame();
  bool greeted_ = false;
  Clock::time_point accepted_ = Clock::now();
  Clock::time_point last_active_ = accepted_;  // a frame received or a reply sent
  Clock::time_point frame_started_{};          // of the frame partly received, if any
  // The bytes of the frame partly received that Server::refuse_if_it_grows
  // has measured: a frame crafted to grow is refused once it has, not once
  // all of it (16 MiB) has been read. Measured again each time what has
  // arrived doubles, from kFirstPrefixCheck on, so that measuring costs at
  // most twice the frame.
  size_t prefix_checked_ = 0;
  bool reading_ = true;
  bool closing_ = false;   // close once out_ is sent...
  Clock::time_point closing_since_{};  // ...or after limits.frame_timeout_ms
  std::atomic<bool> closed_ = false;  // set with out_mutex_ held
};

}  // namespace hetero::daemon
