// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against the ONNX
// definitions written here one position at a time, over what ONNX's test data
// leaves out: int32 labels, float16 and double scores, every reduction with
// and without weights on one random case, a batch where every position is
// ignored, and the labels, shapes and attributes that must be refused.
#include <cmath>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

struct LossCase {
  bool softmax;
  std::string reduction;
  bool weights;
  std::optional<int64_t> ignore_index;
};

// Loss values (per position for "none", else one) and log-probabilities.
std::pair<std::vector<double>, std::vector<double>> reference(const LossCase& c, const Tensor& x,
                                                              const std::vector<int64_t>& labels, const Tensor* w) {
  const int64_t n = x.dim(0), classes = x.dim(1);
  const int64_t inner = static_cast<int64_t>(x.numel()) / (n * classes);
  std::vector<double> input(x.numel()), losses;
  for (size_t i = 0; i < x.numel(); ++i) input[i] = x.as_double(i);
  if (c.softmax)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t d = 0; d < inner; ++d) {
        double sum = 0;
        for (int64_t k = 0; k < classes; ++k) sum += std::exp(x.as_double(static_cast<size_t>((b * classes + k) * inner + d)));
        for (int64_t k = 0; k < classes; ++k) input[static_cast<size_t>((b * classes + k) * inner + d)] -= std::log(sum);
      }
  double total = 0, weight_total = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t t = labels[static_cast<size_t>(b * inner + d)];
      double l = 0;
      if (!(c.ignore_index && t == *c.ignore_index)) {
        const double weight = w ? w->as_double(static_cast<size_t>(t)) : 1.0;
        l = -weight * input[static_cast<size_t>((b * classes + t) * inner + d)];
        weight_total += weight;
      }
      losses.push_back(l);
      total += l;
    }
  if (c.reduction == "sum") losses = {total};
  if (c.reduction == "mean") losses = {total / weight_total};
  return {losses, input};
}

Tensor random_scores(DType dtype, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-3, 3);
  Tensor t = Tensor::allocate(dtype, shape);
  for (size_t i = 0; i < t.numel(); ++i) {
    const double v = d(rng);
    if (dtype == DType::F64) t.data<double>()[i] = v;
    else if (dtype == DType::F32) t.data<float>()[i] = static_cast<float>(v);
    else t.data<uint16_t>()[i] = core::float_to_half(static_cast<float>(v));
  }
  return t;
}

TEST(CpuLoss, EveryReductionWeightAndIgnoreIndexAgainstTheDefinition) {
  std::mt19937 rng(11);
  const Shape shape{3, 5, 2, 4};  // N, C, d1, d2
  for (bool softmax : {false, true})
    for (const char* reduction : {"none", "sum", "mean"})
      for (bool weights : {false, true})
        for (std::optional<int64_t> ignore : {std::optional<int64_t>{}, std::optional<int64_t>{2},
                                              std::optional<int64_t>{-100}})
          for (DType dtype : {DType::F32, DType::F64, DType::F16})
            for (DType label_type : {DType::I64, DType::I32}) {
              const LossCase c{softmax, reduction, weights, ignore};
              SCOPED_TRACE(std::string(softmax ? "SCE " : "NLL ") + reduction + (weights ? " weights" : "") +
                           (ignore ? " ignore " + std::to_string(*ignore) : "") + " " + core::dtype_name(dtype) + " " +
                           core::dtype_name(label_type));
              const Tensor x = random_scores(dtype, shape, rng);
              Tensor labels = Tensor::allocate(label_type, {3, 2, 4});
              std::vector<int64_t> label_values;
              std::uniform_int_distribution<int64_t> cls(0, 4);
              for (size_t i = 0; i < labels.numel(); ++i) {
                int64_t t = cls(rng);
                if (ignore && *ignore < 0 && i % 5 == 0) t = *ignore;  // an ignore_index outside [0, C)
                label_values.push_back(t);
                if (label_type == DType::I64) labels.data<int64_t>()[i] = t;
                else labels.data<int32_t>()[i] = static_cast<int32_t>(t);
              }
              const Tensor w = random_scores(dtype, {5}, rng);
              KernelNode n(softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", 13, 3, softmax ? 2 : 1);
              n.attr_string("reduction", reduction);
              if (ignore) n.attr_int("ignore_index", *ignore);
              std::vector<std::optional<Tensor>> in{x, labels, std::nullopt};
              if (weights) in[2] = w;
              else n.omit_input(2);
              const std::vector<Tensor> out = n.run(in, softmax ? 2 : 1);
              const auto [want, log_prob] = reference(c, x, label_values, weights ? &w : nullptr);
              const Shape loss_shape = std::string(reduction) == "none" ? Shape{3, 2, 4} : Shape{};
              EXPECT_EQ(out[0].shape(), loss_shape);
              EXPECT_EQ(out[0].dtype(), dtype);
              const double tol = dtype == DType::F16 ? 2e-2 : dtype == DType::F32 ? 1e-5 : 1e-12;
              EXPECT_TRUE(near(out[0], want, tol, tol));
              if (softmax) {
                EXPECT_TRUE(near(out[1], log_prob, tol, tol));
              }
            }
}

TEST(CpuLoss, WhenEveryPositionIsIgnoredTheMeanIsNaNAndTheSumZero) {
  const Tensor x = f32({1, 2, 3, 4}, {2, 2});
  const Tensor labels = tensor<int64_t>({7, 7}, {2});
  for (const char* reduction : {"mean", "sum"}) {
    KernelNode n("SoftmaxCrossEntropyLoss", 13, 2);
    n.attr_string("reduction", reduction).attr_int("ignore_index", 7);
    const Tensor loss = n.run({x, labels})[0];
    if (std::string(reduction) == "mean") {
      EXPECT_TRUE(std::isnan(loss.data<float>()[0]));
    } else {
      EXPECT_EQ(loss.data<float>()[0], 0.0f);
    }
  }
}

TEST(CpuLoss, LabelsOutsideTheClassesAreRefusedNamingThem) {
  KernelNode n("NegativeLogLikelihoodLoss", 13, 2);
  n.attr_int("ignore_index", -1);
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_NO_THROW(n.run({x, tensor<int64_t>({-1, 2}, {2})}));
  expect_error([&] { n.run({x, tensor<int64_t>({0, 3}, {2})}); }, HETERO_INVALID_ARGUMENT,
               {"node 'n' (NegativeLogLikelihoodLoss)", "label 3 at position 1 is not a class in [0, 3)"});
  expect_error([&] { n.run({x, tensor<int64_t>({-2, 0}, {2})}); }, HETERO_INVALID_ARGUMENT, {"label -2"});
  expect_error([&] { n.run({x, tensor<int64_t>({0, 1, 2}, {3})}); }, HETERO_INVALID_ARGUMENT,
               {"labels of shape 3 do not fit scores of shape 2x3 (expected 2)"});
  expect_error([&] { n.run({x, f32({0, 1}, {2})}); }, HETERO_INVALID_ARGUMENT, {"labels must be int64 or int32"});
  KernelNode w("SoftmaxCrossEntropyLoss", 13, 3);
  expect_error([&] { w.run({x, tensor<int64_t>({0, 1}, {2}), f32({1, 1}, {2})}); }, HETERO_INVALID_ARGUMENT,
               {"weights of shape 2 must be 3 values, one per class"});
  expect_error([&] { w.run({f32({1, 2}, {2}), tensor<int64_t>({0, 1}, {2}), std::nullopt}); },
               HETERO_INVALID_ARGUMENT, {"scores must be [N, C, ...]"});
}

TEST(CpuLoss, BadNodesAreRefusedAtCompileNamingTheNode) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 5, 3] x, int64[2, 3] t) => (float y) {
  y = SoftmaxCrossEntropyLoss <reduction = "average"> (x, t)
})",
                       HETERO_INVALID_MODEL, {"(SoftmaxCrossEntropyLoss)", "reduction must be none, sum or mean"});
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 5, 3] x, int64[2, 4] t) => (float y) {
  y = SoftmaxCrossEntropyLoss (x, t)
})",
                       HETERO_INVALID_MODEL, {"(SoftmaxCrossEntropyLoss)", "labels dim 1 is 4, scores have 3"});
  // The same checks at kernel build, for each static shape.
  KernelNode labels("SoftmaxCrossEntropyLoss", 13, 2);
  labels.input_shape(0, {2, 5, 3}).input_shape(1, {2, 4});
  expect_error([&] { labels.build(); }, HETERO_INVALID_MODEL,
               {"node 'n' (SoftmaxCrossEntropyLoss)", "labels dim 1 is 4, scores have 3"});
  KernelNode rank("NegativeLogLikelihoodLoss", 13, 2);
  rank.input_shape(0, {2, 5, 3}).input_shape(1, {2});
  expect_error([&] { rank.build(); }, HETERO_INVALID_MODEL, {"labels must have rank 2 for rank-3 scores"});
  KernelNode weights("NegativeLogLikelihoodLoss", 13, 3);
  weights.input_shape(0, {2, 5}).input_shape(2, {4});
  expect_error([&] { weights.build(); }, HETERO_INVALID_MODEL, {"weights have 4 values for 5 classes"});
  KernelNode type("NegativeLogLikelihoodLoss", 13, 2);
  type.input_dtype(1, DType::F32);
  expect_error([&] { type.build(); }, HETERO_INVALID_MODEL, {"labels must be int32 or int64, got float32"});
}

TEST(CpuLoss, ThroughTheDriverAModelWithBothOutputs) {
  const Tensor x = f32({0.5f, 1.5f, -1, 2, 0, 0}, {2, 3});
  const Tensor t = tensor<int64_t>({1, 0}, {2});
  const std::vector<Tensor> out = run_model(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, int64[2] t) => (float y, float[2, 3] lp) {
  y, lp = SoftmaxCrossEntropyLoss <reduction = "sum"> (x, t)
})",
                                            {x, t});
  const auto [want, log_prob] = reference({true, "sum", false, std::nullopt}, x, {1, 0}, nullptr);
  EXPECT_TRUE(near(out[0], want, 1e-5, 1e-5));
  EXPECT_TRUE(near(out[1], log_prob, 1e-5, 1e-5));
}

}  // namespace
}  // namespace hetero::cpu::testing
