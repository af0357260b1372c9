// Conv (and hetero.cpu FusedConv, a Conv with post-ops and possibly
// channels-last activations) on oneDNN's convolution primitive.
//
// Constant weights are reordered once into the layout the primitive prefers;
// a primitive is made per input shape and cached. Activations stay in the
// layout the graph gave them (plain NCHW, or channels-last after the layout
// pass): reordering them around every convolution costs more than the
// convolution itself for the depthwise and 1x1 convolutions mobile networks
// are made of. A Conv whose weights are a windowed DFT basis (a short-time
// Fourier transform as exporters write it) runs as FFTs instead (conv_dft.h).
//
// A long convolution runs in blocks of output rows (RowBlocks,
// drivers/cpu/window_primitive.h). Only where no post-op reads another
// tensor, which would need cutting too.
#include <algorithm>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_dft.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/window_primitive.h"

namespace hetero::cpu {

namespace {

// The input rows one output row reads: the kernel's rows with their dilation.
int64_t kernel_extent(const ConvGeometry& geo, int64_t kernel_rows) {
  return (kernel_rows - 1) * (geo.dilates[0] + 1) + 1;
}

// The convolution that makes output rows [first, first + count): the input
// rows they read, and the padding that falls inside them.
RowBlock row_block(const ConvGeometry& whole, const DnnlDims& src_dims, int64_t kernel_rows, int64_t first,
                   int64_t count) {
  const int64_t extent = kernel_extent(whole, kernel_rows);
  const int64_t begin = first * whole.strides[0] - whole.pad_l[0];
  const int64_t end = (first + count - 1) * whole.strides[0] - whole.pad_l[0] + extent;
  RowBlock b{first, count, std::max<int64_t>(begin, 0), src_dims, whole};
  b.src_dims[2] = std::min(end, src_dims[2]) - b.src_first;
  b.geo.dst_dims[2] = count;
  b.geo.pad_l[0] = b.src_first - begin;
  b.geo.pad_r[0] = end - (b.src_first + b.src_dims[2]);
  return b;
}

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelBuild& b);
  void run(KernelRun& r) override;

 private:
  // Per input shape: the whole convolution's primitive, or its blocks.
  struct Entry {
    WindowPrimitive whole;  // its prim is empty when the convolution runs in blocks
    RowBlocks blocks;
  };
  Entry make_entry(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape) const;
  // The output rows per block; 0 when the convolution runs whole.
  int64_t block_rows(const ConvGeometry& geo, const core::Shape& w_shape) const;
  // The primitive for the whole convolution of `geo`, or for `block`'s rows of it.
  WindowPrimitive make_primitive(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape,
                                 const ConvGeometry& geo, const RowBlock* block) const;

  const core::Node& node_;
  WindowAttrs attrs_;
  bool channels_last_;
  PostOpChain post_;
  ReorderedConstant weights_;
  ShapeCache<Entry> cache_;
};

ConvKernel::ConvKernel(const KernelBuild& b)
    : node_(b.node), attrs_(WindowAttrs::parse(b.node)), channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {
  build_window_kernel(b, "output channels", attrs_, post_, weights_);
}

ConvKernel::Entry ConvKernel::make_entry(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape) const {
  Entry e;
  const ConvGeometry geo = conv_geometry(node_, attrs_, src_dims, w_shape);
  if (const int64_t rows = block_rows(geo, w_shape)) {
    const bool cut = e.blocks.make(
        geo.dst_dims[2], rows,
        [&](int64_t first, int64_t count) { return row_block(geo, src_dims, w_shape[2], first, count); },
        [&](const RowBlock& block) { return make_primitive(r, src_dims, w_shape, geo, &block); });
    if (cut) {
      e.whole.dst_dims = geo.dst_dims;
      e.whole.out_shape = memory_shape(geo.dst_dims, channels_last_);
      return e;
    }
  }
  e.whole = make_primitive(r, src_dims, w_shape, geo, nullptr);
  return e;
}

int64_t ConvKernel::block_rows(const ConvGeometry& geo, const core::Shape& w_shape) const {
  if (post_.reads_operands()) return 0;  // an operand would need cutting too
  // A first or last row that would read padding only has no block of its own.
  const int64_t extent = kernel_extent(geo, w_shape[2]);
  if (geo.pad_l[0] >= extent || geo.pad_r[0] >= extent) return 0;
  // Multiply-adds per output row: each of its elements meets C / group
  // input channels over the kernel window.
  double macs_per_row = double(geo.dst_dims[0]) * double(geo.dst_dims[1]) * double(w_shape[1]);
  for (size_t i = 2; i < w_shape.size(); ++i) macs_per_row *= double(w_shape[i]);
  for (size_t i = 3; i < geo.dst_dims.size(); ++i) macs_per_row *= double(geo.dst_dims[i]);
  return checkpoint_block_units(geo.dst_dims[2], macs_per_row, kCheckpointMacs);
}

WindowPrimitive ConvKernel::make_primitive(KernelRun& r, const DnnlDims& whole_src_dims, const core::Shape& w_shape,
                                           const ConvGeometry& whole, const RowBlock* block) const {
  const dnnl::engine& engine = r.engine();
  const ConvGeometry& geo = block ? block->geo : whole;
  const DnnlDims& src_dims = block ? block->src_dims : whole_src_dims;
  const DnnlDims& dst_dims = geo.dst_dims;
  const size_t spatial = src_dims.size() - 2;
  const dnnl::memory::desc user_src = block_src_desc(whole_src_dims, block, channels_last_);
  const dnnl::memory::desc user_dst = block_dst_desc(whole.dst_dims, block, channels_last_);

  const dnnl::memory::desc user_w = onnx_weights_desc(w_shape, attrs_.group, false);
  // Plain NCHW: a 1x1 stride-1 convolution is a matrix product oneDNN runs
  // well on plain memory; anything else runs on the layout oneDNN picks.
  bool pointwise = attrs_.group == 1;
  for (size_t i = 0; i < spatial; ++i)
    pointwise = pointwise && w_shape[2 + i] == 1 && geo.strides[i] == 1 && geo.pad_l[i] == 0 && geo.pad_r[i] == 0;
  const WindowDescs md =
      window_descs(src_dims, dst_dims, user_w, channels_last_, !channels_last_ && !pointwise, r.input(2) ? w_shape[0] : 0);

  auto make_pd = [&](const dnnl::post_ops* po) {
    const dnnl::primitive_attr attr = scratchpad_attr(po);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      md.src, md.weights, md.bias, md.dst, geo.strides, geo.dilates, geo.pad_l,
                                      geo.pad_r);
    return dnnl::convolution_forward::primitive_desc(d, attr, engine);
  };
  const auto [pd, manual_post_ops] = make_with_post_ops(post_, dst_dims, channels_last_, r, make_pd);
  WindowPrimitive p;
  p.set<dnnl::convolution_forward>(pd, user_src, user_dst, dst_dims, channels_last_, user_w, !weights_.empty(),
                                   md.bias, manual_post_ops);
  return p;
}

void ConvKernel::run(KernelRun& r) {
  use_threads(r.threads());
  const WindowOperands in = window_operands(node_, r, channels_last_);
  const core::Tensor* x = &in.x;
  const core::Tensor* w = &in.w;
  const DnnlDims& src_dims = in.src_dims;
  if (w->dim(0) % attrs_.group != 0 || src_dims[1] != w->dim(1) * attrs_.group)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input channels " + std::to_string(src_dims[1]) +
                                      " do not match weights " + core::shape_to_string(w->shape()) +
                                      " with group " + std::to_string(attrs_.group));
  const core::Tensor* bias = r.input(2);
  if (bias && (bias->dtype() != core::DType::F32 || bias->numel() != static_cast<size_t>(w->dim(0))))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": bias must be float32 with one value per output channel");

  const std::vector<int64_t> key = window_primitive_key(*x, *w, !weights_.empty(), bias, post_, r);
  auto e = with_dnnl_errors(node_, [&] { return cache_.get(key, [&] { return make_entry(r, src_dims, w->shape()); }); });

  core::Tensor& y = r.output(0, core::DType::F32, e->whole.out_shape);
  if (y.numel() == 0) return;
  const WindowInputs inputs{*x, *w, bias, src_dims, channels_last_, weights_};
  if (!e->blocks.empty()) return e->blocks.run(r, node_, inputs, post_, y);
  run_window_primitive(r, node_, e->whole, inputs, post_, y);
}

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelBuild& b) {
  if (std::unique_ptr<Kernel> fft = make_conv_as_dft(b)) return fft;
  return std::make_unique<ConvKernel>(b);
}

}  // namespace hetero::cpu
