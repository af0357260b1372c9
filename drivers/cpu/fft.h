// Discrete Fourier transforms of any length, in double precision, for the
// spectral kernels (DFT, STFT).
//
// A power-of-two length runs as an iterative radix-2 FFT. Any other length
// runs through Bluestein's chirp-z identity, jk = (j² + k² - (k-j)²) / 2,
// which turns the transform into a circular convolution of power-of-two size
// m >= 2n - 1, done with three radix-2 FFTs. Real input of even length is
// packed into a complex transform of half the length (RealFft).
//
// Plans are immutable after construction: one plan can serve several
// threads at once, each with its own scratch vector.
#pragma once

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

namespace hetero::cpu {

using Complex = std::complex<double>;

// Working memory of one transform at a time: one per thread, from the
// plan's make_scratch() (sized up front, so that a transform inside a
// parallel loop never allocates).
struct FftScratch {
  std::vector<Complex> convolution, values;
};

class Fft {
 public:
  explicit Fft(size_t n);  // n >= 1
  size_t size() const noexcept { return n_; }
  FftScratch make_scratch() const;

  // In place: data[k] = sum_j data[j] e^(∓2πi jk/n) (− forward, + inverse),
  // unscaled.
  void transform(Complex* data, bool inverse, FftScratch& scratch) const;

 private:
  void radix2(Complex* data) const;  // forward, power-of-two n
  void bluestein(Complex* data, std::vector<Complex>& work) const;

  size_t n_;
  // Radix-2: e^(-2πi k/n) for k < n/2 and the bit-reversal permutation.
  std::vector<Complex> twiddles_;
  std::vector<size_t> bit_reversed_;
  // Bluestein: the chirp e^(-πi k²/n) (k < n), the power-of-two transform of
  // the convolution, and that transform of the conjugate chirp (wrapped).
  std::vector<Complex> chirp_;
  std::unique_ptr<Fft> convolution_;
  std::vector<Complex> chirp_spectrum_;
};

// The forward transform of n real values, bins 0..n/2 (the others are the
// conjugates of these: X[n-k] = conj(X[k])).
class RealFft {
 public:
  explicit RealFft(size_t n);  // n >= 1
  size_t size() const noexcept { return n_; }
  size_t bins() const noexcept { return n_ / 2 + 1; }
  FftScratch make_scratch() const;

  // out[0..bins()) from in[0..n).
  void transform(const double* in, Complex* out, FftScratch& scratch) const;

 private:
  size_t n_;
  // Even n: the half-length complex transform and e^(-2πi k/n), k <= n/2.
  // Odd n: a full-length complex transform of the real values.
  Fft fft_;
  std::vector<Complex> twiddles_;
};

}  // namespace hetero::cpu
