// What a node derives from its inputs' shapes and small integer inputs, kept
// from run to run in its memo (drivers/cpu/kernel_memo.h): one request whose
// inputs change from run to run, and back, gets each run's own answer, and a
// run that fails leaves nothing stale behind.
#include <gtest/gtest.h>

#include <vector>

#include "core/runtime.h"
#include "tests/unit/expect_error.h"
#include "tests/unit/kernel_harness.h"
#include "tests/unit/model_text.h"

namespace hetero::cpu::testing {
namespace {

using core::Tensor;

// Binary ops and Where keep their broadcast's loops (memo_broadcast,
// drivers/cpu/broadcast.h).
TEST(CpuKernelMemo, ABroadcastIsPlannedAgainWhenShapesChange) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[N, M] x, float[K] b, bool[M] c) => (float[N, M] y, float[N, M] z) {
  y = Add (x, b)
  z = Where (c, x, y)
}
)ONNX");
  auto compiled = test_runtime().compile(*model, "CPU");
  auto request = compiled->create_infer_request();
  struct Case {
    Tensor x, b, c;
  };
  const std::vector<Case> cases = {
      {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20, 30}, {3}), tensor<bool>({true, false, true}, {3})},
      {f32({1, 2, 3, 4, 5, 6}, {3, 2}), f32({100}, {1}), tensor<bool>({false, true}, {2})},
      {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f32({10, 20, 30}, {3}), tensor<bool>({true, false, true}, {3})},
      {f32({1, 2, 3}, {3, 1}), f32({-1}, {1}), tensor<bool>({false}, {1})},
  };
  for (size_t run = 0; run < cases.size(); ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const Case& k = cases[run];
    request->set_input(0, k.x);
    request->set_input(1, k.b);
    request->set_input(2, k.c);
    request->infer();
    const size_t cols = static_cast<size_t>(k.x.dim(1));
    std::vector<float> y, z;
    for (size_t i = 0; i < k.x.numel(); ++i) {
      const float sum = k.x.data<float>()[i] + k.b.data<float>()[k.b.numel() == 1 ? 0 : i % cols];
      y.push_back(sum);
      z.push_back(k.c.data<bool>()[i % cols] ? k.x.data<float>()[i] : sum);
    }
    EXPECT_EQ(request->output(0).shape(), k.x.shape());
    EXPECT_EQ(floats(request->output(0)), y);
    EXPECT_EQ(floats(request->output(1)), z);
  }
}

// Slice, Unsqueeze and Squeeze keep what they derive from the shapes and
// from their integer inputs (starts, axes): a run with other values, or one
// refused, in between must not leave the next run the old answer.
TEST(CpuKernelMemo, SliceAndAxesFollowTheirIntegerInputs) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[N, M] x, int64[1] s, int64[1] a) => (float[P, Q] y, float[R, S, T] z, float[N, M] w) {
  e = Constant <value = int64[1] {100}> ()
  y = Slice (x, s, e, a)
  z = Unsqueeze (x, a)
  w = Squeeze (z, a)
}
)ONNX");
  auto compiled = test_runtime().compile(*model, "CPU");
  auto request = compiled->create_infer_request();
  const Tensor x = iota_f32({3, 4});
  auto run = [&](int64_t start, int64_t axis) {
    request->set_input(0, x);
    request->set_input(1, i64({start}));
    request->set_input(2, i64({axis}));
    request->infer();
  };
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    run(1, 0);  // rows 1.., a new axis in front
    EXPECT_EQ(request->output(0).shape(), (core::Shape{2, 4}));
    EXPECT_EQ(floats(request->output(0)), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
    EXPECT_EQ(request->output(1).shape(), (core::Shape{1, 3, 4}));
    EXPECT_EQ(request->output(2).shape(), (core::Shape{3, 4}));
    run(2, 1);  // columns 2.., a new axis in the middle: a strided copy
    EXPECT_EQ(request->output(0).shape(), (core::Shape{3, 2}));
    EXPECT_EQ(floats(request->output(0)), (std::vector<float>{2, 3, 6, 7, 10, 11}));
    EXPECT_EQ(request->output(1).shape(), (core::Shape{3, 1, 4}));
    EXPECT_EQ(floats(request->output(2)), floats(x));
    // Refused half-way (axis 5 of a rank-2 input): the next run starts afresh.
    expect_error([&] { run(1, 5); }, HETERO_INVALID_ARGUMENT, {"axis 5"});
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
