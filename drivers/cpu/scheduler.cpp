#include "drivers/cpu/scheduler.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <exception>
#include <semaphore>

namespace hetero::cpu {

namespace {

// The scheduler whose stream this thread is, so that run() from a stream
// thread runs inline instead of waiting for itself.
thread_local const Scheduler* tls_stream_of = nullptr;

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

}  // namespace

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_of_stream_)
    if (t.joinable()) t.join();
}

void Scheduler::configure(int streams, int threads, bool pin) {
  {
    std::lock_guard lock(mutex_);
    streams_ = std::max(1, streams);
    threads_ = std::max(1, threads);
    pin_ = pin;
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
    queues_[level].push_back(std::move(fn));
    queued_[level].fetch_add(1, std::memory_order_relaxed);
  }
  work_cv_.notify_one();
}

void Scheduler::run(core::Priority priority, const std::function<void()>& fn) {
  if (tls_stream_of == this) return fn();
  // Each caller waits on a semaphore of its own: with many callers, the end
  // of one job wakes only the thread that waits for it.
  std::binary_semaphore done(0);
  std::exception_ptr error;
  submit(priority, [&] {
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    done.release();
  });
  done.acquire();
  if (error) std::rethrow_exception(error);
}

std::function<void()> Scheduler::pop_above_locked(int floor) {
  for (int level = core::kPriorityLevels - 1; level > floor; --level) {
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
    bool waiting = false;
    for (int level = floor + 1; level < core::kPriorityLevels; ++level)
      waiting = waiting || queued_[level].load(std::memory_order_relaxed) > 0;
    if (!waiting) return;
    std::function<void()> fn;
    {
      std::lock_guard lock(mutex_);
      fn = pop_above_locked(floor);
    }
    if (!fn) return;
    // The job sets its own OpenMP thread count; the paused one's comes back.
    const int threads = omp_get_max_threads();
    fn();
    omp_set_num_threads(threads);
  }
}

void Scheduler::stream_loop(int index) {
  tls_stream_of = this;
  std::unique_lock lock(mutex_);
  if (pin_) pin_to_cores(index * threads_, threads_);
  for (;;) {
    std::function<void()> fn;
    work_cv_.wait(lock, [&] {
      if (index >= streams_ && !stopping_) return true;  // no longer wanted
      fn = pop_above_locked(-1);
      return fn || stopping_;
    });
    if (!fn) break;  // not wanted, or stopping with the queue drained
    lock.unlock();
    fn();
    fn = nullptr;  // the job's captures go before the next wait
    lock.lock();
  }
  running_[index] = false;
}

}  // namespace hetero::cpu
