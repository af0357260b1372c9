// Builds IR graphs (and their subgraphs) from GraphProtos and keeps each IR
// graph linked to its proto, so that the protos can be put in the IR's
// topological order for onnx's checker and shape inference, and the inferred
// types copied back afterwards. Internal to core/onnx_import.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph.h"

namespace hetero::core {

class GraphBuilder {
 public:
  // Converts initializer `index` of the main graph (the importer knows where its
  // data lives: the mapped file, an external file or the proto).
  using MainInitializer = std::function<Tensor(int index, const onnx::TensorProto& proto, const std::string& what)>;

  // `opsets`: the model's imports ("" for ai.onnx). `custom_domains`: domains
  // outside ONNX's registry that the model defines functions for.
  GraphBuilder(const std::map<std::string, int64_t>& opsets, std::set<std::string> custom_domains)
      : opsets_(opsets), custom_domains_(std::move(custom_domains)) {}

  // Builds the main graph. `proto` stays referenced (and is reordered by
  // sort()), so it must outlive the builder.
  void build_main(onnx::GraphProto& proto, Graph& graph, const MainInitializer& initializer);

  // Sorts every graph topologically, counting the outer values subgraphs use
  // (INVALID_MODEL naming a node on a cycle), and reorders the protos' nodes
  // the same way.
  void sort();

  // Copies element types and shapes from the protos (inputs, outputs,
  // value_info, as shape inference left them) to the IR values.
  void apply_types();

 private:
  struct Link {
    Graph* graph;
    onnx::GraphProto* proto;
    std::unordered_map<const Node*, const onnx::NodeProto*> node_protos;
  };

  void build(onnx::GraphProto& proto, Graph& graph, Graph* parent, const MainInitializer* initializer);
  Value* resolve(const Graph& graph, const std::string& name) const;
  std::string where(const Graph& graph) const;

  const std::map<std::string, int64_t>& opsets_;
  std::set<std::string> custom_domains_;
  std::unordered_map<const Graph*, std::unordered_map<std::string, Value*>> scopes_;
  std::deque<Link> links_;  // a deque: build() recurses while holding a Link&
};

// The ONNX domains onnx's schema registry knows, with their opset ranges.
bool onnx_domain_range(const std::string& domain, int64_t& min_version, int64_t& max_version);

// Fails with INVALID_MODEL naming the first node (subgraphs included) of an
// ONNX domain that has no operator of its type at the node's opset.
void check_known_operators(const Graph& graph);

}  // namespace hetero::core
