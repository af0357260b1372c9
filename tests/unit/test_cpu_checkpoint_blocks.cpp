// The CPU driver's own loops split a long node into blocks with a
// checkpoint between two (drivers/cpu/checkpoint_blocks.h): each case runs
// one kernel on an input several blocks long, counts its checkpoints, and
// checks every output element (or, for the costly ones, elements on either
// side of many block edges) against a plain loop here. A block edge that
// loses or repeats a row shows up as a wrong element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

constexpr int kThreads = 2;

// Small integers (exact in float32 sums of millions of them), no period
// that lines up with a block or a row.
Tensor pattern(const Shape& shape, int offset = 0) {
  Tensor t = Tensor::allocate(DType::F32, shape, false);
  float* v = t.data<float>();
  for (size_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(int64_t((i + offset) * 7919 % 23) - 11);
  return t;
}

// Runs the node once and returns its outputs, expecting at least two blocks.
std::vector<Tensor> run_in_blocks(const KernelNode& n, std::vector<std::optional<Tensor>> inputs) {
  size_t checkpoints = 0;
  std::vector<Tensor> out = n.run_counting_checkpoints(std::move(inputs), checkpoints, kThreads);
  EXPECT_GE(checkpoints, 1u) << n.node->op_type << " ran whole";
  return out;
}

// Every element of `got` against want(i); stops at the first few wrong ones.
template <typename T, typename Want>
void expect_all(const Tensor& got, size_t count, Want want) {
  ASSERT_EQ(got.numel(), count);
  int wrong = 0;
  for (size_t i = 0; i < count && wrong < 5; ++i)
    if (got.data<T>()[i] != want(i)) {
      ADD_FAILURE() << "element " << i << ": " << got.data<T>()[i] << ", want " << want(i);
      ++wrong;
    }
}

TEST(CpuCheckpointBlocks, BroadcastBinaryOps) {
  // Many rows: [4096, 2048] + [2048].
  const Tensor x = pattern({4096, 2048}), row = pattern({2048}, 5);
  KernelNode add("Add", 14, 2);
  const Tensor y = run_in_blocks(add, {x, row})[0];
  expect_all<float>(y, x.numel(), [&](size_t i) { return x.data<float>()[i] + row.data<float>()[i % 2048]; });
  // One long row: same-shape operands.
  const Tensor a = pattern({1 << 23}), b = pattern({1 << 23}, 3);
  KernelNode mul("Mul", 14, 2);
  const Tensor z = run_in_blocks(mul, {a, b})[0];
  expect_all<float>(z, a.numel(), [&](size_t i) { return a.data<float>()[i] * b.data<float>()[i]; });
}

TEST(CpuCheckpointBlocks, UnaryAndCast) {
  const Tensor x = pattern({1 << 23});
  KernelNode relu("Relu", 14, 1);
  expect_all<float>(run_in_blocks(relu, {x})[0], x.numel(),
                    [&](size_t i) { return std::max(0.0f, x.data<float>()[i]); });
  KernelNode cast("Cast", 19, 1);
  cast.attr_int("to", static_cast<int64_t>(DType::F64));
  expect_all<double>(run_in_blocks(cast, {x})[0], x.numel(), [&](size_t i) { return double(x.data<float>()[i]); });
}

TEST(CpuCheckpointBlocks, Reductions) {
  // One long row, split into parts whose sums combine.
  const Tensor row = pattern({1, 1 << 24});
  KernelNode sum("ReduceSum", 11, 1);
  sum.attr_ints("axes", {1});
  double want = 0;
  for (size_t i = 0; i < row.numel(); ++i) want += row.data<float>()[i];
  EXPECT_EQ(run_in_blocks(sum, {row})[0].data<float>()[0], static_cast<float>(want));
  // [outer, n, inner] blocks: the max over axis 0 of [8192, 2048].
  const Tensor tall = pattern({8192, 2048});
  KernelNode max("ReduceMax", 11, 1);
  max.attr_ints("axes", {0});
  expect_all<float>(run_in_blocks(max, {tall})[0], 2048, [&](size_t j) {
    float m = -1e30f;
    for (size_t k = 0; k < 8192; ++k) m = std::max(m, tall.data<float>()[k * 2048 + j]);
    return m;
  });
  // Axes apart: the general form.
  const Tensor cube = pattern({256, 256, 256});
  KernelNode apart("ReduceSum", 11, 1);
  apart.attr_ints("axes", {0, 2});
  expect_all<float>(run_in_blocks(apart, {cube})[0], 256, [&](size_t j) {
    double s = 0;
    for (size_t i = 0; i < 256; ++i)
      for (size_t k = 0; k < 256; ++k) s += cube.data<float>()[(i * 256 + j) * 256 + k];
    return static_cast<float>(s);
  });
}

TEST(CpuCheckpointBlocks, Copies) {
  const Tensor x = pattern({4096, 2048});
  // Transpose: tiles, then contiguous runs.
  KernelNode t("Transpose", 13, 1);
  t.attr_ints("perm", {1, 0});
  expect_all<float>(run_in_blocks(t, {x})[0], x.numel(),
                    [&](size_t i) { return x.data<float>()[(i % 4096) * 2048 + i / 4096]; });
  KernelNode runs("Transpose", 13, 1);
  runs.attr_ints("perm", {1, 0, 2});
  const Tensor x3 = x.reshaped({64, 64, 2048});
  expect_all<float>(run_in_blocks(runs, {x3})[0], x.numel(), [&](size_t i) {
    const size_t a = i / (64 * 2048), b = i / 2048 % 64, c = i % 2048;
    return x.data<float>()[(b * 64 + a) * 2048 + c];
  });
  // Concat along the rows' axis.
  KernelNode concat("Concat", 13, 2);
  concat.attr_int("axis", 1);
  expect_all<float>(run_in_blocks(concat, {x, x})[0], 2 * x.numel(),
                    [&](size_t i) { return x.data<float>()[i / 4096 * 2048 + i % 2048]; });
  // Gather of every row, last first.
  std::vector<int64_t> reversed(4096);
  for (int64_t k = 0; k < 4096; ++k) reversed[size_t(k)] = 4095 - k;
  KernelNode gather("Gather", 13, 2);
  expect_all<float>(run_in_blocks(gather, {x, i64(reversed)})[0], x.numel(),
                    [&](size_t i) { return x.data<float>()[(4095 - i / 2048) * 2048 + i % 2048]; });
  // Expand and ConstantOfShape: serial copies, in pieces.
  const Tensor row = pattern({1, 2048}, 9);
  KernelNode expand("Expand", 13, 2);
  expect_all<float>(run_in_blocks(expand, {row, i64({8192, 2048})})[0], 8192 * 2048,
                    [&](size_t i) { return row.data<float>()[i % 2048]; });
  KernelNode fill("ConstantOfShape", 9, 1);
  Tensor seven = Tensor::allocate(DType::F32, {1});
  seven.data<float>()[0] = 7;
  core::Attribute value;
  value.name = "value";
  value.type = core::AttrType::Tensor;
  value.t = seven;
  fill.node->attributes.push_back(value);
  expect_all<float>(run_in_blocks(fill, {i64({8192, 2048})})[0], 8192 * 2048, [](size_t) { return 7.0f; });
}

TEST(CpuCheckpointBlocks, PoolingAndSoftmax) {
  // MaxPool over 9x9 windows of [1, 4, 1024, 1024].
  const Tensor x = pattern({1, 4, 1024, 1024});
  KernelNode pool("MaxPool", 12, 1);
  pool.attr_ints("kernel_shape", {9, 9});
  const Tensor y = run_in_blocks(pool, {x})[0];
  const int64_t out = 1024 - 8;
  ASSERT_EQ(y.shape(), (Shape{1, 4, out, out}));
  expect_all<float>(y, size_t(4 * out * out), [&](size_t p) {
    const int64_t c = int64_t(p) / (out * out), h = int64_t(p) / out % out, w = int64_t(p) % out;
    float m = -1e30f;
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 9; ++j) m = std::max(m, x.data<float>()[(c * 1024 + h + i) * 1024 + w + j]);
    return m;
  });
  // Softmax of [4096, 2048] rows: each sums to 1.
  const Tensor s = run_in_blocks(KernelNode("Softmax", 13, 1), {pattern({4096, 2048})})[0];
  for (size_t r = 0; r < 4096; ++r) {
    double total = 0;
    for (size_t k = 0; k < 2048; ++k) total += s.data<float>()[r * 2048 + k];
    ASSERT_NEAR(total, 1.0, 1e-4) << "row " << r;
  }
}

TEST(CpuCheckpointBlocks, Einsum) {
  // A product: rows of the output in blocks.
  const Tensor a = pattern({512, 1024}), b = pattern({1024, 512}, 4);
  KernelNode product("Einsum", 12, 2);
  product.attr_string("equation", "ij,jk->ik");
  const Tensor y = run_in_blocks(product, {a, b})[0];
  for (size_t p = 0; p < y.numel(); p += 997) {
    const size_t i = p / 512, k = p % 512;
    double s = 0;
    for (size_t j = 0; j < 1024; ++j) s += double(a.data<float>()[i * 1024 + j]) * b.data<float>()[j * 512 + k];
    EXPECT_EQ(y.data<float>()[p], static_cast<float>(s)) << "element " << p;
  }
  // Three operands: the general loop, serial.
  const Tensor c = pattern({64, 64}), d = pattern({64, 64}, 1), e = pattern({64, 64}, 2);
  KernelNode chain("Einsum", 12, 3);
  chain.attr_string("equation", "ij,jk,kl->il");
  const Tensor z = run_in_blocks(chain, {c, d, e})[0];
  for (size_t p = 0; p < z.numel(); p += 61) {
    const size_t i = p / 64, l = p % 64;
    double s = 0;
    for (size_t j = 0; j < 64; ++j)
      for (size_t k = 0; k < 64; ++k)
        s += double(c.data<float>()[i * 64 + j]) * d.data<float>()[j * 64 + k] * e.data<float>()[k * 64 + l];
    EXPECT_EQ(z.data<float>()[p], static_cast<float>(s)) << "element " << p;
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
