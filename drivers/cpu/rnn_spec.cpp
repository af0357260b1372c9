// RNN/GRU/LSTM attributes and inputs, checked once for both paths, and the
// activation functions.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "drivers/cpu/fast_math.h"
#include "drivers/cpu/rnn.h"

namespace hetero::cpu::rnn {

namespace {

[[noreturn]] void invalid_model(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_MODEL, node.describe() + ": " + what);
}

[[noreturn]] void invalid_input(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_ARGUMENT, node.describe() + ": " + what);
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

// The `activations` attribute with `activation_alpha`/`activation_beta`.
// Alphas and betas are consumed in order by the functions that take one (as
// ONNX Runtime reads them); a function left without one gets its operator's
// default. A bidirectional node may list one direction's functions for both.
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

// A float32 input's shape must be exactly `want`.
const float* float_input(const KernelRun& r, size_t i, const char* name, const core::Shape& want) {
  const core::Tensor* t = r.input(i);
  if (!t) return nullptr;
  if (t->dtype() != core::DType::F32)
    invalid_input(r.node(), std::string("input ") + name + " is " + core::dtype_name(t->dtype()) +
                                "; only float32 recurrent layers are supported");
  if (t->shape() != want)
    invalid_input(r.node(), std::string("input ") + name + " has shape " + core::shape_to_string(t->shape()) +
                                ", expected " + core::shape_to_string(want));
  return t->data<float>();
}

}  // namespace

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

Spec Spec::parse(const KernelBuild& b) {
  const core::Node& node = b.node;
  Spec s;
  s.cell = node.op_type == "LSTM" ? Cell::Lstm : node.op_type == "GRU" ? Cell::Gru : Cell::Rnn;
  s.hidden = node.attr_int("hidden_size", 0);
  if (s.hidden < 0) invalid_model(node, "hidden_size is negative");
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") s.directions = 2;
  else if (direction == "reverse") s.reverse = true;
  else if (direction != "forward")
    invalid_model(node, "direction '" + direction + "' is not forward, reverse or bidirectional");
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) invalid_model(node, "layout must be 0 or 1, not " + std::to_string(layout));
  s.batch_first = layout == 1;
  if (node.has_attr("clip")) {
    const float clip = node.attr_float("clip", 0);
    if (!(clip > 0)) invalid_model(node, "clip must be positive, not " + std::to_string(clip));
    s.clip = clip;
  }
  if (s.cell == Cell::Lstm) s.input_forget = node.attr_int("input_forget", 0) != 0;
  if (s.cell == Cell::Gru) s.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  s.activations = parse_activations(node, s.cell, s.directions);
  // Opset 1's output_sequence only said whether Y is produced; Y is simply
  // computed when something reads it.
  for (size_t i : {size_t{kX}, size_t{kW}, size_t{kR}, size_t{kB}, size_t{kInitialH}, size_t{kInitialC},
                   size_t{kPeepholes}}) {
    const core::DType dt = b.input_dtype(i);
    if (dt != core::DType::Undefined && dt != core::DType::F32)
      b.unsupported(std::string("input ") + std::to_string(i) + " is " + core::dtype_name(dt) +
                    "; only float32 recurrent layers are supported");
  }
  const size_t max_inputs = s.cell == Cell::Lstm ? 8 : 6;
  if (node.inputs.size() > max_inputs)
    invalid_model(node, "takes at most " + std::to_string(max_inputs) + " inputs, has " + std::to_string(node.inputs.size()));
  return s;
}

Args Args::check(const Spec& spec, const KernelRun& r) {
  const core::Node& node = r.node();
  const core::Tensor* x = r.input(kX);
  const core::Tensor* w = r.input(kW);
  const core::Tensor* rt = r.input(kR);
  if (!x || !w || !rt) invalid_input(node, "inputs X, W and R are required");
  if (x->rank() != 3) invalid_input(node, "X must have rank 3, has shape " + core::shape_to_string(x->shape()));
  if (rt->rank() != 3) invalid_input(node, "R must have rank 3, has shape " + core::shape_to_string(rt->shape()));
  Args a;
  a.directions = spec.directions;
  a.steps = x->dim(spec.batch_first ? 1 : 0);
  a.batch = x->dim(spec.batch_first ? 0 : 1);
  a.input_size = x->dim(2);
  a.hidden = spec.hidden ? spec.hidden : rt->dim(2);
  const int64_t d = a.directions, n = a.batch, h = a.hidden, gh = spec.gates() * h;
  a.x = float_input(r, kX, "X", x->shape());
  a.w = float_input(r, kW, "W", {d, gh, a.input_size});
  a.r = float_input(r, kR, "R", {d, gh, h});
  a.b = float_input(r, kB, "B", {d, 2 * gh});
  const core::Shape state = spec.batch_first ? core::Shape{n, d, h} : core::Shape{d, n, h};
  a.initial_h = float_input(r, kInitialH, "initial_h", state);
  if (spec.cell == Cell::Lstm) {
    a.initial_c = float_input(r, kInitialC, "initial_c", state);
    a.peepholes = float_input(r, kPeepholes, "P", {d, 3 * h});
  }
  if (const core::Tensor* lens = r.input(kSequenceLens)) {
    if (lens->dtype() != core::DType::I32)
      invalid_input(node, std::string("sequence_lens is ") + core::dtype_name(lens->dtype()) + ", expected int32");
    if (lens->shape() != core::Shape{n})
      invalid_input(node, "sequence_lens has shape " + core::shape_to_string(lens->shape()) + ", expected " +
                              core::shape_to_string({n}));
    a.sequence_lens = lens->data<int32_t>();
    for (int64_t i = 0; i < n; ++i)
      if (a.sequence_lens[i] < 0 || a.sequence_lens[i] > a.steps)
        invalid_input(node, "sequence_lens[" + std::to_string(i) + "] is " + std::to_string(a.sequence_lens[i]) +
                                ", outside [0, " + std::to_string(a.steps) + "] (the sequence length of X)");
  }
  return a;
}

bool Args::full_length() const {
  if (!sequence_lens) return true;
  return std::all_of(sequence_lens, sequence_lens + batch, [&](int32_t len) { return len == steps; });
}

core::Shape Args::y_shape(const Spec& spec) const {
  return spec.batch_first ? core::Shape{batch, steps, directions, hidden} : core::Shape{steps, directions, batch, hidden};
}

core::Shape Args::state_shape(const Spec& spec) const {
  return spec.batch_first ? core::Shape{batch, directions, hidden} : core::Shape{directions, batch, hidden};
}

}  // namespace hetero::cpu::rnn
