#include "daemon/loop_post.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "daemon/uv_status.h"

namespace hetero::daemon {

LoopPost::LoopPost(uv_loop_t* loop) : wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!wake_fd_) fail(HETERO_INTERNAL, std::string("eventfd for the loop's wake-up: ") + strerror(errno));
  uv_check(uv_poll_init(loop, &poll_, wake_fd_.get()), "uv_poll_init for the loop's wake-up");
  poll_.data = this;
  uv_check(uv_poll_start(&poll_, UV_READABLE, &LoopPost::on_wake), "uv_poll_start for the loop's wake-up");
}

void LoopPost::post(std::function<void()> task) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    // One wake-up runs every task queued before the loop takes the batch.
    wake = tasks_.size() == 1 && !closed_;
  }
  // Outside the lock: a sender preempted in the write holds up nobody. The
  // counter cannot overflow (the loop reads it back to 0 before each batch),
  // so the write fails only for a descriptor that is gone, a bug that would
  // leave the task unrun: say so.
  const uint64_t one = 1;
  if (wake && write(wake_fd_.get(), &one, sizeof one) != sizeof one)
    core::log(core::LogLevel::Error, std::string("waking the loop thread: ") + strerror(errno));
}

void LoopPost::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), nullptr);
}

void LoopPost::on_wake(uv_poll_t* handle, int status, int /*events*/) {
  auto* self = static_cast<LoopPost*>(handle->data);
  if (status < 0) {
    core::log(core::LogLevel::Error, uv_failure("polling the loop's wake-up", status));
    return;
  }
  // Read the counter back to 0 before taking the batch: a task queued after
  // the read either is in the batch or writes again.
  uint64_t count = 0;
  while (read(self->wake_fd_.get(), &count, sizeof count) < 0 && errno == EINTR) {
  }
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
