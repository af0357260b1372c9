// Conv (and hetero.cpu FusedConv, a Conv with post-ops and possibly
// channels-last activations) on oneDNN's convolution primitive.
//
// Constant weights are reordered once into the layout the primitive prefers;
// a primitive is made per input shape and cached. Activations stay in the
// layout the graph gave them (plain NCHW, or channels-last after the layout
// pass): reordering them around every convolution costs more than the
// convolution itself for the depthwise and 1x1 convolutions mobile networks
// are made of.
#include <algorithm>

#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/window_primitive.h"

namespace hetero::cpu {

namespace {

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelBuild& b);
  void run(KernelRun& r) override;

 private:
  using Entry = WindowPrimitive;
  Entry make_entry(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape) const;

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

ConvKernel::Entry ConvKernel::make_entry(KernelRun& r, const DnnlDims& src_dims,
                                         const core::Shape& w_shape) const {
  const dnnl::engine engine = r.stream().get_engine();
  const ConvGeometry geo = conv_geometry(node_, attrs_, src_dims, w_shape);
  const DnnlDims& dst_dims = geo.dst_dims;
  const size_t spatial = src_dims.size() - 2;

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
  Entry e;
  e.set<dnnl::convolution_forward>(pd, src_dims, dst_dims, channels_last_, user_w, !weights_.empty(), md.bias,
                                   manual_post_ops);
  return e;
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

  core::Tensor& y = r.output(0, core::DType::F32, e->out_shape);
  if (y.numel() == 0) return;
  run_window_primitive(r, node_, *e,
                       {*x, *w, bias, src_dims, channels_last_, onnx_weights_desc(w->shape(), attrs_.group, false),
                        weights_},
                       post_, y);
}

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelBuild& b) { return std::make_unique<ConvKernel>(b); }

}  // namespace hetero::cpu
