// The CPU driver's matrix products: MatMul and Gemm on oneDNN against naive
// loops (broadcast batches, 1-D operands, transposes, alpha, beta and every
// shape of C), and Einsum through both its matrix-product and loop paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "drivers/cpu/post_ops.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {

namespace {

// oneDNN's kernels are threaded: run them on two threads.
constexpr int kThreads = 2;

// Naive numpy matmul (1-D operands promoted and squeezed back).
core::Tensor ref_matmul(const core::Tensor& a, const core::Tensor& b) {
  core::Shape as = a.shape(), bs = b.shape();
  const bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  const size_t rank = std::max(as.size(), bs.size());
  as.insert(as.begin(), rank - as.size(), 1);
  bs.insert(bs.begin(), rank - bs.size(), 1);
  const int64_t M = as[rank - 2], K = as[rank - 1], N = bs[rank - 1];
  core::Shape ys(rank);
  for (size_t i = 0; i + 2 < rank; ++i) ys[i] = std::max(as[i], bs[i]);
  ys[rank - 2] = M;
  ys[rank - 1] = N;
  core::Tensor y = core::Tensor::allocate(core::DType::F32, ys);
  const int64_t batches = static_cast<int64_t>(y.numel()) / (M * N);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Decompose the batch index and map it onto each operand (size-1 dims broadcast).
    int64_t rem = bi, aoff = 0, boff = 0, astride = M * K, bstride = K * N;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t idx = rem % ys[d];
      rem /= ys[d];
      aoff += (as[d] == 1 ? 0 : idx) * astride;
      boff += (bs[d] == 1 ? 0 : idx) * bstride;
      astride *= as[d];
      bstride *= bs[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a.data<float>()[aoff + m * K + k]) * b.data<float>()[boff + k * N + n];
        y.data<float>()[(bi * M + m) * N + n] = static_cast<float>(acc);
      }
  }
  core::Shape out = ys;
  if (bv) out.erase(out.end() - 1);
  if (av) out.erase(out.end() - (bv ? 1 : 2));
  return y.reshaped(out);
}

TEST(CpuDnnlMatMul, BroadcastingAndVectors) {
  std::mt19937 rng(21);
  const std::vector<std::pair<core::Shape, core::Shape>> cases = {
      {{3, 4}, {4, 5}},       {{4}, {4, 5}},          {{3, 4}, {4}},          {{4}, {4}},
      {{2, 3, 4}, {4, 5}},    {{2, 1, 3, 4}, {5, 4, 6}}, {{1, 3, 4}, {2, 4, 5}}, {{2, 3, 4}, {2, 4, 5}},
      {{4}, {2, 4, 5}},       {{2, 3, 4}, {4}},       {{1, 7, 33}, {33, 17}},
  };
  for (const auto& [as, bs] : cases) {
    for (bool constant_b : {false, true}) {
      const core::Tensor a = random_f32(as, rng), b = random_f32(bs, rng);
      KernelNode nb("MatMul", 17, 2);
      if (constant_b) nb.constant(1, b);
      const auto y = nb.run({a, b}, 1, kThreads);
      EXPECT_TRUE(all_close(y[0], ref_matmul(a, b)))
          << core::shape_to_string(as) << " x " << core::shape_to_string(bs) << " constant B " << constant_b;
    }
  }
}

core::Tensor transpose2d(const core::Tensor& t) {
  const int64_t r = t.dim(0), c = t.dim(1);
  core::Tensor o = core::Tensor::allocate(core::DType::F32, {c, r});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) o.data<float>()[j * r + i] = t.data<float>()[i * c + j];
  return o;
}

TEST(CpuDnnlGemm, TransposesScalesAndBias) {
  std::mt19937 rng(22);
  const int64_t M = 5, K = 7, N = 6;
  const std::vector<core::Shape> c_shapes = {{}, {N}, {1, N}, {M, 1}, {M, N}, {1}};
  int t = 0;
  for (const core::Shape& cs : c_shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const float alpha = t % 3 == 0 ? 1.0f : 0.5f, beta = t % 2 == 0 ? 1.0f : -2.0f;
        const bool constant_bc = t % 4 < 2;
        ++t;
        const core::Tensor a = random_f32(ta ? core::Shape{K, M} : core::Shape{M, K}, rng);
        const core::Tensor b = random_f32(tb ? core::Shape{N, K} : core::Shape{K, N}, rng);
        const core::Tensor c = random_f32(cs, rng);
        KernelNode nb("Gemm", 17, 3);
        nb.attr_int("transA", ta).attr_int("transB", tb).attr_float("alpha", alpha).attr_float("beta", beta);
        if (constant_bc) nb.constant(1, b).constant(2, c);
        const auto y = nb.run({a, b, c}, 1, kThreads);
        core::Tensor expected = ref_matmul(ta ? transpose2d(a) : a, tb ? transpose2d(b) : b);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            const size_t ci = cs.size() == 2 ? (cs[0] == 1 ? 0 : m) * cs[1] + (cs[1] == 1 ? 0 : n)
                                             : (c.numel() == 1 ? 0 : static_cast<size_t>(n));
            float& v = expected.data<float>()[m * N + n];
            v = alpha * v + beta * c.data<float>()[ci];
          }
        EXPECT_TRUE(all_close(y[0], expected)) << "C " << core::shape_to_string(cs) << " transA " << ta << " transB "
                                               << tb << " constant " << constant_bc;
      }
}

// Einsum through both of its paths against explicit loops.
// A product past the kernel's block size (2^35 multiply-adds) runs in blocks
// of rows with a checkpoint between two: rows on either side of each block
// edge, and the short last block, are right, plain and transposed (Gemm's
// transA), with a constant B and with B given at run time.
TEST(CpuDnnlMatMul, LargeProductsInBlocksOfRows) {
  const int64_t M = 4100, K = 4096, N = 2048;  // blocks of 2048 rows: 2048, 2048, 4
  std::mt19937 rng(23);
  const core::Tensor a = random_f32({M, K}, rng), b = random_f32({K, N}, rng);
  const core::Tensor a_t = transpose2d(a);
  for (int variant = 0; variant < 2; ++variant) {
    KernelNode node(variant == 0 ? "MatMul" : "Gemm", 13, 2);
    if (variant == 1) node.attr_int("transA", 1).constant(1, b);
    const core::Tensor y = node.run_once({variant == 0 ? a : a_t, b}, 1, kThreads)[0];
    ASSERT_EQ(y.shape(), (core::Shape{M, N}));
    for (int64_t m : {int64_t{0}, int64_t{2047}, int64_t{2048}, int64_t{4095}, int64_t{4096}, M - 1})
      for (int64_t n : {int64_t{0}, int64_t{1000}, N - 1}) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k) want += double(a.data<float>()[m * K + k]) * b.data<float>()[k * N + n];
        EXPECT_NEAR(y.data<float>()[m * N + n], want, 1e-3 * std::max(1.0, std::abs(want)))
            << (variant == 0 ? "MatMul" : "Gemm transA") << " row " << m << " column " << n;
      }
  }
}

TEST(CpuEinsum, EinsumBatchedProductsAndDiagonals) {
  std::mt19937 rng(9);
  const core::Tensor a = random_f32({2, 3, 4, 5}, rng), b = random_f32({2, 3, 6, 5}, rng);
  KernelNode n("Einsum", 12, 2);
  n.attr_string("equation", "bhqd,bhkd->bhqk");
  const core::Tensor y = n.run({a, b}, 1, 2)[0];
  ASSERT_EQ(y.shape(), (core::Shape{2, 3, 4, 6}));
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t q = 0; q < 4; ++q)
      for (int64_t k = 0; k < 6; ++k) {
        double acc = 0;
        for (int64_t d = 0; d < 5; ++d) acc += double(a.data<float>()[(bh * 4 + q) * 5 + d]) * b.data<float>()[(bh * 6 + k) * 5 + d];
        ASSERT_NEAR(y.data<float>()[(bh * 4 + q) * 6 + k], acc, 1e-5);
      }
  // Output order that needs a final permute, and an implicit output.
  KernelNode t("Einsum", 12, 2);
  t.attr_string("equation", "ij,jk->ki");
  const core::Tensor m = iota_f32({2, 3}), k = iota_f32({3, 2});
  EXPECT_EQ(floats(t.run({m, k})[0]), (std::vector<float>{10, 28, 13, 40}));
  KernelNode imp("Einsum", 12, 2);
  imp.attr_string("equation", "ij,jk");
  EXPECT_EQ(floats(imp.run({m, k})[0]), (std::vector<float>{10, 13, 28, 40}));
  // Diagonal, trace over one operand, broadcast ellipsis and int64 go through the loop.
  KernelNode diag("Einsum", 12, 1);
  diag.attr_string("equation", "ii->i");
  EXPECT_EQ(floats(diag.run({iota_f32({3, 3})})[0]), (std::vector<float>{0, 4, 8}));
  KernelNode trace("Einsum", 12, 1);
  trace.attr_string("equation", "ii");
  EXPECT_EQ(floats(trace.run({iota_f32({3, 3})})[0]), (std::vector<float>{12}));
  KernelNode ell("Einsum", 12, 2);
  ell.attr_string("equation", "...ij,...jk->...ik");
  const core::Tensor e = ell.run({core::Tensor::from_vector<int64_t>({1, 2, 3, 4}, {1, 2, 2}),
                                  core::Tensor::from_vector<int64_t>({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2})})[0];
  EXPECT_EQ(e.shape(), (core::Shape{2, 2, 2}));
  EXPECT_EQ(ints(e), (std::vector<int64_t>{1, 2, 3, 4, 2, 4, 6, 8}));
  expect_status(HETERO_INVALID_ARGUMENT, [&] { t.run({m, iota_f32({4, 2})}); });
}

}  // namespace

}  // namespace hetero::cpu::testing
