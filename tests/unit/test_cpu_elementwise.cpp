// The CPU driver's elementwise, reduction and softmax kernels on cases ONNX's
// node tests leave out: legacy broadcasting, per-channel and scalar operands,
// tensors big enough to take the parallel paths, integer corner cases,
// float16, non-contiguous reduction axes, and refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "tests/unit/cpu_kernel_test_util.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

template <typename T>
Tensor make(std::vector<T> values, Shape shape) {
  Tensor t = Tensor::allocate(core::DTypeOf<T>::value, shape);
  EXPECT_EQ(t.numel(), values.size());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

Tensor random_floats(Shape shape, uint32_t seed, float lo = -3, float hi = 3) {
  Tensor t = Tensor::allocate(DType::F32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), core::DTypeOf<T>::value);
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

Tensor run1(TestNode& n, std::vector<std::optional<Tensor>> inputs) { return run_node(*n.node, std::move(inputs))[0]; }

// ---- Binary ops and broadcasting.

TEST(CpuElementwise, PerChannelBroadcastOnBigTensor) {
  // NCHW + 1xCx1x1, large enough for the parallel row path.
  const Tensor x = random_floats({2, 16, 40, 40}, 1);
  const Tensor c = random_floats({1, 16, 1, 1}, 2);
  TestNode n("Add", 14, 2);
  const Tensor y = run1(n, {x, c});
  ASSERT_EQ(y.shape(), x.shape());
  for (size_t i = 0; i < x.numel(); ++i) {
    const size_t ch = i / 1600 % 16;
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[i] + c.data<float>()[ch]) << i;
  }
}

TEST(CpuElementwise, ScalarAndSameShapeOperands) {
  const Tensor x = random_floats({300, 300}, 3);
  TestNode mul("Mul", 14, 2);
  const Tensor y = run1(mul, {x, make<float>({2.0f}, {})});
  TestNode div("Div", 14, 2);
  const Tensor z = run1(div, {y, x});
  for (size_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]);
    ASSERT_FLOAT_EQ(z.data<float>()[i], 2.0f);
  }
}

TEST(CpuElementwise, BroadcastBothWays) {
  TestNode n("Sub", 14, 2);
  const Tensor y = run1(n, {make<int32_t>({1, 2, 3}, {3, 1}), make<int32_t>({10, 20}, {1, 2})});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{-9, -19, -8, -18, -7, -17}));
}

TEST(CpuElementwise, IncompatibleShapesNameTheNode) {
  TestNode n("Add", 14, 2);
  try {
    run1(n, {random_floats({2, 3}, 1), random_floats({4}, 2)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("node 'n' (Add)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2x3"), std::string::npos) << e.what();
  }
}

TEST(CpuElementwise, LegacyBroadcastWithAxis) {
  // Opset 6: B of shape [3] broadcast onto A [2, 3, 2] at axis 1.
  TestNode n("Mul", 6, 2);
  n.attr_int("broadcast", 1).attr_int("axis", 1);
  std::vector<float> a(12, 1.0f);
  const Tensor y = run1(n, {make<float>(a, {2, 3, 2}), make<float>({1, 2, 3}, {3})});
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
}

TEST(CpuElementwise, PreluPerChannelSlope) {
  TestNode n("PRelu", 16, 2);
  const Tensor y = run1(n, {make<float>({-1, 2, -3, 4}, {1, 2, 2, 1}), make<float>({0.5f, 0.25f}, {2, 1, 1})});
  EXPECT_EQ(values<float>(y), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  TestNode old("PRelu", 6, 2);  // a 1-D slope of size C is per channel before opset 7
  const Tensor z = run1(old, {make<float>({-1, 2, -3, 4}, {1, 2, 2, 1}), make<float>({0.5f, 0.25f}, {2})});
  EXPECT_EQ(values<float>(z), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
}

TEST(CpuElementwise, IntegerDivisionAndModSemantics) {
  const Tensor a = make<int32_t>({7, -7, 7, -7, std::numeric_limits<int32_t>::min()}, {5});
  const Tensor b = make<int32_t>({2, 2, -2, -2, -1}, {5});
  TestNode div("Div", 14, 2);
  EXPECT_EQ(values<int32_t>(run1(div, {a, b})),
            (std::vector<int32_t>{3, -3, -3, 3, std::numeric_limits<int32_t>::min()}));
  TestNode mod("Mod", 13, 2);  // Python semantics: the divisor's sign
  EXPECT_EQ(values<int32_t>(run1(mod, {a, b})), (std::vector<int32_t>{1, 1, -1, -1, 0}));
  TestNode fmod("Mod", 13, 2);
  fmod.attr_int("fmod", 1);  // C semantics: the dividend's sign
  EXPECT_EQ(values<int32_t>(run1(fmod, {a, b})), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  TestNode zero("Div", 14, 2);
  EXPECT_THROW(run1(zero, {a, make<int32_t>({1, 1, 0, 1, 1}, {5})}), Error);
}

TEST(CpuElementwise, PowMixedTypesAndFastPaths) {
  TestNode n("Pow", 15, 2);
  EXPECT_EQ(values<float>(run1(n, {make<float>({1, 2, 3}, {3}), make<int64_t>({2, 3, 0}, {3})})),
            (std::vector<float>{1, 8, 1}));
  EXPECT_EQ(values<int64_t>(run1(n, {make<int64_t>({3, -2, 10}, {3}), make<int64_t>({4, 3, 18}, {3})})),
            (std::vector<int64_t>{81, -8, 1000000000000000000}));
  EXPECT_EQ(values<float>(run1(n, {make<float>({-3, 4}, {2}), make<float>({2}, {})})), (std::vector<float>{9, 16}));
  EXPECT_EQ(values<float>(run1(n, {make<float>({9, 4}, {2}), make<double>({0.5}, {1})})), (std::vector<float>{3, 2}));
}

TEST(CpuElementwise, ComparisonsAndLogicGiveBool) {
  TestNode n("GreaterOrEqual", 16, 2);
  EXPECT_EQ(values<bool>(run1(n, {make<int64_t>({1, 2, 3}, {3}), make<int64_t>({2}, {1})})),
            (std::vector<bool>{false, true, true}));
  TestNode x("Xor", 7, 2);
  EXPECT_EQ(values<bool>(run1(x, {make<bool>({true, false}, {2, 1}), make<bool>({true, false}, {1, 2})})),
            (std::vector<bool>{false, true, true, false}));
}

TEST(CpuElementwise, BitShiftPastWidthIsZero) {
  TestNode n("BitShift", 11, 2);
  n.attr_string("direction", "LEFT");
  EXPECT_EQ(values<uint8_t>(run1(n, {make<uint8_t>({1, 1, 3}, {3}), make<uint8_t>({7, 8, 1}, {3})})),
            (std::vector<uint8_t>{128, 0, 6}));
  TestNode bad("BitShift", 11, 2);
  bad.attr_string("direction", "UP");
  EXPECT_THROW(build_kernel(*bad.node), Error);
}

TEST(CpuElementwise, VariadicOpsBroadcastAllInputs) {
  TestNode n("Max", 13, 3);
  const Tensor y = run1(n, {make<float>({1, 5}, {2, 1}), make<float>({3}, {}), make<float>({0, 4, 6}, {1, 3})});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{3, 4, 6, 5, 5, 6}));
  TestNode mean("Mean", 13, 2);
  EXPECT_EQ(values<int32_t>(run1(mean, {make<int32_t>({2, 4}, {2}), make<int32_t>({4}, {1})})),
            (std::vector<int32_t>{3, 4}));
  TestNode one("Sum", 13, 1);
  EXPECT_EQ(values<double>(run1(one, {make<double>({1.5}, {1})})), (std::vector<double>{1.5}));
}

TEST(CpuElementwise, WhereBroadcastsThreeWays) {
  TestNode n("Where", 16, 3);
  const Tensor y =
      run1(n, {make<bool>({true, false}, {2, 1}), make<int64_t>({1, 2, 3}, {3}), make<int64_t>({-1}, {})});
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(CpuElementwise, Float16ComputesInFloat) {
  auto half = [](std::vector<float> v, Shape s) {
    Tensor t = Tensor::allocate(DType::F16, s);
    for (size_t i = 0; i < v.size(); ++i) t.data<uint16_t>()[i] = core::float_to_half(v[i]);
    return t;
  };
  TestNode n("Add", 14, 2);
  const Tensor y = run1(n, {half({1, 2.5f}, {2}), half({0.5f}, {1})});
  ASSERT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(core::half_to_float(y.data<uint16_t>()[0]), 1.5f);
  EXPECT_EQ(core::half_to_float(y.data<uint16_t>()[1]), 3.0f);
  TestNode less("Less", 13, 2);
  EXPECT_EQ(values<bool>(run1(less, {half({1, 2.5f}, {2}), half({2}, {1})})), (std::vector<bool>{true, false}));
}

TEST(CpuElementwise, RefusesUnsupportedTypesAtBuild) {
  TestNode n("And", 7, 2);
  n.input_dtype(0, DType::F32);
  EXPECT_THROW(build_kernel(*n.node), Error);
  TestNode c("Cast", 13, 1);
  c.attr_int("to", static_cast<int64_t>(DType::String));
  try {
    build_kernel(*c.node);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
  }
}

// ---- Unary ops.

TEST(CpuElementwise, ActivationsMatchTheirFormulas) {
  const Tensor x = random_floats({70000}, 7, -20, 20);  // takes the parallel path
  const float* px = x.data<float>();
  TestNode sig("Sigmoid", 13, 1);
  const Tensor s = run1(sig, {x});
  TestNode hs("HardSigmoid", 6, 1);
  hs.attr_float("alpha", 0.25f);
  const Tensor h = run1(hs, {x});
  TestNode lr("LeakyRelu", 16, 1);
  const Tensor l = run1(lr, {x});
  for (size_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(s.data<float>()[i], 1 / (1 + std::exp(-double(px[i]))), 1e-6) << px[i];
    ASSERT_FLOAT_EQ(h.data<float>()[i], std::clamp(0.25f * px[i] + 0.5f, 0.0f, 1.0f));
    ASSERT_FLOAT_EQ(l.data<float>()[i], px[i] < 0 ? 0.01f * px[i] : px[i]);
  }
}

TEST(CpuElementwise, ClipAttributeAndInputForms) {
  TestNode old("Clip", 6, 1);
  old.attr_float("min", -1).attr_float("max", 1);
  EXPECT_EQ(values<float>(run1(old, {make<float>({-5, 0.5f, 5}, {3})})), (std::vector<float>{-1, 0.5f, 1}));
  TestNode ints("Clip", 13, 3);  // only a max given; min omitted
  EXPECT_EQ(values<int8_t>(run1(ints, {make<int8_t>({-128, 0, 127}, {3}), std::nullopt, make<int8_t>({10}, {})})),
            (std::vector<int8_t>{-128, 0, 10}));
  TestNode relu6("Clip", 11, 3);
  EXPECT_EQ(values<float>(run1(relu6, {make<float>({-1, 3, 9}, {3}), make<float>({0}, {}), make<float>({6}, {})})),
            (std::vector<float>{0, 3, 6}));
}

TEST(CpuElementwise, IntegerUnaryCornerCases) {
  TestNode abs("Abs", 13, 1);
  EXPECT_EQ(values<int8_t>(run1(abs, {make<int8_t>({-128, -3, 4}, {3})})), (std::vector<int8_t>{-128, 3, 4}));
  TestNode sign("Sign", 13, 1);
  EXPECT_EQ(values<int32_t>(run1(sign, {make<int32_t>({-9, 0, 9}, {3})})), (std::vector<int32_t>{-1, 0, 1}));
  TestNode round("Round", 11, 1);
  EXPECT_EQ(values<float>(run1(round, {make<float>({0.5f, 1.5f, 2.5f, -0.5f}, {4})})),
            (std::vector<float>{0, 2, 2, -0.0f}));
}

TEST(CpuElementwise, CastConversionRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TestNode to_int("Cast", 13, 1);
  to_int.attr_int("to", static_cast<int64_t>(DType::I32));
  EXPECT_EQ(values<int32_t>(run1(to_int, {make<float>({2.9f, -2.9f, 1e20f, nan}, {4})})),
            (std::vector<int32_t>{2, -2, 0, 0}));  // out of range wraps through int64
  TestNode to_bool("Cast", 13, 1);
  to_bool.attr_int("to", static_cast<int64_t>(DType::Bool));
  EXPECT_EQ(values<bool>(run1(to_bool, {make<float>({0, -0.0f, 0.1f, nan}, {4})})),
            (std::vector<bool>{false, false, true, true}));
  TestNode legacy("Cast", 1, 1);  // opset 1 names the type with a string
  legacy.attr_string("to", "INT64");
  EXPECT_EQ(values<int64_t>(run1(legacy, {make<uint8_t>({200}, {1})})), (std::vector<int64_t>{200}));
  TestNode like("CastLike", 15, 2);
  const Tensor h = run1(like, {make<double>({0.5}, {1}), Tensor::allocate(DType::F16, {0})});
  ASSERT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(core::half_to_float(h.data<uint16_t>()[0]), 0.5f);
}

// ---- Reductions.

TEST(CpuReduction, NonContiguousAxesAndKeepdims) {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.0f);
  TestNode n("ReduceSum", 11, 1);
  n.attr_ints("axes", {0, 2}).attr_int("keepdims", 0);
  const Tensor y = run1(n, {make<float>(v, {2, 3, 4})});
  EXPECT_EQ(y.shape(), (Shape{3}));
  // Sum over dims 0 and 2 for each j: sum_i sum_k (12i + 4j + k) = 2*(6+16j) + 12*4.
  EXPECT_EQ(values<float>(y), (std::vector<float>{60, 92, 124}));
  TestNode m("ReduceMax", 13, 1);
  m.attr_ints("axes", {-1});
  EXPECT_EQ(run1(m, {make<float>(v, {2, 3, 4})}).shape(), (Shape{2, 3, 1}));
}

TEST(CpuReduction, AxesInputAndNoop) {
  TestNode n("ReduceSum", 13, 2);
  n.attr_int("noop_with_empty_axes", 1);
  const Tensor x = make<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(values<int64_t>(run1(n, {x, make<int64_t>({}, {0})})), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>(run1(n, {x, make<int64_t>({0}, {1})})), (std::vector<int64_t>{4, 6}));
  TestNode all("ReduceSum", 13, 1);
  EXPECT_EQ(values<int64_t>(run1(all, {x})), (std::vector<int64_t>{10}));
}

TEST(CpuReduction, BigReductionsMatchDoubleReference) {
  // Reducing everything, trailing and middle axes of a big tensor exercises
  // the split-row, row and block paths.
  const Tensor x = random_floats({4, 64, 33, 17}, 11);
  const float* px = x.data<float>();
  for (std::vector<int64_t> axes : {std::vector<int64_t>{}, {2, 3}, {1}, {0, 2}}) {
    TestNode n("ReduceMean", 13, 1);
    n.attr_ints("axes", axes).attr_int("keepdims", 1);
    const Tensor y = run1(n, {x});
    std::vector<bool> red(4, axes.empty());
    for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
    std::vector<double> ref(y.numel(), 0.0);
    size_t count = x.numel() / y.numel();
    const Shape& s = x.shape();
    for (size_t i = 0; i < x.numel(); ++i) {
      size_t rem = i, out = 0, mult = 1;
      for (size_t d = 4; d-- > 0;) {
        const size_t idx = rem % static_cast<size_t>(s[d]);
        rem /= static_cast<size_t>(s[d]);
        if (!red[d]) out += idx * mult, mult *= static_cast<size_t>(s[d]);
      }
      ref[out] += px[i];
    }
    for (size_t j = 0; j < y.numel(); ++j) ASSERT_NEAR(y.data<float>()[j], ref[j] / count, 1e-4) << j;
  }
}

TEST(CpuReduction, LogSumExpIsStable) {
  TestNode n("ReduceLogSumExp", 13, 1);
  n.attr_ints("axes", {1});
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor y = run1(n, {make<float>({1000, 1000, -inf, -inf}, {2, 2})});
  EXPECT_NEAR(y.data<float>()[0], 1000 + std::log(2.0f), 1e-3);
  EXPECT_EQ(y.data<float>()[1], -inf);
}

TEST(CpuReduction, ArgMaxSelectLastAlongMiddleAxis) {
  TestNode n("ArgMax", 13, 1);
  n.attr_int("axis", 1).attr_int("select_last_index", 1);
  const Tensor y = run1(n, {make<float>({1, 5, 5, 2, 5, 0}, {1, 3, 2})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{2, 0}));
}

TEST(CpuReduction, CumSumAlongMiddleAxisReverseExclusive) {
  TestNode n("CumSum", 14, 2);
  n.attr_int("reverse", 1).attr_int("exclusive", 1);
  const Tensor y = run1(n, {make<int32_t>({1, 2, 3, 4, 5, 6}, {3, 2}), make<int32_t>({0}, {})});
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{8, 10, 5, 6, 0, 0}));
}

// ---- Softmax family.

TEST(CpuSoftmax, OldOpsetsCoerceTo2D) {
  // Opset 11 axis=1 on [2, 2, 2] normalises over the last 4 elements together.
  TestNode n("Softmax", 11, 1);
  const Tensor y = run1(n, {make<float>({0, 0, 0, 0, 1, 1, 1, 1}, {2, 2, 2})});
  for (float v : values<float>(y)) EXPECT_NEAR(v, 0.25f, 1e-6);
  TestNode m("Softmax", 13, 1);  // opset 13 axis=1: pairs along the middle axis
  m.attr_int("axis", 1);
  const Tensor z = run1(m, {make<float>({0, 0, std::log(3.0f), 0, 1, 1, 1, 1}, {2, 2, 2})});
  EXPECT_NEAR(z.data<float>()[0], 0.25f, 1e-6);
  EXPECT_NEAR(z.data<float>()[2], 0.75f, 1e-6);
  EXPECT_NEAR(z.data<float>()[1], 0.5f, 1e-6);
}

TEST(CpuSoftmax, LogSoftmaxAndHardmaxOnBigRows) {
  const Tensor x = random_floats({64, 1000}, 5, -50, 50);
  TestNode ls("LogSoftmax", 13, 1);
  const Tensor y = run1(ls, {x});
  TestNode hm("Hardmax", 13, 1);
  const Tensor h = run1(hm, {x});
  for (size_t r = 0; r < 64; ++r) {
    const float* row = x.data<float>() + r * 1000;
    const double m = *std::max_element(row, row + 1000);
    double s = 0;
    for (size_t k = 0; k < 1000; ++k) s += std::exp(row[k] - m);
    const size_t best = static_cast<size_t>(std::max_element(row, row + 1000) - row);
    for (size_t k = 0; k < 1000; ++k) {
      ASSERT_NEAR(y.data<float>()[r * 1000 + k], row[k] - m - std::log(s), 1e-4);
      ASSERT_EQ(h.data<float>()[r * 1000 + k], k == best ? 1.0f : 0.0f);
    }
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
