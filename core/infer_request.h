// The one infer request of every driver (CPU, the GPU drivers, HETERO): it
// makes the checks a caller meets (input index and port, inputs not set, an
// inference already running, outputs read before one has finished), each
// with one message whatever device runs the model, and runs asynchronous
// inferences. A driver supplies only its run step.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "core/driver.h"
#include "core/error.h"
#include "core/tensor.h"

namespace hetero::core {

// What a driver does for one inference of a compiled model.
class InferStep {
 public:
  using Done = std::function<void(std::vector<Tensor> outputs, std::exception_ptr error)>;

  virtual ~InferStep() = default;
  // The compiled model's ports, which the step keeps alive.
  virtual const std::vector<driver::Port>& inputs() const = 0;
  virtual const std::vector<driver::Port>& outputs() const = 0;
  // One inference: `inputs` holds every model input, each checked against
  // its port. Returns one tensor per output.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  // Starts the inference without blocking and returns true, then calls
  // `done` once, from any thread, with the outputs or the failure. Returning
  // false (the default) lets the request call run() on a worker thread of its
  // own: what a device with no queue of its own needs.
  virtual bool start(const std::vector<Tensor>& inputs, Done done) {
    (void)inputs;
    (void)done;
    return false;
  }
  // Input `index` was bound to `tensor`, already checked against its port;
  // a failure here leaves the input as it was.
  virtual void input_bound(size_t index, const Tensor& tensor) {
    (void)index;
    (void)tensor;
  }
  // driver::InferRequest::release_memory(), called with no inference running.
  virtual void release_memory() {}

  // Cancellation. The request raises the flag while an inference runs and
  // lowers it before the next; a step polls cancel_requested() where it can
  // stop (throwing through throw_if_cancelled()), and may override
  // on_cancel() to pass the word on (HETERO cancels its running stage).
  void request_cancel() {
    cancelled_.store(true, std::memory_order_relaxed);
    on_cancel();
  }
  void clear_cancel() { cancelled_.store(false, std::memory_order_relaxed); }
  bool cancel_requested() const { return cancelled_.load(std::memory_order_relaxed); }
  // The flag itself, for code that polls it without knowing the step (the
  // CPU plan between nodes); it lives as long as the step.
  const std::atomic<bool>& cancel_flag() const { return cancelled_; }

 protected:
  virtual void on_cancel() {}

 private:
  std::atomic<bool> cancelled_{false};
};

// The failure of a cancelled inference: CANCELLED, with one message for every
// driver (and heterod's remote requests).
Failure cancelled_failure();
[[noreturn]] void fail_cancelled();

std::unique_ptr<driver::InferRequest> make_infer_request(std::unique_ptr<InferStep> step);

}  // namespace hetero::core
