// Vectorisable float32 math for hot activation loops. libm's expf is an
// opaque call per element, so a Sigmoid or Softmax over a feature map runs
// scalar; the version here is plain arithmetic that GCC turns into SIMD code.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace hetero::cpu {

// e^x within 2 ulp on [-87, 88], 0 below, +inf above (exp(88..88.72) is
// finite but no caller of this function cares: they take exp of values that
// are <= 0 or feed it to 1/(1+e)). NaN stays NaN.
//
// e^x = 2^n * e^r with n = round(x / ln2) and r = x - n*ln2 in [-ln2/2, ln2/2];
// e^r is Cephes' degree-7 minimax polynomial; 2^n is built in the exponent
// bits. Rounding uses the 1.5*2^23 trick (SSE2 has no vector round), which
// also leaves n in the low mantissa bits, so no float->int conversion is needed.
inline float fast_expf(float x) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float k = xc * 1.44269504088896341f + kMagic;
  const float n = k - kMagic;
  float r = xc - n * 0.693359375f;  // ln2 split in two for an exact product
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const uint32_t bits = (std::bit_cast<uint32_t>(k) - std::bit_cast<uint32_t>(kMagic) + 127u) << 23;
  float result = p * std::bit_cast<float>(bits);
  result = x < -87.0f ? 0.0f : result;
  result = x > 88.0f ? std::numeric_limits<float>::infinity() : result;
  return result;
}

// tanh(x) within 5 ulp, vectorisable: (1 - e^-2|x|) / (1 + e^-2|x|) with
// the sign of x, and the odd series below |x| = 0.1, where that quotient
// loses digits to cancellation. NaN stays NaN.
inline float fast_tanhf(float x) {
  const float a = x < 0 ? -x : x;
  const float e = fast_expf(-2.0f * a);
  const float q = (1.0f - e) / (1.0f + e);
  const float a2 = a * a;
  const float series = a * (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315))));
  const float t = a < 0.1f ? series : q;
  return x < 0 ? -t : t;
}

// 1 / (1 + e^-x), vectorisable.
inline float fast_sigmoidf(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

}  // namespace hetero::cpu
