#include "partition/plan_format.h"

#include <cstdio>

#include "core/json.h"
#include "partition/graph_dag.h"

namespace hetero::partition {

namespace {

// A DOT quoted string: quotes and backslashes escaped, a newline as \n (a
// line break in a label), other control characters as \u escapes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

template <typename List, typename Name>
core::json::Value json_names(const List& items, Name name) {
  core::json::Value list = core::json::array();
  for (const auto& item : items) core::json::append(list.get(), core::json::string(name(item)));
  return list;
}

std::string value_name(const core::Value* v) { return v->name; }
std::string as_is(const std::string& s) { return s; }

// Fill colours, one per device in priority order (Graphviz names).
constexpr const char* kColours[] = {"lightskyblue", "palegreen", "lightsalmon", "khaki", "plum", "lightgrey"};

}  // namespace

std::string plan_text(const Plan& plan) {
  const auto& devices = plan.config.policy.devices;
  std::string out;
  for (size_t p = 0; p < plan.cut.parts.size(); ++p) {
    const Submodel& sub = plan.cut.parts[p];
    out += "subgraph " + std::to_string(p) + " on " + devices[sub.device] + ": " +
           std::to_string(sub.node_names.size()) + " nodes\n";
    std::string nodes;
    for (const std::string& n : sub.node_names) nodes += (nodes.empty() ? "" : " ") + n;
    out += "  nodes:   " + nodes + "\n";
    std::string ins, outs;
    for (const core::Value* v : sub.model->graph.inputs) ins += (ins.empty() ? "" : " ") + v->name;
    for (const core::Value* v : sub.model->graph.outputs) outs += (outs.empty() ? "" : " ") + v->name;
    out += "  inputs:  " + ins + "\n  outputs: " + outs + "\n";
  }
  out += std::to_string(plan.cut.parts.size()) + " subgraphs, " + std::to_string(plan.cut.transfers) +
         " tensor transfers between them\n";
  for (const std::string& w : plan.affinity.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string plan_json(const Plan& plan, const std::string& device) {
  namespace js = core::json;
  const auto& devices = plan.config.policy.devices;
  const js::Value doc = js::object();
  js::set(doc.get(), "device", js::string(device));
  js::set(doc.get(), "devices", json_names(devices, as_is));
  js::Value subgraphs = js::array();
  for (const Submodel& sub : plan.cut.parts) {
    js::Value entry = js::object();
    js::set(entry.get(), "device", js::string(devices[sub.device]));
    js::set(entry.get(), "nodes", json_names(sub.node_names, as_is));
    js::set(entry.get(), "inputs", json_names(sub.model->graph.inputs, value_name));
    js::set(entry.get(), "outputs", json_names(sub.model->graph.outputs, value_name));
    js::append(subgraphs.get(), std::move(entry));
  }
  js::set(doc.get(), "subgraphs", std::move(subgraphs));
  js::set(doc.get(), "transfers", js::integer(static_cast<int64_t>(plan.cut.transfers)));
  js::set(doc.get(), "warnings", json_names(plan.affinity.warnings, as_is));
  return js::dump(doc.get());
}

std::string plan_dot(const Plan& plan, const core::Model& model) {
  const core::Graph& graph = model.graph;
  const auto& devices = plan.config.policy.devices;
  std::vector<size_t> part_of(graph.nodes().size());
  for (size_t p = 0; p < plan.cut.parts.size(); ++p)
    for (size_t i : plan.cut.parts[p].nodes) part_of[i] = p;
  // (Built by appending: GCC 12 warns, wrongly, on "n" + std::to_string().)
  auto node_id = [](const core::Node& n) {
    std::string id = "n";
    return id += std::to_string(n.index);
  };
  auto colour = [&](size_t device) { return std::string(kColours[device % std::size(kColours)]); };

  std::string out = "digraph " + quoted(graph.name.empty() ? "model" : graph.name) + " {\n";
  out += "  rankdir=TB;\n  graph [fontname=\"sans\"];\n  node [shape=box, style=\"rounded,filled\", fontname=\"sans\"];\n";
  out += "  edge [fontname=\"sans\", fontsize=9];\n";
  for (size_t p = 0; p < plan.cut.parts.size(); ++p) {
    const Submodel& sub = plan.cut.parts[p];
    out += "  subgraph cluster_" + std::to_string(p) + " {\n    label=" +
           quoted(std::to_string(p) + ": " + devices[sub.device]) + "; style=dashed;\n";
    for (size_t i : sub.nodes) {
      const core::Node& n = *graph.nodes()[i];
      out += "    " + node_id(n) + " [label=" + quoted(n.name + "\n" + n.op_type) +
             ", fillcolor=" + colour(static_cast<size_t>(sub.device)) + "];\n";
    }
    out += "  }\n";
  }
  for (const core::Value* v : graph.inputs)
    out += "  " + quoted("in:" + v->name) + " [label=" + quoted(v->name) + ", shape=ellipse, style=solid];\n";
  for (const core::Value* v : graph.outputs)
    out += "  " + quoted("out:" + v->name) + " [label=" + quoted(v->name) + ", shape=ellipse, style=solid];\n";

  std::vector<const core::Value*> reads;
  for (const auto& node : graph.nodes()) {
    if (is_constant_node(*node)) continue;
    reads.clear();
    core::values_read(*node, graph, reads);
    for (const core::Value* v : reads) {
      if (v->producer && is_constant_node(*v->producer)) continue;
      if (!v->producer && v->is_constant()) continue;  // an initializer
      std::string from;
      bool crosses = false;
      if (v->producer) {
        from = node_id(*v->producer);
        crosses = part_of[v->producer->index] != part_of[node->index];
      } else {
        from = quoted("in:" + v->name);
      }
      out += "  " + from + " -> " + node_id(*node) + (crosses ? " [label=" + quoted(v->name) + ", penwidth=2]" : "") +
             ";\n";
    }
  }
  for (const core::Value* v : graph.outputs)
    if (v->producer && !is_constant_node(*v->producer))
      out += "  " + node_id(*v->producer) + " -> " + quoted("out:" + v->name) + ";\n";
  out += "}\n";
  return out;
}

}  // namespace hetero::partition
