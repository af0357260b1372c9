#include "core/infer_request.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/job_spin.h"
#include "core/ports.h"
#include "core/request_state.h"

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
    state_.wait_idle();
    {
      std::lock_guard lock(worker_mutex_);
      stopping_ = true;
    }
    worker_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  void set_input(size_t index, const Tensor& tensor) override {
    check_index(index, step_->inputs().size(), "input");
    check_input(step_->inputs()[index], tensor);
    state_.bind([&] {
      step_->input_bound(index, tensor);
      inputs_[index] = tensor;
    });
  }

  Tensor output(size_t index) const override {
    check_index(index, step_->outputs().size(), "output");
    return state_.read_outputs([&] { return outputs_[index]; });
  }

  void infer() override {
    if (std::exception_ptr error = run_started(begin(nullptr, false))) std::rethrow_exception(error);
  }

  // Only BUSY fails here; every other failure, an input not set included,
  // reaches `done` on another thread.
  void start_async(std::function<void(std::exception_ptr)> done) override {
    std::vector<Tensor> inputs = begin(std::move(done), true);
    if (all_set(inputs) && state_.start()) {
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
    std::lock_guard lock(worker_mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
    pending_ = std::move(inputs);
    worker_cv_.notify_all();
  }

  std::exception_ptr wait() override { return state_.wait(); }

  void cancel() override {
    state_.cancel([&] { step_->request_cancel(); });
  }

  void release_memory() override {
    state_.check_idle("its memory is in use");
    step_->release_memory();
  }

 private:
  // Queues an inference on the bound inputs, which it returns. A
  // synchronous inference checks that all are set here, leaving the request
  // as it was; an asynchronous one, in run_step on the worker.
  std::vector<Tensor> begin(std::function<void(std::exception_ptr)> done, bool async) {
    return state_.begin([&] {
      if (!async) check_inputs_set(step_->inputs(), inputs_);
      done_ = std::move(done);
      step_->clear_cancel();
      return inputs_;
    });
  }

  // Runs the inference begin() queued, unless it was cancelled first, and
  // finishes it. Returns its failure.
  std::exception_ptr run_started(const std::vector<Tensor>& inputs) {
    std::exception_ptr error;
    std::vector<Tensor> outputs;
    if (state_.start())
      outputs = run_step(inputs, error);
    else
      error = std::make_exception_ptr(cancelled_failure());
    return finish(std::move(outputs), error);
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
  // callback (RequestState::complete). Returns its failure.
  std::exception_ptr finish(std::vector<Tensor> outputs, std::exception_ptr error) {
    if (!error && outputs.size() != step_->outputs().size())
      error = std::make_exception_ptr(
          Failure(HETERO_DRIVER_ERROR, "the driver returned " + count_of(outputs.size(), "output") +
                                         " for a model with " + count_of(step_->outputs().size(), "output")));
    std::function<void(std::exception_ptr)> done;
    state_.complete(
        error,
        [&] {
          outputs_ = std::move(outputs);
          done = std::move(done_);
        },
        [&](std::exception_ptr e) {
          if (done) done(e);
        });
    return error;
  }

  void worker_loop() {
    JobSpin spin;  // looks for the next inference a little before sleeping
    std::unique_lock lock(worker_mutex_);
    for (;;) {
      if (!stopping_ && !pending_) {
        lock.unlock();
        spin.look([&] {
          const std::lock_guard look(worker_mutex_);
          return stopping_ || pending_;
        });
        lock.lock();
      }
      worker_cv_.wait(lock, [&] { return stopping_ || pending_; });
      if (stopping_) return;
      const std::vector<Tensor> inputs = std::move(*pending_);
      pending_.reset();
      lock.unlock();
      spin.took();
      run_started(inputs);
      spin.finished();
      lock.lock();
    }
  }

  std::unique_ptr<InferStep> step_;
  RequestState state_;
  // Guarded by state_ (bound, taken and recorded under its lock).
  std::vector<Tensor> inputs_, outputs_;
  std::function<void(std::exception_ptr)> done_;
  // The worker thread, for steps that do not start on their own.
  std::mutex worker_mutex_;
  std::condition_variable worker_cv_;
  std::optional<std::vector<Tensor>> pending_;  // inputs for the worker
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace

Failure cancelled_failure() { return Failure(HETERO_CANCELLED, "the inference was cancelled"); }

void fail_cancelled() { throw cancelled_failure(); }

std::unique_ptr<driver::InferRequest> make_infer_request(std::unique_ptr<InferStep> step) {
  return std::make_unique<StepInferRequest>(std::move(step));
}

}  // namespace hetero::core
