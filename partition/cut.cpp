#include "partition/cut.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "partition/graph_dag.h"

namespace hetero::partition {

namespace {

constexpr size_t kNoPart = static_cast<size_t>(-1);

}  // namespace

CutModel cut_model(const core::Model& model, const std::vector<Part>& parts) {
  const core::Graph& graph = model.graph;
  const size_t n = graph.nodes().size();

  std::vector<size_t> part_of(n, kNoPart);
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t i : parts[p].nodes) {
      if (i >= n) fail(HETERO_INVALID_ARGUMENT, "cut: node index " + std::to_string(i) + " is out of range");
      if (part_of[i] != kNoPart)
        fail(HETERO_INVALID_ARGUMENT, "cut: " + graph.nodes()[i]->describe() + " is in two subgraphs");
      part_of[i] = p;
    }
  }
  for (const auto& node : graph.nodes())
    if (part_of[node->index] == kNoPart && !is_constant_node(*node))
      fail(HETERO_INVALID_ARGUMENT, "cut: " + node->describe() + " is in no subgraph");

  // Which values each part reads, in first-use order.
  std::vector<std::vector<const core::Value*>> reads(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    std::vector<size_t> nodes = parts[p].nodes;
    std::sort(nodes.begin(), nodes.end());
    std::vector<const core::Value*> all;
    for (size_t i : nodes) core::values_read(*graph.nodes()[i], graph, all);
    std::set<const core::Value*> seen;
    for (const core::Value* v : all)
      if (seen.insert(v).second) reads[p].push_back(v);
  }
  auto producer_part = [&](const core::Value* v) {
    return v->producer && !is_constant_node(*v->producer) ? part_of[v->producer->index] : kNoPart;
  };

  // Execution order: parts as a DAG of producer → consumer, Kahn's algorithm
  // with the lowest ready part first (deterministic). A plan may have as many
  // parts as nodes, so nothing here is quadratic in them.
  std::vector<std::set<size_t>> deps(parts.size());
  for (size_t p = 0; p < parts.size(); ++p)
    for (const core::Value* v : reads[p])
      if (size_t q = producer_part(v); q != kNoPart && q != p) deps[p].insert(q);
  std::vector<std::vector<size_t>> dependents(parts.size());
  std::vector<size_t> waiting(parts.size());
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t q : deps[p]) dependents[q].push_back(p);
    waiting[p] = deps[p].size();
    if (waiting[p] == 0) ready.push(p);
  }
  std::vector<size_t> order, position(parts.size(), kNoPart);
  while (!ready.empty()) {
    const size_t next = ready.top();
    ready.pop();
    position[next] = order.size();
    order.push_back(next);
    for (size_t p : dependents[next])
      if (--waiting[p] == 0) ready.push(p);
  }
  if (order.size() < parts.size()) fail(HETERO_INTERNAL, "cut: the subgraphs depend on each other in a cycle");

  // Each part's outputs: values it produces that another part or the model's
  // outputs read, and each such value's index among its part's outputs.
  std::vector<std::vector<const core::Value*>> outputs(parts.size());
  std::unordered_map<const core::Value*, size_t> output_index;
  auto add_output = [&](size_t p, const core::Value* v) {
    if (output_index.emplace(v, outputs[p].size()).second) outputs[p].push_back(v);
  };
  for (size_t p : order)
    for (const core::Value* v : reads[p])
      if (size_t q = producer_part(v); q != kNoPart && q != p) add_output(q, v);
  for (const core::Value* v : graph.outputs)
    if (size_t q = producer_part(v); q != kNoPart) add_output(q, v);

  // Where a value comes from at run time: an earlier part's output, a model
  // input, or (a model output that is an initializer) a constant.
  std::unordered_map<const core::Value*, size_t> input_index;
  for (size_t i = 0; i < graph.inputs.size(); ++i) input_index.emplace(graph.inputs[i], i);
  auto source_of = [&](const core::Value* v) {
    Source src;
    if (const size_t q = producer_part(v); q != kNoPart) {
      src.kind = Source::Kind::PartOutput;
      src.part = position[q];
      src.index = output_index.at(v);
    } else if (v->is_constant()) {
      src.kind = Source::Kind::Constant;
      src.constant = *v->constant;
    } else {
      const auto input = input_index.find(v);
      if (input == input_index.end())
        fail(HETERO_INTERNAL, "cut: value '" + v->name + "' is neither produced by a node nor a model input");
      src.kind = Source::Kind::GraphInput;
      src.index = input->second;
    }
    return src;
  };

  CutModel cut;
  for (size_t p : order) {
    Submodel sub;
    sub.device = parts[p].device;
    sub.model = std::make_unique<core::Model>();
    core::Model& m = *sub.model;
    m.ir_version = model.ir_version;
    m.opsets = model.opsets;
    m.producer_name = model.producer_name;
    m.source = model.source + "#part" + std::to_string(cut.parts.size());
    m.mappings = model.mappings;
    m.graph.name = graph.name + "/part" + std::to_string(cut.parts.size());

    core::ValueMap map;
    std::vector<const core::Node*> constant_nodes;
    for (const core::Value* v : reads[p]) {
      if (producer_part(v) == p) continue;
      if (v->producer && is_constant_node(*v->producer)) {
        constant_nodes.push_back(v->producer);
        continue;
      }
      core::Value* copy = core::copy_value(*v, m.graph);
      map[v] = copy;
      if (v->is_constant() && !v->producer) continue;  // an initializer: travels as a constant
      m.graph.inputs.push_back(copy);
      sub.inputs.push_back(source_of(v));
      if (sub.inputs.back().kind == Source::Kind::PartOutput) ++cut.transfers;
    }
    // Copy nodes in the model's order so the submodel is sorted already.
    std::vector<size_t> nodes = parts[p].nodes;
    for (const core::Node* c : constant_nodes) nodes.push_back(c->index);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (size_t i : nodes) {
      const core::Node& node = *graph.nodes()[i];
      for (const core::Value* out : node.outputs)
        if (out && !map.count(out)) map[out] = core::copy_value(*out, m.graph);
      core::copy_node(node, m.graph, map);
      if (!is_constant_node(node)) {
        sub.nodes.push_back(i);
        sub.node_names.push_back(node.name);
      }
    }
    for (const core::Value* v : outputs[p]) m.graph.outputs.push_back(map.at(v));
    cut.parts.push_back(std::move(sub));
  }

  for (const core::Value* v : graph.outputs) cut.outputs.push_back(source_of(v));
  return cut;
}

}  // namespace hetero::partition
