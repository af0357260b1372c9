// Compile-time evaluation of the shape arithmetic models carry (Shape, then
// Cast, Slice, Gather, Concat, Unsqueeze ... on small integer tensors), so
// that it never reaches the device: kernels take shapes as compile-time
// constants, and Reshape reads its static output shape instead.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/graph.h"
#include "core/tensor.h"

namespace hetero::gpu {

using ConstantLookup = std::function<const core::Tensor*(const core::Value*)>;
using StaticShapeLookup = std::function<const core::Shape*(const core::Value*)>;

// The value of a node's output when it can be known at compile time: every
// input is a constant (or, for Shape, has a static shape) and the op is one
// the folder knows (its line in topology.cpp's op table names a rule).
// `constant_of` gives a value's constant or null. Null when the node does
// not fold; INVALID_MODEL naming the node when its constant inputs are
// inconsistent. Defined with the op table (topology.cpp).
std::optional<core::Tensor> fold_node(const core::Node& node, const ConstantLookup& constant_of,
                                      const StaticShapeLookup& shape_of);
// Whether fold_node() knows `op_type` at all.
bool is_foldable_op(const std::string& op_type);

// A rule for one op family's value; null when it does not fold (an input
// not constant, or larger than folding takes: shape-sized tensors, and
// constants moved around (Slice, Concat, the views) up to 2^20 elements).
struct FoldContext {
  const ConstantLookup& constant_of;
  const StaticShapeLookup& shape_of;
};
using FoldRule = std::optional<core::Tensor>(const core::Node& node, const FoldContext& ctx);

namespace fold {
// reshaped: Unsqueeze, Squeeze, Reshape, Flatten; shape_or_size: Shape and
// Size of a static shape; integer_arithmetic: Add, Sub, Mul, Div, the
// comparisons, And and Or on integers.
FoldRule constant, shape_or_size, identity, cast, reshaped, concat, gather, transpose, slice, logical_not,
    constant_of_shape, integer_arithmetic;
}  // namespace fold

}  // namespace hetero::gpu
