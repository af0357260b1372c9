#include "core/quant_params.h"

#include <limits>

#include "core/error.h"

namespace hetero::core {

bool is_quantized_type(DType dtype) {
  return dtype == DType::U8 || dtype == DType::I8 || dtype == DType::I32;
}

int32_t quant_min(DType dtype) {
  switch (dtype) {
    case DType::U8: return 0;
    case DType::I8: return -128;
    default: return std::numeric_limits<int32_t>::min();
  }
}

int32_t quant_max(DType dtype) {
  switch (dtype) {
    case DType::U8: return 255;
    case DType::I8: return 127;
    default: return std::numeric_limits<int32_t>::max();
  }
}

namespace {

[[noreturn]] void bad(const Node& node, hetero_status status, const std::string& what, const std::string& why) {
  fail(status, node.describe() + ": " + what + ": " + why);
}

}  // namespace

QuantParams read_quant_params(const Node& node, const Tensor& scale, const Tensor* zero_point,
                              const QuantSpec& spec, hetero_status status) {
  QuantParams p;
  p.dtype = spec.dtype;
  const std::string scale_what = spec.what + " scale";
  const std::string zp_what = spec.what + " zero point";
  if (scale.dtype() != DType::F32)
    bad(node, status, scale_what, std::string("must be float32, got ") + dtype_name(scale.dtype()));
  if (scale.rank() > 1)
    bad(node, status, scale_what, "must be a scalar or 1-D, got shape " + shape_to_string(scale.shape()) +
                                      " (blocked quantisation needs opset 21)");
  if (scale.numel() == 0) bad(node, status, scale_what, "is empty");
  if (zero_point) {
    if (zero_point->dtype() != spec.dtype)
      bad(node, status, zp_what, std::string("must be ") + dtype_name(spec.dtype) + " like the quantised tensor, got " +
                                     dtype_name(zero_point->dtype()));
    if (zero_point->shape() != scale.shape())
      bad(node, status, zp_what, "has shape [" + shape_to_string(zero_point->shape()) + "] but the scale has [" +
                                     shape_to_string(scale.shape()) + "]");
  }

  const bool per_axis = scale.rank() == 1 && scale.numel() > 1;
  if (per_axis && !spec.allow_axis)
    bad(node, status, scale_what, "must hold one value (per-tensor), got shape " + shape_to_string(scale.shape()));
  if (per_axis && !spec.row_dim) {
    int64_t axis = spec.axis;
    if (spec.rank) {
      const int64_t r = static_cast<int64_t>(*spec.rank);
      if (axis < -r || axis >= r)
        bad(node, status, "axis", std::to_string(spec.axis) + " is out of bounds for " + spec.what + " of rank " +
                                      std::to_string(*spec.rank));
      if (axis < 0) axis += r;
    } else if (axis < 0) {
      bad(node, status, "axis", "a negative axis needs the rank of " + spec.what + ", which is not known");
    }
    if (spec.axis_dim && *spec.axis_dim != static_cast<int64_t>(scale.numel()))
      bad(node, status, scale_what, "has " + std::to_string(scale.numel()) + " values but " + spec.what +
                                        " has " + std::to_string(*spec.axis_dim) + " along axis " + std::to_string(axis));
    p.axis = axis;
  }
  if (per_axis && spec.row_dim) {
    if (scale.numel() != *spec.row_dim)
      bad(node, status, scale_what, "has " + std::to_string(scale.numel()) + " values, expected 1 or " +
                                        std::to_string(*spec.row_dim));
    p.axis = 0;  // the caller knows which axis it meant
  }

  p.scale.resize(scale.numel());
  p.zero_point.assign(scale.numel(), 0);
  for (size_t i = 0; i < scale.numel(); ++i) {
    const float s = scale.data<float>()[i];
    if (!(s > 0) || !std::isfinite(s))
      bad(node, status, scale_what, "must be positive and finite, got " + std::to_string(s) +
                                        (scale.numel() > 1 ? " at [" + std::to_string(i) + "]" : ""));
    p.scale[i] = s;
    if (zero_point) p.zero_point[i] = static_cast<int32_t>(zero_point->as_int64(i));
  }
  if (spec.dtype == DType::I32)
    for (size_t i = 0; i < p.zero_point.size(); ++i)
      if (p.zero_point[i] != 0)
        bad(node, status, zp_what, "must be 0 for int32 data, got " + std::to_string(p.zero_point[i]));
  return p;
}

QuantSpec qdq_spec(const Node& node, int64_t opset) {
  const bool quantize = node.op_type == "QuantizeLinear";
  const Value* zp = node.input(2);
  const Value* x = node.input(0);
  DType dtype = DType::U8;
  if (!quantize && x && x->dtype != DType::Undefined) dtype = x->dtype;
  else if (zp && zp->dtype != DType::Undefined) dtype = zp->dtype;
  QuantSpec spec(quantize ? "y" : "x", dtype);
  // Per-axis parameters arrived with opset 13 (ai.onnx); com.microsoft's
  // twins always had an axis attribute.
  spec.allow_axis = node.domain == "com.microsoft" || opset >= 13;
  spec.axis = node.attr_int("axis", 1);
  if (x && x->shape) {
    spec.rank = x->shape->size();
    const int64_t r = static_cast<int64_t>(*spec.rank);
    if (spec.axis >= -r && spec.axis < r) {
      const Dim& d = (*x->shape)[static_cast<size_t>(spec.axis < 0 ? spec.axis + r : spec.axis)];
      if (d.known()) spec.axis_dim = d.size;
    }
  }
  return spec;
}

std::optional<QuantParams> qdq_constant_params(const Node& node, int64_t opset) {
  const Value* scale = node.input(1);
  const Value* zp = node.input(2);
  if (!scale || !scale->constant || (zp && !zp->constant)) return std::nullopt;
  return read_quant_params(node, *scale->constant, zp ? &*zp->constant : nullptr, qdq_spec(node, opset),
                           HETERO_INVALID_MODEL);
}

Tensor dequantize_tensor(const Tensor& q, const QuantParams& p) {
  Tensor out = Tensor::allocate(DType::F32, q.shape(), false);
  size_t inner = 1, dim = 1;
  if (!p.per_tensor()) {
    for (size_t d = static_cast<size_t>(p.axis) + 1; d < q.rank(); ++d) inner *= static_cast<size_t>(q.dim(d));
    dim = static_cast<size_t>(q.dim(static_cast<size_t>(p.axis)));
  }
  for (size_t i = 0; i < q.numel(); ++i) {
    const size_t c = p.per_tensor() ? 0 : i / inner % dim;
    out.data<float>()[i] = static_cast<float>(q.as_int64(i) - p.zero_point_at(c)) * p.scale_at(c);
  }
  return out;
}

}  // namespace hetero::core
