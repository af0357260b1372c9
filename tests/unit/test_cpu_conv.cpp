// The CPU driver's oneDNN convolution kernels (Conv, ConvTranspose, and the
// hetero.cpu FusedConv with post-ops and channels-last activations) against
// naive loops, on random shapes covering groups, dilations, pads, strides and
// auto_pad, and the post-ops that must fall back to a loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "drivers/cpu/post_ops.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {

namespace {

// oneDNN's kernels are threaded: run them on two threads.
constexpr int kThreads = 2;

struct ConvCase {
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel, strides, dilations, pads;  // pads: begin..., end...
};

// Naive convolution over NC + up to 3 spatial dims.
core::Tensor ref_conv(const core::Tensor& x, const core::Tensor& w, const core::Tensor* b, const ConvCase& c,
                      const std::vector<int64_t>& out) {
  const size_t sp = c.in.size();
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) { return i < v.size() ? v[i] : fallback; };
  int64_t in3[3], k3[3], s3[3], d3[3], p3[3], o3[3];
  for (size_t i = 0; i < 3; ++i) {
    in3[i] = at(c.in, i, 1);
    k3[i] = at(c.kernel, i, 1);
    s3[i] = at(c.strides, i, 1);
    d3[i] = at(c.dilations, i, 1);
    p3[i] = i < sp ? c.pads[i] : 0;
    o3[i] = at(out, i, 1);
  }
  core::Shape yshape{c.n, c.m};
  yshape.insert(yshape.end(), out.begin(), out.end());
  core::Tensor y = core::Tensor::allocate(core::DType::F32, yshape);
  const int64_t cg = c.c / c.group, mg = c.m / c.group;
  const float* X = x.data<float>();
  const float* W = w.data<float>();
  float* Y = y.data<float>();
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t m = 0; m < c.m; ++m) {
      const int64_t g = m / mg;
      for (int64_t o0 = 0; o0 < o3[0]; ++o0)
        for (int64_t o1 = 0; o1 < o3[1]; ++o1)
          for (int64_t o2 = 0; o2 < o3[2]; ++o2) {
            double acc = b ? b->data<float>()[m] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t k0 = 0; k0 < k3[0]; ++k0)
                for (int64_t k1 = 0; k1 < k3[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k3[2]; ++k2) {
                    const int64_t i0 = o0 * s3[0] - p3[0] + k0 * d3[0];
                    const int64_t i1 = o1 * s3[1] - p3[1] + k1 * d3[1];
                    const int64_t i2 = o2 * s3[2] - p3[2] + k2 * d3[2];
                    if (i0 < 0 || i0 >= in3[0] || i1 < 0 || i1 >= in3[1] || i2 < 0 || i2 >= in3[2]) continue;
                    const int64_t xi = (((n * c.c + g * cg + ci) * in3[0] + i0) * in3[1] + i1) * in3[2] + i2;
                    const int64_t wi = (((m * cg + ci) * k3[0] + k0) * k3[1] + k1) * k3[2] + k2;
                    acc += double(X[xi]) * W[wi];
                  }
            Y[(((n * c.m + m) * o3[0] + o0) * o3[1] + o1) * o3[2] + o2] = static_cast<float>(acc);
          }
    }
  return y;
}

std::vector<int64_t> conv_out(const ConvCase& c) {
  std::vector<int64_t> out;
  const size_t sp = c.in.size();
  for (size_t i = 0; i < sp; ++i) {
    const int64_t ek = (c.kernel[i] - 1) * c.dilations[i] + 1;
    out.push_back((c.in[i] + c.pads[i] + c.pads[sp + i] - ek) / c.strides[i] + 1);
  }
  return out;
}

void check_conv(const ConvCase& c, bool constant_weights, bool with_bias, std::mt19937& rng) {
  core::Shape xs{c.n, c.c}, ws{c.m, c.c / c.group};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  const core::Tensor x = random_f32(xs, rng), w = random_f32(ws, rng), b = random_f32({c.m}, rng);
  KernelNode nb("Conv", 17, 3);
  nb.attr_int("group", c.group).attr_ints("strides", c.strides).attr_ints("dilations", c.dilations);
  nb.attr_ints("pads", c.pads);
  nb.attr_ints("kernel_shape", c.kernel);
  if (constant_weights) nb.constant(1, w).constant(2, b);
  if (!with_bias) nb.omit_input(2);
  const auto y = nb.run({x, w, with_bias ? std::optional<core::Tensor>(b) : std::nullopt}, 1, kThreads);
  const core::Tensor expected = ref_conv(x, w, with_bias ? &b : nullptr, c, conv_out(c));
  EXPECT_TRUE(all_close(y[0], expected)) << "conv " << core::shape_to_string(xs) << " w " << core::shape_to_string(ws)
                                         << " group " << c.group;
}

TEST(CpuDnnlConv, FixedCases) {
  std::mt19937 rng(1);
  const std::vector<ConvCase> cases = {
      {1, 3, 8, 1, {9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {2, 4, 6, 2, {7, 8}, {3, 2}, {2, 1}, {1, 2}, {0, 1, 2, 0}},
      {1, 8, 8, 8, {10, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},  // depthwise
      {1, 16, 32, 1, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},  // pointwise
      {1, 2, 3, 1, {20}, {5}, {3}, {2}, {2, 1}},                     // 1-D
      {1, 2, 4, 2, {5, 6, 7}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 0, 1, 0, 1, 1}},  // 3-D
  };
  for (const ConvCase& c : cases)
    for (int variant = 0; variant < 4; ++variant) check_conv(c, variant & 1, variant & 2, rng);
}

TEST(CpuDnnlConv, RandomCases) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int t = 0; t < 40; ++t) {
    ConvCase c;
    const size_t sp = static_cast<size_t>(pick(1, 3));
    c.group = pick(1, 3);
    c.n = pick(1, 2);
    c.c = c.group * pick(1, 4);
    c.m = c.group * pick(1, 4);
    for (size_t i = 0; i < sp; ++i) {
      c.kernel.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
      c.in.push_back((c.kernel[i] - 1) * c.dilations[i] + 1 + pick(0, sp == 3 ? 4 : 9));
    }
    c.pads.resize(2 * sp);
    for (auto& p : c.pads) p = pick(0, 2);
    check_conv(c, t % 2 == 0, t % 3 != 0, rng);
  }
}

TEST(CpuDnnlConv, AutoPad) {
  std::mt19937 rng(3);
  for (const std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    for (int64_t stride : {1, 2}) {
      const core::Tensor x = random_f32({1, 2, 7, 6}, rng), w = random_f32({3, 2, 3, 2}, rng);
      KernelNode nb("Conv", 17, 2);
      nb.attr_string("auto_pad", mode).attr_ints("strides", {stride, stride});
      nb.constant(1, w);
      const auto y = nb.run({x, w}, 1, kThreads);
      // The explicit pads the mode implies: out = ceil(in / stride), the odd
      // pixel of padding at the end (UPPER) or the beginning (LOWER).
      ConvCase c{1, 2, 3, 1, {7, 6}, {3, 2}, {stride, stride}, {1, 1}, {0, 0, 0, 0}};
      if (mode != "VALID") {
        for (size_t i = 0; i < 2; ++i) {
          const int64_t out = (c.in[i] + stride - 1) / stride;
          const int64_t total = std::max<int64_t>(0, (out - 1) * stride + c.kernel[i] - c.in[i]);
          c.pads[i] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
          c.pads[2 + i] = total - c.pads[i];
        }
      }
      EXPECT_TRUE(all_close(y[0], ref_conv(x, w, nullptr, c, conv_out(c)))) << mode << " stride " << stride;
    }
  }
}

// NCHW <-> NHWC copies for the channels-last tests.
core::Tensor to_channels_last(const core::Tensor& t) {
  const core::Shape& s = t.shape();
  const int64_t n = s[0], c = s[1], hw = static_cast<int64_t>(t.numel()) / (n * c);
  core::Shape cl{n};
  cl.insert(cl.end(), s.begin() + 2, s.end());
  cl.push_back(c);
  core::Tensor r = core::Tensor::allocate(core::DType::F32, cl);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < hw; ++k) r.data<float>()[(i * hw + k) * c + j] = t.data<float>()[(i * c + j) * hw + k];
  return r;
}

core::Tensor to_channels_first(const core::Tensor& t) {
  const core::Shape& s = t.shape();
  const int64_t n = s[0], c = s.back(), hw = static_cast<int64_t>(t.numel()) / (n * c);
  core::Shape cf{n, c};
  cf.insert(cf.end(), s.begin() + 1, s.end() - 1);
  core::Tensor r = core::Tensor::allocate(core::DType::F32, cf);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < hw; ++k) r.data<float>()[(i * c + j) * hw + k] = t.data<float>()[(i * hw + k) * c + j];
  return r;
}

TEST(CpuDnnlConv, FusedPostOpsAndChannelsLast) {
  std::mt19937 rng(11);
  const ConvCase c{2, 6, 8, 2, {9, 7}, {3, 3}, {1, 2}, {1, 1}, {1, 1, 1, 0}};
  const core::Tensor x = random_f32({2, 6, 9, 7}, rng, -2, 2), w = random_f32({8, 3, 3, 3}, rng);
  const core::Tensor b = random_f32({8}, rng);
  const core::Tensor expected_conv = ref_conv(x, w, &b, c, conv_out(c));
  const core::Shape yshape = expected_conv.shape();
  const core::Tensor per_channel = random_f32({8, 1, 1}, rng);
  const core::Tensor residual = random_f32(yshape, rng);
  const core::Tensor scalar = core::Tensor::from_vector<float>({0.75f}, {1});
  const int64_t plane = yshape[2] * yshape[3];

  // relu(alpha .1) → add per-channel constant → mul scalar → add residual →
  // hardswish → clip(-.2, .3) → linear(2, -1) → sigmoid.
  core::Tensor expected = expected_conv.clone();
  float* e = expected.data<float>();
  for (size_t i = 0; i < expected.numel(); ++i) {
    const int64_t ch = static_cast<int64_t>(i) / plane % 8;
    float v = e[i] > 0 ? e[i] : 0.1f * e[i];
    v += per_channel.data<float>()[ch];
    v *= 0.75f;
    v += residual.data<float>()[i];
    v = v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    v = std::min(std::max(v, -0.2f), 0.3f);
    v = 2 * v - 1;
    e[i] = 1 / (1 + std::exp(-v));
  }
  for (bool channels_last : {false, true}) {
    for (bool runtime_operands : {false, true}) {
      KernelNode nb("FusedConv", 1, 6, 1, kCpuDomain);
      nb.attr_int("group", 2).attr_ints("strides", {1, 2}).attr_ints("pads", {1, 1, 1, 0});
      nb.attr_strings(kPostOpsAttr, {"relu", "add", "mul", "add", "hardswish", "clip", "linear", "sigmoid"});
      nb.attr_floats(kPostAlphaAttr, {0.1f, 0, 0, 0, 0, -0.2f, 2, 0});
      nb.attr_floats(kPostBetaAttr, {0, 0, 0, 0, 0, 0.3f, -1, 0});
      if (channels_last) nb.attr_int(kChannelsLastAttr, 1);
      const core::Tensor pc = channels_last ? core::Tensor::from_vector<float>(
                                                  std::vector<float>(per_channel.values<float>().begin(),
                                                                     per_channel.values<float>().end()),
                                                  {1, 1, 1, 8})
                                            : per_channel;
      const core::Tensor res = channels_last ? to_channels_last(residual) : residual;
      nb.constant(1, w).constant(2, b).constant(4, scalar);
      if (!runtime_operands) nb.constant(3, pc).constant(5, res);
      const auto y = nb.run({channels_last ? to_channels_last(x) : x, w, b, pc, scalar, res}, 1, kThreads);
      EXPECT_TRUE(all_close(channels_last ? to_channels_first(y[0]) : y[0], expected, 2e-4f, 2e-4f))
          << "channels_last " << channels_last << " runtime operands " << runtime_operands;
    }
  }
}

// A convolution of more than 2^33 multiply-adds runs in blocks of output
// rows (drivers/cpu/checkpoint_blocks.h), each a convolution of its own over
// the input rows it reads: here 300 output rows in blocks of 97, with stride
// 2, dilation 2 and padding in the first and last blocks. Checked at the
// rows on both sides of each block's edges, against sums in double.
TEST(CpuDnnlConv, LongConvolutionsInBlocksOfRows) {
  std::mt19937 rng(29);
  const int64_t C = 128, M = 128, H = 600, W = 300, OH = 300, OW = 300;
  const core::Tensor x = random_f32({1, C, H, W}, rng), w = random_f32({M, C, 3, 3}, rng), b = random_f32({M}, rng);
  auto want = [&](int64_t m, int64_t oh, int64_t ow) {
    double sum = b.data<float>()[m];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          const int64_t ih = oh * 2 - 2 + kh * 2, iw = ow - 1 + kw;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
          sum += double(x.data<float>()[(c * H + ih) * W + iw]) * w.data<float>()[((m * C + c) * 3 + kh) * 3 + kw];
        }
    return std::max(sum, 0.0);  // the fused Relu
  };
  const core::Tensor x_last = to_channels_last(x);
  for (bool channels_last : {false, true}) {
    for (bool constant_weights : {true, false}) {
      KernelNode nb("FusedConv", 1, 3, 1, kCpuDomain);
      nb.attr_ints("strides", {2, 1}).attr_ints("dilations", {2, 1}).attr_ints("pads", {2, 1, 2, 1});
      nb.attr_strings(kPostOpsAttr, {"relu"}).attr_floats(kPostAlphaAttr, {0}).attr_floats(kPostBetaAttr, {0});
      if (channels_last) nb.attr_int(kChannelsLastAttr, 1);
      if (constant_weights) nb.constant(1, w);
      nb.constant(2, b);
      const core::Tensor y = nb.run_once({channels_last ? x_last : x, w, b}, 1, kThreads)[0];
      ASSERT_EQ(y.shape(), channels_last ? (core::Shape{1, OH, OW, M}) : (core::Shape{1, M, OH, OW}));
      for (int64_t oh : {int64_t{0}, int64_t{1}, int64_t{96}, int64_t{97}, int64_t{193}, int64_t{194}, int64_t{291},
                         OH - 1})
        for (int64_t ow : {int64_t{0}, int64_t{150}, OW - 1})
          for (int64_t m : {int64_t{0}, M - 1}) {
            const float got = y.data<float>()[channels_last ? (oh * OW + ow) * M + m : (m * OH + oh) * OW + ow];
            const double expected = want(m, oh, ow);
            EXPECT_NEAR(got, expected, 1e-3 * std::max(1.0, std::abs(expected)))
                << "channels_last " << channels_last << " constant weights " << constant_weights << " row " << oh
                << " column " << ow << " channel " << m;
          }
    }
  }
}

TEST(CpuDnnlConv, BroadcastOperandFallsBackToLoop) {
  // An operand that varies along W only is no broadcast oneDNN offers.
  std::mt19937 rng(5);
  const ConvCase c{1, 2, 3, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}};
  const core::Tensor x = random_f32({1, 2, 5, 6}, rng), w = random_f32({3, 2, 1, 1}, rng);
  const core::Tensor row = random_f32({6}, rng);
  KernelNode nb("FusedConv", 1, 4, 1, kCpuDomain);
  nb.attr_strings(kPostOpsAttr, {"mul"}).attr_floats(kPostAlphaAttr, {0}).attr_floats(kPostBetaAttr, {0});
  nb.constant(1, w).omit_input(2);
  const auto y = nb.run({x, w, std::nullopt, row}, 1, kThreads);
  core::Tensor expected = ref_conv(x, w, nullptr, c, conv_out(c));
  for (size_t i = 0; i < expected.numel(); ++i) expected.data<float>()[i] *= row.data<float>()[i % 6];
  EXPECT_TRUE(all_close(y[0], expected));
}

// Naive transposed convolution: every input pixel scatters kernel * x into
// the output at o = i * stride - pad_begin + k * dilation.
core::Tensor ref_conv_transpose(const core::Tensor& x, const core::Tensor& w, const core::Tensor* b, int64_t group,
                                const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                                const std::vector<int64_t>& pad_begin, const std::vector<int64_t>& out) {
  const size_t sp = out.size();
  const int64_t N = x.dim(0), C = x.dim(1), Mg = w.dim(1), M = Mg * group, Cg = C / group;
  int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, p3[3] = {0, 0, 0},
          o3[3] = {1, 1, 1};
  for (size_t i = 0; i < sp; ++i) {
    in3[i] = x.dim(2 + i);
    k3[i] = w.dim(2 + i);
    s3[i] = strides[i];
    d3[i] = dilations[i];
    p3[i] = pad_begin[i];
    o3[i] = out[i];
  }
  core::Shape ys{N, M};
  ys.insert(ys.end(), out.begin(), out.end());
  std::vector<double> acc(core::shape_numel(ys), 0.0);
  const int64_t oplane = o3[0] * o3[1] * o3[2];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i0 = 0; i0 < in3[0]; ++i0)
        for (int64_t i1 = 0; i1 < in3[1]; ++i1)
          for (int64_t i2 = 0; i2 < in3[2]; ++i2) {
            const double xv = x.data<float>()[(((n * C + c) * in3[0] + i0) * in3[1] + i1) * in3[2] + i2];
            const int64_t g = c / Cg;
            for (int64_t mj = 0; mj < Mg; ++mj)
              for (int64_t k0 = 0; k0 < k3[0]; ++k0)
                for (int64_t k1 = 0; k1 < k3[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k3[2]; ++k2) {
                    const int64_t o0 = i0 * s3[0] - p3[0] + k0 * d3[0], o1 = i1 * s3[1] - p3[1] + k1 * d3[1],
                                  o2 = i2 * s3[2] - p3[2] + k2 * d3[2];
                    if (o0 < 0 || o0 >= o3[0] || o1 < 0 || o1 >= o3[1] || o2 < 0 || o2 >= o3[2]) continue;
                    const double wv = w.data<float>()[(((c * Mg + mj) * k3[0] + k0) * k3[1] + k1) * k3[2] + k2];
                    acc[((n * M + g * Mg + mj) * o3[0] + o0) * o3[1] * o3[2] + o1 * o3[2] + o2] += xv * wv;
                  }
          }
  core::Tensor y = core::Tensor::allocate(core::DType::F32, ys);
  for (size_t i = 0; i < acc.size(); ++i)
    y.data<float>()[i] = static_cast<float>(acc[i] + (b ? b->data<float>()[i / oplane % M] : 0.0));
  return y;
}

TEST(CpuDnnlConvTranspose, PadsOutputPaddingGroups) {
  std::mt19937 rng(31);
  struct Case {
    core::Shape x, w;
    int64_t group;
    std::vector<int64_t> strides, dilations, pads, output_padding;
  };
  const std::vector<Case> cases = {
      {{1, 4, 5, 5}, {4, 3, 3, 3}, 1, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{2, 4, 4, 6}, {4, 2, 2, 3}, 2, {2, 1}, {1, 2}, {0, 1, 0, 0}, {0, 0}},
      {{1, 3, 7}, {3, 2, 4}, 1, {3}, {1}, {2, 1}, {2}},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, 1, {2, 1, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 0, 0}},
      {{1, 8, 6, 6}, {8, 1, 3, 3}, 8, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}},  // depthwise
  };
  for (const Case& c : cases) {
    for (bool constant_w : {false, true}) {
      const core::Tensor x = random_f32(c.x, rng), w = random_f32(c.w, rng);
      const core::Tensor b = random_f32({c.w[1] * c.group}, rng);
      KernelNode nb("ConvTranspose", 17, 3);
      nb.attr_int("group", c.group).attr_ints("strides", c.strides).attr_ints("dilations", c.dilations);
  nb.attr_ints("pads", c.pads);
      nb.attr_ints("output_padding", c.output_padding);
      if (constant_w) nb.constant(1, w);
      const auto y = nb.run({x, w, b}, 1, kThreads);
      const size_t sp = c.strides.size();
      std::vector<int64_t> out, begin;
      for (size_t i = 0; i < sp; ++i) {
        out.push_back(c.strides[i] * (c.x[2 + i] - 1) + c.output_padding[i] + (c.w[2 + i] - 1) * c.dilations[i] + 1 -
                      c.pads[i] - c.pads[sp + i]);
        begin.push_back(c.pads[i]);
      }
      EXPECT_TRUE(all_close(y[0], ref_conv_transpose(x, w, &b, c.group, c.strides, c.dilations, begin, out)))
          << core::shape_to_string(c.x) << " constant W " << constant_w;
    }
  }
}

// Kernel == stride: with constant weights the kernel takes its patch form (a
// matrix product and a scatter), otherwise oneDNN's deconvolution; both must
// agree with the reference.
TEST(CpuDnnlConvTranspose, KernelEqualsStride) {
  std::mt19937 rng(33);
  for (const auto& [xs, ws] : std::vector<std::pair<core::Shape, core::Shape>>{
           {{2, 5, 4, 3}, {5, 3, 2, 3}}, {{1, 24, 7, 9}, {24, 1, 2, 2}}, {{1, 3, 1, 1}, {3, 4, 3, 3}}}) {
    for (bool constant_w : {false, true}) {
      const core::Tensor x = random_f32(xs, rng), w = random_f32(ws, rng), b = random_f32({ws[1]}, rng);
      KernelNode nb("ConvTranspose", 17, 3);
      nb.attr_ints("strides", {ws[2], ws[3]});
      if (constant_w) nb.constant(1, w);
      const auto y = nb.run({x, w, b}, 1, kThreads);
      EXPECT_TRUE(all_close(y[0], ref_conv_transpose(x, w, &b, 1, {ws[2], ws[3]}, {1, 1}, {0, 0},
                                                     {xs[2] * ws[2], xs[3] * ws[3]})))
          << core::shape_to_string(xs) << " constant W " << constant_w;
    }
  }
}

// A long ConvTranspose runs in blocks of output rows, each reading the input
// rows that reach it (kernels_conv_transpose.cpp): every output row, on
// either side of every block edge, against the sum written out here.
TEST(CpuDnnlConvTranspose, LongDeconvolutionsInBlocksOfRows) {
  std::mt19937 rng(31);
  struct Geometry {
    int64_t in, k, stride, pad, dilation;
  };
  const int64_t C = 128, M = 128;
  for (const Geometry g : {Geometry{200, 4, 2, 1, 1}, Geometry{300, 3, 1, 1, 2}}) {
    const int64_t reach = (g.k - 1) * g.dilation, out = (g.in - 1) * g.stride + reach + 1 - 2 * g.pad;
    const core::Tensor x = random_f32({1, C, g.in, g.in}, rng), w = random_f32({C, M, g.k, g.k}, rng),
                       b = random_f32({M}, rng);
    auto want = [&](int64_t m, int64_t oh, int64_t ow) {
      double sum = b.data<float>()[m];
      for (int64_t kh = 0; kh < g.k; ++kh)
        for (int64_t kw = 0; kw < g.k; ++kw) {
          const int64_t th = oh + g.pad - kh * g.dilation, tw = ow + g.pad - kw * g.dilation;
          if (th < 0 || tw < 0 || th % g.stride || tw % g.stride) continue;
          const int64_t ih = th / g.stride, iw = tw / g.stride;
          if (ih >= g.in || iw >= g.in) continue;
          for (int64_t c = 0; c < C; ++c)
            sum += double(x.data<float>()[(c * g.in + ih) * g.in + iw]) *
                   w.data<float>()[((c * M + m) * g.k + kh) * g.k + kw];
        }
      return sum;
    };
    for (bool channels_last : {false, true}) {
      KernelNode nb(channels_last ? "FusedConvTranspose" : "ConvTranspose", channels_last ? 1 : 17, 3, 1,
                    channels_last ? kCpuDomain : "");
      nb.attr_ints("strides", {g.stride, g.stride}).attr_ints("dilations", {g.dilation, g.dilation});
      nb.attr_ints("pads", {g.pad, g.pad, g.pad, g.pad}).constant(1, w).constant(2, b);
      if (channels_last) nb.attr_int(kChannelsLastAttr, 1);
      size_t checkpoints = 0;
      const core::Tensor y = nb.run_counting_checkpoints({channels_last ? to_channels_last(x) : x, w, b},
                                                         checkpoints, kThreads)[0];
      EXPECT_GE(checkpoints, 1u) << "ran whole";
      ASSERT_EQ(y.shape(), channels_last ? (core::Shape{1, out, out, M}) : (core::Shape{1, M, out, out}));
      for (int64_t oh = 0; oh < out; ++oh)
        for (int64_t ow : {int64_t{0}, out / 2 + 1, out - 1})
          for (int64_t m : {int64_t{0}, M - 1}) {
            const float got = y.data<float>()[channels_last ? (oh * out + ow) * M + m : (m * out + oh) * out + ow];
            const double expected = want(m, oh, ow);
            ASSERT_NEAR(got, expected, 1e-3 * std::max(1.0, std::abs(expected)))
                << "stride " << g.stride << " channels_last " << channels_last << " row " << oh << " column " << ow
                << " channel " << m;
          }
    }
  }
}

TEST(CpuDnnlConvTranspose, OutputShapeAndSamePadding) {
  std::mt19937 rng(32);
  const core::Tensor x = random_f32({1, 2, 3, 3}, rng), w = random_f32({2, 3, 3, 3}, rng);
  // output_shape 10x8 with stride 3: natural size 3*2+3 = 9; total pads -1 (H, grows) and 1 (W).
  {
    KernelNode nb("ConvTranspose", 17, 2);
    nb.attr_ints("strides", {3, 3}).attr_ints("output_shape", {10, 8}).constant(1, w);
    const auto y = nb.run({x, w}, 1, kThreads);
    // total = natural - out, the larger half first (halves round down): H -1 → 0 + -1, W 1 → 1 + 0.
    EXPECT_TRUE(all_close(y[0], ref_conv_transpose(x, w, nullptr, 1, {3, 3}, {1, 1}, {0, 1}, {10, 8})));
  }
  for (const std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {
    KernelNode nb("ConvTranspose", 17, 2);
    nb.attr_ints("strides", {2, 2}).attr_string("auto_pad", mode).constant(1, w);
    const auto y = nb.run({x, w}, 1, kThreads);
    // out = 6, natural = 2*2+3 = 7: one pixel of padding, at the start for SAME_LOWER.
    const int64_t begin = mode == "SAME_UPPER" ? 0 : 1;
    EXPECT_TRUE(all_close(y[0], ref_conv_transpose(x, w, nullptr, 1, {2, 2}, {1, 1}, {begin, begin}, {6, 6}))) << mode;
  }
}

}  // namespace

}  // namespace hetero::cpu::testing
