// The CPU driver's int8 pass on QDQ models (QuantizeLinear/DequantizeLinear
// around float ops, as ONNX Runtime's quantize_static writes them): which
// groups become int8 nodes, and that the results stay within one
// quantisation step of the float simulation of the same graph (the CPU
// driver with optimize=false runs Q, DQ and the float ops as written).
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/quant_util.h"
#include "tests/unit/onnx_test_files.h"
#include "tests/unit/quant_test_util.h"

namespace hetero::test {

namespace {

using core::DType;
using core::Tensor;

using cpu::testing::optimized_ops;

// The model run optimised (int8) and as written (float simulation): the
// largest difference in steps of `scale`, and how many elements differ.
struct Agreement {
  double max_steps = 0;
  size_t off = 0, beyond_one = 0, total = 0;
};
Agreement against_float_simulation(const std::string& text, const std::vector<Tensor>& inputs, double scale,
                                   size_t output = 0) {
  const auto fast = run_text(text, inputs);
  const auto sim = run_text(text, inputs, {{"optimize", "false"}});
  Agreement a;
  a.total = sim[output].numel();
  EXPECT_EQ(fast[output].shape(), sim[output].shape());
  for (size_t i = 0; i < a.total; ++i) {
    const double steps = std::fabs(fast[output].as_double(i) - sim[output].as_double(i)) / scale;
    a.max_steps = std::max(a.max_steps, steps);
    if (steps > 1e-3) ++a.off;
    if (steps > 1 + 1e-3) ++a.beyond_one;
  }
  return a;
}

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 14]>\n";

// x -> Q -> DQ -> Conv(W = DQ(w, per channel), B = DQ(b, int32)) -> Relu -> Q -> DQ -> y,
// activations uint8 (zero points 120 and 0) or int8 (-8 and 0).
std::string conv_relu_model(const std::vector<int8_t>& w, bool int8_activations = false) {
  const int64_t C = 8, M = 6;
  const auto ws = random_floats(M, 0.004f, 0.01f, 21);
  std::vector<float> bs(M);
  for (int64_t m = 0; m < M; ++m) bs[m] = 0.03f * ws[m];
  return std::string(kHeader) + "g (float[1,8,12,12] x) => (float[1,6,12,12] y) <" +
         initializer("int8", "w", {M, C, 3, 3}, w) + ", " + initializer("float", "ws", {M}, ws) + ", " +
         initializer("int8", "wz", {M}, std::vector<int8_t>(M, 0)) + ", " +
         initializer("int32", "b", {M}, random_values<int32_t>(M, -3000, 3000, 22)) + ", " +
         initializer("float", "bs", {M}, bs) + ", " + initializer("int32", "bz", {M}, std::vector<int32_t>(M, 0)) +
         ", float xs = {0.03}, " + (int8_activations ? "int8 xz = {-8}" : "uint8 xz = {120}") + ", float ys = {0.02}, " +
         (int8_activations ? "int8" : "uint8") + " yz = {0}> {\n"
         "  xq = QuantizeLinear(x, xs, xz)\n  xd = DequantizeLinear(xq, xs, xz)\n"
         "  wd = DequantizeLinear <axis = 0> (w, ws, wz)\n  bd = DequantizeLinear <axis = 0> (b, bs, bz)\n"
         "  c = Conv <pads = [1, 1, 1, 1]> (xd, wd, bd)\n  r = Relu(c)\n"
         "  yq = QuantizeLinear(r, ys, yz)\n  y = DequantizeLinear(yq, ys, yz)\n}";
}

TEST(CpuInt8, QdqConvReluBecomesOneInt8Convolution) {
  // 7-bit weights: exact int8 products on any x86 processor.
  const std::string text = conv_relu_model(random_values<int8_t>(6 * 8 * 9, -64, 64, 20));
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.at("hetero.cpu.QLinearConv"), 1);
  EXPECT_EQ(ops.count("Conv") + ops.count("Relu") + ops.count("hetero.cpu.FusedConv"), 0u);
  // Only the input's Q and the output's DQ remain of the QDQ pairs.
  EXPECT_EQ(ops.at("QuantizeLinear"), 1);
  EXPECT_EQ(ops.at("DequantizeLinear"), 1);
  const Tensor x = Tensor::from_vector(random_floats(8 * 144, -3.5f, 4.0f, 23), {1, 8, 12, 12});
  const Agreement a = against_float_simulation(text, {x}, 0.02);
  EXPECT_LE(a.max_steps, 1.0 + 1e-3);
  EXPECT_LE(a.off, a.total / 100);
}

TEST(CpuInt8, EightBitWeightsRunInt8WhereTheProcessorMultipliesThemExactly) {
  // Without VNNI oneDNN would sum pairs of 8-bit products in saturating
  // int16: the group then stays as written, and the results are the same.
  const auto w = random_values<int8_t>(6 * 8 * 9, -127, 127, 24);
  Tensor ws8 = Tensor::from_vector(w, {6, 8, 3, 3});
  const std::string text = conv_relu_model(w);
  EXPECT_EQ(optimized_ops(text).count("hetero.cpu.QLinearConv"), cpu::dnnl_int8_exact(ws8, false) ? 1u : 0u);
  const Tensor x = Tensor::from_vector(random_floats(8 * 144, -3.5f, 4.0f, 25), {1, 8, 12, 12});
  const Agreement a = against_float_simulation(text, {x}, 0.02);
  EXPECT_LE(a.max_steps, 1.0 + 1e-3);
  EXPECT_LE(a.off, a.total / 100);
}

TEST(CpuInt8, Int8ActivationsRunInt8WhereExact) {
  // Signed activations: exact with VNNI; without it oneDNN halves the
  // weights, so the group stays as written.
  const auto w = random_values<int8_t>(6 * 8 * 9, -64, 64, 26);
  const std::string text = conv_relu_model(w, true);
  const Tensor ws8 = Tensor::from_vector(w, {6, 8, 3, 3});
  EXPECT_EQ(optimized_ops(text).count("hetero.cpu.QLinearConv"), cpu::dnnl_int8_exact(ws8, true) ? 1u : 0u);
  const Tensor x = Tensor::from_vector(random_floats(8 * 144, -3.5f, 4.0f, 27), {1, 8, 12, 12});
  const Agreement a = against_float_simulation(text, {x}, 0.02);
  EXPECT_LE(a.max_steps, 1.0 + 1e-3);
  EXPECT_LE(a.off, a.total / 100);
}

TEST(CpuInt8, DepthwiseClipWithAFloatOutput) {
  const int64_t C = 16;
  const std::string text =
      std::string(kHeader) + "g (float[1,16,10,10] x) => (float[1,16,5,5] y) <" +
      initializer("int8", "w", {C, 1, 3, 3}, random_values<int8_t>(C * 9, -64, 64, 30)) +
      ", float ws = {0.01}, int8 wz = {0}, float xs = {0.05}, uint8 xz = {128}, float lo = {0.0}, float hi = {6.0}> {\n"
      "  xq = QuantizeLinear(x, xs, xz)\n  xd = DequantizeLinear(xq, xs, xz)\n  wd = DequantizeLinear(w, ws, wz)\n"
      "  c = Conv <group = 16, strides = [2, 2], pads = [1, 1, 1, 1]> (xd, wd)\n  y = Clip(c, lo, hi)\n}";
  EXPECT_EQ(optimized_ops(text).at("hetero.cpu.QLinearConv"), 1);
  const Tensor x = Tensor::from_vector(random_floats(C * 100, -6, 6, 31), {1, C, 10, 10});
  const auto fast = run_text(text, {x});
  const auto sim = run_text(text, {x}, {{"optimize", "false"}});
  for (size_t i = 0; i < sim[0].numel(); ++i) {
    const float s = sim[0].data<float>()[i];
    ASSERT_NEAR(fast[0].data<float>()[i], s, 1e-5f * std::max(1.0f, std::fabs(s))) << i;
    ASSERT_GE(fast[0].data<float>()[i], 0.0f);
    ASSERT_LE(fast[0].data<float>()[i], 6.0f);
  }
}

TEST(CpuInt8, MatMulAndGemmBecomeInt8Products) {
  const int64_t K = 32, N = 8;
  const auto bs = random_floats(N, 0.005f, 0.02f, 40);
  std::vector<float> cs(N);
  for (int64_t n = 0; n < N; ++n) cs[n] = 0.04f * bs[n];
  const std::string text =
      std::string(kHeader) + "g (float[2,5,32] a, float[5,32] a2) => (float[2,5,8] y, float[5,8] z) <" +
      initializer("int8", "b", {K, N}, random_values<int8_t>(K * N, -64, 64, 41)) + ", " +
      initializer("int8", "bt", {N, K}, random_values<int8_t>(K * N, -64, 64, 42)) + ", " +
      initializer("float", "bs", {N}, bs) + ", " + initializer("int8", "bz", {N}, std::vector<int8_t>(N, 0)) + ", " +
      initializer("int32", "c", {N}, random_values<int32_t>(N, -500, 500, 43)) + ", " +
      initializer("float", "cs", {N}, cs) + ", " + initializer("int32", "cz", {N}, std::vector<int32_t>(N, 0)) +
      ", float as = {0.04}, uint8 az = {100}, float ys = {0.1}, uint8 yz = {128}> {\n"
      "  aq = QuantizeLinear(a, as, az)\n  ad = DequantizeLinear(aq, as, az)\n"
      "  a2q = QuantizeLinear(a2, as, az)\n  a2d = DequantizeLinear(a2q, as, az)\n"
      "  bd = DequantizeLinear <axis = 1> (b, bs, bz)\n  btd = DequantizeLinear <axis = 0> (bt, bs, bz)\n"
      "  cd = DequantizeLinear <axis = 0> (c, cs, cz)\n"
      "  m = MatMul(ad, bd)\n  mq = QuantizeLinear(m, ys, yz)\n  y = DequantizeLinear(mq, ys, yz)\n"
      "  gm = Gemm <transB = 1, alpha = 0.5, beta = 2.0> (a2d, btd, cd)\n"
      "  gq = QuantizeLinear(gm, ys, yz)\n  z = DequantizeLinear(gq, ys, yz)\n}";
  EXPECT_EQ(optimized_ops(text).at("hetero.cpu.QLinearMatMul"), 2);
  const std::vector<Tensor> in = {Tensor::from_vector(random_floats(2 * 5 * K, -4, 6, 44), {2, 5, K}),
                                  Tensor::from_vector(random_floats(5 * K, -4, 6, 45), {5, K})};
  for (size_t out = 0; out < 2; ++out) {
    const Agreement a = against_float_simulation(text, in, 0.1, out);
    EXPECT_LE(a.max_steps, 1.0 + 1e-3) << "output " << out;
  }
}

// A small quantised network of the ops PP-OCR's models are made of: after
// the first Q, nothing is dequantised until the output.
TEST(CpuInt8, ANetworkStaysInt8FromTheFirstQToTheLastDQ) {
  const int64_t C = 8;
  const std::string text =
      std::string(kHeader) + "g (float[1,8,8,8] x) => (float[1,16,8,8] y) <" +
      initializer("int8", "w1", {C, C, 3, 3}, random_values<int8_t>(C * C * 9, -64, 64, 50)) + ", " +
      initializer("int8", "w2", {C, C, 1, 1}, random_values<int8_t>(C * C, -64, 64, 51)) +
      ", float xs = {0.02}, uint8 xz = {128}, float ws = {0.01}, int8 wz = {0}, float s1 = {0.03}, uint8 z1 = {100},"
      " float s2 = {0.02}, uint8 z2 = {60}, float s3 = {0.004}, uint8 z3 = {0}, float s4 = {0.05}, uint8 z4 = {90},"
      " float[4] scales = {1.0, 1.0, 2.0, 2.0}, float three = {3.0}> {\n"
      "  xq = QuantizeLinear(x, xs, xz)\n  xd = DequantizeLinear(xq, xs, xz)\n"
      "  w1d = DequantizeLinear(w1, ws, wz)\n  w2d = DequantizeLinear(w2, ws, wz)\n"
      "  c1 = Conv <pads = [1, 1, 1, 1]> (xd, w1d)\n  c1q = QuantizeLinear(c1, s1, z1)\n  c1d = DequantizeLinear(c1q, s1, z1)\n"
      "  hs = HardSwish(c1d)\n  hsq = QuantizeLinear(hs, s2, z2)\n  hsd = DequantizeLinear(hsq, s2, z2)\n"
      "  gap = GlobalAveragePool(hsd)\n  gq = QuantizeLinear(gap, s2, z2)\n  gd = DequantizeLinear(gq, s2, z2)\n"
      "  se = Conv(gd, w2d)\n  seq = QuantizeLinear(se, s1, z1)\n  sed = DequantizeLinear(seq, s1, z1)\n"
      "  sig = HardSigmoid(sed)\n  sq = QuantizeLinear(sig, s3, z3)\n  sd = DequantizeLinear(sq, s3, z3)\n"
      "  m = Mul(hsd, sd)\n  mq = QuantizeLinear(m, s2, z2)\n  md = DequantizeLinear(mq, s2, z2)\n"
      "  a = Add(md, c1d)\n  aq = QuantizeLinear(a, s4, z4)\n  ad = DequantizeLinear(aq, s4, z4)\n"
      "  d = Div(ad, three)\n  dq = QuantizeLinear(d, s4, z4)\n  dd = DequantizeLinear(dq, s4, z4)\n"
      "  p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (dd)\n  pq = QuantizeLinear(p, s4, z4)\n"
      "  pd = DequantizeLinear(pq, s4, z4)\n"
      "  up = Resize <mode = \"nearest\"> (pd, , scales)\n  uq = QuantizeLinear(up, s4, z4)\n"
      "  ud = DequantizeLinear(uq, s4, z4)\n"
      "  cat = Concat <axis = 1> (ud, hsd)\n  cq = QuantizeLinear(cat, s1, z1)\n  y = DequantizeLinear(cq, s1, z1)\n}";
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.at("QuantizeLinear"), 1);
  EXPECT_EQ(ops.at("DequantizeLinear"), 1);
  for (const char* float_op : {"Conv", "HardSwish", "GlobalAveragePool", "HardSigmoid", "Mul", "Add", "Div", "Concat"})
    EXPECT_EQ(ops.count(float_op), 0u) << float_op;
  EXPECT_EQ(ops.at("hetero.cpu.QLinearConv"), 2);
  EXPECT_EQ(ops.at("hetero.cpu.QLinearUnary"), 3);  // HardSwish, HardSigmoid, Div by 3
  EXPECT_EQ(ops.at("hetero.cpu.QLinearConcat"), 1);
  // Each int8 node is within one step of its float simulation; over a chain
  // of them, an input that lay on a rounding tie (the float simulation sums
  // in float and rounds it one way, the int8 node the other) moves its
  // consumers' results too, and a steep function (HardSwish) followed by a
  // finer scale can turn that into two steps downstream. So: nearly all
  // within one step, none beyond two.
  const Tensor x = Tensor::from_vector(random_floats(C * 64, -2.5f, 2.5f, 52), {1, C, 8, 8});
  const Agreement a = against_float_simulation(text, {x}, 0.03);
  EXPECT_LE(a.max_steps, 2.0 + 1e-3);
  EXPECT_LE(a.beyond_one, a.total / 200);
  EXPECT_LE(a.off, a.total / 20);
}

// x * relu6(x + 3) / 6 as exporters write it and ONNX Runtime quantises it:
// Add, Mul and Div between DQs and Qs (the Clip dropped into the Q's range).
// All three depend on x alone: one table.
TEST(CpuInt8, HardSwishChainsBecomeOneTable) {
  const std::string text =
      std::string(kHeader) + "g (float[1,8,16,16] x) => (float[1,8,16,16] y) <"
      "float xs = {0.04}, uint8 xz = {120}, uint8[1] three = {255}, float ts = {0.011764706}, uint8 tz = {0},"
      " float as = {0.023529412}, uint8 az = {0}, float ms = {0.06}, uint8 mz = {40}, float six = {6.0},"
      " float ys = {0.01}, uint8 yz = {30}> {\n"
      "  xq = QuantizeLinear(x, xs, xz)\n  xd = DequantizeLinear(xq, xs, xz)\n"
      "  td = DequantizeLinear(three, ts, tz)\n"
      "  a = Add(xd, td)\n  aq = QuantizeLinear(a, as, az)\n  ad = DequantizeLinear(aq, as, az)\n"
      "  m = Mul(xd, ad)\n  mq = QuantizeLinear(m, ms, mz)\n  md = DequantizeLinear(mq, ms, mz)\n"
      "  d = Div(md, six)\n  dq = QuantizeLinear(d, ys, yz)\n  y = DequantizeLinear(dq, ys, yz)\n}";
  const auto ops = optimized_ops(text);
  EXPECT_EQ(ops.at("hetero.cpu.QLinearTable"), 1);
  EXPECT_EQ(ops.count("hetero.cpu.QLinearAdd") + ops.count("hetero.cpu.QLinearMul") + ops.count("hetero.cpu.QLinearUnary"), 0u);
  const Tensor x = Tensor::from_vector(random_floats(8 * 256, -5, 5, 70), {1, 8, 16, 16});
  const Agreement a = against_float_simulation(text, {x}, 0.01);
  EXPECT_LE(a.max_steps, 2.0 + 1e-3);
  EXPECT_LE(a.beyond_one, a.total / 200);
}

TEST(CpuInt8, BadParametersInsideAQdqGroupAreRefusedNamingTheNode) {
  std::string text = conv_relu_model(random_values<int8_t>(6 * 8 * 9, -64, 64, 60));
  // The weights' scale holds a zero at channel 2.
  const std::string ws = "float[6] ws = {";
  const size_t at = text.find(ws) + ws.size();
  const size_t third = text.find(',', text.find(',', at) + 1) + 1;
  text.replace(third, text.find(',', third) - third, " 0");
  try {
    run_text(text, {Tensor::allocate(DType::F32, {1, 8, 12, 12})});
    ADD_FAILURE() << "compiled a zero scale";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_MODEL);
    EXPECT_NE(std::string(e.what()).find("(DequantizeLinear): x scale: must be positive and finite, got 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

}  // namespace hetero::test
