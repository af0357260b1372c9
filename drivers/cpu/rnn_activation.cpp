// The activation functions of RNN, GRU and LSTM: the attributes that name
// them, and their loops over gate rows.
//
// GCC keeps the range checks of fast_expf/fast_tanhf as branches under its
// default -ftrapping-math, and a loop with branches is not vectorised; these
// loops never look at floating-point exception flags, so this file is
// compiled without that assumption (the pragma precedes every include, so it
// covers the inline functions of fast_math.h as used here).
#pragma GCC optimize("no-trapping-math")

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "drivers/cpu/fast_math.h"
#include "drivers/cpu/rnn.h"

namespace hetero::cpu::rnn {

namespace {

[[noreturn]] void invalid_model(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_MODEL, node.describe() + ": " + what);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct ActivationInfo {
  const char* name;  // lower case; the attribute is matched case-insensitively
  Activation::Kind kind;
  bool takes_alpha, takes_beta;
  float alpha, beta;  // the defaults of the ONNX operator of the same name
};

constexpr ActivationInfo kActivations[] = {
    {"relu", Activation::Kind::Relu, false, false, 0, 0},
    {"tanh", Activation::Kind::Tanh, false, false, 0, 0},
    {"sigmoid", Activation::Kind::Sigmoid, false, false, 0, 0},
    {"affine", Activation::Kind::Affine, true, true, 1.0f, 0.0f},
    {"leakyrelu", Activation::Kind::LeakyRelu, true, false, 0.01f, 0},
    {"thresholdedrelu", Activation::Kind::ThresholdedRelu, true, false, 1.0f, 0},
    {"scaledtanh", Activation::Kind::ScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", Activation::Kind::HardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", Activation::Kind::Elu, true, false, 1.0f, 0},
    {"softsign", Activation::Kind::Softsign, false, false, 0, 0},
    {"softplus", Activation::Kind::Softplus, false, false, 0, 0},
};

}  // namespace

std::vector<Activation> parse_activations(const core::Node& node, Cell cell, int64_t directions) {
  const size_t per_direction = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
  std::vector<std::string> names;
  if (const core::Attribute* a = node.attr("activations")) {
    if (a->type != core::AttrType::Strings && a->type != core::AttrType::String)
      invalid_model(node, "attribute 'activations' is not a list of strings");
    names = a->type == core::AttrType::String ? std::vector<std::string>{a->s} : a->strings;
  }
  if (names.empty()) {
    const std::vector<std::string> defaults = cell == Cell::Lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                  : std::vector<std::string>{"Tanh"};
    names = defaults;
  }
  const size_t want = per_direction * static_cast<size_t>(directions);
  if (names.size() == per_direction && directions == 2) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != want)
    invalid_model(node, "'activations' lists " + std::to_string(names.size()) + " functions; this node takes " +
                            std::to_string(per_direction) + " per direction, " + std::to_string(want) + " in all");
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const auto* info = std::find_if(std::begin(kActivations), std::end(kActivations),
                                    [&](const ActivationInfo& i) { return key == i.name; });
    if (info == std::end(kActivations))
      invalid_model(node, "unknown activation function '" + name +
                              "' (ONNX lists Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                              "HardSigmoid, Elu, Softsign, Softplus)");
    Activation act;
    act.kind = info->kind;
    act.alpha = info->alpha;
    act.beta = info->beta;
    if (info->takes_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->takes_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  return out;
}


void Activation::apply(float* x, size_t n) const {
  const float a = alpha, b = beta;
  switch (kind) {
    case Kind::Relu: for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : 0.0f; break;
    case Kind::Tanh: for (size_t i = 0; i < n; ++i) x[i] = fast_tanhf(x[i]); break;
    case Kind::Sigmoid: for (size_t i = 0; i < n; ++i) x[i] = fast_sigmoidf(x[i]); break;
    case Kind::Affine: for (size_t i = 0; i < n; ++i) x[i] = a * x[i] + b; break;
    case Kind::LeakyRelu: for (size_t i = 0; i < n; ++i) x[i] = x[i] >= 0 ? x[i] : a * x[i]; break;
    case Kind::ThresholdedRelu: for (size_t i = 0; i < n; ++i) x[i] = x[i] > a ? x[i] : 0.0f; break;
    case Kind::ScaledTanh: for (size_t i = 0; i < n; ++i) x[i] = a * fast_tanhf(b * x[i]); break;
    case Kind::HardSigmoid:
      for (size_t i = 0; i < n; ++i) x[i] = std::min(1.0f, std::max(0.0f, a * x[i] + b));
      break;
    case Kind::Elu: for (size_t i = 0; i < n; ++i) x[i] = x[i] >= 0 ? x[i] : a * (std::expm1(x[i])); break;
    case Kind::Softsign: for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::fabs(x[i])); break;
    case Kind::Softplus:
      // log(1 + e^x) without overflow: x + log(1 + e^-x) for x > 0.
      for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f) + std::log1p(std::exp(-std::fabs(x[i])));
      break;
  }
}

}  // namespace hetero::cpu::rnn
