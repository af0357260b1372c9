// A Conv whose weights are a windowed DFT basis runs as FFTs
// (drivers/cpu/conv_dft.h): the sixteen-lane FFT (lane_fft.h) against a
// naive DFT in long double; which weights count as such a basis; and the
// kernel against the convolution it stands in for, channels-first and
// channels-last, with padding, bias, several batch items and frame counts
// that are not a multiple of sixteen; then the inputs it must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "drivers/cpu/conv_dft.h"
#include "drivers/cpu/lane_fft.h"
#include "drivers/cpu/post_ops.h"
#include "tests/unit/kernel_harness.h"
#include "tests/unit/quant_test_util.h"

namespace hetero::cpu::testing {
namespace {

constexpr size_t kLanes = LaneRealFft::kLanes;

std::vector<float> hann(size_t n) {
  std::vector<float> a(n);
  for (size_t j = 0; j < n; ++j)
    a[j] = static_cast<float>(0.5 - 0.5 * std::cos(2 * std::numbers::pi * double(j) / double(n)));
  return a;
}

std::vector<DftRow> cosines(size_t count) {
  std::vector<DftRow> rows;
  for (size_t k = 0; k < count; ++k) rows.push_back({static_cast<uint32_t>(k), false});
  return rows;
}

std::vector<DftRow> sines(size_t count) {
  std::vector<DftRow> rows = cosines(count);
  for (DftRow& r : rows) r.sine = true;
  return rows;
}

std::vector<DftRow> cosines_then_sines(size_t bins, bool negated_sines = false) {
  std::vector<DftRow> rows = cosines(bins), s = sines(bins);
  for (DftRow& r : s) r.negated = negated_sines;
  rows.insert(rows.end(), s.begin(), s.end());
  return rows;
}

// Weights [rows, 1, n]: window[j] cos(2π k j/n) or window[j] sin(2π k j/n),
// negated where the row says, rounded to float32 as an exporter writes them.
core::Tensor basis_weights(const std::vector<DftRow>& rows, const std::vector<float>& window) {
  const size_t n = window.size();
  core::Tensor w = core::Tensor::allocate(core::DType::F32, {int64_t(rows.size()), 1, int64_t(n)});
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t j = 0; j < n; ++j) {
      const double angle = 2 * std::numbers::pi * double((size_t{rows[r].bin} * j) % n) / double(n);
      const double value = window[j] * (rows[r].sine ? std::sin(angle) : std::cos(angle));
      w.data<float>()[r * n + j] = static_cast<float>(rows[r].negated ? -value : value);
    }
  return w;
}

TEST(CpuConvDft, LaneFftMatchesTheNaiveDft) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (size_t n : {4u, 8u, 16u, 64u, 512u, 2048u}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const LaneRealFft fft(n);
    ASSERT_EQ(fft.bins(), n / 2 + 1);
    std::vector<float> ones(n, 1.0f), frames(kLanes * n);
    for (float& v : frames) v = d(rng);
    // 64-byte aligned, as the kernel's scratch is.
    std::vector<float> storage(2 * fft.array_floats() + 16);
    float* re = storage.data() + (16 - reinterpret_cast<uintptr_t>(storage.data()) / sizeof(float) % 16) % 16;
    float* im = re + fft.array_floats();
    // The last lane is left as it was, zeros: it must come out all zeros.
    for (size_t lane = 0; lane + 1 < kLanes; ++lane) fft.load_lane(re, im, lane, &frames[lane * n], ones.data());
    fft.transform(re, im);
    std::vector<std::complex<long double>> root(n);  // e^(-2πi m/n)
    for (size_t m = 0; m < n; ++m) root[m] = std::polar(1.0L, -2 * std::numbers::pi_v<long double> * m / n);
    // float32 rounding over log2(n) stages of values up to about sqrt(n).
    const double tol = 2e-7 * std::sqrt(double(n)) * std::log2(double(n)) * 4;
    for (size_t lane = 0; lane < kLanes; ++lane)
      for (size_t k = 0; k < fft.bins(); ++k) {
        std::complex<long double> want = 0;
        if (lane + 1 < kLanes)
          for (size_t j = 0; j < n; ++j) want += static_cast<long double>(frames[lane * n + j]) * root[(k * j) % n];
        ASSERT_NEAR(re[k * kLanes + lane], static_cast<double>(want.real()), tol) << "lane " << lane << " bin " << k;
        ASSERT_NEAR(im[k * kLanes + lane], static_cast<double>(want.imag()), tol) << "lane " << lane << " bin " << k;
      }
  }
}

TEST(CpuConvDft, RecognisesTheRowOrdersExportersWrite) {
  const std::vector<float> window = hann(512), negated = [&] {
    std::vector<float> v = window;
    for (float& x : v) x = -x;
    return v;
  }();
  // openWakeWord's melspectrogram: 257 cosines, and 257 sines times -window.
  for (const auto& [rows, win] : {std::pair{cosines(257), window}, std::pair{sines(257), negated}}) {
    const std::optional<DftBasis> b = dft_basis(basis_weights(rows, win));
    ASSERT_TRUE(b);
    ASSERT_EQ(b->rows.size(), rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(b->rows[r].bin, rows[r].bin);
      EXPECT_EQ(b->rows[r].sine, rows[r].sine);
    }
    // Sines carry no information at taps 0 and n/2; elsewhere the window is found.
    for (size_t j = 1; j < 512; ++j) {
      if (j == 256) continue;
      ASSERT_NEAR(b->window[j], win[j], 1e-6) << "tap " << j;
    }
  }
  // Both parts in one Conv, cosines then sines: 129 + 129 rows of 256 taps.
  const std::optional<DftBasis> both = dft_basis(basis_weights(cosines_then_sines(129), hann(256)));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->rows[128].bin, 128u);
  EXPECT_FALSE(both->rows[128].sine);
  EXPECT_EQ(both->rows[129].bin, 0u);
  EXPECT_TRUE(both->rows[129].sine);
  EXPECT_FALSE(both->rows[129].negated);
  // Silero VAD v5's STFT: the same, its sines times -window.
  const std::optional<DftBasis> silero = dft_basis(basis_weights(cosines_then_sines(129, true), hann(256)));
  ASSERT_TRUE(silero);
  EXPECT_FALSE(silero->rows[128].negated);
  EXPECT_TRUE(silero->rows[129].sine);
  EXPECT_TRUE(silero->rows[129].negated);
  for (size_t j = 1; j < 256; ++j) ASSERT_NEAR(silero->window[j], hann(256)[j], 1e-6) << "tap " << j;
}

TEST(CpuConvDft, OtherWeightsStayConvolutions) {
  const std::vector<float> window = hann(512);
  core::Tensor nudged = basis_weights(cosines(257), window);
  nudged.data<float>()[100 * 512 + 77] += 1e-3f;
  EXPECT_FALSE(dft_basis(nudged)) << "one weight off by 1e-3";
  core::Tensor with_nan = basis_weights(cosines(257), window);
  with_nan.data<float>()[3 * 512 + 5] = std::nanf("");
  EXPECT_FALSE(dft_basis(with_nan)) << "a NaN weight";
  std::vector<DftRow> swapped = cosines(257);
  std::swap(swapped[3], swapped[5]);
  EXPECT_FALSE(dft_basis(basis_weights(swapped, window))) << "bins in another order";
  EXPECT_FALSE(dft_basis(basis_weights(cosines(30), window))) << "too few rows for an FFT to pay";
  EXPECT_FALSE(dft_basis(basis_weights(cosines(201), hann(400)))) << "not a power of two";
  EXPECT_FALSE(dft_basis(random_f32({257, 1, 512}, 5u, -1, 1))) << "random weights";
  EXPECT_FALSE(dft_basis(core::Tensor::allocate(core::DType::F32, {257, 1, 512}))) << "all zeros";
  EXPECT_FALSE(dft_basis(random_f32({64, 2, 64}, 5u, -1, 1))) << "two input channels";
}

// y[b, r, t] = bias[r] + sum_j w[r, j] x[b, t * stride - pad + j], in double.
std::vector<double> direct_conv(const core::Tensor& x, const core::Tensor& w, const std::vector<float>& bias,
                                int64_t stride, int64_t pad, int64_t frames) {
  const int64_t batch = x.dim(0), length = x.dim(2), rows = w.dim(0), n = w.dim(2);
  std::vector<double> y(static_cast<size_t>(batch * rows * frames));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < frames; ++t) {
        double acc = bias.empty() ? 0.0 : bias[r];
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = t * stride - pad + j;
          if (i >= 0 && i < length) acc += double(x.data<float>()[b * length + i]) * w.data<float>()[r * n + j];
        }
        y[(b * rows + r) * frames + t] = acc;
      }
  return y;
}

struct DftConvCase {
  int64_t batch, length;
  std::vector<DftRow> rows;
  size_t n;
  int64_t stride, pad_begin, pad_end;
  bool bias;
};

TEST(CpuConvDft, KernelMatchesTheConvolution) {
  const std::vector<DftConvCase> cases = {
      {2, 1000, cosines(33), 64, 16, 32, 32, true},           // 63 frames: three full groups and a partial one
      {1, 16000, sines(257), 512, 160, 0, 0, false},          // the melspectrogram's imaginary part
      {1, 300, cosines_then_sines(65), 128, 7, 5, 60, true},  // the last frames read padding only
      {3, 64, cosines(33), 64, 1, 0, 0, false},               // one frame per item
      {1, 704, cosines_then_sines(129, true), 256, 128, 0, 0, false},  // Silero VAD v5's STFT: 4 frames
  };
  std::mt19937 rng(11);
  for (const DftConvCase& c : cases) {
    SCOPED_TRACE("length " + std::to_string(c.length) + ", n " + std::to_string(c.n));
    const core::Tensor w = basis_weights(c.rows, hann(c.n));
    ASSERT_TRUE(dft_basis(w));
    const core::Tensor x = random_f32({c.batch, 1, c.length}, rng);
    const int64_t rows = w.dim(0), n = static_cast<int64_t>(c.n);
    const core::Tensor b = random_f32({rows}, rng);
    const int64_t frames = (c.length + c.pad_begin + c.pad_end - n) / c.stride + 1;
    const std::vector<double> want =
        direct_conv(x, w, c.bias ? values<float>(b) : std::vector<float>{}, c.stride, c.pad_begin, frames);
    // float32 rounding of about sqrt(n) terms of up to 1.
    const double atol = 2e-6 * double(n), rtol = 1e-5;
    for (bool channels_last : {false, true}) {
      SCOPED_TRACE(channels_last ? "channels-last" : "channels-first");
      KernelNode node(channels_last ? "FusedConv" : "Conv", channels_last ? 1 : 17, 3, 1,
                      channels_last ? kCpuDomain : "");
      node.attr_ints("strides", {c.stride}).attr_ints("pads", {c.pad_begin, c.pad_end}).attr_ints("kernel_shape", {n});
      if (channels_last) node.attr_int(kChannelsLastAttr, 1);
      node.constant(1, w);
      if (c.bias)
        node.constant(2, b);
      else
        node.omit_input(2);
      // The input's one channel is stored the same either way.
      const core::Tensor xin = channels_last ? x.reshaped({c.batch, c.length, 1}) : x;
      for (int threads : {1, 2}) {
        const auto y = node.run({xin, w, c.bias ? std::optional<core::Tensor>(b) : std::nullopt}, 1, threads);
        const core::Shape shape =
            channels_last ? core::Shape{c.batch, frames, rows} : core::Shape{c.batch, rows, frames};
        ASSERT_EQ(y[0].shape(), shape);
        std::vector<double> expected = want;
        if (channels_last)
          for (int64_t i = 0; i < c.batch; ++i)
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t t = 0; t < frames; ++t)
                expected[(i * frames + t) * rows + r] = want[(i * rows + r) * frames + t];
        EXPECT_TRUE(near(y[0], expected, atol, rtol)) << threads << " threads";
      }
    }
  }
}

// An STFT's real and imaginary parts as exporters write them: two Convs of
// one signal with one window, each output written from one transform.
TEST(CpuConvDft, OneTransformServesTheConvsOfOneSignal) {
  std::mt19937 rng(12);
  const int64_t n = 512, stride = 160, length = 16000, frames = (length + 2 * 256 - n) / stride + 1;
  // The imaginary part over minus the window, as openWakeWord's is (e^{-iωt}).
  std::vector<DftRow> minus_sines = sines(257);
  for (DftRow& r : minus_sines) r.negated = true;
  const core::Tensor real = basis_weights(cosines(257), hann(n)), imag = basis_weights(minus_sines, hann(n));
  const core::Tensor x = random_f32({2, 1, length}, rng);
  KernelNode node("DftConvs", 1, 3, 2, kCpuDomain);
  node.attr_ints("strides", {stride}).attr_ints("pads", {256, 256}).attr_ints("kernel_shape", {n});
  node.constant(1, real).constant(2, imag);
  for (int threads : {1, 2}) {
    const auto y = node.run({x, real, imag}, 2, threads);
    ASSERT_EQ(y.size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(y[o].shape(), (core::Shape{2, 257, frames}));
      EXPECT_TRUE(near(y[o], direct_conv(x, o ? imag : real, {}, stride, 256, frames), 2e-6 * double(n), 1e-5))
          << "output " << o << ", " << threads << " threads";
    }
  }
  // Weights that are no basis, or another window, are refused, naming the node.
  KernelNode other("DftConvs", 1, 3, 2, kCpuDomain);
  other.node->name = "stft";
  other.attr_ints("strides", {stride}).attr_ints("kernel_shape", {n});
  std::vector<float> window = hann(n);
  window[7] *= 1.01f;
  const core::Tensor skewed = basis_weights(sines(257), window);
  other.constant(1, real).constant(2, skewed);
  try {
    other.run({x, real, skewed}, 2);
    ADD_FAILURE() << "two windows ran as one";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("stft"), std::string::npos) << e.what();
  }
}

// The graph pass: the two Convs of one signal become one node; a Conv of
// the same signal with another hop stays a Conv; results are the graph's.
TEST(CpuConvDft, TheRealAndImaginaryPartsBecomeOneNode) {
  const int64_t n = 64;
  const std::vector<float> real = values<float>(basis_weights(cosines(33), hann(n)));
  std::vector<DftRow> minus_sines = sines(33);
  for (DftRow& r : minus_sines) r.negated = true;
  const std::vector<float> imag = values<float>(basis_weights(minus_sines, hann(n)));
  const std::string text =
      std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n") +
      "g (float[1,1,400] x) => (float[1,33,22] power, float[1,33,6] coarse) <" +
      test::initializer("float", "real", {33, 1, n}, real) + ", " +
      test::initializer("float", "imag", {33, 1, n}, imag) +
      "> {\n"
      "  re = Conv <strides = [16], kernel_shape = [64]> (x, real)\n"
      "  im = Conv <strides = [16], kernel_shape = [64]> (x, imag)\n"
      "  coarse = Conv <strides = [64], kernel_shape = [64]> (x, real)\n"
      "  re2 = Mul (re, re)\n"
      "  im2 = Mul (im, im)\n"
      "  power = Add (re2, im2)\n"
      "}\n";
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.at(std::string(kCpuDomain) + ".DftConvs"), 1);
  EXPECT_EQ(ops.at("Conv"), 1) << "another hop: frames of its own";
  std::mt19937 rng(13);
  const core::Tensor x = random_f32({1, 1, 400}, rng);
  const auto fast = test::run_text(text, {x});
  const auto plain = test::run_text(text, {x}, {{"optimize", "false"}});
  ASSERT_EQ(fast.size(), 2u);
  for (size_t o = 0; o < 2; ++o)
    EXPECT_TRUE(near(fast[o], doubles(plain[o]), 1e-3, 1e-5)) << "output " << o;
}

TEST(CpuConvDft, BadInputsNameTheNode) {
  const core::Tensor w = basis_weights(cosines(65), hann(128));
  KernelNode node("Conv", 17, 2);
  node.node->name = "stft_real";
  node.attr_ints("strides", {32});
  node.constant(1, w);
  expect_status(HETERO_INVALID_ARGUMENT, [&] { node.run({random_f32({1, 2, 500}, 1u, -1, 1), w}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { node.run({random_f32({1, 1, 100}, 1u, -1, 1), w}); });
  expect_status(HETERO_INVALID_ARGUMENT, [&] { node.run({random_f32({1, 500}, 1u, -1, 1), w}); });
  try {
    node.run({random_f32({1, 1, 100}, 1u, -1, 1), w});
    ADD_FAILURE() << "an input shorter than the window ran";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("stft_real"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
