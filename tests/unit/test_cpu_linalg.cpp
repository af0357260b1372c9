// Det against the Laplace expansion (long double) for every size up to 6,
// batched, in each float type; singular and permuted matrices exactly; and
// matrices that are not square, refused naming the node.
#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

long double laplace(const std::vector<long double>& a, size_t m) {
  if (m == 0) return 1;
  long double det = 0;
  for (size_t col = 0; col < m; ++col) {
    std::vector<long double> minor;
    for (size_t i = 1; i < m; ++i)
      for (size_t j = 0; j < m; ++j)
        if (j != col) minor.push_back(a[i * m + j]);
    det += (col % 2 ? -1 : 1) * a[col] * laplace(minor, m - 1);
  }
  return det;
}

TEST(CpuLinalg, DetAgainstTheLaplaceExpansion) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> d(-2, 2);
  for (DType dtype : {DType::F32, DType::F64, DType::F16})
    for (int64_t m = 0; m <= 6; ++m) {
      SCOPED_TRACE(std::string(core::dtype_name(dtype)) + " " + std::to_string(m) + "x" + std::to_string(m));
      Tensor x = Tensor::allocate(dtype, {2, 3, m, m});
      for (size_t i = 0; i < x.numel(); ++i) {
        const double v = d(rng);
        if (dtype == DType::F64) x.data<double>()[i] = v;
        else if (dtype == DType::F32) x.data<float>()[i] = static_cast<float>(v);
        else x.data<uint16_t>()[i] = core::float_to_half(static_cast<float>(v));
      }
      std::vector<double> want;
      for (int64_t b = 0; b < 6; ++b) {
        std::vector<long double> a(static_cast<size_t>(m * m));
        for (size_t i = 0; i < a.size(); ++i) a[i] = x.as_double(static_cast<size_t>(b * m * m) + i);
        want.push_back(static_cast<double>(laplace(a, static_cast<size_t>(m))));
      }
      KernelNode n("Det", 11, 1);
      const Tensor y = n.run({x})[0];
      EXPECT_EQ(y.shape(), (Shape{2, 3}));
      EXPECT_EQ(y.dtype(), dtype);
      const double tol = dtype == DType::F16 ? 1e-2 : dtype == DType::F32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(near(y, want, tol, tol));
    }
}

TEST(CpuLinalg, DetOfSingularPermutedAndPlainMatrices) {
  KernelNode n("Det", 11, 1);
  // A 2-D input gives a scalar.
  const Tensor y = n.run({f32({1, 2, 3, 4}, {2, 2})})[0];
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_FLOAT_EQ(y.data<float>()[0], -2);
  // Rank 2 of 3, a zero column, a row swap of the identity.
  const Tensor batch = f32({1, 2, 3, 2, 4, 6, 0, 1, 1,   // rows 1 and 2 dependent
                            0, 5, 1, 0, 2, 2, 0, 7, 3,   // first column zero
                            0, 1, 0, 1, 0, 0, 0, 0, 1},  // a transposition
                           {3, 3, 3});
  EXPECT_EQ(doubles(n.run({batch})[0]), (std::vector<double>{0, 0, -1}));
}

TEST(CpuLinalg, DetOfMatricesThatAreNotSquareIsRefused) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 11]>
g (float[4, 2, 3] x) => (float[4] y) {
  y = Det (x)
})",
                       HETERO_INVALID_MODEL, {"(Det)", "the matrices are 2x3, not square"});
  KernelNode rank("Det", 11, 1);
  rank.input_shape(0, {5});
  expect_error([&] { rank.build(); }, HETERO_INVALID_MODEL, {"node 'n' (Det)", "must be [..., M, M], got rank 1"});
  // Shapes only known at run time.
  KernelNode n("Det", 11, 1);
  expect_error([&] { n.run({f32({1, 2, 3, 4, 5, 6}, {2, 3})}); }, HETERO_INVALID_ARGUMENT,
               {"node 'n' (Det)", "the input must be [..., M, M], got 2x3"});
  expect_error([&] { n.run({tensor<int32_t>({1, 2, 3, 4}, {2, 2})}); }, HETERO_NOT_SUPPORTED, {"int32"});
}

}  // namespace
}  // namespace hetero::cpu::testing
