#include "core/request_state.h"

#include <string>
#include <utility>

namespace hetero::core {

namespace {

// The request whose completion callback this thread is running, if any (a
// HETERO stage's callback may run inside another request's).
thread_local const RequestState* tl_in_callback = nullptr;

}  // namespace

void RequestState::refuse_in_own_callback() const {
  if (tl_in_callback == this)
    fail(HETERO_BUSY, "this request's own completion callback may not start, wait on or release it (it would wait "
                      "for itself); hand the request to another thread for that");
}

bool RequestState::start() {
  std::lock_guard lock(mutex_);
  if (phase_ == Phase::Queued) phase_ = Phase::Running;
  return phase_ == Phase::Running;
}

void RequestState::complete(std::exception_ptr error, const std::function<void()>& record,
                            const std::function<void(std::exception_ptr)>& callback) {
  {
    std::lock_guard lock(mutex_);
    if (record) record();
    phase_ = Phase::Completing;
    last_ = error ? Last::Failed : Last::Finished;
    last_error_ = error;
  }
  if (callback) {
    const RequestState* outer = std::exchange(tl_in_callback, this);
    try {
      callback(error);
    } catch (...) {
      // A callback's own failure has nowhere to go; never let it end the
      // thread that ran the inference.
    }
    tl_in_callback = outer;
  }
  std::lock_guard lock(mutex_);
  phase_ = Phase::Idle;
  cv_.notify_all();
}

std::exception_ptr RequestState::wait() {
  std::unique_lock lock(mutex_);
  refuse_in_own_callback();
  cv_.wait(lock, [&] { return phase_ == Phase::Idle; });
  return last_error_;
}

void RequestState::wait_idle() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return phase_ == Phase::Idle; });
}

void RequestState::check_idle(const char* why) const {
  std::lock_guard lock(mutex_);
  if (phase_ != Phase::Idle) fail(HETERO_BUSY, std::string("an inference is running on this request; ") + why);
}

}  // namespace hetero::core
