// Helpers of the quantisation tests: models written in ONNX's text syntax
// with generated constants, compiled by the real CPU driver through the
// runtime and run once (run_model, kernel_harness.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"
#include "tests/unit/model_text.h"

namespace hetero::test {

// "{1, 2, 3}" for an initializer's values.
template <typename T>
std::string text_values(const std::vector<T>& v) {
  std::ostringstream s;
  s.precision(9);
  s << '{';
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << +v[i];
  s << '}';
  return s.str();
}

// "uint8[2,3] name = {...}": one initializer of a text model.
template <typename T>
std::string initializer(const std::string& type, const std::string& name, const core::Shape& shape,
                        const std::vector<T>& v) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) dims += ',';
    dims += std::to_string(shape[i]);
  }
  return type + (shape.empty() ? "" : "[" + dims + "]") + " " + name + " = " + text_values(v);
}

// Compiles the text model on CPU (with `config`) and runs it on `inputs`.
inline std::vector<core::Tensor> run_text(const std::string& text, const std::vector<core::Tensor>& inputs,
                                          const driver::Config& config = {}) {
  return cpu::testing::run_model(text.c_str(), inputs, config);
}

template <typename T>
std::vector<T> random_values(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

inline std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Largest |a - b| over two tensors of one dtype, as doubles.
inline double max_abs_diff(const core::Tensor& a, const core::Tensor& b) {
  double worst = a.shape() == b.shape() && a.dtype() == b.dtype() ? 0 : INFINITY;
  for (size_t i = 0; i < a.numel() && i < b.numel(); ++i) worst = std::max(worst, std::fabs(a.as_double(i) - b.as_double(i)));
  return worst;
}

}  // namespace hetero::test
