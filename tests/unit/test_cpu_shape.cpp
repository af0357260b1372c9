// The CPU driver's shape kernels (Transpose, Reshape, Squeeze, Unsqueeze,
// Expand, Tile, Shape, Range, EyeLike, ConstantOfShape, Dropout) against
// naive index loops, on random shapes, every element size, one and several
// threads, and the errors bad requests must raise instead of reading out of
// bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

TEST(CpuShapeKernels, TransposeMatchesNaiveForEveryElementSize) {
  std::mt19937 rng(7);
  for (DType dt : {DType::U8, DType::F16, DType::F32, DType::I64}) {
    for (int trial = 0; trial < 40; ++trial) {
      const size_t rank = 2 + rng() % 4;
      Shape shape(rank);
      for (auto& d : shape) d = 1 + static_cast<int64_t>(rng() % 7);
      if (trial % 5 == 0) shape[rank - 1] = 33;  // partial tiles
      std::vector<int64_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      Tensor x = Tensor::allocate(dt, shape);
      for (size_t i = 0; i < x.nbytes(); ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(rng());
      KernelNode n("Transpose", 13, 1);
      n.attr_ints("perm", perm);
      const Tensor y = n.run({x}, 1, 1 + trial % 3)[0];
      Shape out(rank);
      for (size_t d = 0; d < rank; ++d) out[d] = shape[static_cast<size_t>(perm[d])];
      ASSERT_EQ(y.shape(), out);
      const size_t es = core::dtype_size(dt);
      for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
        const std::vector<int64_t> o = unravel(i, out);
        std::vector<int64_t> src(rank);
        for (size_t d = 0; d < rank; ++d) src[static_cast<size_t>(perm[d])] = o[d];
        ASSERT_EQ(0, std::memcmp(static_cast<const char*>(y.raw()) + i * es,
                                 static_cast<const char*>(x.raw()) + ravel(src, shape) * es, es))
            << core::shape_to_string(shape) << " trial " << trial;
      }
    }
  }
}

TEST(CpuShapeKernels, TransposeLargeNchwToNhwcThreaded) {
  std::mt19937 rng(1);
  const Tensor x = random_f32({2, 64, 28, 30}, rng);
  KernelNode n("Transpose", 13, 1);
  n.attr_ints("perm", {0, 2, 3, 1});
  const Tensor y = n.run({x}, 1, 4)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 28, 30, 64}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 64; ++c)
      for (int64_t h = 0; h < 28; ++h)
        for (int64_t w = 0; w < 30; ++w)
          ASSERT_EQ(y.data<float>()[((b * 28 + h) * 30 + w) * 64 + c], x.data<float>()[((b * 64 + c) * 28 + h) * 30 + w]);
}

// 32-bit elements go through 16x16 tiles in vector registers
// (drivers/cpu/transpose16.h): [37, 50] matrices have whole tiles and ragged
// edges both ways; int32 bit patterns must come through untouched.
TEST(CpuShapeKernels, TransposeWholeAndRaggedTilesOf32BitElements) {
  std::mt19937 rng(2);
  Tensor x = Tensor::allocate(DType::I32, {3, 37, 50});
  for (size_t i = 0; i < x.numel(); ++i) x.data<int32_t>()[i] = static_cast<int32_t>(rng());
  KernelNode n("Transpose", 13, 1);
  n.attr_ints("perm", {0, 2, 1});
  for (int threads : {1, 2}) {
    const Tensor y = n.run({x}, 1, threads)[0];
    ASSERT_EQ(y.shape(), (Shape{3, 50, 37}));
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < 37; ++i)
        for (int64_t j = 0; j < 50; ++j)
          ASSERT_EQ(y.data<int32_t>()[(b * 50 + j) * 37 + i], x.data<int32_t>()[(b * 37 + i) * 50 + j]);
  }
}

TEST(CpuShapeKernels, TransposeOfUnitDimsIsAView) {
  const Tensor x = iota_f32({1, 5, 1, 4});
  KernelNode n("Transpose", 13, 1);
  n.attr_ints("perm", {2, 1, 0, 3});
  const Tensor y = n.run({x})[0];
  EXPECT_EQ(y.raw(), x.raw());
  EXPECT_EQ(y.shape(), (Shape{1, 5, 1, 4}));
}

TEST(CpuShapeKernels, ReshapeCopiesZerosInfersMinusOneAndRejectsBadTargets) {
  const Tensor x = iota_f32({2, 3, 4});
  KernelNode n("Reshape", 13, 2);
  Tensor y = n.run({x, i64({0, -1})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.raw(), x.raw());
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({-1, -1})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({5, -1})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({0, 0, 0, 0})}); });
  KernelNode z("Reshape", 14, 2);
  z.attr_int("allowzero", 1);
  const Tensor empty = Tensor::allocate(DType::F32, {0, 3});
  EXPECT_EQ(z.run({empty, i64({3, 0})})[0].shape(), (Shape{3, 0}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { z.run({empty, i64({0, -1})}); });
}

TEST(CpuShapeKernels, SqueezeAndUnsqueezeInBothOpsetForms) {
  const Tensor x = iota_f32({1, 3, 1, 2});
  KernelNode s11("Squeeze", 11, 1);
  s11.attr_ints("axes", {-2});
  EXPECT_EQ(s11.run({x})[0].shape(), (Shape{1, 3, 2}));
  KernelNode s13("Squeeze", 13, 2);
  EXPECT_EQ(s13.run({x, std::nullopt})[0].shape(), (Shape{3, 2}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { s13.run({x, i64({1})}); });
  KernelNode u13("Unsqueeze", 13, 2);
  EXPECT_EQ(u13.run({x, i64({0, -1})})[0].shape(), (Shape{1, 1, 3, 1, 2, 1}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { u13.run({x, i64({1, 1})}); });
}

TEST(CpuShapeKernels, ExpandAndTileMatchNaive) {
  std::mt19937 rng(3);
  const Tensor x = random_f32({3, 1, 5}, rng);
  KernelNode e("Expand", 13, 2);
  const Tensor y = e.run({x, i64({2, 1, 4, 1})})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 5}));
  for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
    const auto o = unravel(i, y.shape());
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[o[1] * 5 + o[3]]);
  }
  expect_status(HETERO_INVALID_ARGUMENT, [&] { e.run({x, i64({2, 4})}); });
  KernelNode t("Tile", 13, 2);
  const Tensor z = t.run({x, i64({2, 3, 2})})[0];
  ASSERT_EQ(z.shape(), (Shape{6, 3, 10}));
  for (int64_t i = 0; i < static_cast<int64_t>(z.numel()); ++i) {
    const auto o = unravel(i, z.shape());
    ASSERT_EQ(z.data<float>()[i], x.data<float>()[(o[0] % 3) * 5 + o[2] % 5]);
  }
}

TEST(CpuShapeKernels, GeneratorsAndShapeQueries) {
  KernelNode sh("Shape", 15, 1);
  sh.attr_int("start", -3);
  sh.attr_int("end", -1);
  EXPECT_EQ(ints(sh.run({iota_f32({2, 3, 4, 5})})[0]), (std::vector<int64_t>{3, 4}));
  KernelNode r("Range", 11, 3);
  EXPECT_EQ(ints(r.run({i64({10}), i64({3}), i64({-3})})[0]), (std::vector<int64_t>{10, 7, 4}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { r.run({i64({1}), i64({3}), i64({0})}); });
  KernelNode e("EyeLike", 9, 1);
  e.attr_int("k", 1);
  EXPECT_EQ(floats(e.run({iota_f32({2, 3})})[0]), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  KernelNode cs("ConstantOfShape", 9, 1);
  EXPECT_EQ(cs.run({i64({2, 0})})[0].shape(), (Shape{2, 0}));
  KernelNode dr("Dropout", 13, 3, 2);
  const Tensor x = iota_f32({2});
  const auto outs = dr.run({x, std::nullopt, std::nullopt}, 2);
  EXPECT_EQ(outs[0].raw(), x.raw());
  EXPECT_EQ(ints(outs[1]), (std::vector<int64_t>{1, 1}));
  // (Dropout in training mode: test_cpu_random.cpp.)
}

}  // namespace
}  // namespace hetero::cpu::testing
