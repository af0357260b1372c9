// The CPU driver's data-movement kernels (Concat, Split, Slice, Pad, the
// Gather and Scatter families, Compress, NonZero, OneHot, DepthToSpace,
// SpaceToDepth, Trilu, ReverseSequence) against naive index loops, threaded
// and not, and the index checks that keep bad requests from reading or
// writing out of bounds.
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

TEST(CpuDataMovement, ConcatThreadedMatchesNaiveAndChecksShapes) {
  std::mt19937 rng(5);
  const Tensor a = random_f32({4, 3, 40, 40}, rng), b = random_f32({4, 5, 40, 40}, rng);
  KernelNode n("Concat", 13, 2);
  n.attr_int("axis", 1);
  const Tensor y = n.run({a, b}, 1, 4)[0];
  ASSERT_EQ(y.shape(), (Shape{4, 8, 40, 40}));
  for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
    auto o = unravel(i, y.shape());
    const bool from_a = o[1] < 3;
    if (!from_a) o[1] -= 3;
    const Tensor& src = from_a ? a : b;
    ASSERT_EQ(y.data<float>()[i], src.data<float>()[ravel(o, src.shape())]);
  }
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({a, random_f32({4, 5, 40, 41}, rng)}); });
}

TEST(CpuDataMovement, SplitPartsAreViewsAlongTheOuterAxis) {
  const Tensor x = iota_f32({6, 2});
  KernelNode n("Split", 13, 2, 2);
  const auto ys = n.run({x, i64({2, 4})}, 2);
  EXPECT_EQ(ys[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(ys[1].raw(), static_cast<const float*>(x.raw()) + 4);
  EXPECT_EQ(floats(ys[1]), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  KernelNode m("Split", 13, 1, 2);
  m.attr_int("axis", 1);
  const auto zs = m.run({x}, 2);
  EXPECT_EQ(floats(zs[1]), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({2, 3})}, 2); });
  KernelNode k("Split", 18, 1, 3);
  k.attr_int("num_outputs", 3);
  const auto ks = k.run({iota_f32({7})}, 3);
  EXPECT_EQ(ks[2].shape(), (Shape{1}));
}

// Python's slice.indices(): the reference the kernel's clamping must match.
std::vector<int64_t> py_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? dim : dim - 1;
  auto fix = [&](int64_t v) {
    if (v < 0) return std::max(v + dim, lower);
    return std::min(v, upper);
  };
  std::vector<int64_t> out;
  for (int64_t i = fix(start); step > 0 ? i < fix(end) : i > fix(end); i += step) out.push_back(i);
  return out;
}

TEST(CpuDataMovement, SliceMatchesPythonSemanticsOnRandomCases) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> pos(-9, 9);
  const Tensor x = iota_f32({5, 6, 7});
  KernelNode n("Slice", 13, 5);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t a = 0; a < 3; ++a) {
      if (rng() % 3 == 0) continue;
      axes.push_back(rng() % 2 ? a : a - 3);
      starts.push_back(pos(rng));
      ends.push_back(rng() % 5 == 0 ? (rng() % 2 ? INT64_MAX : INT64_MIN) : pos(rng));
      int64_t st = pos(rng) / 3;
      steps.push_back(st == 0 ? 1 : st);
    }
    const Tensor y = n.run({x, i64(starts), i64(ends), i64(axes), i64(steps)}, 1, 1 + trial % 2)[0];
    std::vector<std::vector<int64_t>> sel(3);
    for (int64_t d = 0; d < 3; ++d) {
      sel[d].resize(static_cast<size_t>(x.dim(d)));
      std::iota(sel[d].begin(), sel[d].end(), 0);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + 3 : axes[i];
      sel[a] = py_slice(x.dim(a), starts[i], ends[i], steps[i]);
    }
    const Shape expect{static_cast<int64_t>(sel[0].size()), static_cast<int64_t>(sel[1].size()),
                       static_cast<int64_t>(sel[2].size())};
    ASSERT_EQ(y.shape(), expect) << "trial " << trial;
    for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
      const auto o = unravel(i, expect);
      ASSERT_EQ(y.data<float>()[i], x.data<float>()[(sel[0][o[0]] * 6 + sel[1][o[1]]) * 7 + sel[2][o[2]]]);
    }
  }
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({0}), i64({1}), i64({0}), i64({0})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({0, 0}), i64({1, 1}), i64({1, -2}), std::nullopt}); });
}

TEST(CpuDataMovement, PadModesMatchNaive) {
  const Tensor x = iota_f32({2, 3, 4});
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    KernelNode n("Pad", 13, 3);
    n.attr_string("mode", mode);
    const std::vector<int64_t> pads{0, 2, -1, 1, 3, 5};
    const Tensor y = n.run({x, i64(pads), f32({-7}, {})})[0];
    ASSERT_EQ(y.shape(), (Shape{3, 8, 8})) << mode;
    for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
      const auto o = unravel(i, y.shape());
      float expect = 0;
      bool border = false;
      std::vector<int64_t> src(3);
      for (size_t d = 0; d < 3; ++d) {
        int64_t s = o[d] - pads[d];
        const int64_t n_d = x.dim(d);
        if (s < 0 || s >= n_d) {
          const std::string m = mode;
          if (m == "constant") border = true;
          if (m == "edge") s = std::clamp<int64_t>(s, 0, n_d - 1);
          if (m == "wrap") s = ((s % n_d) + n_d) % n_d;
          if (m == "reflect")
            while (s < 0 || s >= n_d) s = s < 0 ? -s : 2 * (n_d - 1) - s;
        }
        src[d] = s;
      }
      expect = border ? -7.0f : x.data<float>()[ravel(src, x.shape())];
      ASSERT_EQ(y.data<float>()[i], expect) << mode << " at " << i;
    }
  }
  KernelNode old("Pad", 2, 1);
  old.attr_ints("pads", {1, 1});
  old.attr_float("value", 2.5f);
  EXPECT_EQ(floats(old.run({f32({1, 2}, {2})})[0]), (std::vector<float>{2.5f, 1, 2, 2.5f}));
}

TEST(CpuDataMovement, GatherFamilyChecksEveryIndex) {
  std::mt19937 rng(2);
  const Tensor x = random_f32({4, 300, 8}, rng);
  KernelNode g("Gather", 13, 2);
  g.attr_int("axis", 1);
  std::vector<int64_t> idx;
  for (int i = 0; i < 500; ++i) idx.push_back(static_cast<int64_t>(rng() % 600) - 300);
  const Tensor y = g.run({x, i64(idx)}, 1, 4)[0];
  ASSERT_EQ(y.shape(), (Shape{4, 500, 8}));
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t j = 0; j < 500; ++j) {
      const int64_t s = idx[j] < 0 ? idx[j] + 300 : idx[j];
      for (int64_t e = 0; e < 8; ++e)
        ASSERT_EQ(y.data<float>()[(b * 500 + j) * 8 + e], x.data<float>()[(b * 300 + s) * 8 + e]);
    }
  expect_status(HETERO_INVALID_ARGUMENT, [&] { g.run({x, i64({300})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { g.run({x, i64({-301})}); });

  const Tensor m = iota_f32({3, 3});
  KernelNode ge("GatherElements", 13, 2);
  ge.attr_int("axis", 1);
  const Tensor gi = Tensor::from_vector<int64_t>({0, -1, 1, 1, 2, 0}, {3, 2});
  EXPECT_EQ(floats(ge.run({m, gi})[0]), (std::vector<float>{0, 2, 4, 4, 8, 6}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { ge.run({m, Tensor::from_vector<int64_t>({3}, {1, 1})}); });
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { ge.run({m, Tensor::allocate(DType::I64, {4, 1})}); });

  KernelNode nd("GatherND", 13, 2);
  nd.attr_int("batch_dims", 1);
  const Tensor d = iota_f32({2, 3, 2});
  const Tensor ndi = Tensor::from_vector<int64_t>({2, 0}, {2, 1});
  EXPECT_EQ(floats(nd.run({d, ndi})[0]), (std::vector<float>{4, 5, 6, 7}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { nd.run({d, Tensor::from_vector<int64_t>({3, 0}, {2, 1})}); });
}

TEST(CpuDataMovement, ScatterReductionsAndBounds) {
  const Tensor data = f32({1, 1, 1, 1, 1}, {1, 5});
  KernelNode s("ScatterElements", 16, 3);
  s.attr_int("axis", 1);
  s.attr_string("reduction", "add");
  const Tensor idx = Tensor::from_vector<int64_t>({1, 1, -1}, {1, 3});
  EXPECT_EQ(floats(s.run({data, idx, f32({2, 3, 4}, {1, 3})})[0]), (std::vector<float>{1, 6, 1, 1, 5}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] {
    s.run({data, Tensor::from_vector<int64_t>({5}, {1, 1}), f32({1}, {1, 1})});
  });
  KernelNode nd("ScatterND", 16, 3);
  nd.attr_string("reduction", "mul");
  const Tensor d2 = iota_f32({2, 2});
  EXPECT_EQ(floats(nd.run({d2, Tensor::from_vector<int64_t>({1}, {1, 1}), f32({2, 3}, {1, 2})})[0]),
            (std::vector<float>{0, 1, 4, 9}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] {
    nd.run({d2, Tensor::from_vector<int64_t>({2}, {1, 1}), f32({2, 3}, {1, 2})});
  });
}

TEST(CpuDataMovement, CompressNonZeroOneHot) {
  const Tensor x = iota_f32({3, 2});
  KernelNode c("Compress", 11, 2);
  c.attr_int("axis", 0);
  const Tensor cond = Tensor::from_vector<bool>({false, true, true}, {3});
  EXPECT_EQ(floats(c.run({x, cond})[0]), (std::vector<float>{2, 3, 4, 5}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { c.run({x, Tensor::from_vector<bool>({0, 0, 0, 1}, {4})}); });
  KernelNode nz("NonZero", 13, 1);
  EXPECT_EQ(ints(nz.run({f32({0, 1, -0.0f, 2}, {2, 2})})[0]), (std::vector<int64_t>{0, 1, 1, 1}));
  KernelNode oh("OneHot", 11, 3);
  oh.attr_int("axis", 0);
  const Tensor y = oh.run({i64({1, -1, 7}), i64({3}), f32({0, 5}, {2})})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{0, 0, 0, 5, 0, 0, 0, 5, 0}));
}

TEST(CpuDataMovement, DepthSpaceRoundTrip) {
  const Tensor x = iota_f32({1, 8, 2, 3});
  for (const char* mode : {"DCR", "CRD"}) {
    KernelNode d2s("DepthToSpace", 13, 1);
    d2s.attr_int("blocksize", 2);
    d2s.attr_string("mode", mode);
    const Tensor y = d2s.run({x})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
    if (std::string(mode) == "DCR") {
      KernelNode s2d("SpaceToDepth", 13, 1);
      s2d.attr_int("blocksize", 2);
      EXPECT_EQ(floats(s2d.run({y})[0]), floats(x));
    }
  }
}

TEST(CpuDataMovement, TriluAndReverseSequence) {
  KernelNode t("Trilu", 14, 2);
  t.attr_int("upper", 0);
  EXPECT_EQ(floats(t.run({iota_f32({2, 3}), i64({-1})})[0]), (std::vector<float>{0, 0, 0, 3, 0, 0}));
  KernelNode rs("ReverseSequence", 10, 2);
  rs.attr_int("time_axis", 1);
  rs.attr_int("batch_axis", 0);
  EXPECT_EQ(floats(rs.run({iota_f32({2, 3}), i64({2, 3})})[0]), (std::vector<float>{1, 0, 2, 5, 4, 3}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { rs.run({iota_f32({2, 3}), i64({4, 0})}); });
}

}  // namespace
}  // namespace hetero::cpu::testing
