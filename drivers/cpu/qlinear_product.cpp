#include "drivers/cpu/qlinear_product.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace hetero::cpu {

QProduct QProduct::from_attrs(const core::Node& node, const std::string& a_prefix, const std::string& w_prefix) {
  QProduct q;
  q.a = quant_params_from_attrs(node, a_prefix);
  q.w = quant_params_from_attrs(node, w_prefix);
  q.output = has_quant_attrs(node, "y") ? Output::Quantized : Output::Float;
  if (q.output == Output::Quantized) q.y = quant_params_from_attrs(node, "y");
  if (!q.a.per_tensor() || (q.output == Output::Quantized && !q.y.per_tensor()))
    fail(HETERO_INVALID_MODEL, node.describe() + ": " + a_prefix + " and y must be quantised per tensor");
  q.alpha = node.attr_float("alpha", 1.0f);
  q.act_lo = node.attr_float("act_min", q.act_lo);
  q.act_hi = node.attr_float("act_max", q.act_hi);
  return q;
}

core::DType QProduct::out_dtype() const {
  switch (output) {
    case Output::Quantized: return y.dtype;
    case Output::Float: return core::DType::F32;
    case Output::Int32: return core::DType::I32;
  }
  return core::DType::Undefined;
}

float QProduct::multiplier(size_t m) const {
  if (output == Output::Int32) return 1.0f;
  const float real = alpha * a.scale[0] * w.scale_at(m);
  return output == Output::Quantized ? real / y.scale[0] : real;
}

int32_t QProduct::code_min() const {
  return std::max(quant_min(y.dtype), quantize_value(act_lo, y.scale[0], y.zero_point[0], quant_min(y.dtype),
                                                     quant_max(y.dtype)));
}

int32_t QProduct::code_max() const {
  return std::min(quant_max(y.dtype), quantize_value(act_hi, y.scale[0], y.zero_point[0], quant_min(y.dtype),
                                                     quant_max(y.dtype)));
}

void QProduct::store(double acc, size_t m, void* out, size_t index) const {
  switch (output) {
    case Output::Int32:
      static_cast<int32_t*>(out)[index] = static_cast<int32_t>(acc);
      return;
    case Output::Float: {
      const double v = acc * static_cast<double>(multiplier(m));
      static_cast<float*>(out)[index] = std::clamp(static_cast<float>(v), act_lo, act_hi);
      return;
    }
    case Output::Quantized: {
      const double q = std::nearbyint(acc * static_cast<double>(multiplier(m))) + y.zero_point[0];
      const auto code = static_cast<int32_t>(std::clamp(q, static_cast<double>(code_min()), static_cast<double>(code_max())));
      if (y.dtype == core::DType::U8)
        static_cast<uint8_t*>(out)[index] = static_cast<uint8_t>(code);
      else
        static_cast<int8_t*>(out)[index] = static_cast<int8_t>(code);
      return;
    }
  }
}

dnnl::primitive_attr QProduct::dnnl_attr(size_t channels, int channel_mask) const {
  dnnl::primitive_attr attr = scratchpad_attr();
  if (output != Output::Int32) {
    std::vector<float> scales;
    if (w.per_tensor()) {
      scales.push_back(multiplier(0));
    } else {
      for (size_t m = 0; m < channels; ++m) scales.push_back(multiplier(m));
    }
    attr.set_output_scales(w.per_tensor() ? 0 : channel_mask, scales);
  }
  if (a.zero_point[0] != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::post_ops po;
  if (output == Output::Quantized) {
    // Post-ops see the scaled value before the zero point is added, and
    // oneDNN would round only after adding it: the last post-op rounds (half
    // to even), so that, as ONNX has it, the zero point is added to the
    // rounded value (round(v + z) differs from round(v) + z at a tie when z
    // is odd).
    const int32_t zy = y.zero_point[0];
    if (zy != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    if (code_min() > quant_min(y.dtype) || code_max() < quant_max(y.dtype))
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(code_min() - zy),
                        static_cast<float>(code_max() - zy));
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_round, 0.0f, 0.0f);
  } else if (output == Output::Float && (std::isfinite(act_lo) || std::isfinite(act_hi))) {
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, std::max(act_lo, -FLT_MAX), std::min(act_hi, FLT_MAX));
  }
  if (po.len() > 0) attr.set_post_ops(po);
  return attr;
}

dnnl_dt QProduct::dnnl_dst_type() const {
  switch (output) {
    case Output::Quantized: return dnnl_type_of(y.dtype);
    case Output::Float: return dnnl_dt::f32;
    case Output::Int32: return dnnl_dt::s32;
  }
  return dnnl_dt::undef;
}

std::optional<core::Tensor> weights_as_s8(const core::Tensor& w, const QuantParams& wp, size_t axis) {
  if (w.dtype() != core::DType::U8 && w.dtype() != core::DType::I8) return std::nullopt;
  core::Tensor out = core::Tensor::allocate(core::DType::I8, w.shape(), false);
  size_t inner = 1;
  for (size_t d = axis + 1; d < w.rank(); ++d) inner *= static_cast<size_t>(w.dim(d));
  const size_t dim = w.rank() > axis ? static_cast<size_t>(w.dim(axis)) : 1;
  for (size_t i = 0; i < w.numel(); ++i) {
    const size_t channel = wp.per_tensor() ? 0 : i / inner % dim;
    const int32_t q = w.dtype() == core::DType::U8 ? w.data<uint8_t>()[i] : w.data<int8_t>()[i];
    const int32_t v = q - wp.zero_point_at(channel);
    if (v < -128 || v > 127) return std::nullopt;
    out.data<int8_t>()[i] = static_cast<int8_t>(v);
  }
  return out;
}

dnnl::memory DnnlZeroPoint::memory(const dnnl::engine& engine) const {
  const dnnl::memory::desc md({1}, dnnl_dt::s32, dnnl_tag::a);
  std::call_once(made_, [&] { memory_ = view_memory(md, engine, &value); });
  // Another engine's runs (constant folding has its own) get one of their own.
  return memory_.get_engine() == engine ? memory_ : view_memory(md, engine, &value);
}

dnnl_dt dnnl_type_of(core::DType dtype) {
  switch (dtype) {
    case core::DType::U8: return dnnl_dt::u8;
    case core::DType::I8: return dnnl_dt::s8;
    case core::DType::I32: return dnnl_dt::s32;
    case core::DType::F32: return dnnl_dt::f32;
    default: return dnnl_dt::undef;
  }
}

}  // namespace hetero::cpu
