// Cutting a model into one submodel per subgraph: tensors that cross a cut
// become inputs and outputs of the submodels; the submodels form a DAG and are
// ordered topologically for execution.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"

namespace hetero::partition {

// One subgraph to cut out: a device (index into the plan's device list) and
// the indices of its nodes in the model's main graph. Constant nodes are not
// listed; each part gets a copy of the constants it uses.
struct Part {
  int device = 0;
  std::vector<size_t> nodes;
};

// Where a submodel input or a model output comes from.
struct Source {
  enum class Kind { GraphInput, PartOutput, Constant };
  Kind kind = Kind::GraphInput;
  size_t part = 0;   // PartOutput: index into CutModel::parts
  size_t index = 0;  // GraphInput: model input; PartOutput: that part's output
  core::Tensor constant;  // Constant: an output that is an initializer
};

struct Submodel {
  int device = 0;
  std::unique_ptr<core::Model> model;
  std::vector<Source> inputs;  // one per submodel input
  std::vector<size_t> nodes;            // original Node::index, graph order
  std::vector<std::string> node_names;  // their names
};

struct CutModel {
  std::vector<Submodel> parts;  // in execution (topological) order
  std::vector<Source> outputs;  // one per model output
  size_t transfers = 0;         // tensors passed from one part to another
};

// Fails with INVALID_ARGUMENT if a non-constant node is in no part or in two,
// and with INTERNAL if the parts do not form a DAG.
CutModel cut_model(const core::Model& model, const std::vector<Part>& parts);

}  // namespace hetero::partition
