// Kernels over ONNX's floating types that compute in float or double: a
// float16/bfloat16 input is read widened to float32, and such an output is
// computed in a float32 buffer and narrowed once at the end.
#pragma once

#include "core/tensor.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// `t` itself, or its float32 copy when it is float16/bfloat16.
inline core::Tensor widen_half(const core::Tensor& t) { return is_half_type(t.dtype()) ? to_float32(t) : t; }

// Output i of dtype `dtype`, as float32 or float64 memory to compute into.
class FloatOutput {
 public:
  FloatOutput(KernelRun& r, size_t i, core::DType dtype, const core::Shape& shape)
      : out_(r.output(i, dtype, shape)) {
    if (is_half_type(dtype)) wide_ = core::Tensor::allocate(core::DType::F32, shape, false);
  }
  // float32 for float16/bfloat16 outputs, else the output itself.
  core::Tensor& tensor() { return is_half_type(out_.dtype()) ? wide_ : out_; }
  // Writes the computed values into the output (narrowing them if needed).
  void finish() {
    if (is_half_type(out_.dtype())) narrow_from_float32(wide_, out_);
  }

 private:
  core::Tensor& out_;
  core::Tensor wide_;
};

// Refuses input i at build time when its static dtype is known and is not a
// float type (float16, bfloat16, float, double).
inline void require_float_input(const KernelBuild& b, size_t i) { require_dtype(b, i, FloatTypes{}, true); }

// The run-time check: input `t` must be a float type.
inline void check_float_input(const KernelRun& r, const core::Tensor& t) {
  if (!is_half_type(t.dtype()) && t.dtype() != core::DType::F32 && t.dtype() != core::DType::F64)
    unsupported_dtype(r.node(), t.dtype());
}

}  // namespace hetero::cpu
