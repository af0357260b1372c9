// The CPU driver's resampling kernels: Resize (nearest, linear, cubic)
// against its tensor-product definition, Upsample, and GridSample.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// Keys' cubic kernel at distance d.
double keys(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Resize computed one output element at a time as a full tensor product of
// per-axis taps (no separable passes), half_pixel coordinates.
Tensor naive_resize(const Tensor& x, const Shape& out, const std::string& mode) {
  Tensor y = Tensor::allocate(DType::F32, out);
  const size_t rank = out.size();
  for (size_t i = 0; i < y.numel(); ++i) {
    std::vector<std::vector<std::pair<int64_t, double>>> taps(rank);
    size_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      const auto o = static_cast<int64_t>(rest % static_cast<size_t>(out[d]));
      rest /= static_cast<size_t>(out[d]);
      const int64_t in = x.dim(d);
      const double scale = static_cast<double>(out[d]) / static_cast<double>(in);
      const double c = (o + 0.5) / scale - 0.5;
      auto clampi = [in](int64_t v) { return std::clamp<int64_t>(v, 0, in - 1); };
      const auto f = static_cast<int64_t>(std::floor(c));
      if (mode == "nearest") {
        taps[d].push_back({clampi(static_cast<int64_t>(std::ceil(c - 0.5))), 1.0});
      } else if (mode == "linear") {
        taps[d].push_back({clampi(f), 1 - (c - f)});
        taps[d].push_back({clampi(f + 1), c - f});
      } else {
        for (int64_t k = -1; k <= 2; ++k) taps[d].push_back({clampi(f + k), keys(c - (f + k), -0.75)});
      }
    }
    double acc = 0;
    std::vector<size_t> t(rank, 0);
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) {
        w *= taps[d][t[d]].second;
        off = off * x.dim(d) + taps[d][t[d]].first;
      }
      acc += w * x.data<float>()[off];
      size_t d = rank;
      while (d-- > 0 && ++t[d] == taps[d].size()) t[d] = 0;
      if (d == static_cast<size_t>(-1)) break;
    }
    y.data<float>()[i] = static_cast<float>(acc);
  }
  return y;
}

TEST(CpuResample, ResizeModesMatchTheTensorProductDefinition) {
  std::mt19937 rng(4);
  const Tensor x = random_f32({2, 3, 7, 9}, rng);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const Shape& out : {Shape{2, 3, 14, 18}, Shape{2, 3, 5, 4}, Shape{2, 3, 7, 13}, Shape{1, 3, 9, 9}}) {
      KernelNode n("Resize", 13, 4);
      n.attr_string("mode", mode);
      const Tensor y = n.run({x, std::nullopt, std::nullopt, i64(out)}, 1, 3)[0];
      const Tensor ref = naive_resize(x, out, mode);
      ASSERT_EQ(y.shape(), out);
      for (size_t i = 0; i < y.numel(); ++i)
        ASSERT_NEAR(y.data<float>()[i], ref.data<float>()[i], 1e-5) << mode << " " << core::shape_to_string(out);
    }
  }
}

TEST(CpuResample, ResizeNearestIsDtypeGenericAndIntegerLinearRounds) {
  const Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {1, 1, 2, 2});
  KernelNode n("Resize", 13, 3);
  n.attr_string("coordinate_transformation_mode", "asymmetric");
  n.attr_string("nearest_mode", "floor");
  const Tensor y = n.run({x, std::nullopt, f32({1, 1, 2, 2}, {4})})[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  const Tensor u = Tensor::from_vector<uint8_t>({0, 255}, {1, 2});
  KernelNode l("Resize", 13, 4);
  l.attr_string("mode", "linear");
  l.attr_string("coordinate_transformation_mode", "align_corners");
  EXPECT_EQ(ints(l.run({u, std::nullopt, std::nullopt, i64({1, 3})})[0]), (std::vector<int64_t>{0, 128, 255}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, std::nullopt, f32({1, 1, 2}, {3})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, std::nullopt, std::nullopt}); });
  KernelNode bad("Resize", 13, 3);
  bad.attr_string("mode", "area");
  expect_status(HETERO_NOT_SUPPORTED, [&] { bad.build(); });
}

TEST(CpuResample, UpsampleOpset7And9) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  KernelNode u9("Upsample", 9, 2);
  const Tensor y = u9.run({x, f32({1, 1, 2, 3}, {4})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(floats(y)[0 * 6 + 5], 2);
  EXPECT_EQ(floats(y)[3 * 6 + 0], 3);
}

TEST(CpuResample, GridSampleIdentityGridReproducesTheInput) {
  const Tensor x = iota_f32({1, 2, 3, 4});
  Tensor grid = Tensor::allocate(DType::F32, {1, 3, 4, 2});
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t w = 0; w < 4; ++w) {
      grid.data<float>()[(h * 4 + w) * 2] = -1 + 2.0f * static_cast<float>(w) / 3;
      grid.data<float>()[(h * 4 + w) * 2 + 1] = -1 + 2.0f * static_cast<float>(h) / 2;
    }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    KernelNode g("GridSample", 16, 2);
    g.attr_string("mode", mode);
    g.attr_int("align_corners", 1);
    const auto y = floats(g.run({x, grid})[0]);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], static_cast<float>(i), 1e-4) << mode;
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
