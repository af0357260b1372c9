// The CPU driver's reductions (Reduce*, ArgMax, CumSum) and the Softmax
// family on cases ONNX's node tests leave out: non-contiguous reduction axes,
// axes as an input, big tensors that take the parallel paths, numerically
// hard inputs and the coercion to 2-D of old opsets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// ---- Reductions.

TEST(CpuReduction, NonContiguousAxesAndKeepdims) {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.0f);
  KernelNode n("ReduceSum", 11, 1);
  n.attr_ints("axes", {0, 2}).attr_int("keepdims", 0);
  const Tensor y = n.run({tensor<float>(v, {2, 3, 4})})[0];
  EXPECT_EQ(y.shape(), (Shape{3}));
  // Sum over dims 0 and 2 for each j: sum_i sum_k (12i + 4j + k) = 2*(6+16j) + 12*4.
  EXPECT_EQ(values<float>(y), (std::vector<float>{60, 92, 124}));
  KernelNode m("ReduceMax", 13, 1);
  m.attr_ints("axes", {-1});
  EXPECT_EQ(m.run({tensor<float>(v, {2, 3, 4})})[0].shape(), (Shape{2, 3, 1}));
}

TEST(CpuReduction, AxesInputAndNoop) {
  KernelNode n("ReduceSum", 13, 2);
  n.attr_int("noop_with_empty_axes", 1);
  const Tensor x = tensor<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(values<int64_t>(n.run({x, tensor<int64_t>({}, {0})})[0]), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>(n.run({x, tensor<int64_t>({0}, {1})})[0]), (std::vector<int64_t>{4, 6}));
  KernelNode all("ReduceSum", 13, 1);
  EXPECT_EQ(values<int64_t>(all.run({x})[0]), (std::vector<int64_t>{10}));
}

TEST(CpuReduction, BigReductionsMatchDoubleReference) {
  // Reducing everything, trailing and middle axes of a big tensor exercises
  // the split-row, row and block paths.
  const Tensor x = random_f32({4, 64, 33, 17}, 11, -3, 3);
  const float* px = x.data<float>();
  for (std::vector<int64_t> axes : {std::vector<int64_t>{}, {2, 3}, {1}, {0, 2}}) {
    KernelNode n("ReduceMean", 13, 1);
    n.attr_ints("axes", axes).attr_int("keepdims", 1);
    const Tensor y = n.run({x})[0];
    std::vector<bool> red(4, axes.empty());
    for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
    std::vector<double> ref(y.numel(), 0.0);
    size_t count = x.numel() / y.numel();
    const Shape& s = x.shape();
    for (size_t i = 0; i < x.numel(); ++i) {
      size_t rem = i, out = 0, mult = 1;
      for (size_t d = 4; d-- > 0;) {
        const size_t idx = rem % static_cast<size_t>(s[d]);
        rem /= static_cast<size_t>(s[d]);
        if (!red[d]) out += idx * mult, mult *= static_cast<size_t>(s[d]);
      }
      ref[out] += px[i];
    }
    for (size_t j = 0; j < y.numel(); ++j) ASSERT_NEAR(y.data<float>()[j], ref[j] / count, 1e-4) << j;
  }
}

TEST(CpuReduction, LogSumExpIsStable) {
  KernelNode n("ReduceLogSumExp", 13, 1);
  n.attr_ints("axes", {1});
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor y = n.run({tensor<float>({1000, 1000, -inf, -inf}, {2, 2})})[0];
  EXPECT_NEAR(y.data<float>()[0], 1000 + std::log(2.0f), 1e-3);
  EXPECT_EQ(y.data<float>()[1], -inf);
}

TEST(CpuReduction, ArgMaxSelectLastAlongMiddleAxis) {
  KernelNode n("ArgMax", 13, 1);
  n.attr_int("axis", 1).attr_int("select_last_index", 1);
  const Tensor y = n.run({tensor<float>({1, 5, 5, 2, 5, 0}, {1, 3, 2})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{2, 0}));
}

TEST(CpuReduction, CumSumAlongMiddleAxisReverseExclusive) {
  KernelNode n("CumSum", 14, 2);
  n.attr_int("reverse", 1).attr_int("exclusive", 1);
  const Tensor y = n.run({tensor<int32_t>({1, 2, 3, 4, 5, 6}, {3, 2}), tensor<int32_t>({0}, {})})[0];
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{8, 10, 5, 6, 0, 0}));
}

// ---- Softmax family.

TEST(CpuSoftmax, OldOpsetsCoerceTo2D) {
  // Opset 11 axis=1 on [2, 2, 2] normalises over the last 4 elements together.
  KernelNode n("Softmax", 11, 1);
  const Tensor y = n.run({tensor<float>({0, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 2})})[0];
  for (float v : values<float>(y)) EXPECT_NEAR(v, 0.25f, 1e-6);
  KernelNode m("Softmax", 13, 1);  // opset 13 axis=1: pairs along the middle axis
  m.attr_int("axis", 1);
  const Tensor z = m.run({tensor<float>({0, 0, std::log(3.0f), 0, 1, 1, 1, 1}, {2, 2, 2})})[0];
  EXPECT_NEAR(z.data<float>()[0], 0.25f, 1e-6);
  EXPECT_NEAR(z.data<float>()[2], 0.75f, 1e-6);
  EXPECT_NEAR(z.data<float>()[1], 0.5f, 1e-6);
}

TEST(CpuSoftmax, LogSoftmaxAndHardmaxOnBigRows) {
  const Tensor x = random_f32({64, 1000}, 5, -50, 50);
  KernelNode ls("LogSoftmax", 13, 1);
  const Tensor y = ls.run({x})[0];
  KernelNode hm("Hardmax", 13, 1);
  const Tensor h = hm.run({x})[0];
  for (size_t r = 0; r < 64; ++r) {
    const float* row = x.data<float>() + r * 1000;
    const double m = *std::max_element(row, row + 1000);
    double s = 0;
    for (size_t k = 0; k < 1000; ++k) s += std::exp(row[k] - m);
    const size_t best = static_cast<size_t>(std::max_element(row, row + 1000) - row);
    for (size_t k = 0; k < 1000; ++k) {
      ASSERT_NEAR(y.data<float>()[r * 1000 + k], row[k] - m - std::log(s), 1e-4);
      ASSERT_EQ(h.data<float>()[r * 1000 + k], k == best ? 1.0f : 0.0f);
    }
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
