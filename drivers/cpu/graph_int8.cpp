// The int8 pass (see graph_passes.h): QDQ models run in int8.
//
// A model quantised the standard way (ONNX Runtime's quantize_static, QDQ
// format) is a float graph in which the inputs of each quantised op come
// from DequantizeLinear nodes and its output goes through QuantizeLinear:
//
//   x_q -> DQ -> Conv(W = DQ(w_q), B = DQ(b_q)) [-> Relu/Clip] -> Q -> y_q
//
// Run as written, every tensor is dequantised, computed in float and
// quantised again. This pass replaces each such group by one hetero.cpu node
// that takes and produces the quantised tensors, with the quantisation
// parameters in attributes:
//   Conv / MatMul / Gemm  -> QLinearConv / QLinearMatMul (oneDNN int8; a
//                            Relu/Clip before the Q is a clamp of the codes;
//                            without a Q the output is float)
//   Add / Mul             -> QLinearAdd / QLinearMul
//   Concat                -> QLinearConcat
//   (Global)AveragePool   -> QLinear(Global)AveragePool
//   unary elementwise op  -> QLinearUnary (a 256-entry table of the float op)
//   (and then any chain of the elementwise ones above that depends on one
//   8-bit tensor only, such as x * relu6(x + 3) / 6 -> one QLinearTable)
//   MaxPool, Reshape, Transpose, Resize (nearest), ... with the same
//   parameters on both sides -> the same op on the codes.
// Runs of such nodes keep activations in int8 from one Q to the next DQ.
//
// Each replacement computes what the float simulation of the QDQ graph
// computes, up to the rounding of the one float sum it does differently
// (never more than one quantisation step). Where oneDNN's int8 arithmetic
// would not be exact on this processor (quant_util.h), a group is left as
// it is. Every constant Q/DQ node's parameters are checked here, so a bad
// scale or zero point is refused at compile time naming the node.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/qlinear_product.h"
#include "drivers/cpu/quant_util.h"

namespace hetero::cpu::passes {

namespace {

using core::DType;
using core::Tensor;

bool is_qdq(const core::Node* n, const char* op) {
  return n && n->op_type == op && (n->domain.empty() || n->domain == "com.microsoft");
}

bool is_8bit(DType t) { return t == DType::U8 || t == DType::I8; }

// Elementwise float ops of one tensor (input 0; the others, if any, are
// constants) whose quantised form is a table of 256 values.
bool tabulable(const core::Node* n) {
  static const std::unordered_set<std::string> unary = {
      "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Clip", "Elu", "Selu", "Celu",
      "Softplus", "Softsign", "ThresholdedRelu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Erf",
      "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Identity"};
  // With a scalar second operand, these are functions of input 0 alone.
  static const std::unordered_set<std::string> with_scalar = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  if (!n->domain.empty()) return false;
  if (unary.count(n->op_type)) return true;
  if (!with_scalar.count(n->op_type) || n->inputs.size() != 2) return false;
  const core::Tensor* c = constant_of(n->input(1));
  return c && c->numel() == 1;
}

// Ops that move or select values: on codes they compute what they compute
// on the dequantised values, when in and out share their parameters.
bool code_preserving(const core::Node* n) {
  static const std::unordered_set<std::string> ops = {
      "MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Split", "Gather",
      "DepthToSpace", "SpaceToDepth", "Expand", "Tile", "Identity", "Resize", "GlobalMaxPool", "Concat"};
  if (!n->domain.empty() || !ops.count(n->op_type)) return false;
  if (n->op_type == "Resize" || n->op_type == "Upsample") return n->attr_string("mode", "nearest") == "nearest";
  if (n->op_type == "MaxPool") return n->outputs.size() < 2 || !n->outputs[1] || n->outputs[1]->uses.empty();
  return true;
}

class Int8Pass {
 public:
  Int8Pass(core::Graph& g, int64_t onnx_opset) : g_(g), names_(g), opset_(onnx_opset) {}
  void run();

 private:
  struct Dequantized {
    core::Node* node = nullptr;
    core::Value* codes = nullptr;
    QuantParams params;
  };
  struct Quantized {
    core::Node* node = nullptr;
    QuantParams params;
  };

  int64_t opset_of(const core::Node* n) const { return n->opset ? n->opset : opset_; }
  std::optional<Dequantized> dequantized(const core::Value* v) const;
  std::optional<Dequantized> dequantized_8bit(const core::Value* v) const;
  std::optional<Quantized> quantized(const core::Value* v) const;
  bool private_to(const core::Value* v, const core::Node* user) const;
  // A product's bias in accumulator units: b / (alpha sx sw[m]), beta b for
  // Gemm. Null unless it is a DQ of a constant or a float constant with one
  // value per output channel (or one for all).
  std::optional<Tensor> accumulator_bias(const core::Value* b, const QuantParams& xp, const QuantParams& wp,
                                         int64_t channels, float alpha, float beta) const;

  bool product(core::Node* n);
  bool binary(core::Node* n);
  bool table(core::Node* n);
  bool pool(core::Node* n);
  bool concat(core::Node* n);
  bool codes_through(core::Node* n);
  void fold_tables();

  // Makes `n` the hetero.cpu op `op` writing `out` (a Q's output) and
  // erases the nodes in `absorbed`.
  void become(core::Node* n, const char* op, core::Value* out, const std::vector<core::Node*>& absorbed);
  void erase(core::Node* n);

  core::Graph& g_;
  NameGen names_;
  int64_t opset_;
  std::unordered_set<const core::Node*> erased_;
};

std::optional<Int8Pass::Dequantized> Int8Pass::dequantized(const core::Value* v) const {
  if (!v || !is_qdq(v->producer, "DequantizeLinear")) return std::nullopt;
  core::Node* dq = v->producer;
  std::optional<QuantParams> p = qdq_constant_params(*dq, opset_of(dq));
  if (!p || !dq->input(0)) return std::nullopt;
  return Dequantized{dq, dq->input(0), *p};
}

std::optional<Int8Pass::Dequantized> Int8Pass::dequantized_8bit(const core::Value* v) const {
  auto d = dequantized(v);
  if (!d || !d->params.per_tensor() || !is_8bit(d->params.dtype) || d->codes->dtype != d->params.dtype)
    return std::nullopt;
  return d;
}

bool Int8Pass::private_to(const core::Value* v, const core::Node* user) const {
  return v && v->uses.size() == 1 && v->uses[0].node == user && !is_graph_output(g_, v) && used_only_in(g_, v);
}

std::optional<Int8Pass::Quantized> Int8Pass::quantized(const core::Value* v) const {
  if (!v || v->uses.size() != 1) return std::nullopt;
  core::Node* q = v->uses[0].node;
  if (!is_qdq(q, "QuantizeLinear") || q->input(0) != v || !private_to(v, q) || !q->outputs[0]) return std::nullopt;
  std::optional<QuantParams> p = qdq_constant_params(*q, opset_of(q));
  if (!p || !p->per_tensor() || !is_8bit(p->dtype)) return std::nullopt;
  return Quantized{q, *p};
}

void Int8Pass::erase(core::Node* n) {
  erased_.insert(n);
  g_.erase_node(n);
}

void Int8Pass::become(core::Node* n, const char* op, core::Value* out, const std::vector<core::Node*>& absorbed) {
  for (core::Node* a : absorbed) erase(a);
  n->op_type = op;
  n->domain = kCpuDomain;
  n->opset = 1;
  g_.set_output(n, 0, out);
}

std::optional<Tensor> Int8Pass::accumulator_bias(const core::Value* b, const QuantParams& xp, const QuantParams& wp,
                                                 int64_t channels, float alpha, float beta) const {
  const auto bq = dequantized(b);
  const Tensor* c = bq ? (bq->codes->constant ? &*bq->codes->constant : nullptr) : constant_of(b);
  if (!c || (c->numel() != 1 && c->numel() != static_cast<size_t>(channels)) || c->rank() > 2 ||
      (c->rank() == 2 && c->dim(0) != 1) || (!bq && c->dtype() != DType::F32))
    return std::nullopt;
  // The real value of bias element i (DequantizeLinear's arithmetic).
  auto real = [&](size_t i) -> float {
    if (!bq) return c->data<float>()[i];
    const size_t ch = bq->params.per_tensor() ? 0 : i;
    return static_cast<float>(c->as_int64(i) - bq->params.zero_point_at(ch)) * bq->params.scale_at(ch);
  };
  // An int32 bias of scale sx * sw[m] (as quantize_static writes it) is in
  // accumulator units already.
  bool exact = bq && alpha == 1.0f && beta == 1.0f && c->numel() == static_cast<size_t>(channels);
  for (int64_t m = 0; exact && m < channels; ++m)
    exact = bq->params.scale_at(bq->params.per_tensor() ? 0 : static_cast<size_t>(m)) ==
            xp.scale[0] * wp.scale_at(static_cast<size_t>(m));
  Tensor out = Tensor::allocate(DType::F32, {channels}, false);
  for (int64_t m = 0; m < channels; ++m) {
    const size_t i = c->numel() == 1 ? 0 : static_cast<size_t>(m);
    if (exact) {
      out.data<float>()[m] = static_cast<float>(c->as_int64(i) - bq->params.zero_point_at(bq->params.per_tensor() ? 0 : i));
    } else {
      const double unit = static_cast<double>(alpha) * xp.scale[0] * wp.scale_at(static_cast<size_t>(m));
      out.data<float>()[m] = static_cast<float>(beta * static_cast<double>(real(i)) / unit);
    }
  }
  return out;
}

// Conv, MatMul and Gemm with dequantised activations and constant weights.
bool Int8Pass::product(core::Node* n) {
  const bool conv = is_op(n, "Conv"), gemm = is_op(n, "Gemm");
  if (!conv && !gemm && !is_op(n, "MatMul")) return false;
  if (n->outputs.size() != 1 || !n->outputs[0]) return false;
  const auto x = dequantized_8bit(n->input(0));
  const auto w = dequantized(n->input(1));
  if (!x || !w || !w->codes->constant || !is_8bit(w->params.dtype)) return false;
  const Tensor& wq = *w->codes->constant;
  if (gemm && (n->attr_int("transA", 0) != 0 || wq.rank() != 2)) return false;
  const bool trans_b = gemm && n->attr_int("transB", 0) != 0;
  if (!conv && wq.rank() != 2) return false;
  // Output channels: Conv's M (axis 0), the columns of B otherwise.
  const size_t channel_axis = conv || trans_b ? 0 : 1;
  if (wq.rank() <= channel_axis) return false;
  const int64_t channels = wq.dim(channel_axis);
  if (!w->params.per_tensor() && static_cast<size_t>(w->params.axis) != channel_axis) return false;
  std::optional<Tensor> ws8 = weights_as_s8(wq, w->params, channel_axis);
  if (!ws8 || !dnnl_int8_exact(*ws8, x->params.dtype == DType::I8)) return false;

  const float alpha = gemm ? n->attr_float("alpha", 1.0f) : 1.0f, beta = gemm ? n->attr_float("beta", 1.0f) : 1.0f;
  std::optional<Tensor> bias;
  if (const core::Value* b = conv || gemm ? n->input(2) : nullptr) {
    bias = accumulator_bias(b, x->params, w->params, channels, alpha, beta);
    if (!bias) return false;
  }

  // What follows: a Relu or Clip (a clamp), then a Q (a quantised output).
  std::vector<core::Node*> absorbed;
  core::Value* out = n->outputs[0];
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (out->uses.size() == 1 && private_to(out, out->uses[0].node)) {
    core::Node* act = out->uses[0].node;
    if (is_op(act, "Relu") && act->input(0) == out) {
      lo = 0;
    } else if (is_op(act, "Clip") && act->input(0) == out) {
      if (opset_of(act) < 11) {
        lo = act->attr_float("min", lo);
        hi = act->attr_float("max", hi);
      } else {
        const auto l = act->input(1) ? scalar_of(act->input(1)) : std::optional<float>(lo);
        const auto h = act->input(2) ? scalar_of(act->input(2)) : std::optional<float>(hi);
        if (l && h) lo = *l, hi = *h;
        else act = nullptr;
      }
    } else {
      act = nullptr;
    }
    if (act && act->outputs.size() == 1 && act->outputs[0]) {
      absorbed.push_back(act);
      out = act->outputs[0];
    } else {
      lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    }
  }
  // Without a Q the output stays float (with the clamp applied).
  const auto q = quantized(out);
  if (q) {
    absorbed.push_back(q->node);
    out = q->node->outputs[0];
  }

  const std::string a_prefix = conv ? "x" : "a", w_prefix = conv ? "w" : "b";
  core::Value* w_value = add_constant(g_, names_, n->name + "/weights_s8", std::move(*ws8));
  core::Value* b_value = bias ? add_constant(g_, names_, n->name + "/bias", std::move(*bias)) : nullptr;
  replace_input(g_, n, 0, x->codes);
  replace_input(g_, n, 1, w_value);
  replace_input(g_, n, 2, b_value);
  n->inputs.resize(b_value ? 3 : 2);
  QuantParams wp = w->params;
  for (int32_t& z : wp.zero_point) z = 0;
  wp.dtype = DType::I8;
  set_quant_attrs(*n, a_prefix, x->params);
  set_quant_attrs(*n, w_prefix, wp);
  if (q) set_quant_attrs(*n, "y", q->params);
  if (std::isfinite(lo)) set_attr_float(n, "act_min", lo);
  if (std::isfinite(hi)) set_attr_float(n, "act_max", hi);
  if (gemm) {
    // beta went into the bias; the kernel knows transB and alpha.
    for (auto it = n->attributes.begin(); it != n->attributes.end();)
      it = it->name == "beta" ? n->attributes.erase(it) : it + 1;
  }
  become(n, conv ? "QLinearConv" : "QLinearMatMul", out, absorbed);
  return true;
}

// Add and Mul of two dequantised 8-bit tensors of one type, quantised.
bool Int8Pass::binary(core::Node* n) {
  const bool add = is_op(n, "Add");
  if ((!add && !is_op(n, "Mul")) || n->inputs.size() != 2 || n->outputs.size() != 1) return false;
  const auto a = dequantized_8bit(n->input(0));
  const auto b = dequantized_8bit(n->input(1));
  if (!a || !b || a->params.dtype != b->params.dtype) return false;
  const auto q = quantized(n->outputs[0]);
  if (!q || q->params.dtype != a->params.dtype) return false;
  replace_input(g_, n, 0, a->codes);
  replace_input(g_, n, 1, b->codes);
  set_quant_attrs(*n, "a", a->params);
  set_quant_attrs(*n, "b", b->params);
  set_quant_attrs(*n, "y", q->params);
  become(n, add ? "QLinearAdd" : "QLinearMul", q->node->outputs[0], {q->node});
  return true;
}

// An elementwise function of one dequantised tensor, quantised: a table.
bool Int8Pass::table(core::Node* n) {
  if (!tabulable(n) || n->outputs.size() != 1) return false;
  const auto x = dequantized_8bit(n->input(0));
  if (!x) return false;
  for (size_t i = 1; i < n->inputs.size(); ++i)
    if (n->inputs[i] && !n->inputs[i]->constant) return false;
  const auto q = quantized(n->outputs[0]);
  if (!q) return false;
  set_attr_string(n, "float_op", n->op_type);
  set_attr_int(n, "float_op_opset", opset_of(n));
  replace_input(g_, n, 0, x->codes);
  set_quant_attrs(*n, "x", x->params);
  set_quant_attrs(*n, "y", q->params);
  become(n, "QLinearUnary", q->node->outputs[0], {q->node});
  return true;
}

bool Int8Pass::pool(core::Node* n) {
  const bool global = is_op(n, "GlobalAveragePool");
  if ((!global && !is_op(n, "AveragePool")) || n->outputs.size() != 1) return false;
  const auto x = dequantized_8bit(n->input(0));
  const auto q = x ? quantized(n->outputs[0]) : std::nullopt;
  if (!q || q->params.dtype != x->params.dtype) return false;
  replace_input(g_, n, 0, x->codes);
  set_quant_attrs(*n, "x", x->params);
  set_quant_attrs(*n, "y", q->params);
  become(n, global ? "QLinearGlobalAveragePool" : "QLinearAveragePool", q->node->outputs[0], {q->node});
  return true;
}

// Concat of dequantised tensors of one type: each requantised to the output's parameters.
bool Int8Pass::concat(core::Node* n) {
  if (!is_op(n, "Concat") || n->outputs.size() != 1 || n->inputs.empty()) return false;
  std::vector<Dequantized> xs;
  for (const core::Value* in : n->inputs) {
    const auto x = dequantized_8bit(in);
    if (!x) return false;
    xs.push_back(*x);
  }
  const auto q = quantized(n->outputs[0]);
  if (!q) return false;
  for (const Dequantized& x : xs)
    if (x.params.dtype != q->params.dtype) return false;
  for (size_t i = 0; i < xs.size(); ++i) {
    replace_input(g_, n, i, xs[i].codes);
    set_quant_attrs(*n, concat_input_prefix(i), xs[i].params);
  }
  set_quant_attrs(*n, "y", q->params);
  become(n, "QLinearConcat", q->node->outputs[0], {q->node});
  return true;
}

// An op that only moves values, between a DQ and Q(s) with the same
// parameters: it runs on the codes.
bool Int8Pass::codes_through(core::Node* n) {
  if (!code_preserving(n)) return false;
  const size_t data_inputs = is_op(n, "Concat") ? n->inputs.size() : 1;
  std::vector<Dequantized> xs;
  for (size_t i = 0; i < data_inputs; ++i) {
    const auto x = dequantized_8bit(n->input(i));
    if (!x || !(x->params == (xs.empty() ? x->params : xs[0].params))) return false;
    xs.push_back(*x);
  }
  std::vector<Quantized> qs;
  for (const core::Value* out : n->outputs) {
    if (!out || (out->uses.empty() && !is_graph_output(g_, out))) {
      qs.push_back({});
      continue;
    }
    const auto q = quantized(out);
    if (!q || !(q->params == xs[0].params)) return false;
    qs.push_back(*q);
  }
  if (n->op_type == "MaxPool" && n->outputs.size() > 1) qs.resize(1);
  for (size_t i = 0; i < xs.size(); ++i) replace_input(g_, n, i, xs[i].codes);
  for (size_t i = 0; i < qs.size(); ++i) {
    if (!qs[i].node) continue;
    core::Value* out = qs[i].node->outputs[0];
    erase(qs[i].node);
    g_.set_output(n, i, out);
  }
  return true;
}

// An 8-bit elementwise node of the int8 pass whose other inputs are
// scalar constants: a function, code by code, of its tensor inputs.
bool table_node(const core::Node* n) {
  if (!n || n->domain != kCpuDomain || n->outputs.size() != 1 || !n->outputs[0]) return false;
  const std::string& op = n->op_type;
  if (op != "QLinearUnary" && op != "QLinearAdd" && op != "QLinearMul" && op != "QLinearTable") return false;
  for (const core::Value* in : n->inputs)
    if (in && in->constant && in->constant->numel() != 1) return false;
  return is_8bit(n->outputs[0]->dtype);
}

// Chains of table nodes that depend on a single 8-bit tensor x become one
// QLinearTable (its kernel runs the chain once on all 256 codes). From the
// last node of the graph backwards, a chain grows towards its inputs while
// a producer is a table node whose output only the chain reads.
void Int8Pass::fold_tables() {
  std::vector<core::Node*> order;
  for (const auto& n : g_.nodes()) order.push_back(n.get());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    core::Node* sink = *it;
    if (erased_.count(sink) || !table_node(sink)) continue;
    std::vector<core::Node*> chain{sink};
    auto in_chain = [&](const core::Node* n) { return std::find(chain.begin(), chain.end(), n) != chain.end(); };
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t c = 0; c < chain.size(); ++c)
        for (core::Value* v : chain[c]->inputs) {
          core::Node* p = v && !v->constant ? v->producer : nullptr;
          if (!p || in_chain(p) || !table_node(p) || is_graph_output(g_, v) || !used_only_in(g_, v)) continue;
          bool private_use = true;
          for (const core::Use& u : v->uses) private_use = private_use && in_chain(u.node);
          if (!private_use) continue;
          chain.push_back(p);
          grew = true;
        }
    }
    std::vector<core::Value*> leaves;
    for (core::Node* n : chain)
      for (core::Value* v : n->inputs)
        if (v && !v->constant && !in_chain(v->producer) && std::find(leaves.begin(), leaves.end(), v) == leaves.end())
          leaves.push_back(v);
    // A lone QLinearUnary is a table already; a lone Add or Mul with a
    // constant becomes one.
    const bool lone_table = chain.size() == 1 && sink->op_type != "QLinearAdd" && sink->op_type != "QLinearMul";
    if (leaves.size() != 1 || lone_table || !is_8bit(leaves[0]->dtype)) continue;

    std::sort(chain.begin(), chain.end(), [](const core::Node* a, const core::Node* b) { return a->index < b->index; });
    auto body = std::make_shared<core::Graph>();
    body->name = sink->name + "/table";
    core::ValueMap map;
    core::Value* x = leaves[0];
    map[x] = core::copy_value(*x, *body);
    body->inputs = {map[x]};
    for (core::Node* n : chain) {
      for (core::Value* v : n->inputs)
        if (v && !map.count(v)) map[v] = core::copy_value(*v, *body);
      for (core::Value* v : n->outputs)
        if (v) map[v] = core::copy_value(*v, *body);
      core::copy_node(*n, *body, map);
    }
    core::Value* out = sink->outputs[0];
    body->outputs = {map[out]};
    const std::string name = names_.node(sink->name + "/table");
    for (core::Node* n : chain) erase(n);
    core::Node* table = g_.add_node("QLinearTable", name);
    table->domain = kCpuDomain;
    table->opset = 1;
    core::Attribute a;
    a.name = "body";
    a.type = core::AttrType::Graph;
    a.g = std::move(body);
    table->attributes.push_back(std::move(a));
    g_.set_input(table, 0, x);
    g_.set_output(table, 0, out);
  }
}

void Int8Pass::run() {
  // Every constant Q/DQ is checked, whether or not a group absorbs it.
  for (const auto& n : g_.nodes())
    if (is_qdq(n.get(), "QuantizeLinear") || is_qdq(n.get(), "DequantizeLinear")) qdq_constant_params(*n, opset_of(n.get()));

  std::vector<core::Node*> order;
  for (const auto& n : g_.nodes()) order.push_back(n.get());
  for (core::Node* n : order) {
    if (erased_.count(n)) continue;
    product(n) || binary(n) || table(n) || pool(n) || concat(n) || codes_through(n);
  }
  // DQ nodes nobody reads any more (their Q partners were absorbed).
  std::vector<core::Node*> dead;
  for (const auto& n : g_.nodes()) {
    if (!is_qdq(n.get(), "DequantizeLinear") || !n->outputs[0]) continue;
    if (n->outputs[0]->uses.empty() && !is_graph_output(g_, n->outputs[0])) dead.push_back(n.get());
  }
  for (core::Node* n : dead) erase(n);
  fold_tables();
  // What is left dequantised of a constant (the weights of a float op, such
  // as a ConvTranspose no group took) becomes a float constant: the op then
  // prepares its weights once instead of every run.
  std::vector<core::Node*> constant_dq;
  for (const auto& n : g_.nodes())
    if (is_qdq(n.get(), "DequantizeLinear") && n->input(0) && n->input(0)->constant && n->outputs[0] &&
        !is_graph_output(g_, n->outputs[0]))
      constant_dq.push_back(n.get());
  for (core::Node* n : constant_dq) {
    const std::optional<QuantParams> p = qdq_constant_params(*n, opset_of(n));
    if (!p) continue;
    core::Value* out = n->outputs[0];
    out->constant = dequantize_tensor(*n->input(0)->constant, *p);
    erase(n);
  }
  drop_dead_constants(g_);
  g_.sort_topologically();
}

}  // namespace

void to_int8(core::Graph& graph, int64_t onnx_opset) { Int8Pass(graph, onnx_opset).run(); }

}  // namespace hetero::cpu::passes
