#include "drivers/cpu/lane_fft.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/error.h"
#include "drivers/cpu/isa_clones.h"
#include "drivers/cpu/transpose16.h"

namespace hetero::cpu {

namespace {

// One row: value j of sixteen frames.
using Lanes = Floats16;
static_assert(sizeof(Lanes) == LaneRealFft::kLanes * sizeof(float));

HETERO_ISA_CLONES void transform_lanes(float* re_floats, float* im_floats, size_t n, const float* cos_table,
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

// The rows of sixteen frames `stride` apart: sixteen samples of every frame
// at a time, sixteen loads transposed in registers into sixteen rows.
HETERO_ISA_CLONES void load_strided(float* re, float* im, const uint32_t* slots, size_t n, const float* first,
                                    ptrdiff_t stride, const float* window) {
  constexpr size_t kLanes = LaneRealFft::kLanes;
  static_assert(kLanes == 16, "rows of sixteen lanes: transpose16");
  for (size_t j0 = 0; j0 < n; j0 += kLanes) {
    Lanes v[kLanes];
    for (size_t l = 0; l < kLanes; ++l)
      std::memcpy(&v[l], first + static_cast<ptrdiff_t>(l) * stride + j0, sizeof(Lanes));
    transpose16(v);
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
    re[at] = frame[2 * j] * window[2 * j];
    im[at] = frame[2 * j + 1] * window[2 * j + 1];
  }
}

void LaneRealFft::load_frames(float* re, float* im, const float* first, ptrdiff_t stride, const float* window) const {
  if (n_ < kLanes) {
    for (size_t lane = 0; lane < kLanes; ++lane)
      load_lane(re, im, lane, first + static_cast<ptrdiff_t>(lane) * stride, window);
    return;
  }
  load_strided(re, im, slots_.data(), n_, first, stride, window);
}

void LaneRealFft::transform(float* re, float* im) const { transform_lanes(re, im, n_, cos_.data(), sin_.data()); }

}  // namespace hetero::cpu
