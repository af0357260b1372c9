// The CPU driver's quantisation kernels against ONNX's definitions:
// QuantizeLinear/DequantizeLinear rounding and saturation, per-axis
// parameters, the refusal of bad parameters naming the node, and the
// QLinear*/*Integer ops (oneDNN and reference paths) and ONNX Runtime's
// com.microsoft QOperator ops against naive loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/onnx_import.h"
#include "tests/unit/onnx_test_files.h"
#include "tests/unit/quant_test_util.h"

namespace hetero::test {

namespace {

using core::DType;
using core::Tensor;

// ONNX's quantize: saturate(round_half_even(x / scale) + zp).
int quantize(double x, double scale, int zp, int lo, int hi) {
  return static_cast<int>(std::clamp(std::nearbyint(x / scale) + zp, double(lo), double(hi)));
}

template <typename T>
std::vector<T> codes(const Tensor& t) {
  return {t.data<T>(), t.data<T>() + t.numel()};
}

TEST(CpuQuantize, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[11] x) => (uint8[11] u, int8[11] s) <float one = {1.0}, uint8 zu = {128}, int8 zs = {0}> {
      u = QuantizeLinear(x, one, zu)
      s = QuantizeLinear(x, one, zs)
    })";
  const std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, 1000.0f, -1000.0f, 0.49999997f};
  const auto out = run_text(text, {Tensor::from_vector(x, {11})});
  EXPECT_EQ(codes<uint8_t>(out[0]), (std::vector<uint8_t>{128, 130, 130, 128, 126, 126, 254, 255, 255, 0, 128}));
  EXPECT_EQ(codes<int8_t>(out[1]), (std::vector<int8_t>{0, 2, 2, 0, -2, -2, 126, 127, 127, -128, 0}));
}

TEST(CpuQuantize, QuantizeLinearDividesByTheScale) {
  // 0.75 / 0.5 = 1.5 rounds to 2; x * (1 / 0.1) would differ from x / 0.1 for some x.
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (uint8[4] y) <float s = {0.5}, uint8 z = {10}> { y = QuantizeLinear(x, s, z) })";
  const auto out = run_text(text, {Tensor::from_vector(std::vector<float>{0.75f, 1.25f, -0.25f, 0.0f}, {4})});
  EXPECT_EQ(codes<uint8_t>(out[0]), (std::vector<uint8_t>{12, 12, 10, 10}));
  // Many values through the vector path and its scalar tail agree with the formula.
  const std::string text2 = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1003] x) => (uint8[1003] y) <float s = {0.1}, uint8 z = {7}> { y = QuantizeLinear(x, s, z) })";
  const std::vector<float> v = random_floats(1003, -5, 30, 3);
  const auto out2 = run_text(text2, {Tensor::from_vector(v, {1003})});
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(out2[0].data<uint8_t>()[i], quantize(v[i] / 0.1f, 1.0, 7, 0, 255)) << "x = " << v[i];
}

TEST(CpuQuantize, PerAxisParametersAndInt32) {
  const std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[2,3] x, float[2,3] f, int32[3] i) => (float[2,3] dq, int8[2,3] q, float[3] di)
      <float[3] s = {1.0, 2.0, 4.0}, uint8[3] z = {0, 1, 2}, int8[2] zq = {0, -10}, float[2] sq = {0.5, 1.0},
       float si = {0.25}> {
      dq = DequantizeLinear <axis = 1> (x, s, z)
      q = QuantizeLinear <axis = -2> (f, sq, zq)
      di = DequantizeLinear(i, si)
    })";
  const auto out = run_text(text, {Tensor::from_vector(std::vector<uint8_t>{0, 1, 2, 3, 4, 5}, {2, 3}),
                                   Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}),
                                   Tensor::from_vector(std::vector<int32_t>{-4, 0, 1000}, {3})});
  EXPECT_EQ(codes<float>(out[0]), (std::vector<float>{0, 0, 0, 3, 6, 12}));
  EXPECT_EQ(codes<int8_t>(out[1]), (std::vector<int8_t>{2, 4, 6, -6, -5, -4}));
  EXPECT_EQ(codes<float>(out[2]), (std::vector<float>{-1, 0, 250}));
}

// Compiles a text model (no run); `patch` may edit the proto first (to
// write values the text syntax has no literal for).
void compile_text(const std::string& text, const std::function<void(onnx::ModelProto&)>& patch = {}) {
  onnx::ModelProto proto = parse_model(text.c_str());
  if (patch) patch(proto);
  auto model = core::import_onnx_bytes(to_vector(serialize(proto)));
  cpu::testing::test_runtime().compile(*model, "CPU");
}

// Compiling `text` fails with INVALID_MODEL and a message holding every part.
void expect_refused(const std::string& text, const std::vector<std::string>& parts,
                    const std::function<void(onnx::ModelProto&)>& patch = {}) {
  try {
    compile_text(text, patch);
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_MODEL) << e.what();
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "compiled; expected a refusal";
}

// One QuantizeLinear or DequantizeLinear of a [2,3] tensor: y = op(x, s[, z]).
std::string qdq_model(const std::string& op, const std::string& attrs, const std::string& inits, int opset = 13) {
  const bool q = op == "QuantizeLinear";
  const bool has_z = inits.find(" z ") != std::string::npos;
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (" + (q ? "float" : "uint8") +
         "[2,3] x) => (" + (q ? "uint8" : "float") + "[2,3] y) <" + inits + "> {\n  y = " + op +
         (attrs.empty() ? "" : " <" + attrs + ">") + " (x, s" + (has_z ? ", z" : "") + ")\n}";
}

TEST(CpuQuantize, BadParametersAreRefusedAtCompileNamingTheNode) {
  struct Case {
    const char* what;
    std::string op, attrs, inits;
    std::vector<std::string> message;
    float scale_value = 0;  // written over s[0] when not 0 (NaN, infinity)
  };
  const std::vector<Case> cases = {
      {"zero scale", "QuantizeLinear", "", "float s = {0.0}, uint8 z = {0}", {"scale", "positive", "0.0"}},
      {"negative scale", "DequantizeLinear", "", "float s = {-0.5}, uint8 z = {0}", {"scale", "positive"}},
      {"NaN scale", "QuantizeLinear", "", "float s = {1.0}, uint8 z = {0}", {"scale", "positive and finite"}, NAN},
      {"infinite scale", "DequantizeLinear", "", "float s = {1.0}, uint8 z = {0}", {"finite"}, INFINITY},
      {"a bad per-axis scale", "DequantizeLinear", "", "float[3] s = {1, 0, 1}, uint8[3] z = {0, 0, 0}", {"at [1]"}},
      {"axis out of bounds", "DequantizeLinear", "axis = 2", "float[3] s = {1, 1, 1}, uint8[3] z = {0, 0, 0}",
       {"axis", "out of bounds"}},
      {"negative axis out of bounds", "QuantizeLinear", "axis = -3", "float[2] s = {1, 1}, uint8[2] z = {0, 0}",
       {"axis", "out of bounds"}},
      {"scale and zero point shapes", "DequantizeLinear", "", "float[3] s = {1, 1, 1}, uint8[2] z = {0, 0}",
       {"zero point", "shape [2] but the scale has [3]"}},
      {"scale length against the axis", "QuantizeLinear", "", "float[2] s = {1, 1}, uint8[2] z = {0, 0}",
       {"2 values", "has 3 along axis 1"}},
      {"blocked scale", "DequantizeLinear", "", "float[2,3] s = {1, 1, 1, 1, 1, 1}", {"opset 21"}},
  };
  for (Case c : cases) {
    SCOPED_TRACE(c.what);
    c.message.push_back("node '" + c.op + "_0' (" + c.op + ")");
    if (c.attrs.empty()) c.attrs = "axis = 1";
    expect_refused(qdq_model(c.op, c.attrs, c.inits), c.message, [&](onnx::ModelProto& m) {
      if (c.scale_value == 0) return;
      for (auto& t : *m.mutable_graph()->mutable_initializer())
        if (t.name() == "s") t.set_float_data(0, c.scale_value);
    });
  }
  // Opset 10 has no per-axis parameters.
  expect_refused(qdq_model("QuantizeLinear", "", "float[3] s = {1, 1, 1}, uint8[3] z = {0, 0, 0}", 10),
                 {"(QuantizeLinear)", "one value"});
  // A zero point of another type than the data's, or one no QuantizeLinear makes.
  expect_refused(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (uint8[2,3] x) => (float[2,3] y) <float s = {1.0}, int8 z = {0}> { y = DequantizeLinear(x, s, z) })",
                 {"(DequantizeLinear)", "zero point", "must be uint8", "got int8"});
  expect_refused(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (int32[2,3] y) <float s = {1.0}, int32 z = {0}> { y = QuantizeLinear(x, s, z) })",
                 {"(QuantizeLinear)", "zero point must be uint8 or int8, got int32"});
  // int32 data has no zero point but 0.
  expect_refused(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (int32[3] x) => (float[3] y) <float s = {1.0}, int32 z = {5}> { y = DequantizeLinear(x, s, z) })",
                 {"(DequantizeLinear)", "must be 0 for int32"});
  // The QLinear ops check theirs too.
  expect_refused(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (uint8[1,1,3,3] x) => (uint8[1,1,3,3] y)
        <float xs = {1.0}, uint8 xz = {0}, int8[1,1,1,1] w = {1}, float ws = {0.0}, int8 wz = {0},
         float ys = {1.0}, uint8 yz = {0}> {
        y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz)
      })",
                 {"(QLinearConv)", "w scale", "positive"});
  expect_refused(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (uint8[2,2] a) => (uint8[2,2] y)
        <float as = {1.0}, uint8 az = {0}, int8[2,2] b = {1, 2, 3, 4}, float[3] bs = {1.0, 1.0, 1.0},
         int8[3] bz = {0, 0, 0}, float ys = {1.0}, uint8 yz = {0}> {
        y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)
      })",
                 {"(QLinearMatMul)", "b scale", "3 values"});
}

TEST(CpuQuantize, RunTimeParametersAreCheckedAtRunNamingTheNode) {
  auto model = model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, float s) => (uint8[3] y) { y = QuantizeLinear(x, s) })");
  auto compiled = cpu::testing::test_runtime().compile(*model, "CPU");
  auto request = compiled->create_infer_request();
  request->set_input(0, Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}));
  request->set_input(1, Tensor::from_vector(std::vector<float>{-1.0f}, {}));
  expect_error([&] { request->infer(); }, HETERO_INVALID_ARGUMENT, {"(QuantizeLinear)", "positive"});
}

// QLinearConv of NCHW u8 activations, s8 per-channel weights, int32 bias.
struct ConvCase {
  int64_t c, m, h, k, stride, pad, group;
};

std::vector<uint8_t> naive_qlinear_conv(const ConvCase& p, const std::vector<uint8_t>& x, float sx, int zx,
                                        const std::vector<int8_t>& w, const std::vector<float>& sw,
                                        const std::vector<int32_t>& b, float sy, int zy, int64_t& out) {
  out = (p.h + 2 * p.pad - p.k) / p.stride + 1;
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<uint8_t> y(static_cast<size_t>(p.m * out * out));
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t oy = 0; oy < out; ++oy)
      for (int64_t ox = 0; ox < out; ++ox) {
        int64_t acc = b[m];
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t ky = 0; ky < p.k; ++ky)
            for (int64_t kx = 0; kx < p.k; ++kx) {
              const int64_t iy = oy * p.stride - p.pad + ky, ix = ox * p.stride - p.pad + kx;
              if (iy < 0 || ix < 0 || iy >= p.h || ix >= p.h) continue;
              const int64_t ci = m / mg * cg + c;
              acc += (x[(ci * p.h + iy) * p.h + ix] - zx) * w[((m * cg + c) * p.k + ky) * p.k + kx];
            }
        y[(m * out + oy) * out + ox] = static_cast<uint8_t>(quantize(double(acc) * sx * sw[m], sy, zy, 0, 255));
      }
  return y;
}

TEST(CpuQuantize, QLinearConvMatchesTheDefinitionOnBothPaths) {
  for (const ConvCase p : {ConvCase{8, 12, 9, 3, 2, 1, 1}, ConvCase{16, 16, 10, 3, 1, 1, 16}, ConvCase{6, 10, 7, 1, 1, 0, 2}}) {
    SCOPED_TRACE("group " + std::to_string(p.group) + ", kernel " + std::to_string(p.k));
    const auto x = random_values<uint8_t>(static_cast<size_t>(p.c * p.h * p.h), 0, 255, 1);
    const auto w = random_values<int8_t>(static_cast<size_t>(p.m * p.c / p.group * p.k * p.k), -127, 127, 2);
    const auto b = random_values<int32_t>(static_cast<size_t>(p.m), -2000, 2000, 3);
    std::vector<float> sw = random_floats(static_cast<size_t>(p.m), 0.002f, 0.01f, 4);
    const float sx = 0.02f, sy = 0.05f;
    const int zx = 100, zy = 120;
    int64_t out = 0;
    const auto expected = naive_qlinear_conv(p, x, sx, zx, w, sw, b, sy, zy, out);
    const core::Shape xs{1, p.c, p.h, p.h}, ws{p.m, p.c / p.group, p.k, p.k};
    const std::string attrs = "<group = " + std::to_string(p.group) + ", strides = [" + std::to_string(p.stride) + ", " +
                              std::to_string(p.stride) + "], pads = [" + std::to_string(p.pad) + ", " +
                              std::to_string(p.pad) + ", " + std::to_string(p.pad) + ", " + std::to_string(p.pad) + "]>";
    const std::string ys = "[1," + std::to_string(p.m) + "," + std::to_string(out) + "," + std::to_string(out) + "]";
    // Constant parameters and weights: oneDNN.
    const std::string constant =
        "<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[1," + std::to_string(p.c) + "," + std::to_string(p.h) + "," +
        std::to_string(p.h) + "] x) => (uint8" + ys + " y) <" + initializer("float", "xs", {}, std::vector<float>{sx}) +
        ", uint8 xz = {" + std::to_string(zx) + "}, " + initializer("int8", "w", ws, w) + ", " +
        initializer("float", "ws", {p.m}, sw) + ", " + initializer("int8", "wz", {p.m}, std::vector<int8_t>(p.m, 0)) +
        ", float ys = {0.05}, uint8 yz = {" + std::to_string(zy) + "}, " + initializer("int32", "b", {p.m}, b) +
        "> {\n  y = QLinearConv " + attrs + " (x, xs, xz, w, ws, wz, ys, yz, b)\n}";
    const auto fast = run_text(constant, {Tensor::from_vector(x, xs)});
    // Run-time weights: the reference loops.
    const std::string runtime_w =
        "<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[1," + std::to_string(p.c) + "," + std::to_string(p.h) + "," +
        std::to_string(p.h) + "] x, int8" + "[" + std::to_string(p.m) + "," + std::to_string(p.c / p.group) + "," +
        std::to_string(p.k) + "," + std::to_string(p.k) + "] w) => (uint8" + ys + " y) <" +
        initializer("float", "xs", {}, std::vector<float>{sx}) + ", uint8 xz = {" + std::to_string(zx) + "}, " +
        initializer("float", "ws", {p.m}, sw) + ", " + initializer("int8", "wz", {p.m}, std::vector<int8_t>(p.m, 0)) +
        ", float ys = {0.05}, uint8 yz = {" + std::to_string(zy) + "}, " + initializer("int32", "b", {p.m}, b) +
        "> {\n  y = QLinearConv " + attrs + " (x, xs, xz, w, ws, wz, ys, yz, b)\n}";
    const auto slow = run_text(runtime_w, {Tensor::from_vector(x, xs), Tensor::from_vector(w, ws)});
    ASSERT_EQ(fast[0].numel(), expected.size());
    int fast_off = 0, slow_off = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const int f = std::abs(fast[0].data<uint8_t>()[i] - expected[i]), s = std::abs(slow[0].data<uint8_t>()[i] - expected[i]);
      ASSERT_LE(f, 1) << "oneDNN, at " << i;
      ASSERT_LE(s, 1) << "reference, at " << i;
      fast_off += f, slow_off += s;
    }
    // Off by one only where float rounding meets a tie: rare.
    EXPECT_LE(fast_off, static_cast<int>(expected.size() / 100 + 1));
    EXPECT_LE(slow_off, static_cast<int>(expected.size() / 100 + 1));
  }
}

TEST(CpuQuantize, MicrosoftQLinearConvTakesChannelsLastActivations) {
  // The same convolution of NCHW activations (ai.onnx) and of their NHWC
  // transpose (com.microsoft, channels_last = 1).
  const auto x = random_values<uint8_t>(4 * 25, 0, 255, 14);
  std::vector<uint8_t> nhwc(x.size());
  for (int c = 0; c < 4; ++c)
    for (int p = 0; p < 25; ++p) nhwc[p * 4 + c] = x[c * 25 + p];
  const std::string params = initializer("int8", "w", {6, 4, 3, 3}, random_values<int8_t>(6 * 4 * 9, -100, 100, 15)) +
                             ", float xs = {0.05}, uint8 xz = {100}, float ws = {0.01}, int8 wz = {0}, float ys = {0.2},"
                             " uint8 yz = {90}";
  const auto nchw_out = run_text("<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[1,4,5,5] x) => (uint8[1,6,5,5] y) <" +
                                     params + "> {\n  y = QLinearConv <pads = [1,1,1,1]> (x, xs, xz, w, ws, wz, ys, yz)\n}",
                                 {Tensor::from_vector(x, {1, 4, 5, 5})});
  const auto nhwc_out = run_text(
      "<ir_version: 8, opset_import: [\"\" : 13, \"com.microsoft\" : 1]>\ng (uint8[1,5,5,4] x) => (uint8[1,5,5,6] y) <" +
          params + "> {\n  y = com.microsoft.QLinearConv <pads = [1,1,1,1], channels_last = 1> (x, xs, xz, w, ws, wz, ys, yz)\n}",
      {Tensor::from_vector(nhwc, {1, 5, 5, 4})});
  ASSERT_EQ(nhwc_out[0].shape(), (core::Shape{1, 5, 5, 6}));
  for (int m = 0; m < 6; ++m)
    for (int p = 0; p < 25; ++p)
      ASSERT_EQ(nhwc_out[0].data<uint8_t>()[p * 6 + m], nchw_out[0].data<uint8_t>()[m * 25 + p]) << m << "," << p;
}

TEST(CpuQuantize, ConvIntegerAndMatMulIntegerAreExact) {
  // uint8 weights with a zero point: oneDNN takes them as w - 128 in s8.
  const auto x = random_values<uint8_t>(2 * 5 * 5, 0, 255, 5);
  const auto w = random_values<uint8_t>(3 * 2 * 3 * 3, 0, 255, 6);
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[1,2,5,5] x) => (int32[1,3,5,5] y) <" +
                           initializer("uint8", "w", {3, 2, 3, 3}, w) +
                           ", uint8 xz = {7}, uint8 wz = {128}> {\n  y = ConvInteger <pads = [1,1,1,1]> (x, w, xz, wz)\n}";
  const auto y = run_text(text, {Tensor::from_vector(x, {1, 2, 5, 5})});
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t oy = 0; oy < 5; ++oy)
      for (int64_t ox = 0; ox < 5; ++ox) {
        int32_t acc = 0;
        for (int64_t c = 0; c < 2; ++c)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || ix < 0 || iy >= 5 || ix >= 5) continue;
              acc += (x[(c * 5 + iy) * 5 + ix] - 7) * (w[((m * 2 + c) * 3 + ky) * 3 + kx] - 128);
            }
        ASSERT_EQ(y[0].data<int32_t>()[(m * 5 + oy) * 5 + ox], acc);
      }

  const auto a = random_values<int8_t>(2 * 3 * 40, -128, 127, 7);
  const auto b = random_values<int8_t>(40 * 6, -127, 127, 8);
  const std::string mm = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (int8[2,3,40] a) => (int32[2,3,6] y) <" +
                         initializer("int8", "b", {40, 6}, b) +
                         ", int8 az = {-3}> {\n  y = MatMulInteger(a, b, az)\n}";
  const auto ym = run_text(mm, {Tensor::from_vector(a, {2, 3, 40})});
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t n = 0; n < 6; ++n) {
      int32_t acc = 0;
      for (int64_t k = 0; k < 40; ++k) acc += (a[r * 40 + k] + 3) * b[k * 6 + n];
      ASSERT_EQ(ym[0].data<int32_t>()[r * 6 + n], acc);
    }
}

TEST(CpuQuantize, QLinearMatMulAndQGemmMatchTheDefinition) {
  const int64_t M = 5, K = 70, N = 9;
  const auto a = random_values<uint8_t>(static_cast<size_t>(2 * M * K), 0, 255, 9);
  const auto b = random_values<int8_t>(static_cast<size_t>(K * N), -127, 127, 10);
  const auto bs = random_floats(static_cast<size_t>(N), 0.001f, 0.004f, 11);
  const auto c = random_values<int32_t>(static_cast<size_t>(N), -5000, 5000, 12);
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 13, \"com.microsoft\" : 1]>\n"
      "g (uint8[2,5,70] a, uint8[5,70] a2) => (uint8[2,5,9] y, float[5,9] f) <" +
      initializer("int8", "b", {K, N}, b) + ", " + initializer("float", "bs", {N}, bs) + ", " +
      initializer("int8", "bz", {N}, std::vector<int8_t>(N, 0)) + ", " + initializer("int8", "bt", {N, K}, [&] {
        std::vector<int8_t> t(b.size());
        for (int64_t k = 0; k < K; ++k)
          for (int64_t n = 0; n < N; ++n) t[n * K + k] = b[k * N + n];
        return t;
      }()) + ", " + initializer("int32", "c", {N}, c) +
      ", float as = {0.03}, uint8 az = {90}, float ys = {0.1}, uint8 yz = {128}> {\n"
      "  y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)\n"
      "  f = com.microsoft.QGemm <transB = 1, alpha = 2.0> (a2, as, az, bt, bs, bz, c)\n}";
  const auto out = run_text(text, {Tensor::from_vector(a, {2, M, K}),
                                   Tensor::from_vector(std::vector<uint8_t>(a.begin(), a.begin() + M * K), {M, K})});
  for (int64_t r = 0; r < 2 * M; ++r)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += (a[r * K + k] - 90) * b[k * N + n];
      const int expected = quantize(double(acc) * 0.03f * bs[n], 0.1f, 128, 0, 255);
      ASSERT_LE(std::abs(out[0].data<uint8_t>()[r * N + n] - expected), 1) << r << "," << n;
      if (r < M) {
        const double f = 2.0 * 0.03f * bs[n] * double(acc + c[n]);
        ASSERT_NEAR(out[1].data<float>()[r * N + n], f, 1e-4 * std::max(1.0, std::fabs(f)));
      }
    }
}

// ONNX Runtime's float32 arithmetic for QLinearAdd and QLinearMul, one
// operation at a time: the codes of a + b and a * b for the given scales and
// zero points, saturated to [lo, hi].
struct QLinearBinaryReference {
  float as, bs, ys;
  int32_t za, zb, zy;
  int lo, hi;
  int code(float v) const { return static_cast<int>(std::clamp<float>(std::nearbyint(v), lo, hi)); }
  int add(int a, int b) const {
    const float ra = as / ys, rb = bs / ys;
    const float fixed = static_cast<float>(zy) - (ra * static_cast<float>(za) + rb * static_cast<float>(zb));
    return code((fixed + static_cast<float>(a) * ra) + static_cast<float>(b) * rb);
  }
  int mul(int a, int b) const {
    return code(static_cast<float>((a - za) * (b - zb)) * (as * bs / ys) + static_cast<float>(zy));
  }
};

// QLinearAdd and QLinearMul round as ONNX Runtime does, code for code,
// however many codes the kernel takes at a time (sixteen, eight, one): 43 of
// each, both operands full, uint8 and int8.
TEST(CpuQuantize, QLinearAddAndMulRoundLikeOnnxRuntimeAtEveryWidth) {
  constexpr int64_t kLength = 43;
  const float as = 0.05f, bs = 0.2f, ys = 0.08f;
  auto check = [&](auto tag, const std::string& type, int32_t za, int32_t zb, int32_t zy) {
    using T = decltype(tag);
    const int lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    std::vector<T> a(kLength), b(kLength);
    for (int64_t i = 0; i < kLength; ++i) {
      a[i] = static_cast<T>(lo + (i * 37 + 11) % 256);
      b[i] = static_cast<T>(lo + (i * 91 + 5) % 256);
    }
    const std::string text =
        "<ir_version: 8, opset_import: [\"\" : 13, \"com.microsoft\" : 1]>\n"
        "g (" + type + "[43] a, " + type + "[43] b) => (" + type + "[43] add, " + type + "[43] mul) <"
        "float as = {0.05}, " + type + " az = {" + std::to_string(za) + "}, float bs = {0.2}, " + type + " bz = {" +
        std::to_string(zb) + "}, float ys = {0.08}, " + type + " yz = {" + std::to_string(zy) + "}> {\n"
        "  add = com.microsoft.QLinearAdd(a, as, az, b, bs, bz, ys, yz)\n"
        "  mul = com.microsoft.QLinearMul(a, as, az, b, bs, bz, ys, yz)\n}";
    const auto out = run_text(text, {Tensor::from_vector(a, {kLength}), Tensor::from_vector(b, {kLength})});
    const QLinearBinaryReference ref{as, bs, ys, za, zb, zy, lo, hi};
    for (int64_t i = 0; i < kLength; ++i) {
      EXPECT_EQ(out[0].template data<T>()[i], ref.add(a[i], b[i])) << type << " add at " << i;
      EXPECT_EQ(out[1].template data<T>()[i], ref.mul(a[i], b[i])) << type << " mul at " << i;
    }
  };
  check(uint8_t{}, "uint8", 128, 10, 100);
  check(int8_t{}, "int8", 0, -20, 5);
}

// The squeeze-excite case: B one row of a value per channel, broadcast over
// every row of A (a channels-last pixel's channels). Rows short enough are
// run in blocks of rows with B's row repeated (run_in_blocks in
// kernels_qlinear_binary.cpp); the codes must be those of row by row, for
// row lengths that fill whole vectors or not, a row count the block does
// not divide, and a row too long for a block.
TEST(CpuQuantize, QLinearAddAndMulOfAPerChannelRowRoundLikeOnnxRuntime) {
  const float as = 0.05f, bs = 0.2f, ys = 0.08f;
  const int32_t za = 128, zb = 10, zy = 100;
  for (const auto& [rows, channels] : std::vector<std::pair<int64_t, int64_t>>{
           {37, 8}, {50, 16}, {23, 24}, {19, 40}, {7, 96}, {3, 128}, {5, 129}, {1, 12}}) {
    std::vector<uint8_t> a(static_cast<size_t>(rows * channels)), b(static_cast<size_t>(channels));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>((i * 91 + 5) % 256);
    const std::string shape = "[" + std::to_string(rows) + "," + std::to_string(channels) + "]";
    const std::string text =
        "<ir_version: 8, opset_import: [\"\" : 13, \"com.microsoft\" : 1]>\n"
        "g (uint8" + shape + " a, uint8[" + std::to_string(channels) + "] b) => (uint8" + shape + " add, uint8" +
        shape + " mul) <float as = {0.05}, uint8 az = {128}, float bs = {0.2}, uint8 bz = {10}, float ys = {0.08}, "
        "uint8 yz = {100}> {\n"
        "  add = com.microsoft.QLinearAdd(a, as, az, b, bs, bz, ys, yz)\n"
        "  mul = com.microsoft.QLinearMul(a, as, az, b, bs, bz, ys, yz)\n}";
    const auto out = run_text(text, {Tensor::from_vector(a, {rows, channels}), Tensor::from_vector(b, {channels})});
    const QLinearBinaryReference ref{as, bs, ys, za, zb, zy, 0, 255};
    for (size_t i = 0; i < a.size(); ++i) {
      const int bi = b[i % b.size()];
      ASSERT_EQ(out[0].data<uint8_t>()[i], ref.add(a[i], bi)) << rows << "x" << channels << " add at " << i;
      ASSERT_EQ(out[1].data<uint8_t>()[i], ref.mul(a[i], bi)) << rows << "x" << channels << " mul at " << i;
    }
  }
}

TEST(CpuQuantize, MicrosoftQOperatorOpsMatchTheirFloatDefinition) {
  // x codes over the whole range, y = f(dequantize(x)) quantised.
  std::vector<uint8_t> x(2 * 3 * 4 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 37 % 256);
  const auto bias = random_values<uint8_t>(3, 0, 255, 13);
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 13, \"com.microsoft\" : 1]>\n"
      "g (uint8[2,3,4,4] x) => (uint8[2,3,4,4] add, uint8[2,3,4,4] mul, uint8[2,3,4,4] sig, uint8[2,3,4,4] leaky,"
      " uint8[2,3,1,1] gap, uint8[2,3,2,2] avg, uint8[2,6,4,4] cat) <" +
      initializer("uint8", "b", {1, 3, 1, 1}, bias) +
      ", float xs = {0.05}, uint8 xz = {128}, float bs = {0.2}, uint8 bz = {10}, float ys = {0.08}, uint8 yz = {100},"
      " float ps = {0.004}, uint8 pz = {0}> {\n"
      "  add = com.microsoft.QLinearAdd(x, xs, xz, b, bs, bz, ys, yz)\n"
      "  mul = com.microsoft.QLinearMul(x, xs, xz, b, bs, bz, ys, yz)\n"
      "  sig = com.microsoft.QLinearSigmoid(x, xs, xz, ps, pz)\n"
      "  leaky = com.microsoft.QLinearLeakyRelu <alpha = 0.1> (x, xs, xz, ys, yz)\n"
      "  gap = com.microsoft.QLinearGlobalAveragePool(x, xs, xz, ys, yz)\n"
      "  avg = com.microsoft.QLinearAveragePool <kernel_shape = [2, 2], strides = [2, 2]> (x, xs, xz, ys, yz)\n"
      "  cat = com.microsoft.QLinearConcat <axis = 1> (ys, yz, x, xs, xz, x, ys, yz)\n}";
  const auto out = run_text(text, {Tensor::from_vector(x, {2, 3, 4, 4})});
  auto dx = [&](size_t i) { return (x[i] - 128) * 0.05; };
  auto check = [&](const Tensor& t, size_t i, double real, double scale, int zp) {
    const int expected = quantize(real, scale, zp, 0, 255);
    ASSERT_LE(std::abs(t.data<uint8_t>()[i] - expected), 1) << "at " << i << ": real " << real;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / 16 % 3;
    const double db = (bias[c] - 10) * 0.2;
    check(out[0], i, dx(i) + db, 0.08, 100);
    check(out[1], i, dx(i) * db, 0.08, 100);
    check(out[2], i, 1 / (1 + std::exp(-dx(i))), 0.004, 0);
    check(out[3], i, dx(i) < 0 ? 0.1 * dx(i) : dx(i), 0.08, 100);
  }
  for (size_t nc = 0; nc < 6; ++nc) {
    double sum = 0;
    for (size_t p = 0; p < 16; ++p) sum += dx(nc * 16 + p);
    check(out[4], nc, sum / 16, 0.08, 100);
    for (size_t oy = 0; oy < 2; ++oy)
      for (size_t ox = 0; ox < 2; ++ox) {
        double s = 0;
        for (size_t ky = 0; ky < 2; ++ky)
          for (size_t kx = 0; kx < 2; ++kx) s += dx(nc * 16 + (oy * 2 + ky) * 4 + ox * 2 + kx);
        check(out[5], (nc * 2 + oy) * 2 + ox, s / 4, 0.08, 100);
      }
  }
  for (size_t n = 0; n < 2; ++n)
    for (size_t j = 0; j < 48; ++j) {
      check(out[6], n * 96 + j, dx(n * 48 + j), 0.08, 100);  // requantised
      ASSERT_EQ(out[6].data<uint8_t>()[n * 96 + 48 + j], x[n * 48 + j]);  // same parameters: copied
    }
}

}  // namespace

}  // namespace hetero::test
