// How long a worker thread that has just finished a job keeps looking for
// the next one before it sleeps.
//
// Why look at all. Waking a sleeping thread costs tens of microseconds, and
// on a virtual machine whose other vCPU has gone idle 50-100 (the vCPU must
// be woken first): as much as a small model's whole inference. A caller
// running inferences back to back, in process or through heterod, sends the
// next within one or two hundred microseconds of the last answer, and a
// thread still looking takes it at once.
//
// Why not always. A caller at a cadence (a VAD every 32 ms, a wake-word
// model every 80) sends the next long after, and a thread that looked would
// only burn its core for nothing after every inference. So the thread looks
// for twice the usual gap between finishing a job and taking the next,
// while that gap is short (at most kLongest), and not at all otherwise. It
// yields as it looks, so a thread with work on its core runs first.
//
// One per worker thread, used by that thread alone.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace hetero::core {

class JobSpin {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kLongest = std::chrono::microseconds(250);

  // After finished(): looks until `has_work()` or the time is up (the
  // caller then sleeps until there is work, as it would have).
  template <class HasWork>
  void look(HasWork&& has_work) const {
    const Clock::duration budget = typical_gap_ < kLongest ? std::min(2 * typical_gap_, kLongest) : Clock::duration{};
    const Clock::time_point until = finished_ + budget;
    while (Clock::now() < until && !has_work()) std::this_thread::yield();
  }
  // The thread took a job, after looking or sleeping: the gap since the
  // last one finished counts towards the usual gap.
  void took() {
    if (finished_ != Clock::time_point{}) typical_gap_ = (3 * typical_gap_ + (Clock::now() - finished_)) / 4;
  }
  void finished() { finished_ = Clock::now(); }

 private:
  Clock::time_point finished_{};
  Clock::duration typical_gap_ = kLongest / 2;
};

}  // namespace hetero::core
