#include "drivers/cpu/scheduler.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <semaphore>

#include "core/job_spin.h"
#include "core/thread_slice.h"
#include "drivers/cpu/cpu_budget.h"
#include "drivers/cpu/team_width.h"

namespace hetero::cpu {

namespace {

// The scheduler whose stream this thread is, so that run() from a stream
// thread runs inline instead of waiting for itself.
thread_local const Scheduler* tls_stream_of = nullptr;
// The scheduler and priority of the job run() is running on this thread
// (yield_in_run).
thread_local Scheduler* tls_run_by = nullptr;
thread_local core::Priority tls_run_priority = core::Priority::Normal;

// While it lives, the calling thread runs a job of `by` at `priority`
// (yield_in_run); the thread's outer job, if any, comes back after.
class RunningJob {
 public:
  RunningJob(Scheduler* by, core::Priority priority) : outer_by_(tls_run_by), outer_priority_(tls_run_priority) {
    tls_run_by = by;
    tls_run_priority = priority;
  }
  ~RunningJob() {
    tls_run_by = outer_by_;
    tls_run_priority = outer_priority_;
  }
  RunningJob(const RunningJob&) = delete;
  RunningJob& operator=(const RunningJob&) = delete;

 private:
  Scheduler* const outer_by_;
  const core::Priority outer_priority_;
};

// Binds the calling thread, and so the OpenMP helpers it will start, to the
// `count` cores from the `first`-th of those the process may use.
void pin_to_cores(int first, int count) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && seen < first + count; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen >= first) CPU_SET(cpu, &mine);
    ++seen;
  }
  if (CPU_COUNT(&mine) > 0) pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
}

// Makes the calling thread and its OpenMP team `nice` nicer than `base` (the
// process's niceness): each team member sets its own,
// Linux's niceness being per thread. Nicer only, so no privilege is needed.
void renice_team(int base, int nice, int threads) {
  const int target = std::min(19, base + nice);
#pragma omp parallel num_threads(threads)
  setpriority(PRIO_PROCESS, 0, target);
}

// Puts the calling thread (the realtime lane) ahead of every other thread
// on the box that the system lets it pass: niceness `base` + `boost` (zero or
// less), and, with that weight, a time slice of 100 us, so that its wake-up
// preempts a stream at once (core/thread_slice.h says why both). Going below
// the process's niceness needs root, CAP_SYS_NICE or an RLIMIT_NICE that
// allows it (systemd's LimitNICE=); without, the lane keeps the process's
// niceness and its slice, and is only slower under load.
void boost_lane(int base, int boost) {
  if (boost >= 0 || setpriority(PRIO_PROCESS, 0, std::max(-20, base + boost)) != 0) return;
  core::request_time_slice(core::kShortSlice, core::SliceInherited::kNo);
}

}  // namespace

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  lane_cv_.notify_all();
  for (std::thread& t : threads_of_stream_)
    if (t.joinable()) t.join();
  if (lane_.joinable()) lane_.join();
}

void Scheduler::configure(int streams, int threads, bool pin, int stream_nice, int lane_nice) {
  {
    std::lock_guard lock(mutex_);
    streams_ = std::max(1, streams);
    threads_ = std::max(1, threads);
    pin_ = pin;
    stream_nice_ = stream_nice;
    lane_nice_ = lane_nice;
    if (!threads_of_stream_.empty()) ensure_started_locked();
  }
  work_cv_.notify_all();  // streams past the new count leave
}

int Scheduler::streams() const {
  std::lock_guard lock(mutex_);
  return streams_;
}

int Scheduler::threads_per_stream() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

// Started on first use: a driver that is loaded but never runs anything (a
// daemon serving only OpenCL models, `hetero devices`) costs no thread.
void Scheduler::ensure_started_locked() {
  if (threads_of_stream_.size() < static_cast<size_t>(streams_)) {
    threads_of_stream_.resize(streams_);
    running_.resize(streams_, false);
  }
  for (int i = 0; i < streams_; ++i) {
    if (running_[i]) continue;
    if (threads_of_stream_[i].joinable()) threads_of_stream_[i].join();  // left after a shrink
    running_[i] = true;
    threads_of_stream_[i] = std::thread([this, i] { stream_loop(i); });
  }
}

void Scheduler::submit(core::Priority priority, std::function<void()> fn) {
  const int level = static_cast<int>(priority);
  {
    std::lock_guard lock(mutex_);
    ensure_started_locked();
    if (priority == core::Priority::Realtime && !lane_.joinable()) {
      lane_ = std::thread([this] { lane_loop(); });
      streams_ceiling_.store(static_cast<int>(core::Priority::Normal), std::memory_order_relaxed);
    }
    queues_[level].push_back(std::move(fn));
    queued_[level].fetch_add(1, std::memory_order_relaxed);
  }
  if (priority == core::Priority::Realtime)
    lane_cv_.notify_one();
  else
    work_cv_.notify_one();
}

void Scheduler::run(core::Priority priority, const std::function<void()>& fn) {
  if (tls_stream_of == this) return fn();
  // Each caller waits on a semaphore of its own: with many callers, the end
  // of one job wakes only the thread that waits for it.
  std::binary_semaphore done(0);
  std::exception_ptr error;
  submit(priority, [&] {
    {
      const RunningJob job(this, priority);
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
    }
    done.release();
  });
  done.acquire();
  if (error) std::rethrow_exception(error);
}

// Why. Called at a cadence (a VAD 31 times a second), the stream thread and
// the caller sleep between calls, and run() wakes one and then the other:
// on a two-core virtual machine that took 0.3-0.4 ms, against 0.1 ms for
// Silero VAD's inference itself, and as much again in CPU time.
bool Scheduler::run_here(core::Priority priority, const std::function<void()>& fn) {
  if (priority == core::Priority::Realtime || tls_stream_of == this) return false;
  {
    std::lock_guard lock(mutex_);
    if (pin_ || busy_ >= streams_ || any_queued()) return false;
    ++busy_;
  }
  // Gives the stream's turn back, thrown through or not.
  struct Turn {
    Scheduler& scheduler;
    const Scheduler* const outer_stream = tls_stream_of;
    ~Turn() {
      tls_stream_of = outer_stream;
      bool queued;
      {
        std::lock_guard lock(scheduler.mutex_);
        --scheduler.busy_;
        queued = scheduler.any_queued();
      }
      // A job queued meanwhile takes the turn. With none, waking a stream
      // thread only to find nothing costs a thread wake-up per inference
      // (on a virtual machine, often a sleeping vCPU's).
      if (queued) scheduler.work_cv_.notify_one();
    }
  } turn{*this};
  tls_stream_of = this;  // a synchronous run inside it runs at once, as on a stream
  const RunningJob job(this, priority);
  fn();
  return true;
}

std::function<void()> Scheduler::pop_above_locked(int floor, int ceiling) {
  for (int level = ceiling; level > floor; --level) {
    if (queues_[level].empty()) continue;
    std::function<void()> fn = std::move(queues_[level].front());
    queues_[level].pop_front();
    queued_[level].fetch_sub(1, std::memory_order_relaxed);
    return fn;
  }
  return {};
}

void Scheduler::yield(core::Priority current) {
  const int floor = static_cast<int>(current);
  for (;;) {
    const int ceiling = streams_ceiling_.load(std::memory_order_relaxed);
    bool waiting = false;
    for (int level = floor + 1; level <= ceiling; ++level)
      waiting = waiting || queued_[level].load(std::memory_order_relaxed) > 0;
    if (!waiting) return;
    std::function<void()> fn;
    {
      std::lock_guard lock(mutex_);
      fn = pop_above_locked(floor, ceiling);
    }
    if (!fn) return;
    // The job sets its own OpenMP thread count; the paused one's comes back.
    const int threads = omp_get_max_threads();
    fn();
    omp_set_num_threads(threads);
  }
}

void Scheduler::yield_in_run() {
  if (tls_run_by) tls_run_by->yield(tls_run_priority);
}

bool Scheduler::any_queued() const {
  for (const auto& q : queued_)
    if (q.load(std::memory_order_relaxed) > 0) return true;
  return false;
}

void Scheduler::lane_loop() {
  tls_stream_of = this;
  constexpr int kRealtime = static_cast<int>(core::Priority::Realtime);
  std::unique_lock lock(mutex_);
  boost_lane(base_nice_, lane_nice_);
  for (;;) {
    std::function<void()> fn;
    lane_cv_.wait(lock, [&] {
      fn = pop_above_locked(kRealtime - 1, kRealtime);
      return fn || stopping_;
    });
    if (!fn) return;
    lock.unlock();
    fn();
    fn = nullptr;
    lock.lock();
  }
}

void Scheduler::stream_loop(int index) {
  tls_stream_of = this;
  // The width of this stream's OpenMP team while the box is shared.
  TeamWidth team(usable_cpus());
  TeamWidth::set_current(&team);
  // A thread starts with its creator's niceness, and the thread that starts
  // a stream may run less nice than the process (the caller's own choice):
  // the stream counts from the process's.
  if (getpriority(PRIO_PROCESS, 0) < base_nice_) setpriority(PRIO_PROCESS, 0, base_nice_);
  // A job's hand-over wakes the stream, and a region wakes its team: both
  // should run at once, not after a busy process's slice. The team's threads,
  // started by this one, take the slice too (core/thread_slice.h).
  core::request_time_slice(core::kShortSlice, core::SliceInherited::kYes);
  int applied_nice = 0;
  std::unique_lock lock(mutex_);
  if (pin_) pin_to_cores(index * threads_, threads_);
  // A stream that just finished looks for work a little before it sleeps,
  // while its callers send the next job soon after (core/job_spin.h).
  core::JobSpin spin;
  for (;;) {
    std::function<void()> fn;
    if (!any_queued()) {
      lock.unlock();
      spin.look([&] { return any_queued(); });
      lock.lock();
    }
    work_cv_.wait(lock, [&] {
      if (index >= streams_ && !stopping_) return true;  // no longer wanted
      // A caller running a job itself (run_here) has taken a stream's turn.
      if (busy_ >= streams_ && !stopping_) return false;
      fn = pop_above_locked(-1, streams_ceiling_.load(std::memory_order_relaxed));
      return fn || stopping_;
    });
    if (!fn) break;  // not wanted, or stopping with the queue drained
    ++busy_;
    // Once there is a realtime lane, the stream and its team step back.
    const int nice = lane_.joinable() ? stream_nice_ : 0;
    const int threads = threads_;
    lock.unlock();
    if (nice > applied_nice) {
      renice_team(base_nice_, nice, threads);
      applied_nice = nice;
    }
    spin.took();
    fn();
    fn = nullptr;  // the job's captures go before the next wait
    spin.finished();
    lock.lock();
    --busy_;
  }
  running_[index] = false;
}

}  // namespace hetero::cpu
