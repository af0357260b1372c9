// Permuting copies of dense tensors: the engine behind Transpose, and the
// reorders DepthToSpace, SpaceToDepth and Einsum are built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// Writes the elements of `in` (shape `in_shape`, `elem_size` bytes each,
// row-major) to `out` so that output dim i is input dim perm[i]. `perm` must
// be a permutation of 0..rank-1 (callers validate it). Runs on r's threads,
// in checkpoint blocks (drivers/cpu/checkpoint_blocks.h).
void permute_copy(KernelRun& r, const void* in, void* out, const core::Shape& in_shape,
                  const std::vector<int64_t>& perm, size_t elem_size);

// True when permuting by `perm` leaves the bytes in the same order (only
// size-1 dims move), so the result can be a reshaped view of the input.
bool permutation_keeps_layout(const core::Shape& in_shape, const std::vector<int64_t>& perm);

}  // namespace hetero::cpu
