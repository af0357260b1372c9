// Small helpers shared by the CPU driver's shape, data-movement and sorting
// kernels: input checks that raise errors naming the node, axis handling,
// strides, views, fills and a NaN-safe order (dtype dispatch is
// dtype_dispatch.h's).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/dtype_dispatch.h"
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

// A strict total order for sorting: NaN sorts above every number, so that a
// NaN in the data can never break std::sort's preconditions.
template <typename K>
inline bool total_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
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

}  // namespace hetero::cpu
