// ONNX's training-step ops (domain ai.onnx.preview.training, version 1):
// Adagrad, Adam and Momentum. Each is a plain elementwise function of its
// tensors: learning rate R and step count T (scalars), then n tensors X
// being optimised, their gradients G and their optimiser state (Adagrad: H;
// Momentum: V; Adam: V then H); out come the new X and the new state, in
// the same grouping. The formulas are the ones in ONNX's operator docs,
// evaluated in double. Every tensor of group i must have X_i's shape.
#include <cmath>
#include <string>
#include <vector>

#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

enum class Optimizer { Adagrad, Adam, Momentum };

struct OptimizerAttrs {
  Optimizer kind;
  double norm_coefficient = 0, epsilon = 0;
  double decay_factor = 0;                 // Adagrad
  double alpha = 0, beta = 0;              // Adam, Momentum
  double norm_coefficient_post = 0;        // Adam
  bool nesterov = false;                   // Momentum
  size_t state_tensors() const { return kind == Optimizer::Adam ? 2 : 1; }
};

// The per-element update: x, g and state in; new x and state out.
struct Step {
  const OptimizerAttrs& a;
  double r;    // the learning rate, adjusted for T where the op says so
  int64_t t;

  double operator()(double x, double g, double* s) const {
    const double g_reg = a.norm_coefficient * x + g;
    switch (a.kind) {
      case Optimizer::Adagrad: {
        s[0] += g_reg * g_reg;
        return x - r * g_reg / (std::sqrt(s[0]) + a.epsilon);
      }
      case Optimizer::Adam: {
        s[0] = a.alpha * s[0] + (1 - a.alpha) * g_reg;
        s[1] = a.beta * s[1] + (1 - a.beta) * g_reg * g_reg;
        return (1 - a.norm_coefficient_post) * (x - r * s[0] / (std::sqrt(s[1]) + a.epsilon));
      }
      case Optimizer::Momentum: {
        // In the first step (T = 0) the gradient enters at full weight.
        const double beta = t > 0 ? a.beta : 1.0;
        s[0] = a.alpha * s[0] + beta * g_reg;
        return x - r * (a.nesterov ? g_reg + a.alpha * s[0] : s[0]);
      }
    }
    return x;
  }
};

double learning_rate(const OptimizerAttrs& a, double r, int64_t t) {
  const auto td = static_cast<double>(t);
  if (a.kind == Optimizer::Adagrad) return r / (1 + td * a.decay_factor);
  if (a.kind == Optimizer::Adam && t > 0) return r * std::sqrt(1 - std::pow(a.beta, td)) / (1 - std::pow(a.alpha, td));
  return r;
}

void run_optimizer(KernelRun& r, const OptimizerAttrs& a) {
  const core::Node& node = r.node();
  const size_t groups = 2 + a.state_tensors();  // X, G, state...
  const size_t n = (r.num_inputs() - 2) / groups;
  const Tensor& rate = required_input(r, 0);
  const Tensor& step = required_input(r, 1);
  if (rate.numel() != 1 || step.numel() != 1) bad_input(node, "R and T must hold one value each");
  if (step.dtype() != DType::I64) bad_input(node, std::string("T must be int64, got ") + core::dtype_name(step.dtype()));
  check_float_input(r, rate);
  const int64_t t = step.as_int64(0);
  const Step update{a, learning_rate(a, rate.as_double(0), t), t};
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = required_input(r, 2 + i);
    std::vector<const Tensor*> in{&x};
    for (size_t g = 1; g < groups; ++g) {
      in.push_back(&required_input(r, 2 + g * n + i));
      if (in.back()->shape() != x.shape() || in.back()->dtype() != x.dtype())
        bad_input(node, "input " + std::to_string(2 + g * n + i) + " (" + core::dtype_name(in.back()->dtype()) + " " +
                            core::shape_to_string(in.back()->shape()) + ") does not match X" + std::to_string(i + 1) +
                            " (" + core::dtype_name(x.dtype()) + " " + core::shape_to_string(x.shape()) + ")");
    }
    if (x.dtype() != DType::F32 && x.dtype() != DType::F64) unsupported_dtype(r.node(), x.dtype());
    // Outputs: new X_i at i, new state s at (1 + s) * n + i.
    std::vector<Tensor*> out;
    for (size_t g = 0; g < groups - 1; ++g) {
      const size_t o = g * n + i;
      out.push_back(o < r.num_outputs() && r.output_wanted(o) ? &r.output(o, x.dtype(), x.shape()) : nullptr);
    }
    dispatch(FloatTypes{}, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      double state[2];
      for (size_t e = 0; e < x.numel(); ++e) {
        for (size_t s = 0; s < a.state_tensors(); ++s) state[s] = static_cast<double>(in[2 + s]->data<T>()[e]);
        const double x_new = update(static_cast<double>(x.data<T>()[e]), static_cast<double>(in[1]->data<T>()[e]), state);
        if (out[0]) out[0]->data<T>()[e] = static_cast<T>(x_new);
        for (size_t s = 0; s < a.state_tensors(); ++s)
          if (out[1 + s]) out[1 + s]->data<T>()[e] = static_cast<T>(state[s]);
      }
    });
  }
}

std::unique_ptr<Kernel> make_optimizer(const KernelBuild& b, Optimizer kind) {
  OptimizerAttrs a;
  a.kind = kind;
  const core::Node& node = b.node;
  switch (kind) {
    case Optimizer::Adagrad:
      a.decay_factor = node.attr_float("decay_factor", 0.0f);
      a.epsilon = node.attr_float("epsilon", 1e-6f);
      a.norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
      break;
    case Optimizer::Adam:
      a.alpha = node.attr_float("alpha", 0.9f);
      a.beta = node.attr_float("beta", 0.999f);
      a.epsilon = node.attr_float("epsilon", 1e-6f);
      a.norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
      a.norm_coefficient_post = node.attr_float("norm_coefficient_post", 0.0f);
      break;
    case Optimizer::Momentum: {
      for (const char* name : {"alpha", "beta", "mode", "norm_coefficient"})
        if (!node.has_attr(name)) b.invalid(std::string("attribute ") + name + " is required");
      a.alpha = node.attr_float("alpha", 0.0f);
      a.beta = node.attr_float("beta", 0.0f);
      a.norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
      const std::string mode = node.attr_string("mode", "");
      if (mode != "standard" && mode != "nesterov") b.invalid("mode must be standard or nesterov, got '" + mode + "'");
      a.nesterov = mode == "nesterov";
      break;
    }
  }
  const size_t groups = 2 + a.state_tensors();
  const size_t tensors = node.inputs.size() < 2 ? 0 : node.inputs.size() - 2;
  if (tensors == 0 || tensors % groups != 0)
    b.invalid("expects R, T and " + std::to_string(groups) + " tensors per optimised tensor, got " +
              std::to_string(node.inputs.size()) + " inputs");
  if (node.outputs.size() > tensors / groups * (groups - 1))
    b.invalid("has " + std::to_string(node.outputs.size()) + " outputs for " + std::to_string(tensors / groups) +
              " optimised tensors (at most " + std::to_string(tensors / groups * (groups - 1)) + ")");
  for (size_t i = 2; i < node.inputs.size(); ++i) require_dtype(b, i, FloatTypes{}, false);
  return make_fn_kernel([a](KernelRun& r) { run_optimizer(r, a); });
}

}  // namespace

std::unique_ptr<Kernel> make_adagrad(const KernelBuild& b) { return make_optimizer(b, Optimizer::Adagrad); }
std::unique_ptr<Kernel> make_adam(const KernelBuild& b) { return make_optimizer(b, Optimizer::Adam); }
std::unique_ptr<Kernel> make_momentum(const KernelBuild& b) { return make_optimizer(b, Optimizer::Momentum); }

}  // namespace hetero::cpu
