// Where the CPU driver runs its work: a few streams, each a thread with its
// own OpenMP team and its share of the cores, fed from one queue ordered by
// priority (core/priority.h).
//
// Why threads of our own. libgomp gives every thread that opens a parallel
// region a pool of helper threads of its own, and once the process holds
// more such threads than there are cores it stops spinning between regions
// and parks the helpers on futexes instead. A model runs a hundred or more
// parallel regions per inference, so every region then pays a wake-up:
// PP-OCR cls went from 0.4 ms to 3 ms when a compile on the caller's thread
// and an inference on a request's worker each kept a pool. All CPU compute
// (compile, import, inference) therefore runs on the streams, and
// streams × threads per stream never exceeds the cores the driver was given.
//
// Why streams. One stream with every core (the `latency` hint) gives one
// inference the whole processor; several (the `throughput` hint, or
// num_streams) run independent inferences side by side, which keeps small
// models from queueing behind big ones and wins throughput.
//
// Why priorities at node granularity. A oneDNN convolution cannot be
// interrupted, but an inference can let other work in between two nodes:
// the plan calls yield() there (drivers/cpu/plan.h, RunControl), and any job
// waiting with a higher priority than the running one runs then, on the same
// thread and OpenMP team, before the inference goes on. A realtime request so
// waits for about one node of a lower-priority model, not a whole inference.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/priority.h"

namespace hetero::cpu {

class Scheduler {
 public:
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler();

  // `streams` threads of `threads` OpenMP threads each; with `pin`, stream i
  // is bound to its own `threads` cores of those the process may use. Stream
  // threads start on first use and follow a later change: extra ones end
  // after their current job, missing ones start.
  void configure(int streams, int threads, bool pin);
  int streams() const;
  int threads_per_stream() const;

  // Runs `fn` on a stream, later; `fn` must not throw.
  void submit(core::Priority priority, std::function<void()> fn);
  // Runs `fn` on a stream and returns when it has finished, rethrowing what
  // it threw. On a stream thread (a completion callback starting another
  // inference synchronously), it runs at once.
  void run(core::Priority priority, const std::function<void()>& fn);
  // For the job running on this stream thread, at a point where it may
  // pause: runs every queued job of higher priority than `current` first.
  void yield(core::Priority current);

 private:
  void ensure_started_locked();
  void stream_loop(int index);
  // The first queued job of priority above `floor`; empty when none.
  std::function<void()> pop_above_locked(int floor);

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> queues_[core::kPriorityLevels];
  // Queued jobs per priority, read without the lock between nodes.
  std::atomic<int> queued_[core::kPriorityLevels] = {};
  int streams_ = 1, threads_ = 1;
  bool pin_ = false;
  std::vector<std::thread> threads_of_stream_;
  std::vector<bool> running_;  // whether stream i's thread is still in its loop
  bool stopping_ = false;
};

}  // namespace hetero::cpu
