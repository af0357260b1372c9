#include "core/dtype.h"

#include <cstring>

namespace hetero::core {

namespace {

struct DTypeEntry {
  DType dtype;
  size_t size;
  const char* name;
};

// One table for sizes and names.
constexpr DTypeEntry kDTypes[] = {
    {DType::F32, 4, "float32"}, {DType::U8, 1, "uint8"},     {DType::I8, 1, "int8"},
    {DType::U16, 2, "uint16"},  {DType::I16, 2, "int16"},    {DType::I32, 4, "int32"},
    {DType::I64, 8, "int64"},   {DType::String, 0, "string"}, {DType::Bool, 1, "bool"},
    {DType::F16, 2, "float16"}, {DType::F64, 8, "float64"},  {DType::U32, 4, "uint32"},
    {DType::U64, 8, "uint64"},  {DType::BF16, 2, "bfloat16"},
};

const DTypeEntry* find(DType dtype) {
  for (const auto& e : kDTypes)
    if (e.dtype == dtype) return &e;
  return nullptr;
}

}  // namespace

size_t dtype_size(DType dtype) noexcept {
  const DTypeEntry* e = find(dtype);
  return e ? e->size : 0;
}

const char* dtype_name(DType dtype) noexcept {
  const DTypeEntry* e = find(dtype);
  return e ? e->name : "undefined";
}

DType dtype_from_name(const std::string& name) noexcept {
  for (const auto& e : kDTypes)
    if (name == e.name) return e.dtype;
  return DType::Undefined;
}

bool dtype_is_known(int32_t value) noexcept {
  return find(static_cast<DType>(value)) != nullptr;
}

float half_to_float(uint16_t h) noexcept {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {  // subnormal or zero in half
    if (abs < 0x33000000u) return sign;
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t half = mantissa >> (shift);
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float bf16_to_float(uint16_t b) noexcept {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace hetero::core
