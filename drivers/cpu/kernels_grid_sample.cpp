// GridSample (opset 16, 4-D): samples an NCHW input at the normalised (x, y)
// positions of a grid. Positions are mapped to pixel coordinates
// (align_corners), then each interpolation tap reads a pixel or applies the
// padding mode to that tap's integer position (zeros, border clamp, or
// reflection), as ONNX Runtime does.
#include <algorithm>
#include <cmath>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

enum class Interp { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

struct Sampler {
  Interp interp;
  Padding padding;
  bool align;

  double to_pixel(double v, int64_t size) const {
    return align ? (v + 1) / 2 * static_cast<double>(size - 1) : ((v + 1) * static_cast<double>(size) - 1) / 2;
  }

  // Folds x into [lo, hi] by reflecting at the bounds as often as needed.
  static double reflect(double x, double lo, double hi) {
    const double range = hi - lo;
    if (range <= 0) return lo;
    if (x < lo) {
      const double d = lo - x;
      const auto n = static_cast<int64_t>(d / range);
      const double r = d - static_cast<double>(n) * range;
      return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
      const double d = x - hi;
      const auto n = static_cast<int64_t>(d / range);
      const double r = d - static_cast<double>(n) * range;
      return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
  }

  // The pixel at integer position (y, x) of a [h, w] plane after padding.
  template <typename T>
  T pixel(const T* plane, int64_t h, int64_t w, int64_t y, int64_t x) const {
    switch (padding) {
      case Padding::Zeros:
        if (y < 0 || y >= h || x < 0 || x >= w) return T(0);
        break;
      case Padding::Border:
        y = std::clamp<int64_t>(y, 0, h - 1);
        x = std::clamp<int64_t>(x, 0, w - 1);
        break;
      case Padding::Reflection: {
        const double lo = align ? 0.0 : -0.5;
        y = static_cast<int64_t>(reflect(static_cast<double>(y), lo, static_cast<double>(h - 1) - lo));
        x = static_cast<int64_t>(reflect(static_cast<double>(x), lo, static_cast<double>(w - 1) - lo));
        y = std::clamp<int64_t>(y, 0, h - 1);
        x = std::clamp<int64_t>(x, 0, w - 1);
        break;
      }
    }
    return plane[y * w + x];
  }

  static void cubic(double t, double w[4]) {
    constexpr double a = -0.75;
    auto near = [](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
    auto far = [](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
    w[0] = far(1 + t);
    w[1] = near(t);
    w[2] = near(1 - t);
    w[3] = far(2 - t);
  }

  template <typename T>
  T sample(const T* plane, int64_t h, int64_t w, double gx, double gy) const {
    const double x = to_pixel(gx, w), y = to_pixel(gy, h);
    if (!std::isfinite(x) || !std::isfinite(y) || std::fabs(x) > 1e15 || std::fabs(y) > 1e15) return T(0);
    if (interp == Interp::Nearest)
      return pixel(plane, h, w, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
    const double fx = std::floor(x), fy = std::floor(y);
    const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    const double tx = x - fx, ty = y - fy;
    if (interp == Interp::Bilinear) {
      const double top = (1 - tx) * pixel(plane, h, w, y0, x0) + tx * pixel(plane, h, w, y0, x0 + 1);
      const double bottom = (1 - tx) * pixel(plane, h, w, y0 + 1, x0) + tx * pixel(plane, h, w, y0 + 1, x0 + 1);
      return static_cast<T>((1 - ty) * top + ty * bottom);
    }
    double wx[4], wy[4];
    cubic(tx, wx);
    cubic(ty, wy);
    double acc = 0;
    for (int i = 0; i < 4; ++i) {
      double row = 0;
      for (int j = 0; j < 4; ++j) row += wx[j] * pixel(plane, h, w, y0 - 1 + i, x0 - 1 + j);
      acc += wy[i] * row;
    }
    return static_cast<T>(acc);
  }
};

template <typename T>
void grid_sample(KernelRun& r, const Sampler& s, const Tensor& x, const Tensor& grid, Tensor& y) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = grid.dim(1), ow = grid.dim(2);
  const T* in = x.data<T>();
  const T* g = grid.data<T>();
  T* out = y.data<T>();
  const bool parallel = n * c * oh * ow >= (1 << 14);
  // A sample reads up to 16 neighbours (bicubic) and its grid point.
  parallel_blocks(r, n * c, 64.0 * double(oh * ow), parallel, [&](int64_t nc) {
    const int64_t b = nc / c;
    const T* plane = in + nc * h * w;
    const T* gb = g + b * oh * ow * 2;
    T* o = out + nc * oh * ow;
    for (int64_t p = 0; p < oh * ow; ++p) o[p] = s.sample(plane, h, w, gb[2 * p], gb[2 * p + 1]);
  });
}

}  // namespace

std::unique_ptr<Kernel> make_grid_sample(const KernelBuild& b) {
  Sampler s{};
  const std::string mode = b.node.attr_string("mode", b.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear" || mode == "linear") s.interp = Interp::Bilinear;
  else if (mode == "nearest") s.interp = Interp::Nearest;
  else if (mode == "bicubic" || mode == "cubic") s.interp = Interp::Bicubic;
  else b.unsupported("mode '" + mode + "' is not supported");
  const std::string pad = b.node.attr_string("padding_mode", "zeros");
  if (pad == "zeros") s.padding = Padding::Zeros;
  else if (pad == "border") s.padding = Padding::Border;
  else if (pad == "reflection") s.padding = Padding::Reflection;
  else b.unsupported("padding_mode '" + pad + "' is not supported");
  s.align = b.node.attr_int("align_corners", 0) != 0;
  return make_fn_kernel([s](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& grid = required_input(r, 1);
    if (x.rank() != 4 || grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2)
      fail(HETERO_NOT_SUPPORTED, r.node().describe() + ": only 4-D inputs with an [N, H, W, 2] grid are supported");
    if (grid.dtype() != x.dtype()) bad_input(r.node(), "the grid differs in type from the input");
    Tensor& y = r.output(0, x.dtype(), {x.dim(0), x.dim(1), grid.dim(1), grid.dim(2)});
    if (y.numel() == 0) return;
    if (x.dim(2) == 0 || x.dim(3) == 0) bad_input(r.node(), "cannot sample an empty image");
    dispatch_or_fail(FloatTypes{}, x.dtype(), r.node(),
                     [&](auto tag) { grid_sample<typename decltype(tag)::type>(r, s, x, grid, y); });
  });
}

}  // namespace hetero::cpu
