// The CPU driver's shape and data-movement kernels against naive index
// loops, on random shapes, every element size, one and several threads, and
// the errors bad requests must raise instead of reading out of bounds.
#include <algorithm>
#include <numeric>

#include "tests/unit/shape_test_util.h"

namespace hetero::cpu::testing {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// Multi-index of flat position i in `shape`.
std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

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
      OpNode n("Transpose", 13, 1);
      n.attr("perm", perm);
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
  OpNode n("Transpose", 13, 1);
  n.attr("perm", std::vector<int64_t>{0, 2, 3, 1});
  const Tensor y = n.run({x}, 1, 4)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 28, 30, 64}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 64; ++c)
      for (int64_t h = 0; h < 28; ++h)
        for (int64_t w = 0; w < 30; ++w)
          ASSERT_EQ(y.data<float>()[((b * 28 + h) * 30 + w) * 64 + c], x.data<float>()[((b * 64 + c) * 28 + h) * 30 + w]);
}

TEST(CpuShapeKernels, TransposeOfUnitDimsIsAView) {
  const Tensor x = iota_f32({1, 5, 1, 4});
  OpNode n("Transpose", 13, 1);
  n.attr("perm", std::vector<int64_t>{2, 1, 0, 3});
  const Tensor y = n.run({x})[0];
  EXPECT_EQ(y.raw(), x.raw());
  EXPECT_EQ(y.shape(), (Shape{1, 5, 1, 4}));
}

TEST(CpuShapeKernels, ReshapeCopiesZerosInfersMinusOneAndRejectsBadTargets) {
  const Tensor x = iota_f32({2, 3, 4});
  OpNode n("Reshape", 13, 2);
  Tensor y = n.run({x, i64({0, -1})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.raw(), x.raw());
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({-1, -1})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({5, -1})}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({0, 0, 0, 0})}); });
  OpNode z("Reshape", 14, 2);
  z.attr("allowzero", int64_t{1});
  const Tensor empty = Tensor::allocate(DType::F32, {0, 3});
  EXPECT_EQ(z.run({empty, i64({3, 0})})[0].shape(), (Shape{3, 0}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { z.run({empty, i64({0, -1})}); });
}

TEST(CpuShapeKernels, SqueezeAndUnsqueezeInBothOpsetForms) {
  const Tensor x = iota_f32({1, 3, 1, 2});
  OpNode s11("Squeeze", 11, 1);
  s11.attr("axes", std::vector<int64_t>{-2});
  EXPECT_EQ(s11.run({x})[0].shape(), (Shape{1, 3, 2}));
  OpNode s13("Squeeze", 13, 2);
  EXPECT_EQ(s13.run({x, std::nullopt})[0].shape(), (Shape{3, 2}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { s13.run({x, i64({1})}); });
  OpNode u13("Unsqueeze", 13, 2);
  EXPECT_EQ(u13.run({x, i64({0, -1})})[0].shape(), (Shape{1, 1, 3, 1, 2, 1}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { u13.run({x, i64({1, 1})}); });
}

TEST(CpuShapeKernels, ExpandAndTileMatchNaive) {
  std::mt19937 rng(3);
  const Tensor x = random_f32({3, 1, 5}, rng);
  OpNode e("Expand", 13, 2);
  const Tensor y = e.run({x, i64({2, 1, 4, 1})})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4, 5}));
  for (int64_t i = 0; i < static_cast<int64_t>(y.numel()); ++i) {
    const auto o = unravel(i, y.shape());
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[o[1] * 5 + o[3]]);
  }
  expect_status(HETERO_INVALID_ARGUMENT, [&] { e.run({x, i64({2, 4})}); });
  OpNode t("Tile", 13, 2);
  const Tensor z = t.run({x, i64({2, 3, 2})})[0];
  ASSERT_EQ(z.shape(), (Shape{6, 3, 10}));
  for (int64_t i = 0; i < static_cast<int64_t>(z.numel()); ++i) {
    const auto o = unravel(i, z.shape());
    ASSERT_EQ(z.data<float>()[i], x.data<float>()[(o[0] % 3) * 5 + o[2] % 5]);
  }
}

TEST(CpuShapeKernels, ConcatThreadedMatchesNaiveAndChecksShapes) {
  std::mt19937 rng(5);
  const Tensor a = random_f32({4, 3, 40, 40}, rng), b = random_f32({4, 5, 40, 40}, rng);
  OpNode n("Concat", 13, 2);
  n.attr("axis", int64_t{1});
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

TEST(CpuShapeKernels, SplitPartsAreViewsAlongTheOuterAxis) {
  const Tensor x = iota_f32({6, 2});
  OpNode n("Split", 13, 2, 2);
  const auto ys = n.run({x, i64({2, 4})}, 2);
  EXPECT_EQ(ys[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(ys[1].raw(), static_cast<const float*>(x.raw()) + 4);
  EXPECT_EQ(floats(ys[1]), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  OpNode m("Split", 13, 1, 2);
  m.attr("axis", int64_t{1});
  const auto zs = m.run({x}, 2);
  EXPECT_EQ(floats(zs[1]), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { n.run({x, i64({2, 3})}, 2); });
  OpNode k("Split", 18, 1, 3);
  k.attr("num_outputs", int64_t{3});
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

TEST(CpuShapeKernels, SliceMatchesPythonSemanticsOnRandomCases) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> pos(-9, 9);
  const Tensor x = iota_f32({5, 6, 7});
  OpNode n("Slice", 13, 5);
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

TEST(CpuShapeKernels, PadModesMatchNaive) {
  const Tensor x = iota_f32({2, 3, 4});
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    OpNode n("Pad", 13, 3);
    n.attr("mode", std::string(mode));
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
  OpNode old("Pad", 2, 1);
  old.attr("pads", std::vector<int64_t>{1, 1});
  old.attr("value", 2.5f);
  EXPECT_EQ(floats(old.run({f32({1, 2}, {2})})[0]), (std::vector<float>{2.5f, 1, 2, 2.5f}));
}

TEST(CpuShapeKernels, GatherFamilyChecksEveryIndex) {
  std::mt19937 rng(2);
  const Tensor x = random_f32({4, 300, 8}, rng);
  OpNode g("Gather", 13, 2);
  g.attr("axis", int64_t{1});
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
  OpNode ge("GatherElements", 13, 2);
  ge.attr("axis", int64_t{1});
  const Tensor gi = Tensor::from_vector<int64_t>({0, -1, 1, 1, 2, 0}, {3, 2});
  EXPECT_EQ(floats(ge.run({m, gi})[0]), (std::vector<float>{0, 2, 4, 4, 8, 6}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { ge.run({m, Tensor::from_vector<int64_t>({3}, {1, 1})}); });
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { ge.run({m, Tensor::allocate(DType::I64, {4, 1})}); });

  OpNode nd("GatherND", 13, 2);
  nd.attr("batch_dims", int64_t{1});
  const Tensor d = iota_f32({2, 3, 2});
  const Tensor ndi = Tensor::from_vector<int64_t>({2, 0}, {2, 1});
  EXPECT_EQ(floats(nd.run({d, ndi})[0]), (std::vector<float>{4, 5, 6, 7}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { nd.run({d, Tensor::from_vector<int64_t>({3, 0}, {2, 1})}); });
}

TEST(CpuShapeKernels, ScatterReductionsAndBounds) {
  const Tensor data = f32({1, 1, 1, 1, 1}, {1, 5});
  OpNode s("ScatterElements", 16, 3);
  s.attr("axis", int64_t{1});
  s.attr("reduction", std::string("add"));
  const Tensor idx = Tensor::from_vector<int64_t>({1, 1, -1}, {1, 3});
  EXPECT_EQ(floats(s.run({data, idx, f32({2, 3, 4}, {1, 3})})[0]), (std::vector<float>{1, 6, 1, 1, 5}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] {
    s.run({data, Tensor::from_vector<int64_t>({5}, {1, 1}), f32({1}, {1, 1})});
  });
  OpNode nd("ScatterND", 16, 3);
  nd.attr("reduction", std::string("mul"));
  const Tensor d2 = iota_f32({2, 2});
  EXPECT_EQ(floats(nd.run({d2, Tensor::from_vector<int64_t>({1}, {1, 1}), f32({2, 3}, {1, 2})})[0]),
            (std::vector<float>{0, 1, 4, 9}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] {
    nd.run({d2, Tensor::from_vector<int64_t>({2}, {1, 1}), f32({2, 3}, {1, 2})});
  });
}

TEST(CpuShapeKernels, CompressNonZeroOneHot) {
  const Tensor x = iota_f32({3, 2});
  OpNode c("Compress", 11, 2);
  c.attr("axis", int64_t{0});
  const Tensor cond = Tensor::from_vector<bool>({false, true, true}, {3});
  EXPECT_EQ(floats(c.run({x, cond})[0]), (std::vector<float>{2, 3, 4, 5}));
  expect_status(HETERO_INVALID_ARGUMENT,
                [&] { c.run({x, Tensor::from_vector<bool>({0, 0, 0, 1}, {4})}); });
  OpNode nz("NonZero", 13, 1);
  EXPECT_EQ(ints(nz.run({f32({0, 1, -0.0f, 2}, {2, 2})})[0]), (std::vector<int64_t>{0, 1, 1, 1}));
  OpNode oh("OneHot", 11, 3);
  oh.attr("axis", int64_t{0});
  const Tensor y = oh.run({i64({1, -1, 7}), i64({3}), f32({0, 5}, {2})})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{0, 0, 0, 5, 0, 0, 0, 5, 0}));
}

TEST(CpuShapeKernels, DepthSpaceRoundTrip) {
  const Tensor x = iota_f32({1, 8, 2, 3});
  for (const char* mode : {"DCR", "CRD"}) {
    OpNode d2s("DepthToSpace", 13, 1);
    d2s.attr("blocksize", int64_t{2});
    d2s.attr("mode", std::string(mode));
    const Tensor y = d2s.run({x})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
    if (std::string(mode) == "DCR") {
      OpNode s2d("SpaceToDepth", 13, 1);
      s2d.attr("blocksize", int64_t{2});
      EXPECT_EQ(floats(s2d.run({y})[0]), floats(x));
    }
  }
}

TEST(CpuShapeKernels, GeneratorsAndShapeQueries) {
  OpNode sh("Shape", 15, 1);
  sh.attr("start", int64_t{-3});
  sh.attr("end", int64_t{-1});
  EXPECT_EQ(ints(sh.run({iota_f32({2, 3, 4, 5})})[0]), (std::vector<int64_t>{3, 4}));
  OpNode r("Range", 11, 3);
  EXPECT_EQ(ints(r.run({i64({10}), i64({3}), i64({-3})})[0]), (std::vector<int64_t>{10, 7, 4}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { r.run({i64({1}), i64({3}), i64({0})}); });
  OpNode e("EyeLike", 9, 1);
  e.attr("k", int64_t{1});
  EXPECT_EQ(floats(e.run({iota_f32({2, 3})})[0]), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  OpNode cs("ConstantOfShape", 9, 1);
  EXPECT_EQ(cs.run({i64({2, 0})})[0].shape(), (Shape{2, 0}));
  // (Dropout: test_cpu_random.cpp.)
}

}  // namespace

}  // namespace hetero::cpu::testing
