// The recurrent layers RNN, GRU and LSTM (ONNX semantics): what their
// attributes and inputs say, checked once, and the two ways the CPU driver
// runs them.
//
// - The plain path (rnn_plain.cpp) handles every attribute combination:
//   all activation functions, clip, input_forget, per-batch sequence_lens.
//   X·W for all steps at once is one sgemm; each step's H·R is another, or
//   omp-simd dot products for a small batch; the gates are plain loops the
//   compiler vectorises.
// - The oneDNN path (rnn_dnnl.cpp) runs the whole sequence as one oneDNN RNN
//   primitive (vanilla_rnn, lstm with peepholes, gru, lbr_gru), which packs
//   the weights and fuses the steps. oneDNN has no clip, no per-batch
//   sequence lengths, only the default LSTM/GRU activations and
//   Relu/Tanh/Sigmoid for RNN, and no coupled input/forget gate, so it runs
//   only the nodes (and the runs, for sequence_lens) it computes exactly.
//
// A long node (Args::steps_per_checkpoint) runs in blocks of steps with a
// checkpoint between two (drivers/cpu/checkpoint_blocks.h), keeping its
// state in the frame's workspace meanwhile. The oneDNN path splits one
// direction with constant weights, a block of steps per primitive run, the
// state carried; the plain path splits any node, two to three times slower.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drivers/cpu/kernel.h"

namespace hetero::cpu::rnn {

enum class Cell { Rnn, Gru, Lstm };

// One of the activation functions ONNX lists for recurrent layers.
struct Activation {
  enum class Kind {
    Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
  };
  Kind kind = Kind::Tanh;
  float alpha = 0, beta = 0;
  // x[i] = f(x[i]) for i < n.
  void apply(float* x, size_t n) const;
};

// The `activations` attribute with `activation_alpha`/`activation_beta`:
// activations_per_direction() functions per direction, direction 0 first.
// Names match case-insensitively. Alphas and betas are consumed in order by
// the functions that take one (as ONNX Runtime reads them); a function left
// without one gets the default of the ONNX operator of its name. A
// bidirectional node may list one direction's functions for both.
std::vector<Activation> parse_activations(const core::Node& node, Cell cell, int64_t directions);

// The node's attributes, checked.
struct Spec {
  Cell cell = Cell::Lstm;
  int64_t hidden = 0;       // hidden_size (0: taken from R)
  int64_t directions = 1;   // 2 for bidirectional
  bool reverse = false;     // direction "reverse" (one direction, run backwards)
  bool batch_first = false; // layout 1: X [N, T, I], Y [N, T, D, H], states [N, D, H]
  std::optional<float> clip;
  bool input_forget = false;        // LSTM: f = 1 - i
  bool linear_before_reset = false; // GRU: r multiplies (H·Rh + Rbh)
  // activations_per_direction() entries per direction, direction 0 first.
  std::vector<Activation> activations;

  static Spec parse(const KernelBuild& b);
  int64_t gates() const { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
  size_t activations_per_direction() const { return cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1; }
  const Activation& activation(int64_t direction, size_t k) const {
    return activations[static_cast<size_t>(direction) * activations_per_direction() + k];
  }
  // Whether direction d runs from the last step to the first.
  bool backwards(int64_t d) const { return reverse || d == 1; }
};

// Node input and output positions.
enum Input : size_t { kX = 0, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum Output : size_t { kY = 0, kYh, kYc };

// One run's inputs, checked against each other and the spec. Pointers into
// the input tensors; null for an omitted optional input.
struct Args {
  int64_t steps = 0, batch = 0, input_size = 0, hidden = 0, directions = 1;
  const float* x = nullptr;
  const float* w = nullptr;  // [D, G*H, I], ONNX gate order
  const float* r = nullptr;  // [D, G*H, H]
  const float* b = nullptr;  // [D, 2*G*H]: W biases then R biases
  const int32_t* sequence_lens = nullptr;  // [N], each in [0, T]
  const float* initial_h = nullptr;  // [D, N, H], or [N, D, H] batch-first
  const float* initial_c = nullptr;
  const float* peepholes = nullptr;  // [D, 3*H]: i, o, f

  static Args check(const Spec& spec, const KernelRun& r);
  // True when every sequence runs all `steps` (or no lengths were given).
  bool full_length() const;
  // How many steps of one direction make a block of checkpoint work; 0 when
  // the node, all directions, is short enough to run whole.
  int64_t steps_per_checkpoint(const Spec& spec) const;
  // Output shapes for this run.
  core::Shape y_shape(const Spec& spec) const;
  core::Shape state_shape(const Spec& spec) const;
};

// The plain path: any node, any run.
void run_plain(const Spec& spec, const Args& args, KernelRun& r);

// The oneDNN path for one node; null when oneDNN cannot compute this node
// exactly (see the top of this file).
class DnnlRnn {
 public:
  virtual ~DnnlRnn() = default;
  // Runs `args` (full_length() must hold); false, having done nothing, when
  // oneDNN has no implementation for this shape, or for a long run that this
  // path cannot split (two directions, or weights given at run time).
  virtual bool run(const Args& args, KernelRun& r) = 0;
};
std::unique_ptr<DnnlRnn> make_dnnl_rnn(const Spec& spec, const KernelBuild& b);

// Which path a kernel takes: the fastest that applies, or one forced (tests
// run both on the same node to compare them).
enum class Path { Best, Plain, Dnnl };
std::unique_ptr<Kernel> make_kernel(const KernelBuild& b, Path path = Path::Best);

}  // namespace hetero::cpu::rnn
