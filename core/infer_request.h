// The one infer request of every driver (CPU, the GPU drivers, HETERO): it
// makes the checks a caller meets (input index and port, inputs not set, an
// inference already running, outputs read before one has finished), each
// with one message whatever device runs the model, and runs asynchronous
// inferences. A driver supplies only its run step.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "core/driver.h"
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
};

std::unique_ptr<driver::InferRequest> make_infer_request(std::unique_ptr<InferStep> step);

}  // namespace hetero::core
