// Resize (opsets 10-18 without antialiasing) and its deprecated predecessor
// Upsample (7, 9).
//
// Every output coordinate is mapped back to an input coordinate per axis
// (coordinate_transformation_mode). Nearest is then a pure gather, so it works
// for any dtype and copies rows that repeat. Linear and cubic are tensor
// products of 1-D filters, computed as separable passes from the last axis to
// the first, which is also the order ONNX's reference uses (so that the
// tf_crop_and_resize extrapolation mixes identically). Axes whose mapping is
// the identity are skipped: an NCHW bilinear resize is a W pass then an H pass
// whose inner loop runs over whole rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize };
// Simple is what Upsample and Resize-10 did: truncate when upsampling, ceil
// when downsampling.
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct Config {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::Asymmetric;
  Nearest nearest = Nearest::Simple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  // Where scales/sizes come from: 0 Upsample-7 (scales attribute), 1
  // Upsample-9 / Resize-10 (input 1 = scales), 2 Resize-11+ (roi, scales, sizes).
  int form = 2;
  std::vector<float> attr_scales;
};

// The input coordinate output position x maps to on one axis. Like ONNX's
// reference, align_corners, pytorch_half_pixel and tf_crop_and_resize use the
// unrounded resized length in * scale, not the integer output size.
double source_coord(const Config& c, double x, double scale, int64_t in, double roi_start, double roi_end) {
  const double len = static_cast<double>(in) * scale, in_span = static_cast<double>(in - 1);
  switch (c.coord) {
    case Coord::HalfPixel: return (x + 0.5) / scale - 0.5;
    case Coord::PytorchHalfPixel: return len > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
    case Coord::AlignCorners: return len > 1 ? x * in_span / (len - 1) : 0.0;
    case Coord::Asymmetric: return x / scale;
    case Coord::TfHalfPixelForNN: return (x + 0.5) / scale;
    case Coord::TfCropAndResize:
      return len > 1 ? roi_start * in_span + x * (roi_end - roi_start) * in_span / (len - 1)
                     : 0.5 * (roi_start + roi_end) * in_span;
  }
  return 0;
}

int64_t round_nearest(Nearest m, double x, bool downsampling) {
  switch (m) {
    case Nearest::RoundPreferFloor: return static_cast<int64_t>(std::ceil(x - 0.5));
    case Nearest::RoundPreferCeil: return static_cast<int64_t>(std::floor(x + 0.5));
    case Nearest::Floor: return static_cast<int64_t>(std::floor(x));
    case Nearest::Ceil: return static_cast<int64_t>(std::ceil(x));
    case Nearest::Simple: return downsampling ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  return 0;
}

// The filter of one axis: for output position j, `taps` input indices (already
// clamped) and weights; outside[j] marks tf_crop_and_resize extrapolation.
struct AxisFilter {
  int64_t in = 0, out = 0, taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<char> outside;
  bool identity() const {
    if (in != out) return false;
    for (int64_t j = 0; j < out; ++j) {
      if (outside[static_cast<size_t>(j)]) return false;
      for (int64_t t = 0; t < taps; ++t) {
        const auto k = static_cast<size_t>(j * taps + t);
        if (weight[k] != 0 && (index[k] != j || weight[k] != 1)) return false;
      }
    }
    return true;
  }
};

void cubic_weights(double t, double a, double w[4]) {
  // Keys' cubic convolution kernel at distances 1+t, t, 1-t, 2-t.
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  w[0] = far(1 + t);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

AxisFilter make_filter(const Config& c, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisFilter f;
  f.in = in;
  f.out = out;
  f.taps = c.mode == Mode::Nearest ? 1 : c.mode == Mode::Linear ? 2 : 4;
  f.index.assign(static_cast<size_t>(out * f.taps), 0);
  f.weight.assign(static_cast<size_t>(out * f.taps), 0);
  f.outside.assign(static_cast<size_t>(out), 0);
  for (int64_t j = 0; j < out; ++j) {
    const double x = source_coord(c, static_cast<double>(j), scale, in, roi_start, roi_end);
    auto* idx = &f.index[static_cast<size_t>(j * f.taps)];
    auto* w = &f.weight[static_cast<size_t>(j * f.taps)];
    if (c.coord == Coord::TfCropAndResize && (x < 0 || x > static_cast<double>(in - 1))) {
      f.outside[static_cast<size_t>(j)] = 1;
      continue;
    }
    if (c.mode == Mode::Nearest) {
      idx[0] = std::clamp<int64_t>(round_nearest(c.nearest, x, scale < 1), 0, in - 1);
      w[0] = 1;
      continue;
    }
    const double x0 = std::floor(x);
    const double t = x - x0;
    const auto base = static_cast<int64_t>(x0);
    if (c.mode == Mode::Linear) {
      idx[0] = base;
      idx[1] = base + 1;
      w[0] = 1 - t;
      w[1] = t;
    } else {
      cubic_weights(t, c.cubic_a, w);
      for (int k = 0; k < 4; ++k) idx[k] = base - 1 + k;
      if (c.exclude_outside) {
        double sum = 0;
        for (int k = 0; k < 4; ++k) {
          if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
          sum += w[k];
        }
        for (int k = 0; k < 4 && sum != 0; ++k) w[k] /= sum;
      }
    }
    // Out-of-range taps read the edge element.
    for (int64_t k = 0; k < f.taps; ++k) idx[k] = std::clamp<int64_t>(idx[k], 0, in - 1);
  }
  return f;
}

// Nearest: out[i0..in] = x[map0[i0]..mapn[in]], row by row.
void gather_nearest(KernelRun& r, const Tensor& x, Tensor& y, const std::vector<AxisFilter>& filters,
                    double extrapolation) {
  const size_t rank = x.rank();
  const size_t elem = core::dtype_size(x.dtype());
  alignas(8) unsigned char fill[8] = {};
  store_double(x.dtype(), fill, 0, extrapolation);
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  const AxisFilter& last = filters[rank - 1];
  const int64_t width = last.out;
  const int64_t rows = static_cast<int64_t>(y.numel()) / width;
  // The innermost axis unresized (channels-last activations): rows copy whole.
  const bool last_identity = last.identity();
  const Shape& out = y.shape();
  dispatch_width(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T fv;
    std::memcpy(&fv, fill, sizeof(T));
    const T* in = static_cast<const T*>(x.raw());
    T* dst = static_cast<T*>(y.raw());
    const bool parallel = y.nbytes() >= (size_t{1} << 16);
    parallel_blocks(r, rows, 2.0 * double(width) * sizeof(T), parallel, [&](int64_t row) {
      T* o = dst + row * width;
      int64_t rest = row, off = 0;
      bool border = false;
      for (size_t d = rank - 1; d-- > 0;) {
        const auto i = static_cast<size_t>(rest % out[d]);
        rest /= out[d];
        border = border || filters[d].outside[i];
        off += filters[d].index[i] * strides[d];
      }
      if (border) {
        std::fill(o, o + width, fv);
        return;
      }
      const T* src = in + off;
      if (last_identity) {
        std::memcpy(o, src, static_cast<size_t>(width) * sizeof(T));
        return;
      }
      for (int64_t j = 0; j < width; ++j) {
        const auto k = static_cast<size_t>(j);
        o[j] = last.outside[k] ? fv : src[last.index[k]];
      }
    });
  });
}

// One separable pass over `axis`: src is [outer, f.in, inner], dst is
// [outer, f.out, inner].
template <typename A>
void filter_pass(KernelRun& r, const A* src, A* dst, int64_t outer, int64_t inner, const AxisFilter& f,
                 A extrapolation) {
  const bool parallel = outer * f.out * inner >= (1 << 14);
  parallel_blocks(r, outer * f.out, 2.0 * double(f.taps) * double(inner) * sizeof(A), parallel, [&](int64_t item) {
    const int64_t o = item / f.out, j = item % f.out;
    A* d = dst + item * inner;
    if (f.outside[static_cast<size_t>(j)]) {
      std::fill(d, d + inner, extrapolation);
      return;
    }
    const int64_t* idx = &f.index[static_cast<size_t>(j * f.taps)];
    const double* w = &f.weight[static_cast<size_t>(j * f.taps)];
    const A* s0 = src + (o * f.in + idx[0]) * inner;
    const auto w0 = static_cast<A>(w[0]);
    for (int64_t e = 0; e < inner; ++e) d[e] = w0 * s0[e];
    for (int64_t t = 1; t < f.taps; ++t) {
      const A* s = src + (o * f.in + idx[t]) * inner;
      const auto wt = static_cast<A>(w[t]);
      if (wt == 0) continue;
      for (int64_t e = 0; e < inner; ++e) d[e] += wt * s[e];
    }
  });
}

// Integer outputs of linear/cubic saturate to the type's range.
double saturate(DType t, double v) {
  dispatch(TypeList<uint8_t, int8_t, uint16_t, int16_t, int32_t, uint32_t>{}, t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                   static_cast<double>(std::numeric_limits<T>::max()));
  });
  return v;
}

// Linear/cubic in accumulator type A (double for float64, float otherwise).
template <typename A>
void interpolate(KernelRun& r, const Tensor& x, Tensor& y, const std::vector<AxisFilter>& filters,
                 double extrapolation) {
  const size_t rank = x.rank();
  std::vector<A> a, b;
  const A* cur = nullptr;
  if constexpr (std::is_same_v<A, float>) {
    if (x.dtype() == DType::F32) cur = x.data<float>();
  }
  if (!cur) {
    a.resize(x.numel());
    for (size_t i = 0; i < x.numel(); ++i) a[i] = static_cast<A>(x.as_double(i));
    cur = a.data();
  }
  Shape shape = x.shape();
  std::vector<size_t> passes;
  for (size_t d = rank; d-- > 0;)
    if (!filters[d].identity()) passes.push_back(d);
  // The last pass writes straight into a float32/float64 output.
  const bool direct = (std::is_same_v<A, float> && y.dtype() == DType::F32) ||
                      (std::is_same_v<A, double> && y.dtype() == DType::F64);
  if (passes.empty()) {
    // Every axis maps onto itself: a plain conversion copy.
    for (size_t i = 0; i < y.numel(); ++i) store_double(y.dtype(), y.raw(), i, cur[i]);
    return;
  }
  for (size_t p = 0; p < passes.size(); ++p) {
    const size_t d = passes[p];
    const int64_t outer = product(shape, 0, d), inner = product(shape, d + 1, rank);
    shape[d] = filters[d].out;
    A* dst;
    std::vector<A>& spare = cur == b.data() ? a : b;
    if (p + 1 == passes.size() && direct) {
      dst = y.data<A>();
    } else {
      spare.resize(core::shape_numel(shape));
      dst = spare.data();
    }
    filter_pass<A>(r, cur, dst, outer, inner, filters[d], static_cast<A>(extrapolation));
    cur = dst;
  }
  if (!direct) {
    const bool integral = y.dtype() != DType::F16 && y.dtype() != DType::BF16 && y.dtype() != DType::F32 &&
                          y.dtype() != DType::F64;
    for (size_t i = 0; i < y.numel(); ++i) {
      // Integer images round to nearest rather than truncate.
      const double v = integral ? saturate(y.dtype(), std::nearbyint(static_cast<double>(cur[i])))
                                 : static_cast<double>(cur[i]);
      store_double(y.dtype(), y.raw(), i, v);
    }
  }
}

void run_resize(const Config& c, KernelRun& r) {
  const Tensor& x = required_input(r, 0);
  const size_t rank = x.rank();
  if (rank == 0) bad_input(r.node(), "cannot resize a scalar");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.form == 0) {
    scales.assign(c.attr_scales.begin(), c.attr_scales.end());
  } else {
    const Tensor* s = r.input(c.form == 1 ? 1 : 2);
    if (s && s->numel() > 0)
      for (size_t i = 0; i < s->numel(); ++i) scales.push_back(s->as_double(i));
    if (c.form == 2) {
      if (const Tensor* z = r.input(3); z && z->numel() > 0) sizes = int_input_values(r.node(), *z, "sizes");
      if (const Tensor* q = r.input(1); q && q->numel() > 0)
        for (size_t i = 0; i < q->numel(); ++i) roi.push_back(q->as_double(i));
    }
  }
  if (scales.empty() == sizes.empty()) bad_input(r.node(), "exactly one of scales and sizes must be given");
  if (!scales.empty() && scales.size() != rank)
    bad_input(r.node(), "scales has " + std::to_string(scales.size()) + " entries for rank " + std::to_string(rank));
  if (!sizes.empty() && sizes.size() != rank)
    bad_input(r.node(), "sizes has " + std::to_string(sizes.size()) + " entries for rank " + std::to_string(rank));
  if (c.coord == Coord::TfCropAndResize && roi.size() != 2 * rank)
    bad_input(r.node(), "tf_crop_and_resize needs a roi of " + std::to_string(2 * rank) + " values");
  Shape out(rank);
  std::vector<AxisFilter> filters(rank);
  for (size_t d = 0; d < rank; ++d) {
    double scale;
    if (!sizes.empty()) {
      out[d] = sizes[d];
      if (out[d] < 0) bad_input(r.node(), "sizes has a negative entry");
      scale = x.dim(d) > 0 ? static_cast<double>(out[d]) / static_cast<double>(x.dim(d)) : 1.0;
    } else {
      scale = scales[d];
      if (!(scale > 0) || scale > 1e6) bad_input(r.node(), "scale " + std::to_string(scale) + " is not valid");
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.dim(d)) * scale));
    }
    const double rs = roi.empty() ? 0 : roi[d], re = roi.empty() ? 1 : roi[d + rank];
    if (x.dim(d) > 0) filters[d] = make_filter(c, x.dim(d), out[d], scale, rs, re);
  }
  Tensor& y = r.output(0, x.dtype(), out);
  if (y.numel() == 0) return;
  if (x.numel() == 0) bad_input(r.node(), "cannot resize an empty tensor to a non-empty one");
  if (c.mode == Mode::Nearest) {
    gather_nearest(r, x, y, filters, c.extrapolation);
    return;
  }
  if (x.dtype() == DType::F64)
    interpolate<double>(r, x, y, filters, c.extrapolation);
  else
    interpolate<float>(r, x, y, filters, c.extrapolation);
}

Mode parse_mode(const KernelBuild& b) {
  const std::string m = b.node.attr_string("mode", "nearest");
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear" || m == "bilinear") return Mode::Linear;
  if (m == "cubic" && b.node.op_type == "Resize" && b.opset >= 11) return Mode::Cubic;
  b.unsupported("mode '" + m + "' is not supported");
}

void check_interpolation_dtype(const KernelBuild& b, const Config& c) {
  const DType t = b.input_dtype(0);
  if (c.mode != Mode::Nearest && (t == DType::Bool || t == DType::I64 || t == DType::U64))
    b.unsupported(std::string("interpolating ") + core::dtype_name(t) + " tensors is not supported");
}

}  // namespace

std::unique_ptr<Kernel> make_resize(const KernelBuild& b) {
  const Node& n = b.node;
  Config c;
  c.mode = parse_mode(b);
  c.form = b.opset < 11 ? 1 : 2;
  if (b.opset >= 11) {
    const std::string coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel") c.coord = Coord::HalfPixel;
    else if (coord == "pytorch_half_pixel") c.coord = Coord::PytorchHalfPixel;
    else if (coord == "align_corners") c.coord = Coord::AlignCorners;
    else if (coord == "asymmetric") c.coord = Coord::Asymmetric;
    else if (coord == "tf_half_pixel_for_nn") c.coord = Coord::TfHalfPixelForNN;
    else if (coord == "tf_crop_and_resize") c.coord = Coord::TfCropAndResize;
    else b.unsupported("coordinate_transformation_mode '" + coord + "' is not supported");
    const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") c.nearest = Nearest::RoundPreferFloor;
    else if (nm == "round_prefer_ceil") c.nearest = Nearest::RoundPreferCeil;
    else if (nm == "floor") c.nearest = Nearest::Floor;
    else if (nm == "ceil") c.nearest = Nearest::Ceil;
    else b.unsupported("nearest_mode '" + nm + "' is not supported");
    c.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    c.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    c.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  }
  // Opset 18 additions this kernel does not implement.
  if (n.attr_int("antialias", 0) != 0) b.unsupported("antialias is not supported");
  if (n.has_attr("axes")) b.unsupported("the axes attribute is not supported");
  if (n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    b.unsupported("keep_aspect_ratio_policy other than stretch is not supported");
  check_interpolation_dtype(b, c);
  return make_fn_kernel([c](KernelRun& r) { run_resize(c, r); });
}

std::unique_ptr<Kernel> make_upsample(const KernelBuild& b) {
  Config c;
  c.mode = parse_mode(b);
  if (b.opset < 9) {
    c.form = 0;
    c.attr_scales = b.node.attr_floats("scales");
    if (c.attr_scales.empty()) b.unsupported("attribute 'scales' is required");
  } else {
    c.form = 1;
  }
  check_interpolation_dtype(b, c);
  return make_fn_kernel([c](KernelRun& r) { run_resize(c, r); });
}

}  // namespace hetero::cpu
