#include "daemon/loop_post.h"

#include "core/error.h"

namespace hetero::daemon {

LoopPost::LoopPost(uv_loop_t* loop) {
  if (uv_async_init(loop, &async_, &LoopPost::on_wake) != 0) fail(HETERO_INTERNAL, "uv_async_init failed");
  async_.data = this;
}

void LoopPost::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  // uv_async_send coalesces: one wake-up runs every task posted before it.
  if (!closed_) uv_async_send(&async_);
}

void LoopPost::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

void LoopPost::on_wake(uv_async_t* handle) {
  auto* self = static_cast<LoopPost*>(handle->data);
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    batch.swap(self->tasks_);
  }
  for (auto& task : batch) task();
}

}  // namespace hetero::daemon
