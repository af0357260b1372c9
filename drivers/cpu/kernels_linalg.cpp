// Linear algebra on batches of small matrices: Det (opset 11 and later).
//
// The determinant comes from an LU factorisation with partial pivoting in
// double: the product of the pivots, negated once per row swap. A matrix
// whose pivot column is all zero is singular and its determinant is 0.
#include <cmath>
#include <utility>
#include <vector>

#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::Shape;
using core::Tensor;

// Destroys `a` (m x m, row-major).
double determinant(double* a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[pivot * m + k])) pivot = i;
    const double p = a[pivot * m + k];
    if (p == 0) return 0;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    det *= p;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / p;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

}  // namespace

std::unique_ptr<Kernel> make_det(const KernelBuild& b) {
  require_float_input(b, 0);
  if (const std::vector<core::Dim>* dims = b.input_dims(0)) {
    if (dims->size() < 2) b.invalid("the input must be [..., M, M], got rank " + std::to_string(dims->size()));
    const core::Dim &rows = (*dims)[dims->size() - 2], &cols = dims->back();
    if (rows.known() && cols.known() && rows.size != cols.size)
      b.invalid("the matrices are " + std::to_string(rows.size) + "x" + std::to_string(cols.size) + ", not square");
  }
  return make_fn_kernel([](KernelRun& r) {
    const Tensor& x_in = required_input(r, 0);
    check_float_input(r, x_in);
    const size_t rank = x_in.rank();
    if (rank < 2 || x_in.dim(rank - 1) != x_in.dim(rank - 2))
      bad_input(r.node(), "the input must be [..., M, M], got " + core::shape_to_string(x_in.shape()));
    const int64_t m = x_in.dim(rank - 1);
    const Shape out_shape(x_in.shape().begin(), x_in.shape().end() - 2);
    FloatOutput out(r, 0, x_in.dtype(), out_shape);
    const Tensor x = widen_half(x_in);
    const int64_t batch = product(x.shape(), 0, rank - 2);
    std::vector<double> a(static_cast<size_t>(m * m));
    dispatch(FloatTypes{}, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < batch; ++i) {
        const T* src = x.data<T>() + i * m * m;
        for (size_t j = 0; j < a.size(); ++j) a[j] = static_cast<double>(src[j]);
        out.tensor().data<T>()[i] = static_cast<T>(determinant(a.data(), m));
      }
    });
    out.finish();
  });
}

}  // namespace hetero::cpu
