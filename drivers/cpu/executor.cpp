#include "drivers/cpu/executor.h"

namespace hetero::cpu {

Executor::~Executor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Executor::run(const std::function<void()>& fn) {
  std::unique_lock lock(mutex_);
  if (thread_.joinable() && std::this_thread::get_id() == thread_.get_id()) {
    lock.unlock();
    fn();
    return;
  }
  // Started on first use: a driver that is loaded but never compiles (a
  // daemon serving only OpenCL models, `hetero devices`) costs no thread.
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  Job job{&fn, nullptr};
  queue_.push_back(&job);
  work_cv_.notify_one();
  done_cv_.wait(lock, [&] { return job.done; });
  if (job.error) std::rethrow_exception(job.error);
}

void Executor::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left to run
    Job* job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    try {
      (*job->fn)();
    } catch (...) {
      job->error = std::current_exception();
    }
    lock.lock();
    job->done = true;
    done_cv_.notify_all();
  }
}

}  // namespace hetero::cpu
