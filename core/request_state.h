// The life of one infer request, and the rules that come with it, written
// once: every driver's requests keep theirs here (core/infer_request.cpp),
// and so do libhetero's requests served by heterod (capi/remote/).
//
//        begin()             start()              complete()            the callback returned
//   idle ───────► queued ───────────► running ───────────► completing ──────────────────────► idle
//                   │                   │                       ▲
//                   └── cancel() ──► cancelling ── complete() ──┘
//
// - An inference begins from idle only: BUSY while one is queued, running,
//   being cancelled, or from the request's own completion callback (which
//   would wait for itself). From another thread while a callback runs,
//   begin() waits for the callback to return: its thread is about to let go.
// - Inputs may be bound and outputs read whenever no inference is queued or
//   running: from the completion callback too. Outputs are the last finished
//   inference's; after a failed one there are none.
// - cancel() asks a queued or running inference to stop. It still
//   completes, with CANCELLED unless it finished first.
// - wait() returns once idle, the callback included, with the last
//   inference's failure; from the request's own callback it is BUSY.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>

#include "core/error.h"

namespace hetero::core {

class RequestState {
 public:
  enum class Phase { Idle, Queued, Running, Cancelling, Completing };

  // Starts an inference: checks the phase, then runs `take` (which snapshots
  // the inputs and may fail, leaving the request as it was) under the
  // state's lock, and moves to queued. Returns what `take` returned.
  template <class Take>
  auto begin(Take&& take) {
    std::unique_lock lock(mutex_);
    refuse_in_own_callback();
    cv_.wait(lock, [&] { return phase_ != Phase::Completing; });
    if (phase_ != Phase::Idle) fail(HETERO_BUSY, "an inference is already running on this request");
    auto taken = take();
    phase_ = Phase::Queued;
    return taken;
  }

  // Queued to running, when the inference starts (again: true while
  // running); false once cancelled, when the caller completes it CANCELLED
  // rather than run it.
  bool start();

  // Runs `bind` under the state's lock if inputs may be bound now.
  template <class Bind>
  void bind(Bind&& bind) {
    std::lock_guard lock(mutex_);
    if (busy_running())
      fail(HETERO_BUSY, "an inference is running on this request; wait for it before binding inputs");
    bind();
  }

  // Runs `read` under the state's lock if the last inference's outputs may
  // be read now.
  template <class Read>
  auto read_outputs(Read&& read) const {
    std::lock_guard lock(mutex_);
    if (busy_running()) fail(HETERO_BUSY, "an inference is running on this request; wait for it before reading outputs");
    if (last_ == Last::None) fail(HETERO_INVALID_ARGUMENT, "no inference has finished on this request yet");
    if (last_ == Last::Failed) fail(HETERO_INVALID_ARGUMENT, "the last inference on this request failed; it has no outputs");
    return read();
  }

  // Runs `ask` (which tells the inference to stop) under the state's lock if
  // an inference is queued or running, so it cannot reach the next one.
  template <class Ask>
  void cancel(Ask&& ask) {
    std::lock_guard lock(mutex_);
    if (phase_ != Phase::Queued && phase_ != Phase::Running) return;
    phase_ = Phase::Cancelling;
    ask();
  }

  // Ends the inference: `record` (which keeps its outputs) runs under the
  // state's lock, then `callback` with `error`, marked as this request's
  // callback on its thread, then the request is idle and waiters wake.
  void complete(std::exception_ptr error, const std::function<void()>& record,
                const std::function<void(std::exception_ptr)>& callback);

  // Blocks until idle; returns the last inference's failure (null when it
  // succeeded or none ran). BUSY from the request's own callback.
  std::exception_ptr wait();
  // Blocks until idle, without the callback check: the request's end.
  void wait_idle();

  // BUSY while an inference is queued, running or completing.
  void check_idle(const char* why) const;

 private:
  enum class Last { None, Finished, Failed };  // the last inference that completed

  bool busy_running() const {
    return phase_ == Phase::Queued || phase_ == Phase::Running || phase_ == Phase::Cancelling;
  }
  void refuse_in_own_callback() const;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Phase phase_ = Phase::Idle;
  Last last_ = Last::None;
  std::exception_ptr last_error_;
};

}  // namespace hetero::core
