// Control flow: If, Loop and Scan. Each body is compiled once into a Plan at
// build time and run in a Frame nested in the running one, so that outer-scope
// values resolve through the parent frame. A frame lives for one execution of
// the node (its buffers are reused across Loop/Scan iterations) and is never
// shared: concurrent requests each get their own.
#include <cstring>
#include <limits>

#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/plan.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Graph;
using core::Shape;
using core::Tensor;

// A compiled body and the graph it runs (kept alive with the plan).
struct Body {
  std::shared_ptr<Graph> graph;
  std::shared_ptr<Plan> plan;
};

Body compile_body(const KernelBuild& b, const std::string& attr_name) {
  const core::Attribute* a = b.node.attr(attr_name);
  if (!a || a->type != core::AttrType::Graph || !a->g) b.unsupported("attribute '" + attr_name + "' is missing");
  if (!b.compile_subgraph) b.unsupported("subgraphs cannot be compiled here");
  return {a->g, b.compile_subgraph(*a->g)};
}

bool truth(const KernelRun& r, const Tensor& t, const char* what) {
  if (t.numel() != 1) bad_input(r.node(), std::string(what) + " must hold one value");
  return t.as_int64(0) != 0;
}

// Stacks per-iteration tensors along a new `axis` (in reverse iteration order
// when asked) into output `index`.
void stack_output(KernelRun& r, size_t index, const std::vector<Tensor>& parts, int64_t axis_attr, bool reverse) {
  if (parts.empty()) {
    // No iteration ran: the element shape is unknown, so the result is [0].
    const core::Value* v = r.node().outputs[index];
    const DType dt = v && v->dtype != DType::Undefined ? v->dtype : DType::F32;
    r.output(index, dt, {0});
    return;
  }
  const Tensor& first = parts[0];
  for (const Tensor& p : parts)
    if (p.dtype() != first.dtype() || p.shape() != first.shape())
      bad_input(r.node(), "iterations produced scan outputs of different shapes (" +
                              core::shape_to_string(first.shape()) + " and " + core::shape_to_string(p.shape()) +
                              ")");
  const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(first.rank()) + 1));
  const auto steps = static_cast<int64_t>(parts.size());
  Shape out = first.shape();
  out.insert(out.begin() + static_cast<ptrdiff_t>(axis), steps);
  Tensor& y = r.output(index, first.dtype(), out);
  const int64_t outer = product(first.shape(), 0, axis);
  const size_t inner = static_cast<size_t>(product(first.shape(), axis, first.rank())) * core::dtype_size(first.dtype());
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor& p = parts[static_cast<size_t>(reverse ? steps - 1 - t : t)];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(o * steps + t) * inner,
                  static_cast<const char*>(p.raw()) + static_cast<size_t>(o) * inner, inner);
  }
}

// Slice t of `x` along `axis` (the axis removed): a view when the slices are
// contiguous (axis 0), else a copy.
Tensor scan_slice(const Tensor& x, size_t axis, int64_t t) {
  Shape shape = x.shape();
  const int64_t steps = shape[axis];
  shape.erase(shape.begin() + static_cast<ptrdiff_t>(axis));
  const auto inner = static_cast<size_t>(product(x.shape(), axis + 1, x.rank()));
  const int64_t outer = product(x.shape(), 0, axis);
  if (outer == 1) return view_of(x, static_cast<size_t>(t) * inner, shape);
  Tensor s = Tensor::allocate(x.dtype(), shape, false);
  const size_t bytes = inner * core::dtype_size(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(s.raw()) + static_cast<size_t>(o) * bytes,
                static_cast<const char*>(x.raw()) + static_cast<size_t>(o * steps + t) * bytes, bytes);
  return s;
}

// Copies parts (null ones as zeros) into output `index` of shape lead + the
// parts' common shape: the batch-major layout of Scan-8's outputs.
void write_batched(KernelRun& r, size_t index, const std::vector<const Tensor*>& parts, Shape lead) {
  const Tensor* first = nullptr;
  for (const Tensor* p : parts)
    if (p && !first) first = p;
  if (!first) {
    const core::Value* v = r.node().outputs[index];
    r.output(index, v && v->dtype != DType::Undefined ? v->dtype : DType::F32, lead);
    return;
  }
  Shape out = lead;
  out.insert(out.end(), first->shape().begin(), first->shape().end());
  Tensor& y = r.output(index, first->dtype(), out);
  const size_t bytes = first->nbytes();
  for (size_t i = 0; i < parts.size(); ++i) {
    char* dst = static_cast<char*>(y.raw()) + i * bytes;
    if (!parts[i]) {
      std::memset(dst, 0, bytes);
      continue;
    }
    if (parts[i]->dtype() != first->dtype() || parts[i]->shape() != first->shape())
      bad_input(r.node(), "iterations produced outputs of different shapes");
    std::memcpy(dst, parts[i]->raw(), bytes);
  }
}

}  // namespace

std::unique_ptr<Kernel> make_if(const KernelBuild& b) {
  const Body then_body = compile_body(b, "then_branch");
  const Body else_body = compile_body(b, "else_branch");
  return make_fn_kernel([then_body, else_body](KernelRun& r) {
    const Body& body = truth(r, required_input(r, 0), "the condition") ? then_body : else_body;
    Frame& frame = r.body_frame(*body.plan);
    const std::vector<Tensor> outs = frame.run({});
    if (outs.size() != r.num_outputs())
      bad_input(r.node(), "the branch has " + std::to_string(outs.size()) + " outputs, the node " +
                              std::to_string(r.num_outputs()));
    for (size_t i = 0; i < outs.size(); ++i) r.set_output(i, outs[i]);
  });
}

std::unique_ptr<Kernel> make_loop(const KernelBuild& b) {
  const Body body = compile_body(b, "body");
  // Neither a trip count nor a condition: the loop would never end.
  if (!b.node.input(0) && !b.node.input(1)) b.unsupported("a loop without trip count or condition never ends");
  const size_t carried = b.node.inputs.size() < 2 ? 0 : b.node.inputs.size() - 2;
  if (body.graph->inputs.size() != carried + 2 || body.graph->outputs.size() < carried + 1)
    b.unsupported("the body's inputs and outputs do not match the loop's");
  const size_t scans = body.graph->outputs.size() - 1 - carried;
  return make_fn_kernel([body, carried, scans](KernelRun& r) {
    const Tensor* m = r.input(0);
    const Tensor* c = r.input(1);
    const int64_t trips = m ? (m->numel() == 1 ? m->as_int64(0) : -1) : std::numeric_limits<int64_t>::max();
    if (m && m->numel() != 1) bad_input(r.node(), "the trip count must hold one value");
    bool cond = c ? truth(r, *c, "the condition") : true;
    std::vector<Tensor> state(carried);
    for (size_t i = 0; i < carried; ++i) state[i] = required_input(r, i + 2);
    std::vector<std::vector<Tensor>> scanned(scans);
    Frame& frame = r.body_frame(*body.plan);
    for (int64_t i = 0; i < trips && cond; ++i) {
      std::vector<Tensor> ins;
      ins.reserve(carried + 2);
      ins.push_back(Tensor::from_vector<int64_t>({i}, {}));
      ins.push_back(Tensor::from_vector<bool>({cond}, {}));
      ins.insert(ins.end(), state.begin(), state.end());
      std::vector<Tensor> outs = frame.run(ins);
      cond = truth(r, outs[0], "the body's condition");
      for (size_t j = 0; j < carried; ++j) state[j] = std::move(outs[1 + j]);
      for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(outs[1 + carried + k]));
    }
    for (size_t j = 0; j < carried && j < r.num_outputs(); ++j) r.set_output(j, state[j]);
    for (size_t k = 0; k < scans && carried + k < r.num_outputs(); ++k)
      if (r.output_wanted(carried + k)) stack_output(r, carried + k, scanned[k], 0, false);
  });
}

std::unique_ptr<Kernel> make_scan(const KernelBuild& b) {
  const Body body = compile_body(b, "body");
  const int64_t m = b.node.attr_int("num_scan_inputs", -1);
  const size_t n_in = b.node.inputs.size();
  if (m <= 0 || static_cast<size_t>(m) > n_in) b.unsupported("num_scan_inputs is missing or out of range");
  const auto scan_inputs = static_cast<size_t>(m);
  const size_t states = n_in - scan_inputs;
  if (body.graph->inputs.size() != n_in || body.graph->outputs.size() < states)
    b.unsupported("the body's inputs and outputs do not match the scan's");
  const size_t scan_outputs = body.graph->outputs.size() - states;
  auto list = [&](const char* name, size_t n) {
    std::vector<int64_t> v = b.node.attr_ints(name);
    if (v.empty()) v.assign(n, 0);
    if (v.size() != n) b.unsupported(std::string("attribute '") + name + "' has the wrong length");
    return v;
  };
  const std::vector<int64_t> in_axes = list("scan_input_axes", scan_inputs);
  const std::vector<int64_t> in_dirs = list("scan_input_directions", scan_inputs);
  const std::vector<int64_t> out_axes = list("scan_output_axes", scan_outputs);
  const std::vector<int64_t> out_dirs = list("scan_output_directions", scan_outputs);
  return make_fn_kernel([=](KernelRun& r) {
    std::vector<Tensor> state(states);
    for (size_t i = 0; i < states; ++i) state[i] = required_input(r, i);
    std::vector<const Tensor*> xs(scan_inputs);
    std::vector<size_t> axes(scan_inputs);
    int64_t steps = -1;
    for (size_t j = 0; j < scan_inputs; ++j) {
      xs[j] = &required_input(r, states + j);
      axes[j] = static_cast<size_t>(normalize_axis(r.node(), in_axes[j], static_cast<int64_t>(xs[j]->rank())));
      const int64_t len = xs[j]->dim(axes[j]);
      if (steps >= 0 && len != steps) bad_input(r.node(), "scan inputs differ in sequence length");
      steps = len;
    }
    std::vector<std::vector<Tensor>> scanned(scan_outputs);
    Frame& frame = r.body_frame(*body.plan);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<Tensor> ins = state;
      for (size_t j = 0; j < scan_inputs; ++j)
        ins.push_back(scan_slice(*xs[j], axes[j], in_dirs[j] ? steps - 1 - t : t));
      std::vector<Tensor> outs = frame.run(ins);
      for (size_t i = 0; i < states; ++i) state[i] = std::move(outs[i]);
      for (size_t k = 0; k < scan_outputs; ++k) scanned[k].push_back(std::move(outs[states + k]));
    }
    for (size_t i = 0; i < states && i < r.num_outputs(); ++i) r.set_output(i, state[i]);
    for (size_t k = 0; k < scan_outputs && states + k < r.num_outputs(); ++k)
      if (r.output_wanted(states + k)) stack_output(r, states + k, scanned[k], out_axes[k], out_dirs[k] != 0);
  });
}

// Scan-8: every input has a leading batch dim, scan inputs are [batch, seq,
// ...], optional input 0 gives each batch entry's sequence length, and scan
// outputs past a shorter length are zeros.
std::unique_ptr<Kernel> make_scan8(const KernelBuild& b) {
  const Body body = compile_body(b, "body");
  const int64_t m = b.node.attr_int("num_scan_inputs", -1);
  const size_t n_in = b.node.inputs.empty() ? 0 : b.node.inputs.size() - 1;
  if (m <= 0 || static_cast<size_t>(m) > n_in) b.unsupported("num_scan_inputs is missing or out of range");
  const auto scan_inputs = static_cast<size_t>(m);
  const size_t states = n_in - scan_inputs;
  if (body.graph->inputs.size() != n_in || body.graph->outputs.size() < states)
    b.unsupported("the body's inputs and outputs do not match the scan's");
  const size_t scan_outputs = body.graph->outputs.size() - states;
  std::vector<int64_t> dirs = b.node.attr_ints("directions");
  if (dirs.empty()) dirs.assign(scan_inputs, 0);
  if (dirs.size() != scan_inputs) b.unsupported("attribute 'directions' has the wrong length");
  return make_fn_kernel([=](KernelRun& r) {
    std::vector<const Tensor*> xs(n_in);
    for (size_t i = 0; i < n_in; ++i) xs[i] = &required_input(r, i + 1);
    const int64_t batch = xs[0]->rank() ? xs[0]->dim(0) : -1;
    const int64_t seq = xs[states]->rank() >= 2 ? xs[states]->dim(1) : -1;
    for (size_t i = 0; i < n_in; ++i)
      if (xs[i]->rank() < (i < states ? 1u : 2u) || xs[i]->dim(0) != batch || (i >= states && xs[i]->dim(1) != seq))
        bad_input(r.node(), "input " + std::to_string(i + 1) + " does not have the batch/sequence dims");
    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (const Tensor* l = r.input(0)) {
      lens = int_input_values(r.node(), *l, "sequence_lens");
      if (static_cast<int64_t>(lens.size()) != batch) bad_input(r.node(), "sequence_lens does not match the batch");
      for (int64_t len : lens)
        if (len < 0 || len > seq) bad_input(r.node(), "a sequence length is out of range");
    }
    // Entry i of x along the leading dims (batch, or batch and step).
    auto entry = [](const Tensor& x, int64_t i, size_t lead) {
      const Shape rest(x.shape().begin() + static_cast<ptrdiff_t>(lead), x.shape().end());
      return view_of(x, static_cast<size_t>(i) * core::shape_numel(rest), rest);
    };
    std::vector<std::vector<Tensor>> final_state(states), scanned(scan_outputs);
    std::vector<std::vector<const Tensor*>> scan_parts(scan_outputs,
                                                       std::vector<const Tensor*>(static_cast<size_t>(batch * seq)));
    Frame& frame = r.body_frame(*body.plan);
    for (int64_t bi = 0; bi < batch; ++bi) {
      std::vector<Tensor> state(states);
      for (size_t i = 0; i < states; ++i) state[i] = entry(*xs[i], bi, 1);
      const int64_t len = lens[static_cast<size_t>(bi)];
      for (int64_t t = 0; t < len; ++t) {
        std::vector<Tensor> ins = state;
        for (size_t j = 0; j < scan_inputs; ++j)
          ins.push_back(entry(*xs[states + j], bi * seq + (dirs[j] ? len - 1 - t : t), 2));
        std::vector<Tensor> outs = frame.run(ins);
        for (size_t i = 0; i < states; ++i) state[i] = std::move(outs[i]);
        for (size_t k = 0; k < scan_outputs; ++k) scanned[k].push_back(std::move(outs[states + k]));
      }
      for (size_t i = 0; i < states; ++i) final_state[i].push_back(std::move(state[i]));
    }
    // Scanned tensors were appended batch by batch; place them at [b, t].
    for (size_t k = 0; k < scan_outputs; ++k) {
      size_t next = 0;
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t t = 0; t < lens[static_cast<size_t>(bi)]; ++t)
          scan_parts[k][static_cast<size_t>(bi * seq + t)] = &scanned[k][next++];
    }
    for (size_t i = 0; i < states && i < r.num_outputs(); ++i) {
      std::vector<const Tensor*> parts;
      for (const Tensor& t : final_state[i]) parts.push_back(&t);
      write_batched(r, i, parts, {batch});
    }
    for (size_t k = 0; k < scan_outputs && states + k < r.num_outputs(); ++k)
      if (r.output_wanted(states + k)) write_batched(r, states + k, scan_parts[k], {batch, seq});
  });
}

}  // namespace hetero::cpu
