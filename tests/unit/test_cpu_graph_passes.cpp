// The CPU driver's graph passes that change what runs, not how a kernel
// runs: which nodes are left after them (graph_passes.h) and that the
// results are those of the graph as written (optimize=false runs it so).
#include <gtest/gtest.h>

#include <map>

#include "drivers/cpu/graph_passes.h"
#include "tests/unit/quant_test_util.h"

namespace hetero::test {

namespace {

using core::Tensor;

using cpu::testing::optimized_ops;

// The model optimised and as written agree within float rounding.
void expect_same_results(const std::string& text, const std::vector<Tensor>& inputs) {
  const auto fast = run_text(text, inputs);
  const auto plain = run_text(text, inputs, {{"optimize", "false"}});
  ASSERT_EQ(fast.size(), plain.size());
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_LE(max_abs_diff(fast[i], plain[i]), 1e-5) << "output " << i;
}

Tensor rows(size_t rows, size_t cols, unsigned seed) {
  return Tensor::from_vector(random_floats(rows * cols, -3, 3, seed), {int64_t(rows), int64_t(cols)});
}

// A layer normalisation over the last axis as PyTorch exports it before
// opset 17 (the openWakeWord classifiers have two).
std::string layer_norm_model(bool with_affine, bool d_is_an_output) {
  const auto gamma = random_floats(16, 0.5f, 1.5f, 3), beta = random_floats(16, -1, 1, 4);
  std::string text = std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n") +
                     "g (float[4,16] x) => (float[4,16] y" + (d_is_an_output ? ", float[4,16] d" : "") + ") <" +
                     initializer("float", "gamma", {16}, gamma) + ", " + initializer("float", "beta", {16}, beta) +
                     "> {\n"
                     "  m = ReduceMean <axes = [-1]> (x)\n"
                     "  d = Sub (x, m)\n"
                     "  two = Constant <value = float {2}> ()\n"
                     "  p = Pow (d, two)\n"
                     "  v = ReduceMean <axes = [-1]> (p)\n"
                     "  eps = Constant <value = float {1e-5}> ()\n"
                     "  ve = Add (v, eps)\n"
                     "  s = Sqrt (ve)\n";
  text += with_affine ? "  n = Div (d, s)\n  g1 = Mul (n, gamma)\n  y = Add (g1, beta)\n}\n" : "  y = Div (d, s)\n}\n";
  return text;
}

TEST(CpuGraphPasses, WrittenOutLayerNormBecomesOneNode) {
  for (bool affine : {true, false}) {
    const std::string text = layer_norm_model(affine, false);
    const auto ops = optimized_ops(text);
    EXPECT_EQ(ops.count("ReduceMean"), 0u) << "affine " << affine;
    EXPECT_EQ(ops.count("Sqrt"), 0u) << "affine " << affine;
    EXPECT_EQ(ops.at("LayerNormalization"), 1) << "affine " << affine;
    expect_same_results(text, {rows(4, 16, 7)});
  }
}

// A value of the chain that something else reads (here the graph's output
// d) must still be computed: the chain stays as written.
TEST(CpuGraphPasses, LayerNormWhoseInsideIsReadElsewhereStays) {
  const std::string text = layer_norm_model(true, true);
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.count("LayerNormalization"), 0u);
  EXPECT_EQ(ops.at("ReduceMean"), 2);
  expect_same_results(text, {rows(4, 16, 8)});
}

// Arithmetic on constants runs once at compile time: the weights sliced
// and concatenated before a MatMul leave only the product to run.
TEST(CpuGraphPasses, ConstantArithmeticIsFolded) {
  const auto w = random_floats(8 * 4, -1, 1, 9);
  const std::string text = std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n") +
                           "g (float[2,4] x) => (float[2,4] y) <" + initializer("float", "w", {8, 4}, w) +
                           "> {\n"
                           "  s0 = Constant <value = int64[1] {0}> ()\n"
                           "  s4 = Constant <value = int64[1] {4}> ()\n"
                           "  s8 = Constant <value = int64[1] {8}> ()\n"
                           "  top = Slice (w, s0, s4)\n"
                           "  bottom = Slice (w, s4, s8)\n"
                           "  both = Add (top, bottom)\n"
                           "  y = MatMul (x, both)\n"
                           "}\n";
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.count("Slice"), 0u);
  EXPECT_EQ(ops.count("Constant"), 0u);
  EXPECT_EQ(ops.count("Add"), 0u);
  EXPECT_EQ(ops.size(), 1u);
  expect_same_results(text, {rows(2, 4, 10)});
}

}  // namespace

}  // namespace hetero::test
