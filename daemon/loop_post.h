// Hands work to the libuv loop thread from any other: inference callbacks on
// driver threads and the model loader post what must touch the loop's state
// (connections, the model registry, statistics), which only it touches.
#pragma once

#include <uv.h>

#include <functional>
#include <mutex>
#include <vector>

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
  static void on_wake(uv_async_t* handle);

  uv_async_t async_{};
  std::mutex mutex_;
  std::vector<std::function<void()>> tasks_;
  bool closed_ = false;
};

}  // namespace hetero::daemon
