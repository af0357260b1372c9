// Hands work to the libuv loop thread from any other: inference callbacks on
// driver threads and the model loader post what must touch the loop's state
// (connections, the model registry, statistics), which only it touches.
//
// Why an eventfd of its own and not uv_async_t. libuv 1.44's uv_async_send
// marks the handle busy, writes its eventfd, then marks it done; the loop
// thread, woken by that write, spins (sched_yield between rounds) until the
// sender has marked it done. The woken loop thread usually preempts the
// sender on the sender's own core, so the two took turns for milliseconds:
// half the loop thread's time under load, and the realtime model's requests
// waiting behind it. Here the sender only writes; the loop reads and runs.
#pragma once

#include <uv.h>

#include <functional>
#include <mutex>
#include <vector>

#include "protocol/unique_fd.h"

namespace hetero::daemon {

class LoopPost {
 public:
  explicit LoopPost(uv_loop_t* loop);
  LoopPost(const LoopPost&) = delete;
  LoopPost& operator=(const LoopPost&) = delete;

  // Any thread. Tasks run on the loop thread in the order posted. After
  // close(), tasks are kept, never run, and destroyed with the LoopPost.
  void post(std::function<void()> task);
  // Loop thread: stops waking the loop; the handle is closed on its next turn.
  // Closing again does nothing.
  void close();

 private:
  static void on_wake(uv_poll_t* handle, int status, int events);

  wire::UniqueFd wake_fd_;  // an eventfd: written when the first task is queued
  uv_poll_t poll_{};
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  bool closed_ = false;
};

}  // namespace hetero::daemon
