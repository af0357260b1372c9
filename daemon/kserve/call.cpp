#include "daemon/kserve/call.h"

#include <vector>

#include "protocol/utf8.h"

namespace hetero::daemon::kserve {

grpc::Status to_grpc(hetero_status status, const std::string& message) {
  using grpc::StatusCode;
  StatusCode code = StatusCode::INTERNAL;
  switch (status) {
    case HETERO_OK: return grpc::Status::OK;
    case HETERO_INVALID_ARGUMENT:
    case HETERO_INVALID_MODEL:
    case HETERO_PROTOCOL_ERROR: code = StatusCode::INVALID_ARGUMENT; break;
    case HETERO_NOT_FOUND: code = StatusCode::NOT_FOUND; break;
    case HETERO_NOT_SUPPORTED: code = StatusCode::UNIMPLEMENTED; break;
    case HETERO_OUT_OF_MEMORY: code = StatusCode::RESOURCE_EXHAUSTED; break;
    case HETERO_BLOB_MISMATCH: code = StatusCode::FAILED_PRECONDITION; break;
    case HETERO_BLOB_CORRUPT: code = StatusCode::DATA_LOSS; break;
    case HETERO_BUSY:
    case HETERO_CONNECTION_ERROR: code = StatusCode::UNAVAILABLE; break;
    case HETERO_TIMEOUT: code = StatusCode::DEADLINE_EXCEEDED; break;
    case HETERO_PERMISSION_DENIED: code = StatusCode::PERMISSION_DENIED; break;
    case HETERO_IO_ERROR:
    case HETERO_DRIVER_ERROR:
    case HETERO_INTERNAL: code = StatusCode::INTERNAL; break;
    case HETERO_CANCELLED: code = StatusCode::CANCELLED; break;
  }
  return grpc::Status(code, wire::escape_invalid_utf8(message));
}

Call::Call(std::shared_ptr<CallRegister> calls) : calls_(std::move(calls)) {}

Call::~Call() { calls_->remove(this); }

void Call::start(grpc::ServerCompletionQueue* queue) {
  // Before the call is awaited, as gRPC requires; delivered once the call
  // has arrived and then ended, answered or cancelled.
  done_tag_ = new Tag{shared_from_this(), Event::Done};
  context_.AsyncNotifyWhenDone(done_tag_);
  await(queue, new Tag{shared_from_this(), Event::Arrived});
}

void Call::on_event(Event event, bool ok) {
  switch (event) {
    case Event::Arrived:
      if (!ok) {  // the server is shutting down: no call, and no Done event
        delete done_tag_;
        return;
      }
      done_tag_ = nullptr;
      calls_->add(shared_from_this());
      arrived();
      return;
    case Event::Done:
      // Only now may an asynchronous call ask IsCancelled().
      cancelled_.store(context_.IsCancelled(), std::memory_order_release);
      return;
    case Event::Finished:
      return;
  }
}

void Call::finish(const grpc::Status& status) {
  if (finished_.exchange(true, std::memory_order_acq_rel)) return;
  calls_->remove(this);
  send(status, new Tag{shared_from_this(), Event::Finished});
}

void CallRegister::add(const std::shared_ptr<Call>& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_[call.get()] = call;
}

void CallRegister::remove(const Call* call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.erase(call);
}

void CallRegister::finish_all(const grpc::Status& status) {
  std::vector<std::shared_ptr<Call>> open;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [ptr, weak] : calls_)
      if (auto call = weak.lock()) open.push_back(std::move(call));
  }
  for (auto& call : open) call->finish(status);
}

void run_completion_queue(grpc::ServerCompletionQueue& queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
    auto* t = static_cast<Call::Tag*>(tag);
    t->call->on_event(t->event, ok);
    delete t;
  }
}

}  // namespace hetero::daemon::kserve
