// Normalisations: BatchNormalization (inference and training mode),
// InstanceNormalization, LRN and LayerNormalization.
//
// Plain loops: each is one or two passes over memory, which a loop does at
// memory speed; oneDNN's versions would add a primitive per shape and
// layout constraints for no gain. Statistics accumulate in double so that
// large planes keep float32 accuracy.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu {

namespace {

[[noreturn]] void bad(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_ARGUMENT, node.describe() + ": " + what);
}

const core::Tensor& need(const KernelRun& r, size_t i, const char* name) {
  const core::Tensor* t = r.input(i);
  if (!t) bad(r.node(), std::string("input ") + name + " is missing");
  return *t;
}

void require_type(const KernelRun& r, const core::Tensor& t, core::DType dtype, const char* name) {
  if (t.dtype() != dtype)
    bad(r.node(), std::string(name) + " is " + core::dtype_name(t.dtype()) + ", expected " + core::dtype_name(dtype));
}

// Element i of a per-channel parameter as double.
template <typename T>
double param(const core::Tensor& t, size_t i) {
  return static_cast<double>(t.data<T>()[t.numel() == 1 ? 0 : i]);
}

// y = x * a[c] + b[c] over channels-first (N, C, inner) or channels-last
// (N*inner, C) memory.
template <typename T>
void channel_affine(KernelRun& r, const T* x, T* y, const std::vector<T>& a, const std::vector<T>& b, int64_t n,
                    int64_t c, int64_t inner, bool channels_last) {
  const bool parallel = n * c * inner > 32768;
  if (channels_last) {
    parallel_blocks(r, n * inner, 2.0 * double(c) * sizeof(T), parallel, [&](int64_t row) {
      const T* xr = x + row * c;
      T* yr = y + row * c;
      for (int64_t k = 0; k < c; ++k) yr[k] = xr[k] * a[k] + b[k];
    });
    return;
  }
  parallel_blocks(r, n * c, 2.0 * double(inner) * sizeof(T), parallel, [&](int64_t p) {
    const T av = a[p % c], bv = b[p % c];
    const T* xp = x + p * inner;
    T* yp = y + p * inner;
    for (int64_t k = 0; k < inner; ++k) yp[k] = xp[k] * av + bv;
  });
}

// Per-channel mean and population variance of (N, C, inner) or
// channels-last (N*inner, C) memory, two passes in double.
template <typename T>
void channel_moments(const T* x, int64_t n, int64_t c, int64_t inner, bool channels_last, std::vector<double>& mean,
                     std::vector<double>& var) {
  mean.assign(static_cast<size_t>(c), 0.0);
  var.assign(static_cast<size_t>(c), 0.0);
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return static_cast<double>(channels_last ? x[(i * inner + j) * c + k] : x[(i * c + k) * inner + j]);
  };
  const auto count = static_cast<double>(n * inner);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t j = 0; j < inner; ++j) mean[k] += at(i, k, j);
  for (double& m : mean) m /= count;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t j = 0; j < inner; ++j) {
        const double d = at(i, k, j) - mean[k];
        var[k] += d * d;
      }
  for (double& v : var) v /= count;
}

// Inference normalises with the mean and var inputs. Training mode (opset
// 14 on, training_mode = 1) normalises with the batch's own statistics over
// every axis but the channel's, and outputs the running statistics moved
// toward them: input * momentum + batch * (1 - momentum) (the batch's
// population variance, as ONNX's reference has it).
class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const KernelBuild& b)
      : node_(b.node), epsilon_(b.node.attr_float("epsilon", 1e-5f)),
        momentum_(b.node.attr_float("momentum", 0.9f)), training_(b.node.attr_int("training_mode", 0) != 0),
        channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {
    if (b.opset < 9 && b.node.attr_int("spatial", 1) == 0) b.unsupported("spatial=0 is not supported");
    // Before opset 14 the extra outputs meant a training form with saved
    // statistics, which inference graphs do not carry.
    if (!training_)
      for (size_t i = 1; i < b.node.outputs.size(); ++i)
        if (b.node.outputs[i] && !b.node.outputs[i]->uses.empty())
          b.unsupported("training outputs without training_mode are not supported");
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const core::Tensor& x = need(r, 0, "X");
    if (x.rank() < 2) bad(node_, "X must have rank 2 or more");
    const int64_t n = x.dim(0), c = channels_last_ ? x.shape().back() : x.dim(1);
    const int64_t inner = n * c == 0 ? 0 : static_cast<int64_t>(x.numel()) / (n * c);
    const char* names[] = {"X", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i) {
      const core::Tensor& p = need(r, i, names[i]);
      require_type(r, p, x.dtype(), names[i]);
      if (p.numel() != static_cast<size_t>(c) && p.numel() != 1)
        bad(node_, std::string(names[i]) + " must have one value per channel (" + std::to_string(c) + "), got " +
                       core::shape_to_string(p.shape()));
    }
    core::Tensor& y = r.output(0, x.dtype(), x.shape());
    dispatch_or_fail(FloatTypes{}, x.dtype(), node_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<double> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c));
      if (training_) {
        channel_moments<T>(x.data<T>(), n, c, inner, channels_last_, mean, var);
      } else {
        for (size_t k = 0; k < mean.size(); ++k) {
          mean[k] = param<T>(*r.input(3), k);
          var[k] = param<T>(*r.input(4), k);
        }
      }
      std::vector<T> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
      for (size_t k = 0; k < a.size(); ++k) {
        const double s = param<T>(*r.input(1), k) / std::sqrt(var[k] + epsilon_);
        a[k] = static_cast<T>(s);
        b[k] = static_cast<T>(param<T>(*r.input(2), k) - mean[k] * s);
      }
      channel_affine<T>(r, x.data<T>(), y.data<T>(), a, b, n, c, inner, channels_last_);
      if (!training_) return;
      for (size_t o = 1; o < 3 && o < r.num_outputs(); ++o) {
        if (!r.output_wanted(o)) continue;
        const std::vector<double>& batch = o == 1 ? mean : var;
        T* running = r.output(o, x.dtype(), {c}).template data<T>();
        for (size_t k = 0; k < batch.size(); ++k)
          running[k] = static_cast<T>(param<T>(*r.input(2 + o), k) * momentum_ + batch[k] * (1 - momentum_));
      }
    });
  }

 private:
  const core::Node& node_;
  double epsilon_, momentum_;
  bool training_;
  bool channels_last_;
};

// Mean and 1/sqrt(variance + eps) of `count` values (two passes, in double).
template <typename T>
std::pair<double, double> moments(const T* x, int64_t count, double epsilon) {
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<double>(x[i]);
  const double mean = count ? sum / static_cast<double>(count) : 0.0;
  double sq = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    sq += d * d;
  }
  const double var = count ? sq / static_cast<double>(count) : 0.0;
  return {mean, 1.0 / std::sqrt(var + epsilon)};
}

void instance_norm(KernelRun& r, double epsilon) {
  use_threads(r.threads());
  const core::Tensor& x = need(r, 0, "input");
  const core::Tensor& scale = need(r, 1, "scale");
  const core::Tensor& bias = need(r, 2, "B");
  if (x.rank() < 3) bad(r.node(), "input must have rank 3 or more");
  require_type(r, x, core::DType::F32, "input");
  require_type(r, scale, core::DType::F32, "scale");
  require_type(r, bias, core::DType::F32, "B");
  const int64_t n = x.dim(0), c = x.dim(1);
  if (scale.numel() != static_cast<size_t>(c) || bias.numel() != static_cast<size_t>(c))
    bad(r.node(), "scale and B must have one value per channel");
  const int64_t inner = n * c == 0 ? 0 : static_cast<int64_t>(x.numel()) / (n * c);
  core::Tensor& y = r.output(0, x.dtype(), x.shape());
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  parallel_blocks(r, n * c, 3.0 * double(inner) * sizeof(float), n * c * inner > 32768, [&](int64_t p) {
    const auto [mean, inv] = moments(xd + p * inner, inner, epsilon);
    const float a = static_cast<float>(inv * scale.data<float>()[p % c]);
    const float b = static_cast<float>(bias.data<float>()[p % c] - mean * inv * scale.data<float>()[p % c]);
    for (int64_t k = 0; k < inner; ++k) yd[p * inner + k] = xd[p * inner + k] * a + b;
  });
}

class LrnKernel final : public Kernel {
 public:
  explicit LrnKernel(const KernelBuild& b)
      : alpha_(b.node.attr_float("alpha", 1e-4f)), beta_(b.node.attr_float("beta", 0.75f)),
        bias_(b.node.attr_float("bias", 1.0f)), size_(b.node.attr_int("size", 0)) {
    if (size_ < 1) b.unsupported("size must be a positive odd number");
  }
  void run(KernelRun& r) override {
    use_threads(r.threads());
    const core::Tensor& x = need(r, 0, "X");
    require_type(r, x, core::DType::F32, "X");
    if (x.rank() < 3) bad(r.node(), "X must have rank 3 or more");
    const int64_t n = x.dim(0), c = x.dim(1);
    const int64_t inner = n * c == 0 ? 0 : static_cast<int64_t>(x.numel()) / (n * c);
    core::Tensor& y = r.output(0, x.dtype(), x.shape());
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const float* xd = x.data<float>();
    float* yd = y.data<float>();
    // Each output sums the squares of `size_` neighbours: 8 bytes each.
    const double work = 8.0 * double(inner) * double(std::min(size_, c));
    parallel_blocks(r, n * c, work, n * c * inner > 32768, [&](int64_t p) {
      const int64_t ch = p % c, img = p / c;
      const int64_t c0 = std::max<int64_t>(0, ch - before), c1 = std::min<int64_t>(c - 1, ch + after);
      for (int64_t k = 0; k < inner; ++k) {
        double sq = 0;
        for (int64_t j = c0; j <= c1; ++j) {
          const double v = xd[(img * c + j) * inner + k];
          sq += v * v;
        }
        yd[p * inner + k] = static_cast<float>(xd[p * inner + k] / std::pow(bias_ + alpha_ / size_ * sq, beta_));
      }
    });
  }

 private:
  double alpha_, beta_, bias_;
  int64_t size_;
};

class LayerNormKernel final : public Kernel {
 public:
  explicit LayerNormKernel(const KernelBuild& b)
      : node_(b.node), axis_(b.node.attr_int("axis", -1)), epsilon_(b.node.attr_float("epsilon", 1e-5f)) {}

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const core::Tensor& x = need(r, 0, "X");
    const core::Tensor& scale = need(r, 1, "Scale");
    const core::Tensor* bias = r.input(2);
    require_type(r, x, core::DType::F32, "X");
    require_type(r, scale, core::DType::F32, "Scale");
    if (bias) require_type(r, *bias, core::DType::F32, "B");
    const int64_t rank = static_cast<int64_t>(x.rank());
    if (axis_ < -rank || axis_ >= rank) bad(node_, "axis " + std::to_string(axis_) + " is out of range");
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const core::Shape norm_shape(x.shape().begin() + static_cast<int64_t>(axis), x.shape().end());
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= x.dim(i);
    for (int64_t d : norm_shape) inner *= d;
    std::vector<float> scale_copy, bias_copy;
    const float* s = per_element(scale, norm_shape, "Scale", scale_copy);
    const float* b = bias ? per_element(*bias, norm_shape, "B", bias_copy) : nullptr;

    core::Tensor& y = r.output(0, x.dtype(), x.shape());
    core::Shape stat_shape(x.shape().begin(), x.shape().begin() + static_cast<int64_t>(axis));
    stat_shape.resize(x.rank(), 1);
    float* mean_out = r.output_wanted(1) ? r.output(1, core::DType::F32, stat_shape).data<float>() : nullptr;
    float* inv_out = r.output_wanted(2) ? r.output(2, core::DType::F32, stat_shape).data<float>() : nullptr;
    const float* xd = x.data<float>();
    float* yd = y.data<float>();
    parallel_blocks(r, outer, 3.0 * double(inner) * sizeof(float), outer * inner > 32768, [&](int64_t o) {
      const auto [mean, inv] = moments(xd + o * inner, inner, epsilon_);
      if (b) {
        for (int64_t k = 0; k < inner; ++k)
          yd[o * inner + k] = static_cast<float>((xd[o * inner + k] - mean) * inv) * s[k] + b[k];
      } else {
        for (int64_t k = 0; k < inner; ++k)
          yd[o * inner + k] = static_cast<float>((xd[o * inner + k] - mean) * inv) * s[k];
      }
      if (mean_out) mean_out[o] = static_cast<float>(mean);
      if (inv_out) inv_out[o] = static_cast<float>(inv);
    });
  }

 private:
  // A parameter as one value per element of the normalised shape: its own
  // data when it has one per element already (what models give; no copy on
  // the hot path), else broadcast (numpy, right-aligned) into `copy`.
  const float* per_element(const core::Tensor& t, const core::Shape& shape, const char* name,
                           std::vector<float>& copy) const {
    const size_t rank = shape.size();
    if (t.rank() > rank) bad(node_, std::string(name) + " has more dims than the normalised shape");
    const core::Shape& ts = t.shape();
    for (size_t i = 0; i < ts.size(); ++i) {
      const int64_t want = shape[rank - ts.size() + i];
      if (ts[i] != want && ts[i] != 1)
        bad(node_, std::string(name) + " of shape " + core::shape_to_string(ts) + " does not broadcast onto " +
                       core::shape_to_string(shape));
    }
    const size_t n = core::shape_numel(shape);
    if (t.numel() == n) return t.data<float>();  // every dim matched: the same memory order
    std::vector<float>& out = copy;
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      size_t rem = i, src = 0, stride = 1;
      for (size_t d = rank; d-- > 0;) {
        const size_t idx = rem % static_cast<size_t>(shape[d]);
        rem /= static_cast<size_t>(shape[d]);
        const size_t td = d + ts.size() >= rank ? d + ts.size() - rank : SIZE_MAX;
        if (td != SIZE_MAX) {
          if (ts[td] != 1) src += idx * stride;
          stride *= static_cast<size_t>(ts[td]);
        }
      }
      out[i] = t.data<float>()[src];
    }
    return out.data();
  }

  const core::Node& node_;
  int64_t axis_;
  double epsilon_;
};

}  // namespace

std::unique_ptr<Kernel> make_batch_normalization(const KernelBuild& b) { return std::make_unique<BatchNormKernel>(b); }

std::unique_ptr<Kernel> make_instance_normalization(const KernelBuild& b) {
  const double epsilon = b.node.attr_float("epsilon", 1e-5f);
  return std::make_unique<FunctionKernel>([epsilon](KernelRun& r) { instance_norm(r, epsilon); });
}

std::unique_ptr<Kernel> make_lrn(const KernelBuild& b) { return std::make_unique<LrnKernel>(b); }
std::unique_ptr<Kernel> make_layer_normalization(const KernelBuild& b) { return std::make_unique<LayerNormKernel>(b); }

}  // namespace hetero::cpu
