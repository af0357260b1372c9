#include "core/infer_request.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/ports.h"

namespace hetero::core {

namespace {

std::string count_of(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

void check_index(size_t index, size_t count, const char* what) {
  if (index >= count)
    fail(HETERO_INVALID_ARGUMENT, std::string(what) + " index " + std::to_string(index) +
                                      " is out of range (the model has " + count_of(count, what) + ")");
}

// Fails naming the first input that is not set.
void check_inputs_set(const std::vector<driver::Port>& ports, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].empty()) fail(HETERO_INVALID_ARGUMENT, "input '" + ports[i].name + "' is not set");
}

bool all_set(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.empty()) return false;
  return true;
}

class StepInferRequest final : public driver::InferRequest {
 public:
  explicit StepInferRequest(std::unique_ptr<InferStep> step)
      : step_(std::move(step)), inputs_(step_->inputs().size()) {}

  // The step's members are in use until the inference has finished; the
  // worker thread, until it has been joined.
  ~StepInferRequest() override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !busy_; });
    stopping_ = true;
    cv_.notify_all();
    lock.unlock();
    if (worker_.joinable()) worker_.join();
  }

  void set_input(size_t index, const Tensor& tensor) override {
    check_index(index, step_->inputs().size(), "input");
    check_input(step_->inputs()[index], tensor);
    std::lock_guard lock(mutex_);
    // Binding is allowed once the inference has finished, in its callback too
    // (hetero_callback in include/hetero/hetero.h).
    if (last_ == Last::Running)
      fail(HETERO_BUSY, "an inference is running on this request; wait for it before binding inputs");
    step_->input_bound(index, tensor);
    inputs_[index] = tensor;
  }

  Tensor output(size_t index) const override {
    check_index(index, step_->outputs().size(), "output");
    std::lock_guard lock(mutex_);
    switch (last_) {
      case Last::None: fail(HETERO_INVALID_ARGUMENT, "no inference has finished on this request yet");
      case Last::Running: fail(HETERO_INVALID_ARGUMENT, "the inference running on this request has not finished yet");
      case Last::Failed: fail(HETERO_INVALID_ARGUMENT, "the last inference on this request failed; it has no outputs");
      case Last::Finished: break;
    }
    return outputs_[index];
  }

  void infer() override {
    const std::vector<Tensor> inputs = begin(nullptr, false);
    std::exception_ptr error;
    std::vector<Tensor> outputs = run_step(inputs, error);
    if (std::exception_ptr failed = finish(std::move(outputs), error)) std::rethrow_exception(failed);
  }

  // Only BUSY fails here; every other failure, an input not set included,
  // reaches `done` on another thread.
  void start_async(std::function<void(std::exception_ptr)> done) override {
    std::vector<Tensor> inputs = begin(std::move(done), true);
    if (all_set(inputs)) {
      bool started = false;
      try {
        started = step_->start(inputs, [this](std::vector<Tensor> outputs, std::exception_ptr error) {
          finish(std::move(outputs), error);
        });
      } catch (...) {
        finish({}, std::current_exception());
        return;
      }
      if (started) return;
    }
    std::lock_guard lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
    pending_ = std::move(inputs);
    cv_.notify_all();
  }

  void wait() override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !busy_; });
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    if (last_ == Last::Running) step_->request_cancel();
  }

  void release_memory() override {
    std::lock_guard lock(mutex_);
    if (busy_) fail(HETERO_BUSY, "an inference is running on this request; its memory is in use");
    step_->release_memory();
  }

 private:
  // Marks the request busy with an inference on the bound inputs, which it
  // returns. A synchronous inference checks that all are set here, leaving
  // the request as it was; an asynchronous one, in run_step on the worker.
  std::vector<Tensor> begin(std::function<void(std::exception_ptr)> done, bool async) {
    std::lock_guard lock(mutex_);
    if (busy_) fail(HETERO_BUSY, "an inference is already running on this request");
    if (!async) check_inputs_set(step_->inputs(), inputs_);
    busy_ = true;
    last_ = Last::Running;
    done_ = std::move(done);
    step_->clear_cancel();
    return inputs_;
  }

  // The step's run on `inputs`, or its failure in `error`.
  std::vector<Tensor> run_step(const std::vector<Tensor>& inputs, std::exception_ptr& error) {
    try {
      check_inputs_set(step_->inputs(), inputs);
      return step_->run(inputs);
    } catch (...) {
      error = std::current_exception();
      return {};
    }
  }

  // Ends the inference begin() started: its outputs, then the caller's
  // callback, then waiters wake (so that wait() returning means the callback
  // has returned too). Returns the inference's failure, if any.
  std::exception_ptr finish(std::vector<Tensor> outputs, std::exception_ptr error) {
    if (!error && outputs.size() != step_->outputs().size())
      error = std::make_exception_ptr(
          Failure(HETERO_DRIVER_ERROR, "the driver returned " + count_of(outputs.size(), "output") +
                                         " for a model with " + count_of(step_->outputs().size(), "output")));
    std::function<void(std::exception_ptr)> done;
    {
      std::lock_guard lock(mutex_);
      outputs_ = std::move(outputs);
      last_ = error ? Last::Failed : Last::Finished;
      done = std::move(done_);
    }
    if (done) {
      try {
        done(error);
      } catch (...) {
        // A callback's own failure has nowhere to go; never let it kill us.
      }
    }
    std::lock_guard lock(mutex_);
    busy_ = false;
    cv_.notify_all();
    return error;
  }

  void worker_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || pending_; });
      if (stopping_) return;
      const std::vector<Tensor> inputs = std::move(*pending_);
      pending_.reset();
      lock.unlock();
      std::exception_ptr error;
      std::vector<Tensor> outputs = run_step(inputs, error);
      finish(std::move(outputs), error);
      lock.lock();
    }
  }

  std::unique_ptr<InferStep> step_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Tensor> inputs_, outputs_;
  bool busy_ = false;  // from begin() to the end of finish()
  // What output() can read: outputs_ once the last inference has finished.
  enum class Last { None, Running, Finished, Failed } last_ = Last::None;
  std::function<void(std::exception_ptr)> done_;
  std::optional<std::vector<Tensor>> pending_;  // inputs for the worker
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace

void fail_cancelled() { fail(HETERO_CANCELLED, "the inference was cancelled"); }

std::unique_ptr<driver::InferRequest> make_infer_request(std::unique_ptr<InferStep> step) {
  return std::make_unique<StepInferRequest>(std::move(step));
}

}  // namespace hetero::core
