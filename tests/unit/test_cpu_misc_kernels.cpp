// The CPU driver's Resize, Einsum, TopK, Unique and the other misc kernels
// against naive loops, plus the inputs that must be refused cleanly.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/unit/shape_test_util.h"

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

TEST(CpuMiscKernels, ResizeModesMatchTheTensorProductDefinition) {
  std::mt19937 rng(4);
  const Tensor x = random_f32({2, 3, 7, 9}, rng);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const Shape& out : {Shape{2, 3, 14, 18}, Shape{2, 3, 5, 4}, Shape{2, 3, 7, 13}, Shape{1, 3, 9, 9}}) {
      OpNode n("Resize", 13, 4);
      n.attr("mode", std::string(mode));
      const Tensor y = n.run({x, std::nullopt, std::nullopt, i64(out)}, 1, 3)[0];
      const Tensor ref = naive_resize(x, out, mode);
      ASSERT_EQ(y.shape(), out);
      for (size_t i = 0; i < y.numel(); ++i)
        ASSERT_NEAR(y.data<float>()[i], ref.data<float>()[i], 1e-5) << mode << " " << core::shape_to_string(out);
    }
  }
}

TEST(CpuMiscKernels, ResizeNearestIsDtypeGenericAndIntegerLinearRounds) {
  const Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {1, 1, 2, 2});
  OpNode n("Resize", 13, 3);
  n.attr("coordinate_transformation_mode", std::string("asymmetric"));
  n.attr("nearest_mode", std::string("floor"));
  const Tensor y = n.run({x, std::nullopt, f32({1, 1, 2, 2}, {4})})[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  const Tensor u = Tensor::from_vector<uint8_t>({0, 255}, {1, 2});
  OpNode l("Resize", 13, 4);
  l.attr("mode", std::string("linear"));
  l.attr("coordinate_transformation_mode", std::string("align_corners"));
  EXPECT_EQ(ints(l.run({u, std::nullopt, std::nullopt, i64({1, 3})})[0]), (std::vector<int64_t>{0, 128, 255}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, std::nullopt, f32({1, 1, 2}, {3})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, std::nullopt, std::nullopt}); });
  OpNode bad("Resize", 13, 3);
  bad.attr("mode", std::string("area"));
  expect_status(HETERO_NOT_SUPPORTED, [&] { bad.build(); });
}

TEST(CpuMiscKernels, UpsampleOpset7And9) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  OpNode u9("Upsample", 9, 2);
  const Tensor y = u9.run({x, f32({1, 1, 2, 3}, {4})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(floats(y)[0 * 6 + 5], 2);
  EXPECT_EQ(floats(y)[3 * 6 + 0], 3);
}

// Einsum through both of its paths against explicit loops.
TEST(CpuMiscKernels, EinsumBatchedProductsAndDiagonals) {
  std::mt19937 rng(9);
  const Tensor a = random_f32({2, 3, 4, 5}, rng), b = random_f32({2, 3, 6, 5}, rng);
  OpNode n("Einsum", 12, 2);
  n.attr("equation", std::string("bhqd,bhkd->bhqk"));
  const Tensor y = n.run({a, b}, 1, 2)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 6}));
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t q = 0; q < 4; ++q)
      for (int64_t k = 0; k < 6; ++k) {
        double acc = 0;
        for (int64_t d = 0; d < 5; ++d) acc += double(a.data<float>()[(bh * 4 + q) * 5 + d]) * b.data<float>()[(bh * 6 + k) * 5 + d];
        ASSERT_NEAR(y.data<float>()[(bh * 4 + q) * 6 + k], acc, 1e-5);
      }
  // Output order that needs a final permute, and an implicit output.
  OpNode t("Einsum", 12, 2);
  t.attr("equation", std::string("ij,jk->ki"));
  const Tensor m = iota_f32({2, 3}), k = iota_f32({3, 2});
  EXPECT_EQ(floats(t.run({m, k})[0]), (std::vector<float>{10, 28, 13, 40}));
  OpNode imp("Einsum", 12, 2);
  imp.attr("equation", std::string("ij,jk"));
  EXPECT_EQ(floats(imp.run({m, k})[0]), (std::vector<float>{10, 13, 28, 40}));
  // Diagonal, trace over one operand, broadcast ellipsis and int64 go through the loop.
  OpNode diag("Einsum", 12, 1);
  diag.attr("equation", std::string("ii->i"));
  EXPECT_EQ(floats(diag.run({iota_f32({3, 3})})[0]), (std::vector<float>{0, 4, 8}));
  OpNode trace("Einsum", 12, 1);
  trace.attr("equation", std::string("ii"));
  EXPECT_EQ(floats(trace.run({iota_f32({3, 3})})[0]), (std::vector<float>{12}));
  OpNode ell("Einsum", 12, 2);
  ell.attr("equation", std::string("...ij,...jk->...ik"));
  const Tensor e = ell.run({Tensor::from_vector<int64_t>({1, 2, 3, 4}, {1, 2, 2}),
                            Tensor::from_vector<int64_t>({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2})})[0];
  EXPECT_EQ(e.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(ints(e), (std::vector<int64_t>{1, 2, 3, 4, 2, 4, 6, 8}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { t.run({m, iota_f32({4, 2})}); });
}

TEST(CpuMiscKernels, TopKOrdersTiesByIndexAndSurvivesNaN) {
  OpNode n("TopK", 11, 2, 2);
  const auto outs = n.run({f32({1, 3, 3, NAN, 2, 3}, {6}), i64({4})}, 2);
  EXPECT_EQ(ints(outs[1]), (std::vector<int64_t>{3, 1, 2, 5}));
  OpNode s("TopK", 11, 2, 2);
  s.attr("largest", int64_t{0});
  s.attr("axis", int64_t{0});
  const auto small = s.run({iota_f32({4, 2}), i64({2})}, 2);
  EXPECT_EQ(floats(small[0]), (std::vector<float>{0, 1, 2, 3}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({f32({1, 2}, {2}), i64({3})}, 2); });
}

TEST(CpuMiscKernels, UniqueUnsortedAndAlongAnAxis) {
  OpNode n("Unique", 11, 1, 4);
  n.attr("sorted", int64_t{0});
  const auto o = n.run({f32({2, 1, 1, 3, 4, 3}, {6})}, 4);
  EXPECT_EQ(floats(o[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(ints(o[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints(o[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints(o[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  OpNode a("Unique", 11, 1, 4);
  a.attr("axis", int64_t{0});
  const auto r = a.run({f32({1, 0, 0, 1, 1, 0}, {3, 2})}, 4);
  EXPECT_EQ(floats(r[0]), (std::vector<float>{0, 1, 1, 0}));
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{1, 0, 1}));
}

TEST(CpuMiscKernels, TriluReverseSequenceNms) {
  OpNode t("Trilu", 14, 2);
  t.attr("upper", int64_t{0});
  EXPECT_EQ(floats(t.run({iota_f32({2, 3}), i64({-1})})[0]), (std::vector<float>{0, 0, 0, 3, 0, 0}));
  OpNode rs("ReverseSequence", 10, 2);
  rs.attr("time_axis", int64_t{1});
  rs.attr("batch_axis", int64_t{0});
  EXPECT_EQ(floats(rs.run({iota_f32({2, 3}), i64({2, 3})})[0]), (std::vector<float>{1, 0, 2, 5, 4, 3}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { rs.run({iota_f32({2, 3}), i64({4, 0})}); });
  OpNode nms("NonMaxSuppression", 11, 5);
  const Tensor boxes = f32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, {1, 3, 4});
  const Tensor scores = f32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  const Tensor y = nms.run({boxes, scores, i64({3}), f32({0.5f}, {1}), f32({0.0f}, {1})})[0];
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

TEST(CpuMiscKernels, GridSampleIdentityGridReproducesTheInput) {
  const Tensor x = iota_f32({1, 2, 3, 4});
  Tensor grid = Tensor::allocate(DType::F32, {1, 3, 4, 2});
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t w = 0; w < 4; ++w) {
      grid.data<float>()[(h * 4 + w) * 2] = -1 + 2.0f * static_cast<float>(w) / 3;
      grid.data<float>()[(h * 4 + w) * 2 + 1] = -1 + 2.0f * static_cast<float>(h) / 2;
    }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    OpNode g("GridSample", 16, 2);
    g.attr("mode", std::string(mode));
    g.attr("align_corners", int64_t{1});
    const auto y = floats(g.run({x, grid})[0]);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], static_cast<float>(i), 1e-4) << mode;
  }
}

}  // namespace

}  // namespace hetero::cpu::testing
