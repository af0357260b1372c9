#include "drivers/cpu/graph_rewrite.h"

#include <algorithm>

namespace hetero::cpu::passes {

bool is_op(const core::Node* n, const char* op_type) {
  return n && n->domain.empty() && n->op_type == op_type;
}

const core::Tensor* constant_of(const core::Value* v) { return v && v->constant ? &*v->constant : nullptr; }

std::optional<float> scalar_of(const core::Value* v) {
  const core::Tensor* t = constant_of(v);
  if (!t || t->dtype() != core::DType::F32 || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

bool is_graph_output(const core::Graph& g, const core::Value* v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

bool used_only_in(const core::Graph& g, const core::Value* v) {
  for (const core::Use& u : v->uses) {
    const auto& nodes = g.nodes();
    if (u.node->index >= nodes.size() || nodes[u.node->index].get() != u.node) return false;
  }
  return true;
}

void replace_input(core::Graph& g, core::Node* n, size_t i, core::Value* v) {
  if (i < n->inputs.size() && n->inputs[i]) {
    auto& uses = n->inputs[i]->uses;
    auto it = std::find_if(uses.begin(), uses.end(), [&](const core::Use& u) { return u.node == n && u.input_index == i; });
    if (it != uses.end()) uses.erase(it);
  }
  if (n->inputs.size() <= i) n->inputs.resize(i + 1, nullptr);
  n->inputs[i] = nullptr;
  if (v) g.set_input(n, i, v);
}

NameGen::NameGen(const core::Graph& g) {
  for (const auto& v : g.values()) values_.insert(v->name);
  for (const auto& n : g.nodes()) nodes_.insert(n->name);
}

namespace {
std::string fresh(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}
}  // namespace

std::string NameGen::value(const std::string& base) { return fresh(values_, base); }
std::string NameGen::node(const std::string& base) { return fresh(nodes_, base); }

core::Value* add_constant(core::Graph& g, NameGen& names, const std::string& base, core::Tensor t) {
  core::Value* v = g.add_value(names.value(base));
  v->dtype = t.dtype();
  std::vector<core::Dim> dims;
  for (int64_t d : t.shape()) dims.push_back(core::Dim{d, {}});
  v->shape = std::move(dims);
  v->constant = std::move(t);
  return v;
}

namespace {
core::Attribute& attr_slot(core::Node* n, const std::string& name, core::AttrType type) {
  for (core::Attribute& a : n->attributes) {
    if (a.name == name) {
      a = core::Attribute();
      a.name = name;
      a.type = type;
      return a;
    }
  }
  core::Attribute a;
  a.name = name;
  a.type = type;
  n->attributes.push_back(std::move(a));
  return n->attributes.back();
}
}  // namespace

void set_attr_int(core::Node* n, const std::string& name, int64_t v) { attr_slot(n, name, core::AttrType::Int).i = v; }
void set_attr_float(core::Node* n, const std::string& name, float v) {
  attr_slot(n, name, core::AttrType::Float).f = v;
}
void set_attr_string(core::Node* n, const std::string& name, std::string v) {
  attr_slot(n, name, core::AttrType::String).s = std::move(v);
}
void set_attr_ints(core::Node* n, const std::string& name, std::vector<int64_t> v) {
  attr_slot(n, name, core::AttrType::Ints).ints = std::move(v);
}
void set_attr_floats(core::Node* n, const std::string& name, std::vector<float> v) {
  attr_slot(n, name, core::AttrType::Floats).floats = std::move(v);
}
void set_attr_strings(core::Node* n, const std::string& name, std::vector<std::string> v) {
  attr_slot(n, name, core::AttrType::Strings).strings = std::move(v);
}

std::optional<size_t> rank_of(const core::Value* v) {
  if (!v) return std::nullopt;
  if (v->constant) return v->constant->rank();
  if (!v->shape) return std::nullopt;
  return v->shape->size();
}

void drop_dead_constants(core::Graph& g) {
  std::vector<core::Node*> dead;
  for (const auto& n : g.nodes()) {
    if (!is_op(n.get(), "Constant")) continue;
    bool used = false;
    for (const core::Value* out : n->outputs) used = used || (out && (!out->uses.empty() || is_graph_output(g, out)));
    if (!used) dead.push_back(n.get());
  }
  for (core::Node* n : dead) g.erase_node(n);
}

}  // namespace hetero::cpu::passes
