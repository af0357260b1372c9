// One v2 call, from its arrival on a completion-queue thread to its answer
// from whichever thread has it (the loop thread, or a front end stopping),
// on gRPC's asynchronous generic API: no thread waits for an answer, and no
// thread hop separates reading a call from handling it (the callback API
// adds one).
//
// Generic, not the generated typed service, because of what a client can
// make the transport hold. gRPC's typed API shows the application a call
// only once its request message is whole, so a client that stops one byte
// short of the end holds that message's buffers for as long as it likes.
// A generic call is seen when its headers arrive and reads its message
// itself, under a deadline (Listening::message_timeout), and the bytes of
// its reply are charged to its connection until gRPC has written them
// (ReplyBudget), under a deadline too: a client that grants no HTTP/2 window
// cannot make replies pile up in gRPC's buffers. The typed request and
// response are parsed and serialized here instead (UnaryCall).
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "hetero/hetero.h"

namespace hetero::daemon::kserve {

// The gRPC status for a heterod status, with heterod's message: BUSY is
// UNAVAILABLE, TIMEOUT DEADLINE_EXCEEDED, and so on (docs/kserve.md).
grpc::Status to_grpc(hetero_status status, const std::string& message);

class Call;
class CallRegister;

// The reply bytes handed to gRPC and not yet written to the client, per
// connection and overall. A reply is charged when it is handed over and
// released once gRPC says it is written (or the call is gone); a reply that
// does not fit is not sent, and its call is answered RESOURCE_EXHAUSTED
// instead. Any thread.
class ReplyBudget {
 public:
  ReplyBudget(uint64_t per_connection, uint64_t overall) : per_connection(per_connection), overall(overall) {}
  // Charges `bytes` to `connection` when they fit under both bounds, or when
  // nothing at all is waiting (so that one reply larger than a bound still
  // goes out on an otherwise quiet daemon). False: not charged.
  bool charge(const std::string& connection, uint64_t bytes);
  void release(const std::string& connection, uint64_t bytes);

  const uint64_t per_connection;  // bytes waiting, per connection
  const uint64_t overall;         // ...and for all together

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint64_t> waiting_;  // by connection (Call::peer())
  uint64_t total_ = 0;
};

// What every call of the service shares: where calls are awaited, how one is
// handled once its message has come, and its deadlines.
struct Listening {
  grpc::AsyncGenericService* service;
  grpc::ServerCompletionQueue* queue;
  // Completion-queue thread: the call's message has been read.
  std::function<void(const std::shared_ptr<Call>&)> handle;
  std::shared_ptr<CallRegister> calls;
  std::shared_ptr<ReplyBudget> replies;
  // From a call's headers to its message's last byte; from its reply handed
  // to gRPC to its last byte written (limits.frame_timeout_ms). Past either,
  // the call is cancelled and what it held is freed.
  std::chrono::milliseconds message_timeout;
  std::chrono::milliseconds reply_timeout;
};

class Call : public std::enable_shared_from_this<Call> {
 public:
  enum class Event { Arrived, MessageRead, MessageLate, Done, Finished, ReplyLate };
  // What a completion queue hands back: one event of a call, which it keeps
  // alive until the event is delivered (run_completion_queue()).
  struct Tag {
    std::shared_ptr<Call> call;
    Event event;
  };

  // Awaits the next call of any method.
  static void listen(const std::shared_ptr<const Listening>& listening);

  explicit Call(std::shared_ptr<const Listening> listening);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The method called, as gRPC names it: "/inference.GRPCInferenceService/ModelInfer".
  const std::string& method() const { return context_.method(); }
  // The request message, as it came (once Listening::handle has it).
  grpc::ByteBuffer& message() { return message_; }

  // Answers the call, with `reply` as the response message when `status` is
  // OK; any thread; later answers are ignored.
  void finish(const grpc::Status& status, grpc::ByteBuffer reply = {});
  void finish(hetero_status status, const std::string& message) { finish(to_grpc(status, message)); }
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  // The client gave up on it, its deadline passed or its connection went.
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  // gRPC's name for the client's connection: "fd:N" for one handed over
  // from the Unix socket, "ipv4:..." or "ipv6:..." over TCP.
  std::string peer() const { return context_.peer(); }
  // The client's deadline; time_point::max() when it set none.
  std::chrono::system_clock::time_point deadline() const { return context_.deadline(); }

  // Completion-queue thread.
  void on_event(Event event, bool ok);

 private:
  Tag* tag(Event event) { return new Tag{shared_from_this(), event}; }
  void arrived();
  // A deadline passed: says so and cancels the call.
  void late(const char* what, std::chrono::milliseconds timeout);

  const std::shared_ptr<const Listening> listening_;
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_{&context_};
  grpc::ByteBuffer message_;
  grpc::Alarm message_alarm_, reply_alarm_;
  Tag* done_tag_ = nullptr;  // ours until the call arrives
  std::atomic<bool> finished_{false}, cancelled_{false}, message_read_{false}, reply_written_{false};
  uint64_t reply_charged_ = 0;  // bytes charged to Listening::replies until the reply is written
};

// A call of a unary method with its request parsed and its response to
// fill: the view the service's handlers have of a Call.
template <typename Request, typename Response>
class UnaryCall {
 public:
  explicit UnaryCall(std::shared_ptr<Call> call) : call_(std::move(call)) {}

  Request request;
  Response response;  // sent when the call finishes OK

  // Answers the call: `response` when `status` is OK. Any thread.
  void finish(const grpc::Status& status) {
    if (!status.ok() || call_->finished()) return call_->finish(status);
    grpc::ByteBuffer bytes;
    bool own = false;
    const grpc::Status serialized = grpc::SerializationTraits<Response>::Serialize(response, &bytes, &own);
    Response().Swap(&response);  // its tensors' bytes are in `bytes` now
    call_->finish(serialized.ok() ? status : serialized, std::move(bytes));
  }
  void finish(hetero_status status, const std::string& message) { finish(to_grpc(status, message)); }
  bool finished() const noexcept { return call_->finished(); }
  bool cancelled() const noexcept { return call_->cancelled(); }
  std::string peer() const { return call_->peer(); }
  std::chrono::system_clock::time_point deadline() const { return call_->deadline(); }

 private:
  std::shared_ptr<Call> call_;
};

// Every call not answered yet, so that a stopping daemon can answer them:
// gRPC's shutdown waits for every call to end, and a call whose job a hard
// stop stranded would otherwise never end. Any thread.
class CallRegister {
 public:
  void add(const std::shared_ptr<Call>& call);
  void remove(const Call* call);
  // Answers every call still registered.
  void finish_all(const grpc::Status& status);

 private:
  std::mutex mutex_;
  std::unordered_map<const Call*, std::weak_ptr<Call>> calls_;
};

// Delivers the events of `queue` until it is shut down and drained.
void run_completion_queue(grpc::ServerCompletionQueue& queue);

}  // namespace hetero::daemon::kserve
