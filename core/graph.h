// heterod's model IR: a graph of nodes and values, built from ONNX by
// core/onnx_import and consumed by partition/ and the drivers.
//
// A Graph owns its nodes and values. A Value has at most one producer (a node
// output; none for graph inputs and initializers) and any number of uses. Node
// inputs may be null where ONNX leaves an optional input empty. Subgraphs
// (If/Loop/Scan bodies) are graphs held by attributes; a subgraph node may use
// a Value of an enclosing graph (outer-scope reference).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/dtype.h"
#include "core/sha256.h"
#include "core/tensor.h"

namespace hetero::core {

class Graph;
class Node;

// One dimension of a value's static shape: a known size, or unknown (with the
// symbolic name ONNX gave it, if any).
struct Dim {
  int64_t size = -1;  // -1 when unknown
  std::string param;  // "batch", "p2o.DynamicDimension.0", ...
  bool known() const noexcept { return size >= 0; }
};

struct Use {
  Node* node;
  size_t input_index;
};

class Value {
 public:
  std::string name;
  DType dtype = DType::Undefined;
  // Static shape as far as it is known; nullopt when even the rank is unknown.
  std::optional<std::vector<Dim>> shape;

  Node* producer = nullptr;  // null for graph inputs and initializers
  size_t producer_output = 0;
  std::vector<Use> uses;
  // Set for initializers (and for values a pass folded to a constant).
  std::optional<Tensor> constant;
  Graph* owner = nullptr;

  bool is_constant() const noexcept { return constant.has_value(); }
  // The shape if every dimension is known.
  std::optional<Shape> static_shape() const;
};

enum class AttrType { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs };

struct Attribute {
  std::string name;
  AttrType type = AttrType::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

class Node {
 public:
  std::string name;  // unique within its graph (import names unnamed nodes)
  std::string op_type;
  std::string domain;     // "" for the default ai.onnx domain
  int64_t opset = 0;      // version of `domain` the model imports
  std::vector<Value*> inputs;   // null for an omitted optional input
  std::vector<Value*> outputs;  // null for an omitted optional output
  std::vector<Attribute> attributes;
  size_t index = 0;  // position in Graph::nodes()

  const Attribute* attr(const std::string& attr_name) const;
  bool has_attr(const std::string& attr_name) const { return attr(attr_name) != nullptr; }
  // Typed getters: the default when absent; INVALID_MODEL naming the node and
  // attribute when present with another type.
  int64_t attr_int(const std::string& attr_name, int64_t fallback) const;
  float attr_float(const std::string& attr_name, float fallback) const;
  std::string attr_string(const std::string& attr_name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& attr_name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& attr_name, std::vector<float> fallback = {}) const;

  // Input i if present (non-null), else null; safe for i past the end.
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  // "node 'conv1' (Conv)" for error messages.
  std::string describe() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  Graph* parent = nullptr;  // enclosing graph of a subgraph

  Value* add_value(std::string value_name);
  Node* add_node(std::string op_type, std::string node_name = {});
  // Wires `value` as input `index` of `node` (growing inputs as needed).
  void set_input(Node* node, size_t index, Value* value);
  // Wires `value` as output `index` of `node`.
  void set_output(Node* node, size_t index, Value* value);

  // Removes `node`, unhooking it from its inputs' uses and its outputs'
  // producer field (the values stay). Renumbers Node::index.
  void erase_node(Node* node);
  // The same for every node in `doomed`, in one pass over the graph.
  void erase_nodes(const std::unordered_set<const Node*>& doomed);

  const std::vector<std::unique_ptr<Node>>& nodes() const noexcept { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const noexcept { return values_; }
  std::vector<Value*> inputs;   // graph inputs, excluding initializers
  std::vector<Value*> outputs;

  Value* find_value(const std::string& value_name) const;
  Node* find_node(const std::string& node_name) const;

  // Reorders nodes topologically (stable for an already sorted graph) and
  // renumbers Node::index; what a node's subgraphs read of this graph counts
  // as its inputs. Fails with INVALID_MODEL naming a node on a cycle.
  void sort_topologically();
  // Deep copy; outer-scope references of subgraphs keep pointing at the
  // enclosing graph's values.
  std::unique_ptr<Graph> clone() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
};

// Appends every value of `scope` that `node` reads: its inputs and, through
// the bodies of If/Loop/Scan (nested too), the values of `scope` those bodies
// use. Repeats are kept.
void values_read(const Node& node, const Graph& scope, std::vector<const Value*>& out);

// Translation of values from one graph to another while copying.
using ValueMap = std::unordered_map<const Value*, Value*>;

// A new value in `dst` with `v`'s name, type and constant.
Value* copy_value(const Value& v, Graph& dst);
// Copies `node` into `dst`: inputs and outputs (and outer-scope references of
// its subgraphs) are translated through `map`, values missing from it are
// used as they are; subgraph bodies are deep-copied, their values added to
// `map`.
Node* copy_node(const Node& node, Graph& dst, ValueMap& map);

class Model {
 public:
  Graph graph;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) → version
  std::string producer_name;
  std::string source;  // file path or "<memory>", for messages
  // SHA-256 of the ONNX bytes and of the input shapes given when reading them:
  // what compiled blobs and cache entries name as their source.
  Sha256Digest source_sha256{};
  // Keeps mapped files (model, external data) alive while initializers view them.
  std::vector<std::shared_ptr<const void>> mappings;

  int64_t opset(const std::string& domain) const;
  std::unique_ptr<Model> clone() const;
};

}  // namespace hetero::core
