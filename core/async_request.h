// Default asynchronous inference for drivers whose devices have no queue of
// their own: start_async() hands infer() to a worker thread owned by the
// request, so requests run in parallel with each other and with the caller.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/driver.h"

namespace hetero::core {

class AsyncInferRequest : public driver::InferRequest {
 public:
  ~AsyncInferRequest() override;
  void start_async(std::function<void(std::exception_ptr)> done) override;
  void wait() override;

 protected:
  // Derived destructors call this first, so that no inference is still
  // running on members they are about to destroy.
  void stop_worker();

 private:
  void worker_loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread worker_;
  std::function<void(std::exception_ptr)> pending_;
  bool busy_ = false;
  bool stopping_ = false;
};

}  // namespace hetero::core
