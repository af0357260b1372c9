// Turning a run-time DType into a C++ element type for templated kernels:
// the one way every CPU kernel does it. A kernel names the element types it
// handles as a TypeList and gets a TypeTag of the one that matched:
//
//   dispatch_or_fail(NumericTypes{}, x.dtype(), r.node(), [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     ...
//   });
//
// dispatch() is the same without the failure (it returns whether a type
// matched), for kernels that try something else first; dispatch_width()
// picks an unsigned integer of the element's width, for kernels that only
// move elements (Transpose, Gather, Slice...) and so handle every dtype.
//
// float16 and bfloat16 have no C++ arithmetic type here; kernels that accept
// them widen to float32 with to_float32() and narrow the result back with
// narrow_from_float32() (ONNX computes these in float precision anyway).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename... Ts>
struct TypeList {};

template <typename... Lists>
struct ConcatTypes;
template <typename... A>
struct ConcatTypes<TypeList<A...>> {
  using type = TypeList<A...>;
};
template <typename... A, typename... B, typename... Rest>
struct ConcatTypes<TypeList<A...>, TypeList<B...>, Rest...> {
  using type = typename ConcatTypes<TypeList<A..., B...>, Rest...>::type;
};

using FloatTypes = TypeList<float, double>;
using SignedIntTypes = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = ConcatTypes<SignedIntTypes, UnsignedIntTypes>::type;
using SignedTypes = ConcatTypes<FloatTypes, SignedIntTypes>::type;
using NumericTypes = ConcatTypes<FloatTypes, IntTypes>::type;
using AllTypes = ConcatTypes<NumericTypes, TypeList<bool>>::type;
using BoolTypes = TypeList<bool>;
// One unsigned integer type per element width heterod's dtypes have.
using WidthTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;

// Calls fn(TypeTag<T>{}) for the T of `List` whose DType is `dtype`. Returns
// false, calling nothing, when `dtype` is not in the list.
template <typename... Ts, typename Fn>
bool dispatch(TypeList<Ts...>, core::DType dtype, Fn&& fn) {
  return ((core::DTypeOf<Ts>::value == dtype ? (fn(TypeTag<Ts>{}), true) : false) || ...);
}

// The run-time refusal of a dtype only known once tensors arrive.
[[noreturn]] inline void unsupported_dtype(const core::Node& node, core::DType dtype) {
  fail(HETERO_NOT_SUPPORTED, node.describe() + ": element type " + core::dtype_name(dtype) + " is not supported");
}

// The same as dispatch(), refusing a `dtype` not in the list.
template <typename List, typename Fn>
void dispatch_or_fail(List list, core::DType dtype, const core::Node& node, Fn&& fn) {
  if (!dispatch(list, dtype, std::forward<Fn>(fn))) unsupported_dtype(node, dtype);
}

// Calls fn(TypeTag<U>{}) with the unsigned integer type U of `elem_size`
// bytes (1, 2, 4 or 8: every dtype heterod knows), for kernels that only
// move elements around.
template <typename Fn>
void dispatch_width(size_t elem_size, Fn&& fn) {
  const core::DType width = elem_size == 1   ? core::DType::U8
                            : elem_size == 2 ? core::DType::U16
                            : elem_size == 4 ? core::DType::U32
                            : elem_size == 8 ? core::DType::U64
                                             : core::DType::Undefined;
  if (!dispatch(WidthTypes{}, width, std::forward<Fn>(fn)))
    fail(HETERO_NOT_SUPPORTED, "elements of " + std::to_string(elem_size) + " bytes are not supported");
}

// The same for the elements of `dtype`; a type without a fixed width
// (strings) fails with NOT_SUPPORTED naming `node`.
template <typename Fn>
void dispatch_width(core::DType dtype, const core::Node& node, Fn&& fn) {
  if (core::dtype_size(dtype) == 0) unsupported_dtype(node, dtype);
  dispatch_width(core::dtype_size(dtype), std::forward<Fn>(fn));
}

// Refuses the node at build time when input i's static dtype is known and is
// neither in `List` nor (with `half_ok`) float16/bfloat16.
template <typename List>
void require_dtype(const KernelBuild& build, size_t i, List, bool half_ok) {
  const core::DType dtype = build.input_dtype(i);
  if (dtype == core::DType::Undefined) return;
  if (half_ok && (dtype == core::DType::F16 || dtype == core::DType::BF16)) return;
  if (!dispatch(List{}, dtype, [](auto) {}))
    build.unsupported(std::string("input ") + std::to_string(i) + " of type " + core::dtype_name(dtype) +
                      " is not supported");
}

// Element conversion as Cast defines it. Floating point to integer truncates
// toward zero; where C++ leaves the result undefined (NaN, out of range) we go
// through int64 like NumPy on x86 does, so out-of-range values wrap and NaN
// becomes the int64 minimum's low bits, never undefined behaviour.
template <typename D, typename S>
D convert(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    constexpr double kTwo63 = 9223372036854775808.0;
    if constexpr (std::is_same_v<D, uint64_t>)
      if (v >= S(0) && static_cast<double>(v) < 2 * kTwo63) return static_cast<D>(v);
    const double d = static_cast<double>(v);
    if (d >= -kTwo63 && d < kTwo63) return static_cast<D>(static_cast<int64_t>(d));
    return static_cast<D>(std::numeric_limits<int64_t>::min());
  } else {
    return static_cast<D>(v);
  }
}

inline bool is_half_type(core::DType dtype) noexcept {
  return dtype == core::DType::F16 || dtype == core::DType::BF16;
}

// A float32 copy of a float16/bfloat16 tensor.
inline core::Tensor to_float32(const core::Tensor& src) {
  core::Tensor dst = core::Tensor::allocate(core::DType::F32, src.shape(), false);
  const uint16_t* s = src.data<uint16_t>();
  float* d = dst.data<float>();
  const size_t n = src.numel();
  if (src.dtype() == core::DType::F16)
    for (size_t i = 0; i < n; ++i) d[i] = core::half_to_float(s[i]);
  else
    for (size_t i = 0; i < n; ++i) d[i] = core::bf16_to_float(s[i]);
  return dst;
}

// Writes float32 `src` into `dst` (float16 or bfloat16, same element count).
inline void narrow_from_float32(const core::Tensor& src, core::Tensor& dst) {
  const float* s = src.data<float>();
  uint16_t* d = dst.data<uint16_t>();
  const size_t n = src.numel();
  if (dst.dtype() == core::DType::F16)
    for (size_t i = 0; i < n; ++i) d[i] = core::float_to_half(s[i]);
  else
    for (size_t i = 0; i < n; ++i) d[i] = core::float_to_bf16(s[i]);
}

// Writes `v` converted to `dtype` at element i of `data` (slow; for fill
// values and small outputs, not inner loops).
inline void store_double(core::DType dtype, void* data, size_t i, double v) {
  if (dtype == core::DType::F16) {
    static_cast<uint16_t*>(data)[i] = core::float_to_half(static_cast<float>(v));
  } else if (dtype == core::DType::BF16) {
    static_cast<uint16_t*>(data)[i] = core::float_to_bf16(static_cast<float>(v));
  } else if (!dispatch(AllTypes{}, dtype, [&](auto tag) {
               using T = typename decltype(tag)::type;
               static_cast<T*>(data)[i] = static_cast<T>(v);
             })) {
    fail(HETERO_NOT_SUPPORTED, std::string("cannot write elements of type ") + core::dtype_name(dtype));
  }
}

// Element-count threshold above which loops run on all OpenMP threads; below
// it the fork/join costs more than the work.
inline constexpr size_t kParallelThreshold = 32768;

}  // namespace hetero::cpu
