// Linear quantisation as ONNX defines it, shared by the quantisation kernels
// and the int8 graph pass:
//
//   quantize:   q = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize: x = (q - zero_point) * scale
//
// with one scale and zero point for the whole tensor, or one per index of an
// axis. QuantParams holds them once read and checked: every kernel and the
// pass refuse a zero, negative or non-finite scale, a zero point of the
// wrong type or out of range, an axis out of bounds and scale and zero-point
// shapes that disagree, naming the node and the input.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// The integer types quantised tensors may have.
bool is_quantized_type(core::DType dtype);
int32_t quant_min(core::DType dtype);
int32_t quant_max(core::DType dtype);

struct QuantParams {
  core::DType dtype = core::DType::U8;  // the quantised type
  std::vector<float> scale;             // one value, or one per index of `axis`
  std::vector<int32_t> zero_point;      // as many as `scale`
  int64_t axis = -1;                    // -1: per tensor; else the (non-negative) axis

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
  QuantSpec(std::string what_, core::DType dtype_, bool allow_axis_ = false, int64_t axis_ = 1)
      : what(std::move(what_)), dtype(dtype_), allow_axis(allow_axis_), axis(axis_) {}

  std::string what;                // "x", "y_scale/y_zero_point", ... for messages
  core::DType dtype = core::DType::U8;  // the quantised type the zero point must have
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
QuantParams read_quant_params(const core::Node& node, const core::Tensor& scale, const core::Tensor* zero_point,
                              const QuantSpec& spec, hetero_status status);

// A tensor's quantisation given by two node inputs (the zero point may be
// absent or omitted; without a scale input, as for ConvInteger, the scale
// is 1): read and checked once when the kernel is built if both
// are constants, else at every run. `spec` is completed by the caller with
// what it knows of the data; run() takes the spec with the run's shapes.
class QuantInputs {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  QuantInputs() = default;
  QuantInputs(const KernelBuild& b, size_t scale_input, size_t zero_point_input, const QuantSpec& spec);
  // The parameters when they were constants, else null.
  const QuantParams* constant() const { return constant_ ? &*constant_ : nullptr; }
  // The parameters for this run (`storage` holds them when read now).
  const QuantParams& get(const KernelRun& r, const QuantSpec& spec, QuantParams& storage) const;

 private:
  size_t scale_ = 0, zero_point_ = kNone;
  std::optional<QuantParams> constant_;
};

// The dtype a zero point input gives its tensor: its own when present (and
// known), else uint8, ONNX's default.
core::DType zero_point_type(const KernelBuild& b, size_t zero_point_input);
// The same for the zero point that sets an op's output type (uint8 when the
// input is absent or kNone): INVALID_MODEL naming the node unless it is
// uint8 or int8.
core::DType output_zero_point_type(const KernelBuild& b, size_t zero_point_input);

// The spec of a QuantizeLinear or DequantizeLinear node's scale and zero
// point from what the graph knows of its data input (`opset`: the node's).
QuantSpec qdq_spec(const core::Node& node, int64_t opset);
// A QuantizeLinear or DequantizeLinear node's parameters when they are
// constants (checked: INVALID_MODEL naming the node), else nullopt.
std::optional<QuantParams> qdq_constant_params(const core::Node& node, int64_t opset);

// The same check for parameters held as attributes of a hetero.cpu node the
// int8 pass made: `<prefix>_scale` (floats), `<prefix>_zero_point` (ints),
// `<prefix>_type` (a DType) and, for per-axis ones, `<prefix>_axis`.
QuantParams quant_params_from_attrs(const core::Node& node, const std::string& prefix);
// Writes `p` as attributes named like quant_params_from_attrs reads them.
void set_quant_attrs(core::Node& node, const std::string& prefix, const QuantParams& p);
bool has_quant_attrs(const core::Node& node, const std::string& prefix);
// The attribute prefix of hetero.cpu QLinearConcat's input i: "x0", "x1", ...
std::string concat_input_prefix(size_t i);

// One value, ONNX's way.
inline int32_t quantize_value(float x, float scale, int32_t zero_point, int32_t lo, int32_t hi) {
  float q = std::nearbyint(x / scale);  // the default rounding mode rounds half to even
  // Clamping before adding the zero point keeps a huge x from overflowing
  // the conversion; the bounds are integers, so the result is the same.
  q = std::fmin(std::fmax(q, static_cast<float>(lo - zero_point)), static_cast<float>(hi - zero_point));
  if (std::isnan(q)) q = static_cast<float>(lo - zero_point);
  return static_cast<int32_t>(q) + zero_point;
}

// y[i] = quantize(x[i]) for one scale and zero point, T = uint8_t or int8_t.
template <typename T>
void quantize_span(const float* x, T* y, size_t n, float scale, int32_t zero_point);
// y[i] = saturate(round_half_even(v[i])), T = uint8_t or int8_t: the last
// step of the ops that fold the output's zero point into v (as ONNX
// Runtime's QLinearAdd and QLinearMul do).
template <typename T>
void round_to_codes(const float* v, T* y, size_t n);
// y[i] = (x[i] - zero_point) * scale, T = uint8_t, int8_t or int32_t.
template <typename T>
void dequantize_span(const T* x, float* y, size_t n, float scale, int32_t zero_point);

// y[i] = table[x[i]] over n bytes (64 bytes per step with AVX-512 VBMI's
// byte permutes where the processor has them); look_up_bytes spreads big
// runs over the threads, look_up_run does one run on the calling thread.
void look_up_bytes(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
void look_up_run(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);

// A constant dequantised once (the int8 pass folds DQ of a constant so
// that a float op keeps constant weights).
core::Tensor dequantize_tensor(const core::Tensor& q, const QuantParams& p);

// Table-driven ops on 8-bit tensors: dequantized_codes(in)[b] is the value of
// the code whose byte is b (q & 0xff), and quantize_codes maps 256 such
// values to the bytes of their codes in `out`.
std::vector<float> dequantized_codes(const QuantParams& in);
std::vector<uint8_t> quantize_codes(const std::vector<float>& values, const QuantParams& out);

// Calls fn(TypeTag<uint8_t>) or fn(TypeTag<int8_t>) for an 8-bit dtype.
template <typename Fn>
void with_8bit_type(core::DType dtype, Fn&& fn) {
  if (dtype == core::DType::U8)
    fn(TypeTag<uint8_t>{});
  else
    fn(TypeTag<int8_t>{});
}

// True when oneDNN's u8/s8 x s8 products on this processor are exact for
// these weights (signed_src: s8 activations). Without VNNI oneDNN sums pairs
// of products in saturating int16 (vpmaddubsw) and halves the weights of
// signed activations, so exactness then needs u8 activations and weights
// within [-64, 64].
bool dnnl_int8_exact(const core::Tensor& s8_weights, bool signed_src);


}  // namespace hetero::cpu
