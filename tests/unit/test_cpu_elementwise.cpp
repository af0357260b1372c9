// The CPU driver's elementwise kernels (binary, unary, Cast) on cases ONNX's
// node tests leave out: legacy broadcasting, per-channel and scalar operands,
// tensors big enough to take the parallel paths, integer corner cases,
// float16, and refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// ---- Binary ops and broadcasting.

TEST(CpuElementwise, PerChannelBroadcastOnBigTensor) {
  // NCHW + 1xCx1x1, large enough for the parallel row path.
  const Tensor x = random_f32({2, 16, 40, 40}, 1, -3, 3);
  const Tensor c = random_f32({1, 16, 1, 1}, 2, -3, 3);
  KernelNode n("Add", 14, 2);
  const Tensor y = n.run({x, c})[0];
  ASSERT_EQ(y.shape(), x.shape());
  for (size_t i = 0; i < x.numel(); ++i) {
    const size_t ch = i / 1600 % 16;
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[i] + c.data<float>()[ch]) << i;
  }
}

TEST(CpuElementwise, ScalarAndSameShapeOperands) {
  const Tensor x = random_f32({300, 300}, 3, -3, 3);
  KernelNode mul("Mul", 14, 2);
  const Tensor y = mul.run({x, tensor<float>({2.0f}, {})})[0];
  KernelNode div("Div", 14, 2);
  const Tensor z = div.run({y, x})[0];
  for (size_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]);
    ASSERT_FLOAT_EQ(z.data<float>()[i], 2.0f);
  }
}

TEST(CpuElementwise, BroadcastBothWays) {
  KernelNode n("Sub", 14, 2);
  const Tensor y = n.run({tensor<int32_t>({1, 2, 3}, {3, 1}), tensor<int32_t>({10, 20}, {1, 2})})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{-9, -19, -8, -18, -7, -17}));
}

TEST(CpuElementwise, IncompatibleShapesNameTheNode) {
  KernelNode n("Add", 14, 2);
  try {
    n.run({random_f32({2, 3}, 1, -3, 3), random_f32({4}, 2, -3, 3)});
    FAIL() << "expected an error";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("node 'n' (Add)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
  }
}

TEST(CpuElementwise, LegacyBroadcastWithAxis) {
  // Opset 6: B of shape [3] broadcast onto A [2, 3, 2] at axis 1.
  KernelNode n("Mul", 6, 2);
  n.attr_int("broadcast", 1).attr_int("axis", 1);
  std::vector<float> a(12, 1.0f);
  const Tensor y = n.run({tensor<float>(a, {2, 3, 2}), tensor<float>({1, 2, 3}, {3})})[0];
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(CpuElementwise, PreluPerChannelSlope) {
  KernelNode n("PRelu", 16, 2);
  const Tensor y = n.run({tensor<float>({-1, 2, -3, 4}, {1, 2, 2, 1}), tensor<float>({0.5f, 0.25f}, {2, 1, 1})})[0];
  EXPECT_EQ(values<float>(y), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  KernelNode old("PRelu", 6, 2);  // a 1-D slope of size C is per channel before opset 7
  const Tensor z = old.run({tensor<float>({-1, 2, -3, 4}, {1, 2, 2, 1}), tensor<float>({0.5f, 0.25f}, {2})})[0];
  EXPECT_EQ(values<float>(z), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
}

TEST(CpuElementwise, IntegerDivisionAndModSemantics) {
  const Tensor a = tensor<int32_t>({7, -7, 7, -7, std::numeric_limits<int32_t>::min()}, {5});
  const Tensor b = tensor<int32_t>({2, 2, -2, -2, -1}, {5});
  KernelNode div("Div", 14, 2);
  EXPECT_EQ(values<int32_t>(div.run({a, b})[0]),
            (std::vector<int32_t>{3, -3, -3, 3, std::numeric_limits<int32_t>::min()}));
  KernelNode mod("Mod", 13, 2);  // Python semantics: the divisor's sign
  EXPECT_EQ(values<int32_t>(mod.run({a, b})[0]), (std::vector<int32_t>{1, 1, -1, -1, 0}));
  KernelNode fmod("Mod", 13, 2);
  fmod.attr_int("fmod", 1);  // C semantics: the dividend's sign
  EXPECT_EQ(values<int32_t>(fmod.run({a, b})[0]), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  KernelNode zero("Div", 14, 2);
  EXPECT_THROW(zero.run({a, tensor<int32_t>({1, 1, 0, 1, 1}, {5})}), Failure);
}

TEST(CpuElementwise, PowMixedTypesAndFastPaths) {
  KernelNode n("Pow", 15, 2);
  EXPECT_EQ(values<float>(n.run({tensor<float>({1, 2, 3}, {3}), tensor<int64_t>({2, 3, 0}, {3})})[0]),
            (std::vector<float>{1, 8, 1}));
  EXPECT_EQ(values<int64_t>(n.run({tensor<int64_t>({3, -2, 10}, {3}), tensor<int64_t>({4, 3, 18}, {3})})[0]),
            (std::vector<int64_t>{81, -8, 1000000000000000000}));
  EXPECT_EQ(values<float>(n.run({tensor<float>({-3, 4}, {2}), tensor<float>({2}, {})})[0]),
            (std::vector<float>{9, 16}));
  EXPECT_EQ(values<float>(n.run({tensor<float>({9, 4}, {2}), tensor<double>({0.5}, {1})})[0]),
            (std::vector<float>{3, 2}));
}

TEST(CpuElementwise, ComparisonsAndLogicGiveBool) {
  KernelNode n("GreaterOrEqual", 16, 2);
  EXPECT_EQ(values<bool>(n.run({tensor<int64_t>({1, 2, 3}, {3}), tensor<int64_t>({2}, {1})})[0]),
            (std::vector<bool>{false, true, true}));
  KernelNode x("Xor", 7, 2);
  EXPECT_EQ(values<bool>(x.run({tensor<bool>({true, false}, {2, 1}), tensor<bool>({true, false}, {1, 2})})[0]),
            (std::vector<bool>{false, true, true, false}));
}

TEST(CpuElementwise, BitShiftPastWidthIsZero) {
  KernelNode n("BitShift", 11, 2);
  n.attr_string("direction", "LEFT");
  EXPECT_EQ(values<uint8_t>(n.run({tensor<uint8_t>({1, 1, 3}, {3}), tensor<uint8_t>({7, 8, 1}, {3})})[0]),
            (std::vector<uint8_t>{128, 0, 6}));
  KernelNode bad("BitShift", 11, 2);
  bad.attr_string("direction", "UP");
  EXPECT_THROW(bad.build(), Failure);
}

TEST(CpuElementwise, VariadicOpsBroadcastAllInputs) {
  KernelNode n("Max", 13, 3);
  const Tensor y = n.run({tensor<float>({1, 5}, {2, 1}), tensor<float>({3}, {}), tensor<float>({0, 4, 6}, {1, 3})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, 4, 6, 5, 5, 6}));
  KernelNode mean("Mean", 13, 2);
  EXPECT_EQ(values<int32_t>(mean.run({tensor<int32_t>({2, 4}, {2}), tensor<int32_t>({4}, {1})})[0]),
            (std::vector<int32_t>{3, 4}));
  KernelNode one("Sum", 13, 1);
  EXPECT_EQ(values<double>(one.run({tensor<double>({1.5}, {1})})[0]), (std::vector<double>{1.5}));
}

TEST(CpuElementwise, WhereBroadcastsThreeWays) {
  KernelNode n("Where", 16, 3);
  const Tensor y =
      n.run({tensor<bool>({true, false}, {2, 1}), tensor<int64_t>({1, 2, 3}, {3}), tensor<int64_t>({-1}, {})})[0];
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(CpuElementwise, Float16ComputesInFloat) {
  auto half = [](std::vector<float> v, Shape s) {
    Tensor t = Tensor::allocate(DType::F16, s);
    for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = core::float_to_half(v[i]);
    return t;
  };
  KernelNode n("Add", 14, 2);
  const Tensor y = n.run({half({1, 2.5f}, {2}), half({0.5f}, {1})})[0];
  ASSERT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(core::half_to_float(y.data<uint16_t>()[0]), 1.5f);
  EXPECT_EQ(core::half_to_float(y.data<uint16_t>()[1]), 3.0f);
  KernelNode less("Less", 13, 2);
  EXPECT_EQ(values<bool>(less.run({half({1, 2.5f}, {2}), half({2}, {1})})[0]), (std::vector<bool>{true, false}));
}

TEST(CpuElementwise, RefusesUnsupportedTypesAtBuild) {
  KernelNode n("And", 7, 2);
  n.input_dtype(0, DType::F32);
  EXPECT_THROW(n.build(), Failure);
  KernelNode c("Cast", 13, 1);
  c.attr_int("to", static_cast<int64_t>(DType::String));
  try {
    c.build();
    FAIL();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
  }
}

// ---- Unary ops.

TEST(CpuElementwise, ActivationsMatchTheirFormulas) {
  const Tensor x = random_f32({70000}, 7, -20, 20);  // takes the parallel path
  const float* px = x.data<float>();
  KernelNode sig("Sigmoid", 13, 1);
  const Tensor s = sig.run({x})[0];
  KernelNode hs("HardSigmoid", 6, 1);
  hs.attr_float("alpha", 0.25f);
  const Tensor h = hs.run({x})[0];
  KernelNode lr("LeakyRelu", 16, 1);
  const Tensor l = lr.run({x})[0];
  for (size_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(s.data<float>()[i], 1 / (1 + std::exp(-double(px[i]))), 1e-6) << px[i];
    ASSERT_FLOAT_EQ(h.data<float>()[i], std::clamp(0.25f * px[i] + 0.5f, 0.0f, 1.0f));
    ASSERT_FLOAT_EQ(l.data<float>()[i], px[i] < 0 ? 0.01f * px[i] : px[i]);
  }
}

TEST(CpuElementwise, ClipAttributeAndInputForms) {
  KernelNode old("Clip", 6, 1);
  old.attr_float("min", -1).attr_float("max", 1);
  EXPECT_EQ(values<float>(old.run({tensor<float>({-5, 0.5f, 5}, {3})})[0]), (std::vector<float>{-1, 0.5f, 1}));
  KernelNode ints("Clip", 13, 3);  // only a max given; min omitted
  EXPECT_EQ(values<int8_t>(ints.run({tensor<int8_t>({-128, 0, 127}, {3}), std::nullopt, tensor<int8_t>({10}, {})})[0]),
            (std::vector<int8_t>{-128, 0, 10}));
  KernelNode relu6("Clip", 11, 3);
  const Tensor clipped = relu6.run({tensor<float>({-1, 3, 9}, {3}), tensor<float>({0}, {}), tensor<float>({6}, {})})[0];
  EXPECT_EQ(values<float>(clipped), (std::vector<float>{0, 3, 6}));
}

TEST(CpuElementwise, IntegerUnaryCornerCases) {
  KernelNode abs("Abs", 13, 1);
  EXPECT_EQ(values<int8_t>(abs.run({tensor<int8_t>({-128, -3, 4}, {3})})[0]), (std::vector<int8_t>{-128, 3, 4}));
  KernelNode sign("Sign", 13, 1);
  EXPECT_EQ(values<int32_t>(sign.run({tensor<int32_t>({-9, 0, 9}, {3})})[0]), (std::vector<int32_t>{-1, 0, 1}));
  KernelNode round("Round", 11, 1);
  EXPECT_EQ(values<float>(round.run({tensor<float>({0.5f, 1.5f, 2.5f, -0.5f}, {4})})[0]),
            (std::vector<float>{0, 2, 2, -0.0f}));
}

TEST(CpuElementwise, CastConversionRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  KernelNode to_int("Cast", 13, 1);
  to_int.attr_int("to", static_cast<int64_t>(DType::I32));
  EXPECT_EQ(values<int32_t>(to_int.run({tensor<float>({2.9f, -2.9f, 1e20f, nan}, {4})})[0]),
            (std::vector<int32_t>{2, -2, 0, 0}));  // out of range wraps through int64
  KernelNode to_bool("Cast", 13, 1);
  to_bool.attr_int("to", static_cast<int64_t>(DType::Bool));
  EXPECT_EQ(values<bool>(to_bool.run({tensor<float>({0, -0.0f, 0.1f, nan}, {4})})[0]),
            (std::vector<bool>{false, false, true, true}));
  KernelNode legacy("Cast", 1, 1);  // opset 1 names the type with a string
  legacy.attr_string("to", "INT64");
  EXPECT_EQ(values<int64_t>(legacy.run({tensor<uint8_t>({200}, {1})})[0]), (std::vector<int64_t>{200}));
  KernelNode like("CastLike", 15, 2);
  const Tensor h = like.run({tensor<double>({0.5}, {1}), Tensor::allocate(DType::F16, {0})})[0];
  ASSERT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(core::half_to_float(h.data<uint16_t>()[0]), 0.5f);
  Tensor bf16 = Tensor::allocate(DType::BF16, {2});
  bf16.data<uint16_t>()[0] = core::float_to_bf16(1.5f);
  bf16.data<uint16_t>()[1] = core::float_to_bf16(-0.75f);
  KernelNode from_bf16("CastLike", 15, 2);
  EXPECT_EQ(values<float>(from_bf16.run({bf16, Tensor::allocate(DType::F32, {0})})[0]),
            (std::vector<float>{1.5f, -0.75f}));
}

}  // namespace
}  // namespace hetero::cpu::testing
