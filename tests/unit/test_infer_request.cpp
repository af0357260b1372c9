// core::make_infer_request: the checks and states every driver's requests
// share, over run steps written here (a driver supplies only that step; the
// drivers' own steps run in test_cpu_driver, the OpenCL and HETERO tests).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "core/error.h"
#include "core/infer_request.h"

using namespace hetero;
using core::Tensor;

namespace {

std::vector<driver::Port> ports(const char* name) {
  return {driver::Port{name, core::DType::F32, {core::Dim{2, ""}}, true}};
}

Tensor pair(float a, float b) { return Tensor::from_vector<float>({a, b}, {2}); }

// y = x + 1, optionally held at the start of each run until released, or
// returning `outputs` tensors instead of one.
class AddOne : public core::InferStep {
 public:
  std::shared_future<void> gate;
  std::promise<void> entered;
  size_t outputs_returned = 1;

  const std::vector<driver::Port>& inputs() const override { return inputs_; }
  const std::vector<driver::Port>& outputs() const override { return outputs_; }
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    if (gate.valid()) {
      entered.set_value();
      gate.wait();
    }
    const float* x = in[0].data<float>();
    if (x[0] < 0) fail(HETERO_DRIVER_ERROR, "the device refused a negative input");
    return std::vector<Tensor>(outputs_returned, pair(x[0] + 1, x[1] + 1));
  }

 private:
  std::vector<driver::Port> inputs_ = ports("x"), outputs_ = ports("y");
};

std::string error_of(const std::function<void()>& f, hetero_status status) {
  try {
    f();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

// Starts an inference and returns what its callback received: "" or the message.
std::string run_async(driver::InferRequest& r) {
  std::promise<std::string> result;
  r.start_async([&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
      result.set_value("");
    } catch (const Failure& err) {
      result.set_value(err.what());
    }
  });
  r.wait();
  return result.get_future().get();
}

}  // namespace

TEST(InferRequest, PortsAndStatesHaveOneMessageEach) {
  auto r = core::make_infer_request(std::make_unique<AddOne>());
  EXPECT_EQ(error_of([&] { r->set_input(1, pair(1, 2)); }, HETERO_INVALID_ARGUMENT),
            "input index 1 is out of range (the model has 1 input)");
  EXPECT_NE(error_of([&] { r->set_input(0, Tensor::from_vector<float>({1, 2, 3}, {3})); }, HETERO_INVALID_ARGUMENT)
                .find("input 'x' dimension 0 must be 2"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { r->infer(); }, HETERO_INVALID_ARGUMENT), "input 'x' is not set");
  EXPECT_EQ(error_of([&] { r->output(0); }, HETERO_INVALID_ARGUMENT), "no inference has finished on this request yet");
  EXPECT_EQ(error_of([&] { r->output(2); }, HETERO_INVALID_ARGUMENT),
            "output index 2 is out of range (the model has 1 output)");

  r->set_input(0, pair(1, 2));
  r->infer();
  EXPECT_EQ(r->output(0).values<float>()[1], 3.0f);

  // A failed inference leaves no outputs to read, not the previous ones.
  r->set_input(0, pair(-1, 0));
  EXPECT_NE(error_of([&] { r->infer(); }, HETERO_DRIVER_ERROR).find("negative"), std::string::npos);
  EXPECT_EQ(error_of([&] { r->output(0); }, HETERO_INVALID_ARGUMENT),
            "the last inference on this request failed; it has no outputs");
}

TEST(InferRequest, AsyncFailuresReachTheCallbackOnAnotherThread) {
  auto r = core::make_infer_request(std::make_unique<AddOne>());
  EXPECT_EQ(run_async(*r), "input 'x' is not set");
  r->set_input(0, pair(-1, 0));
  EXPECT_NE(run_async(*r).find("negative"), std::string::npos);
  r->set_input(0, pair(5, 6));
  EXPECT_EQ(run_async(*r), "");
  EXPECT_EQ(r->output(0).values<float>()[0], 6.0f);
}

TEST(InferRequest, ARunningInferenceIsBusy) {
  auto step = std::make_unique<AddOne>();
  std::promise<void> release;
  step->gate = release.get_future().share();
  std::future<void> entered = step->entered.get_future();
  auto r = core::make_infer_request(std::move(step));
  r->set_input(0, pair(1, 2));

  std::promise<float> in_callback;
  r->start_async([&](std::exception_ptr e) {
    // The outputs are there by the time the callback runs.
    in_callback.set_value(e ? -1.0f : r->output(0).values<float>()[0]);
  });
  entered.wait();
  EXPECT_NE(error_of([&] { r->start_async(nullptr); }, HETERO_BUSY).find("already running"), std::string::npos);
  EXPECT_NE(error_of([&] { r->infer(); }, HETERO_BUSY).find("already running"), std::string::npos);
  EXPECT_NE(error_of([&] { r->set_input(0, pair(3, 4)); }, HETERO_BUSY).find("running"), std::string::npos);
  EXPECT_EQ(error_of([&] { r->output(0); }, HETERO_BUSY),
            "an inference is running on this request; wait for it before reading outputs");
  EXPECT_NE(error_of([&] { r->release_memory(); }, HETERO_BUSY).find("in use"), std::string::npos);
  release.set_value();
  r->wait();
  EXPECT_EQ(in_callback.get_future().get(), 2.0f);
}

TEST(InferRequest, AStepThatMiscountsItsOutputsIsADriverError) {
  auto step = std::make_unique<AddOne>();
  step->outputs_returned = 2;
  auto r = core::make_infer_request(std::move(step));
  r->set_input(0, pair(1, 2));
  EXPECT_EQ(error_of([&] { r->infer(); }, HETERO_DRIVER_ERROR),
            "the driver returned 2 outputs for a model with 1 output");
}

// A step with a queue of its own starts the inference itself (as HETERO chains
// its stages) and finishes it from its own thread.
TEST(InferRequest, AStepMayRunAsyncInferencesItself) {
  class OwnThread final : public AddOne {
   public:
    ~OwnThread() override {
      if (thread_.joinable()) thread_.join();
    }
    bool start(const std::vector<Tensor>& in, Done done) override {
      if (thread_.joinable()) thread_.join();
      thread_ = std::thread([this, in, done] {
        ++started;
        try {
          done(run(in), nullptr);
        } catch (...) {
          done({}, std::current_exception());
        }
      });
      return true;
    }
    int started = 0;

   private:
    std::thread thread_;
  };
  auto owned = std::make_unique<OwnThread>();
  OwnThread* step = owned.get();
  auto r = core::make_infer_request(std::move(owned));
  r->set_input(0, pair(1, 2));
  EXPECT_EQ(run_async(*r), "");
  EXPECT_EQ(r->output(0).values<float>()[0], 2.0f);
  r->set_input(0, pair(-1, 2));
  EXPECT_NE(run_async(*r).find("negative"), std::string::npos);
  EXPECT_EQ(step->started, 2);
}
