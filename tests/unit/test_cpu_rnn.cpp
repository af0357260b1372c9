// RNN, GRU and LSTM against a plain reference written here from the ONNX
// equations (double precision, one scalar at a time), over the attribute
// combinations ONNX's own test data leaves out: both paths of the kernel
// (plain and oneDNN) on the same nodes, then whole models in ONNX's text
// syntax through the CPU driver, state carried from call to call, and the
// errors a bad node or input gets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/onnx_import.h"
#include "core/onnx_tensor.h"
#include "core/runtime.h"
#include "drivers/cpu/rnn.h"
#include "tests/unit/kernel_harness.h"
#include "tests/unit/model_text.h"
#include "tests/unit/onnx_test_files.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

struct Act {
  std::string name;
  float alpha = 0, beta = 0;
};

double activate(const Act& a, double x) {
  const std::string& f = a.name;
  if (f == "Relu") return std::max(0.0, x);
  if (f == "Tanh") return std::tanh(x);
  if (f == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (f == "Affine") return a.alpha * x + a.beta;
  if (f == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (f == "ThresholdedRelu") return x > a.alpha ? x : 0;
  if (f == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (f == "HardSigmoid") return std::min(1.0, std::max(0.0, a.alpha * x + a.beta));
  if (f == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (f == "Softsign") return x / (1 + std::fabs(x));
  if (f == "Softplus") return std::log(1 + std::exp(x));
  throw std::runtime_error("no activation " + f);
}

// One node's attributes and which optional inputs it has.
struct Case {
  std::string op = "LSTM";
  int64_t steps = 3, batch = 2, input_size = 3, hidden = 4;
  std::string direction = "forward";
  bool batch_first = false;
  bool bias = false, initial_h = false, initial_c = false, peepholes = false, lens = false;
  bool linear_before_reset = false, input_forget = false;
  std::optional<float> clip;
  std::vector<Act> acts;  // empty: the defaults; else per direction, all given
  bool constant_weights = false;

  int64_t directions() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  size_t acts_per_direction() const { return op == "LSTM" ? 3 : op == "GRU" ? 2 : 1; }
  std::vector<Act> activations() const {
    if (!acts.empty()) return acts;
    std::vector<Act> one = op == "LSTM" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}}
                           : op == "GRU" ? std::vector<Act>{{"Sigmoid"}, {"Tanh"}}
                                         : std::vector<Act>{{"Tanh"}};
    std::vector<Act> all;
    for (int64_t d = 0; d < directions(); ++d) all.insert(all.end(), one.begin(), one.end());
    return all;
  }
  std::string describe() const {
    std::ostringstream s;
    s << op << " " << direction << (batch_first ? " layout=1" : "") << " T=" << steps << " N=" << batch
      << " I=" << input_size << " H=" << hidden << (bias ? " B" : "") << (initial_h ? " h0" : "")
      << (initial_c ? " c0" : "") << (peepholes ? " P" : "") << (lens ? " lens" : "")
      << (linear_before_reset ? " lbr" : "") << (input_forget ? " input_forget" : "")
      << (constant_weights ? " const-weights" : "");
    if (clip) s << " clip=" << *clip;
    for (const Act& a : acts) s << " " << a.name << "(" << a.alpha << "," << a.beta << ")";
    return s.str();
  }
};

// The node's inputs, in ONNX order (absent optional ones empty).
struct Inputs {
  Tensor x, w, r, b, lens, h0, c0, p;
};

Inputs make_inputs(const Case& c, std::mt19937& rng) {
  const int64_t D = c.directions(), G = c.gates(), H = c.hidden, N = c.batch;
  Inputs in;
  in.x = random_f32(c.batch_first ? Shape{N, c.steps, c.input_size} : Shape{c.steps, N, c.input_size}, rng);
  in.w = random_f32({D, G * H, c.input_size}, rng, -0.7f, 0.7f);
  in.r = random_f32({D, G * H, H}, rng, -0.7f, 0.7f);
  const Shape state = c.batch_first ? Shape{N, D, H} : Shape{D, N, H};
  if (c.bias) in.b = random_f32({D, 2 * G * H}, rng, -0.5f, 0.5f);
  if (c.initial_h) in.h0 = random_f32(state, rng);
  if (c.initial_c) in.c0 = random_f32(state, rng);
  if (c.peepholes) in.p = random_f32({D, 3 * H}, rng, -0.5f, 0.5f);
  if (c.lens) {
    in.lens = Tensor::allocate(DType::I32, {N});
    std::uniform_int_distribution<int32_t> len(0, static_cast<int32_t>(c.steps));
    for (int64_t n = 0; n < N; ++n) in.lens.data<int32_t>()[n] = len(rng);
    in.lens.data<int32_t>()[0] = static_cast<int32_t>(c.steps);  // one full-length sequence
  }
  return in;
}

struct Outputs {
  Tensor y, y_h, y_c;
};

// The ONNX equations, one element at a time, in double.
Outputs reference(const Case& c, const Inputs& in) {
  const int64_t T = c.steps, N = c.batch, I = c.input_size, H = c.hidden, D = c.directions(), G = c.gates();
  const bool lstm = c.op == "LSTM", gru = c.op == "GRU";
  const std::vector<Act> acts = c.activations();
  Outputs out;
  out.y = Tensor::allocate(DType::F32, c.batch_first ? Shape{N, T, D, H} : Shape{T, D, N, H});
  const Shape state = c.batch_first ? Shape{N, D, H} : Shape{D, N, H};
  out.y_h = Tensor::allocate(DType::F32, state);
  out.y_c = Tensor::allocate(DType::F32, state);
  auto at = [](const Tensor& t, int64_t i) { return static_cast<double>(t.data<float>()[i]); };
  auto x_at = [&](int64_t t, int64_t n, int64_t i) { return at(in.x, (c.batch_first ? n * T + t : t * N + n) * I + i); };
  auto state_index = [&](int64_t d, int64_t n) { return c.batch_first ? n * D + d : d * N + n; };
  auto clip = [&](double v) { return c.clip ? std::min<double>(*c.clip, std::max<double>(-*c.clip, v)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const Act& f = acts[d * c.acts_per_direction()];
    const Act& g = acts[d * c.acts_per_direction() + (lstm || gru ? 1 : 0)];
    const Act& h_act = acts[d * c.acts_per_direction() + (lstm ? 2 : 0)];
    // Row j of gate block k: x·W[j] + Wb[j] (+ Rb[j] unless left out), and h·R[j] + Rb[j].
    auto xw = [&](int64_t t, int64_t n, int64_t j) {
      double s = in.b.empty() ? 0.0 : at(in.b, d * 2 * G * H + j);
      for (int64_t i = 0; i < I; ++i) s += x_at(t, n, i) * at(in.w, (d * G * H + j) * I + i);
      return s;
    };
    auto hr = [&](const std::vector<double>& h, int64_t j) {
      double s = in.b.empty() ? 0.0 : at(in.b, d * 2 * G * H + G * H + j);
      for (int64_t m = 0; m < H; ++m) s += h[m] * at(in.r, (d * G * H + j) * H + m);
      return s;
    };
    const bool backwards = c.direction == "reverse" || d == 1;
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> h(H, 0.0), cell(H, 0.0);
      for (int64_t k = 0; k < H; ++k) {
        if (!in.h0.empty()) h[k] = at(in.h0, state_index(d, n) * H + k);
        if (!in.c0.empty()) cell[k] = at(in.c0, state_index(d, n) * H + k);
      }
      const int64_t len = in.lens.empty() ? T : in.lens.data<int32_t>()[n];
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = backwards ? T - 1 - s : s;
        float* y = out.y.data<float>() + (c.batch_first ? (n * T + t) * D + d : (t * D + d) * N + n) * H;
        if (t >= len) {
          std::fill_n(y, H, 0.0f);
          continue;
        }
        std::vector<double> next(H), next_cell(H), reset(H);
        // GRU: the reset gate first; without linear_before_reset the
        // candidate multiplies (r ⊙ h) by Rh.
        for (int64_t k = 0; gru && k < H; ++k) reset[k] = activate(f, clip(xw(t, n, H + k) + hr(h, H + k)));
        std::vector<double> rh(H);
        for (int64_t k = 0; gru && k < H; ++k) rh[k] = reset[k] * h[k];
        for (int64_t k = 0; k < H; ++k) {
          if (lstm) {
            // Peephole `which` (ONNX order i, o, f) times a cell value.
            auto peep = [&](int64_t which, double v) {
              return in.p.empty() ? 0.0 : at(in.p, d * 3 * H + which * H + k) * v;
            };
            auto gate = [&](int64_t block) { return xw(t, n, block * H + k) + hr(h, block * H + k); };
            const double i = activate(f, clip(gate(0) + peep(0, cell[k])));
            const double fg = c.input_forget ? 1 - i : activate(f, clip(gate(2) + peep(2, cell[k])));
            const double cc = activate(g, clip(gate(3)));
            next_cell[k] = fg * cell[k] + i * cc;
            const double o = activate(f, clip(gate(1) + peep(1, next_cell[k])));
            next[k] = o * activate(h_act, next_cell[k]);
          } else if (gru) {
            const double z = activate(f, clip(xw(t, n, k) + hr(h, k)));
            const double cand = c.linear_before_reset ? xw(t, n, 2 * H + k) + reset[k] * hr(h, 2 * H + k)
                                                      : xw(t, n, 2 * H + k) + hr(rh, 2 * H + k);
            next[k] = (1 - z) * activate(g, clip(cand)) + z * h[k];
          } else {
            next[k] = activate(f, clip(xw(t, n, k) + hr(h, k)));
          }
        }
        h = next;
        if (lstm) cell = next_cell;
        for (int64_t k = 0; k < H; ++k) y[k] = static_cast<float>(h[k]);
      }
      for (int64_t k = 0; k < H; ++k) {
        out.y_h.data<float>()[state_index(d, n) * H + k] = static_cast<float>(h[k]);
        out.y_c.data<float>()[state_index(d, n) * H + k] = static_cast<float>(cell[k]);
      }
    }
  }
  return out;
}

// The node for `c`; inputs in0..in7 (constants where the case says).
std::unique_ptr<KernelNode> make_node(const Case& c, const Inputs& in) {
  const bool lstm = c.op == "LSTM";
  auto node = std::make_unique<KernelNode>(c.op, 14, lstm ? 8 : 6, lstm ? 3 : 2);
  KernelNode& b = *node;
  b.attr_int("hidden_size", c.hidden).attr_string("direction", c.direction);
  if (c.batch_first) b.attr_int("layout", 1);
  if (c.clip) b.attr_float("clip", *c.clip);
  if (c.linear_before_reset) b.attr_int("linear_before_reset", 1);
  if (c.input_forget) b.attr_int("input_forget", 1);
  if (!c.acts.empty()) {
    // ONNX Runtime's reading: alphas and betas go, in order, to the
    // functions that take one.
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (const Act& a : c.acts) {
      names.push_back(a.name);
      const bool takes_alpha = a.name == "Affine" || a.name == "LeakyRelu" || a.name == "ThresholdedRelu" ||
                               a.name == "ScaledTanh" || a.name == "HardSigmoid" || a.name == "Elu";
      const bool takes_beta = a.name == "Affine" || a.name == "ScaledTanh" || a.name == "HardSigmoid";
      if (takes_alpha) alphas.push_back(a.alpha);
      if (takes_beta) betas.push_back(a.beta);
    }
    b.attr_strings("activations", names);
    if (!alphas.empty()) b.attr_floats("activation_alpha", alphas);
    if (!betas.empty()) b.attr_floats("activation_beta", betas);
  }
  b.node->inputs[rnn::kSequenceLens]->dtype = DType::I32;
  const Tensor* given[] = {&in.x, &in.w, &in.r, &in.b, &in.lens, &in.h0, &in.c0, &in.p};
  for (size_t i = b.node->inputs.size(); i-- > 0;) {
    if (given[i]->empty()) {
      b.omit_input(i);
    } else if (c.constant_weights && (i == rnn::kW || i == rnn::kR || i == rnn::kB || i == rnn::kPeepholes)) {
      b.constant(i, *given[i]);
    }
  }
  return node;
}

std::vector<std::optional<Tensor>> run_inputs(const Inputs& in) {
  std::vector<std::optional<Tensor>> v;
  for (const Tensor* t : {&in.x, &in.w, &in.r, &in.b, &in.lens, &in.h0, &in.c0, &in.p})
    v.push_back(t->empty() ? std::nullopt : std::optional<Tensor>(*t));
  return v;
}

// Runs the node's kernel on one path (twice: the second run takes what the
// first cached and must agree). One thread: these shapes are tiny, and a
// second thread only adds waits at every oneDNN step on a busy machine.
Outputs run_path(const core::Node& node, const Inputs& in, rnn::Path path, int threads = 1) {
  KernelBuild build{node, node.opset, test_engine(), {}};
  std::unique_ptr<Kernel> kernel = rnn::make_kernel(build, path);
  const size_t outputs = node.outputs.size();
  const std::vector<Tensor> out = run_twice(*kernel, node, run_inputs(in), outputs, threads);
  Outputs o;
  o.y = out[0];
  o.y_h = out[1];
  if (outputs > 2) o.y_c = out[2];
  return o;
}

void expect_matches(const Outputs& got, const Outputs& want, bool lstm, const std::string& what) {
  EXPECT_TRUE(all_close(got.y, want.y, 2e-5f, 1e-4f)) << what << ": Y";
  EXPECT_TRUE(all_close(got.y_h, want.y_h, 2e-5f, 1e-4f)) << what << ": Y_h";
  if (lstm) {
    EXPECT_TRUE(all_close(got.y_c, want.y_c, 2e-5f, 1e-4f)) << what << ": Y_c";
  }
}

// Whether oneDNN's primitives take the node (rnn.h): default activations
// (Relu/Tanh/Sigmoid for RNN), no clip, no input_forget.
bool dnnl_can(const Case& c) {
  if (c.clip || c.input_forget) return false;
  if (c.acts.empty()) return true;
  if (c.op != "RNN") return false;
  for (const Act& a : c.acts)
    if (a.name != c.acts[0].name || (a.name != "Relu" && a.name != "Tanh" && a.name != "Sigmoid")) return false;
  return true;
}

void check_case(const Case& c, uint32_t seed, int threads = 1) {
  SCOPED_TRACE(c.describe());
  std::mt19937 rng(seed);
  const Inputs in = make_inputs(c, rng);
  const Outputs want = reference(c, in);
  const auto node = make_node(c, in);
  const bool lstm = c.op == "LSTM";
  const Outputs plain = run_path(*node->node, in, rnn::Path::Plain, threads);
  expect_matches(plain, want, lstm, "plain path");
  if (dnnl_can(c)) {
    const bool full = in.lens.empty() || std::all_of(in.lens.data<int32_t>(), in.lens.data<int32_t>() + c.batch,
                                                     [&](int32_t l) { return l == c.steps; });
    const Outputs best = run_path(*node->node, in, rnn::Path::Best, threads);
    expect_matches(best, want, lstm, "best path");
    if (full) {
      const Outputs dnnl = run_path(*node->node, in, rnn::Path::Dnnl, threads);
      expect_matches(dnnl, want, lstm, "oneDNN path");
      expect_matches(dnnl, plain, lstm, "oneDNN path against the plain path");
    }
  } else {
    KernelBuild build{*node->node, 14, test_engine(), {}};
    EXPECT_THROW(rnn::make_kernel(build, rnn::Path::Dnnl), Failure);
  }
}

// Every cell, direction and layout, with the optional inputs, the constant
// weights (prepared once at build) and the GRU variants switched on and off
// in turn; both paths where oneDNN applies.
TEST(CpuRnn, BothPathsMatchTheReference) {
  uint32_t seed = 1;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (int layout = 0; layout < 2; ++layout)
        for (int variant = 0; variant < 4; ++variant) {
          Case c;
          c.op = op;
          c.direction = direction;
          c.batch_first = layout == 1;
          c.steps = 2 + variant;
          c.batch = 1 + variant % 3;
          c.input_size = 3 + variant % 2;
          c.hidden = 4 + variant;
          c.bias = variant != 0;
          c.initial_h = variant >= 2;
          c.initial_c = variant == 3 || variant == 1;
          c.peepholes = c.op == "LSTM" && variant >= 2;
          c.linear_before_reset = c.op == "GRU" && variant % 2 == 1;
          c.constant_weights = variant % 2 == 0;
          if (c.op != "LSTM") c.initial_c = false;
          check_case(c, seed++);
        }
}

// Steps [first, first + count) of a sequence tensor ([T, N, ...], or
// [N, T, ...] batch-first).
Tensor steps_of(const Tensor& x, bool batch_first, int64_t first, int64_t count) {
  Shape shape = x.shape();
  const int64_t T = shape[batch_first ? 1 : 0], outer = batch_first ? shape[0] : 1;
  const size_t row = x.nbytes() / size_t(outer * T);  // bytes per step of one outer index
  shape[batch_first ? 1 : 0] = count;
  Tensor part = Tensor::allocate(x.dtype(), shape, false);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(part.raw()) + o * count * row,
                static_cast<const char*>(x.raw()) + (o * T + first) * row, count * row);
  return part;
}

// A long node runs in blocks of steps with a checkpoint between two
// (Args::steps_per_checkpoint), its state carried from block to block: the
// oneDNN path for one direction with constant weights, the plain path for
// the rest. On each path, the steps on either side of a block's edge equal a
// run of those steps alone (short enough to run whole), and over the whole
// sequence the two paths agree.
TEST(CpuRnn, LongNodesRunInBlocksOfSteps) {
  struct Long {
    const char* op;
    const char* direction;
    bool batch_first, constant_weights;
  };
  uint32_t seed = 300;
  for (const Long& l : {Long{"LSTM", "forward", false, true}, Long{"GRU", "reverse", true, true},
                        Long{"RNN", "forward", true, true}, Long{"LSTM", "bidirectional", false, true},
                        Long{"GRU", "forward", false, false}}) {
    Case c;
    c.op = l.op;
    c.direction = l.direction;
    c.batch_first = l.batch_first;
    c.constant_weights = l.constant_weights;
    c.linear_before_reset = c.op == "GRU";
    c.batch = 5, c.input_size = 256, c.hidden = 256;
    // Steps per block as rnn_spec.cpp counts them (a batch under 16 counts
    // as 16): 512 for an LSTM. Two blocks and a short one.
    const int64_t kEdge = (int64_t(1) << 32) / (16 * c.gates() * 256 * 512), kAround = kEdge + 8;
    const int64_t kSteps = 2 * kEdge + 76;
    c.steps = kSteps;
    c.bias = c.initial_h = true;
    c.initial_c = c.op == "LSTM";
    SCOPED_TRACE(c.describe());
    std::mt19937 rng(seed++);
    Inputs in = make_inputs(c, rng);
    // Weights small enough for the state to forget: with make_inputs' own,
    // 256 hidden units amplify the two paths' rounding over a thousand steps.
    for (Tensor* t : {&in.w, &in.r})
      for (size_t i = 0; i < t->numel(); ++i) t->data<float>()[i] /= 16;
    const auto node = make_node(c, in);
    const bool lstm = c.op == "LSTM", two = c.directions() == 2;
    const bool dnnl_splits = !two && c.constant_weights;
    // The steps around the edge of the first block each direction runs.
    const int64_t first = c.direction == "reverse" ? kSteps - kAround : 0;
    Case around = c;
    around.steps = kAround;
    Inputs around_in = in;
    around_in.x = steps_of(in.x, c.batch_first, first, kAround);
    const auto around_node = make_node(around, around_in);
    const int64_t H = c.hidden, N = c.batch, D = c.directions();
    Outputs long_run[2];
    for (rnn::Path path : {rnn::Path::Plain, rnn::Path::Dnnl}) {
      const char* name = path == rnn::Path::Plain ? "plain" : "oneDNN";
      KernelBuild build{*node->node, node->node->opset, test_engine(), {}};
      std::unique_ptr<Kernel> kernel = rnn::make_kernel(build, path);
      size_t checkpoints = 0;
      if (path == rnn::Path::Dnnl && !dnnl_splits) {
        EXPECT_THROW(run_kernel(*kernel, *node->node, run_inputs(in), node->node->outputs.size(), 2, &checkpoints),
                     Failure)
            << "the oneDNN path took a long run it cannot split";
        continue;
      }
      const std::vector<Tensor> out =
          run_kernel(*kernel, *node->node, run_inputs(in), node->node->outputs.size(), 2, &checkpoints);
      EXPECT_GE(checkpoints, 2u) << name << " path";
      Outputs& o = long_run[path == rnn::Path::Dnnl];
      o.y = out[0], o.y_h = out[1];
      if (lstm) o.y_c = out[2];
      // The steps around the block's edge, direction 0 (direction 1 of a
      // bidirectional node depends on the steps after them).
      const Outputs alone = run_path(*around_node->node, around_in, path, 2);
      int wrong = 0;
      for (int64_t s = kEdge - 8; s < kAround && wrong < 5; ++s)
        for (int64_t n = 0; n < N && wrong < 5; ++n)
          for (int64_t k = 0; k < H && wrong < 5; ++k) {
            const int64_t t = first == 0 ? s : kAround - 1 - s;  // in run order
            auto at = [&](const Tensor& y, int64_t steps, int64_t step) {
              const int64_t i = c.batch_first ? ((n * steps + step) * D) * H + k : (step * D * N + n) * H + k;
              return y.data<float>()[i];
            };
            const float got = at(o.y, kSteps, first + t), want = at(alone.y, kAround, t);
            if (std::fabs(got - want) > 1e-4f + 2e-5f * std::fabs(want)) {
              ADD_FAILURE() << name << " path, step " << first + t << " batch " << n << " unit " << k << ": " << got
                            << ", alone " << want;
              ++wrong;
            }
          }
    }
    if (dnnl_splits) expect_matches(long_run[1], long_run[0], lstm, "oneDNN path against the plain path");
  }
}

TEST(CpuRnn, SequenceLengthsAreThePlainPathsAndPadWithZeros) {
  uint32_t seed = 100;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (int layout = 0; layout < 2; ++layout) {
        Case c;
        c.op = op;
        c.direction = direction;
        c.batch_first = layout == 1;
        c.steps = 5;
        c.batch = 4;
        c.bias = c.initial_h = true;
        c.initial_c = c.op == "LSTM";
        c.lens = true;
        check_case(c, seed++);
      }
  // A batch large enough for the plain path's gate loops to run on two threads.
  for (const char* op : {"GRU", "LSTM"}) {
    Case c;
    c.op = op;
    c.direction = "bidirectional";
    c.steps = 3, c.batch = 64, c.hidden = 32;
    c.bias = c.initial_h = c.lens = true;
    check_case(c, seed++, 2);
  }
}

TEST(CpuRnn, EveryActivationFunctionWithItsAlphaAndBeta) {
  const std::vector<Act> all = {{"Relu"},           {"Tanh"},          {"Sigmoid"},
                                {"Affine", 0.7f, 0.2f}, {"LeakyRelu", 0.1f}, {"ThresholdedRelu", 0.3f},
                                {"ScaledTanh", 1.5f, 0.6f}, {"HardSigmoid", 0.3f, 0.4f}, {"Elu", 0.8f},
                                {"Softsign"},       {"Softplus"}};
  uint32_t seed = 200;
  for (size_t k = 0; k < all.size(); ++k) {
    // Each function in each slot of each cell, beside others that take alphas
    // and betas too, so that their order of consumption matters.
    for (const char* op : {"RNN", "GRU", "LSTM"}) {
      Case c;
      c.op = op;
      c.direction = "bidirectional";
      c.bias = c.initial_h = true;
      const size_t per = c.acts_per_direction();
      for (size_t i = 0; i < 2 * per; ++i) c.acts.push_back(all[(k + i * 3) % all.size()]);
      check_case(c, seed++);
    }
  }
}

TEST(CpuRnn, ClipAndInputForget) {
  uint32_t seed = 300;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* direction : {"forward", "bidirectional"}) {
      Case c;
      c.op = op;
      c.direction = direction;
      c.bias = c.initial_h = true;
      c.peepholes = c.initial_c = c.op == "LSTM";
      c.clip = 0.4f;
      check_case(c, seed++);
      if (c.op == "LSTM") {
        c.input_forget = true;
        check_case(c, seed++);
        c.clip.reset();
        check_case(c, seed++);
      }
    }
}

TEST(CpuRnn, DefaultAlphasAreTheOperatorsOwn) {
  // LeakyRelu without activation_alpha is LeakyRelu's 0.01; HardSigmoid's 0.2 and 0.5.
  Case c;
  c.op = "GRU";
  c.bias = true;
  c.acts = {{"HardSigmoid", 0.2f, 0.5f}, {"LeakyRelu", 0.01f}};
  std::mt19937 rng(7);
  const Inputs in = make_inputs(c, rng);
  KernelNode node(c.op, 14, 6, 2);
  node.attr_int("hidden_size", c.hidden).attr_strings("activations", {"hardsigmoid", "LEAKYRELU"});  // any case
  node.node->inputs[rnn::kSequenceLens]->dtype = DType::I32;
  for (size_t i : {5, 4}) node.omit_input(i);
  expect_matches(run_path(*node.node, in, rnn::Path::Best), reference(c, in), false, "defaults");
}

// ONNX's own test cases for these ops (model.onnx + test_data_set_0), each
// on the plain path and, where it takes the node and the run, oneDNN's.
TEST(CpuRnn, OnnxTestDataOnBothPaths) {
  namespace fs = std::filesystem;
  const fs::path root = "/usr/share/libonnx-testdata/data/node";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " is missing (scripts/setup.sh installs libonnx-testdata)";
  auto read_tensor = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    onnx::TensorProto proto;
    if (!proto.ParseFromIstream(&in)) throw std::runtime_error("cannot read " + file.string());
    return core::tensor_from_proto(proto, file.string()).clone();
  };
  int cases = 0, dnnl_runs = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("test_lstm", 0) != 0 && name.rfind("test_gru", 0) != 0 && name.rfind("test_rnn", 0) != 0 &&
        name.rfind("test_simple_rnn", 0) != 0)
      continue;
    SCOPED_TRACE(name);
    ++cases;
    const auto model = core::import_onnx_file((entry.path() / "model.onnx").string());
    const core::Graph& g = model->graph;
    ASSERT_EQ(g.nodes().size(), 1u);
    const core::Node& node = *g.nodes()[0];
    const fs::path data = entry.path() / "test_data_set_0";
    std::vector<std::optional<Tensor>> inputs(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const auto at = std::find(g.inputs.begin(), g.inputs.end(), node.inputs[i]);
      if (node.inputs[i] && at != g.inputs.end())
        inputs[i] = read_tensor(data / ("input_" + std::to_string(at - g.inputs.begin()) + ".pb"));
      else if (node.inputs[i] && node.inputs[i]->constant)
        inputs[i] = *node.inputs[i]->constant;
    }
    for (rnn::Path path : {rnn::Path::Plain, rnn::Path::Dnnl}) {
      KernelBuild build{node, node.opset, test_engine(), {}};
      std::unique_ptr<Kernel> kernel;
      try {
        kernel = rnn::make_kernel(build, path);
      } catch (const Failure&) {
        ASSERT_EQ(path, rnn::Path::Dnnl);  // oneDNN does not take this node
        continue;
      }
      std::vector<Tensor> outs;
      try {
        outs = run_twice(*kernel, node, inputs, node.outputs.size(), 1);
      } catch (const Failure& e) {
        ASSERT_EQ(path, rnn::Path::Dnnl) << e.what();  // nor this run (sequence_lens)
        continue;
      }
      dnnl_runs += path == rnn::Path::Dnnl;
      for (size_t k = 0; k < g.outputs.size(); ++k) {
        const auto at = std::find(node.outputs.begin(), node.outputs.end(), g.outputs[k]);
        ASSERT_NE(at, node.outputs.end());
        const Tensor want = read_tensor(data / ("output_" + std::to_string(k) + ".pb"));
        EXPECT_TRUE(all_close(outs[at - node.outputs.begin()], want, 1e-6f, 1e-3f))
            << (path == rnn::Path::Plain ? "plain" : "oneDNN") << " path, output " << g.outputs[k]->name;
      }
    }
  }
  EXPECT_EQ(cases, 12);
  EXPECT_EQ(dnnl_runs, cases);  // all use default activations and full-length sequences
}

// Whole models through the CPU driver, written in ONNX's text syntax.
core::Runtime& runtime() {
  static core::Runtime rt;
  return rt;
}

std::string literal(const Tensor& t) {
  std::ostringstream s;
  s.precision(9);
  for (size_t i = 0; i < t.numel(); ++i) s << (i ? ", " : "") << t.data<float>()[i];
  return s.str();
}

std::string dims(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s;
}

TEST(CpuRnn, TextModelsThroughTheDriver) {
  // A bidirectional batch-first LSTM with peepholes, clip, sequence lengths
  // and non-default activations, followed by a reverse linear-before-reset
  // GRU reading its Y, so that Y's layout is exercised by a consumer.
  Case lstm;
  lstm.op = "LSTM";
  lstm.direction = "bidirectional";
  lstm.batch_first = true;
  lstm.steps = 4, lstm.batch = 3, lstm.input_size = 2, lstm.hidden = 3;
  lstm.bias = lstm.initial_h = lstm.initial_c = lstm.peepholes = lstm.lens = true;
  lstm.clip = 1.5f;
  lstm.acts = {{"HardSigmoid", 0.25f, 0.5f}, {"Tanh"}, {"Softsign"}, {"Sigmoid"}, {"ScaledTanh", 1.2f, 0.8f}, {"Tanh"}};
  lstm.constant_weights = true;
  std::mt19937 rng(11);
  Inputs li = make_inputs(lstm, rng);
  const Outputs lo = reference(lstm, li);

  // The GRU reads the LSTM's Y reshaped to [N, T, 2H] (batch-first).
  Case gru;
  gru.op = "GRU";
  gru.direction = "reverse";
  gru.batch_first = true;
  gru.steps = lstm.steps, gru.batch = lstm.batch, gru.input_size = 2 * lstm.hidden, gru.hidden = 2;
  gru.bias = true;
  gru.linear_before_reset = true;
  Inputs gi = make_inputs(gru, rng);
  gi.x = lo.y.clone().reshaped({gru.batch, gru.steps, gru.input_size});
  const Outputs go = reference(gru, gi);

  std::ostringstream text;
  text << "<ir_version: 8, opset_import: [\"\" : 14]>\n"
       << "g (float[" << dims(li.x.shape()) << "] x, int32[" << lstm.batch << "] lens, float[" << dims(li.h0.shape())
       << "] h0, float[" << dims(li.c0.shape()) << "] c0) => (float[" << dims(go.y.shape()) << "] y, float["
       << dims(lo.y_h.shape()) << "] lstm_h, float[" << dims(lo.y_c.shape()) << "] lstm_c, float["
       << dims(go.y_h.shape()) << "] gru_h) {\n";
  auto constant = [&](const char* name, const Tensor& t) {
    text << "  " << name << " = Constant <value = float[" << dims(t.shape()) << "] {" << literal(t) << "}> ()\n";
  };
  constant("w", li.w);
  constant("r", li.r);
  constant("b", li.b);
  constant("p", li.p);
  constant("gw", gi.w);
  constant("gr", gi.r);
  constant("gb", gi.b);
  text << "  ly, lstm_h, lstm_c = LSTM <hidden_size = 3, direction = \"bidirectional\", layout = 1, clip = 1.5, "
          "activations = [\"HardSigmoid\", \"Tanh\", \"Softsign\", \"Sigmoid\", \"ScaledTanh\", \"Tanh\"], "
          "activation_alpha = [0.25, 1.2], activation_beta = [0.5, 0.8]> (x, w, r, b, lens, h0, c0, p)\n"
       << "  shape = Constant <value = int64[3] {" << gru.batch << ", " << gru.steps << ", " << gru.input_size
       << "}> ()\n"
       << "  gx = Reshape (ly, shape)\n"
       << "  y, gru_h = GRU <hidden_size = 2, direction = \"reverse\", layout = 1, linear_before_reset = 1> (gx, gw, "
          "gr, gb)\n"
       << "}\n";
  auto model = test::model_from_text(text.str().c_str());
  auto check = [&](driver::CompiledModel& compiled, const char* what) {
    SCOPED_TRACE(what);
    auto req = compiled.create_infer_request();
    req->set_input(0, li.x);
    req->set_input(1, li.lens);
    req->set_input(2, li.h0);
    req->set_input(3, li.c0);
    req->infer();
    EXPECT_TRUE(all_close(req->output(0), go.y, 2e-5f, 1e-4f)) << "GRU Y";
    EXPECT_TRUE(all_close(req->output(1), lo.y_h, 2e-5f, 1e-4f)) << "LSTM Y_h";
    EXPECT_TRUE(all_close(req->output(2), lo.y_c, 2e-5f, 1e-4f)) << "LSTM Y_c";
    EXPECT_TRUE(all_close(req->output(3), go.y_h, 2e-5f, 1e-4f)) << "GRU Y_h";
  };
  auto compiled = runtime().compile(*model, "CPU");
  check(*compiled, "compiled");
  // Exported to a blob and imported: every attribute (activation lists,
  // clip, layout) travels with the graph.
  const std::vector<uint8_t> blob = runtime().export_blob(*compiled, {{}, model->source_sha256});
  check(*runtime().import_blob(blob), "imported from a blob");
}

// A streaming model as a user runs one: the state outputs of one call are
// the next call's state inputs, and 3 calls of 2 steps give what one call of
// 6 steps gives.
TEST(CpuRnn, StateCarriedAcrossCallsEqualsOneLongCall) {
  Case c;
  c.op = "LSTM";
  c.steps = 6, c.batch = 2, c.input_size = 3, c.hidden = 5;
  c.bias = c.initial_h = c.initial_c = true;
  std::mt19937 rng(21);
  const Inputs in = make_inputs(c, rng);
  const Outputs whole = reference(c, in);
  std::ostringstream text;
  text << "<ir_version: 8, opset_import: [\"\" : 14]>\n"
       << "g (float[T, 2, 3] x, float[1, 2, 5] h, float[1, 2, 5] c) => (float[T, 1, 2, 5] y, float[1, 2, 5] hn, "
          "float[1, 2, 5] cn) {\n"
       << "  w = Constant <value = float[" << dims(in.w.shape()) << "] {" << literal(in.w) << "}> ()\n"
       << "  r = Constant <value = float[" << dims(in.r.shape()) << "] {" << literal(in.r) << "}> ()\n"
       << "  b = Constant <value = float[" << dims(in.b.shape()) << "] {" << literal(in.b) << "}> ()\n"
       << "  y, hn, cn = LSTM <hidden_size = 5> (x, w, r, b, , h, c)\n"
       << "}\n";
  auto model = test::model_from_text(text.str().c_str());
  auto compiled = runtime().compile(*model, "CPU");
  auto req = compiled->create_infer_request();
  Tensor h = in.h0, cell = in.c0;
  for (int64_t chunk = 0; chunk < 3; ++chunk) {
    Tensor x = Tensor::allocate(DType::F32, {2, 2, 3});
    std::memcpy(x.raw(), in.x.data<float>() + chunk * 2 * 2 * 3, x.nbytes());
    req->set_input(0, x);
    req->set_input(1, h);
    req->set_input(2, cell);
    req->infer();
    Tensor y = req->output(0);
    float* expected = const_cast<float*>(whole.y.data<float>()) + chunk * 2 * 2 * 5;
    EXPECT_TRUE(all_close(y, Tensor::wrap(DType::F32, {2, 1, 2, 5}, expected, nullptr), 2e-5f, 1e-4f)) << "chunk " << chunk;
    h = req->output(1).clone();
    cell = req->output(2).clone();
  }
  EXPECT_TRUE(all_close(h, whole.y_h, 2e-5f, 1e-4f));
  EXPECT_TRUE(all_close(cell, whole.y_c, 2e-5f, 1e-4f));
}

TEST(CpuRnn, BadNodesAndInputsAreRefusedByName) {
  auto build = [](KernelNode& b) {
    KernelBuild kb{*b.node, 14, test_engine(), {}};
    return rnn::make_kernel(kb);
  };
  {
    KernelNode b("LSTM", 14, 3, 2);
    b.attr_int("hidden_size", 2).attr_string("direction", "sideways");
    test::expect_error([&] { build(b); }, HETERO_INVALID_MODEL, {"node 'n' (LSTM)", "sideways"});
  }
  {
    KernelNode b("GRU", 14, 3, 2);
    b.attr_int("hidden_size", 2).attr_strings("activations", {"Sigmoid", "Swish"});
    test::expect_error([&] { build(b); }, HETERO_INVALID_MODEL, {"node 'n' (GRU)", "'Swish'"});
  }
  {
    KernelNode b("RNN", 14, 3, 2);
    b.attr_int("hidden_size", 2).attr_strings("activations", {"Tanh", "Tanh", "Tanh"});
    test::expect_error([&] { build(b); }, HETERO_INVALID_MODEL, {"node 'n' (RNN)", "lists 3 functions"});
  }
  {
    KernelNode b("LSTM", 14, 3, 2);
    b.attr_int("hidden_size", 2).attr_float("clip", -1);
    test::expect_error([&] { build(b); }, HETERO_INVALID_MODEL, {"clip must be positive"});
  }
  {
    KernelNode b("LSTM", 14, 3, 2);
    b.attr_int("hidden_size", 2).attr_int("layout", 2);
    test::expect_error([&] { build(b); }, HETERO_INVALID_MODEL, {"layout must be 0 or 1"});
  }
  // Run-time inputs that do not fit.
  Case c;
  c.lens = true;
  std::mt19937 rng(3);
  Inputs in = make_inputs(c, rng);
  const auto node = make_node(c, in);
  auto run = [&](const Inputs& bad) {
    KernelBuild kb{*node->node, 14, test_engine(), {}};
    auto k = rnn::make_kernel(kb);
    run_twice(*k, *node->node, run_inputs(bad), 3, 1);
  };
  Inputs bad = in;
  bad.lens = in.lens.clone();
  bad.lens.data<int32_t>()[1] = 9;
  test::expect_error([&] { run(bad); }, HETERO_INVALID_ARGUMENT, {"node 'n' (LSTM)", "sequence_lens[1] is 9"});
  bad = in;
  bad.w = random_f32({1, 16, 5}, rng);
  test::expect_error([&] { run(bad); }, HETERO_INVALID_ARGUMENT, {"input W has shape 1x16x5, expected 1x16x3"});
  bad = in;
  bad.x = random_f32({3, 2}, rng);
  test::expect_error([&] { run(bad); }, HETERO_INVALID_ARGUMENT, {"X must have rank 3"});
}

}  // namespace
}  // namespace hetero::cpu::testing
