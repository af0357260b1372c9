// One v2 call under way, from its handler (a gRPC thread) to its answer
// (the loop thread, a driver thread, or the daemon stopping), and the
// register of those not answered yet.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "hetero/hetero.h"

namespace hetero::daemon::kserve {

// The gRPC status for a heterod status, with heterod's message: BUSY is
// UNAVAILABLE, TIMEOUT DEADLINE_EXCEEDED, and so on (docs/kserve.md).
grpc::Status to_grpc(hetero_status status, const std::string& message);

class CallRegister;

class Call {
 public:
  Call(grpc::CallbackServerContext* context, std::shared_ptr<CallRegister> calls);
  // A call dropped unanswered (its task never ran: the daemon is stopping)
  // is answered UNAVAILABLE.
  virtual ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Answers the call; any thread; later answers are ignored.
  void finish(const grpc::Status& status);
  void finish(hetero_status status, const std::string& message) { finish(to_grpc(status, message)); }
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  // The client gave up on it, or its deadline passed.
  bool cancelled() const { return context_->IsCancelled(); }
  // The client's deadline; time_point::max() when it set none.
  std::chrono::system_clock::time_point deadline() const { return context_->deadline(); }
  // What the handler returns to gRPC.
  grpc::ServerUnaryReactor* reactor() const noexcept { return reactor_; }

 private:
  grpc::CallbackServerContext* context_;
  grpc::ServerUnaryReactor* reactor_;
  std::shared_ptr<CallRegister> calls_;
  std::atomic<bool> finished_{false};
};

// Every call not answered yet, so that the daemon's teardown can answer
// them: gRPC's shutdown waits for every call to end, and a call whose job
// was stranded by a hard stop would otherwise never end. Any thread.
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

// A new call of type T (a Call), registered.
template <typename T, typename... Args>
std::shared_ptr<T> start_call(const std::shared_ptr<CallRegister>& calls, grpc::CallbackServerContext* context,
                              Args&&... args) {
  auto call = std::make_shared<T>(context, calls, std::forward<Args>(args)...);
  calls->add(call);
  return call;
}

}  // namespace hetero::daemon::kserve
