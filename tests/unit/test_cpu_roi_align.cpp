// RoiAlign against ONNX's reference algorithm written here sample by sample
// (every sample of the grid, on the map or not), over what ONNX's test data
// leaves out: max mode, opset 10, sampling_ratio 0, regions that reach past
// the map or are reversed or empty, spatial_scale, float16 and double, two
// threads; then a region a million times the map's size, and bad nodes and
// inputs.
#include <cmath>
#include <limits>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

struct Attrs {
  std::string mode = "avg", ctm = "half_pixel";
  int64_t out_h = 3, out_w = 4, sampling_ratio = 2;
  float scale = 1;
};

std::vector<double> reference(const Attrs& a, const Tensor& x, const Tensor& rois, const std::vector<int64_t>& batch) {
  const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const bool half_pixel = a.ctm == "half_pixel";
  std::vector<double> y;
  for (size_t r = 0; r < batch.size(); ++r) {
    const double off = half_pixel ? 0.5 : 0;
    const double x1 = rois.as_double(r * 4) * a.scale - off, y1 = rois.as_double(r * 4 + 1) * a.scale - off;
    double rw = rois.as_double(r * 4 + 2) * a.scale - off - x1, rh = rois.as_double(r * 4 + 3) * a.scale - off - y1;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / static_cast<double>(a.out_h), bw = rw / static_cast<double>(a.out_w);
    const auto gh = a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(bh));
    const auto gw = a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(bw));
    const double count = std::max<double>(static_cast<double>(gh * gw), 1.0);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t ph = 0; ph < a.out_h; ++ph)
        for (int64_t pw = 0; pw < a.out_w; ++pw) {
          double sum = 0;
          std::vector<double> vals;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y1 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + .5) * bh / static_cast<double>(gh);
              double xx = x1 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + .5) * bw / static_cast<double>(gw);
              if (yy < -1 || yy > static_cast<double>(height) || xx < -1 || xx > static_cast<double>(width)) {
                vals.push_back(0);
                continue;
              }
              yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
              auto yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh = yl + 1, xh = xl + 1;
              if (yl >= height - 1) yl = yh = height - 1, yy = static_cast<double>(yl);
              if (xl >= width - 1) xl = xh = width - 1, xx = static_cast<double>(xl);
              const double ly = yy - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
              auto v = [&](int64_t i, int64_t j) {
                return x.as_double(static_cast<size_t>(((batch[r] * channels + c) * height + i) * width + j));
              };
              const double w[4] = {(1 - ly) * (1 - lx) * v(yl, xl), (1 - ly) * lx * v(yl, xh), ly * (1 - lx) * v(yh, xl),
                                   ly * lx * v(yh, xh)};
              sum += w[0] + w[1] + w[2] + w[3];
              vals.push_back(std::max({w[0], w[1], w[2], w[3]}));
            }
          if (a.mode == "avg") y.push_back(sum / count);
          else y.push_back(vals.empty() ? 0 : *std::max_element(vals.begin(), vals.end()));
        }
  }
  return y;
}

Tensor run_roi_align(const Attrs& a, int64_t opset, const Tensor& x, const Tensor& rois, const std::vector<int64_t>& b,
                     int threads = 1) {
  KernelNode n("RoiAlign", opset, 3);
  n.attr_string("mode", a.mode).attr_int("output_height", a.out_h).attr_int("output_width", a.out_w);
  n.attr_int("sampling_ratio", a.sampling_ratio).attr_float("spatial_scale", a.scale);
  if (opset >= 16) n.attr_string("coordinate_transformation_mode", a.ctm);
  return n.run({x, rois, i64(b)}, 1, threads)[0];
}

Tensor random_map(DType dtype, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 2);
  Tensor t = Tensor::allocate(dtype, shape);
  for (size_t i = 0; i < t.numel(); ++i) {
    const double v = d(rng);
    if (dtype == DType::F64) t.data<double>()[i] = v;
    else if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(v);
    else t.data<uint16_t>()[i] = core::float_to_half(static_cast<float>(v));
  }
  return t;
}

Tensor rois_of(DType dtype, const std::vector<double>& v) {
  Tensor t = Tensor::allocate(dtype, {static_cast<int64_t>(v.size() / 4), 4});
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F64) t.data<double>()[i] = v[i];
    else if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(v[i]);
    else t.data<uint16_t>()[i] = core::float_to_half(static_cast<float>(v[i]));
  }
  return t;
}

TEST(CpuRoiAlign, ModesAndCoordinatesAgainstTheReference) {
  std::mt19937 rng(31);
  // Inside, reaching past every edge, smaller than a pixel, reversed, a
  // point, larger than the whole map.
  const std::vector<double> boxes = {1, 1, 6, 5,  -3, -2, 4, 3,   5, 4, 12, 11, 2.2, 3.1, 2.6, 3.3,
                                     6, 5, 2, 1,  3, 3, 3, 3,     -20, -15, 30, 25};
  const std::vector<int64_t> batch = {0, 1, 1, 0, 1, 0, 1};
  for (DType dtype : {DType::F32, DType::F64, DType::F16})
    for (const char* mode : {"avg", "max"})
      for (const char* ctm : {"half_pixel", "output_half_pixel"})
        for (int64_t ratio : {0, 2}) {
          Attrs a;
          a.mode = mode, a.ctm = ctm, a.sampling_ratio = ratio, a.scale = 0.75f;
          SCOPED_TRACE(std::string(core::dtype_name(dtype)) + " " + mode + " " + ctm + " ratio " + std::to_string(ratio));
          const Tensor x = random_map(dtype, {2, 3, 8, 10}, rng);
          const Tensor rois = rois_of(dtype, boxes);
          const Tensor y = run_roi_align(a, 16, x, rois, batch, 2);
          ASSERT_EQ(y.shape(), (Shape{7, 3, 3, 4}));
          const double tol = dtype == DType::F16 ? 1e-2 : 1e-5;
          EXPECT_TRUE(near(y, reference(a, x, rois, batch), tol, tol));
        }
}

TEST(CpuRoiAlign, Opset10IsOutputHalfPixel) {
  std::mt19937 rng(32);
  const Tensor x = random_map(DType::F32, {1, 2, 6, 6}, rng);
  const Tensor rois = rois_of(DType::F32, {0.5, 0.5, 4.5, 3.5, 1, 2, 1.5, 2.2});
  Attrs a;
  a.ctm = "output_half_pixel", a.sampling_ratio = 0;
  EXPECT_TRUE(near(run_roi_align(a, 10, x, rois, {0, 0}), reference(a, x, rois, {0, 0}), 1e-5, 1e-5));
}

TEST(CpuRoiAlign, ARegionFarLargerThanTheMapCostsNoMoreThanTheMap) {
  // With sampling_ratio 0 this region has ~10^13 samples per output cell;
  // only those on the map are visited, so the run takes microseconds. In
  // avg mode the map's few samples are divided by that count.
  std::mt19937 rng(33);
  const Tensor x = random_map(DType::F32, {1, 1, 8, 8}, rng);
  for (const char* mode : {"avg", "max"}) {
    Attrs a;
    a.mode = mode, a.sampling_ratio = 0, a.out_h = 1, a.out_w = 1;
    const Tensor y = run_roi_align(a, 16, x, rois_of(DType::F32, {-3e6, -3e6, 3e6, 3e6}), {0});
    ASSERT_TRUE(std::isfinite(y.data<float>()[0]));
    if (std::string(mode) == "avg") EXPECT_NEAR(y.data<float>()[0], 0, 1e-9);
    else EXPECT_GE(y.data<float>()[0], 0);  // zeros off the map are among the values
  }
}

TEST(CpuRoiAlign, BadNodesAndInputsAreRefused) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[1, 1, 8, 8] x, float[2, 4] rois, int64[2] b) => (float[2, 1, 2, 2] y) {
  y = RoiAlign <mode = "median", output_height = 2, output_width = 2> (x, rois, b)
})",
                       HETERO_INVALID_MODEL, {"(RoiAlign)", "mode must be avg or max, got 'median'"});
  KernelNode ratio("RoiAlign", 16, 3);
  ratio.attr_int("sampling_ratio", 100000);
  expect_error([&] { ratio.build(); }, HETERO_INVALID_MODEL, {"node 'n' (RoiAlign)", "sampling_ratio must be in [0, 1024]"});
  KernelNode ctm("RoiAlign", 16, 3);
  ctm.attr_string("coordinate_transformation_mode", "align_corners");
  expect_error([&] { ctm.build(); }, HETERO_INVALID_MODEL, {"coordinate_transformation_mode"});
  KernelNode size("RoiAlign", 16, 3);
  size.attr_int("output_width", 0);
  expect_error([&] { size.build(); }, HETERO_INVALID_MODEL, {"output_height and output_width must be positive"});
  std::mt19937 rng(34);
  const Tensor x = random_map(DType::F32, {2, 1, 4, 4}, rng);
  KernelNode n("RoiAlign", 16, 3);
  expect_error([&] { n.run({x, rois_of(DType::F32, {0, 0, 2, 2}), i64({2})}); }, HETERO_INVALID_ARGUMENT,
               {"node 'n' (RoiAlign)", "batch index 2 of roi 0 is outside [0, 2)"});
  expect_error([&] { n.run({x, rois_of(DType::F32, {0, 0, std::numeric_limits<double>::infinity(), 2}), i64({0})}); },
               HETERO_INVALID_ARGUMENT, {"roi 0 has a coordinate that is not finite"});
  expect_error([&] { n.run({x, rois_of(DType::F32, {0, 0, 2, 2}), i64({0, 1})}); }, HETERO_INVALID_ARGUMENT,
               {"batch_indices"});
  expect_error([&] { n.run({x, f32({0, 0, 2}, {1, 3}), i64({0})}); }, HETERO_INVALID_ARGUMENT,
               {"rois must be [num_rois, 4]"});
}

}  // namespace
}  // namespace hetero::cpu::testing
