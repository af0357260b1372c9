#include "drivers/cpu/fft.h"

#include <cmath>
#include <numbers>
#include <utility>

namespace hetero::cpu {

namespace {

bool is_power_of_two(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// e^(-2πi k/n), from the angle reduced to [0, 2π) in exact integer steps.
Complex unit_root(size_t k, size_t n) {
  return std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k % n) / static_cast<double>(n));
}

}  // namespace

Fft::Fft(size_t n) : n_(n) {
  if (is_power_of_two(n)) {
    twiddles_.resize(n / 2);
    for (size_t k = 0; k < n / 2; ++k) twiddles_[k] = unit_root(k, n);
    bit_reversed_.resize(n);
    size_t bits = 0;
    while ((size_t{1} << bits) < n) ++bits;
    for (size_t i = 0; i < n; ++i) {
      size_t r = 0;
      for (size_t b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      bit_reversed_[i] = r;
    }
    return;
  }
  size_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  convolution_ = std::make_unique<Fft>(m);
  // k² mod 2n advances by 2k + 1; the angle πk²/n repeats with period 2n,
  // and reducing it exactly keeps the chirp accurate for large k.
  chirp_.resize(n);
  size_t k2 = 0;
  for (size_t k = 0; k < n; ++k) {
    chirp_[k] = std::polar(1.0, -std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n));
    k2 = (k2 + 2 * k + 1) % (2 * n);
  }
  chirp_spectrum_.assign(m, Complex(0));
  chirp_spectrum_[0] = std::conj(chirp_[0]);
  for (size_t k = 1; k < n; ++k) chirp_spectrum_[k] = chirp_spectrum_[m - k] = std::conj(chirp_[k]);
  convolution_->radix2(chirp_spectrum_.data());
}

FftScratch Fft::make_scratch() const {
  FftScratch s;
  if (convolution_) s.convolution.reserve(convolution_->size());
  return s;
}

void Fft::transform(Complex* data, bool inverse, FftScratch& scratch) const {
  // The inverse is the forward transform conjugated on the way in and out.
  if (inverse)
    for (size_t i = 0; i < n_; ++i) data[i] = std::conj(data[i]);
  if (convolution_) bluestein(data, scratch.convolution);
  else radix2(data);
  if (inverse)
    for (size_t i = 0; i < n_; ++i) data[i] = std::conj(data[i]);
}

void Fft::radix2(Complex* data) const {
  for (size_t i = 0; i < n_; ++i)
    if (i < bit_reversed_[i]) std::swap(data[i], data[bit_reversed_[i]]);
  for (size_t len = 2; len <= n_; len <<= 1) {
    const size_t half = len / 2, step = n_ / len;
    for (size_t start = 0; start < n_; start += len)
      for (size_t j = 0; j < half; ++j) {
        const Complex t = twiddles_[j * step] * data[start + j + half];
        data[start + j + half] = data[start + j] - t;
        data[start + j] += t;
      }
  }
}

void Fft::bluestein(Complex* data, std::vector<Complex>& work) const {
  const size_t m = convolution_->size();
  work.assign(m, Complex(0));
  for (size_t j = 0; j < n_; ++j) work[j] = data[j] * chirp_[j];
  convolution_->radix2(work.data());
  // Inverse transform of the product, by conjugation, scaled by 1/m.
  for (size_t k = 0; k < m; ++k) work[k] = std::conj(work[k] * chirp_spectrum_[k]);
  convolution_->radix2(work.data());
  const double scale = 1.0 / static_cast<double>(m);
  for (size_t k = 0; k < n_; ++k) data[k] = chirp_[k] * std::conj(work[k]) * scale;
}

RealFft::RealFft(size_t n) : n_(n), fft_(n % 2 == 0 ? n / 2 : n) {
  if (n % 2 == 0) {
    twiddles_.resize(n / 2 + 1);
    for (size_t k = 0; k <= n / 2; ++k) twiddles_[k] = unit_root(k, n);
  }
}

FftScratch RealFft::make_scratch() const {
  FftScratch s = fft_.make_scratch();
  if (n_ % 2 != 0) s.values.reserve(n_);
  return s;
}

void RealFft::transform(const double* in, Complex* out, FftScratch& scratch) const {
  if (n_ % 2 != 0) {
    // Odd: no half-length packing; the bins are the first half of a complex
    // transform, which needs all n values in place.
    std::vector<Complex>& full = scratch.values;
    full.assign(in, in + n_);
    fft_.transform(full.data(), false, scratch);
    for (size_t k = 0; k < bins(); ++k) out[k] = full[k];
    return;
  }
  // Even: z[j] = x[2j] + i x[2j+1] has Z[k] = E[k] + i O[k], with E and O the
  // transforms of the even and odd samples; then X[k] = E[k] + w^k O[k] with
  // E[k] = (Z[k] + conj Z[h-k]) / 2 and O[k] = (Z[k] - conj Z[h-k]) / 2i.
  const size_t h = n_ / 2;
  for (size_t j = 0; j < h; ++j) out[j] = Complex(in[2 * j], in[2 * j + 1]);
  fft_.transform(out, false, scratch);
  const Complex z0 = out[0];
  out[0] = z0.real() + z0.imag();
  out[h] = z0.real() - z0.imag();
  // Bins k and h - k come from the same pair Z[k], Z[h-k]; the second uses
  // E[h-k] = conj E[k] and O[h-k] = conj O[k].
  for (size_t k = 1; k <= h / 2; ++k) {
    const Complex a = out[k], b = std::conj(out[h - k]);
    const Complex even = (a + b) * 0.5, odd = (a - b) * Complex(0, -0.5);
    out[k] = even + twiddles_[k] * odd;
    out[h - k] = std::conj(even) + twiddles_[h - k] * std::conj(odd);
  }
}

}  // namespace hetero::cpu
