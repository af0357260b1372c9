// The shape arithmetic of numpy-style matrix products, shared by the float
// (kernels_matmul.cpp) and int8 (kernels_qlinear_matmul.cpp) product kernels.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

// The shapes of one product: A as [batch..., M, K], B as [batch..., K, N]
// (both padded to the same rank), Y as [batch..., M, N], and Y as ONNX
// reports it (without the M or N of a 1-D operand).
struct ProductShapes {
  DnnlDims a, b, y;
  core::Shape out;
  int64_t m = 0, k = 0, n = 0;
};

// Fails with INVALID_ARGUMENT naming `node` when the operands do not multiply.
ProductShapes product_shapes(const core::Node& node, const core::Shape& a_shape, const core::Shape& b_shape,
                             bool trans_a, bool trans_b);

// A row-major matrix stack of logical dims `dims` whose memory holds the
// last two dims swapped when `transposed`.
dnnl::memory::desc matrix_desc(const DnnlDims& dims, bool transposed, dnnl_dt dt = dnnl_dt::f32);

}  // namespace hetero::cpu
