// A thread that runs tasks one after another: the daemon compiles models on
// one so that its loop keeps answering while a model loads, and a daemon
// client runs async callbacks on one.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace hetero::core {

class WorkerThread {
 public:
  WorkerThread();
  // Finishes the running task, drops the queued ones and joins.
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  void post(std::function<void()> task);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace hetero::core
