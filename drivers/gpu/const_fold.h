// Compile-time evaluation of the shape arithmetic models carry (Shape, then
// Cast, Slice, Gather, Concat, Unsqueeze ... on small integer tensors), so
// that it never reaches the device: kernels take shapes as compile-time
// constants, and Reshape reads its static output shape instead.
#pragma once

#include <functional>
#include <optional>

#include "core/graph.h"
#include "core/tensor.h"

namespace hetero::gpu {

// The value of a node's output when it can be known at compile time: every
// input is a constant (or, for Shape, has a static shape) and the op is one
// the folder knows. `constant_of` gives a value's constant or null. Null
// when the node does not fold; INVALID_MODEL naming the node when its
// constant inputs are inconsistent.
using ConstantLookup = std::function<const core::Tensor*(const core::Value*)>;
using StaticShapeLookup = std::function<const core::Shape*(const core::Value*)>;
std::optional<core::Tensor> fold_node(const core::Node& node, const ConstantLookup& constant_of,
                                      const StaticShapeLookup& shape_of);

// Whether fold_node() knows `op_type` at all.
bool is_foldable_op(const std::string& op_type);

}  // namespace hetero::gpu
