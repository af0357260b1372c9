// fuse_layer_norm (graph_passes.h): a layer normalisation over the last axis
// written out in ops, as exporters before opset 17 (which has
// LayerNormalization) write it,
//   m = ReduceMean(x), d = x - m, v = ReduceMean(d ^ 2),
//   n = d / Sqrt(v + epsilon), y = n * gamma + beta   (gamma, beta optional),
// becomes one LayerNormalization node, run by one kernel in one pass over x.
// The openWakeWord classifiers have two such chains of nine nodes around
// three small Gemms: the chains took as long as the products.
#include <unordered_set>

#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"

namespace hetero::cpu::passes {

namespace {

// The one node of this graph that reads `v`, or null (several, none, a
// subgraph's, or `v` is a graph output).
core::Node* sole_reader(const core::Graph& g, const core::Value* v) {
  if (!v || v->uses.size() != 1 || is_graph_output(g, v) || !used_only_in(g, v)) return nullptr;
  return v->uses[0].node;
}

// Whether `m` averages the last axis of its input and keeps it.
bool mean_of_last_axis(const core::Node* m, int64_t opset) {
  if (!is_op(m, "ReduceMean") || m->attr_int("keepdims", 1) == 0) return false;
  std::vector<int64_t> axes = m->attr_ints("axes");
  if (opset >= 18 || m->input(1)) {
    const core::Tensor* t = constant_of(m->input(1));
    if (!t || t->dtype() != core::DType::I64) return false;
    axes = t->to_int64_vector();
  }
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const std::optional<size_t> rank = rank_of(m->input(0));
  return rank && axes[0] == static_cast<int64_t>(*rank) - 1;
}

// The operand of binary `n` other than `v` when it is a constant.
core::Value* constant_operand(const core::Node* n, const core::Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  core::Value* other = n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : nullptr;
  return other && other->constant && other->constant->dtype() == core::DType::F32 ? other : nullptr;
}

// gamma or beta as LayerNormalization takes it: one value per channel (or
// one for all), rank 1.
core::Value* per_channel(core::Graph& g, NameGen& names, core::Value* v) {
  const core::Tensor& t = *v->constant;
  if (t.rank() <= 1) return v;
  for (size_t i = 0; i + 1 < t.rank(); ++i)
    if (t.dim(i) != 1) return nullptr;
  return add_constant(g, names, v->name + "_1d", t.reshaped({t.dim(t.rank() - 1)}));
}

int64_t opset_of(const core::Node* n, int64_t model_opset) { return n->opset ? n->opset : model_opset; }

// Fuses the chain starting at `m1`, the first ReduceMean; false when it is not one.
bool fuse_from(core::Graph& g, NameGen& names, core::Node* m1, int64_t model_opset) {
  if (!mean_of_last_axis(m1, opset_of(m1, model_opset))) return false;
  core::Value* x = m1->input(0);
  core::Node* sub = sole_reader(g, m1->outputs[0]);
  if (!is_op(sub, "Sub") || sub->input(0) != x || sub->input(1) != m1->outputs[0]) return false;
  core::Value* d = sub->outputs[0];
  if (!d || d->uses.size() != 2 || is_graph_output(g, d) || !used_only_in(g, d)) return false;
  core::Node* pow = d->uses[0].node;
  core::Node* div = d->uses[1].node;
  if (is_op(pow, "Div")) std::swap(pow, div);
  if (!is_op(pow, "Pow") || pow->input(0) != d || scalar_of(pow->input(1)) != 2.0f) return false;
  if (!is_op(div, "Div") || div->input(0) != d) return false;
  core::Node* m2 = sole_reader(g, pow->outputs[0]);
  if (!m2 || !mean_of_last_axis(m2, opset_of(m2, model_opset))) return false;
  core::Node* add_eps = sole_reader(g, m2->outputs[0]);
  if (!is_op(add_eps, "Add")) return false;
  const std::optional<float> epsilon = scalar_of(constant_operand(add_eps, m2->outputs[0]));
  if (!epsilon || *epsilon < 0) return false;
  core::Node* sqrt = sole_reader(g, add_eps->outputs[0]);
  if (!is_op(sqrt, "Sqrt") || sole_reader(g, sqrt->outputs[0]) != div || div->input(1) != sqrt->outputs[0])
    return false;

  std::unordered_set<const core::Node*> chain{m1, sub, pow, m2, add_eps, sqrt, div};
  core::Value* y = div->outputs[0];
  core::Value* gamma = nullptr;
  core::Value* beta = nullptr;
  if (core::Node* mul = sole_reader(g, y); is_op(mul, "Mul") && (gamma = constant_operand(mul, y))) {
    chain.insert(mul);
    y = mul->outputs[0];
    if (core::Node* add = sole_reader(g, y); is_op(add, "Add") && (beta = constant_operand(add, y))) {
      chain.insert(add);
      y = add->outputs[0];
    }
  }
  if (gamma && !(gamma = per_channel(g, names, gamma))) return false;
  if (beta && !(beta = per_channel(g, names, beta))) return false;
  if (!gamma) {
    // LayerNormalization needs a scale: ones, one per channel.
    const std::optional<size_t> rank = rank_of(x);
    if (!rank || *rank == 0 || !x->shape || (*x->shape)[*rank - 1].size < 0) return false;
    const int64_t channels = (*x->shape)[*rank - 1].size;
    core::Tensor ones = core::Tensor::allocate(core::DType::F32, {channels});
    for (int64_t c = 0; c < channels; ++c) ones.data<float>()[c] = 1.0f;
    gamma = add_constant(g, names, x->name + "_ones", std::move(ones));
  }

  const std::string name = names.node(div->name + "_layer_norm");
  g.erase_nodes(chain);
  core::Node* ln = g.add_node("LayerNormalization", name);
  ln->opset = 17;  // the first opset with it, whatever the model imports
  g.set_input(ln, 0, x);
  g.set_input(ln, 1, gamma);
  if (beta) g.set_input(ln, 2, beta);
  g.set_output(ln, 0, y);
  set_attr_int(ln, "axis", -1);
  set_attr_float(ln, "epsilon", *epsilon);
  return true;
}

}  // namespace

void fuse_layer_norm(core::Graph& graph, int64_t onnx_opset) {
  NameGen names(graph);
  std::vector<core::Node*> means;
  for (const auto& n : graph.nodes())
    if (is_op(n.get(), "ReduceMean")) means.push_back(n.get());
  bool fused = false;
  // A fused chain's second ReduceMean is gone when its turn would come.
  std::unordered_set<const core::Node*> erased;
  for (core::Node* m : means) {
    if (erased.count(m)) continue;
    core::Node* second = nullptr;
    if (core::Node* sub = sole_reader(graph, m->outputs[0]); is_op(sub, "Sub") && sub->outputs[0])
      for (const core::Use& u : sub->outputs[0]->uses)
        if (is_op(u.node, "Pow")) second = sole_reader(graph, u.node->outputs[0]);
    if (fuse_from(graph, names, m, onnx_opset)) {
      fused = true;
      if (second) erased.insert(second);
    }
  }
  if (fused) {
    drop_dead_constants(graph);
    graph.sort_topologically();
  }
}

}  // namespace hetero::cpu::passes
