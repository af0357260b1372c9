// NumPy .npy files: a strict reader and a writer for the dtypes heterod
// tensors have. Only what NumPy itself writes for plain arrays is accepted:
// format versions 1-3, a header dict of exactly 'descr', 'fortran_order' and
// 'shape', C order, little-endian (or byte-sized) numeric and bool types, and
// a data size that matches the shape exactly.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace hetero::capi {

// True when `bytes` starts with the .npy magic string.
bool npy_has_magic(std::span<const uint8_t> bytes) noexcept;

// Parses a whole .npy file into a new tensor. Fails with INVALID_ARGUMENT
// (malformed file) or NOT_SUPPORTED (a valid file heterod cannot hold:
// Fortran order, big-endian, structured or object dtypes), the message naming
// `name` and the field at fault. Never reads outside `bytes`, and allocates
// only after the data size has been checked against the header.
core::Tensor npy_decode(std::span<const uint8_t> bytes, const std::string& name);

// A .npy file (version 1, or 2 for very long headers) holding `tensor`.
// NOT_SUPPORTED for dtypes NumPy has no type for (bfloat16).
std::vector<uint8_t> npy_encode(const core::Tensor& tensor);

}  // namespace hetero::capi
