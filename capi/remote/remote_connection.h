// libhetero's end of a daemon connection: a blocking Unix socket whose
// responses are matched to requests by id (the daemon answers out of order),
// and a completion thread that runs async callbacks so that a slow callback
// never stalls the replies other requests wait for.
//
// Who reads the socket: one thread at a time holds the reading role and
// delivers every reply it reads, its own or another's. A thread waiting in
// call() takes the role when no one holds it, so a synchronous call reads
// its own reply: no thread has to be woken to hand it over. A reader thread,
// started with the first call_async(), takes the role while asynchronous
// calls wait and no caller holds it.
//
// A connection the daemon closes for being idle (limits.idle_timeout_ms) is
// made again by the next call, unseen by the caller: the daemon keeps no
// state per connection that a client relies on (models are the uid's or the
// config's), and its closing words say it read none of the client's
// requests (wire::kIdleCloseMessage). Before a call on a connection with
// nothing pending, the socket is polled to hear those words. A call whose
// write fails on the closed socket (the daemon closed just before it) hears
// them then and is sent again on a new connection; so is a call whose
// request went in but was not read (the daemon closed as it arrived).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/worker_thread.h"
#include "hetero/status.h"
#include "protocol/frame.h"
#include "protocol/heterod.pb.h"

namespace hetero::capi {

// A response and the descriptors that came with it.
struct Reply {
  wire::Response response;
  std::vector<wire::UniqueFd> fds;
};

class RemoteConnection {
 public:
  // Connects and says Hello. Fails with CONNECTION_ERROR naming the socket,
  // or with the daemon's refusal (PERMISSION_DENIED, NOT_SUPPORTED).
  explicit RemoteConnection(const std::string& socket_path);
  ~RemoteConnection();
  RemoteConnection(const RemoteConnection&) = delete;
  RemoteConnection& operator=(const RemoteConnection&) = delete;

  // A request id of this connection, for a request whose id its sender must
  // know before the reply (to cancel it); send() sets one when none is set.
  uint64_t new_id();
  // Sends `request` (its id is set here unless it has one) with `fds`, and
  // waits for the reply.
  // A reply with an error status throws it as hetero::Failure.
  Reply call(wire::Request& request, std::span<const int> fds = {});
  // The same without waiting: `done` runs once on the completion thread, with
  // the reply or the failure. The request and `fds` are kept until then, to
  // be sent again if the daemon closes the connection for being idle as the
  // request arrives.
  using Done = std::function<void(Reply*, std::exception_ptr)>;
  void call_async(wire::Request request, std::vector<wire::UniqueFd> fds, Done done);

  const wire::HelloReply& hello() const noexcept { return hello_; }
  const std::string& socket_path() const noexcept { return path_; }

 private:
  // How a reply reaches its caller: in place for call(), posted to the
  // completion thread for call_async().
  using Deliver = std::function<void(std::unique_ptr<Reply>, std::exception_ptr)>;
  struct Pending {
    Deliver deliver;
    bool async = false;
  };
  // Registers `pending` under the request's id and writes the request; a
  // write that meets the daemon's idle close is made once more on a new
  // connection.
  void send(wire::Request& request, std::span<const int> fds, Pending pending);
  // One try of send(). On failure `pending` is handed back, empty if the
  // connection's end has failed it already.
  void send_once(wire::Request& request, std::span<const int> fds, Pending& pending);
  struct AsyncCall {
    wire::Request request;
    std::vector<wire::UniqueFd> fds;
    Done done;
  };
  // call_async()'s send; `again` when the call is being sent a second time.
  void send_async(const std::shared_ptr<AsyncCall>& call, bool again);
  // call() once, on the connection as it is.
  Reply call_once(wire::Request& request, std::span<const int> fds);
  // Opens the socket; CONNECTION_ERROR or PERMISSION_DENIED naming it.
  static wire::UniqueFd dial(const std::string& path);
  // Says Hello on a connection no one else uses yet, and keeps the reply.
  void greet();
  // pending_mutex_ held by `lock`, nothing pending, the role free: the
  // connection is made again when the daemon closed it for being idle, as
  // its last words (read here if no one has) say. Throws what connecting
  // throws.
  void reconnect_if_idle_closed(std::unique_lock<std::mutex>& lock);
  // pending_mutex_ held by `lock`, nothing pending, the role free: reads
  // what the daemon has sent, which can only be its closing words.
  void hear_last_words(std::unique_lock<std::mutex>& lock);
  using Clock = std::chrono::steady_clock;
  // The reading role's work: one read from the socket, and every reply it
  // completes delivered. False once the connection has ended (every pending
  // call then failed). Until `spin_until` it polls the socket instead of
  // sleeping in recvmsg (see call()).
  bool read_once(Clock::time_point spin_until = {});
  // pending_mutex_ held by `lock`, the role free: takes it for one
  // read_once(), then lets it go for whoever waits.
  void read_in_turn(std::unique_lock<std::mutex>& lock, Clock::time_point spin_until = {});
  // The stream has ended (`why`): every pending call fails; false.
  bool end(hetero_status status, const std::string& why);
  void reader_loop();
  void fail_pending(hetero_status status, const std::string& why);

  std::string path_;
  wire::UniqueFd fd_;
  wire::HelloReply hello_;

  std::mutex write_mutex_;
  std::mutex pending_mutex_;  // guards what follows, down to read_cv_
  std::map<uint64_t, Pending> pending_;
  size_t async_pending_ = 0;  // of pending_, the call_async() ones
  uint64_t next_id_ = 1;
  std::string broken_;  // why the connection is unusable; empty while it works
  bool reading_ = false;   // a thread holds the reading role
  bool reconnecting_ = false;  // a new connection is being made: calls wait (but its Hello)
  bool idle_closed_ = false;   // the daemon closed the connection for being idle
  bool stopping_ = false;  // the destructor has begun
  // A reply was delivered, or the reading role was let go.
  std::condition_variable read_cv_;
  // How long call()s have waited for their replies lately (a moving average).
  Clock::duration typical_wait_;

  // The reading role's own state, touched only by the thread that holds it.
  wire::FrameDecoder decoder_;
  std::vector<uint8_t> buffer_;
  // An error the daemon sent about the connection itself (id 0) before
  // closing it: the reason every pending call then fails with.
  hetero_status refusal_status_ = HETERO_OK;
  std::string refusal_;
  bool greeted_ = false;  // a receive timeout before this is the daemon not answering
  bool ended_ = false;    // end of stream, or a broken stream, was read

  std::unique_ptr<core::WorkerThread> completions_;
  std::thread reader_;  // started by the first call_async()
};

// The status of a reply; an unknown value is INTERNAL.
hetero_status reply_status(const wire::Response& response);
// The status of a failed reply, thrown as hetero::Failure.
[[noreturn]] void throw_reply_error(const wire::Response& response);

}  // namespace hetero::capi
