#include "core/graph.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace hetero::core {

std::optional<Shape> Value::static_shape() const {
  if (!shape) return std::nullopt;
  Shape s;
  s.reserve(shape->size());
  for (const Dim& d : *shape) {
    if (!d.known()) return std::nullopt;
    s.push_back(d.size);
  }
  return s;
}

const Attribute* Node::attr(const std::string& attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

namespace {
[[noreturn]] void wrong_type(const Node& node, const std::string& attr_name, const char* expected) {
  fail(HETERO_INVALID_MODEL, node.describe() + ": attribute '" + attr_name + "' is not " + expected);
}
}  // namespace

int64_t Node::attr_int(const std::string& attr_name, int64_t fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type != AttrType::Int) wrong_type(*this, attr_name, "an int");
  return a->i;
}

float Node::attr_float(const std::string& attr_name, float fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::Int) return static_cast<float>(a->i);
  if (a->type != AttrType::Float) wrong_type(*this, attr_name, "a float");
  return a->f;
}

std::string Node::attr_string(const std::string& attr_name, const std::string& fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type != AttrType::String) wrong_type(*this, attr_name, "a string");
  return a->s;
}

std::vector<int64_t> Node::attr_ints(const std::string& attr_name, std::vector<int64_t> fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::Int) return {a->i};
  if (a->type != AttrType::Ints) wrong_type(*this, attr_name, "a list of ints");
  return a->ints;
}

std::vector<float> Node::attr_floats(const std::string& attr_name, std::vector<float> fallback) const {
  const Attribute* a = attr(attr_name);
  if (!a) return fallback;
  if (a->type == AttrType::Float) return {a->f};
  if (a->type != AttrType::Floats) wrong_type(*this, attr_name, "a list of floats");
  return a->floats;
}

std::string Node::describe() const { return "node '" + name + "' (" + op_type + ")"; }

Value* Graph::add_value(std::string value_name) {
  auto v = std::make_unique<Value>();
  v->name = std::move(value_name);
  v->owner = this;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Node* Graph::add_node(std::string op_type, std::string node_name) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->name = std::move(node_name);
  n->index = nodes_.size();
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::set_input(Node* node, size_t index, Value* value) {
  if (node->inputs.size() <= index) node->inputs.resize(index + 1, nullptr);
  node->inputs[index] = value;
  if (value) value->uses.push_back({node, index});
}

void Graph::set_output(Node* node, size_t index, Value* value) {
  if (node->outputs.size() <= index) node->outputs.resize(index + 1, nullptr);
  node->outputs[index] = value;
  if (value) {
    value->producer = node;
    value->producer_output = index;
  }
}

void Graph::erase_node(Node* node) {
  for (Value* in : node->inputs) {
    if (!in) continue;
    std::erase_if(in->uses, [&](const Use& u) { return u.node == node; });
  }
  for (Value* out : node->outputs)
    if (out && out->producer == node) out->producer = nullptr;
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return n.get() == node; });
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->index = i;
}

void Graph::erase_nodes(const std::unordered_set<const Node*>& doomed) {
  if (doomed.empty()) return;
  for (const Node* node : doomed) {
    for (Value* in : node->inputs) {
      if (!in) continue;
      std::erase_if(in->uses, [&](const Use& u) { return u.node == node; });
    }
    for (Value* out : node->outputs)
      if (out && out->producer == node) out->producer = nullptr;
  }
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return doomed.count(n.get()) > 0; });
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->index = i;
}

Value* Graph::find_value(const std::string& value_name) const {
  for (const auto& v : values_)
    if (v->name == value_name) return v.get();
  return nullptr;
}

Node* Graph::find_node(const std::string& node_name) const {
  for (const auto& n : nodes_)
    if (n->name == node_name) return n.get();
  return nullptr;
}

void Graph::sort_topologically() {
  // Kahn's algorithm over producer→consumer edges inside this graph; a stable
  // choice (lowest current index first) keeps an already sorted graph as is.
  // A node consumes what its subgraphs read of this graph too (an If whose
  // branches read another If's output, as Silero VAD's exports have): those
  // reads are edges as much as its inputs are.
  const size_t n = nodes_.size();
  for (size_t i = 0; i < n; ++i) nodes_[i]->index = i;
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<const Value*> reads;
  for (const auto& node : nodes_) {
    reads.clear();
    values_read(*node, *this, reads);
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (const Value* in : reads) {
      if (!in->producer) continue;
      consumers[in->producer->index].push_back(node->index);
      ++pending[node->index];
    }
  }
  std::vector<size_t> ready;
  for (size_t i = n; i-- > 0;)
    if (pending[i] == 0) ready.push_back(i);
  // `ready` is kept sorted descending so that back() is the lowest index.
  std::vector<std::unique_ptr<Node>> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    for (size_t c : consumers[i]) {
      if (--pending[c] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), c, std::greater<size_t>()), c);
      }
    }
    order.push_back(std::move(nodes_[i]));
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (nodes_[i] && pending[i] != 0)
        fail(HETERO_INVALID_MODEL, "graph '" + name + "' has a cycle through " + nodes_[i]->describe());
  }
  nodes_ = std::move(order);
  for (size_t i = 0; i < n; ++i) nodes_[i]->index = i;
}

namespace {
void clone_into(const Graph& src, Graph& dst, ValueMap& map);
}  // namespace

void values_read(const Node& node, const Graph& scope, std::vector<const Value*>& out) {
  for (const Value* v : node.inputs)
    if (v && v->owner == &scope) out.push_back(v);
  for (const Attribute& a : node.attributes) {
    auto scan = [&](const Graph& body) {
      for (const auto& n : body.nodes()) values_read(*n, scope, out);
    };
    if (a.g) scan(*a.g);
    for (const auto& g : a.graphs) scan(*g);
  }
}

Value* copy_value(const Value& v, Graph& dst) {
  Value* c = dst.add_value(v.name);
  c->dtype = v.dtype;
  c->shape = v.shape;
  c->constant = v.constant;
  return c;
}

Node* copy_node(const Node& n, Graph& dst, ValueMap& map) {
  auto lookup = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    return it == map.end() ? const_cast<Value*>(v) : it->second;
  };
  Node* c = dst.add_node(n.op_type, n.name);
  c->domain = n.domain;
  c->opset = n.opset;
  c->attributes = n.attributes;
  for (Attribute& a : c->attributes) {
    auto copy_graph = [&](const std::shared_ptr<Graph>& g) {
      auto sub = std::make_shared<Graph>();
      sub->parent = &dst;
      clone_into(*g, *sub, map);
      return sub;
    };
    if (a.g) a.g = copy_graph(a.g);
    for (auto& g : a.graphs) g = copy_graph(g);
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) dst.set_input(c, i, lookup(n.inputs[i]));
  for (size_t i = 0; i < n.outputs.size(); ++i) dst.set_output(c, i, lookup(n.outputs[i]));
  return c;
}

namespace {

// Deep copy of `src` into `dst`; `map` translates values of src (and, for
// subgraphs, of src's enclosing graphs) to their copies.
void clone_into(const Graph& src, Graph& dst, ValueMap& map) {
  dst.name = src.name;
  for (const auto& v : src.values()) map[v.get()] = copy_value(*v, dst);
  for (const auto& n : src.nodes()) copy_node(*n, dst, map);
  auto lookup = [&](const Value* v) {
    auto it = map.find(v);
    return it == map.end() ? const_cast<Value*>(v) : it->second;
  };
  for (const Value* v : src.inputs) dst.inputs.push_back(lookup(v));
  for (const Value* v : src.outputs) dst.outputs.push_back(lookup(v));
}

}  // namespace

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->parent = parent;
  ValueMap map;
  clone_into(*this, *g, map);
  return g;
}

int64_t Model::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? std::string() : domain);
  return it == opsets.end() ? 0 : it->second;
}

std::unique_ptr<Model> Model::clone() const {
  auto m = std::make_unique<Model>();
  ValueMap map;
  clone_into(graph, m->graph, map);
  m->ir_version = ir_version;
  m->opsets = opsets;
  m->producer_name = producer_name;
  m->source = source;
  m->source_sha256 = source_sha256;
  m->mappings = mappings;
  return m;
}

}  // namespace hetero::core
