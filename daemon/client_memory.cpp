#include "daemon/client_memory.h"

#include <algorithm>

#include "daemon/served_model.h"

namespace hetero::daemon {

void ClientMemory::join(const std::shared_ptr<ServedModel>& model) {
  std::erase_if(models_, [](const std::weak_ptr<ServedModel>& m) { return m.expired(); });
  models_.push_back(model);
}

bool ClientMemory::try_charge(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (charged_ != 0 && charged_ + bytes > budget_) return false;
  charged_ += bytes;
  return true;
}

bool ClientMemory::charge(uint64_t bytes) {
  if (try_charge(bytes)) return true;
  // Buffers kept by idle requests are the first to go: a request that is
  // not running gives them back at once instead of after its idle second.
  for (const auto& weak : models_)
    if (auto model = weak.lock()) model->release_idle_memory();
  return try_charge(bytes);
}

void ClientMemory::uncharge(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    charged_ -= std::min(bytes, charged_);
  }
  wake_soon();
}

void ClientMemory::wake_soon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wake_posted_) return;
    wake_posted_ = true;
  }
  // Posted, not called: this may run inside a model's own pump, or off the
  // loop thread (a model destroyed elsewhere).
  loop_->post([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->wake();
  });
}

void ClientMemory::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_posted_ = false;
  }
  for (const auto& weak : models_)
    if (auto model = weak.lock()) model->resume();
}

}  // namespace hetero::daemon
