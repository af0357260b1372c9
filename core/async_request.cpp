#include "core/async_request.h"

#include "core/error.h"

namespace hetero::core {

AsyncInferRequest::~AsyncInferRequest() { stop_worker(); }

void AsyncInferRequest::stop_worker() {
  {
    std::unique_lock lock(mutex_);
    if (!worker_.joinable()) return;
    cv_.wait(lock, [&] { return !busy_; });
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void AsyncInferRequest::start_async(std::function<void(std::exception_ptr)> done) {
  std::unique_lock lock(mutex_);
  if (busy_) fail(HETERO_BUSY, "an inference is already running on this request");
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  pending_ = std::move(done);
  busy_ = true;
  lock.unlock();
  cv_.notify_all();
}

void AsyncInferRequest::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !busy_; });
}

void AsyncInferRequest::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || (busy_ && pending_); });
    if (stopping_) return;
    auto done = std::move(pending_);
    pending_ = nullptr;
    lock.unlock();
    std::exception_ptr error;
    try {
      infer();
    } catch (...) {
      error = std::current_exception();
    }
    // The callback runs before waiters wake, so that wait() returning means
    // the callback has finished too.
    if (done) {
      try {
        done(error);
      } catch (...) {
        // A callback's own failure has nowhere to go; never let it kill us.
      }
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace hetero::core
