#include "daemon/loop_post.h"

#include "core/error.h"
#include "core/log.h"
#include "daemon/uv_status.h"

namespace hetero::daemon {

LoopPost::LoopPost(uv_loop_t* loop) {
  uv_check(uv_async_init(loop, &async_, &LoopPost::on_wake), "uv_async_init");
  async_.data = this;
}

void LoopPost::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  // uv_async_send coalesces: one wake-up runs every task posted before it.
  // It fails only for a handle that is not an open async one, a bug that
  // would leave the task unrun: say so.
  if (!closed_) uv_ok(uv_async_send(&async_), "uv_async_send", core::LogLevel::Error);
}

void LoopPost::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
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
  // A task that fails (memory running out) is logged; the loop goes on.
  for (auto& task : batch) {
    try {
      task();
    } catch (const std::exception& e) {
      core::log(core::LogLevel::Error, std::string("a task on the loop thread failed: ") + e.what());
    }
  }
}

}  // namespace hetero::daemon
