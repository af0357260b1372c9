// Output shapes ONNX's shape inference could not give because they depend
// on shape arithmetic (Shape → Slice → Concat → Reshape): once const_fold
// has made that arithmetic a constant, the shapes follow. One rule per op
// family; the op table in topology.cpp says which op follows which.
#pragma once

#include <functional>
#include <optional>

#include "core/graph.h"
#include "core/tensor.h"

namespace hetero::gpu {

using ShapeLookup = std::function<const core::Shape*(const core::Value*)>;
using TensorLookup = std::function<const core::Tensor*(const core::Value*)>;

// A Slice with constant starts, ends, axes and steps, per axis of its input
// `x` (axes it does not slice: start 0, step 1), with ONNX's clamping
// applied: output element i along an axis is input element start + i * step.
struct SliceGeometry {
  std::vector<int64_t> starts, steps;
  core::Shape out;
};
// nullopt when a parameter is not a constant; INVALID_MODEL when they are
// inconsistent (lengths, an axis out of range, a step of 0).
std::optional<SliceGeometry> slice_geometry(const core::Node& node, const core::Shape& x,
                                            const TensorLookup& constant_of);

// A Pad's amounts when its pads are constant: per axis of a rank-`rank`
// input, the elements added before, then per axis those added after
// (negative: removed). nullopt when they are computed at run time;
// INVALID_MODEL when they do not fit the rank.
std::optional<std::vector<int64_t>> pad_amounts(const core::Node& node, size_t rank, const TensorLookup& constant_of);

// A rule for the static shape of a node's first output given its first
// input's shape `x`: nullopt when it cannot be known (an input's shape or a
// parameter that is not constant); INVALID_MODEL when the shapes contradict
// the op. The op table (topology.cpp, kOpLines) names each op's rule;
// infer_output_shape() (topology.h) applies it.
using ShapeRule = std::optional<core::Shape>(const core::Node& node, const core::Shape& x,
                                             const ShapeLookup& shape_of, const TensorLookup& constant_of);

namespace shape {
// same: elementwise ops of one input, and others that keep their input's
// shape; broadcast_all: numpy broadcasting of every input; pool: MaxPool and
// AveragePool; squeeze_or_unsqueeze: axes an attribute or (opset 13) a
// constant input.
ShapeRule same, broadcast_all, matmul, reshape, flatten, transpose, squeeze_or_unsqueeze, concat, pad, gather, slice,
    conv, pool, global_pool, reduce;
}  // namespace shape

}  // namespace hetero::gpu
