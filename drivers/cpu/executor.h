// The one thread on which the CPU driver runs all of its OpenMP work.
//
// libgomp gives every thread that opens a parallel region a pool of helper
// threads of its own, and once the process holds more such threads than there
// are cores it stops spinning between regions and parks the helpers on futexes
// instead. A model runs a hundred or more parallel regions per inference, so
// every region then pays a wake-up: PP-OCR cls went from 0.4 ms to 3 ms when a
// compile on the caller's thread and an inference on a request's worker thread
// each kept a pool. Funnelling compile, import and infer through this thread
// keeps one pool of num_threads - 1 helpers, whoever calls.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hetero::cpu {

class Executor {
 public:
  Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  ~Executor();

  // Runs `fn` on the executor thread and returns when it has finished,
  // rethrowing what it threw. Calls from several threads run one at a time, in
  // arrival order; a call from the executor thread itself runs at once.
  void run(const std::function<void()>& fn);

 private:
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
    bool done = false;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> queue_;
  std::thread thread_;
  bool stopping_ = false;
};

}  // namespace hetero::cpu
