#include "daemon/kserve/call.h"

#include <new>
#include <vector>

#include "core/log.h"

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

bool ReplyBudget::charge(const std::string& connection, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t& waiting = waiting_[connection];
  const bool fits = waiting + bytes <= per_connection && total_ + bytes <= overall;
  if (!fits && total_ > 0) {
    if (waiting == 0) waiting_.erase(connection);
    return false;
  }
  waiting += bytes;
  total_ += bytes;
  return true;
}

void ReplyBudget::release(const std::string& connection, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = waiting_.find(connection);
  if (it == waiting_.end()) return;
  it->second -= bytes;
  total_ -= bytes;
  if (it->second == 0) waiting_.erase(it);
}

void Call::listen(const std::shared_ptr<const Listening>& listening) {
  auto call = std::make_shared<Call>(listening);
  // Before the call is awaited, as gRPC requires; delivered once the call
  // has arrived and then ended, answered or cancelled.
  call->done_tag_ = call->tag(Event::Done);
  call->context_.AsyncNotifyWhenDone(call->done_tag_);
  listening->service->RequestCall(&call->context_, &call->stream_, listening->queue, listening->queue,
                                  call->tag(Event::Arrived));
}

Call::Call(std::shared_ptr<const Listening> listening) : listening_(std::move(listening)) {}

Call::~Call() { listening_->calls->remove(this); }

void Call::arrived() {
  done_tag_ = nullptr;
  listening_->calls->add(shared_from_this());
  listen(listening_);
  // The alarm first: its tag may be delivered before Read() returns.
  message_alarm_.Set(listening_->queue, std::chrono::system_clock::now() + listening_->message_timeout,
                     tag(Event::MessageLate));
  stream_.Read(&message_, tag(Event::MessageRead));
}

void Call::late(const char* what, std::chrono::milliseconds timeout) {
  core::log(core::LogLevel::Warning, "v2: client " + peer() + ": " + what + " within " +
                                         std::to_string(timeout.count()) +
                                         " ms (limits.frame_timeout_ms); cancelling its call to " + method());
  context_.TryCancel();
}

void Call::on_event(Event event, bool ok) {
  switch (event) {
    case Event::Arrived:
      if (!ok) {  // the server is shutting down: no call, and no Done event
        delete done_tag_;
        return;
      }
      return arrived();
    case Event::MessageRead:
      message_read_.store(true, std::memory_order_release);
      message_alarm_.Cancel();
      // No message: the client ended its side without one, or the call is
      // gone (cancelled, timed out, its connection closed).
      if (!ok) return finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call carried no request message"));
      return listening_->handle(shared_from_this());
    case Event::MessageLate:
      // ok: the alarm went off rather than being cancelled.
      if (ok && !message_read_.load(std::memory_order_acquire))
        late("its request message did not arrive whole", listening_->message_timeout);
      return;
    case Event::Done:
      // Only now may an asynchronous call ask IsCancelled().
      cancelled_.store(context_.IsCancelled(), std::memory_order_release);
      return;
    case Event::Finished:
      reply_written_.store(true, std::memory_order_release);
      reply_alarm_.Cancel();
      if (reply_charged_) listening_->replies->release(peer(), reply_charged_);
      return;
    case Event::ReplyLate:
      if (ok && !reply_written_.load(std::memory_order_acquire))
        late("its reply was not read", listening_->reply_timeout);
      return;
  }
}

void Call::finish(const grpc::Status& status, grpc::ByteBuffer reply) {
  if (finished_.exchange(true, std::memory_order_acq_rel)) return;
  listening_->calls->remove(this);
  // The alarm first: the Finished event may come before the write returns.
  reply_alarm_.Set(listening_->queue, std::chrono::system_clock::now() + listening_->reply_timeout,
                   tag(Event::ReplyLate));
  if (!status.ok()) return stream_.Finish(status, tag(Event::Finished));
  const uint64_t bytes = reply.Length();
  if (!listening_->replies->charge(peer(), bytes))
    return stream_.Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "the reply (" + std::to_string(bytes) + " bytes) does not fit among the replies not yet read: " +
                         std::to_string(listening_->replies->per_connection) + " bytes per connection, " +
                         std::to_string(listening_->replies->overall) +
                         " for all (limits.max_reply_bytes_queued); read the replies asked for"),
        tag(Event::Finished));
  reply_charged_ = bytes;
  stream_.WriteAndFinish(reply, grpc::WriteOptions(), status, tag(Event::Finished));
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
    // What a call's handling throws ends that call, not the daemon: out of
    // memory, the client is told so (RESOURCE_EXHAUSTED).
    try {
      t->call->on_event(t->event, ok);
    } catch (const std::bad_alloc&) {
      t->call->finish(HETERO_OUT_OF_MEMORY, "heterod is out of memory for this call");
    } catch (const std::exception& e) {
      core::log(core::LogLevel::Error, std::string("v2: ") + e.what());
      t->call->finish(HETERO_INTERNAL, e.what());
    }
    delete t;
  }
}

}  // namespace hetero::daemon::kserve
