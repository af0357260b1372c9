// The loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opset 12 and later).
//
// Scores are [N, C, d1, ...], labels [N, d1, ...] with values in [0, C) or
// ignore_index, weights (optional) [C]. Each position's loss is
// -weight[label] * input[n, label, d], where input is the scores themselves
// (NLL) or their log-softmax over C (cross entropy); an ignored position has
// loss 0 and weight 0. "mean" divides the sum of the losses by the sum of
// the weights of the positions not ignored (their count without weights), so
// that when every position is ignored the mean is 0/0 = NaN, as in ONNX's
// reference and PyTorch. Arithmetic is in double whatever the element type.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

enum class Reduction { None, Sum, Mean };

struct LossAttrs {
  Reduction reduction;
  std::optional<int64_t> ignore_index;
  bool softmax;  // cross entropy: the log-softmax of the scores
};

// Checks at build time what the static shapes and dtypes already show.
void check_static_inputs(const KernelBuild& b) {
  require_float_input(b, 0);
  if (b.input_dtype(1) != DType::Undefined && b.input_dtype(1) != DType::I32 && b.input_dtype(1) != DType::I64)
    b.invalid(std::string("labels must be int32 or int64, got ") + core::dtype_name(b.input_dtype(1)));
  const std::vector<core::Dim>* scores = b.input_dims(0);
  const std::vector<core::Dim>* labels = b.input_dims(1);
  const std::vector<core::Dim>* weights = b.input_dims(2);
  if (scores && scores->size() < 2) b.invalid("scores must be [N, C, ...], got rank " + std::to_string(scores->size()));
  if (weights && weights->size() != 1) b.invalid("weights must be [C], got rank " + std::to_string(weights->size()));
  if (!scores) return;
  const core::Dim& classes = (*scores)[1];
  if (weights && classes.known() && (*weights)[0].known() && (*weights)[0].size != classes.size)
    b.invalid("weights have " + std::to_string((*weights)[0].size) + " values for " + std::to_string(classes.size) +
              " classes");
  if (!labels) return;
  if (labels->size() + 1 != scores->size())
    b.invalid("labels must have rank " + std::to_string(scores->size() - 1) + " for rank-" +
              std::to_string(scores->size()) + " scores, got rank " + std::to_string(labels->size()));
  for (size_t i = 0; i < labels->size(); ++i) {
    const core::Dim& l = (*labels)[i];
    const core::Dim& s = (*scores)[i == 0 ? 0 : i + 1];
    if (l.known() && s.known() && l.size != s.size)
      b.invalid("labels dim " + std::to_string(i) + " is " + std::to_string(l.size) + ", scores have " +
                std::to_string(s.size));
  }
}

LossAttrs loss_attrs(const KernelBuild& b, bool softmax) {
  const std::string r = b.node.attr_string("reduction", "mean");
  LossAttrs a{Reduction::Mean, std::nullopt, softmax};
  if (r == "none") a.reduction = Reduction::None;
  else if (r == "sum") a.reduction = Reduction::Sum;
  else if (r != "mean") b.invalid("reduction must be none, sum or mean, got '" + r + "'");
  if (b.node.has_attr("ignore_index")) a.ignore_index = b.node.attr_int("ignore_index", 0);
  check_static_inputs(b);
  return a;
}

template <typename T>
void compute_loss(const LossAttrs& a, const Tensor& scores, const std::vector<int64_t>& labels,
                  const Tensor* weights, Tensor& loss, Tensor* log_prob) {
  const int64_t n_count = scores.dim(0), classes = scores.dim(1);
  const int64_t inner = product(scores.shape(), 2, scores.rank());
  const T* x = scores.data<T>();
  const T* w = weights ? weights->data<T>() : nullptr;
  T* out = loss.data<T>();
  T* lp = log_prob ? log_prob->data<T>() : nullptr;
  double total = 0, weight_total = 0;
  // Per sample: log-sum-exp over the classes at every position (cross
  // entropy; the scores' layout makes the positions the contiguous axis),
  // then the positions' losses.
  std::vector<double> lse(static_cast<size_t>(inner), 0.0), max(lse), sum(lse);
  for (int64_t n = 0; n < n_count; ++n) {
    const T* xs = x + n * classes * inner;
    if (a.softmax) {
      std::fill(max.begin(), max.end(), -std::numeric_limits<double>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t c = 0; c < classes; ++c)
        for (int64_t d = 0; d < inner; ++d) max[d] = std::max(max[d], static_cast<double>(xs[c * inner + d]));
      for (int64_t c = 0; c < classes; ++c)
        for (int64_t d = 0; d < inner; ++d) sum[d] += std::exp(static_cast<double>(xs[c * inner + d]) - max[d]);
      for (int64_t d = 0; d < inner; ++d) lse[d] = max[d] + std::log(sum[d]);
      if (lp)
        for (int64_t c = 0; c < classes; ++c)
          for (int64_t d = 0; d < inner; ++d)
            lp[(n * classes + c) * inner + d] = static_cast<T>(static_cast<double>(xs[c * inner + d]) - lse[d]);
    }
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t t = labels[static_cast<size_t>(n * inner + d)];
      double l = 0;
      if (!(a.ignore_index && t == *a.ignore_index)) {
        const double weight = w ? static_cast<double>(w[t]) : 1.0;
        const double input = static_cast<double>(xs[t * inner + d]) - (a.softmax ? lse[d] : 0.0);
        l = -weight * input;
        weight_total += weight;
      }
      total += l;
      if (a.reduction == Reduction::None) out[n * inner + d] = static_cast<T>(l);
    }
  }
  if (a.reduction == Reduction::Sum) out[0] = static_cast<T>(total);
  if (a.reduction == Reduction::Mean) out[0] = static_cast<T>(total / weight_total);
}

void run_loss(KernelRun& r, const LossAttrs& a) {
  const core::Node& node = r.node();
  const Tensor& scores_in = required_input(r, 0);
  const Tensor& labels_t = required_input(r, 1);
  const Tensor* weights_in = r.input(2);
  check_float_input(r, scores_in);
  if (scores_in.rank() < 2)
    bad_input(node, "scores must be [N, C, ...], got " + core::shape_to_string(scores_in.shape()));
  const int64_t classes = scores_in.dim(1);
  Shape label_shape = scores_in.shape();
  label_shape.erase(label_shape.begin() + 1);
  if (labels_t.shape() != label_shape)
    bad_input(node, "labels of shape " + core::shape_to_string(labels_t.shape()) + " do not fit scores of shape " +
                        core::shape_to_string(scores_in.shape()) + " (expected " +
                        core::shape_to_string(label_shape) + ")");
  if (weights_in) {
    if (weights_in->shape() != Shape{classes})
      bad_input(node, "weights of shape " + core::shape_to_string(weights_in->shape()) + " must be " +
                          std::to_string(classes) + " values, one per class");
    if (weights_in->dtype() != scores_in.dtype())
      bad_input(node, std::string("weights are ") + core::dtype_name(weights_in->dtype()) + ", scores " +
                          core::dtype_name(scores_in.dtype()));
  }
  const std::vector<int64_t> labels = int_input_values(node, labels_t, "labels");
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t t = labels[i];
    if ((t < 0 || t >= classes) && !(a.ignore_index && t == *a.ignore_index))
      bad_input(node, "label " + std::to_string(t) + " at position " + std::to_string(i) + " is not a class in [0, " +
                          std::to_string(classes) + ")");
  }
  const Tensor scores = widen_half(scores_in);
  std::optional<Tensor> weights;
  if (weights_in) weights = widen_half(*weights_in);
  FloatOutput loss(r, 0, scores_in.dtype(), a.reduction == Reduction::None ? label_shape : Shape{});
  std::optional<FloatOutput> log_prob;
  if (a.softmax && r.num_outputs() > 1 && r.output_wanted(1)) log_prob.emplace(r, 1, scores_in.dtype(), scores_in.shape());
  dispatch(FloatTypes{}, scores.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    compute_loss<T>(a, scores, labels, weights ? &*weights : nullptr, loss.tensor(),
                    log_prob ? &log_prob->tensor() : nullptr);
  });
  loss.finish();
  if (log_prob) log_prob->finish();
}

}  // namespace

std::unique_ptr<Kernel> make_nll_loss(const KernelBuild& b) {
  const LossAttrs a = loss_attrs(b, false);
  return make_fn_kernel([a](KernelRun& r) { run_loss(r, a); });
}

std::unique_ptr<Kernel> make_softmax_cross_entropy_loss(const KernelBuild& b) {
  const LossAttrs a = loss_attrs(b, true);
  return make_fn_kernel([a](KernelRun& r) { run_loss(r, a); });
}

}  // namespace hetero::cpu
