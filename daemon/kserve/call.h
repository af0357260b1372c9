// One v2 call, from its arrival on a completion-queue thread to its answer
// from whichever thread has it (the loop thread, or a front end stopping),
// on gRPC's asynchronous API: no thread waits for an answer, and no thread
// hop separates reading a call from handling it (the callback API adds one).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "daemon/kserve/grpc_predict_v2.grpc.pb.h"
#include "hetero/hetero.h"

namespace hetero::daemon::kserve {

// The gRPC status for a heterod status, with heterod's message: BUSY is
// UNAVAILABLE, TIMEOUT DEADLINE_EXCEEDED, and so on (docs/kserve.md).
grpc::Status to_grpc(hetero_status status, const std::string& message);

class CallRegister;

class Call : public std::enable_shared_from_this<Call> {
 public:
  enum class Event { Arrived, Done, Finished };
  // What a completion queue hands back: one event of a call, which it keeps
  // alive until the event is delivered (run_completion_queue()).
  struct Tag {
    std::shared_ptr<Call> call;
    Event event;
  };

  explicit Call(std::shared_ptr<CallRegister> calls);
  virtual ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Answers the call; any thread; later answers are ignored.
  void finish(const grpc::Status& status);
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

 protected:
  // Asks gRPC for the next call of this call's method, arriving as `tag`.
  virtual void await(grpc::ServerCompletionQueue* queue, void* tag) = 0;
  // The call has arrived: a new one is awaited, and this one handled.
  virtual void arrived() = 0;
  virtual void send(const grpc::Status& status, void* tag) = 0;
  // Registers the Done event and awaits the call.
  void start(grpc::ServerCompletionQueue* queue);

  grpc::ServerContext context_;

 private:
  std::shared_ptr<CallRegister> calls_;
  Tag* done_tag_ = nullptr;  // ours until the call arrives
  std::atomic<bool> finished_{false}, cancelled_{false};
};

// The service as heterod registers it: every method asynchronous, and
// ModelInfer raw, its request handed over as the bytes that came, so that
// what it would parse into is bounded before it is parsed
// (protocol/decoded_size.h; Service::model_infer).
using AsyncService = inference::GRPCInferenceService::WithRawMethod_ModelInfer<
    inference::GRPCInferenceService::AsyncService>;

// A unary method of the service: how its calls are awaited and handled.
// `Raw`: the method is raw (AsyncService); its handler parses `request`
// from `wire_request`, and `response` is serialized when the call finishes.
template <typename Request, typename Response, bool Raw = false>
class UnaryCall final : public Call {
 public:
  using WireRequest = std::conditional_t<Raw, grpc::ByteBuffer, Request>;
  using WireResponse = std::conditional_t<Raw, grpc::ByteBuffer, Response>;
  using AwaitMethod = void (AsyncService::*)(grpc::ServerContext*, WireRequest*,
                                             grpc::ServerAsyncResponseWriter<WireResponse>*, grpc::CompletionQueue*,
                                             grpc::ServerCompletionQueue*, void*);
  using Handler = std::function<void(const std::shared_ptr<UnaryCall>&)>;
  struct Method {
    AsyncService* service;
    grpc::ServerCompletionQueue* queue;
    AwaitMethod await;
    Handler handle;
    std::shared_ptr<CallRegister> calls;
  };

  // Awaits the method's next call.
  static void listen(const std::shared_ptr<const Method>& method) {
    auto call = std::make_shared<UnaryCall>(method);
    call->start(method->queue);
  }

  explicit UnaryCall(std::shared_ptr<const Method> method) : Call(method->calls), method_(std::move(method)) {}

  Request request;
  Response response;  // sent when the call finishes OK
  grpc::ByteBuffer wire_request;  // Raw: the request as it came

 private:
  void await(grpc::ServerCompletionQueue* queue, void* tag) override {
    WireRequest* into = nullptr;
    if constexpr (Raw)
      into = &wire_request;
    else
      into = &request;
    (method_->service->*method_->await)(&context_, into, &responder_, queue, queue, tag);
  }
  void arrived() override {
    listen(method_);
    method_->handle(std::static_pointer_cast<UnaryCall>(shared_from_this()));
  }
  void send(const grpc::Status& status, void* tag) override {
    if (!status.ok()) return responder_.FinishWithError(status, tag);
    if constexpr (Raw) {
      grpc::ByteBuffer bytes;
      bool own = false;
      const grpc::Status serialized = grpc::SerializationTraits<Response>::Serialize(response, &bytes, &own);
      if (!serialized.ok()) return responder_.FinishWithError(serialized, tag);
      responder_.Finish(bytes, status, tag);
    } else {
      responder_.Finish(response, status, tag);
    }
  }

  std::shared_ptr<const Method> method_;
  grpc::ServerAsyncResponseWriter<WireResponse> responder_{&context_};
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
