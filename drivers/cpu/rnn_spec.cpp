// RNN/GRU/LSTM attributes and inputs, checked once for both paths.
#include <algorithm>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/rnn.h"

namespace hetero::cpu::rnn {

namespace {

[[noreturn]] void invalid_model(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_MODEL, node.describe() + ": " + what);
}

[[noreturn]] void invalid_input(const core::Node& node, const std::string& what) {
  fail(HETERO_INVALID_ARGUMENT, node.describe() + ": " + what);
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
    invalid_model(node, "takes at most " + std::to_string(max_inputs) + " inputs, has " +
                            std::to_string(node.inputs.size()));
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

int64_t Args::steps_per_checkpoint(const Spec& spec) const {
  // A step's product with R is a matrix-vector product for a small batch,
  // which runs at a fraction of a matrix product's rate (an LSTM of hidden
  // size 1024 and batch 1 took as long as a matrix product of 14 times its
  // multiply-adds): a step counts at least 16 rows.
  const double rows = double(std::max<int64_t>(batch, 16));
  const double step = rows * double(spec.gates() * hidden) * double(input_size + hidden);
  if (double(directions) * double(steps) * step <= 2 * kCheckpointMacs) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(kCheckpointMacs / step));
}

core::Shape Args::y_shape(const Spec& spec) const {
  return spec.batch_first ? core::Shape{batch, steps, directions, hidden} : core::Shape{steps, directions, batch, hidden};
}

core::Shape Args::state_shape(const Spec& spec) const {
  return spec.batch_first ? core::Shape{batch, directions, hidden} : core::Shape{directions, batch, hidden};
}

}  // namespace hetero::cpu::rnn
