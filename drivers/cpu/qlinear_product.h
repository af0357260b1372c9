// What the int8 product kernels (kernels_qlinear_conv.cpp,
// kernels_qlinear_matmul.cpp) share: the quantisation of a convolution or
// matrix product and of its result, applied either by oneDNN (u8/s8
// activations, s8 weights, per-channel output scales, zero points) or, for
// what oneDNN cannot do exactly, by the reference loops' last step.
//
// An int32 accumulator `acc` (bias included, in accumulator units) becomes
//   Quantized: saturate(round_half_even(acc * alpha * sa * sw[m] / sy) + zy)
//   Float:     acc * alpha * sa * sw[m]
//   Int32:     acc                      (ConvInteger, MatMulInteger)
// and the Relu/Clip the int8 pass fused is a clamp of the real value.
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include <dnnl.hpp>

#include "core/tensor.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/quant_util.h"

namespace hetero::cpu {

struct QProduct {
  enum class Output { Quantized, Float, Int32 };
  QuantParams a;  // activations: per tensor
  QuantParams w;  // weights: per tensor or per output channel (axis ignored)
  Output output = Output::Quantized;
  QuantParams y;  // Quantized only
  float alpha = 1.0f;
  float act_lo = -std::numeric_limits<float>::infinity();
  float act_hi = std::numeric_limits<float>::infinity();

  // The parameters of a hetero.cpu node the int8 pass made: attributes
  // `a_prefix`_*, `w_prefix`_*, y_* (absent: float output), act_min/max.
  static QProduct from_attrs(const core::Node& node, const std::string& a_prefix, const std::string& w_prefix);

  core::DType out_dtype() const;
  // Accumulator units to output units for output channel m (float32
  // arithmetic, as ONNX's reference computes the combined scale).
  float multiplier(size_t m) const;
  // The output code range after the fused clamp (Quantized).
  int32_t code_min() const;
  int32_t code_max() const;
  // The reference's last step, for output channel m.
  void store(double acc, size_t m, void* out, size_t index) const;

  // oneDNN attributes: output scales over `channels` output channels along
  // mask `channel_mask`, run-time zero points of src and dst, the clamp.
  dnnl::primitive_attr dnnl_attr(size_t channels, int channel_mask) const;
  dnnl_dt dnnl_dst_type() const;
};

// Weights as oneDNN's int8 primitives take them: s8 with zero point 0.
// `w` (u8 or s8) less its zero point per `channel` index (axis `axis` of
// w's shape); null when some value does not fit in s8.
std::optional<core::Tensor> weights_as_s8(const core::Tensor& w, const QuantParams& wp, size_t axis);

// A run-time zero point argument for a oneDNN primitive. Its memory object
// is made once, on the first run's engine, and only read after: every
// thread's runs share it instead of making one (several allocations) per run.
class DnnlZeroPoint {
 public:
  int32_t value = 0;
  dnnl::memory memory(const dnnl::engine& engine) const;

 private:
  mutable std::once_flag made_;
  mutable dnnl::memory memory_;
};

// Maps a quantised DType to oneDNN's.
dnnl_dt dnnl_type_of(core::DType dtype);

}  // namespace hetero::cpu
