// Conditions of If nodes that the host computes from the inputs, so that a
// model which branches on an input (Silero VAD on its sample rate `sr`) still
// runs whole on the GPU.
//
// The GPU's programs are straight lines of kernels: an If becomes the branch
// it takes (topology.cpp). Where its condition is known only at run time but
// follows from small integer inputs through ops the folder knows (Equal on a
// scalar, Not, Cast, ...), the driver compiles one program per outcome and,
// before each inference, works the condition out on the host from the
// inputs, then runs the program of that outcome. Each condition is kept as
// its own small model (its *cone*: the nodes between those inputs and the
// condition), so that a blob carries it and an import can evaluate it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/driver.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/gpu/shape_infer.h"

namespace hetero::gpu {

// The outcome chosen for each condition met so far, by If node name.
using ConditionChoices = std::map<std::string, bool>;

// Inputs a condition may read: integer or bool tensors of at most this many
// elements (a sample rate, a flag, a mode).
constexpr size_t kMaxConditionInputElements = 64;

// Whether `v` is an input of `graph` a condition may read: integer or bool,
// static shape, at most kMaxConditionInputElements elements.
bool is_condition_input(const core::Value& v, const core::Graph& graph);

struct HostCondition {
  std::string node;                   // the If's name
  std::shared_ptr<core::Model> cone;  // inputs: the model inputs it reads; one output, the condition
  // The condition's value for one inference's `inputs` (in the order of
  // `ports`, the model's inputs). INVALID_ARGUMENT naming the If when the
  // inputs do not give one value.
  bool evaluate(const std::vector<driver::Port>& ports, const std::vector<core::Tensor>& inputs) const;
};

// The cone of If `node`'s condition within `graph` (a model's main graph),
// when the host can compute it: every value it depends on is a constant
// (`constant_of`, which knows what the topology folded) or a small integer
// input of the model, through ops the folder knows. nullopt otherwise.
std::optional<HostCondition> host_condition(const core::Node& node, const core::Graph& graph,
                                            const TensorLookup& constant_of);

// Thrown by build_topology() at an If whose condition the host can compute
// and `choices` does not settle: the caller builds once per outcome.
struct OpenCondition {
  HostCondition condition;
};

}  // namespace hetero::gpu
