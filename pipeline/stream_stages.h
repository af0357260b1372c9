// The built-in stream stages of a pipeline (pipeline_spec.h): plain
// functions of tensors, so that their rules are tested on their own
// (tests/pipeline/). A pipeline_model.cpp stage calls them once per tensor
// its input made during the call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hetero::pipeline {

// x * a + b, a float32 tensor in new memory.
core::Tensor scale(const core::Tensor& x, float a, float b);

// A sliding window over one axis, its steps kept from one tensor to the next
// (and, as a sequence's state, from one call to the next).
struct Window {
  int64_t axis = 0;  // 0 .. rank - 1
  int64_t size = 0, step = 0;
  bool prefill = false;  // it starts full of zeros (else empty)

  // What a window holds between two tensors: its last `size` steps (zeros
  // where none came yet), and the steps counted towards its next emission.
  struct State {
    core::Tensor buffer;  // the input's shape with `size` steps along `axis`
    int64_t steps = 0;    // 0 .. steps_limit() - 1
  };
  // The counter runs below this: without prefill it counts up to `size`
  // (the window fills), then the steps since the last emission.
  int64_t steps_limit() const noexcept { return prefill ? step : size + step; }

  // Feeds the steps of `x` through the window: returns each window it
  // emitted, in order (after every `step` new steps, the first once `size`
  // steps have come, or after `step` with prefill), and leaves `state` as
  // after the last step. A window emitted is a view of memory the function
  // allocated where it can be (no copy), else a copy. INVALID_ARGUMENT, `what`
  // naming the stage, when `x` does not fit the buffer (dtype, rank, the
  // other dims), the counter is out of its range, or the windows would be
  // more than `max_windows`.
  std::vector<core::Tensor> push(State& state, const core::Tensor& x, size_t max_windows,
                                 const std::string& what) const;
};

// `parts` joined along `axis`; a tensor of `empty_shape` (0 along `axis`)
// and `dtype` when there are none. INVALID_ARGUMENT naming `what` when two
// parts differ elsewhere than along the axis.
core::Tensor concat(const std::vector<core::Tensor>& parts, int64_t axis, core::DType dtype,
                    const core::Shape& empty_shape, const std::string& what);

}  // namespace hetero::pipeline
