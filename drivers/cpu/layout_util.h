// Small helpers shared by the CPU driver's shape, data-movement and misc
// kernels: input checks that raise errors naming the node, axis handling,
// strides, and dispatch on element type or element size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// A stateless kernel from a lambda.
inline std::unique_ptr<Kernel> make_fn_kernel(std::function<void(KernelRun&)> fn) {
  return std::make_unique<FunctionKernel>(std::move(fn));
}

// A run-time error caused by the data a request passed (bad shape, index out
// of range): INVALID_ARGUMENT naming the node.
[[noreturn]] inline void bad_input(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_ARGUMENT, node.describe() + ": " + what);
}

// Input i, which the op requires: an omitted one is an error, not a crash.
inline const core::Tensor& required_input(const KernelRun& r, size_t i) {
  const core::Tensor* t = r.input(i);
  if (!t || t->empty()) bad_input(r.node(), "input " + std::to_string(i) + " is missing");
  return *t;
}

// An axis in [-rank, rank) as a position in [0, rank).
inline int64_t normalize_axis(const core::Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    bad_input(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Row-major strides in elements.
inline std::vector<int64_t> contiguous_strides(const core::Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t product(const core::Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

// The values of an integer input that describes shapes, axes or counts.
inline std::vector<int64_t> int_input_values(const core::Node& node, const core::Tensor& t, const char* what) {
  if (t.dtype() != core::DType::I64 && t.dtype() != core::DType::I32)
    bad_input(node, std::string(what) + " must be int64 or int32, not " + core::dtype_name(t.dtype()));
  return t.to_int64_vector();
}

// A tensor viewing `count` elements of `base` from element `offset` on; it
// keeps `base`'s memory alive. Inputs are never written, so views of them are
// safe outputs (Slice, Split and Scan inputs use this to avoid copies).
inline core::Tensor view_of(const core::Tensor& base, size_t offset, core::Shape shape) {
  auto* p = static_cast<char*>(const_cast<void*>(base.raw())) + offset * core::dtype_size(base.dtype());
  return core::Tensor::wrap(base.dtype(), std::move(shape), p, base.owner());
}

// Calls f(T{}) with the unsigned integer type of an element size, for
// kernels that only move elements around (every dtype heterod knows is 1, 2,
// 4 or 8 bytes).
template <class F>
decltype(auto) visit_elem_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: fail(HETERO_NOT_SUPPORTED, "elements of " + std::to_string(elem_size) + " bytes are not supported");
  }
}

template <class F>
decltype(auto) visit_by_size(core::DType dtype, F&& f) {
  if (core::dtype_size(dtype) == 0)
    fail(HETERO_NOT_SUPPORTED, std::string("tensors of type ") + core::dtype_name(dtype) + " are not supported");
  return visit_elem_size(core::dtype_size(dtype), std::forward<F>(f));
}

// Calls f(T{}) with the C++ type of a dtype for kernels that compare or
// compute. float16/bfloat16 are not listed: kernels that accept them convert.
template <class F>
decltype(auto) visit_arithmetic(const core::Node& node, core::DType dtype, F&& f) {
  using core::DType;
  switch (dtype) {
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    case DType::I8: return f(int8_t{});
    case DType::U8: return f(uint8_t{});
    case DType::I16: return f(int16_t{});
    case DType::U16: return f(uint16_t{});
    case DType::I32: return f(int32_t{});
    case DType::U32: return f(uint32_t{});
    case DType::I64: return f(int64_t{});
    case DType::U64: return f(uint64_t{});
    case DType::Bool: return f(bool{});
    default:
      fail(HETERO_NOT_SUPPORTED,
           node.describe() + ": element type " + core::dtype_name(dtype) + " is not supported");
  }
}

// Writes `v` converted to `dtype` at element i of `data` (slow; for fill
// values and small outputs, not inner loops).
inline void store_double(core::DType dtype, void* data, size_t i, double v) {
  using core::DType;
  switch (dtype) {
    case DType::F32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::F64: static_cast<double*>(data)[i] = v; return;
    case DType::F16: static_cast<uint16_t*>(data)[i] = core::float_to_half(static_cast<float>(v)); return;
    case DType::BF16: static_cast<uint16_t*>(data)[i] = core::float_to_bf16(static_cast<float>(v)); return;
    case DType::I8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); return;
    case DType::U8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); return;
    case DType::I16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); return;
    case DType::U16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(v); return;
    case DType::I32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); return;
    case DType::U32: static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(v); return;
    case DType::I64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); return;
    case DType::U64: static_cast<uint64_t*>(data)[i] = static_cast<uint64_t>(v); return;
    case DType::Bool: static_cast<uint8_t*>(data)[i] = v != 0; return;
    default:
      fail(HETERO_NOT_SUPPORTED, std::string("cannot write elements of type ") + core::dtype_name(dtype));
  }
}

// Fills `count` elements at `dst` with copies of the element at `value`
// (which may be dst itself: then the first element is replicated).
inline void fill_elements(void* dst, const void* value, size_t count, size_t elem_size) {
  if (count == 0) return;
  if (dst != value) std::memcpy(dst, value, elem_size);
  // Doubling copies: log(count) memcpy calls of growing size.
  size_t done = 1;
  auto* d = static_cast<char*>(dst);
  while (done < count) {
    const size_t n = std::min(done, count - done);
    std::memcpy(d + done * elem_size, d, n * elem_size);
    done += n;
  }
}

// The extra family registration functions of the files the shape, data
// movement and misc families were split into; those families call them.
void register_transpose_kernels(KernelRegistry& r);
void register_slice_pad_kernels(KernelRegistry& r);
void register_gather_scatter_kernels(KernelRegistry& r);
void register_resize_kernels(KernelRegistry& r);
void register_einsum_kernels(KernelRegistry& r);
void register_grid_sample_kernels(KernelRegistry& r);

}  // namespace hetero::cpu
