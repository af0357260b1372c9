// Quantised convolutions: QLinearConv (ai.onnx, and com.microsoft's
// channels-last twin), ConvInteger, and hetero.cpu QLinearConv, the node the
// int8 pass makes of DQ -> Conv [-> Relu/Clip] [-> Q] with its quantisation
// in attributes and a float bias in accumulator units.
//
// With constant weights and parameters the convolution is one oneDNN int8
// primitive: u8/s8 activations with their zero point, s8 weights less
// theirs, per-output-channel scales, the bias, the fused clamp and the
// output's zero point all applied in one pass, activations channels-last
// when the layout pass made them so. Everything else (run-time parameters,
// weights that do not fit s8 once their zero point is taken off, a
// processor whose int8 arithmetic would saturate) runs the reference loops:
// exact int32 accumulation, then the same last step (qlinear_product.h).
#include <omp.h>

#include <algorithm>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/qlinear_product.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

enum class Form { QLinear, Integer, Fused };

constexpr size_t kNone = QuantInputs::kNone;

// The reference: exact integer sums over NC+spatial or channels-last
// activations (spatial dims padded to three).
void reference_conv(KernelRun& r, const QProduct& q, int64_t group, bool channels_last, const DnnlDims& src_dims,
                    const ConvGeometry& geo, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const size_t spatial = src_dims.size() - 2;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pl[3] = {0, 0, 0};
  for (size_t i = 0; i < spatial; ++i) {
    in[3 - spatial + i] = src_dims[2 + i];
    out[3 - spatial + i] = geo.dst_dims[2 + i];
    k[3 - spatial + i] = w.dim(2 + i);
    st[3 - spatial + i] = geo.strides[i];
    dl[3 - spatial + i] = geo.dilates[i] + 1;
    pl[3 - spatial + i] = geo.pad_l[i];
  }
  const int64_t N = src_dims[0], C = src_dims[1], M = w.dim(0), Cg = w.dim(1), Mg = M / group;
  const int64_t in_plane = in[0] * in[1] * in[2], out_plane = out[0] * out[1] * out[2], taps = k[0] * k[1] * k[2];
  auto x_at = [&](int64_t n, int64_t c, int64_t p) -> int32_t {
    const size_t i = static_cast<size_t>(channels_last ? (n * in_plane + p) * C + c : (n * C + c) * in_plane + p);
    return x.dtype() == DType::U8 ? x.data<uint8_t>()[i] : x.data<int8_t>()[i];
  };
  auto w_at = [&](size_t i) -> int32_t { return w.dtype() == DType::U8 ? w.data<uint8_t>()[i] : w.data<int8_t>()[i]; };
  const int32_t zx = q.a.zero_point[0];
  const int64_t work = N * M * out_plane;
  // A scalar product term costs about what 8 bytes moved do.
  parallel_blocks(r, work, 8.0 * double(Cg * taps), work * Cg * taps > 65536, [&](int64_t job) {
    const int64_t n = job / (M * out_plane), m = job / out_plane % M, p = job % out_plane;
    const int64_t o[3] = {p / (out[1] * out[2]), p / out[2] % out[1], p % out[2]};
    const int32_t zw = q.w.zero_point_at(static_cast<size_t>(m));
    const int64_t c0 = m / Mg * Cg;
    int64_t acc = 0;
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t kk[3] = {t / (k[1] * k[2]), t / k[2] % k[1], t % k[2]};
        int64_t pos = 0;
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          const int64_t at = o[d] * st[d] - pl[d] + kk[d] * dl[d];
          inside = inside && at >= 0 && at < in[d];
          pos = pos * in[d] + at;
        }
        // Padding holds the zero point: it adds nothing.
        if (!inside) continue;
        acc += static_cast<int64_t>(x_at(n, c0 + c, pos) - zx) * (w_at(static_cast<size_t>((m * Cg + c) * taps + t)) - zw);
      }
    }
    double sum = static_cast<double>(acc);
    if (bias) sum += bias->dtype() == DType::I32 ? bias->data<int32_t>()[m] : bias->data<float>()[m];
    const size_t out_index = static_cast<size_t>(channels_last ? (n * out_plane + p) * M + m : (n * M + m) * out_plane + p);
    q.store(sum, static_cast<size_t>(m), y.raw(), out_index);
  });
}

class QConvKernel final : public Kernel {
 public:
  QConvKernel(const KernelBuild& b, Form form);
  void run(KernelRun& r) override;

 private:
  struct Entry {
    dnnl::convolution_forward prim;
    LayoutChange src_in, dst_out;
    dnnl::memory::desc weights_desc, bias_desc, dst_desc;
    dnnl::memory::desc user_src, user_dst, user_w;  // how X, Y and the ONNX weights are read and written
    core::Shape out_shape;                          // Y's, in memory order
    size_t scratchpad = 0;
  };
  // Per input shape: the primitive and what running it needs (the weights
  // are constant on this path).
  Entry make_entry(KernelRun& r, const DnnlDims& src_dims) const;
  void run_dnnl(KernelRun& r, const Tensor& x, const Tensor* bias, const Entry& e, Tensor& y);
  QProduct params_at_run(const KernelRun& r, const Tensor& x, const Tensor& w) const;

  const core::Node& node_;
  Form form_;
  size_t x_in_ = 0, w_in_ = 1, bias_in_ = kNone;
  WindowAttrs attrs_;
  bool channels_last_ = false;
  QuantInputs a_src_, w_src_, y_src_;
  QuantSpec a_spec_, w_spec_, y_spec_;
  std::optional<QProduct> constant_;  // every parameter known when built
  bool use_dnnl_ = false;
  core::DType bias_type_ = DType::Undefined;
  ReorderedConstant weights_;  // s8, zero point taken off
  DnnlZeroPoint src_zp_, dst_zp_;
  ShapeCache<Entry> cache_;
};

QConvKernel::QConvKernel(const KernelBuild& b, Form form)
    : node_(b.node), form_(form), attrs_(WindowAttrs::parse(b.node)),
      channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {
  if (form == Form::QLinear) w_in_ = 3, bias_in_ = 8;
  if (form == Form::Fused) bias_in_ = 2;
  const size_t x_zp = 2, w_zp = form == Form::QLinear ? 5 : 3;
  auto type_of = [&](size_t data, size_t zp) {
    const DType t = b.input_dtype(data);
    return t != DType::Undefined || form == Form::Fused ? t : zero_point_type(b, zp);
  };
  a_spec_ = {"x", type_of(x_in_, x_zp)};
  w_spec_ = {"w", type_of(w_in_, w_zp), true, 0};
  const Tensor* w = b.constant_input(w_in_);
  if (w) {
    if (w->rank() < 3) b.unsupported("weights must have rank 3 or more, got " + core::shape_to_string(w->shape()));
    if (w->dim(0) % attrs_.group != 0) b.unsupported("output channels are not a multiple of group");
    w_spec_.rank = w->rank();
    w_spec_.axis_dim = w->dim(0);
  }
  if (const core::Value* bias = bias_in_ == kNone ? nullptr : b.node.input(bias_in_)) {
    bias_type_ = bias->dtype;
    const DType want = form == Form::Fused ? DType::F32 : DType::I32;
    if (bias_type_ != want && bias_type_ != DType::Undefined)
      b.unsupported(std::string("bias must be ") + core::dtype_name(want) + ", got " + core::dtype_name(bias_type_));
    bias_type_ = want;
  }

  QProduct q;
  if (form == Form::Fused) {
    q = QProduct::from_attrs(node_, "x", "w");
    a_spec_.dtype = q.a.dtype;
    w_spec_.dtype = q.w.dtype;
    constant_ = q;
  } else {
    if (form == Form::QLinear) {
      y_spec_ = {"y", output_zero_point_type(b, 7)};
      y_src_ = QuantInputs(b, 6, 7, y_spec_);
    }
    a_src_ = QuantInputs(b, form == Form::QLinear ? 1 : kNone, x_zp, a_spec_);
    w_src_ = QuantInputs(b, form == Form::QLinear ? 4 : kNone, w_zp, w_spec_);
    if (a_src_.constant() && w_src_.constant() && (form == Form::Integer || y_src_.constant())) {
      q.a = *a_src_.constant();
      q.w = *w_src_.constant();
      if (form == Form::Integer) q.output = QProduct::Output::Int32;
      else q.y = *y_src_.constant();
      constant_ = q;
    }
  }
  for (const QuantSpec* s : {&a_spec_, &w_spec_})
    if (s->dtype != DType::U8 && s->dtype != DType::I8 && s->dtype != DType::Undefined)
      b.unsupported(s->what + " must be uint8 or int8, got " + core::dtype_name(s->dtype));

  // oneDNN when everything it needs is known now and its arithmetic is exact.
  if (!constant_ || !w || w->dtype() != constant_->w.dtype) return;
  std::optional<Tensor> s8 = weights_as_s8(*w, constant_->w, 0);
  if (!s8 || !dnnl_int8_exact(*s8, constant_->a.dtype == DType::I8)) return;
  weights_.set(*s8);
  src_zp_.value = constant_->a.zero_point[0];
  if (constant_->output == QProduct::Output::Quantized) dst_zp_.value = constant_->y.zero_point[0];
  use_dnnl_ = true;
}

QProduct QConvKernel::params_at_run(const KernelRun& r, const Tensor& x, const Tensor& w) const {
  QuantSpec a_spec = a_spec_, w_spec = w_spec_;
  a_spec.dtype = x.dtype();
  w_spec.dtype = w.dtype();
  w_spec.rank = w.rank();
  w_spec.axis_dim = w.dim(0);
  QProduct q;
  QuantParams sa, sw, sy;
  q.a = a_src_.get(r, a_spec, sa);
  q.w = w_src_.get(r, w_spec, sw);
  if (form_ == Form::Integer) {
    q.output = QProduct::Output::Int32;
  } else {
    q.y = y_src_.get(r, y_spec_, sy);
  }
  return q;
}

QConvKernel::Entry QConvKernel::make_entry(KernelRun& r, const DnnlDims& src_dims) const {
  const dnnl::engine& engine = r.engine();
  const QProduct& q = *constant_;
  const core::Shape& w_shape = weights_.source().shape();
  const ConvGeometry geo = conv_geometry(node_, attrs_, src_dims, w_shape);
  const dnnl_dt src_dt = dnnl_type_of(q.a.dtype), dst_dt = q.dnnl_dst_type();
  const dnnl::memory::desc user_src = activation_desc(src_dims, channels_last_, src_dt);
  const dnnl::memory::desc user_dst = activation_desc(geo.dst_dims, channels_last_, dst_dt);
  // Plain NC+spatial activations are reordered to the layout oneDNN picks:
  // its int8 convolutions want channels-last.
  const dnnl::memory::desc src_md =
      channels_last_ ? user_src : dnnl::memory::desc(src_dims, src_dt, dnnl_tag::any);
  const dnnl::memory::desc dst_md =
      channels_last_ ? user_dst : dnnl::memory::desc(geo.dst_dims, dst_dt, dnnl_tag::any);
  const dnnl::memory::desc user_w = onnx_weights_desc(w_shape, attrs_.group, false, dnnl_dt::s8);
  const dnnl::memory::desc w_any(user_w.dims(), dnnl_dt::s8, dnnl_tag::any);
  Entry e;
  e.bias_desc = bias_type_ == DType::Undefined
                    ? dnnl::memory::desc()
                    : plain_desc(DnnlDims{w_shape[0]}, bias_type_ == DType::I32 ? dnnl_dt::s32 : dnnl_dt::f32);
  const dnnl::primitive_attr attr = q.dnnl_attr(static_cast<size_t>(w_shape[0]), 1 << 1);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                    w_any, e.bias_desc, dst_md, geo.strides, geo.dilates, geo.pad_l, geo.pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine);
  e.prim = dnnl::convolution_forward(pd);
  e.src_in = LayoutChange(user_src, pd.src_desc(), engine);
  e.dst_desc = pd.dst_desc();
  e.dst_out = LayoutChange(pd.dst_desc(), user_dst, engine);
  e.weights_desc = pd.weights_desc();
  e.scratchpad = pd.scratchpad_desc().get_size();
  e.user_src = user_src;
  e.user_dst = user_dst;
  e.user_w = user_w;
  e.out_shape = memory_shape(geo.dst_dims, channels_last_);
  return e;
}

void QConvKernel::run_dnnl(KernelRun& r, const Tensor& x, const Tensor* bias, const Entry& e, Tensor& y) {
  with_dnnl_errors(node_, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine& engine = r.engine();
    MemoryViews& views = r.views();
    PrimitiveArgs args;
    args[DNNL_ARG_SRC] = e.src_in.apply(views.bind(DNNL_ARG_SRC, e.user_src, engine, x.raw()), Scratch::Src, r);
    args[DNNL_ARG_WEIGHTS] = weights_.get(e.weights_desc, e.user_w, engine, s);
    if (bias) args[DNNL_ARG_BIAS] = views.bind(DNNL_ARG_BIAS, e.bias_desc, engine, bias->raw());
    const dnnl::memory user_y = views.bind(DNNL_ARG_DST, e.user_dst, engine, y.raw());
    const dnnl::memory dst = e.dst_out.needed() ? views.scratch(Scratch::Dst, e.dst_desc, engine) : user_y;
    args[DNNL_ARG_DST] = dst;
    if (src_zp_.value != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = src_zp_.memory(engine);
    if (dst_zp_.value != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = dst_zp_.memory(engine);
    if (e.scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e.scratchpad, engine);
    args.execute(e.prim, s);
    if (e.dst_out.needed()) e.dst_out.apply(dst, user_y, s);
    s.wait();
  });
}

void QConvKernel::run(KernelRun& r) {
  use_threads(r.threads());
  const Tensor* x = r.input(x_in_);
  const Tensor* w = r.input(w_in_);
  if (!x || !w) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input x or w is missing");
  for (const Tensor* t : {x, w})
    if (t->dtype() != DType::U8 && t->dtype() != DType::I8)
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": x and w must be uint8 or int8, got " +
                                        core::dtype_name(t->dtype()));
  if (x->rank() < 3 || x->rank() > 5 || x->rank() != w->rank())
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input rank " + std::to_string(x->rank()) +
                                      " does not match weights " + core::shape_to_string(w->shape()));
  const DnnlDims src_dims = logical_dims(x->shape(), channels_last_);
  if (w->dim(0) % attrs_.group != 0 || src_dims[1] != w->dim(1) * attrs_.group)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input channels " + std::to_string(src_dims[1]) +
                                      " do not match weights " + core::shape_to_string(w->shape()) + " with group " +
                                      std::to_string(attrs_.group));
  const Tensor* bias = bias_in_ == kNone ? nullptr : r.input(bias_in_);
  if (bias && (bias->dtype() != bias_type_ || bias->numel() != static_cast<size_t>(w->dim(0))))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": bias must be " + core::dtype_name(bias_type_) +
                                      " with one value per output channel");
  QProduct run_params;
  if (!constant_) run_params = params_at_run(r, *x, *w);
  const QProduct& q = constant_ ? *constant_ : run_params;
  if (x->dtype() != q.a.dtype || w->dtype() != q.w.dtype)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": x and w must have the types of their zero points");
  if (!q.w.per_tensor() && q.w.scale.size() != static_cast<size_t>(w->dim(0)))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": w has " + std::to_string(q.w.scale.size()) +
                                      " per-channel parameters but " + std::to_string(w->dim(0)) + " output channels");
  if (use_dnnl_) {
    std::vector<int64_t> key;
    append_key(key, x->shape());
    key.push_back(r.threads());
    auto e = with_dnnl_errors(node_, [&] { return cache_.get(key, [&] { return make_entry(r, src_dims); }); });
    Tensor& y = r.output(0, q.out_dtype(), e->out_shape);
    if (y.numel() != 0) run_dnnl(r, *x, bias, *e, y);
    return;
  }
  const ConvGeometry geo = conv_geometry(node_, attrs_, src_dims, w->shape());
  Tensor& y = r.output(0, q.out_dtype(), memory_shape(geo.dst_dims, channels_last_));
  if (y.numel() == 0) return;
  reference_conv(r, q, attrs_.group, channels_last_, src_dims, geo, *x, *w, bias, y);
}

}  // namespace

std::unique_ptr<Kernel> make_qlinear_conv(const KernelBuild& b) { return std::make_unique<QConvKernel>(b, Form::QLinear); }
std::unique_ptr<Kernel> make_conv_integer(const KernelBuild& b) { return std::make_unique<QConvKernel>(b, Form::Integer); }
std::unique_ptr<Kernel> make_int8_conv(const KernelBuild& b) { return std::make_unique<QConvKernel>(b, Form::Fused); }

}  // namespace hetero::cpu
