// Linear quantisation as ONNX defines it, for every driver that reads QDQ
// graphs (the CPU driver's int8 kernels and pass, the GPU drivers' float
// form of QuantizeLinear -> DequantizeLinear):
//
//   quantize:   q = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize: x = (q - zero_point) * scale
//
// with one scale and zero point for the whole tensor, or one per index of an
// axis. QuantParams holds them once read and checked: a zero, negative or
// non-finite scale, a zero point of the wrong type or out of range, an axis
// out of bounds and scale and zero-point shapes that disagree are refused,
// naming the node and the input.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "hetero/status.h"

namespace hetero::core {

// The integer types quantised tensors may have.
bool is_quantized_type(DType dtype);
int32_t quant_min(DType dtype);
int32_t quant_max(DType dtype);

struct QuantParams {
  DType dtype = DType::U8;          // the quantised type
  std::vector<float> scale;         // one value, or one per index of `axis`
  std::vector<int32_t> zero_point;  // as many as `scale`
  int64_t axis = -1;                // -1: per tensor; else the (non-negative) axis

  bool per_tensor() const { return axis < 0; }
  float scale_at(size_t i) const { return scale[per_tensor() ? 0 : i]; }
  int32_t zero_point_at(size_t i) const { return zero_point[per_tensor() ? 0 : i]; }
  bool operator==(const QuantParams& o) const {
    return dtype == o.dtype && scale == o.scale && zero_point == o.zero_point && axis == o.axis;
  }
};

// What read_quant_params checks the tensors against.
struct QuantSpec {
  QuantSpec() = default;
  QuantSpec(std::string what_, DType dtype_, bool allow_axis_ = false, int64_t axis_ = 1)
      : what(std::move(what_)), dtype(dtype_), allow_axis(allow_axis_), axis(axis_) {}

  std::string what;                // "x", "y_scale/y_zero_point", ... for messages
  DType dtype = DType::U8;         // the quantised type the zero point must have
  bool allow_axis = false;         // false: scale must hold one value
  int64_t axis = 1;                // the axis attribute (may be negative)
  std::optional<size_t> rank;      // rank of the quantised tensor, when known
  std::optional<int64_t> axis_dim; // its size along the axis, when known
  std::optional<size_t> row_dim;   // allow_axis without an axis attribute: the
                                   // number of values a non-scalar scale must
                                   // have (QLinearMatMul rows/columns)
};

// Reads and checks a scale tensor and an optional zero point tensor (absent:
// zero of spec.dtype). Fails with `status` (INVALID_MODEL at compile time,
// INVALID_ARGUMENT for run-time inputs) naming `node`.
QuantParams read_quant_params(const Node& node, const Tensor& scale, const Tensor* zero_point, const QuantSpec& spec,
                              hetero_status status);

// The spec of a QuantizeLinear or DequantizeLinear node's scale and zero
// point from what the graph knows of its data input (`opset`: the node's).
QuantSpec qdq_spec(const Node& node, int64_t opset);
// A QuantizeLinear or DequantizeLinear node's parameters when they are
// constants (checked: INVALID_MODEL naming the node), else nullopt.
std::optional<QuantParams> qdq_constant_params(const Node& node, int64_t opset);

// A constant dequantised once (a DQ of constant weights, folded so
// that a float op keeps constant weights).
Tensor dequantize_tensor(const Tensor& q, const QuantParams& p);

// One value, ONNX's way.
inline int32_t quantize_value(float x, float scale, int32_t zero_point, int32_t lo, int32_t hi) {
  float q = std::nearbyint(x / scale);  // the default rounding mode rounds half to even
  // Clamping before adding the zero point keeps a huge x from overflowing
  // the conversion; the bounds are integers, so the result is the same.
  q = std::fmin(std::fmax(q, static_cast<float>(lo - zero_point)), static_cast<float>(hi - zero_point));
  if (std::isnan(q)) q = static_cast<float>(lo - zero_point);
  return static_cast<int32_t>(q) + zero_point;
}

}  // namespace hetero::core
