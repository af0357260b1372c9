// The random ops checked statistically (means and spreads within a few
// standard errors over many draws), the seed's determinism, the generator's
// agreement with NumPy's legacy RandomState, Dropout's training mode, and
// the nodes and inputs that must be refused.
#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

Tensor filled(DType dtype, const Shape& shape, float v) {
  Tensor t = Tensor::allocate(dtype, shape);
  for (size_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::F64) t.data<double>()[i] = v;
    else if (dtype == DType::F32) t.data<float>()[i] = v;
    else t.data<uint16_t>()[i] = core::float_to_half(v);
  }
  return t;
}

double mean_of(const Tensor& t, size_t begin, size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += t.as_double(i);
  return s / static_cast<double>(end - begin);
}

TEST(CpuRandom, BernoulliDrawsOnesWithTheInputsProbabilities) {
  // Five blocks of 40000 probabilities; each block's mean must be within six
  // standard errors of its p (a false failure about once in 10^8 runs), and
  // p = 0 and p = 1 exactly.
  const std::vector<float> ps = {0, 0.1f, 0.5f, 0.9f, 1};
  const size_t block = 40000;
  for (DType dtype : {DType::F32, DType::F64, DType::F16}) {
    Tensor p = Tensor::allocate(dtype, {static_cast<int64_t>(ps.size() * block)});
    for (size_t b = 0; b < ps.size(); ++b)
      for (size_t i = 0; i < block; ++i) {
        const size_t at = b * block + i;
        if (dtype == DType::F64) p.data<double>()[at] = ps[b];
        else if (dtype == DType::F32) p.data<float>()[at] = ps[b];
        else p.data<uint16_t>()[at] = core::float_to_half(ps[b]);
      }
    KernelNode n("Bernoulli", 15, 1);
    const Tensor y = n.run_once({p})[0];
    ASSERT_EQ(y.dtype(), dtype);
    for (size_t b = 0; b < ps.size(); ++b) {
      const double pb = p.as_double(b * block);  // as float16 holds it
      const double se = std::sqrt(pb * (1 - pb) / static_cast<double>(block));
      EXPECT_NEAR(mean_of(y, b * block, (b + 1) * block), pb, 6 * se + 1e-12)
          << core::dtype_name(dtype) << " p = " << pb;
    }
    for (size_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(y.as_double(i) == 0 || y.as_double(i) == 1);
  }
  // The dtype attribute picks the output type.
  for (DType out : {DType::I32, DType::Bool, DType::U8, DType::F64}) {
    KernelNode n("Bernoulli", 15, 1);
    n.attr_int("dtype", static_cast<int64_t>(out)).attr_float("seed", 3);
    const Tensor y = n.run_once({filled(DType::F32, {1000}, 0.5f)})[0];
    EXPECT_EQ(y.dtype(), out);
    EXPECT_NEAR(mean_of(y, 0, 1000), 0.5, 6 * std::sqrt(0.25 / 1000));
  }
}

TEST(CpuRandom, ASeedMakesEveryRunTheSameAndNoSeedDoesNot) {
  const Tensor p = filled(DType::F32, {256}, 0.5f);
  KernelNode seeded("Bernoulli", 15, 1), other("Bernoulli", 15, 1), unseeded("Bernoulli", 15, 1);
  seeded.attr_float("seed", 42);
  other.attr_float("seed", 43);
  const std::unique_ptr<Kernel> k = seeded.build();
  auto run = [&](const KernelNode& n, Kernel& kernel) {
    return ints(run_kernel(kernel, *n.node, {p}, 1, 1)[0]);
  };
  // The same kernel twice, and a second kernel with the same seed.
  const std::vector<int64_t> first = run(seeded, *k);
  EXPECT_EQ(run(seeded, *k), first);
  EXPECT_EQ(run(seeded, *seeded.build()), first);
  // 256 fair draws agree by chance with probability 2^-256.
  EXPECT_NE(run(other, *other.build()), first);
  const std::unique_ptr<Kernel> u = unseeded.build();
  EXPECT_NE(run(unseeded, *u), run(unseeded, *u));
}

TEST(CpuRandom, TheGeneratorIsNumPysLegacyRandomState) {
  // numpy.random.seed(0); random_sample(4) and standard_normal(3).
  KernelNode uniform("RandomUniform", 1, 0);
  uniform.attr_ints("shape", {4}).attr_float("seed", 0).attr_int("dtype", static_cast<int64_t>(DType::F64));
  EXPECT_EQ(doubles(uniform.run_once({})[0]),
            (std::vector<double>{0.5488135039273248, 0.7151893663724195, 0.6027633760716439, 0.5448831829968969}));
  KernelNode normal("RandomNormal", 1, 0);
  normal.attr_ints("shape", {3}).attr_float("seed", 0).attr_int("dtype", static_cast<int64_t>(DType::F64));
  EXPECT_TRUE(near(normal.run_once({})[0], {1.764052345967664, 0.4001572083672233, 0.9787379841057392}, 1e-15, 0));
}

TEST(CpuRandom, UniformAndNormalMomentsAndRanges) {
  const size_t count = 100000;
  KernelNode uniform("RandomUniform", 1, 0);
  uniform.attr_ints("shape", {static_cast<int64_t>(count)}).attr_float("low", -2).attr_float("high", 6);
  const Tensor u = uniform.run_once({})[0];
  EXPECT_EQ(u.dtype(), DType::F32);
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(u.data<float>()[i] >= -2 && u.data<float>()[i] <= 6);
  EXPECT_NEAR(mean_of(u, 0, count), 2, 6 * 8 / std::sqrt(12.0 * count));
  // The *Like forms take the input's shape and dtype.
  KernelNode normal("RandomNormalLike", 1, 1);
  normal.attr_float("mean", 3).attr_float("scale", 0.5f);
  const Tensor g = normal.run_once({filled(DType::F64, {static_cast<int64_t>(count)}, 0)})[0];
  EXPECT_EQ(g.dtype(), DType::F64);
  const double m = mean_of(g, 0, count);
  double var = 0;
  for (size_t i = 0; i < count; ++i) var += (g.data<double>()[i] - m) * (g.data<double>()[i] - m);
  var /= static_cast<double>(count);
  EXPECT_NEAR(m, 3, 6 * 0.5 / std::sqrt(static_cast<double>(count)));
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);
  KernelNode like("RandomUniformLike", 1, 1);
  const Tensor h = like.run_once({filled(DType::F16, {2, 3}, 0)})[0];
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.shape(), (Shape{2, 3}));
}

TEST(CpuRandom, DropoutInTrainingModeKeepsAndScales) {
  const size_t count = 50000;
  const Tensor x = filled(DType::F32, {static_cast<int64_t>(count)}, 2.0f);
  for (float ratio : {0.25f, 0.75f}) {
    KernelNode n("Dropout", 13, 3, 2);
    n.attr_int("seed", 5);
    const std::vector<Tensor> out = n.run_once({x, tensor<float>({ratio}, {}), tensor<bool>({true}, {})}, 2);
    size_t kept = 0;
    for (size_t i = 0; i < count; ++i) {
      const bool m = out[1].data<bool>()[i];
      kept += m;
      // Kept values are scaled by 1 / (1 - ratio), dropped ones are zero.
      ASSERT_FLOAT_EQ(out[0].data<float>()[i], m ? 2.0f / (1 - ratio) : 0.0f);
    }
    const double p = 1 - ratio;
    EXPECT_NEAR(static_cast<double>(kept) / count, p, 6 * std::sqrt(p * (1 - p) / count));
    // The same seed, the same mask.
    EXPECT_EQ(ints(n.run_once({x, tensor<float>({ratio}, {}), tensor<bool>({true}, {})}, 2)[1]), ints(out[1]));
  }
  // Not training, or a zero ratio: the input itself and an all-true mask.
  KernelNode n("Dropout", 13, 3, 2);
  for (const auto& [ratio, training] : {std::pair{0.5f, false}, std::pair{0.0f, true}}) {
    const std::vector<Tensor> out = n.run_once({x, tensor<float>({ratio}, {}), tensor<bool>({training}, {})}, 2);
    EXPECT_EQ(out[0].data<float>(), x.data<float>());  // a view, no copy
    for (size_t i = 0; i < count; ++i) ASSERT_TRUE(out[1].data<bool>()[i]);
  }
  // float16 in training mode.
  const Tensor h = filled(DType::F16, {1000}, 1.0f);
  const Tensor y = n.run_once({h, tensor<float>({0.5f}, {}), tensor<bool>({true}, {})})[0];
  EXPECT_EQ(y.dtype(), DType::F16);
  for (size_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(y.as_double(i) == 0 || y.as_double(i) == 2);
  // A ratio outside [0, 1) in training mode is refused.
  for (float bad : {1.0f, -0.1f})
    expect_error([&] { n.run_once({x, tensor<float>({bad}, {}), tensor<bool>({true}, {})}); }, HETERO_INVALID_ARGUMENT,
                 {"node 'n' (Dropout)", "ratio must be in [0, 1)"});
}

TEST(CpuRandom, BadNodesAreRefusedAtKernelBuildNamingTheNode) {
  // (ONNX's checker refuses most of these at import already; a model built
  // without it reaches the kernel.)
  KernelNode bernoulli("Bernoulli", 15, 1);
  bernoulli.attr_int("dtype", 8);
  expect_error([&] { bernoulli.build(); }, HETERO_INVALID_MODEL,
               {"node 'n' (Bernoulli)", "dtype 8 is not a numeric or bool type"});
  KernelNode shape("RandomUniform", 1, 0);
  expect_error([&] { shape.build(); }, HETERO_INVALID_MODEL, {"node 'n' (RandomUniform)", "the shape attribute is required"});
  KernelNode negative("RandomNormal", 1, 0);
  negative.attr_ints("shape", {2, -1});
  expect_error([&] { negative.build(); }, HETERO_INVALID_MODEL, {"has a negative dim"});
  KernelNode seed("RandomUniform", 1, 0);
  seed.attr_ints("shape", {2}).attr_float("seed", INFINITY);
  expect_error([&] { seed.build(); }, HETERO_INVALID_MODEL, {"seed must be a finite number"});
  KernelNode like("RandomUniformLike", 1, 1);
  like.input_dtype(0, DType::I64);
  expect_error([&] { like.build(); }, HETERO_INVALID_MODEL, {"the input is int64: the dtype attribute must name a float type"});
  KernelNode dtype("RandomNormal", 1, 0);
  dtype.attr_ints("shape", {2}).attr_int("dtype", static_cast<int64_t>(DType::I32));
  expect_error([&] { dtype.build(); }, HETERO_INVALID_MODEL, {"dtype 6 is not a float type"});
}

}  // namespace
}  // namespace hetero::cpu::testing
