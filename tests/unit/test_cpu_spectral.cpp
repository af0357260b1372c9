// The FFT (drivers/cpu/fft.h) and the DFT, STFT and MelWeightMatrix kernels
// against a naive DFT written here in long double, over what ONNX's test data
// leaves out: every length from 1 to 70 and large primes, complex input,
// onesided with inverse, dft_length padding and truncation, negative axes,
// float16 and double, STFT on complex signals and without a window; then the
// models and inputs that must be refused, naming the node.
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "drivers/cpu/fft.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;
using LComplex = std::complex<long double>;

// sum_j x[j] e^(∓2πi jk/n), scaled by 1/n when inverse.
std::vector<LComplex> naive_dft(const std::vector<LComplex>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<LComplex> y(n);
  const long double sign = inverse ? 1 : -1;
  std::vector<LComplex> root(n);  // e^(∓2πi m/n), indexed by jk mod n
  for (size_t m = 0; m < n; ++m) {
    const long double angle =
        sign * 2 * std::numbers::pi_v<long double> * static_cast<long double>(m) / static_cast<long double>(n);
    root[m] = LComplex(std::cos(angle), std::sin(angle));
  }
  for (size_t k = 0; k < n; ++k) {
    LComplex acc = 0;
    for (size_t j = 0; j < n; ++j) acc += x[j] * root[(j * k) % n];
    y[k] = inverse ? acc / static_cast<long double>(n) : acc;
  }
  return y;
}

std::vector<Complex> random_complex(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<Complex> v(n);
  for (Complex& c : v) c = Complex(d(rng), d(rng));
  return v;
}

TEST(CpuSpectral, FftMatchesTheNaiveDftAtEveryLength) {
  std::mt19937 rng(1);
  std::vector<size_t> lengths;
  for (size_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (size_t n : {127u, 128u, 243u, 256u, 1000u, 1024u, 1031u}) lengths.push_back(n);
  for (size_t n : lengths) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const std::vector<Complex> x = random_complex(n, rng);
    const std::vector<LComplex> lx(x.begin(), x.end());
    const Fft fft(n);
    FftScratch scratch = fft.make_scratch();
    // Errors grow like log n; the bound is loose against that, tight
    // against any wrong bin.
    const double tol = 1e-12 * static_cast<double>(n);
    for (bool inverse : {false, true}) {
      std::vector<Complex> y = x;
      fft.transform(y.data(), inverse, scratch);
      std::vector<LComplex> ref = naive_dft(lx, inverse);
      for (size_t k = 0; k < n; ++k) {
        const LComplex want = inverse ? ref[k] * static_cast<long double>(n) : ref[k];  // transform() is unscaled
        ASSERT_NEAR(y[k].real(), static_cast<double>(want.real()), tol) << "bin " << k << " inverse " << inverse;
        ASSERT_NEAR(y[k].imag(), static_cast<double>(want.imag()), tol) << "bin " << k << " inverse " << inverse;
      }
    }
    // Real input: bins 0..n/2 of the same transform.
    std::vector<double> real(n);
    std::vector<LComplex> lreal(n);
    for (size_t j = 0; j < n; ++j) lreal[j] = real[j] = x[j].real();
    const RealFft rfft(n);
    FftScratch rscratch = rfft.make_scratch();
    std::vector<Complex> bins(rfft.bins());
    rfft.transform(real.data(), bins.data(), rscratch);
    const std::vector<LComplex> ref = naive_dft(lreal, false);
    for (size_t k = 0; k < bins.size(); ++k) {
      ASSERT_NEAR(bins[k].real(), static_cast<double>(ref[k].real()), tol) << "real input, bin " << k;
      ASSERT_NEAR(bins[k].imag(), static_cast<double>(ref[k].imag()), tol) << "real input, bin " << k;
    }
  }
}

// ONNX's DFT of one tensor, by the definition: signals along `axis` cut or
// zero-padded to n, transformed, the first n/2+1 bins kept when onesided.
std::vector<double> reference_dft(const Tensor& x, int64_t axis, int64_t n, bool inverse, bool onesided) {
  const Shape& s = x.shape();
  const size_t rank = s.size();
  const auto a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
  const int64_t parts = s.back(), len = s[a];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < a; ++d) outer *= s[d];
  for (size_t d = a + 1; d + 1 < rank; ++d) inner *= s[d];
  const int64_t out_len = onesided ? n / 2 + 1 : n;
  std::vector<double> y(static_cast<size_t>(outer * out_len * inner * 2));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<LComplex> line(static_cast<size_t>(n), 0);
      for (int64_t j = 0; j < std::min(n, len); ++j) {
        const size_t at = static_cast<size_t>(((o * len + j) * inner + i) * parts);
        line[static_cast<size_t>(j)] = LComplex(x.as_double(at), parts == 2 ? x.as_double(at + 1) : 0.0);
      }
      const std::vector<LComplex> spec = naive_dft(line, inverse);
      for (int64_t k = 0; k < out_len; ++k) {
        const size_t at = static_cast<size_t>(((o * out_len + k) * inner + i) * 2);
        y[at] = static_cast<double>(spec[static_cast<size_t>(k)].real());
        y[at + 1] = static_cast<double>(spec[static_cast<size_t>(k)].imag());
      }
    }
  return y;
}

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  Tensor t = Tensor::allocate(dtype, shape);
  for (size_t i = 0; i < t.numel(); ++i) {
    const double v = d(rng);
    if (dtype == DType::F64) t.data<double>()[i] = v;
    else if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(v);
    else t.data<uint16_t>()[i] = core::float_to_half(static_cast<float>(v));
  }
  return t;
}

TEST(CpuSpectral, DftAttributesAndLengthsAgainstTheDefinition) {
  struct Case {
    Shape shape;
    int64_t axis;
    std::optional<int64_t> length;
    bool inverse, onesided;
  };
  const std::vector<Case> cases = {
      {{2, 12, 1}, 1, std::nullopt, false, false},  // real, power of two-ish
      {{2, 12, 1}, 1, std::nullopt, false, true},   // real, onesided (even)
      {{2, 13, 1}, 1, std::nullopt, false, true},   // real, onesided (odd)
      {{2, 13, 2}, 1, std::nullopt, false, false},  // complex
      {{2, 13, 2}, 1, std::nullopt, true, false},   // complex inverse
      {{2, 9, 1}, 1, std::nullopt, true, true},     // real inverse, onesided: the first bins of the inverse
      {{3, 4, 7, 2}, 2, std::nullopt, false, true}, // inner axis, complex, onesided
      {{3, 4, 7, 1}, -2, std::nullopt, false, false},  // negative axis: the last signal axis
      {{3, 5, 6, 1}, 1, 8, false, false},           // zero-padded to 8
      {{3, 5, 6, 2}, 2, 4, true, false},            // cut to 4
      {{1, 1, 1}, 1, 1, false, false},              // length 1
      {{2, 3, 1}, 0, std::nullopt, false, false},   // along the batch axis
      {{36, 470, 2}, 1, 480, false, false},         // enough lines for both threads (float32 only)
  };
  std::mt19937 rng(2);
  for (const Case& c : cases) {
    for (DType dtype : {DType::F32, DType::F64, DType::F16}) {
      if (c.shape[1] > 100 && dtype != DType::F32) continue;  // the naive reference is slow
      SCOPED_TRACE(core::shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " " +
                   core::dtype_name(dtype) + (c.inverse ? " inverse" : "") + (c.onesided ? " onesided" : ""));
      const Tensor x = random_tensor(dtype, c.shape, rng);
      KernelNode n("DFT", 17, 2);
      n.attr_int("axis", c.axis).attr_int("inverse", c.inverse).attr_int("onesided", c.onesided);
      if (!c.length) n.omit_input(1);
      std::vector<std::optional<Tensor>> in{x, std::nullopt};
      if (c.length) in[1] = scalar_i64(*c.length);
      const Tensor y = n.run(in, 1, 2)[0];
      const auto a = static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis);
      const int64_t len = c.length.value_or(c.shape[a]);
      Shape want = c.shape;
      want[a] = c.onesided ? len / 2 + 1 : len;
      want.back() = 2;
      ASSERT_EQ(y.shape(), want);
      ASSERT_EQ(y.dtype(), dtype);
      // float16 keeps 11 bits; float32 results are rounded once from double.
      const double tol = dtype == DType::F16 ? 1e-2 : dtype == DType::F32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(near(y, reference_dft(x, c.axis, len, c.inverse, c.onesided), tol, tol));
    }
  }
}

TEST(CpuSpectral, InverseDftUndoesTheDft) {
  std::mt19937 rng(3);
  for (int64_t n : {1, 2, 7, 16, 100, 127}) {
    const Tensor x = random_tensor(DType::F64, {3, n, 2}, rng);
    KernelNode fwd("DFT", 17, 1), inv("DFT", 17, 1);
    inv.attr_int("inverse", 1);
    const Tensor back = inv.run({fwd.run({x})[0]})[0];
    EXPECT_TRUE(near(back, doubles(x), 1e-12)) << "n = " << n;
  }
}

TEST(CpuSpectral, StftFramesWindowsAndComplexSignals) {
  std::mt19937 rng(4);
  for (int64_t parts : {1, 2})
    for (bool onesided : {true, false})
      for (bool window : {true, false}) {
        SCOPED_TRACE(std::to_string(parts) + " parts, onesided " + std::to_string(onesided) + ", window " +
                     std::to_string(window));
        const int64_t batch = 2, length = 50, step = 7, frame = 12;
        const Tensor signal = random_tensor(DType::F32, {batch, length, parts}, rng);
        const Tensor w = random_tensor(DType::F32, {frame}, rng);
        KernelNode n("STFT", 17, 4);
        n.attr_int("onesided", onesided);
        std::vector<std::optional<Tensor>> in{signal, scalar_i64(step), std::nullopt, scalar_i64(frame)};
        if (window) in[2] = w;
        else n.omit_input(2);
        const Tensor y = n.run(in, 1, 2)[0];
        const int64_t frames = (length - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
        ASSERT_EQ(y.shape(), (Shape{batch, frames, bins, 2}));
        // Each frame is a windowed slice through the DFT's definition.
        std::vector<double> want;
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t f = 0; f < frames; ++f) {
            Tensor slice = Tensor::allocate(DType::F64, {1, frame, parts});
            for (int64_t j = 0; j < frame; ++j)
              for (int64_t p = 0; p < parts; ++p)
                slice.data<double>()[j * parts + p] =
                    signal.data<float>()[(b * length + f * step + j) * parts + p] * (window ? w.data<float>()[j] : 1.0);
            const std::vector<double> spec = reference_dft(slice, 1, frame, false, onesided);
            want.insert(want.end(), spec.begin(), spec.end());
          }
        EXPECT_TRUE(near(y, want, 1e-5, 1e-5));
      }
  // Without frame_length the window's length is the frame's; without
  // either, the whole signal is one frame.
  const Tensor signal = random_tensor(DType::F64, {1, 16, 1}, rng);
  KernelNode whole("STFT", 17, 2);
  EXPECT_EQ(whole.run({signal, scalar_i64(4)})[0].shape(), (Shape{1, 1, 9, 2}));
  KernelNode by_window("STFT", 17, 3);
  EXPECT_EQ(by_window.run({signal, scalar_i64(4), random_tensor(DType::F64, {8}, rng)})[0].shape(),
            (Shape{1, 3, 5, 2}));
}

TEST(CpuSpectral, StftRefusesInputsThatDoNotFit) {
  std::mt19937 rng(5);
  const Tensor signal = random_tensor(DType::F32, {1, 16, 1}, rng);
  KernelNode n("STFT", 17, 4);
  auto run = [&](int64_t step, std::optional<Tensor> window, int64_t frame) {
    n.run({signal, scalar_i64(step), std::move(window), scalar_i64(frame)});
  };
  expect_error([&] { run(0, std::nullopt, 8); }, HETERO_INVALID_ARGUMENT, {"node 'n' (STFT)", "frame_step must be positive"});
  expect_error([&] { run(4, std::nullopt, 17); }, HETERO_INVALID_ARGUMENT, {"longer than the signal (16 samples)"});
  expect_error([&] { run(4, random_tensor(DType::F32, {6}, rng), 8); }, HETERO_INVALID_ARGUMENT,
               {"the window has 6 values but frame_length is 8"});
  expect_error([&] { n.run({random_tensor(DType::F32, {1, 16, 3}, rng), scalar_i64(4), std::nullopt, scalar_i64(8)}); },
               HETERO_INVALID_ARGUMENT, {"last dim must be 1 (real) or 2 (complex), got 3"});
}

TEST(CpuSpectral, MelWeightMatrixTrianglesAndBands) {
  KernelNode n("MelWeightMatrix", 17, 5);
  n.attr_int("output_datatype", static_cast<int64_t>(DType::F64));
  const int64_t mel = 10, dft = 256, rate = 16000;
  const Tensor y = n.run({scalar_i64(mel), scalar_i64(dft), scalar_i64(rate), f32({20}, {}), f32({7600}, {})})[0];
  ASSERT_EQ(y.shape(), (Shape{dft / 2 + 1, mel}));
  ASSERT_EQ(y.dtype(), DType::F64);
  // Every band is a triangle: rising to a peak of 1, falling, zero elsewhere;
  // the bands start in increasing order.
  int64_t last_start = -1;
  for (int64_t m = 0; m < mel; ++m) {
    int64_t start = -1, peak = -1;
    double prev = 0;
    bool falling = false;
    for (int64_t k = 0; k <= dft / 2; ++k) {
      const double v = y.data<double>()[k * mel + m];
      ASSERT_GE(v, 0);
      ASSERT_LE(v, 1);
      if (v > 0 && start < 0) start = k;
      if (v == 1) peak = k;
      if (v < prev) falling = true;
      if (falling) {
        EXPECT_LE(v, prev) << "band " << m << " rises again at bin " << k;
      }
      prev = v;
    }
    EXPECT_GE(peak, 0) << "band " << m << " has no peak of 1";
    EXPECT_GT(start, last_start);
    last_start = start;
  }
  // A band past the Nyquist frequency, an empty band: refused, naming them.
  expect_error([&] { n.run({scalar_i64(mel), scalar_i64(dft), scalar_i64(rate), f32({0}, {}), f32({9000}, {})}); },
               HETERO_INVALID_ARGUMENT, {"node 'n' (MelWeightMatrix)", "upper <= sample_rate / 2"});
  expect_error([&] { n.run({scalar_i64(mel), scalar_i64(dft), scalar_i64(rate), f32({300}, {}), f32({300}, {})}); },
               HETERO_INVALID_ARGUMENT, {"lower < upper"});
  expect_error([&] { n.run({scalar_i64(0), scalar_i64(dft), scalar_i64(rate), f32({0}, {}), f32({8000}, {})}); },
               HETERO_INVALID_ARGUMENT, {"must be positive"});
}

TEST(CpuSpectral, BadNodesAreRefusedAtCompileNamingTheNode) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 8, 1] x) => (float[1, M, 2] y) {
  n = Constant <value = int64 {0}> ()
  y = DFT (x, n)
})",
                       HETERO_INVALID_MODEL, {"(DFT)", "dft_length must be at least 1, got 0"});
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 8, 1] x) => (float[1, M, 2] y) {
  y = DFT <onesided = 2> (x)
})",
                       HETERO_INVALID_MODEL, {"(DFT)", "onesided must be 0 or 1, got 2"});
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 16, 1] x) => (float[1, 2, 5, 2] y) {
  step = Constant <value = int64 {-4}> ()
  y = STFT (x, step)
})",
                       HETERO_INVALID_MODEL, {"(STFT)", "frame_step must be at least 1, got -4"});
  // Refused at kernel build where ONNX's checker lets the node through.
  KernelNode axis("DFT", 17, 1);
  axis.attr_int("axis", 3).input_shape(0, {1, 8, 1});
  expect_error([&] { axis.build(); }, HETERO_INVALID_MODEL, {"node 'n' (DFT)", "axis 3 is not a signal axis"});
  KernelNode parts("DFT", 17, 1);
  parts.input_shape(0, {1, 8, 3});
  expect_error([&] { parts.build(); }, HETERO_INVALID_MODEL, {"last dim must be 1 (real) or 2 (complex), got 3"});
  KernelNode mel("MelWeightMatrix", 17, 5);
  mel.attr_int("output_datatype", 8);  // string
  expect_error([&] { mel.build(); }, HETERO_INVALID_MODEL, {"output_datatype 8 is not a numeric ONNX type"});
  // And at run time, a dft_length that comes in as data.
  KernelNode dyn("DFT", 17, 2);
  expect_error([&] { dyn.run({f32({1, 2}, {1, 2, 1}), scalar_i64(-3)}); }, HETERO_INVALID_ARGUMENT,
               {"the DFT length must be positive, got -3"});
}

}  // namespace
}  // namespace hetero::cpu::testing
