// Element types. The numbering is ONNX's TensorProto.DataType so that import,
// blobs, the wire protocol and the C ABI (hetero_dtype) share one set of values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hetero::core {

enum class DType : int32_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
};

// Size of one element in bytes; 0 for Undefined and String (not a fixed size).
size_t dtype_size(DType dtype) noexcept;
// "float32", "int64", ... as NumPy and ONNX Runtime spell them.
const char* dtype_name(DType dtype) noexcept;
// Parses dtype_name()'s spelling; returns Undefined when unknown.
DType dtype_from_name(const std::string& name) noexcept;
// True for the values above that name a type heterod knows.
bool dtype_is_known(int32_t value) noexcept;

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::F32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::F64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::I8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::U8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::I16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::U16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::I32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::U32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::I64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::U64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h) noexcept;
uint16_t float_to_half(float f) noexcept;
float bf16_to_float(uint16_t b) noexcept;
uint16_t float_to_bf16(float f) noexcept;

}  // namespace hetero::core
