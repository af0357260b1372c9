// QuantizeLinear, DequantizeLinear (ai.onnx and their com.microsoft twins)
// and DynamicQuantizeLinear: the conversions between float32 and quantised
// tensors, per tensor or per axis (quant_util.h has the formulas).
//
// Opset 21's blocked quantisation and 4-bit types are not here: the ONNX
// library heterod reads models with (1.12) knows opsets up to 17 and has no
// 4-bit element types, so such a model is refused when it is read.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/quant_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

QuantSpec spec_at_run(QuantSpec spec, const Tensor& x) {
  spec.rank = x.rank();
  const int64_t r = static_cast<int64_t>(x.rank());
  spec.axis_dim.reset();
  if (spec.axis >= -r && spec.axis < r) spec.axis_dim = x.dim(static_cast<size_t>(spec.axis < 0 ? spec.axis + r : spec.axis));
  return spec;
}

// Calls fn(offset, count, index) over the blocks of `shape` that share one
// set of parameters: the whole tensor, or each [outer, i, :] slice along the axis.
template <typename Fn>
void for_each_block(KernelRun& r, const QuantParams& p, const core::Shape& shape, size_t numel, Fn&& fn) {
  // A value is read in one type and written in another: about 8 bytes.
  if (p.per_tensor()) {
    const int64_t chunk = 65536, n = static_cast<int64_t>(numel);
    parallel_blocks(r, (n + chunk - 1) / chunk, 8.0 * chunk, numel > kParallelThreshold, [&](int64_t c) {
      const int64_t at = c * chunk;
      fn(static_cast<size_t>(at), static_cast<size_t>(std::min(chunk, n - at)), 0);
    });
    return;
  }
  size_t outer = 1, inner = 1;
  const size_t axis = static_cast<size_t>(p.axis);
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(shape[d]);
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
  const size_t dim = static_cast<size_t>(shape[axis]);
  const int64_t blocks = static_cast<int64_t>(outer * dim);
  parallel_blocks(r, blocks, 8.0 * double(inner), numel > kParallelThreshold,
                  [&](int64_t k) { fn(static_cast<size_t>(k) * inner, inner, static_cast<size_t>(k) % dim); });
}

class QuantizeKernel final : public Kernel {
 public:
  explicit QuantizeKernel(const KernelBuild& b) : node_(b.node) {
    out_type_ = output_zero_point_type(b, 2);
    const DType in = b.input_dtype(0);
    if (in != DType::Undefined && in != DType::F32 && in != DType::I32)
      b.unsupported(std::string("x must be float32 or int32, got ") + core::dtype_name(in));
    spec_ = qdq_spec(b.node, b.opset);
    params_ = QuantInputs(b, 1, 2, spec_);
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input x is missing");
    QuantParams storage;
    const QuantParams& p = params_.get(r, spec_at_run(spec_, *x), storage);
    if (x->dtype() != DType::F32 && x->dtype() != DType::I32)
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": x must be float32 or int32, got " + core::dtype_name(x->dtype()));
    Tensor xf = x->dtype() == DType::F32 ? *x : to_float(*x);
    Tensor& y = r.output(0, out_type_, x->shape());
    for_each_block(r, p, x->shape(), x->numel(), [&](size_t at, size_t n, size_t i) {
      const float* src = xf.data<float>() + at;
      if (out_type_ == DType::U8)
        quantize_span(src, y.data<uint8_t>() + at, n, p.scale_at(i), p.zero_point_at(i));
      else
        quantize_span(src, y.data<int8_t>() + at, n, p.scale_at(i), p.zero_point_at(i));
    });
  }

 private:
  static Tensor to_float(const Tensor& x) {
    Tensor f = Tensor::allocate(DType::F32, x.shape(), false);
    for (size_t i = 0; i < x.numel(); ++i) f.data<float>()[i] = static_cast<float>(x.data<int32_t>()[i]);
    return f;
  }

  const core::Node& node_;
  DType out_type_ = DType::U8;
  QuantSpec spec_;
  QuantInputs params_;
};

class DequantizeKernel final : public Kernel {
 public:
  explicit DequantizeKernel(const KernelBuild& b) : node_(b.node) {
    DType in = b.input_dtype(0);
    if (in == DType::Undefined) in = zero_point_type(b, 2);
    if (!is_quantized_type(in))
      b.unsupported(std::string("x must be uint8, int8 or int32, got ") + core::dtype_name(in));
    spec_ = qdq_spec(b.node, b.opset);
    spec_.dtype = in;
    params_ = QuantInputs(b, 1, 2, spec_);
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input x is missing");
    if (!is_quantized_type(x->dtype()))
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": x must be uint8, int8 or int32, got " +
                                        core::dtype_name(x->dtype()));
    QuantSpec spec = spec_at_run(spec_, *x);
    spec.dtype = x->dtype();
    QuantParams storage;
    const QuantParams& p = params_.get(r, spec, storage);
    if (p.dtype != x->dtype())
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": x is " + core::dtype_name(x->dtype()) +
                                        " but its zero point is " + core::dtype_name(p.dtype));
    Tensor& y = r.output(0, DType::F32, x->shape());
    for_each_block(r, p, x->shape(), x->numel(), [&](size_t at, size_t n, size_t i) {
      float* dst = y.data<float>() + at;
      switch (x->dtype()) {
        case DType::U8: dequantize_span(x->data<uint8_t>() + at, dst, n, p.scale_at(i), p.zero_point_at(i)); break;
        case DType::I8: dequantize_span(x->data<int8_t>() + at, dst, n, p.scale_at(i), p.zero_point_at(i)); break;
        default: dequantize_span(x->data<int32_t>() + at, dst, n, p.scale_at(i), p.zero_point_at(i)); break;
      }
    });
  }

 private:
  const core::Node& node_;
  QuantSpec spec_;
  QuantInputs params_;
};

// DynamicQuantizeLinear: uint8 with the scale and zero point that map
// [min(x, 0), max(x, 0)] onto [0, 255].
void dynamic_quantize(KernelRun& r) {
  use_threads(r.threads());
  const Tensor* x = r.input(0);
  if (!x || x->dtype() != DType::F32)
    fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": x must be a float32 tensor");
  float lo = 0, hi = 0;
  const float* v = x->data<float>();
  for (size_t i = 0; i < x->numel(); ++i) {
    lo = std::fmin(lo, v[i]);
    hi = std::fmax(hi, v[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  int32_t zp = 0;
  if (scale > 0) zp = static_cast<int32_t>(std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f)));
  Tensor& y = r.output(0, DType::U8, x->shape());
  if (scale > 0) {
    quantize_span(v, y.data<uint8_t>(), x->numel(), scale, zp);
  } else {
    std::fill_n(y.data<uint8_t>(), y.numel(), uint8_t{0});  // x is all zeros
  }
  if (r.output_wanted(1)) r.output(1, DType::F32, {}).data<float>()[0] = scale;
  if (r.output_wanted(2)) r.output(2, DType::U8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

std::unique_ptr<Kernel> make_quantize_linear(const KernelBuild& b) { return std::make_unique<QuantizeKernel>(b); }
std::unique_ptr<Kernel> make_dequantize_linear(const KernelBuild& b) { return std::make_unique<DequantizeKernel>(b); }
std::unique_ptr<Kernel> make_dynamic_quantize_linear(const KernelBuild&) {
  return std::make_unique<FunctionKernel>(dynamic_quantize);
}

}  // namespace hetero::cpu
