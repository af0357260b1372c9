// The CPU driver's kernels that order or select elements by value: TopK
// (ties by index, NaN), Unique (unsorted, along an axis) and
// NonMaxSuppression.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::Tensor;

TEST(CpuSort, TopKOrdersTiesByIndexAndSurvivesNaN) {
  KernelNode n("TopK", 11, 2, 2);
  const auto outs = n.run({f32({1, 3, 3, NAN, 2, 3}, {6}), i64({4})}, 2);
  EXPECT_EQ(ints(outs[1]), (std::vector<int64_t>{3, 1, 2, 5}));
  KernelNode s("TopK", 11, 2, 2);
  s.attr_int("largest", 0);
  s.attr_int("axis", 0);
  const auto small = s.run({iota_f32({4, 2}), i64({2})}, 2);
  EXPECT_EQ(floats(small[0]), (std::vector<float>{0, 1, 2, 3}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({f32({1, 2}, {2}), i64({3})}, 2); });
}

TEST(CpuSort, UniqueUnsortedAndAlongAnAxis) {
  KernelNode n("Unique", 11, 1, 4);
  n.attr_int("sorted", 0);
  const auto o = n.run({f32({2, 1, 1, 3, 4, 3}, {6})}, 4);
  EXPECT_EQ(floats(o[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(ints(o[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints(o[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints(o[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  KernelNode a("Unique", 11, 1, 4);
  a.attr_int("axis", 0);
  const auto r = a.run({f32({1, 0, 0, 1, 1, 0}, {3, 2})}, 4);
  EXPECT_EQ(floats(r[0]), (std::vector<float>{0, 1, 1, 0}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{1, 0, 1}));
}

TEST(CpuSort, NonMaxSuppressionDropsOverlappingBoxes) {
  KernelNode nms("NonMaxSuppression", 11, 5);
  const Tensor boxes = f32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, {1, 3, 4});
  const Tensor scores = f32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  const Tensor y = nms.run({boxes, scores, i64({3}), f32({0.5f}, {1}), f32({0.0f}, {1})})[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

}  // namespace
}  // namespace hetero::cpu::testing
