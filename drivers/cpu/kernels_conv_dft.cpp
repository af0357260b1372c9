// A Conv whose weights are a windowed DFT basis (conv_dft.h), run as FFTs:
// each frame the convolution's window would cover is multiplied by the
// basis' window a and transformed, sixteen frames at once (LaneRealFft,
// lane_fft.h); each output channel takes its bin's real part or minus its
// imaginary part. Frames that reach into the padding read zeros there, as
// the convolution does.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numbers>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_dft.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/isa_clones.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/lane_fft.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/window_primitive.h"

namespace hetero::cpu {

namespace {

// How far a weight may be from a[j] times its cosine or sine, relative to
// the largest weight. The float32 bases exporters write are within one
// rounding (openWakeWord's: 3.6e-8); an FFT then matches the convolution to
// float32 rounding. 1e-5 is loose against that and tight against any
// weights that are not a DFT basis.
constexpr double kBasisTolerance = 1e-5;
// How far two Convs' windows may be apart, relative to the largest tap, for
// one transform to serve both: float32 rounding of the same window.
constexpr float kSameWindow = 1e-6f;

// The row orders of dft_basis(): the bin and part of each of `rows` rows,
// or empty when `rows` does not fit the order for `bins` bins. A Conv of one
// part takes the part's sign into its window; one that holds both parts
// shares one window between them, so a negated part is an order of its own.
enum class RowOrder { Cosines, Sines, CosinesThenSines, CosinesThenNegatedSines };

std::vector<DftRow> rows_in(RowOrder order, size_t rows, size_t bins) {
  std::vector<DftRow> out;
  if (order == RowOrder::CosinesThenSines || order == RowOrder::CosinesThenNegatedSines) {
    if (rows % 2 != 0 || rows / 2 > bins) return out;
    const bool negated = order == RowOrder::CosinesThenNegatedSines;
    for (size_t r = 0; r < rows; ++r) {
      const bool sine = r >= rows / 2;
      out.push_back({static_cast<uint32_t>(r % (rows / 2)), sine, sine && negated});
    }
    return out;
  }
  if (rows > bins) return out;
  for (size_t r = 0; r < rows; ++r) out.push_back({static_cast<uint32_t>(r), order == RowOrder::Sines});
  return out;
}

// The window that best fits `w` (rows x n) as a[j] times the rows' cosines
// and sines (least squares per tap), when every weight is within tolerance
// of it.
std::optional<std::vector<float>> fit_window(const float* w, size_t n, const std::vector<DftRow>& rows) {
  // cos and sin of 2πm/n; the basis value of bin k at tap j is entry k*j mod n.
  std::vector<double> cos_table(n), sin_table(n);
  for (size_t m = 0; m < n; ++m) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
    cos_table[m] = std::cos(angle);
    sin_table[m] = std::sin(angle);
  }
  auto basis = [&](const DftRow& row, size_t j) {
    const size_t m = (size_t{row.bin} * j) % n;
    const double value = row.sine ? sin_table[m] : cos_table[m];
    return row.negated ? -value : value;
  };
  std::vector<double> dot(n, 0.0), norm(n, 0.0);
  double largest = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t j = 0; j < n; ++j) {
      const double b = basis(rows[r], j), v = w[r * n + j];
      dot[j] += v * b;
      norm[j] += b * b;
      largest = std::max(largest, std::abs(v));
    }
  if (largest == 0) return std::nullopt;
  // A tap where every basis value is 0 (j = 0 and n/2 of sines) reads
  // nothing: any window value serves.
  std::vector<float> window(n);
  for (size_t j = 0; j < n; ++j) window[j] = norm[j] > 1e-6 ? static_cast<float>(dot[j] / norm[j]) : 0.0f;
  const double bound = kBasisTolerance * largest;
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t j = 0; j < n; ++j)
      if (!(std::abs(w[r * n + j] - window[j] * basis(rows[r], j)) <= bound)) return std::nullopt;  // NaN too
  return window;
}

// Output rows from one transform: row r gets `count` lanes of its bin's
// real part, or minus its imaginary part (negated where the row says), plus
// its bias; row r starts at y + r * row_stride and its lanes are
// `lane_stride` apart.
HETERO_ISA_CLONES void store_rows(const float* re, const float* im, const DftRow* rows, int64_t row_count,
                                  const float* bias, int64_t count, float* y, int64_t row_stride, int64_t lane_stride) {
  for (int64_t r = 0; r < row_count; ++r) {
    const DftRow& part = rows[r];
    const float* bin = (part.sine ? im : re) + size_t{part.bin} * LaneRealFft::kLanes;
    const float sign = part.sine != part.negated ? -1.0f : 1.0f, add = bias ? bias[r] : 0.0f;
    float* dst = y + r * row_stride;
    if (lane_stride == 1 && count == static_cast<int64_t>(LaneRealFft::kLanes)) {
      for (size_t l = 0; l < LaneRealFft::kLanes; ++l) dst[l] = sign * bin[l] + add;  // one vector
      continue;
    }
    for (int64_t l = 0; l < count; ++l) dst[l * lane_stride] = sign * bin[l] + add;
  }
}

// Transforms each frame once and writes every output's rows of it: one for a
// Conv, one per Conv for a DftConvs node.
class DftConvKernel final : public Kernel {
 public:
  // `outputs`: per output, the rows it takes of each transform.
  DftConvKernel(const KernelBuild& b, WindowAttrs attrs, bool channels_last, const core::Shape& w_shape,
                std::vector<float> window, std::vector<std::vector<DftRow>> outputs)
      : node_(b.node),
        attrs_(std::move(attrs)),
        channels_last_(channels_last),
        w_shape_(w_shape),
        window_(std::move(window)),
        outputs_(std::move(outputs)),
        fft_(window_.size()) {}
  void run(KernelRun& r) override;

 private:
  // Frames [first, first + count) of one batch item's signal into rows of
  // each output: ys[o] is output o's item.
  void transform_frames(const float* signal, int64_t length, const ConvGeometry& geo, int64_t first, int64_t count,
                        const float* bias, float* const* ys) const;

  const core::Node& node_;
  WindowAttrs attrs_;
  bool channels_last_;  // output (N, frames, rows); the input's one channel is the same either way
  core::Shape w_shape_;  // the first output's weights
  std::vector<float> window_;
  std::vector<std::vector<DftRow>> outputs_;
  LaneRealFft fft_;
  ShapeCache<ConvGeometry> geometry_;
};

void DftConvKernel::run(KernelRun& r) {
  const WindowOperands in = window_operands(node_, r, channels_last_);
  if (in.src_dims.size() != 3 || in.src_dims[1] != 1)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input " + core::shape_to_string(in.x.shape()) +
                                      " does not match weights " + core::shape_to_string(w_shape_) + " with group 1");
  // Only a Conv's third input is a bias (share_dft() merges Convs without).
  const core::Tensor* bias = outputs_.size() == 1 ? r.input(2) : nullptr;
  if (bias && (bias->dtype() != core::DType::F32 || bias->numel() != outputs_[0].size()))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": bias must be float32 with one value per output channel");
  // Frames depend on the signal, the taps and the attributes, not on rows.
  const auto geo = geometry_.get(in.x.shape(), [&] { return conv_geometry(node_, attrs_, in.src_dims, w_shape_); });
  const int64_t batch = in.src_dims[0], length = in.src_dims[2], frames = geo->dst_dims[2];
  std::array<float*, kMaxDftOutputs> ys{};
  for (size_t o = 0; o < outputs_.size(); ++o) {
    DnnlDims dims = geo->dst_dims;
    dims[1] = static_cast<int64_t>(outputs_[o].size());
    ys[o] = r.output(o, core::DType::F32, memory_shape(dims, channels_last_)).data<float>();
  }
  if (batch * frames == 0) return;

  constexpr auto kLanes = static_cast<int64_t>(LaneRealFft::kLanes);
  const int64_t groups = (frames + kLanes - 1) / kLanes;
  const double n = static_cast<double>(fft_.size());
  size_t rows = 0;
  for (const auto& o : outputs_) rows += o.size();
  const double work_per_group = double(kLanes) * n * std::log2(n) + double(kLanes) * double(rows);
  const float* x = in.x.data<float>();
  const float* b = bias ? bias->data<float>() : nullptr;
  parallel_blocks(r, batch * groups, work_per_group, batch * groups > 1, [&](int64_t unit) {
    const int64_t item = unit / groups, first = unit % groups * kLanes;
    std::array<float*, kMaxDftOutputs> item_ys{};
    for (size_t o = 0; o < outputs_.size(); ++o)
      item_ys[o] = ys[o] + item * static_cast<int64_t>(outputs_[o].size()) * frames;
    transform_frames(x + item * length, length, *geo, first, std::min(kLanes, frames - first), b, item_ys.data());
  });
}

void DftConvKernel::transform_frames(const float* signal, int64_t length, const ConvGeometry& geo, int64_t first,
                                     int64_t count, const float* bias, float* const* ys) const {
  const size_t n = fft_.size(), array = fft_.array_floats();
  // This thread's transform rows, and a frame with its padding filled in.
  auto* re = static_cast<float*>(scratch_buffer(Scratch::Extra, (2 * array + n) * sizeof(float)));
  float* im = re + array;
  float* padded = im + array;
  const float* window = window_.data();
  const int64_t taps = static_cast<int64_t>(n), frames = geo.dst_dims[2];
  const int64_t stride = geo.strides[0], start = first * stride - geo.pad_l[0];
  if (count == static_cast<int64_t>(LaneRealFft::kLanes) && start >= 0 &&
      start + (count - 1) * stride + taps <= length) {
    fft_.load_frames(re, im, signal + start, stride, window);
  } else {
    // At the edges: frame by frame, with padding read as zeros, and lanes
    // past the last frame zeros too.
    if (count < static_cast<int64_t>(LaneRealFft::kLanes)) {
      std::memset(re, 0, array * sizeof(float));
      std::memset(im, 0, array * sizeof(float));
    }
    for (size_t lane = 0; lane < static_cast<size_t>(count); ++lane) {
      const int64_t at = start + static_cast<int64_t>(lane) * stride;
      if (at >= 0 && at + taps <= length) {
        fft_.load_lane(re, im, lane, signal + at, window);
      } else {
        for (int64_t j = 0; j < taps; ++j) padded[j] = at + j >= 0 && at + j < length ? signal[at + j] : 0.0f;
        fft_.load_lane(re, im, lane, padded, window);
      }
    }
  }
  fft_.transform(re, im);
  // Channels-first, each row's frames are contiguous; channels-last, each frame's rows.
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const auto rows = static_cast<int64_t>(outputs_[o].size());
    if (channels_last_)
      store_rows(re, im, outputs_[o].data(), rows, bias, count, ys[o] + first * rows, 1, rows);
    else
      store_rows(re, im, outputs_[o].data(), rows, bias, count, ys[o] + first, frames, 1);
  }
}

}  // namespace

std::optional<DftBasis> dft_basis(const core::Tensor& weights) {
  if (weights.dtype() != core::DType::F32 || weights.rank() != 3 || weights.dim(1) != 1) return std::nullopt;
  const auto rows = static_cast<size_t>(weights.dim(0)), n = static_cast<size_t>(weights.dim(2));
  if (n < 4 || (n & (n - 1)) != 0 || n > (size_t{1} << 24)) return std::nullopt;
  if (static_cast<double>(rows) < 4 * std::log2(static_cast<double>(n))) return std::nullopt;
  for (RowOrder order :
       {RowOrder::Cosines, RowOrder::Sines, RowOrder::CosinesThenSines, RowOrder::CosinesThenNegatedSines}) {
    std::vector<DftRow> layout = rows_in(order, rows, n / 2 + 1);
    if (layout.empty()) continue;
    if (std::optional<std::vector<float>> window = fit_window(weights.data<float>(), n, layout)) {
      // Sines alone read nothing at taps 0 and n/2 (sin 0 = sin πk = 0).
      const bool sines_only = std::none_of(layout.begin(), layout.end(), [](const DftRow& r) { return !r.sine; });
      std::vector<uint32_t> unread;
      if (sines_only) unread = {0, static_cast<uint32_t>(n / 2)};
      return DftBasis{std::move(*window), std::move(layout), std::move(unread)};
    }
  }
  return std::nullopt;
}

std::unique_ptr<Kernel> make_conv_as_dft(const KernelBuild& b) {
  const core::Node& node = b.node;
  // A FusedConv qualifies when it has no post-ops. The layout pass leaves
  // DFT Convs channels-first now (graph_layout.cpp), but a blob compiled
  // before that holds them as channels-last FusedConvs.
  const bool plain = node.op_type == "Conv" && node.domain.empty();
  const bool fused = node.op_type == "FusedConv" && node.domain == kCpuDomain && !node.has_attr(kPostOpsAttr);
  if (!(plain || fused) || node.inputs.size() < 2 || node.inputs.size() > 3) return nullptr;
  const core::Tensor* w = b.constant_input(1);
  if (!w) return nullptr;
  WindowAttrs attrs = WindowAttrs::parse(node);
  if (attrs.group != 1 || w->rank() != 3) return nullptr;
  attrs.resolve(node, 1);
  if (attrs.dilations[0] != 1) return nullptr;
  std::optional<DftBasis> basis = dft_basis(*w);
  if (!basis) return nullptr;
  const bool channels_last = node.attr_int(kChannelsLastAttr, 0) != 0;
  std::vector<std::vector<DftRow>> rows;
  rows.push_back(std::move(basis->rows));
  return std::make_unique<DftConvKernel>(b, std::move(attrs), channels_last, w->shape(), std::move(basis->window),
                                         std::move(rows));
}

std::optional<CommonWindow> common_window(const std::vector<const DftBasis*>& bases) {
  if (bases.empty()) return std::nullopt;
  const size_t n = bases[0]->window.size();
  float largest = 0;
  for (const DftBasis* b : bases) {
    if (b->window.size() != n) return std::nullopt;
    for (float v : b->window) largest = std::max(largest, std::abs(v));
  }
  CommonWindow common{std::vector<float>(n, 0.0f), {}};
  std::vector<bool> known(n, false), reads(n);
  for (const DftBasis* b : bases) {
    reads.assign(n, true);
    for (uint32_t j : b->unread_taps) reads[j] = false;
    // The sign that best matches the taps known so far (none: as it is).
    double dot = 0;
    for (size_t j = 0; j < n; ++j)
      if (reads[j] && known[j]) dot += double(common.window[j]) * double(b->window[j]);
    const float sign = dot < 0 ? -1.0f : 1.0f;
    common.flipped.push_back(sign < 0);
    for (size_t j = 0; j < n; ++j) {
      if (!reads[j]) continue;
      const float tap = sign * b->window[j];
      if (!known[j]) {
        common.window[j] = tap;
        known[j] = true;
      } else if (!(std::abs(common.window[j] - tap) <= kSameWindow * largest)) {  // NaN too
        return std::nullopt;
      }
    }
  }
  return common;
}

std::unique_ptr<Kernel> make_dft_convs(const KernelBuild& b) {
  const core::Node& node = b.node;
  const size_t count = node.outputs.size();
  if (count == 0 || count > kMaxDftOutputs || node.inputs.size() != count + 1)
    fail(HETERO_INVALID_MODEL, node.describe() + ": needs one signal and one weight per output, at most " +
                                   std::to_string(kMaxDftOutputs) + " outputs");
  WindowAttrs attrs = WindowAttrs::parse(node);
  attrs.resolve(node, 1);
  std::vector<DftBasis> bases;
  for (size_t o = 0; o < count; ++o) {
    const core::Tensor* w = b.constant_input(o + 1);
    std::optional<DftBasis> basis = w ? dft_basis(*w) : std::nullopt;
    if (!basis)
      fail(HETERO_INVALID_MODEL, node.describe() + ": weight " + std::to_string(o + 1) + " is not a DFT basis");
    bases.push_back(std::move(*basis));
  }
  std::vector<const DftBasis*> all;
  for (const DftBasis& basis : bases) all.push_back(&basis);
  std::optional<CommonWindow> common = common_window(all);
  if (!common) fail(HETERO_INVALID_MODEL, node.describe() + ": its weights' windows differ");
  std::vector<std::vector<DftRow>> rows;
  for (size_t o = 0; o < count; ++o) {
    // A basis over minus the window: its rows are minus the transform's.
    if (common->flipped[o])
      for (DftRow& row : bases[o].rows) row.negated = !row.negated;
    rows.push_back(std::move(bases[o].rows));
  }
  if (attrs.group != 1 || attrs.dilations[0] != 1)
    fail(HETERO_INVALID_MODEL, node.describe() + ": a group of one and no dilation only");
  return std::make_unique<DftConvKernel>(b, std::move(attrs), /*channels_last=*/false, b.constant_input(1)->shape(),
                                         std::move(common->window), std::move(rows));
}

}  // namespace hetero::cpu
