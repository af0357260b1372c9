// ConvTranspose (and hetero.cpu FusedConvTranspose with post-ops and
// channels-last activations) on oneDNN's deconvolution primitive.
//
// ONNX's output_padding and output_shape both become end padding: oneDNN
// takes the end padding that yields the output size exactly, negative where
// the output grows past the last input tap (those positions get the bias).
#include <algorithm>

#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu {

namespace {

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelBuild& b);
  void run(KernelRun& r) override;

 private:
  struct Entry {
    dnnl::deconvolution_forward prim;
    LayoutChange src_in, dst_out, weights_in;
    dnnl::memory::desc weights_desc, bias_desc, dst_desc;
    DnnlDims dst_dims;
    core::Shape out_shape;
    bool manual_post_ops = false;
    size_t scratchpad = 0;
  };
  Entry make_entry(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape) const;

  const core::Node& node_;
  WindowAttrs attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
  bool channels_last_;
  PostOpChain post_;
  ReorderedConstant weights_;
  ShapeCache<Entry> cache_;
};

ConvTransposeKernel::ConvTransposeKernel(const KernelBuild& b)
    : node_(b.node), attrs_(WindowAttrs::parse(b.node)), output_padding_(b.node.attr_ints("output_padding")),
      output_shape_(b.node.attr_ints("output_shape")), channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {
  require_float_inputs(b, {0, 1, 2});
  post_ = PostOpChain::parse(b, 3);
  if (const core::Tensor* w = b.constant_input(1)) {
    if (w->rank() < 3) b.unsupported("weights must have rank 3 or more, got " + core::shape_to_string(w->shape()));
    if (w->dim(0) % attrs_.group != 0) b.unsupported("input channels are not a multiple of group");
    attrs_.resolve(b.node, w->rank() - 2);
    weights_.set(*w);
  }
}

ConvTransposeKernel::Entry ConvTransposeKernel::make_entry(KernelRun& r, const DnnlDims& src_dims,
                                                           const core::Shape& w_shape) const {
  const dnnl::engine engine = r.stream().get_engine();
  WindowAttrs a = attrs_;
  const size_t spatial = src_dims.size() - 2;
  a.resolve(node_, spatial);
  std::vector<int64_t> out_pad = output_padding_, out_shape = output_shape_;
  if (out_pad.empty()) out_pad.assign(spatial, 0);
  if (out_shape.size() == spatial + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (out_pad.size() != spatial || (!out_shape.empty() && out_shape.size() != spatial))
    fail(HETERO_INVALID_MODEL, node_.describe() + ": output_padding or output_shape has the wrong length");

  DnnlDims strides, dilates, pad_l, pad_r;
  DnnlDims dst_dims{src_dims[0], w_shape[1] * a.group};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = src_dims[2 + i], k = w_shape[2 + i], s = a.strides[i], d = a.dilations[i];
    if (!a.kernel_shape.empty() && a.kernel_shape[i] != k)
      fail(HETERO_INVALID_MODEL, node_.describe() + ": kernel_shape disagrees with the weights");
    const int64_t ek = (k - 1) * d + 1;
    const int64_t natural = s * (in - 1) + out_pad[i] + ek;  // output size with no padding
    int64_t begin = 0, end = 0, out = 0;
    const bool same = a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower;
    if (!out_shape.empty() || same) {
      out = !out_shape.empty() ? out_shape[i] : in * s;
      const int64_t total = natural - out;
      // ONNX: SAME_UPPER puts the odd pad at the end, everything else at the
      // beginning; halves round down (as in ONNX's reference) when the
      // requested output is larger than the natural one and total < 0.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin = a.auto_pad == AutoPad::SameUpper ? half : total - half;
      end = total - begin;
      if (begin < 0)
        fail(HETERO_NOT_SUPPORTED, node_.describe() + ": an output_shape that needs negative begin padding is not supported");
    } else {
      if (a.auto_pad == AutoPad::NotSet) {
        begin = a.pads[i];
        end = a.pads[spatial + i];
      }
      out = natural - begin - end;
    }
    if (out <= 0) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": the output would be empty");
    dst_dims.push_back(out);
    strides.push_back(s);
    dilates.push_back(d - 1);
    pad_l.push_back(begin);
    pad_r.push_back(end - out_pad[i]);  // output_padding extends the end
  }

  Entry e;
  e.dst_dims = dst_dims;
  e.out_shape = memory_shape(dst_dims, channels_last_);
  const dnnl::memory::desc user_src = activation_desc(src_dims, channels_last_);
  const dnnl::memory::desc user_dst = activation_desc(dst_dims, channels_last_);
  const dnnl::memory::desc user_w = onnx_weights_desc(w_shape, a.group, true);
  dnnl::memory::desc src_md = user_src, dst_md = user_dst;
  if (!channels_last_) {
    src_md = dnnl::memory::desc(src_dims, dnnl_dt::f32, dnnl_tag::any);
    dst_md = dnnl::memory::desc(dst_dims, dnnl_dt::f32, dnnl_tag::any);
  }
  const dnnl::memory::desc w_any(user_w.dims(), dnnl_dt::f32, dnnl_tag::any);
  const dnnl::memory::desc bias_md = r.input(2) ? plain_desc(DnnlDims{dst_dims[1]}) : dnnl::memory::desc();
  auto make_pd = [&](const dnnl::post_ops* po) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (po) attr.set_post_ops(*po);
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        src_md, w_any, bias_md, dst_md, strides, dilates, pad_l, pad_r);
    return dnnl::deconvolution_forward::primitive_desc(d, attr, engine);
  };
  dnnl::deconvolution_forward::primitive_desc pd;
  bool fused = false;
  if (!post_.empty()) {
    if (const auto po = post_.to_dnnl(dst_dims, channels_last_, r)) {
      try {
        pd = make_pd(&*po);
        fused = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
      } catch (const dnnl::error&) {
        fused = false;
      }
    }
  }
  if (!fused) pd = make_pd(nullptr);
  e.manual_post_ops = !post_.empty() && !fused;
  e.prim = dnnl::deconvolution_forward(pd);
  e.src_in = LayoutChange(user_src, pd.src_desc(), engine);
  e.dst_desc = pd.dst_desc();
  e.dst_out = LayoutChange(pd.dst_desc(), user_dst, engine);
  e.weights_desc = pd.weights_desc();
  if (weights_.empty()) e.weights_in = LayoutChange(user_w, pd.weights_desc(), engine);
  e.bias_desc = bias_md;
  e.scratchpad = pd.scratchpad_desc().get_size();
  return e;
}

void ConvTransposeKernel::run(KernelRun& r) {
  use_threads(r.threads());
  const core::Tensor* x = r.input(0);
  const core::Tensor* w = r.input(1);
  if (!x || !w) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input X or W is missing");
  if (x->dtype() != core::DType::F32 || w->dtype() != core::DType::F32)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": X and W must be float32");
  if (x->rank() < 3 || x->rank() != w->rank())
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input rank " + std::to_string(x->rank()) +
                                      " does not match weights " + core::shape_to_string(w->shape()));
  const DnnlDims src_dims = logical_dims(x->shape(), channels_last_);
  if (src_dims[1] != w->dim(0) || w->dim(0) % attrs_.group != 0)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input channels " + std::to_string(src_dims[1]) +
                                      " do not match weights " + core::shape_to_string(w->shape()));
  const core::Tensor* bias = r.input(2);
  if (bias && (bias->dtype() != core::DType::F32 || bias->numel() != static_cast<size_t>(w->dim(1) * attrs_.group)))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": bias must be float32 with one value per output channel");

  std::vector<int64_t> key;
  key.reserve(16);
  append_key(key, x->shape());
  if (weights_.empty()) append_key(key, w->shape());
  key.push_back(bias != nullptr);
  post_.append_key(key, r);
  key.push_back(r.threads());
  auto e = with_dnnl_errors(node_, [&] { return cache_.get(key, [&] { return make_entry(r, src_dims, w->shape()); }); });

  core::Tensor& y = r.output(0, core::DType::F32, e->out_shape);
  if (y.numel() == 0) return;
  with_dnnl_errors(node_, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine engine = s.get_engine();
    std::unordered_map<int, dnnl::memory> args;
    args[DNNL_ARG_SRC] =
        e->src_in.apply(view_memory(activation_desc(src_dims, channels_last_), engine, x->raw()), Scratch::Src, s);
    const dnnl::memory::desc user_w = onnx_weights_desc(w->shape(), attrs_.group, true);
    args[DNNL_ARG_WEIGHTS] = !weights_.empty() ? weights_.get(e->weights_desc, user_w, engine, s)
                                               : e->weights_in.apply(view_memory(user_w, engine, w->raw()),
                                                                     Scratch::Weights, s);
    if (bias) args[DNNL_ARG_BIAS] = view_memory(e->bias_desc, engine, bias->raw());
    const dnnl::memory user_y = view_memory(activation_desc(e->dst_dims, channels_last_), engine, y.raw());
    const dnnl::memory dst =
        e->dst_out.needed() ? view_memory(e->dst_desc, engine, scratch_buffer(Scratch::Dst, e->dst_desc.get_size()))
                            : user_y;
    args[DNNL_ARG_DST] = dst;
    if (e->scratchpad)
      args[DNNL_ARG_SCRATCHPAD] = view_memory(dnnl::memory::desc({static_cast<int64_t>(e->scratchpad)}, dnnl_dt::u8,
                                                                 dnnl_tag::a),
                                              engine, scratch_buffer(Scratch::Pad, e->scratchpad));
    if (!e->manual_post_ops) post_.add_args(args, e->dst_dims, channels_last_, r, engine);
    e->prim.execute(s, args);
    if (e->dst_out.needed()) e->dst_out.apply(dst, user_y, s);
    s.wait();
  });
  if (e->manual_post_ops) post_.apply(y.data<float>(), y.shape(), r);
}

std::unique_ptr<Kernel> make_conv_transpose(const KernelBuild& b) { return std::make_unique<ConvTransposeKernel>(b); }

}  // namespace

void register_conv_transpose_kernels(KernelRegistry& r) {
  r.add("ConvTranspose", make_conv_transpose);
  r.add("FusedConvTranspose", make_conv_transpose, kCpuDomain, 1, 1);
}

}  // namespace hetero::cpu
