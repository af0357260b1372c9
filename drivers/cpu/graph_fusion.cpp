// The folding and post-op fusion pass (see graph_passes.h).
//
// From each Conv, ConvTranspose, MatMul and Gemm it walks down the chain of
// single-use float values and absorbs what oneDNN can apply to the output in
// place: first whatever folds into constant weights exactly (BatchNorm,
// per-channel scale and shift), then elementwise post-ops. The chain stops
// at a value with several users (except the x * relu6(x + 3) / 6 pattern,
// which uses x twice), a graph output, or an op that is none of these.
#include <cmath>
#include <limits>
#include <string_view>

#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu::passes {

namespace {

constexpr float kInf = std::numeric_limits<float>::max();

enum class Anchor { Conv, ConvTranspose, MatMul, Gemm };

struct Chain {
  Anchor anchor = Anchor::Conv;
  core::Node* node = nullptr;
  int64_t channels = -1;        // output channels (Conv/ConvTranspose), -1 unknown
  size_t out_rank = 0;
  // Weights and bias being folded into (copies; constants are shared).
  core::Tensor w, b;
  bool can_fold = false, folded = false;
  std::vector<std::string> ops;
  std::vector<float> alpha, beta;
  std::vector<core::Value*> operands;       // binary post-op operands, existing values
  std::vector<core::Tensor> new_operands;   // operands to create (index into operands where null)
  std::vector<core::Node*> absorbed;

  void eltwise(const char* name, float a = 0, float b2 = 0) {
    // a2 * (a1 * x + b1) + b2 as one op: shorter chains run faster, and with
    // oneDNN 2.6 the chain hardswish, linear, linear gave wrong results on
    // PP-OCR's det model (tests/models catches it).
    if (std::string_view(name) == "linear" && !ops.empty() && ops.back() == "linear") {
      alpha.back() *= a;
      beta.back() = beta.back() * a + b2;
      return;
    }
    ops.push_back(name);
    alpha.push_back(a);
    beta.push_back(b2);
  }
  void binary(const char* name, core::Value* operand, core::Tensor created = {}) {
    eltwise(name);
    operands.push_back(operand);
    new_operands.push_back(std::move(created));
  }
};

bool is_f32(const core::Value* v) { return v && (v->dtype == core::DType::F32 || v->dtype == core::DType::Undefined); }

// A value the chain may consume: read by exactly `uses` nodes of this graph
// and not a graph output.
bool private_value(const core::Graph& g, const core::Value* v, size_t uses) {
  return v && v->uses.size() == uses && !is_graph_output(g, v) && used_only_in(g, v);
}

// The ai.onnx opset of the model, for nodes that do not carry their own.
thread_local int64_t model_opset = 0;
int64_t opset_of(const core::Node* n) { return n->opset ? n->opset : model_opset; }

// Clip's bounds (attributes before opset 11, constant inputs after); null
// when an input bound is not a constant.
std::optional<std::pair<float, float>> clip_bounds(const core::Node* n) {
  if (opset_of(n) < 11) return std::make_pair(n->attr_float("min", -kInf), n->attr_float("max", kInf));
  float lo = -kInf, hi = kInf;
  if (n->input(1)) {
    const auto s = scalar_of(n->input(1));
    if (!s) return std::nullopt;
    lo = *s;
  }
  if (n->input(2)) {
    const auto s = scalar_of(n->input(2));
    if (!s) return std::nullopt;
    hi = *s;
  }
  return std::make_pair(lo, hi);
}

// The value's user `i` when it is ai.onnx op `op`, else null.
core::Node* user_op(const core::Value* v, size_t i, const char* op) {
  return i < v->uses.size() && is_op(v->uses[i].node, op) ? v->uses[i].node : nullptr;
}

// The other input of a two-input node that reads `v`.
core::Value* other_input(const core::Node* n, const core::Value* v) {
  if (n->inputs.size() != 2 || !n->inputs[0] || !n->inputs[1] || n->inputs[0] == n->inputs[1]) return nullptr;
  return n->inputs[0] == v ? n->inputs[1] : n->inputs[0];
}

bool near(float a, float b) { return std::fabs(a - b) <= 1e-6f * std::max(1.0f, std::fabs(b)); }

// x * relu6(x + 3) / 6 (as Add, Clip, Mul, Div or Mul by 1/6) or
// x * HardSigmoid(x, 1/6, 1/2), with x = v: the nodes, last one's output.
std::optional<std::vector<core::Node*>> match_hardswish(const core::Graph& g, core::Value* v) {
  if (v->uses.size() != 2) return std::nullopt;
  for (size_t first = 0; first < 2; ++first) {
    const size_t second = 1 - first;
    if (core::Node* hs = user_op(v, first, "HardSigmoid")) {
      core::Node* mul = user_op(v, second, "Mul");
      if (!mul || !near(hs->attr_float("alpha", 0.2f), 1.0f / 6) || !near(hs->attr_float("beta", 0.5f), 0.5f)) continue;
      if (!private_value(g, hs->outputs[0], 1) || hs->outputs[0]->uses[0].node != mul) continue;
      if (other_input(mul, v) != hs->outputs[0]) continue;
      return std::vector<core::Node*>{hs, mul};
    }
    core::Node* add = user_op(v, first, "Add");
    core::Node* mul = user_op(v, second, "Mul");
    if (!add || !mul) continue;
    const auto three = scalar_of(other_input(add, v));
    if (!three || !near(*three, 3.0f) || !private_value(g, add->outputs[0], 1)) continue;
    core::Node* clip = user_op(add->outputs[0], 0, "Clip");
    if (!clip || clip->inputs[0] != add->outputs[0]) continue;
    const auto bounds = clip_bounds(clip);
    if (!bounds || !near(bounds->first, 0.0f) || !near(bounds->second, 6.0f)) continue;
    if (!private_value(g, clip->outputs[0], 1) || clip->outputs[0]->uses[0].node != mul) continue;
    if (other_input(mul, v) != clip->outputs[0] || !private_value(g, mul->outputs[0], 1)) continue;
    core::Node* last = mul->outputs[0]->uses[0].node;
    const auto k = scalar_of(other_input(last, mul->outputs[0]));
    if (!k || last->inputs[0] != mul->outputs[0]) continue;
    if (!((is_op(last, "Div") && near(*k, 6.0f)) || (is_op(last, "Mul") && near(*k, 1.0f / 6)))) continue;
    return std::vector<core::Node*>{add, clip, mul, last};
  }
  return std::nullopt;
}

// True when constant `c` multiplies or adds per output channel (or is a
// scalar) on an output of rank `rank` with `channels` channels at dim 1.
bool per_channel(const core::Tensor& c, int64_t channels, size_t rank) {
  if (c.numel() == 1) return true;
  if (channels < 0 || c.rank() > rank || rank < 2 || c.rank() < rank - 1) return false;
  const size_t pad = rank - c.rank();
  for (size_t i = 0; i < c.rank(); ++i) {
    const size_t d = pad + i;
    if (c.dim(i) != (d == 1 ? channels : 1)) return false;
  }
  return true;
}

// True when `c` broadcasts onto `v` without growing it (dims of v known where c is not 1).
bool broadcasts_onto(const core::Shape& c, const core::Value* v) {
  if (!v->shape || c.size() > v->shape->size()) return false;
  const size_t pad = v->shape->size() - c.size();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] != 1 && (*v->shape)[pad + i].size != c[i]) return false;
  return true;
}

bool same_shape(const core::Value* a, const core::Value* b) {
  if (!a->shape || !b->shape || a->shape->size() != b->shape->size()) return false;
  for (size_t i = 0; i < a->shape->size(); ++i) {
    const core::Dim &x = (*a->shape)[i], &y = (*b->shape)[i];
    if (x.known() ? x.size != y.size : (x.param.empty() || x.param != y.param)) return false;
  }
  return true;
}

core::Tensor map_values(const core::Tensor& t, float (*f)(float)) {
  core::Tensor r = core::Tensor::allocate(core::DType::F32, t.shape(), false);
  for (size_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = f(t.data<float>()[i]);
  return r;
}

// Multiplies output channel m of the weights by s[m] (Conv: W[m, ...];
// ConvTranspose: W[c, m % (M/G), ...] for the channels c of m's group).
void scale_weights(Chain& ch, const std::vector<double>& s) {
  float* w = ch.w.data<float>();
  const int64_t m_total = ch.channels;
  if (ch.anchor == Anchor::Conv) {
    const size_t per = ch.w.numel() / static_cast<size_t>(m_total);
    for (int64_t m = 0; m < m_total; ++m)
      for (size_t k = 0; k < per; ++k) w[m * per + k] = static_cast<float>(w[m * per + k] * s[m]);
    return;
  }
  const int64_t c_in = ch.w.dim(0), mg = ch.w.dim(1), group = m_total / mg, cg = c_in / group;
  const size_t k = ch.w.numel() / static_cast<size_t>(c_in * mg);
  for (int64_t c = 0; c < c_in; ++c)
    for (int64_t j = 0; j < mg; ++j) {
      const double f = s[(c / cg) * mg + j];
      for (size_t i = 0; i < k; ++i) w[(c * mg + j) * k + i] = static_cast<float>(w[(c * mg + j) * k + i] * f);
    }
}

// y * s + t per output channel, folded into the weights and bias.
void fold_affine(Chain& ch, const std::vector<double>& s, const std::vector<double>& t) {
  scale_weights(ch, s);
  float* b = ch.b.data<float>();
  for (int64_t m = 0; m < ch.channels; ++m) b[m] = static_cast<float>(b[m] * s[m] + t[m]);
  ch.folded = true;
}

std::vector<double> per_channel_values(const core::Tensor& c, int64_t channels) {
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) v[m] = c.data<float>()[c.numel() == 1 ? 0 : m];
  return v;
}

bool try_batch_norm(const core::Graph& g, Chain& ch, core::Node* bn, const core::Value* v) {
  if (!ch.can_fold || !ch.ops.empty() || bn->inputs.size() < 5 || bn->inputs[0] != v) return false;
  if (bn->attr_int("training_mode", 0) != 0 || (opset_of(bn) < 9 && bn->attr_int("spatial", 1) == 0))
    return false;
  for (size_t i = 1; i < bn->outputs.size(); ++i)
    if (bn->outputs[i] && (!bn->outputs[i]->uses.empty() || is_graph_output(g, bn->outputs[i]))) return false;
  const core::Tensor* p[4];
  for (size_t i = 0; i < 4; ++i) {
    p[i] = constant_of(bn->inputs[i + 1]);
    if (!p[i] || p[i]->dtype() != core::DType::F32 || p[i]->numel() != static_cast<size_t>(ch.channels)) return false;
  }
  const double eps = bn->attr_float("epsilon", 1e-5f);
  std::vector<double> s(ch.channels), t(ch.channels);
  for (int64_t m = 0; m < ch.channels; ++m) {
    s[m] = p[0]->data<float>()[m] / std::sqrt(static_cast<double>(p[3]->data<float>()[m]) + eps);
    t[m] = p[1]->data<float>()[m] - p[2]->data<float>()[m] * s[m];
  }
  fold_affine(ch, s, t);
  return true;
}

// Add, Sub, Mul or Div of the chain value `v` and something else.
bool try_arithmetic(Chain& ch, core::Node* n, core::Value* v) {
  const bool add = is_op(n, "Add"), sub = is_op(n, "Sub"), mul = is_op(n, "Mul"), div = is_op(n, "Div");
  if (!(add || sub || mul || div)) return false;
  core::Value* other = other_input(n, v);
  if (!other || !is_f32(other)) return false;
  const bool v_first = n->inputs[0] == v;
  const core::Tensor* c = constant_of(other);
  if (!c) {
    // A run-time operand of the output's own shape (a residual connection).
    if (!(add || mul) || !same_shape(other, n->outputs[0]) || !same_shape(v, n->outputs[0])) return false;
    ch.binary(add ? "add" : "mul", other);
    return true;
  }
  if (c->dtype() != core::DType::F32 || (div && !v_first)) return false;  // c / v is no post-op
  // The operand must not grow the output, not even in rank.
  const size_t v_rank = v->shape ? v->shape->size() : ch.out_rank;
  if (c->rank() > v_rank) return false;
  if (c->numel() != 1 && !broadcasts_onto(c->shape(), v)) return false;
  if (ch.can_fold && ch.ops.empty() && per_channel(*c, ch.channels, ch.out_rank) && !(sub && !v_first)) {
    const std::vector<double> k = per_channel_values(*c, ch.channels);
    std::vector<double> s(ch.channels, 1.0), t(ch.channels, 0.0);
    for (int64_t m = 0; m < ch.channels; ++m) {
      if (mul) s[m] = k[m];
      if (div) s[m] = 1.0 / k[m];
      if (add) t[m] = k[m];
      if (sub) t[m] = -k[m];
    }
    fold_affine(ch, s, t);
    return true;
  }
  if (c->numel() == 1) {
    const float k = c->data<float>()[0];
    if (mul) ch.eltwise("linear", k, 0);
    if (div) ch.eltwise("linear", 1.0f / k, 0);
    if (add) ch.eltwise("linear", 1, k);
    if (sub) ch.eltwise("linear", v_first ? 1.0f : -1.0f, v_first ? -k : k);
    return true;
  }
  if (add || mul) {
    ch.binary(add ? "add" : "mul", other);
  } else if (div) {
    ch.binary("mul", nullptr, map_values(*c, [](float x) { return 1.0f / x; }));
  } else if (v_first) {
    ch.binary("add", nullptr, map_values(*c, [](float x) { return -x; }));
  } else {
    ch.eltwise("linear", -1, 0);
    ch.binary("add", other);
  }
  return true;
}

bool try_activation(Chain& ch, core::Node* n, core::Value* v) {
  if (n->inputs.empty() || n->inputs[0] != v) return false;
  if (is_op(n, "Relu")) ch.eltwise("relu");
  else if (is_op(n, "LeakyRelu")) ch.eltwise("relu", n->attr_float("alpha", 0.01f));
  else if (is_op(n, "Elu")) ch.eltwise("elu", n->attr_float("alpha", 1.0f));
  else if (is_op(n, "Sigmoid")) ch.eltwise("sigmoid");
  else if (is_op(n, "Tanh")) ch.eltwise("tanh");
  else if (is_op(n, "HardSwish")) ch.eltwise("hardswish");
  else if (is_op(n, "HardSigmoid")) {
    ch.eltwise("linear", n->attr_float("alpha", 0.2f), n->attr_float("beta", 0.5f));
    ch.eltwise("clip", 0, 1);
  } else if (is_op(n, "Clip")) {
    const auto bounds = clip_bounds(n);
    if (!bounds) return false;
    ch.eltwise("clip", bounds->first, bounds->second);
  } else if (is_op(n, "Max") || is_op(n, "Min")) {
    const auto k = scalar_of(other_input(n, v));
    if (!k) return false;
    if (is_op(n, "Max")) ch.eltwise("clip", *k, kInf);
    else ch.eltwise("clip", -kInf, *k);
  } else {
    return false;
  }
  return true;
}

void rewrite(core::Graph& g, NameGen& names, Chain& ch, core::Value* out) {
  core::Node* n = ch.node;
  for (core::Node* a : ch.absorbed) g.erase_node(a);
  if (ch.folded) {
    replace_input(g, n, 1, add_constant(g, names, n->name + "/folded_weights", std::move(ch.w)));
    replace_input(g, n, 2, add_constant(g, names, n->name + "/folded_bias", std::move(ch.b)));
  }
  g.set_output(n, 0, out);
  if (ch.ops.empty()) return;
  static const char* const kFused[] = {"FusedConv", "FusedConvTranspose", "FusedMatMul", "FusedGemm"};
  n->op_type = kFused[static_cast<int>(ch.anchor)];
  n->domain = kCpuDomain;
  n->opset = 1;
  set_attr_strings(n, kPostOpsAttr, ch.ops);
  set_attr_floats(n, kPostAlphaAttr, ch.alpha);
  set_attr_floats(n, kPostBetaAttr, ch.beta);
  // Operands follow the op's own inputs (an omitted bias or C stays null).
  size_t next = ch.anchor == Anchor::MatMul ? 2 : 3;
  n->inputs.resize(next, nullptr);
  for (size_t i = 0; i < ch.operands.size(); ++i) {
    core::Value* operand = ch.operands[i];
    if (!operand) operand = add_constant(g, names, n->name + "/post_operand", std::move(ch.new_operands[i]));
    g.set_input(n, next++, operand);
  }
}

void fuse_from(core::Graph& g, NameGen& names, core::Node* n) {
  Chain ch;
  ch.node = n;
  if (is_op(n, "Conv")) ch.anchor = Anchor::Conv;
  else if (is_op(n, "ConvTranspose")) ch.anchor = Anchor::ConvTranspose;
  else if (is_op(n, "MatMul")) ch.anchor = Anchor::MatMul;
  else if (is_op(n, "Gemm")) ch.anchor = Anchor::Gemm;
  else return;
  const size_t own_inputs = ch.anchor == Anchor::MatMul ? 2 : 3;
  if (n->inputs.size() > own_inputs || n->outputs.size() != 1 || !n->outputs[0]) return;
  for (const core::Value* in : n->inputs)
    if (in && !is_f32(in)) return;
  core::Value* v = n->outputs[0];
  if (!is_f32(v)) return;

  const core::Tensor* w = constant_of(n->input(1));
  const bool conv_like = ch.anchor == Anchor::Conv || ch.anchor == Anchor::ConvTranspose;
  if (conv_like && w && w->rank() >= 3 && w->dtype() == core::DType::F32) {
    const int64_t group = n->attr_int("group", 1);
    ch.channels = ch.anchor == Anchor::Conv ? w->dim(0) : w->dim(1) * group;
    ch.out_rank = w->rank();
    const core::Tensor* b = constant_of(n->input(2));
    if (group >= 1 && (!n->input(2) || (b && b->numel() == static_cast<size_t>(ch.channels)))) {
      ch.can_fold = true;
      ch.w = w->clone();
      ch.b = b ? b->clone() : core::Tensor::allocate(core::DType::F32, {ch.channels});
    }
  }

  for (;;) {
    if (is_graph_output(g, v) || !used_only_in(g, v)) break;
    if (v->uses.size() == 2) {
      const auto hs = match_hardswish(g, v);
      if (!hs) break;
      ch.eltwise("hardswish");
      ch.absorbed.insert(ch.absorbed.end(), hs->begin(), hs->end());
      v = hs->back()->outputs[0];
      continue;
    }
    if (v->uses.size() != 1) break;
    core::Node* u = v->uses[0].node;
    if (u->outputs.empty() || !u->outputs[0] || !is_f32(u->outputs[0])) break;
    if (is_op(u, "BatchNormalization") ? try_batch_norm(g, ch, u, v)
                                       : u->outputs.size() == 1 && (try_arithmetic(ch, u, v) || try_activation(ch, u, v))) {
      ch.absorbed.push_back(u);
      v = u->outputs[0];
      continue;
    }
    break;
  }
  if (ch.absorbed.empty()) return;
  rewrite(g, names, ch, v);
}

}  // namespace

void fold_and_fuse(core::Graph& graph, int64_t onnx_opset) {
  model_opset = onnx_opset;
  NameGen names(graph);
  // Anchors are never absorbed (only the nodes after them are), so the
  // list stays valid while absorbed nodes are erased.
  std::vector<core::Node*> anchors;
  for (const auto& n : graph.nodes())
    if (is_op(n.get(), "Conv") || is_op(n.get(), "ConvTranspose") || is_op(n.get(), "MatMul") || is_op(n.get(), "Gemm"))
      anchors.push_back(n.get());
  for (core::Node* n : anchors) fuse_from(graph, names, n);
  drop_dead_constants(graph);
  graph.sort_topologically();
}

}  // namespace hetero::cpu::passes
