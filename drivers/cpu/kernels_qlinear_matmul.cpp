// Quantised matrix products: QLinearMatMul, MatMulInteger, com.microsoft
// QGemm, and hetero.cpu QLinearMatMul, the node the int8 pass makes of
// DQ -> MatMul/Gemm [-> Relu/Clip] [-> Q] (quantisation in attributes, a
// float bias in accumulator units, Gemm's transposes and alpha).
//
// A constant matrix B with constant parameters runs as one oneDNN int8
// matmul over A's rows (batch dims folded into M): zero points, per-column
// scales, bias, clamp and requantisation inside the primitive. The rest
// (run-time B or parameters, batched B, a transposed A, per-row C) runs the
// reference loops with exact int32 sums. Per-row quantisation of A, which
// ONNX allows, is refused (a's scale must hold one value): no producer of
// quantised models writes it.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/matmul_util.h"
#include "drivers/cpu/qlinear_product.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

enum class Form { QLinear, Integer, QGemm, Fused };

constexpr size_t kNone = QuantInputs::kNone;

// Where each operand sits among the node's inputs.
struct Layout {
  size_t a = 0, a_scale = kNone, a_zp = kNone, b = 1, b_scale = kNone, b_zp = kNone, bias = kNone, y_scale = kNone,
         y_zp = kNone;
};

Layout layout_of(Form form) {
  switch (form) {
    case Form::QLinear: return {0, 1, 2, 3, 4, 5, kNone, 6, 7};
    case Form::Integer: return {0, kNone, 2, 1, kNone, 3, kNone, kNone, kNone};
    case Form::QGemm: return {0, 1, 2, 3, 4, 5, 6, 7, 8};
    case Form::Fused: return {0, kNone, kNone, 1, kNone, kNone, 2, kNone, kNone};
  }
  return {};
}

int32_t code_at(const Tensor& t, size_t i) {
  return t.dtype() == DType::U8 ? static_cast<int32_t>(t.data<uint8_t>()[i]) : static_cast<int32_t>(t.data<int8_t>()[i]);
}

// Offset of batch `index` of the output in an operand of padded dims `dims`
// (numpy broadcasting: size-1 batch dims repeat).
size_t batch_offset(const DnnlDims& dims, const DnnlDims& y, size_t index) {
  const size_t rank = dims.size();
  size_t offset = 0, stride = static_cast<size_t>(dims[rank - 1] * dims[rank - 2]);
  for (size_t d = rank - 2; d-- > 0;) {
    const size_t i = index % static_cast<size_t>(y[d]);
    index /= static_cast<size_t>(y[d]);
    if (dims[d] != 1) offset += i * stride;
    stride *= static_cast<size_t>(dims[d]);
  }
  return offset;
}

void reference_matmul(KernelRun& r, const QProduct& q, const ProductShapes& p, bool trans_a, bool trans_b, const Tensor& a,
                      const Tensor& b, const Tensor* bias, Tensor& y) {
  const int64_t M = p.m, K = p.k, N = p.n;
  size_t batches = 1;
  for (size_t d = 0; d + 2 < p.y.size(); ++d) batches *= static_cast<size_t>(p.y[d]);
  const int32_t za = q.a.zero_point[0];
  // The bias broadcast onto [M, N] (QGemm's C may be a scalar, [N], [1, N], [M, 1] or [M, N]).
  int64_t bias_rows = 1, bias_cols = 1;
  if (bias && bias->rank() >= 1) bias_cols = bias->dim(bias->rank() - 1);
  if (bias && bias->rank() == 2) bias_rows = bias->dim(0);
  const int64_t work = static_cast<int64_t>(batches) * M * N;
  // A scalar product term costs about what 8 bytes moved do.
  parallel_blocks(r, work, 8.0 * double(K), work * K > 65536, [&](int64_t job) {
    const size_t batch = static_cast<size_t>(job / (M * N));
    const int64_t m = job / N % M, n = job % N;
    const size_t a0 = batch_offset(p.a, p.y, batch), b0 = batch_offset(p.b, p.y, batch);
    const int32_t zb = q.w.zero_point_at(static_cast<size_t>(n));
    int64_t acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      const size_t ai = a0 + static_cast<size_t>(trans_a ? k * M + m : m * K + k);
      const size_t bi = b0 + static_cast<size_t>(trans_b ? n * K + k : k * N + n);
      acc += static_cast<int64_t>(code_at(a, ai) - za) * (code_at(b, bi) - zb);
    }
    double sum = static_cast<double>(acc);
    if (bias) {
      const size_t bi = static_cast<size_t>((bias_rows == 1 ? 0 : m) * bias_cols + (bias_cols == 1 ? 0 : n));
      sum += bias->dtype() == DType::I32 ? bias->data<int32_t>()[bi] : bias->data<float>()[bi];
    }
    q.store(sum, static_cast<size_t>(n), y.raw(), static_cast<size_t>(job));
  });
}

class QMatMulKernel final : public Kernel {
 public:
  QMatMulKernel(const KernelBuild& b, Form form);
  void run(KernelRun& r) override;

 private:
  struct Entry {
    dnnl::matmul prim;
    dnnl::memory::desc a_desc, b_desc, y_desc, bias_desc;
    size_t scratchpad = 0;
  };
  Entry make_entry(KernelRun& r, int64_t rows) const;
  QProduct params_at_run(const KernelRun& r, const Tensor& a, const Tensor& b, int64_t n) const;

  const core::Node& node_;
  Form form_;
  Layout in_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f;
  QuantSpec a_spec_, b_spec_, y_spec_;
  QuantInputs a_src_, b_src_, y_src_;
  std::optional<QProduct> constant_;
  DType bias_type_ = DType::Undefined;
  // oneDNN path: B as s8 [K, N] in its own layout, the bias as N floats or ints.
  bool use_dnnl_ = false;
  int64_t k_ = 0, n_ = 0;
  ReorderedConstant weights_;
  Tensor dnnl_bias_;
  DnnlZeroPoint src_zp_, dst_zp_;
  ShapeCache<Entry> cache_;
};

QMatMulKernel::QMatMulKernel(const KernelBuild& b, Form form) : node_(b.node), form_(form), in_(layout_of(form)) {
  if (form == Form::QGemm || form == Form::Fused) {
    trans_a_ = b.node.attr_int("transA", 0) != 0;
    trans_b_ = b.node.attr_int("transB", 0) != 0;
    alpha_ = b.node.attr_float("alpha", 1.0f);
  }
  const Tensor* bm = b.constant_input(in_.b);
  auto type_of = [&](size_t data, size_t zp) {
    const DType t = b.input_dtype(data);
    return t != DType::Undefined || zp == kNone ? t : zero_point_type(b, zp);
  };
  a_spec_ = {"a", type_of(in_.a, in_.a_zp)};
  b_spec_ = {"b", type_of(in_.b, in_.b_zp), true, 0};
  // A per-column scale has one value per column of B (the output channels).
  if (bm && bm->rank() >= 2) b_spec_.row_dim = static_cast<size_t>(bm->dim(bm->rank() - (trans_b_ ? 2 : 1)));
  if (const core::Value* bias = in_.bias == kNone ? nullptr : b.node.input(in_.bias)) {
    const DType want = form == Form::Fused ? DType::F32 : DType::I32;
    if (bias->dtype != want && bias->dtype != DType::Undefined)
      b.unsupported(std::string("C must be ") + core::dtype_name(want) + ", got " + core::dtype_name(bias->dtype));
    bias_type_ = want;
  }

  QProduct q;
  q.alpha = alpha_;
  if (form == Form::Fused) {
    q = QProduct::from_attrs(node_, "a", "b");
    a_spec_.dtype = q.a.dtype;
    b_spec_.dtype = q.w.dtype;
    constant_ = q;
  } else {
    if (form != Form::Integer) {
      y_spec_ = {"y", output_zero_point_type(b, in_.y_zp)};
      y_src_ = QuantInputs(b, in_.y_scale, in_.y_zp, y_spec_);
    }
    a_src_ = QuantInputs(b, in_.a_scale, in_.a_zp, a_spec_);
    b_src_ = QuantInputs(b, in_.b_scale, in_.b_zp, b_spec_);
    // QGemm without y_scale gives float32.
    const bool float_out = form == Form::QGemm && !b.node.input(in_.y_scale);
    if (a_src_.constant() && b_src_.constant() && (form == Form::Integer || float_out || y_src_.constant())) {
      q.a = *a_src_.constant();
      q.w = *b_src_.constant();
      if (form == Form::Integer) q.output = QProduct::Output::Int32;
      else if (float_out) q.output = QProduct::Output::Float;
      else q.y = *y_src_.constant();
      constant_ = q;
    }
  }
  for (const QuantSpec* s : {&a_spec_, &b_spec_})
    if (s->dtype != DType::U8 && s->dtype != DType::I8 && s->dtype != DType::Undefined)
      b.unsupported(s->what + " must be uint8 or int8, got " + core::dtype_name(s->dtype));

  // oneDNN: a constant matrix B, known parameters, A not transposed, a bias
  // (if any) constant and per column, and exact arithmetic.
  if (!constant_ || !bm || bm->rank() != 2 || trans_a_ || bm->dtype() != constant_->w.dtype) return;
  const core::Tensor* bias = in_.bias == kNone ? nullptr : b.constant_input(in_.bias);
  if (in_.bias != kNone && b.node.input(in_.bias) && !bias) return;
  k_ = bm->dim(trans_b_ ? 1 : 0);
  n_ = bm->dim(trans_b_ ? 0 : 1);
  if (bias) {
    const bool per_column = bias->numel() == 1 || (bias->numel() == static_cast<size_t>(n_) &&
                                                   (bias->rank() == 1 || (bias->rank() == 2 && bias->dim(0) == 1)));
    if (!per_column) return;
    dnnl_bias_ = Tensor::allocate(bias_type_, {n_}, false);
    const size_t elem = core::dtype_size(bias_type_);
    for (int64_t n = 0; n < n_; ++n)
      std::memcpy(static_cast<char*>(dnnl_bias_.raw()) + n * elem,
                  static_cast<const char*>(bias->raw()) + (bias->numel() == 1 ? 0 : n) * elem, elem);
  }
  std::optional<Tensor> s8 = weights_as_s8(*bm, constant_->w, trans_b_ ? 0 : 1);
  if (!s8 || !dnnl_int8_exact(*s8, constant_->a.dtype == DType::I8)) return;
  weights_.set(*s8);
  src_zp_.value = constant_->a.zero_point[0];
  if (constant_->output == QProduct::Output::Quantized) dst_zp_.value = constant_->y.zero_point[0];
  use_dnnl_ = true;
}

QProduct QMatMulKernel::params_at_run(const KernelRun& r, const Tensor& a, const Tensor& b, int64_t n) const {
  QuantSpec a_spec = a_spec_, b_spec = b_spec_;
  a_spec.dtype = a.dtype();
  b_spec.dtype = b.dtype();
  b_spec.row_dim = static_cast<size_t>(n);
  QProduct q;
  q.alpha = alpha_;
  QuantParams sa, sb, sy;
  q.a = a_src_.get(r, a_spec, sa);
  q.w = b_src_.get(r, b_spec, sb);
  if (form_ == Form::Integer) {
    q.output = QProduct::Output::Int32;
  } else if (form_ == Form::QGemm && !r.input(in_.y_scale)) {
    q.output = QProduct::Output::Float;
  } else {
    q.y = y_src_.get(r, y_spec_, sy);
  }
  return q;
}

QMatMulKernel::Entry QMatMulKernel::make_entry(KernelRun& r, int64_t rows) const {
  const dnnl::engine& engine = r.engine();
  const QProduct& q = *constant_;
  Entry e;
  e.a_desc = plain_desc({rows, k_}, dnnl_type_of(q.a.dtype));
  e.y_desc = plain_desc({rows, n_}, q.dnnl_dst_type());
  if (!dnnl_bias_.empty()) e.bias_desc = plain_desc({1, n_}, dnnl_type_of(bias_type_));
  const dnnl::memory::desc b_any({k_, n_}, dnnl_dt::s8, dnnl_tag::any);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e.a_desc, b_any, e.bias_desc, e.y_desc),
                                        q.dnnl_attr(static_cast<size_t>(n_), 1 << 1), engine);
  e.prim = dnnl::matmul(pd);
  e.b_desc = pd.weights_desc();
  e.scratchpad = pd.scratchpad_desc().get_size();
  return e;
}

void QMatMulKernel::run(KernelRun& r) {
  use_threads(r.threads());
  const Tensor* a = r.input(in_.a);
  const Tensor* b = r.input(in_.b);
  if (!a || !b) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input a or b is missing");
  for (const Tensor* t : {a, b})
    if (t->dtype() != DType::U8 && t->dtype() != DType::I8)
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": a and b must be uint8 or int8, got " +
                                        core::dtype_name(t->dtype()));
  if ((form_ == Form::QGemm || (form_ == Form::Fused && (trans_a_ || trans_b_))) && (a->rank() != 2 || b->rank() != 2))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": Gemm takes matrices, got " + core::shape_to_string(a->shape()) +
                                      " and " + core::shape_to_string(b->shape()));
  const ProductShapes p = product_shapes(node_, a->shape(), b->shape(), trans_a_, trans_b_);
  const Tensor* bias = in_.bias == kNone ? nullptr : r.input(in_.bias);
  if (bias && (bias->dtype() != bias_type_ || bias->rank() > 2 ||
               (bias->rank() >= 1 && bias->dim(bias->rank() - 1) != 1 && bias->dim(bias->rank() - 1) != p.n) ||
               (bias->rank() == 2 && bias->dim(0) != 1 && bias->dim(0) != p.m)))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": C " + core::shape_to_string(bias->shape()) +
                                      " does not broadcast onto the product's [" + std::to_string(p.m) + ", " +
                                      std::to_string(p.n) + "]");
  QProduct run_params;
  if (!constant_) run_params = params_at_run(r, *a, *b, p.n);
  const QProduct& q = constant_ ? *constant_ : run_params;
  if (a->dtype() != q.a.dtype || b->dtype() != q.w.dtype)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": a and b must have the types of their zero points");
  if (!q.w.per_tensor() && q.w.scale.size() != static_cast<size_t>(p.n))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": b has " + std::to_string(q.w.scale.size()) +
                                      " per-column parameters but " + std::to_string(p.n) + " columns");
  Tensor& y = r.output(0, q.out_dtype(), p.out);
  if (y.numel() == 0) return;
  if (!use_dnnl_ || p.k != k_ || p.n != n_) {
    reference_matmul(r, q, p, trans_a_, trans_b_, *a, *b, bias, y);
    return;
  }
  const int64_t rows = static_cast<int64_t>(a->numel()) / k_;
  auto e = with_dnnl_errors(node_, [&] { return cache_.get({rows, r.threads()}, [&] { return make_entry(r, rows); }); });
  with_dnnl_errors(node_, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine& engine = r.engine();
    MemoryViews& views = r.views();
    PrimitiveArgs args;
    args[DNNL_ARG_SRC] = views.bind(DNNL_ARG_SRC, e->a_desc, engine, a->raw());
    args[DNNL_ARG_WEIGHTS] = weights_.get(e->b_desc, matrix_desc({k_, n_}, trans_b_, dnnl_dt::s8), engine, s);
    if (!dnnl_bias_.empty()) args[DNNL_ARG_BIAS] = views.bind(DNNL_ARG_BIAS, e->bias_desc, engine, dnnl_bias_.raw());
    args[DNNL_ARG_DST] = views.bind(DNNL_ARG_DST, e->y_desc, engine, y.raw());
    if (src_zp_.value != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = src_zp_.memory(engine);
    if (dst_zp_.value != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = dst_zp_.memory(engine);
    if (e->scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e->scratchpad, engine);
    args.execute(e->prim, s);
    s.wait();
  });
}

}  // namespace

std::unique_ptr<Kernel> make_qlinear_matmul(const KernelBuild& b) {
  return std::make_unique<QMatMulKernel>(b, Form::QLinear);
}
std::unique_ptr<Kernel> make_matmul_integer(const KernelBuild& b) {
  return std::make_unique<QMatMulKernel>(b, Form::Integer);
}
std::unique_ptr<Kernel> make_qgemm(const KernelBuild& b) { return std::make_unique<QMatMulKernel>(b, Form::QGemm); }
std::unique_ptr<Kernel> make_int8_matmul(const KernelBuild& b) { return std::make_unique<QMatMulKernel>(b, Form::Fused); }

}  // namespace hetero::cpu
