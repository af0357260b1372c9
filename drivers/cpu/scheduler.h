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
// that runs OpenMP (inference, and a compile's or import's plan) therefore
// runs on the streams, and streams × threads per stream never exceeds the
// cores the driver was given. (A compile's graph work runs no OpenMP and
// stays on the caller's thread: drivers/cpu/cpu_compile.h.)
//
// Why streams. One stream with every core (the `latency` hint) gives one
// inference the whole processor; several (the `throughput` hint, or
// num_streams) run independent inferences side by side, which keeps small
// models from queueing behind big ones and wins throughput.
//
// Why priorities at node granularity. A oneDNN convolution cannot be
// interrupted, but an inference can let other work in between two nodes
// (and between two blocks of a long node, drivers/cpu/checkpoint_blocks.h):
// the plan calls yield() there (drivers/cpu/plan.h, RunControl), and any job
// waiting with a higher priority than the running one runs then, on the same
// thread and OpenMP team, before the inference goes on. A realtime request so
// waits for about one node of a lower-priority model, not a whole inference.
//
// Why a realtime lane. One node of a big model (a convolution of PP-OCR det)
// takes milliseconds, longer than a whole wake-word inference. So realtime
// work has a thread of its own besides the streams, started when the first
// realtime job comes: it takes realtime jobs as soon as they are queued,
// while the streams go on with theirs, and the system's scheduler shares the
// cores between them for the millisecond it takes (stream_nice lets it hand
// the lane a core at once). Realtime models are compiled for one thread
// (CpuDriver::threads), so the lane owns no OpenMP team and the cores are
// oversubscribed by at most that one thread, only while realtime work runs.
// Once the lane is there, realtime jobs are its alone: a stream that ran one
// at a node boundary would run it at the stream's niceness, with the
// stream's idle OpenMP team around it.
#pragma once

#include <sys/resource.h>

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
  // Once realtime work has come, the streams' threads run `stream_nice`
  // nicer than the process, so that the system hands the lane a core at once,
  // and the lane runs `lane_nice` (zero or less) less nice than the process
  // where the system allows it, so that other processes' threads do not take
  // its core in the middle of an inference either.
  void configure(int streams, int threads, bool pin, int stream_nice, int lane_nice);
  int streams() const;
  int threads_per_stream() const;

  // Runs `fn` on a stream, later; `fn` must not throw.
  void submit(core::Priority priority, std::function<void()> fn);
  // Runs `fn` on a stream and returns when it has finished, rethrowing what
  // it threw. On a stream thread (a completion callback starting another
  // inference synchronously), it runs at once.
  void run(core::Priority priority, const std::function<void()>& fn);
  // Runs `fn` on the calling thread, as a stream would, when a stream is
  // idle and nothing waits (the caller takes that stream's turn: the
  // streams run one job fewer meanwhile); false, having done nothing,
  // otherwise, and for realtime work (the lane's) and pinned streams. For a
  // job with no OpenMP team of its own (one thread wide): waking a stream
  // thread and then the caller again cost a small model called a few dozen
  // times a second more than its inference (scheduler.cpp).
  bool run_here(core::Priority priority, const std::function<void()>& fn);
  // For the job running on this stream thread, at a point where it may
  // pause: runs every queued job of higher priority than `current` first.
  void yield(core::Priority current);
  // The same for a job that run() is running on this thread, at the priority
  // run() was given: for work with no RunControl of its own (a compile's
  // plan, drivers/cpu/plan.cpp). Nothing on any other thread.
  static void yield_in_run();

 private:
  void ensure_started_locked();
  void stream_loop(int index);
  void lane_loop();
  bool any_queued() const;
  // The first queued job of the highest priority above `floor`, up to
  // `ceiling`; empty when none.
  std::function<void()> pop_above_locked(int floor, int ceiling);

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  // the streams wait here
  std::condition_variable lane_cv_;  // the realtime lane, here
  std::deque<std::function<void()>> queues_[core::kPriorityLevels];
  // Queued jobs per priority, read without the lock between nodes.
  std::atomic<int> queued_[core::kPriorityLevels] = {};
  int streams_ = 1, threads_ = 1;
  int busy_ = 0;  // jobs running: on stream threads, and here (run_here)
  bool pin_ = false;
  int stream_nice_ = 0;
  int lane_nice_ = 0;
  // The niceness of the thread that made the scheduler, which the streams
  // and the lane count from: a thread inherits its creator's, and the lane
  // may be started from a stream that has stepped back.
  const int base_nice_ = getpriority(PRIO_PROCESS, 0);
  std::vector<std::thread> threads_of_stream_;
  std::vector<bool> running_;  // whether stream i's thread is still in its loop
  std::thread lane_;           // realtime jobs only; started by the first
  // The highest priority the streams take: realtime until the lane starts,
  // then normal (realtime jobs are the lane's alone).
  std::atomic<int> streams_ceiling_{static_cast<int>(core::Priority::Realtime)};
  bool stopping_ = false;
};

}  // namespace hetero::cpu
