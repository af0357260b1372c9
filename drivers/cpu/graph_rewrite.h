// Small graph-editing helpers the CPU driver's graph passes share: constant
// lookup, rewiring inputs, unique names, attribute setters.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace hetero::cpu::passes {

// True when `n` is the ai.onnx op `op_type`.
bool is_op(const core::Node* n, const char* op_type);

// The value's constant (initializer, Constant node output, folded), or null.
const core::Tensor* constant_of(const core::Value* v);
// The single float of a float32 constant with one element.
std::optional<float> scalar_of(const core::Value* v);

bool is_graph_output(const core::Graph& g, const core::Value* v);
// True when every use of `v` is by a node of `g` itself (not of a subgraph).
bool used_only_in(const core::Graph& g, const core::Value* v);

// Rewires input i of `n` to `v` (null: omitted), keeping use lists right.
void replace_input(core::Graph& g, core::Node* n, size_t i, core::Value* v);

// Names not yet taken in a graph, for the values and nodes a pass adds.
class NameGen {
 public:
  explicit NameGen(const core::Graph& g);
  std::string value(const std::string& base);
  std::string node(const std::string& base);

 private:
  std::unordered_set<std::string> values_, nodes_;
};

// A new constant float value holding `t`.
core::Value* add_constant(core::Graph& g, NameGen& names, const std::string& base, core::Tensor t);

// Sets (replacing any existing) an attribute of `n`.
void set_attr_int(core::Node* n, const std::string& name, int64_t v);
void set_attr_float(core::Node* n, const std::string& name, float v);
void set_attr_string(core::Node* n, const std::string& name, std::string v);
void set_attr_ints(core::Node* n, const std::string& name, std::vector<int64_t> v);
void set_attr_floats(core::Node* n, const std::string& name, std::vector<float> v);
void set_attr_strings(core::Node* n, const std::string& name, std::vector<std::string> v);

// The static shape's rank, when known.
std::optional<size_t> rank_of(const core::Value* v);

// Removes Constant nodes whose outputs nobody reads any more.
void drop_dead_constants(core::Graph& g);

}  // namespace hetero::cpu::passes
