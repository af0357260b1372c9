// The inference forms of ONNX's training ops: Adagrad, Adam and Momentum
// against their documented formulas (several tensors at once, the first step
// and a later one, float and double, outputs left out), BatchNormalization in
// training mode against batch statistics computed here (channels-first, the
// driver's channels-last form, and after a convolution through the whole
// driver), and the nodes and inputs that must be refused.
#include <cmath>
#include <random>

#include "drivers/cpu/post_ops.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

constexpr const char* kTraining = "ai.onnx.preview.training";

template <typename T>
Tensor random_of(const Shape& shape, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t = Tensor::allocate(core::DTypeOf<T>::value, shape);
  for (size_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

template <typename T>
void check_optimizers() {
  std::mt19937 rng(51);
  const std::vector<Shape> shapes = {{3}, {2, 2}};
  const double rate = 0.1;
  for (int64_t step : {0, 3}) {
    const Tensor r = tensor<T>({static_cast<T>(rate)}, {}), t = scalar_i64(step);
    std::vector<Tensor> x, g, v, h;
    for (const Shape& s : shapes) {
      x.push_back(random_of<T>(s, rng, -1, 1));
      g.push_back(random_of<T>(s, rng, -1, 1));
      v.push_back(random_of<T>(s, rng, -1, 1));
      h.push_back(random_of<T>(s, rng, 0, 1));  // squared-gradient sums are not negative
    }
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    const auto td = static_cast<double>(step);
    SCOPED_TRACE("T = " + std::to_string(step));
    {  // Adagrad
      const double decay = 0.2f, eps = 1e-3f, norm = 0.01f;  // float attributes
      KernelNode n("Adagrad", 1, 8, 4, kTraining);
      n.attr_float("decay_factor", 0.2f).attr_float("epsilon", 1e-3f).attr_float("norm_coefficient", 0.01f);
      const std::vector<Tensor> out = n.run({r, t, x[0], x[1], g[0], g[1], h[0], h[1]}, 4);
      for (size_t i = 0; i < 2; ++i) {
        std::vector<double> x_new, h_new;
        for (size_t e = 0; e < x[i].numel(); ++e) {
          const double xv = x[i].as_double(e), gr = norm * xv + g[i].as_double(e);
          const double hv = h[i].as_double(e) + gr * gr;
          x_new.push_back(xv - rate / (1 + td * decay) * gr / (std::sqrt(hv) + eps));
          h_new.push_back(hv);
        }
        EXPECT_TRUE(near(out[i], x_new, tol, tol)) << "Adagrad X" << i;
        EXPECT_TRUE(near(out[2 + i], h_new, tol, tol)) << "Adagrad H" << i;
      }
    }
    {  // Adam, with the defaults but for norm_coefficient_post
      const double alpha = 0.9f, beta = 0.999f, eps = 1e-6f, post = 0.05f;
      KernelNode n("Adam", 1, 10, 6, kTraining);
      n.attr_float("norm_coefficient_post", 0.05f);
      const std::vector<Tensor> out = n.run({r, t, x[0], x[1], g[0], g[1], v[0], v[1], h[0], h[1]}, 6);
      const double r_adj = step > 0 ? rate * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td)) : rate;
      for (size_t i = 0; i < 2; ++i) {
        std::vector<double> x_new, v_new, h_new;
        for (size_t e = 0; e < x[i].numel(); ++e) {
          const double gr = g[i].as_double(e);
          const double vv = alpha * v[i].as_double(e) + (1 - alpha) * gr;
          const double hv = beta * h[i].as_double(e) + (1 - beta) * gr * gr;
          x_new.push_back((1 - post) * (x[i].as_double(e) - r_adj * vv / (std::sqrt(hv) + eps)));
          v_new.push_back(vv);
          h_new.push_back(hv);
        }
        EXPECT_TRUE(near(out[i], x_new, tol, tol)) << "Adam X" << i;
        EXPECT_TRUE(near(out[2 + i], v_new, tol, tol)) << "Adam V" << i;
        EXPECT_TRUE(near(out[4 + i], h_new, tol, tol)) << "Adam H" << i;
      }
    }
    for (const char* mode : {"standard", "nesterov"}) {  // Momentum
      const double alpha = 0.8f, beta = 0.3f, norm = 0.02f;
      KernelNode n("Momentum", 1, 8, 4, kTraining);
      n.attr_float("alpha", 0.8f).attr_float("beta", 0.3f).attr_float("norm_coefficient", 0.02f);
      n.attr_string("mode", mode);
      const std::vector<Tensor> out = n.run({r, t, x[0], x[1], g[0], g[1], v[0], v[1]}, 4);
      for (size_t i = 0; i < 2; ++i) {
        std::vector<double> x_new, v_new;
        for (size_t e = 0; e < x[i].numel(); ++e) {
          const double xv = x[i].as_double(e), gr = norm * xv + g[i].as_double(e);
          const double vv = alpha * v[i].as_double(e) + (step > 0 ? beta : 1.0) * gr;
          x_new.push_back(xv - rate * (std::string(mode) == "nesterov" ? gr + alpha * vv : vv));
          v_new.push_back(vv);
        }
        EXPECT_TRUE(near(out[i], x_new, tol, tol)) << mode << " X" << i;
        EXPECT_TRUE(near(out[2 + i], v_new, tol, tol)) << mode << " V" << i;
      }
    }
  }
}

TEST(CpuTraining, OptimizersFollowTheirFormulas) {
  check_optimizers<float>();
  check_optimizers<double>();
}

TEST(CpuTraining, OptimizersOutputsMayBeLeftOut) {
  // Only the new X: the state outputs are not asked for.
  KernelNode n("Momentum", 1, 5, 1, kTraining);
  n.attr_float("alpha", 0.5f).attr_float("beta", 1).attr_float("norm_coefficient", 0).attr_string("mode", "standard");
  const Tensor y = n.run({f32({0.5f}, {}), scalar_i64(1), f32({1, 2}, {2}), f32({1, 1}, {2}), f32({2, 0}, {2})})[0];
  EXPECT_TRUE(near(y, {1 - 0.5 * (0.5 * 2 + 1), 2 - 0.5 * 1}, 1e-6));
}

TEST(CpuTraining, OptimizerNodesAndInputsThatDoNotFitAreRefused) {
  KernelNode groups("Adam", 1, 7, 3, kTraining);
  expect_error([&] { groups.build(); }, HETERO_INVALID_MODEL,
               {"node 'n' (Adam)", "expects R, T and 4 tensors per optimised tensor, got 7 inputs"});
  KernelNode outputs("Adagrad", 1, 5, 3, kTraining);
  expect_error([&] { outputs.build(); }, HETERO_INVALID_MODEL, {"has 3 outputs for 1 optimised tensors (at most 2)"});
  KernelNode mode("Momentum", 1, 5, 2, kTraining);
  mode.attr_float("alpha", 0.5f).attr_float("beta", 1).attr_float("norm_coefficient", 0).attr_string("mode", "heavy");
  expect_error([&] { mode.build(); }, HETERO_INVALID_MODEL, {"mode must be standard or nesterov, got 'heavy'"});
  KernelNode missing("Momentum", 1, 5, 2, kTraining);
  expect_error([&] { missing.build(); }, HETERO_INVALID_MODEL, {"attribute alpha is required"});
  KernelNode n("Adagrad", 1, 5, 2, kTraining);
  expect_error([&] { n.run({f32({0.1f}, {}), scalar_i64(0), f32({1, 2}, {2}), f32({1, 2, 3}, {3}), f32({0, 0}, {2})}, 2); },
               HETERO_INVALID_ARGUMENT, {"node 'n' (Adagrad)", "input 3 (float32 3) does not match X1 (float32 2)"});
  expect_error([&] { n.run({f32({0.1f}, {}), f32({0}, {}), f32({1}, {1}), f32({1}, {1}), f32({0}, {1})}, 2); },
               HETERO_INVALID_ARGUMENT, {"T must be int64"});
}

// Per-channel batch statistics of NCHW data; the normalised output and the
// running statistics as ONNX defines training mode.
struct BatchNormReference {
  std::vector<double> y, running_mean, running_var;
};

BatchNormReference batch_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                        const Tensor& var, double eps, double momentum) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.dim(2) * x.dim(3);
  BatchNormReference r;
  r.y.resize(x.numel());
  for (int64_t k = 0; k < c; ++k) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) m += x.as_double(static_cast<size_t>((i * c + k) * inner + j));
    m /= static_cast<double>(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) v += std::pow(x.as_double(static_cast<size_t>((i * c + k) * inner + j)) - m, 2);
    v /= static_cast<double>(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        const auto at = static_cast<size_t>((i * c + k) * inner + j);
        r.y[at] = (x.as_double(at) - m) / std::sqrt(v + eps) * scale.as_double(static_cast<size_t>(k)) +
                  bias.as_double(static_cast<size_t>(k));
      }
    r.running_mean.push_back(mean.as_double(static_cast<size_t>(k)) * momentum + m * (1 - momentum));
    r.running_var.push_back(var.as_double(static_cast<size_t>(k)) * momentum + v * (1 - momentum));
  }
  return r;
}

TEST(CpuTraining, BatchNormalizationUsesTheBatchStatistics) {
  std::mt19937 rng(52);
  const Tensor x = random_of<float>({3, 4, 5, 6}, rng, -2, 3);
  const Tensor scale = random_of<float>({4}, rng, 0.5, 2), bias = random_of<float>({4}, rng, -1, 1);
  const Tensor mean = random_of<float>({4}, rng, -1, 1), var = random_of<float>({4}, rng, 0.5, 2);
  const BatchNormReference want = batch_norm_reference(x, scale, bias, mean, var, 0.01, 0.7);
  KernelNode n("BatchNormalization", 15, 5, 3);
  n.attr_int("training_mode", 1).attr_float("epsilon", 0.01f).attr_float("momentum", 0.7f);
  const std::vector<Tensor> out = n.run({x, scale, bias, mean, var}, 3, 2);
  EXPECT_TRUE(near(out[0], want.y, 1e-5, 1e-5));
  EXPECT_TRUE(near(out[1], want.running_mean, 1e-6, 1e-6));
  EXPECT_TRUE(near(out[2], want.running_var, 1e-6, 1e-6));

  // The channels-last form the driver's layout pass makes of it (NHWC data).
  Tensor nhwc = Tensor::allocate(DType::F32, {3, 5, 6, 4});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 30; ++j) nhwc.data<float>()[(i * 30 + j) * 4 + k] = x.data<float>()[(i * 4 + k) * 30 + j];
  KernelNode last("BatchNormalization", 1, 5, 3, kCpuDomain);
  last.attr_int("training_mode", 1).attr_float("epsilon", 0.01f).attr_float("momentum", 0.7f);
  last.attr_int(kChannelsLastAttr, 1);
  const std::vector<Tensor> lout = last.run({nhwc, scale, bias, mean, var}, 3);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 30; ++j)
        ASSERT_NEAR(lout[0].data<float>()[(i * 30 + j) * 4 + k], want.y[static_cast<size_t>((i * 4 + k) * 30 + j)], 1e-5);
  EXPECT_TRUE(near(lout[1], want.running_mean, 1e-6, 1e-6));
  EXPECT_TRUE(near(lout[2], want.running_var, 1e-6, 1e-6));
}

TEST(CpuTraining, BatchNormalizationAfterAConvolutionThroughTheDriver) {
  // With the graph passes the BatchNormalization follows the convolution
  // into channels-last memory and must not be folded into it; without them
  // it runs as written. Both give the same output.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 3, 8, 8] x, float[4, 3, 3, 3] w, float[4] s, float[4] b, float[4] m, float[4] v) => (float[2, 4, 8, 8] y, float[2, 4, 8, 8] n) {
  c = Conv <pads = [1, 1, 1, 1]> (x, w)
  n = BatchNormalization <training_mode = 1> (c, s, b, m, v)
  y = Relu (n)
})";
  std::mt19937 rng(53);
  const Tensor bias = random_of<float>({4}, rng, -1, 1);
  const std::vector<Tensor> in = {random_of<float>({2, 3, 8, 8}, rng, -1, 1), random_of<float>({4, 3, 3, 3}, rng, -1, 1),
                                  random_of<float>({4}, rng, 0.5, 2),        bias,
                                  random_of<float>({4}, rng, -1, 1),         random_of<float>({4}, rng, 0.5, 2)};
  const std::vector<Tensor> optimized = run_model(text, in);
  const std::vector<Tensor> plain = run_model(text, in, {{"optimize", "false"}});
  EXPECT_TRUE(near(optimized[0], doubles(plain[0]), 1e-4, 1e-4));
  // Batch statistics, not the running ones: each channel of the normalised
  // output has the bias as its mean.
  for (int64_t k = 0; k < 4; ++k) {
    double sum = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 64; ++j) sum += plain[1].data<float>()[(i * 4 + k) * 64 + j];
    EXPECT_NEAR(sum / 128, bias.data<float>()[k], 1e-4) << "channel " << k;
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
