// Linear quantisation for the CPU driver's quantisation kernels and its int8
// graph pass: parameters read at run time (QuantInputs), vectorised spans,
// byte tables. The formulas and QuantParams are core/quant_params.h's.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/quant_params.h"
#include "core/tensor.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// The parameters, their checks and the arithmetic live in core (the GPU
// drivers read QDQ graphs too); the kernels' side is here.
using core::dequantize_tensor;
using core::is_quantized_type;
using core::qdq_constant_params;
using core::qdq_spec;
using core::quant_max;
using core::quant_min;
using core::QuantParams;
using core::QuantSpec;
using core::quantize_value;
using core::read_quant_params;

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

// The same check for parameters held as attributes of a hetero.cpu node the
// int8 pass made: `<prefix>_scale` (floats), `<prefix>_zero_point` (ints),
// `<prefix>_type` (a DType) and, for per-axis ones, `<prefix>_axis`.
QuantParams quant_params_from_attrs(const core::Node& node, const std::string& prefix);
// Writes `p` as attributes named like quant_params_from_attrs reads them.
void set_quant_attrs(core::Node& node, const std::string& prefix, const QuantParams& p);
bool has_quant_attrs(const core::Node& node, const std::string& prefix);
// The attribute prefix of hetero.cpu QLinearConcat's input i: "x0", "x1", ...
std::string concat_input_prefix(size_t i);

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
// runs over r's threads, in checkpoint blocks; look_up_run does one run on
// the calling thread.
void look_up_bytes(KernelRun& r, const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
void look_up_run(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);

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
