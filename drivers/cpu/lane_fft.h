// Forward FFTs of real frames, sixteen frames at once, in float32: for the
// kernels that transform many frames of one length (a Conv that is a
// short-time Fourier transform, kernels_conv_dft.cpp).
//
// Frame l lives in lane l of every row: row j holds value j of sixteen
// frames. Every butterfly of a radix-2 FFT is then one 16-wide vector
// operation whatever the frame length, with a twiddle factor that all lanes
// share. The n real samples of a frame pack into n/2 complex values,
// z[j] = x[2j] + i x[2j+1], whose transform splits into the n/2 + 1 bins of
// the real one (as RealFft in fft.h does in double). Samples are loaded
// straight into bit-reversed rows, so no permutation pass runs.
//
// fft.h stays the reference for the spectral ops (DFT, STFT), which run in
// double at any length; this one trades that for speed at power-of-two
// lengths, with float32's error (about log2(n) roundings per bin).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hetero::cpu {

class LaneRealFft {
 public:
  static constexpr size_t kLanes = 16;

  // n: a power of two, at least 4.
  explicit LaneRealFft(size_t n);
  size_t size() const noexcept { return n_; }
  size_t bins() const noexcept { return n_ / 2 + 1; }
  // Floats in each of a transform's two arrays (real parts, imaginary
  // parts): bins() rows of kLanes.
  size_t array_floats() const noexcept { return bins() * kLanes; }

  // Loads lane `lane` of a transform's input: frame[j] * window[j] for
  // j < n. A lane never loaded keeps what the arrays held (zeros, say).
  void load_lane(float* re, float* im, size_t lane, const float* frame, const float* window) const;
  // Loads every lane at once: lane l's frame starts at first + l * stride.
  void load_frames(float* re, float* im, const float* first, ptrdiff_t stride, const float* window) const;

  // In place on 64-byte aligned arrays of array_floats(), loaded through
  // load_lane() or load_frames(): afterwards row k of `re` and `im` holds bin k,
  // sum_j x[j] e^(-2πi jk/n), of each lane's frame, for k <= n/2.
  void transform(float* re, float* im) const;

 private:
  size_t n_;
  std::vector<uint32_t> slots_;  // the bit reversal of j < n/2
  // cos and sin of 2πk/n, k <= n/2: the twiddles of the half-length
  // transform (even k) and of the split into real bins.
  std::vector<float> cos_, sin_;
};

}  // namespace hetero::cpu
