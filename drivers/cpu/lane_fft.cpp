#include "drivers/cpu/lane_fft.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/error.h"

// The driver is built for the baseline x86-64 ISA; the transform is compiled
// once more for AVX2+FMA and for AVX-512, where a row of sixteen floats is
// two registers or one, and the loader picks the clone the processor runs.
#if defined(__x86_64__) && defined(__GNUC__)
#define HETERO_LANE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HETERO_LANE_CLONES
#endif

namespace hetero::cpu {

namespace {

// One row: value j of sixteen frames (GCC's vector extension, lowered to
// whatever registers the clone has).
typedef float Lanes __attribute__((vector_size(LaneRealFft::kLanes * sizeof(float))));

HETERO_LANE_CLONES void transform_lanes(float* re_floats, float* im_floats, size_t n, const float* cos_table,
                                        const float* sin_table) {
  Lanes* re = reinterpret_cast<Lanes*>(re_floats);
  Lanes* im = reinterpret_cast<Lanes*>(im_floats);
  const size_t h = n / 2;
  // Radix-2 decimation in time over the bit-reversed z: the butterflies of
  // stage `len` use e^(-2πi j/len), entry j * n/len of the tables.
  for (size_t len = 2; len <= h; len *= 2) {
    const size_t half = len / 2, step = n / len;
    for (size_t j = 0; j < half; ++j) {
      const float c = cos_table[j * step], s = sin_table[j * step];
      for (size_t a = j; a < h; a += len) {
        const size_t b = a + half;
        const Lanes tr = re[b] * c + im[b] * s;  // (c - is) z[b]
        const Lanes ti = im[b] * c - re[b] * s;
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
      }
    }
  }
  // Z = E + iO, with E and O the transforms of the even and the odd samples;
  // X[k] = E[k] + w^k O[k] (w = e^(-2πi/n)) and, as E and O are transforms
  // of real values, X[h-k] = conj(E[k] - w^k O[k]), where
  // E[k] = (Z[k] + conj Z[h-k]) / 2 and O[k] = (Z[k] - conj Z[h-k]) / 2i.
  const Lanes z0_re = re[0], z0_im = im[0];
  re[0] = z0_re + z0_im;
  re[h] = z0_re - z0_im;
  im[0] = im[h] = Lanes{};
  for (size_t k = 1; k <= h / 2; ++k) {
    const Lanes a_re = re[k], a_im = im[k], b_re = re[h - k], b_im = -im[h - k];
    const Lanes e_re = (a_re + b_re) * 0.5f, e_im = (a_im + b_im) * 0.5f;
    const Lanes o_re = (a_im - b_im) * 0.5f, o_im = (b_re - a_re) * 0.5f;
    const float c = cos_table[k], s = sin_table[k];
    const Lanes wo_re = o_re * c + o_im * s, wo_im = o_im * c - o_re * s;
    re[k] = e_re + wo_re;
    im[k] = e_im + wo_im;
    re[h - k] = e_re - wo_re;  // at k = h/2 this writes row k again, with the same value
    im[h - k] = wo_im - e_im;
  }
}

typedef int32_t LaneIndices __attribute__((vector_size(LaneRealFft::kLanes * sizeof(int32_t))));

// The rows of sixteen frames `stride` apart: sixteen samples of every frame
// at a time, sixteen loads transposed in registers into sixteen rows. The
// transpose swaps the off-diagonal blocks of 8x8, then 4x4, 2x2 and 1x1
// between pairs of rows; a shuffle index >= 16 picks from the second row.
HETERO_LANE_CLONES void load_strided(float* re, float* im, const uint32_t* slots, size_t n, const float* first,
                                     ptrdiff_t stride, const float* window) {
  constexpr size_t kLanes = LaneRealFft::kLanes;
  static_assert(kLanes == 16, "the transpose below is 16x16");
  // For block size s: first row's new values, then the second row's.
  const LaneIndices lo8 = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};
  const LaneIndices hi8 = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
  const LaneIndices lo4 = {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27};
  const LaneIndices hi4 = {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31};
  const LaneIndices lo2 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29};
  const LaneIndices hi2 = {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31};
  const LaneIndices lo1 = {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30};
  const LaneIndices hi1 = {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31};
  for (size_t j0 = 0; j0 < n; j0 += kLanes) {
    Lanes v[kLanes];
    for (size_t l = 0; l < kLanes; ++l) std::memcpy(&v[l], first + static_cast<ptrdiff_t>(l) * stride + j0, sizeof(Lanes));
    auto swap_blocks = [&](size_t s, const LaneIndices& lo, const LaneIndices& hi) {
      for (size_t a = 0; a < kLanes; ++a) {
        if (a & s) continue;
        const Lanes x = v[a], y = v[a + s];
        v[a] = __builtin_shuffle(x, y, lo);
        v[a + s] = __builtin_shuffle(x, y, hi);
      }
    };
    swap_blocks(8, lo8, hi8);
    swap_blocks(4, lo4, hi4);
    swap_blocks(2, lo2, hi2);
    swap_blocks(1, lo1, hi1);
    // v[j] now holds sample j0 + j of every frame: z[(j0 + j) / 2]'s real or imaginary part.
    for (size_t j = 0; j < kLanes; j += 2) {
      const size_t row = size_t{slots[(j0 + j) / 2]} * kLanes;
      *reinterpret_cast<Lanes*>(re + row) = v[j] * window[j0 + j];
      *reinterpret_cast<Lanes*>(im + row) = v[j + 1] * window[j0 + j + 1];
    }
  }
}

}  // namespace

LaneRealFft::LaneRealFft(size_t n) : n_(n) {
  if (n < 4 || (n & (n - 1)) != 0 || n > (size_t{1} << 24))
    fail(HETERO_INTERNAL, "LaneRealFft: length " + std::to_string(n) + " is not a power of two in [4, 2^24]");
  const size_t h = n / 2;
  size_t bits = 0;
  while ((size_t{1} << bits) < h) ++bits;
  slots_.resize(h);
  for (size_t j = 0; j < h; ++j) {
    uint32_t r = 0;
    for (size_t b = 0; b < bits; ++b) r |= static_cast<uint32_t>((j >> b) & 1) << (bits - 1 - b);
    slots_[j] = r;
  }
  cos_.resize(h + 1);
  sin_.resize(h + 1);
  for (size_t k = 0; k <= h; ++k) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    cos_[k] = static_cast<float>(std::cos(angle));
    sin_[k] = static_cast<float>(std::sin(angle));
  }
}

void LaneRealFft::load_lane(float* re, float* im, size_t lane, const float* frame, const float* window) const {
  for (size_t j = 0; j < n_ / 2; ++j) {
    const size_t at = size_t{slots_[j]} * kLanes + lane;  // z[j] = x[2j] + i x[2j+1], bit-reversed
    re[at] = frame ? frame[2 * j] * window[2 * j] : 0.0f;
    im[at] = frame ? frame[2 * j + 1] * window[2 * j + 1] : 0.0f;
  }
}

void LaneRealFft::load_frames(float* re, float* im, const float* first, ptrdiff_t stride,
                              const float* window) const {
  if (n_ < kLanes) {
    for (size_t lane = 0; lane < kLanes; ++lane)
      load_lane(re, im, lane, first + static_cast<ptrdiff_t>(lane) * stride, window);
    return;
  }
  load_strided(re, im, slots_.data(), n_, first, stride, window);
}

void LaneRealFft::transform(float* re, float* im) const { transform_lanes(re, im, n_, cos_.data(), sin_.data()); }

}  // namespace hetero::cpu
