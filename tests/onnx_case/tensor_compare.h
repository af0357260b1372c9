// Output comparison with the ONNX backend test rules: floating-point outputs
// must satisfy |actual - expected| <= atol + rtol * |expected| elementwise
// (NumPy's assert_allclose, NaN equal to NaN, infinities equal by sign),
// integer and bool outputs must be equal, and dtypes and shapes must match.
#pragma once

#include <string>

#include "core/tensor.h"

namespace hetero::onnx_case {

struct Tolerance {
  double rtol = 1e-3;  // onnx/backend/test/case/node defaults
  double atol = 1e-7;
};

// Empty when `actual` matches `expected`; otherwise one line saying how it
// differs (dtype, shape, or the number of mismatches and the worst element).
std::string compare_tensors(const core::Tensor& expected, const core::Tensor& actual, const Tolerance& tol = {});

}  // namespace hetero::onnx_case
