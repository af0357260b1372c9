#include "core/onnx_graph.h"

#include <unordered_set>

#include <onnx/defs/schema.h>

#include "core/error.h"
#include "core/onnx_tensor.h"
#include "core/subgraph_sort.h"

namespace hetero::core {

namespace {

std::string domain_label(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

std::vector<Dim> dims_of(const Shape& shape) {
  std::vector<Dim> dims(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) dims[i].size = shape[i];
  return dims;
}

}  // namespace

bool onnx_domain_range(const std::string& domain, int64_t& min_version, int64_t& max_version) {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(domain);
  if (it == map.end()) return false;
  min_version = it->second.first;
  max_version = it->second.second;
  return true;
}

void check_known_operators(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    int64_t lo = 0, hi = 0;
    if (onnx_domain_range(n->domain, lo, hi) && n->opset >= lo && n->opset <= hi &&
        !onnx::OpSchemaRegistry::Schema(n->op_type, static_cast<int>(n->opset), n->domain))
      fail(HETERO_INVALID_MODEL, n->describe() + ": domain '" + domain_label(n->domain) + "' has no operator '" +
                                     n->op_type + "' at opset " + std::to_string(n->opset));
    for (const Attribute& a : n->attributes) {
      if (a.g) check_known_operators(*a.g);
      for (const auto& g : a.graphs) check_known_operators(*g);
    }
  }
}

std::string GraphBuilder::where(const Graph& graph) const {
  return graph.parent ? " of subgraph '" + graph.name + "'" : "";
}

Value* GraphBuilder::resolve(const Graph& graph, const std::string& name) const {
  // Lexical scoping: a subgraph sees its own names first, then its parents'.
  for (const Graph* g = &graph; g; g = g->parent) {
    auto scope = scopes_.find(g);
    if (scope == scopes_.end()) continue;
    auto it = scope->second.find(name);
    if (it != scope->second.end()) return it->second;
  }
  return nullptr;
}

void GraphBuilder::build_main(onnx::GraphProto& proto, Graph& graph, const MainInitializer& initializer) {
  build(proto, graph, nullptr, &initializer);
}

void GraphBuilder::build(onnx::GraphProto& proto, Graph& graph, Graph* parent, const MainInitializer* initializer) {
  graph.name = proto.name();
  graph.parent = parent;
  Link& link = links_.emplace_back(Link{&graph, &proto, {}});
  auto& scope = scopes_[&graph];
  const std::string in_graph = where(graph);

  auto define = [&](const std::string& name, const std::string& what) {
    if (name.empty()) fail(HETERO_INVALID_MODEL, "an " + what + in_graph + " has an empty name");
    if (scope.count(name))
      fail(HETERO_INVALID_MODEL, what + " '" + name + "'" + in_graph + " is defined more than once (names are unique in a graph)");
    Value* v = graph.add_value(name);
    scope.emplace(name, v);
    return v;
  };

  if (proto.sparse_initializer_size() > 0)
    fail(HETERO_NOT_SUPPORTED, "sparse initializer '" + proto.sparse_initializer(0).values().name() + "'" + in_graph +
                                   " is not supported");

  for (int i = 0; i < proto.initializer_size(); ++i) {
    const onnx::TensorProto& tp = proto.initializer(i);
    const std::string what = "initializer '" + tp.name() + "'" + in_graph;
    Value* v = define(tp.name(), "initializer");
    Tensor t = initializer ? (*initializer)(i, tp, what) : tensor_from_proto(tp, what);
    v->dtype = t.dtype();
    v->shape = dims_of(t.shape());
    v->constant = std::move(t);
  }

  for (const onnx::ValueInfoProto& vi : proto.input()) {
    // An input that is also an initializer is an overridable default: heterod
    // treats it as the constant it is.
    auto known = scope.find(vi.name());
    if (known != scope.end() && known->second->is_constant()) continue;
    if (!parent && vi.has_type() && !vi.type().has_tensor_type())
      fail(HETERO_NOT_SUPPORTED, "graph input '" + vi.name() + "' is not a tensor; heterod supports tensor inputs only");
    Value* v = define(vi.name(), "input");
    v->dtype = dtype_from_type(vi.type());
    v->shape = dims_from_type(vi.type());
    graph.inputs.push_back(v);
  }

  // Pass 1: nodes, unique names and output values (a node may use values of
  // nodes that follow it when the model is not sorted; sort() fixes that).
  std::unordered_set<std::string> given_names;
  for (const onnx::NodeProto& np : proto.node()) given_names.insert(np.name());
  std::unordered_set<std::string> used_names;
  std::vector<std::pair<Node*, onnx::NodeProto*>> nodes;
  for (int i = 0; i < proto.node_size(); ++i) {
    onnx::NodeProto& np = *proto.mutable_node(i);
    if (np.op_type().empty())
      fail(HETERO_INVALID_MODEL, "node " + std::to_string(i) + " ('" + np.name() + "')" + in_graph + " has no op_type");
    std::string name = np.name();
    if (name.empty() || used_names.count(name)) {
      const std::string base = np.op_type() + "_" + std::to_string(i);
      name = base;
      for (int k = 2; given_names.count(name) || used_names.count(name); ++k) name = base + "_" + std::to_string(k);
      // The proto gets the same name, so onnx's checker names the node as we do.
      np.set_name(name);
    }
    used_names.insert(name);
    Node* n = graph.add_node(np.op_type(), name);
    n->domain = np.domain() == "ai.onnx" ? std::string() : np.domain();
    auto opset = opsets_.find(n->domain);
    if (opset == opsets_.end())
      fail(HETERO_INVALID_MODEL, n->describe() + in_graph + ": domain '" + domain_label(n->domain) +
                                     "' is not imported by the model (opset_import)");
    int64_t lo = 0, hi = 0;
    if (!onnx_domain_range(n->domain, lo, hi) && !custom_domains_.count(n->domain))
      fail(HETERO_INVALID_MODEL, n->describe() + in_graph + ": domain '" + n->domain +
                                     "' is unknown (heterod runs ONNX's domains and functions the model defines)");
    n->opset = opset->second;
    for (int j = 0; j < np.output_size(); ++j) {
      const std::string& out = np.output(j);
      graph.set_output(n, static_cast<size_t>(j), out.empty() ? nullptr : define(out, n->describe() + ": output"));
    }
    link.node_protos.emplace(n, &np);
    nodes.emplace_back(n, &np);
  }

  // Pass 2: inputs and attributes, now that every name of this graph exists.
  for (auto& [n, np] : nodes) {
    for (int j = 0; j < np->input_size(); ++j) {
      const std::string& in = np->input(j);
      Value* v = nullptr;
      if (!in.empty()) {
        v = resolve(graph, in);
        if (!v)
          fail(HETERO_INVALID_MODEL, n->describe() + in_graph + ": input '" + in +
                                         "' is not produced by any node, input or initializer");
      }
      graph.set_input(n, static_cast<size_t>(j), v);
    }
    const GraphConverter subgraph = [&, n = n](const onnx::GraphProto& sub, const std::string& attr_name) {
      auto g = std::make_shared<Graph>();
      // The GraphProto belongs to our mutable ModelProto (reached through a
      // const accessor): sort() reorders it and shape inference fills it in.
      build(const_cast<onnx::GraphProto&>(sub), *g, &graph, nullptr);
      if (g->name.empty()) g->name = n->name + "/" + attr_name;
      return g;
    };
    for (const onnx::AttributeProto& ap : np->attribute())
      n->attributes.push_back(attribute_from_proto(ap, n->describe() + in_graph, subgraph));
    if (n->op_type == "Constant" && n->domain.empty() && !n->outputs.empty() && n->outputs[0]) {
      if (auto t = constant_node_value(*n)) {
        Value* out = n->outputs[0];
        out->dtype = t->dtype();
        out->shape = dims_of(t->shape());
        out->constant = std::move(*t);
      }
    }
  }

  for (const onnx::ValueInfoProto& vi : proto.output()) {
    Value* v = resolve(graph, vi.name());
    if (!v)
      fail(HETERO_INVALID_MODEL, "graph output '" + vi.name() + "'" + in_graph +
                                     " is not produced by any node, input or initializer");
    if (!parent && vi.has_type() && !vi.type().has_tensor_type())
      fail(HETERO_NOT_SUPPORTED, "graph output '" + vi.name() + "' is not a tensor; heterod supports tensor outputs only");
    graph.outputs.push_back(v);
  }
}

void GraphBuilder::sort() {
  for (Link& link : links_) {
    sort_with_implicit_inputs(*link.graph);
    // Reorder the proto to the IR's order. SwapElements exchanges pointers, so
    // NodeProtos (and the subgraphs inside them) keep their addresses.
    auto& protos = *link.proto->mutable_node();
    std::unordered_map<const onnx::NodeProto*, int> position;
    for (int i = 0; i < protos.size(); ++i) position[&protos.Get(i)] = i;
    const auto& nodes = link.graph->nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const onnx::NodeProto* want = link.node_protos.at(nodes[i].get());
      const int from = position.at(want);
      const int to = static_cast<int>(i);
      if (from == to) continue;
      position[&protos.Get(to)] = from;
      position[want] = to;
      protos.SwapElements(from, to);
    }
  }
}

void GraphBuilder::apply_types() {
  for (Link& link : links_) {
    auto& scope = scopes_.at(link.graph);
    auto apply = [&](const onnx::ValueInfoProto& vi) {
      auto it = scope.find(vi.name());
      if (it == scope.end() || it->second->is_constant()) return;  // constants know their type
      Value* v = it->second;
      const DType dtype = dtype_from_type(vi.type());
      if (dtype != DType::Undefined) v->dtype = dtype;
      auto dims = dims_from_type(vi.type());
      if (!dims) return;
      // Keep a size we knew where the proto only has a symbol (or nothing).
      if (v->shape && v->shape->size() == dims->size()) {
        for (size_t i = 0; i < dims->size(); ++i)
          if (!(*dims)[i].known() && (*v->shape)[i].known()) (*dims)[i] = (*v->shape)[i];
      }
      v->shape = std::move(dims);
    };
    for (const auto& vi : link.proto->input()) apply(vi);
    for (const auto& vi : link.proto->value_info()) apply(vi);
    for (const auto& vi : link.proto->output()) apply(vi);
  }
}

}  // namespace hetero::core
