#include "core/function_expand.h"

#include <limits>
#include <unordered_map>
#include <unordered_set>

#include <onnx/defs/function.h>
#include <onnx/defs/schema.h>

#include "core/error.h"
#include "core/function_inline.h"
#include "core/onnx_tensor.h"
#include "core/subgraph_sort.h"

namespace hetero::core {

namespace {

std::string normal_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

// One body node, converted and checked, before the graph is touched.
struct PlannedNode {
  std::string op_type, domain, name;
  int64_t opset = 0;
  std::vector<std::string> inputs, outputs;  // body names; "" when omitted
  std::vector<Attribute> attributes;
};

// Hands out names not yet used in `taken` (base, base_2, base_3, ...).
std::string unique_name(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

const onnx::OpSchema* schema_of(const Node& node) {
  if (node.opset < 1 || node.opset > std::numeric_limits<int>::max()) return nullptr;
  return onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(node.opset), node.domain);
}

// The node as ONNX sees it, for context-dependent function builders (which
// look at attributes, present inputs and input types). False when it has an
// attribute with no proto form here (a graph).
bool node_to_proto(const Node& node, onnx::NodeProto& proto, std::vector<onnx::TypeProto>& input_types) {
  proto.set_op_type(node.op_type);
  proto.set_domain(node.domain);
  proto.set_name(node.name);
  for (const Value* v : node.inputs) {
    proto.add_input(v ? v->name : std::string());
    input_types.push_back(v ? type_to_proto(*v) : onnx::TypeProto());
  }
  for (const Value* v : node.outputs) proto.add_output(v ? v->name : std::string());
  for (const Attribute& a : node.attributes)
    if (!attribute_to_proto(a, *proto.add_attribute())) return false;
  return true;
}

}  // namespace

FunctionInliner::FunctionInliner(Graph& graph) : graph_(graph) {
  for (const auto& n : graph.nodes()) node_names_.insert(n->name);
  for (const auto& v : graph.values()) value_names_.insert(v->name);
}

void FunctionInliner::finish() {
  graph_.erase_nodes(replaced_);
  replaced_.clear();
  sort_with_implicit_inputs(graph_);
}

void FunctionInliner::inline_call(Node& node, const onnx::FunctionProto& body,
                                  const std::map<std::string, int64_t>& model_opsets,
                                  const std::map<std::string, onnx::AttributeProto>& defaults) {
  Graph& graph = graph_;
  const std::string what = "function body of " + node.describe();
  std::map<std::string, int64_t> opsets;
  for (const auto& o : body.opset_import()) opsets[normal_domain(o.domain())] = o.version();

  // Phase 1: convert and check everything, graph untouched.
  std::unordered_set<std::string> defined(body.input().begin(), body.input().end());
  std::vector<PlannedNode> plan;
  for (const onnx::NodeProto& bn : body.node()) {
    PlannedNode p;
    p.op_type = bn.op_type();
    p.domain = normal_domain(bn.domain());
    p.name = bn.name().empty() ? bn.op_type() + "_" + std::to_string(plan.size()) : bn.name();
    const std::string where = what + ", node '" + p.name + "' (" + p.op_type + ")";
    if (auto it = opsets.find(p.domain); it != opsets.end()) {
      p.opset = it->second;
    } else if (auto m = model_opsets.find(p.domain); m != model_opsets.end()) {
      p.opset = m->second;
    } else if (p.domain == node.domain) {
      p.opset = node.opset;
    } else {
      fail(HETERO_NOT_SUPPORTED, where + ": domain '" + p.domain + "' is imported by neither the body nor the model");
    }
    for (const std::string& in : bn.input()) {
      if (!in.empty() && !defined.count(in))
        fail(HETERO_INVALID_MODEL, where + ": input '" + in + "' is used before it is defined");
      p.inputs.push_back(in);
    }
    for (const std::string& out : bn.output()) {
      if (!out.empty() && !defined.insert(out).second)
        fail(HETERO_INVALID_MODEL, where + ": '" + out + "' is defined more than once");
      p.outputs.push_back(out);
    }
    for (const onnx::AttributeProto& ap : bn.attribute()) {
      if (ap.ref_attr_name().empty()) {
        p.attributes.push_back(attribute_from_proto(ap, where, nullptr));
        continue;
      }
      // A reference to the calling node's attribute: its value, the schema's
      // default, or nothing (the body op's own default then applies).
      if (const Attribute* a = node.attr(ap.ref_attr_name())) {
        Attribute copy = *a;
        copy.name = ap.name();
        p.attributes.push_back(std::move(copy));
      } else if (auto d = defaults.find(ap.ref_attr_name()); d != defaults.end()) {
        onnx::AttributeProto copy = d->second;
        copy.set_name(ap.name());
        p.attributes.push_back(attribute_from_proto(copy, where, nullptr));
      }
    }
    plan.push_back(std::move(p));
  }
  for (int i = 0; i < body.output_size(); ++i) {
    const size_t k = static_cast<size_t>(i);
    if (k < node.outputs.size() && node.outputs[k] && !defined.count(body.output(i)))
      fail(HETERO_NOT_SUPPORTED, what + ": the body does not compute output '" + body.output(i) + "'");
  }

  // Phase 2: replace the node.
  const std::string prefix = node.name + "/";
  const std::vector<Value*> node_inputs = node.inputs;
  const std::vector<Value*> node_outputs = node.outputs;
  replaced_.insert(&node);

  std::unordered_map<std::string, Value*> values;  // body name → IR value (null: omitted input)
  for (int i = 0; i < body.input_size(); ++i) {
    const size_t k = static_cast<size_t>(i);
    values[body.input(i)] = k < node_inputs.size() ? node_inputs[k] : nullptr;
  }
  // Body outputs land in the node's output values; one that merely passes a
  // body input through gets an Identity node, since a value has one producer.
  std::vector<std::pair<Value*, Value*>> pass_through;
  const std::unordered_set<std::string> formal_inputs(body.input().begin(), body.input().end());
  for (int i = 0; i < body.output_size(); ++i) {
    const size_t k = static_cast<size_t>(i);
    Value* out = k < node_outputs.size() ? node_outputs[k] : nullptr;
    if (!out) continue;
    if (formal_inputs.count(body.output(i))) pass_through.emplace_back(values[body.output(i)], out);
    else values[body.output(i)] = out;
  }
  for (PlannedNode& p : plan) {
    Node* n = graph.add_node(p.op_type, unique_name(node_names_, prefix + p.name));
    n->domain = p.domain;
    n->opset = p.opset;
    n->attributes = std::move(p.attributes);
    for (size_t i = 0; i < p.inputs.size(); ++i)
      graph.set_input(n, i, p.inputs[i].empty() ? nullptr : values.at(p.inputs[i]));
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      Value* v = nullptr;
      if (!p.outputs[i].empty()) {
        auto it = values.find(p.outputs[i]);
        v = it != values.end() ? it->second : graph.add_value(unique_name(value_names_, prefix + p.outputs[i]));
        values[p.outputs[i]] = v;
      }
      graph.set_output(n, i, v);
    }
    if (n->op_type == "Constant" && n->domain.empty() && !n->outputs.empty() && n->outputs[0]) {
      if (auto t = constant_node_value(*n)) {
        n->outputs[0]->dtype = t->dtype();
        n->outputs[0]->constant = std::move(*t);
      }
    }
  }
  for (auto [from, to] : pass_through) {
    Node* n = graph.add_node("Identity", unique_name(node_names_, prefix + "Identity"));
    auto it = model_opsets.find("");
    n->opset = it != model_opsets.end() ? it->second : 1;
    graph.set_input(n, 0, from);
    graph.set_output(n, 0, to);
  }
}

bool has_function_body(const Node& node) {
  const onnx::OpSchema* schema = schema_of(node);
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

namespace {

// expand_function's work, the graph left to `inliner` to finish.
bool expand_into(FunctionInliner& inliner, Node& node, const Model& model) {
  const onnx::OpSchema* schema = schema_of(node);
  if (!schema) return false;
  onnx::FunctionProto built;
  const onnx::FunctionProto* body = schema->HasFunction() ? schema->GetFunction() : nullptr;
  if (!body && schema->HasContextDependentFunction()) {
    onnx::NodeProto proto;
    std::vector<onnx::TypeProto> input_types;
    if (!node_to_proto(node, proto, input_types)) return false;
    try {
      if (schema->BuildContextDependentFunction(onnx::FunctionBodyBuildContextImpl(proto, input_types), built))
        body = &built;
    } catch (const std::exception&) {
      return false;  // builders throw on inputs whose types they cannot work with
    }
  }
  if (!body) return false;
  std::map<std::string, onnx::AttributeProto> defaults;
  for (const auto& [name, attr] : schema->attributes())
    if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED) defaults.emplace(name, attr.default_value);
  try {
    inliner.inline_call(node, *body, model.opsets, defaults);
  } catch (const Failure& e) {
    if (e.status() == HETERO_NOT_SUPPORTED) return false;  // the graph is untouched then
    throw;
  }
  return true;
}

}  // namespace

bool expand_function(Graph& graph, Node& node, const Model& model) {
  FunctionInliner inliner(graph);
  if (!expand_into(inliner, node, model)) return false;
  inliner.finish();
  return true;
}

size_t expand_functions(Graph& graph, const Model& model, const std::function<bool(const Node&)>& wanted) {
  size_t expanded = 0;
  // One round per level of nesting: the nodes a round brings in are looked
  // at by the next.
  for (bool changed = true; changed;) {
    changed = false;
    FunctionInliner inliner(graph);
    const size_t count = graph.nodes().size();
    for (size_t i = 0; i < count; ++i) {
      Node& node = *graph.nodes()[i];
      if (wanted(node) && has_function_body(node) && expand_into(inliner, node, model)) {
        changed = true;
        ++expanded;
      }
    }
    inliner.finish();
  }
  return expanded;
}

}  // namespace hetero::core
