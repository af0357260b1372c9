// A 16x16 transpose of 32-bit values held in sixteen vector registers, for
// the loops that turn rows into columns: the lane FFT's loads of sixteen
// frames (lane_fft.cpp) and Transpose's tiles (kernels_transpose.cpp).
//
// Each step swaps the off-diagonal s x s blocks of every pair of rows s
// apart, for s = 8, 4, 2, 1: four steps of sixteen two-register shuffles
// (one instruction each on AVX-512) instead of 256 loads and 256 stores.
// The values only move, so any 32-bit type travels as float bits.
//
// Inline into a HETERO_ISA_CLONES function (isa_clones.h), which picks the
// registers: one per row on AVX-512, two on AVX2, four on the baseline.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetero::cpu {

typedef float Floats16 __attribute__((vector_size(16 * sizeof(float))));
typedef int32_t Indices16 __attribute__((vector_size(16 * sizeof(int32_t))));

// v[i][j] becomes v[j][i].
[[gnu::always_inline]] inline void transpose16(Floats16 (&v)[16]) {
  // Per block size s: the first row's new values, then the second row's; an
  // index of 16 or more picks from the second row.
  const Indices16 lo8 = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};
  const Indices16 hi8 = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
  const Indices16 lo4 = {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27};
  const Indices16 hi4 = {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31};
  const Indices16 lo2 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29};
  const Indices16 hi2 = {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31};
  const Indices16 lo1 = {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30};
  const Indices16 hi1 = {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31};
  auto swap_blocks = [&v](size_t s, const Indices16& lo, const Indices16& hi) __attribute__((always_inline)) {
    for (size_t a = 0; a < 16; ++a) {
      if (a & s) continue;
      const Floats16 x = v[a], y = v[a + s];
      v[a] = __builtin_shuffle(x, y, lo);
      v[a + s] = __builtin_shuffle(x, y, hi);
    }
  };
  swap_blocks(8, lo8, hi8);
  swap_blocks(4, lo4, hi4);
  swap_blocks(2, lo2, hi2);
  swap_blocks(1, lo1, hi1);
}

}  // namespace hetero::cpu
