// RoiAlign (opsets 10 and 16): each region of interest of a [N, C, H, W]
// feature map pooled to [C, output_height, output_width] from bilinearly
// interpolated samples, sampling_ratio² per output cell (or ceil(roi size /
// output size) per axis when it is 0).
//
// The arithmetic follows ONNX's reference (and ONNX Runtime's default):
//  - output_half_pixel (opset 10's only mode) does not shift coordinates by
//    half a pixel and stretches a region smaller than one pixel to one;
//  - a sample further than one pixel outside the map counts as 0, one
//    within that pixel is clamped to the border;
//  - "max" takes, per sample, the largest of the four weighted corner
//    values w·v (not the interpolated value), then the largest over the
//    samples. This is what the reference defines and ONNX Runtime does
//    unless told otherwise, though it is arguably not a max of
//    interpolations (onnx/onnx#4764).
// Only the samples that fall on the map are visited: the others add 0, so a
// region far larger than the map costs no more than the map itself.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

struct RoiAlignAttrs {
  bool max_mode;
  bool half_pixel;
  int64_t out_h, out_w, sampling_ratio;
  double spatial_scale;
};

// Samples per output cell along an axis with sampling_ratio 0 (a region's
// size in pixels over the output size), at most: keeps sample indices exact.
constexpr double kMaxGrid = 2147483648.0;

// One sample's interpolation along one axis: the two neighbours and their
// weights.
struct Tap {
  int64_t low, high;
  double w_low, w_high;
};

// The samples along one axis of one region that fall on the map, per output
// cell: taps[begin[p] .. begin[p + 1]).
struct AxisSamples {
  std::vector<size_t> begin;
  std::vector<Tap> taps;
  double grid;  // samples per cell along the axis, on the map or not
};

AxisSamples axis_samples(double start, double bin, double grid, int64_t cells, int64_t size) {
  AxisSamples s;
  s.grid = grid;
  s.begin.push_back(0);
  const double step = grid > 0 ? bin / grid : 0;
  const auto extent = static_cast<double>(size);
  for (int64_t p = 0; p < cells; ++p) {
    const double base = start + static_cast<double>(p) * bin;
    if (grid >= 1) {
      // Sample i sits at base + (i + 0.5) * step; those within [-1, size]
      // form one run of i, found by solving for i (widened by one each side
      // for rounding, then each sample checked exactly).
      double lo = 0, hi = grid - 1;
      if (step != 0) {
        const double a = (-1 - base) / step - 0.5, b = (extent - base) / step - 0.5;
        lo = std::max(lo, std::floor(std::min(a, b)) - 1);
        hi = std::min(hi, std::ceil(std::max(a, b)) + 1);
      }
      if (!(lo <= hi)) lo = 1, hi = 0;  // none on the map (or a NaN bound)
      for (auto i = static_cast<int64_t>(lo); i <= static_cast<int64_t>(hi); ++i) {
        double c = base + (static_cast<double>(i) + 0.5) * step;
        if (c < -1 || c > extent) continue;
        if (c <= 0) c = 0;
        Tap t;
        t.low = static_cast<int64_t>(c);
        if (t.low >= size - 1) {
          t.low = t.high = size - 1;
          c = static_cast<double>(t.low);
        } else {
          t.high = t.low + 1;
        }
        t.w_high = c - static_cast<double>(t.low);
        t.w_low = 1 - t.w_high;
        s.taps.push_back(t);
      }
    }
    s.begin.push_back(s.taps.size());
  }
  return s;
}

template <typename T>
void roi_align(const RoiAlignAttrs& a, const T* x, int64_t channels, int64_t height, int64_t width,
               const std::vector<AxisSamples>& ys, const std::vector<AxisSamples>& xs,
               const std::vector<int64_t>& batch, T* y, KernelRun& run) {
  const auto rois = static_cast<int64_t>(ys.size());
  const int64_t cells = a.out_h * a.out_w;
  const bool parallel = rois * channels * cells > 4096;
  // The work of one (roi, channel): its samples (on average over the rois),
  // four taps of about 8 bytes each.
  double samples = 0;
  for (size_t i = 0; i < ys.size(); ++i) samples += double(ys[i].taps.size()) * double(xs[i].taps.size());
  const double per_unit = 32.0 * (samples / double(std::max<int64_t>(rois, 1)) + double(cells));
  parallel_blocks(run, rois * channels, per_unit, parallel, [&](int64_t rc) {
    const int64_t r = rc / channels, c = rc % channels;
    const AxisSamples &sy = ys[static_cast<size_t>(r)], &sx = xs[static_cast<size_t>(r)];
    const T* plane = x + (batch[static_cast<size_t>(r)] * channels + c) * height * width;
    const double all_samples = sy.grid * sx.grid;
    for (int64_t ph = 0; ph < a.out_h; ++ph)
      for (int64_t pw = 0; pw < a.out_w; ++pw) {
        double sum = 0, max = -std::numeric_limits<double>::infinity();
        size_t visited = 0;
        for (size_t i = sy.begin[ph]; i < sy.begin[ph + 1]; ++i)
          for (size_t j = sx.begin[pw]; j < sx.begin[pw + 1]; ++j) {
            const Tap &ty = sy.taps[i], &tx = sx.taps[j];
            const double v1 = ty.w_low * tx.w_low * static_cast<double>(plane[ty.low * width + tx.low]);
            const double v2 = ty.w_low * tx.w_high * static_cast<double>(plane[ty.low * width + tx.high]);
            const double v3 = ty.w_high * tx.w_low * static_cast<double>(plane[ty.high * width + tx.low]);
            const double v4 = ty.w_high * tx.w_high * static_cast<double>(plane[ty.high * width + tx.high]);
            sum += v1 + v2 + v3 + v4;
            max = std::max({max, v1, v2, v3, v4});
            ++visited;
          }
        double out;
        if (a.max_mode) {
          // Samples off the map are zeros among the values.
          out = visited == 0 || static_cast<double>(visited) < all_samples ? std::max(max, 0.0) : max;
        } else {
          out = sum / std::max(all_samples, 1.0);
        }
        y[(rc * a.out_h + ph) * a.out_w + pw] = static_cast<T>(out);
      }
  });
}

class RoiAlignKernel final : public Kernel {
 public:
  explicit RoiAlignKernel(const RoiAlignAttrs& a) : a_(a) {}

  void run(KernelRun& r) override {
    const core::Node& node = r.node();
    const Tensor& x_in = required_input(r, 0);
    const Tensor& rois_in = required_input(r, 1);
    const Tensor& batch_t = required_input(r, 2);
    check_float_input(r, x_in);
    if (x_in.rank() != 4) bad_input(node, "X must be [N, C, H, W], got " + core::shape_to_string(x_in.shape()));
    if (rois_in.rank() != 2 || rois_in.dim(1) != 4)
      bad_input(node, "rois must be [num_rois, 4], got " + core::shape_to_string(rois_in.shape()));
    if (rois_in.dtype() != x_in.dtype())
      bad_input(node, std::string("rois are ") + core::dtype_name(rois_in.dtype()) + ", X " +
                          core::dtype_name(x_in.dtype()));
    const int64_t num_rois = rois_in.dim(0);
    if (batch_t.shape() != core::Shape{num_rois})
      bad_input(node, "batch_indices " + core::shape_to_string(batch_t.shape()) + " must be [" +
                          std::to_string(num_rois) + "]");
    const int64_t n = x_in.dim(0), channels = x_in.dim(1), height = x_in.dim(2), width = x_in.dim(3);
    const std::vector<int64_t> batch = int_input_values(node, batch_t, "batch_indices");
    std::vector<AxisSamples> ys, xs;
    const double offset = a_.half_pixel ? 0.5 : 0.0;
    for (int64_t i = 0; i < num_rois; ++i) {
      const int64_t b = batch[static_cast<size_t>(i)];
      if (b < 0 || b >= n)
        bad_input(node, "batch index " + std::to_string(b) + " of roi " + std::to_string(i) + " is outside [0, " +
                            std::to_string(n) + ")");
      double c[4];
      for (size_t k = 0; k < 4; ++k) {
        c[k] = rois_in.as_double(static_cast<size_t>(i * 4) + k);
        if (!std::isfinite(c[k])) bad_input(node, "roi " + std::to_string(i) + " has a coordinate that is not finite");
      }
      const double x1 = c[0] * a_.spatial_scale - offset, y1 = c[1] * a_.spatial_scale - offset;
      double roi_w = c[2] * a_.spatial_scale - offset - x1, roi_h = c[3] * a_.spatial_scale - offset - y1;
      if (!a_.half_pixel) {
        roi_w = std::max(roi_w, 1.0);
        roi_h = std::max(roi_h, 1.0);
      }
      const double bin_h = roi_h / static_cast<double>(a_.out_h), bin_w = roi_w / static_cast<double>(a_.out_w);
      const double grid_h = a_.sampling_ratio > 0 ? static_cast<double>(a_.sampling_ratio) : std::ceil(bin_h);
      const double grid_w = a_.sampling_ratio > 0 ? static_cast<double>(a_.sampling_ratio) : std::ceil(bin_w);
      if (grid_h > kMaxGrid || grid_w > kMaxGrid)
        bad_input(node, "roi " + std::to_string(i) + " spans more than 2^31 pixels per output cell");
      ys.push_back(axis_samples(y1, bin_h, grid_h, a_.out_h, height));
      xs.push_back(axis_samples(x1, bin_w, grid_w, a_.out_w, width));
    }
    FloatOutput out(r, 0, x_in.dtype(), {num_rois, channels, a_.out_h, a_.out_w});
    const Tensor x = widen_half(x_in);
    dispatch(FloatTypes{}, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      roi_align<T>(a_, x.data<T>(), channels, height, width, ys, xs, batch, out.tensor().data<T>(), r);
    });
    out.finish();
  }

 private:
  RoiAlignAttrs a_;
};

}  // namespace

std::unique_ptr<Kernel> make_roi_align(const KernelBuild& b) {
  RoiAlignAttrs a;
  const std::string mode = b.node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") b.invalid("mode must be avg or max, got '" + mode + "'");
  a.max_mode = mode == "max";
  // Opset 10 has no coordinate_transformation_mode: its behaviour is
  // output_half_pixel.
  const std::string ctm =
      b.node.attr_string("coordinate_transformation_mode", b.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    b.invalid("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '" + ctm + "'");
  a.half_pixel = ctm == "half_pixel";
  a.out_h = b.node.attr_int("output_height", 1);
  a.out_w = b.node.attr_int("output_width", 1);
  if (a.out_h < 1 || a.out_w < 1)
    b.invalid("output_height and output_width must be positive, got " + std::to_string(a.out_h) + " and " +
              std::to_string(a.out_w));
  a.sampling_ratio = b.node.attr_int("sampling_ratio", 0);
  // sampling_ratio² samples per output cell: a bound keeps a bad model from
  // running for hours (models use 0, 2 or 4).
  if (a.sampling_ratio < 0 || a.sampling_ratio > 1024)
    b.invalid("sampling_ratio must be in [0, 1024], got " + std::to_string(a.sampling_ratio));
  a.spatial_scale = b.node.attr_float("spatial_scale", 1.0f);
  if (!std::isfinite(a.spatial_scale)) b.invalid("spatial_scale must be finite");
  require_float_input(b, 0);
  if (const std::vector<core::Dim>* dims = b.input_dims(0); dims && dims->size() != 4)
    b.invalid("X must be [N, C, H, W], got rank " + std::to_string(dims->size()));
  if (const std::vector<core::Dim>* dims = b.input_dims(1);
      dims && (dims->size() != 2 || ((*dims)[1].known() && (*dims)[1].size != 4)))
    b.invalid("rois must be [num_rois, 4]");
  return std::make_unique<RoiAlignKernel>(a);
}

}  // namespace hetero::cpu
