// The CPU driver's pooling, normalisation and layout kernels against naive
// loops, channels-first and channels-last.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "drivers/cpu/post_ops.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

// These kernels are threaded: run them on two threads.
constexpr int kThreads = 2;

core::Tensor nchw_to_nhwc(const core::Tensor& t) {
  const int64_t n = t.dim(0), c = t.dim(1), hw = static_cast<int64_t>(t.numel()) / (n * c);
  core::Shape s{n};
  s.insert(s.end(), t.shape().begin() + 2, t.shape().end());
  s.push_back(c);
  core::Tensor r = core::Tensor::allocate(t.dtype(), s);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < hw; ++k) r.data<float>()[(i * hw + k) * c + j] = t.data<float>()[(i * c + j) * hw + k];
  return r;
}

struct Pool2d {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool ceil;
};

// Naive 2-D pooling with ONNX's semantics.
core::Tensor ref_pool(const core::Tensor& x, const Pool2d& p, const std::string& kind, bool include_pad,
                      core::Tensor* indices) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  auto out_dim = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t b, int64_t e) {
    const int64_t span = in + b + e - ((k - 1) * d + 1);
    int64_t o = (p.ceil ? (span + s - 1) / s : span / s) + 1;
    if (p.ceil && (o - 1) * s >= in + b) --o;
    return o;
  };
  const int64_t OH = out_dim(H, p.kh, p.sh, p.dh, p.pt, p.pb), OW = out_dim(W, p.kw, p.sw, p.dw, p.pl, p.pr);
  core::Tensor y = core::Tensor::allocate(core::DType::F32, {N, C, OH, OW});
  if (indices) *indices = core::Tensor::allocate(core::DType::I64, {N, C, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = kind == "max" ? -1e30 : 0;
          int64_t count = 0, best = -1;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              const int64_t h = oh * p.sh - p.pt + i * p.dh, w = ow * p.sw - p.pl + j * p.dw;
              const bool inside = h >= 0 && h < H && w >= 0 && w < W;
              const bool in_pads = h >= -p.pt && h < H + p.pb && w >= -p.pl && w < W + p.pr;
              if (include_pad ? in_pads : inside) ++count;
              if (!inside) continue;
              const int64_t idx = ((n * C + c) * H + h) * W + w;
              const double v = x.data<float>()[idx];
              if (kind == "max") {
                if (v > acc) acc = v, best = idx;
              } else {
                acc += v;
              }
            }
          const int64_t o = ((n * C + c) * OH + oh) * OW + ow;
          y.data<float>()[o] = static_cast<float>(kind == "max" ? acc : acc / count);
          if (indices) indices->data<int64_t>()[o] = best;
        }
  return y;
}

TEST(CpuPool, MaxAndAverage2d) {
  std::mt19937 rng(41);
  const std::vector<Pool2d> cases = {
      {2, 2, 2, 2, 1, 1, 0, 0, 0, 0, false}, {3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {3, 2, 2, 1, 1, 1, 0, 1, 1, 0, true},  {3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false},
      {2, 3, 3, 2, 1, 2, 1, 0, 0, 1, true},
  };
  for (const Pool2d& p : cases) {
    const core::Tensor x = random_f32({2, 5, 9, 8}, rng);
    for (const std::string kind : {"max", "avg"}) {
      for (bool include_pad : {false, true}) {
        if (kind == "max" && include_pad) continue;
        for (bool channels_last : {false, true}) {
          KernelNode nb(kind == "max" ? "MaxPool" : "AveragePool", channels_last ? 1 : 12, 1, kind == "max" ? 2 : 1,
                        channels_last ? kCpuDomain : "");
          nb.attr_ints("kernel_shape", {p.kh, p.kw}).attr_ints("strides", {p.sh, p.sw});
          nb.attr_ints("pads", {p.pt, p.pl, p.pb, p.pr});
          if (p.dh != 1 || p.dw != 1) nb.attr_ints("dilations", {p.dh, p.dw});
          nb.attr_int("ceil_mode", p.ceil).attr_int("count_include_pad", include_pad);
          if (channels_last) {
            nb.attr_int(kChannelsLastAttr, 1);
            if (kind == "max") nb.node->outputs.resize(1);
          }
          const size_t outs = kind == "max" && !channels_last ? 2 : 1;
          const auto y = nb.run({channels_last ? nchw_to_nhwc(x) : x}, outs, kThreads);
          core::Tensor idx;
          const core::Tensor expected = ref_pool(x, p, kind, include_pad, outs == 2 ? &idx : nullptr);
          EXPECT_TRUE(all_close(y[0], channels_last ? nchw_to_nhwc(expected) : expected))
              << kind << " k" << p.kh << "x" << p.kw << " include_pad " << include_pad << " cl " << channels_last;
          if (outs == 2) {
            EXPECT_EQ(0, std::memcmp(y[1].raw(), idx.raw(), idx.nbytes())) << "indices";
          }
          if (kind == "max" && channels_last) {
            // 8-bit codes (the int8 pass's MaxPool), whose max is taken in bytes.
            core::Tensor as_float = core::Tensor::allocate(core::DType::F32, x.shape());
            for (size_t i = 0; i < x.numel(); ++i)
              as_float.data<float>()[i] = std::clamp(std::nearbyint(x.data<float>()[i] * 40.0f) + 128.0f, 0.0f, 255.0f);
            const core::Tensor float_nhwc = nchw_to_nhwc(as_float);
            core::Tensor codes = core::Tensor::allocate(core::DType::U8, float_nhwc.shape());
            for (size_t i = 0; i < codes.numel(); ++i)
              codes.data<uint8_t>()[i] = static_cast<uint8_t>(float_nhwc.data<float>()[i]);
            const core::Tensor want = nchw_to_nhwc(ref_pool(as_float, p, kind, false, nullptr));
            const auto got = nb.run({codes}, 1, kThreads);
            ASSERT_EQ(got[0].numel(), want.numel());
            for (size_t i = 0; i < want.numel(); ++i)
              ASSERT_EQ(got[0].data<uint8_t>()[i], static_cast<uint8_t>(want.data<float>()[i])) << "uint8 at " << i;
          }
        }
      }
    }
  }
}

TEST(CpuPool, GlobalPoolsAndLp) {
  std::mt19937 rng(42);
  const core::Tensor x = random_f32({2, 19, 7, 5}, rng);
  for (bool channels_last : {false, true}) {
    for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      KernelNode nb(op, channels_last ? 1 : 12, 1, 1, channels_last ? kCpuDomain : "");
      if (channels_last) nb.attr_int(kChannelsLastAttr, 1);
      const auto y = nb.run({channels_last ? nchw_to_nhwc(x) : x}, 1, kThreads);
      core::Tensor expected = core::Tensor::allocate(core::DType::F32, {2, 19, 1, 1});
      for (int64_t p = 0; p < 38; ++p) {
        double acc = op == "GlobalMaxPool" ? -1e30 : 0;
        for (int64_t k = 0; k < 35; ++k) {
          const double v = x.data<float>()[p * 35 + k];
          acc = op == "GlobalMaxPool" ? std::max(acc, v) : acc + v / 35;
        }
        expected.data<float>()[p] = static_cast<float>(acc);
      }
      EXPECT_TRUE(all_close(y[0], channels_last ? expected.reshaped({2, 1, 1, 19}) : expected)) << op << channels_last;
    }
  }
  KernelNode nb("LpPool", 17, 1);
  nb.attr_ints("kernel_shape", {2, 2}).attr_ints("strides", {2, 2}).attr_int("p", 3);
  const auto y = nb.run({x}, 1, kThreads);
  ASSERT_EQ(y[0].shape(), (core::Shape{2, 19, 3, 2}));
  double acc = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j) acc += std::pow(std::fabs(x.data<float>()[i * 5 + j]), 3.0);
  EXPECT_NEAR(y[0].data<float>()[0], std::pow(acc, 1.0 / 3), 1e-5);
}

TEST(CpuNorm, BatchNormChannelsFirstAndLast) {
  std::mt19937 rng(43);
  const core::Tensor x = random_f32({2, 6, 4, 5}, rng), scale = random_f32({6}, rng),
                     bias = random_f32({6}, rng), mean = random_f32({6}, rng),
                     var = random_f32({6}, rng, 0.1f, 2.0f);
  core::Tensor expected = core::Tensor::allocate(core::DType::F32, x.shape());
  for (size_t i = 0; i < x.numel(); ++i) {
    const size_t c = i / 20 % 6;
    expected.data<float>()[i] = (x.data<float>()[i] - mean.data<float>()[c]) /
                                    std::sqrt(var.data<float>()[c] + 1e-3f) * scale.data<float>()[c] +
                                bias.data<float>()[c];
  }
  for (bool channels_last : {false, true}) {
    KernelNode nb("BatchNormalization", channels_last ? 1 : 15, 5, 1, channels_last ? kCpuDomain : "");
    nb.attr_float("epsilon", 1e-3f);
    if (channels_last) nb.attr_int(kChannelsLastAttr, 1);
    const auto y = nb.run({channels_last ? nchw_to_nhwc(x) : x, scale, bias, mean, var}, 1, kThreads);
    EXPECT_TRUE(all_close(y[0], channels_last ? nchw_to_nhwc(expected) : expected)) << channels_last;
  }
}

TEST(CpuNorm, InstanceLayerAndLrn) {
  std::mt19937 rng(44);
  const core::Tensor x = random_f32({2, 3, 4, 5}, rng, -3, 3), s = random_f32({3}, rng), b = random_f32({3}, rng);
  {
    KernelNode nb("InstanceNormalization", 17, 3);
    nb.attr_float("epsilon", 1e-2f);
    const auto y = nb.run({x, s, b}, 1, kThreads);
    for (int64_t p = 0; p < 6; ++p) {
      double mean = 0, var = 0;
      for (int k = 0; k < 20; ++k) mean += x.data<float>()[p * 20 + k] / 20.0;
      for (int k = 0; k < 20; ++k) var += std::pow(x.data<float>()[p * 20 + k] - mean, 2) / 20.0;
      for (int k = 0; k < 20; ++k) {
        const double e = (x.data<float>()[p * 20 + k] - mean) / std::sqrt(var + 1e-2) * s.data<float>()[p % 3] +
                         b.data<float>()[p % 3];
        EXPECT_NEAR(y[0].data<float>()[p * 20 + k], e, 1e-4);
      }
    }
  }
  {
    // Normalise over the last two dims, with a scale broadcast along the last.
    const core::Tensor scale = random_f32({1, 5}, rng), bias = random_f32({4, 5}, rng);
    KernelNode nb("LayerNormalization", 17, 3, 3);
    nb.attr_int("axis", -2);
    const auto y = nb.run({x, scale, bias}, 3, kThreads);
    ASSERT_EQ(y[1].shape(), (core::Shape{2, 3, 1, 1}));
    for (int64_t o = 0; o < 6; ++o) {
      double mean = 0, var = 0;
      for (int k = 0; k < 20; ++k) mean += x.data<float>()[o * 20 + k] / 20.0;
      for (int k = 0; k < 20; ++k) var += std::pow(x.data<float>()[o * 20 + k] - mean, 2) / 20.0;
      EXPECT_NEAR(y[1].data<float>()[o], mean, 1e-5);
      EXPECT_NEAR(y[2].data<float>()[o], 1 / std::sqrt(var + 1e-5), 1e-3);
      for (int k = 0; k < 20; ++k) {
        const double e = (x.data<float>()[o * 20 + k] - mean) / std::sqrt(var + 1e-5) * scale.data<float>()[k % 5] +
                         bias.data<float>()[k];
        EXPECT_NEAR(y[0].data<float>()[o * 20 + k], e, 1e-4);
      }
    }
  }
  {
    KernelNode nb("LRN", 17, 1);
    nb.attr_int("size", 3).attr_float("alpha", 0.1f).attr_float("beta", 0.6f).attr_float("bias", 2.0f);
    const auto y = nb.run({x}, 1, kThreads);
    for (size_t i = 0; i < x.numel(); ++i) {
      const int64_t c = static_cast<int64_t>(i) / 20 % 3;
      double sq = 0;
      for (int64_t j = std::max<int64_t>(0, c - 1); j <= std::min<int64_t>(2, c + 1); ++j) {
        const double v = x.data<float>()[i + (j - c) * 20];
        sq += v * v;
      }
      EXPECT_NEAR(y[0].data<float>()[i], x.data<float>()[i] / std::pow(2.0 + 0.1 / 3 * sq, 0.6), 1e-5);
    }
  }
}

TEST(CpuLayout, RoundTripAndViews) {
  std::mt19937 rng(45);
  for (const core::Shape& s : {core::Shape{2, 5, 3, 4}, core::Shape{1, 3, 7}, core::Shape{1, 2, 3, 4, 5},
                               core::Shape{2, 1, 3, 3}, core::Shape{2, 7, 1, 1}}) {
    const core::Tensor x = random_f32(s, rng);
    KernelNode to_last("ToChannelsLast", 1, 1, 1, kCpuDomain);
    const auto cl = to_last.run({x}, 1, kThreads);
    EXPECT_TRUE(all_close(cl[0], nchw_to_nhwc(x), 0, 0)) << core::shape_to_string(s);
    KernelNode to_first("ToChannelsFirst", 1, 1, 1, kCpuDomain);
    const auto cf = to_first.run({cl[0]}, 1, kThreads);
    EXPECT_TRUE(all_close(cf[0], x, 0, 0)) << core::shape_to_string(s);
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
