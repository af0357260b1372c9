#include "drivers/gpu/host_conditions.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "drivers/gpu/const_fold.h"

namespace hetero::gpu {

bool is_condition_input(const core::Value& v, const core::Graph& graph) {
  if (std::find(graph.inputs.begin(), graph.inputs.end(), &v) == graph.inputs.end()) return false;
  switch (v.dtype) {
    case core::DType::I64: case core::DType::I32: case core::DType::I16: case core::DType::I8:
    case core::DType::U64: case core::DType::U32: case core::DType::U16: case core::DType::U8:
    case core::DType::Bool: break;
    default: return false;
  }
  const auto shape = v.static_shape();
  return shape && core::shape_numel(*shape) <= kMaxConditionInputElements;
}

std::optional<HostCondition> host_condition(const core::Node& node, const core::Graph& graph,
                                            const TensorLookup& constant_of) {
  const core::Value* cond = node.input(0);
  if (!cond) return std::nullopt;
  // Post-order walk from the condition: each value is a constant, an input
  // the host holds, or the output of a node the folder knows whose inputs
  // are all of these. `order` lists the nodes so that each comes after
  // those it reads.
  std::vector<const core::Node*> order;
  std::vector<const core::Value*> inputs, constants;
  std::unordered_set<const core::Value*> seen;
  bool ok = true;
  std::function<void(const core::Value*)> visit = [&](const core::Value* v) {
    if (!ok || !v || !seen.insert(v).second) return;
    if (constant_of(v)) {
      constants.push_back(v);
    } else if (!v->producer) {
      ok = is_condition_input(*v, graph);
      if (ok) inputs.push_back(v);
    } else {
      const core::Node& p = *v->producer;
      ok = p.domain.empty() && is_foldable_op(p.op_type) && p.op_type != "Shape" && p.op_type != "Size" &&
           p.outputs.size() == 1 && seen.size() <= 256;
      for (const core::Value* in : p.inputs) visit(in);
      if (ok) order.push_back(&p);
    }
  };
  visit(cond);
  if (!ok || inputs.empty()) return std::nullopt;

  auto cone = std::make_shared<core::Model>();
  cone->ir_version = 8;
  for (const core::Node* n : order) cone->opsets[n->domain] = n->opset;
  cone->source = "the condition of If '" + node.name + "'";
  core::Graph& g = cone->graph;
  core::ValueMap map;
  for (const core::Value* v : inputs) {
    map[v] = core::copy_value(*v, g);
    g.inputs.push_back(map[v]);
  }
  for (const core::Value* v : constants) {
    core::Value* c = core::copy_value(*v, g);
    c->constant = *constant_of(v);
    c->dtype = c->constant->dtype();
    c->shape.emplace();
    for (int64_t d : c->constant->shape()) c->shape->push_back({d, {}});
    map[v] = c;
  }
  for (const core::Node* n : order) {
    for (const core::Value* o : n->outputs)
      if (o) map[o] = core::copy_value(*o, g);
    core::copy_node(*n, g, map);
  }
  g.outputs.push_back(map.at(cond));
  return HostCondition{node.name, std::move(cone)};
}

bool HostCondition::evaluate(const std::vector<driver::Port>& ports, const std::vector<core::Tensor>& inputs) const {
  std::unordered_map<const core::Value*, core::Tensor> values;
  for (const core::Value* v : cone->graph.inputs) {
    size_t k = 0;
    while (k < ports.size() && ports[k].name != v->name) ++k;
    if (k == ports.size() || k >= inputs.size())
      fail(HETERO_INTERNAL, "the condition of If '" + node + "' reads input '" + v->name + "', which is not given");
    values[v] = inputs[k];
  }
  auto constant_of = [&](const core::Value* v) -> const core::Tensor* {
    if (v->constant) return &*v->constant;
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second;
  };
  auto shape_of = [&](const core::Value* v) -> const core::Shape* {
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second.shape();
  };
  for (const auto& n : cone->graph.nodes()) {
    auto out = fold_node(*n, constant_of, shape_of);
    if (!out)
      fail(HETERO_INVALID_ARGUMENT, "the condition of If '" + node + "' cannot be worked out from these inputs (" +
                                        n->describe() + " does not fold)");
    values[n->outputs[0]] = std::move(*out);
  }
  const core::Tensor* c = constant_of(cone->graph.outputs[0]);
  if (!c || c->numel() != 1)
    fail(HETERO_INVALID_ARGUMENT, "the condition of If '" + node + "' holds " + std::to_string(c ? c->numel() : 0) +
                                      " values for these inputs, not one");
  return c->as_double(0) != 0;
}

}  // namespace hetero::gpu
