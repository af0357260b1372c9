// The audio front-end ops: DFT, STFT and MelWeightMatrix (opset 17).
//
// Signals are [..., 1] (real) or [..., 2] (real, imaginary) tensors; spectra
// are always [..., 2]. Transforms run in double whatever the element type
// (fft.h), so that bins which should be zero come out as zero to well below
// float32's resolution. A onesided spectrum keeps bins 0..n/2 of the n: for
// real input the others are their conjugate mirror (X[n-k] = conj X[k]).
// ONNX's reference cuts a complex input's spectrum the same way, although its
// schema text calls that impossible; we follow the reference. An inverse
// transform is scaled by 1/n. A negative axis counts from the back as opset
// 20 defines it: -2 is the last signal axis (-1 would be the real/imaginary
// pair).
#include <omp.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/fft.h"
#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// A 0/1 attribute.
bool flag_attr(const KernelBuild& b, const char* name, int64_t fallback) {
  const int64_t v = b.node.attr_int(name, fallback);
  if (v != 0 && v != 1) b.invalid(std::string(name) + " must be 0 or 1, got " + std::to_string(v));
  return v != 0;
}

// The one value of an integer scalar input (shape [] or [1]).
int64_t scalar_value(const core::Node& node, const Tensor& t, const char* what) {
  const std::vector<int64_t> v = int_input_values(node, t, what);
  if (v.size() != 1) bad_input(node, std::string(what) + " must hold one value, got " + std::to_string(v.size()));
  return v[0];
}

// At build time: a constant input that is not one integer, or is not at
// least `min`, makes the model invalid.
void check_constant_scalar(const KernelBuild& b, size_t i, const char* what, int64_t min) {
  const Tensor* t = b.constant_input(i);
  if (!t) return;
  try {
    const int64_t v = scalar_value(b.node, *t, what);
    if (v < min) b.invalid(std::string(what) + " must be at least " + std::to_string(min) + ", got " + std::to_string(v));
  } catch (const Failure& e) {
    if (e.status() != HETERO_INVALID_ARGUMENT) throw;
    fail(HETERO_INVALID_MODEL, e.what());
  }
}

// At build time: input i's rank and last dim, where known.
void check_static_signal(const KernelBuild& b, size_t i, size_t min_rank, std::optional<size_t> exact_rank) {
  const std::vector<core::Dim>* dims = b.input_dims(i);
  if (!dims) return;
  if (dims->size() < min_rank || (exact_rank && dims->size() != *exact_rank))
    b.invalid("the signal must have rank " + (exact_rank ? std::to_string(*exact_rank) : std::to_string(min_rank) + " or more") +
              ", got " + std::to_string(dims->size()));
  const core::Dim& last = dims->back();
  if (last.known() && last.size != 1 && last.size != 2)
    b.invalid("the signal's last dim must be 1 (real) or 2 (complex), got " + std::to_string(last.size));
}

// How to transform signals of length n, shared by the threads of a run.
struct DftPlan {
  size_t n;
  bool real_input, inverse;
  std::shared_ptr<const Fft> complex_fft;   // complex input
  std::shared_ptr<const RealFft> real_fft;  // real input

  // One thread's working memory.
  struct Work {
    std::vector<Complex> values;  // n samples in, n bins out
    std::vector<double> real;     // n real samples
    FftScratch fft;
  };
  Work make_work() const {
    Work w;
    w.values.resize(n);
    if (real_input) {
      w.real.resize(n);
      w.fft = real_fft->make_scratch();
    } else {
      w.fft = complex_fft->make_scratch();
    }
    return w;
  }

  // w.values holds the n samples (real input: real parts); leaves bins
  // 0..out_len-1 of the (inverse, 1/n-scaled) transform there.
  void run(Work& w, size_t out_len) const {
    Complex* v = w.values.data();
    if (real_input) {
      for (size_t j = 0; j < n; ++j) w.real[j] = v[j].real();
      real_fft->transform(w.real.data(), v, w.fft);
      for (size_t k = real_fft->bins(); k < out_len; ++k) v[k] = std::conj(v[n - k]);
      // For real x, the inverse transform is conj(X[k]) / n.
      if (inverse)
        for (size_t k = 0; k < out_len; ++k) v[k] = std::conj(v[k]);
    } else {
      complex_fft->transform(v, inverse, w.fft);
    }
    if (inverse) {
      const double scale = 1.0 / static_cast<double>(n);
      for (size_t k = 0; k < out_len; ++k) v[k] *= scale;
    }
  }
};

// Plans by length, kept across runs (a model's lengths rarely change).
class DftPlans {
 public:
  DftPlan get(size_t n, bool real_input, bool inverse) {
    DftPlan p{n, real_input, inverse, nullptr, nullptr};
    const std::vector<int64_t> key{static_cast<int64_t>(n)};
    if (real_input) p.real_fft = real_.get(key, [n] { return RealFft(n); });
    else p.complex_fft = complex_.get(key, [n] { return Fft(n); });
    return p;
  }

 private:
  ShapeCache<Fft> complex_;
  ShapeCache<RealFft> real_;
};

// Runs fn(work, line) for line in [0, lines) on r's threads, each with
// working memory of its own (allocated before the parallel loop, which must
// not throw), in checkpoint blocks of lines.
template <typename Fn>
void for_each_line(KernelRun& r, const DftPlan& plan, int64_t lines, Fn&& fn) {
  const bool parallel = r.parallel(lines > 1 && static_cast<double>(lines) * static_cast<double>(plan.n) > 16384);
  // Working memory for each thread of the team parallel_for opens.
  const int teams = parallel ? std::max(1, omp_get_max_threads()) : 1;
  std::vector<DftPlan::Work> work;
  for (int t = 0; t < teams; ++t) work.push_back(plan.make_work());
  // A line's transform: about n log n complex multiply-adds of 32 bytes.
  const double n = static_cast<double>(std::max<int64_t>(plan.n, 2));
  for_checkpoint_blocks(r, lines, 32.0 * n * std::log2(n), [&](int64_t begin, int64_t end) {
    parallel_for(parallel, begin, end,
                 [&](int64_t line) { fn(work[static_cast<size_t>(omp_get_thread_num())], line); });
  });
}

class DftKernel final : public Kernel {
 public:
  DftKernel(int64_t axis, bool inverse, bool onesided) : axis_(axis), inverse_(inverse), onesided_(onesided) {}

  void run(KernelRun& r) override {
    const Tensor& x_in = required_input(r, 0);
    check_float_input(r, x_in);
    const size_t rank = x_in.rank();
    if (rank < 2) bad_input(r.node(), "the input must have rank 2 or more, got " + std::to_string(rank));
    const int64_t parts = x_in.dim(rank - 1);
    if (parts != 1 && parts != 2)
      bad_input(r.node(), "the input's last dim must be 1 (real) or 2 (complex), got " + std::to_string(parts));
    const auto r64 = static_cast<int64_t>(rank);
    const int64_t a = axis_ < 0 ? axis_ + r64 : axis_;
    if (a < 0 || a > r64 - 2)
      bad_input(r.node(), "axis " + std::to_string(axis_) + " is not a signal axis of a rank-" + std::to_string(rank) +
                              " input");
    const auto axis = static_cast<size_t>(a);
    const int64_t len = x_in.dim(axis);
    int64_t n = len;
    if (const Tensor* t = r.input(1)) n = scalar_value(r.node(), *t, "dft_length");
    if (n < 1) bad_input(r.node(), "the DFT length must be positive, got " + std::to_string(n));
    const int64_t out_len = onesided_ ? n / 2 + 1 : n;
    Shape out_shape = x_in.shape();
    out_shape[axis] = out_len;
    out_shape.back() = 2;
    FloatOutput out(r, 0, x_in.dtype(), out_shape);
    const Tensor x = widen_half(x_in);
    const DftPlan plan = plans_.get(static_cast<size_t>(n), parts == 1, inverse_);
    const int64_t outer = product(x.shape(), 0, axis), inner = product(x.shape(), axis + 1, rank - 1);
    const int64_t copied = std::min(n, len);
    dispatch(FloatTypes{}, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = out.tensor().data<T>();
      for_each_line(r, plan, outer * inner, [&](DftPlan::Work& w, int64_t line) {
        const int64_t o = line / inner, i = line % inner;
        const T* in = src + (o * len * inner + i) * parts;
        for (int64_t j = 0; j < copied; ++j) {
          const T* e = in + j * inner * parts;
          w.values[static_cast<size_t>(j)] = Complex(e[0], parts == 2 ? e[1] : 0.0);
        }
        for (int64_t j = copied; j < n; ++j) w.values[static_cast<size_t>(j)] = 0;
        plan.run(w, static_cast<size_t>(out_len));
        T* y = dst + (o * out_len * inner + i) * 2;
        for (int64_t k = 0; k < out_len; ++k) {
          y[k * inner * 2] = static_cast<T>(w.values[static_cast<size_t>(k)].real());
          y[k * inner * 2 + 1] = static_cast<T>(w.values[static_cast<size_t>(k)].imag());
        }
      });
    });
    out.finish();
  }

 private:
  int64_t axis_;
  bool inverse_, onesided_;
  DftPlans plans_;
};

class StftKernel final : public Kernel {
 public:
  explicit StftKernel(bool onesided) : onesided_(onesided) {}

  void run(KernelRun& r) override {
    const core::Node& node = r.node();
    const Tensor& signal_in = required_input(r, 0);
    check_float_input(r, signal_in);
    if (signal_in.rank() != 3)
      bad_input(node, "the signal must be [batch, length, 1 or 2], got " + core::shape_to_string(signal_in.shape()));
    const int64_t batch = signal_in.dim(0), length = signal_in.dim(1), parts = signal_in.dim(2);
    if (parts != 1 && parts != 2)
      bad_input(node, "the signal's last dim must be 1 (real) or 2 (complex), got " + std::to_string(parts));
    const int64_t step = scalar_value(node, required_input(r, 1), "frame_step");
    if (step < 1) bad_input(node, "frame_step must be positive, got " + std::to_string(step));
    const Tensor* window_in = r.input(2);
    if (window_in && window_in->rank() != 1)
      bad_input(node, "the window must have rank 1, got " + core::shape_to_string(window_in->shape()));
    // The frame (and DFT) length: frame_length, else the window's, else the
    // whole signal, as ONNX's reference reads it.
    int64_t n = window_in ? window_in->dim(0) : length;
    if (const Tensor* t = r.input(3)) {
      n = scalar_value(node, *t, "frame_length");
      if (window_in && window_in->dim(0) != n)
        bad_input(node, "the window has " + std::to_string(window_in->dim(0)) + " values but frame_length is " +
                            std::to_string(n));
    }
    if (n < 1) bad_input(node, "the frame length must be positive, got " + std::to_string(n));
    if (n > length)
      bad_input(node, "the frame length " + std::to_string(n) + " is longer than the signal (" +
                          std::to_string(length) + " samples)");
    const int64_t frames = (length - n) / step + 1;
    const int64_t bins = onesided_ ? n / 2 + 1 : n;
    FloatOutput out(r, 0, signal_in.dtype(), {batch, frames, bins, 2});
    std::vector<double> window(static_cast<size_t>(n), 1.0);
    if (window_in) {
      if (window_in->dtype() != signal_in.dtype())
        bad_input(node, std::string("the window is ") + core::dtype_name(window_in->dtype()) + ", the signal " +
                            core::dtype_name(signal_in.dtype()));
      for (int64_t j = 0; j < n; ++j) window[static_cast<size_t>(j)] = window_in->as_double(static_cast<size_t>(j));
    }
    const Tensor signal = widen_half(signal_in);
    const DftPlan plan = plans_.get(static_cast<size_t>(n), parts == 1, false);
    dispatch(FloatTypes{}, signal.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = signal.data<T>();
      T* dst = out.tensor().data<T>();
      for_each_line(r, plan, batch * frames, [&](DftPlan::Work& w, int64_t line) {
        const int64_t b = line / frames, f = line % frames;
        const T* in = src + (b * length + f * step) * parts;
        for (int64_t j = 0; j < n; ++j) {
          const double wj = window[static_cast<size_t>(j)];
          w.values[static_cast<size_t>(j)] = Complex(wj * in[j * parts], parts == 2 ? wj * in[j * parts + 1] : 0.0);
        }
        plan.run(w, static_cast<size_t>(bins));
        T* y = dst + line * bins * 2;
        for (int64_t k = 0; k < bins; ++k) {
          y[2 * k] = static_cast<T>(w.values[static_cast<size_t>(k)].real());
          y[2 * k + 1] = static_cast<T>(w.values[static_cast<size_t>(k)].imag());
        }
      });
    });
    out.finish();
  }

 private:
  bool onesided_;
  DftPlans plans_;
};

// Python's float floor division (NumPy's too), which ONNX's reference uses
// to map frequencies to DFT bins: the floor of the exact quotient, not of the
// rounded a / b.
double floor_divide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double whole = std::floor(div);
  if (div - whole > 0.5) whole += 1.0;
  return whole;
}

// The mel scale of a frequency in hertz, in the edge's precision: ONNX's
// reference computes the mel edges in the edges' float type and the bins
// from them in double, and the bins are floors, sensitive to both.
template <typename E>
E hertz_to_mel(E hz) {
  return E(2595) * std::log10(E(1) + hz / E(700));
}

template <typename E>
std::vector<int64_t> mel_band_edges(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, E lower, E upper) {
  const E low_mel = hertz_to_mel(lower), high_mel = hertz_to_mel(upper);
  const E mel_step = (high_mel - low_mel) / static_cast<E>(mel_bins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
  for (size_t i = 0; i < edges.size(); ++i) {
    const double mel = static_cast<double>(i) * static_cast<double>(mel_step) + static_cast<double>(low_mel);
    const double hz = 700 * (std::pow(10.0, mel / 2595) - 1);
    edges[i] = static_cast<int64_t>(floor_divide(static_cast<double>(dft_length + 1) * hz, static_cast<double>(sample_rate)));
  }
  return edges;
}

// ONNX's output_datatype values MelWeightMatrix allows (T3).
bool mel_output_type_ok(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64 || t == DType::I8 || t == DType::I16 ||
         t == DType::I32 || t == DType::I64 || t == DType::F16 || t == DType::F32 || t == DType::F64 ||
         t == DType::BF16;
}

}  // namespace

std::unique_ptr<Kernel> make_dft(const KernelBuild& b) {
  const int64_t axis = b.node.attr_int("axis", 1);
  const bool inverse = flag_attr(b, "inverse", 0), onesided = flag_attr(b, "onesided", 0);
  require_float_input(b, 0);
  check_static_signal(b, 0, 2, std::nullopt);
  if (const std::vector<core::Dim>* dims = b.input_dims(0)) {
    const auto rank = static_cast<int64_t>(dims->size());
    if (axis < -rank || axis > rank - 2 || axis == -1)
      b.invalid("axis " + std::to_string(axis) + " is not a signal axis of a rank-" + std::to_string(rank) + " input");
  } else if (axis == -1) {
    b.invalid("axis -1 is the real/imaginary dim, not a signal axis");
  }
  check_constant_scalar(b, 1, "dft_length", 1);
  return std::make_unique<DftKernel>(axis, inverse, onesided);
}

std::unique_ptr<Kernel> make_stft(const KernelBuild& b) {
  const bool onesided = flag_attr(b, "onesided", 1);
  require_float_input(b, 0);
  check_static_signal(b, 0, 3, 3);
  check_constant_scalar(b, 1, "frame_step", 1);
  if (const std::vector<core::Dim>* dims = b.input_dims(2); dims && dims->size() != 1)
    b.invalid("the window must have rank 1, got rank " + std::to_string(dims->size()));
  check_constant_scalar(b, 3, "frame_length", 1);
  return std::make_unique<StftKernel>(onesided);
}

std::unique_ptr<Kernel> make_mel_weight_matrix(const KernelBuild& b) {
  const int64_t code = b.node.attr_int("output_datatype", 1);
  // DType's values are ONNX's element type numbers.
  const DType out_type = code > 0 && code < 64 ? static_cast<DType>(code) : DType::Undefined;
  if (!mel_output_type_ok(out_type))
    b.invalid("output_datatype " + std::to_string(code) + " is not a numeric ONNX type");
  check_constant_scalar(b, 0, "num_mel_bins", 1);
  check_constant_scalar(b, 1, "dft_length", 1);
  check_constant_scalar(b, 2, "sample_rate", 1);
  for (size_t i = 3; i < 5; ++i) require_float_input(b, i);
  return make_fn_kernel([out_type](KernelRun& r) {
    const core::Node& node = r.node();
    const int64_t mel_bins = scalar_value(node, required_input(r, 0), "num_mel_bins");
    const int64_t dft_length = scalar_value(node, required_input(r, 1), "dft_length");
    const int64_t sample_rate = scalar_value(node, required_input(r, 2), "sample_rate");
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1)
      bad_input(node, "num_mel_bins (" + std::to_string(mel_bins) + "), dft_length (" + std::to_string(dft_length) +
                          ") and sample_rate (" + std::to_string(sample_rate) + ") must be positive");
    const Tensor& lower_t = required_input(r, 3);
    const Tensor& upper_t = required_input(r, 4);
    check_float_input(r, lower_t);
    check_float_input(r, upper_t);
    if (lower_t.numel() != 1 || upper_t.numel() != 1)
      bad_input(node, "lower_edge_hertz and upper_edge_hertz must hold one value each");
    const double lower = lower_t.as_double(0), upper = upper_t.as_double(0);
    if (!(lower >= 0 && lower < upper && upper <= static_cast<double>(sample_rate) / 2))
      bad_input(node, "the band [" + std::to_string(lower) + ", " + std::to_string(upper) +
                          "] Hz must satisfy 0 <= lower < upper <= sample_rate / 2");
    const std::vector<int64_t> edges =
        lower_t.dtype() == DType::F64
            ? mel_band_edges<double>(mel_bins, dft_length, sample_rate, lower, upper)
            : mel_band_edges<float>(mel_bins, dft_length, sample_rate, static_cast<float>(lower),
                                    static_cast<float>(upper));
    const int64_t spectrum_bins = dft_length / 2 + 1;
    for (int64_t e : edges)
      if (e < 0 || e >= spectrum_bins)
        bad_input(node, "a mel band edge falls on DFT bin " + std::to_string(e) + ", outside the " +
                            std::to_string(spectrum_bins) + " bins of a length-" + std::to_string(dft_length) +
                            " DFT");
    // Triangles rising from edge i to i+1 and falling to i+2, peak 1.
    std::vector<double> w(static_cast<size_t>(spectrum_bins * mel_bins), 0.0);
    auto at = [&](int64_t bin, int64_t band) -> double& { return w[static_cast<size_t>(bin * mel_bins + band)]; };
    for (int64_t m = 0; m < mel_bins; ++m) {
      const int64_t lo = edges[static_cast<size_t>(m)], mid = edges[static_cast<size_t>(m + 1)],
                    hi = edges[static_cast<size_t>(m + 2)];
      if (mid == lo) at(mid, m) = 1;
      else
        for (int64_t j = lo; j <= mid; ++j) at(j, m) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
      for (int64_t j = mid; j < hi; ++j) at(j, m) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
    }
    Tensor& y = r.output(0, out_type, {spectrum_bins, mel_bins});
    for (size_t i = 0; i < w.size(); ++i) store_double(out_type, y.raw(), i, w[i]);
  });
}

}  // namespace hetero::cpu
