// Softmax, LogSoftmax and Hardmax (reference versions; a oneDNN kernel may
// take over float32 Softmax). Before opset 13 the input is coerced to 2-D
// [prod(dims[:axis]), prod(dims[axis:])] and each row is normalised; from 13
// the op works along `axis` alone. Both are [outer, n, inner] with inner = 1
// for the old form.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/broadcast.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/fast_math.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {
namespace {

using core::DType;
using core::Tensor;

enum class Norm { Softmax, LogSoftmax, Hardmax };

template <typename T>
T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return fast_expf(x);  // arguments are <= 0 here
  else return std::exp(x);
}

// Max and sum of a row with eight independent accumulators, so the loops
// vectorise without the compiler reassociating on its own.
template <typename T>
T row_max(const T* x, size_t n) {
  T m[8];
  for (T& v : m) v = -std::numeric_limits<T>::infinity();
  size_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (size_t j = 0; j < 8; ++j) m[j] = m[j] < x[k + j] ? x[k + j] : m[j];
  for (; k < n; ++k) m[0] = m[0] < x[k] ? x[k] : m[0];
  for (size_t j = 1; j < 8; ++j) m[0] = m[0] < m[j] ? m[j] : m[0];
  return m[0];
}

template <typename T>
T row_sum(const T* x, size_t n) {
  T s[8] = {};
  size_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (size_t j = 0; j < 8; ++j) s[j] += x[k + j];
  for (; k < n; ++k) s[0] += x[k];
  for (size_t j = 1; j < 8; ++j) s[0] += s[j];
  return s[0];
}

// One contiguous row of n elements.
template <typename T>
void normalize_row(Norm norm, const T* x, T* y, size_t n) {
  if (norm == Norm::Hardmax) {
    size_t best = 0;
    for (size_t k = 1; k < n; ++k)
      if (x[k] > x[best]) best = k;
    for (size_t k = 0; k < n; ++k) y[k] = T(0);
    if (n) y[best] = T(1);
    return;
  }
  const T m = row_max(x, n);
  for (size_t k = 0; k < n; ++k) y[k] = exp_of(static_cast<T>(x[k] - m));
  const T s = row_sum(y, n);
  if (norm == Norm::Softmax) {
    const T scale = T(1) / s;
    for (size_t k = 0; k < n; ++k) y[k] *= scale;
  } else {
    const T shift = m + std::log(s);
    for (size_t k = 0; k < n; ++k) y[k] = x[k] - shift;
  }
}

// One [n, inner] block normalised along n: every loop runs across `inner`,
// which is contiguous and vectorises.
template <typename T>
void normalize_block(Norm norm, const T* x, T* y, size_t n, size_t inner, std::vector<T>& m, std::vector<T>& s) {
  m.assign(x, x + inner);
  if (norm == Norm::Hardmax) {
    std::vector<size_t> best(inner, 0);
    for (size_t k = 1; k < n; ++k)
      for (size_t i = 0; i < inner; ++i)
        if (x[k * inner + i] > m[i]) m[i] = x[k * inner + i], best[i] = k;
    for (size_t j = 0; j < n * inner; ++j) y[j] = T(0);
    for (size_t i = 0; i < inner; ++i) y[best[i] * inner + i] = T(1);
    return;
  }
  for (size_t k = 1; k < n; ++k)
    for (size_t i = 0; i < inner; ++i) m[i] = m[i] < x[k * inner + i] ? x[k * inner + i] : m[i];
  s.assign(inner, T(0));
  for (size_t k = 0; k < n; ++k)
    for (size_t i = 0; i < inner; ++i) {
      const T e = exp_of(static_cast<T>(x[k * inner + i] - m[i]));
      y[k * inner + i] = e;
      s[i] += e;
    }
  if (norm == Norm::Softmax) {
    for (size_t i = 0; i < inner; ++i) s[i] = T(1) / s[i];
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 0; i < inner; ++i) y[k * inner + i] *= s[i];
  } else {
    for (size_t i = 0; i < inner; ++i) s[i] = m[i] + std::log(s[i]);
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 0; i < inner; ++i) y[k * inner + i] = x[k * inner + i] - s[i];
  }
}

template <typename T>
void normalize(KernelRun& r, Norm norm, const T* x, T* y, const AxisSplit& s) {
  const bool parallel = r.parallel(s.outer * s.n * s.inner > kParallelThreshold);
  const int64_t outer = static_cast<int64_t>(s.outer);
  // Three passes over each [n, inner] block: a max, the exponentials, a scale.
  const double work = 3.0 * double(s.n) * double(s.inner) * sizeof(T);
  for_checkpoint_blocks(r, outer, work, [&](int64_t begin, int64_t end) {
    parallel_region(parallel, [&] {
      std::vector<T> m, sums;  // per-thread scratch for the block form
#pragma omp for schedule(static)
      for (int64_t o = begin; o < end; ++o) {
        const size_t off = static_cast<size_t>(o) * s.n * s.inner;
        if (s.inner == 1) normalize_row(norm, x + off, y + off, s.n);
        else normalize_block(norm, x + off, y + off, s.n, s.inner, m, sums);
      }
    });
  });
}

std::unique_ptr<Kernel> norm_kernel(const KernelBuild& b, Norm norm) {
  require_dtype(b, 0, FloatTypes{}, true);
  const bool coerce_2d = b.opset < 13;
  const int64_t axis = b.node.attr_int("axis", coerce_2d ? 1 : -1);
  return std::make_unique<FunctionKernel>([norm, coerce_2d, axis](KernelRun& r) {
    const Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input 0 is missing");
    AxisSplit s;
    if (x->rank() == 0) {
      s = {};  // a scalar is a row of one
    } else if (coerce_2d) {
      const size_t ax = normalize_axis(axis, x->rank(), r.node());
      s.outer = s.n = 1;
      for (size_t d = 0; d < x->rank(); ++d) (d < ax ? s.outer : s.n) *= static_cast<size_t>(x->dim(d));
    } else {
      s = split_at_axis(x->shape(), normalize_axis(axis, x->rank(), r.node()));
    }
    if (is_half_type(x->dtype())) {
      const Tensor xf = to_float32(*x);
      Tensor tmp = Tensor::allocate(DType::F32, x->shape(), false);
      normalize(r, norm, xf.data<float>(), tmp.data<float>(), s);
      narrow_from_float32(tmp, r.output(0, x->dtype(), x->shape()));
      return;
    }
    dispatch_or_fail(FloatTypes{}, x->dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      normalize(r, norm, x->data<T>(), r.output(0, x->dtype(), x->shape()).data<T>(), s);
    });
  });
}

}  // namespace

std::unique_ptr<Kernel> make_softmax(const KernelBuild& b) { return norm_kernel(b, Norm::Softmax); }
std::unique_ptr<Kernel> make_log_softmax(const KernelBuild& b) { return norm_kernel(b, Norm::LogSoftmax); }
std::unique_ptr<Kernel> make_hardmax(const KernelBuild& b) { return norm_kernel(b, Norm::Hardmax); }

}  // namespace hetero::cpu
