#include "drivers/cpu/plan.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include <dnnl.hpp>

#include "core/infer_request.h"
#include "core/progress.h"
#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

namespace {
constexpr int kAbsent = -1;
constexpr int kOuterScope = -2;
}  // namespace

int Plan::slot_of(const core::Value* v) const {
  auto it = slot_index_.find(v);
  return it == slot_index_.end() ? kAbsent : it->second;
}

std::shared_ptr<Plan> Plan::compile(const core::Graph& graph, const core::Model& model, dnnl::engine& engine) {
  std::shared_ptr<Plan> plan(new Plan(graph));
  auto slot = [&](const core::Value* v) {
    auto [it, inserted] = plan->slot_index_.emplace(v, static_cast<int>(plan->slot_values_.size()));
    if (inserted) plan->slot_values_.push_back(v);
    return it->second;
  };
  for (const core::Value* v : graph.inputs) plan->input_slots_.push_back(slot(v));

  KernelBuild::Compiler compile_subgraph = [&model, &engine](const core::Graph& g) {
    return Plan::compile(g, model, engine);
  };

  const KernelRegistry& registry = KernelRegistry::builtin();
  std::vector<const core::Value*> reads;
  // Progress counts the main graph's nodes; a subgraph's kernels are part of
  // its node's (If, Loop, Scan).
  const bool main_graph = &graph == &model.graph;
  const uint64_t node_count = graph.nodes().size();
  if (main_graph) core::report_progress("building CPU kernels", 0, node_count);
  for (const auto& node_ptr : graph.nodes()) {
    const core::Node& node = *node_ptr;
    const int64_t opset = node.opset ? node.opset : model.opset(node.domain);
    const KernelFactory* factory = registry.find(node.op_type, node.domain, opset);
    if (!factory) {
      fail(HETERO_NOT_SUPPORTED, node.describe() + ": the CPU driver has no kernel for " +
                                     (node.domain.empty() ? "" : node.domain + ".") + node.op_type +
                                     " at opset " + std::to_string(opset));
    }
    Step step;
    step.node = &node;
    KernelBuild build{node, opset, engine, compile_subgraph};
    step.kernel = (*factory)(build);
    for (const core::Value* in : node.inputs) {
      if (!in) {
        step.inputs.push_back(kAbsent);
      } else if (in->owner != &graph) {
        step.inputs.push_back(kOuterScope);
      } else {
        step.inputs.push_back(slot(in));
      }
    }
    for (const core::Value* out : node.outputs) step.outputs.push_back(out ? slot(out) : kAbsent);
    reads.clear();
    core::values_read(node, graph, reads);
    for (const core::Value* v : reads)
      if (std::find(node.inputs.begin(), node.inputs.end(), v) == node.inputs.end()) step.captures.push_back(slot(v));
    plan->steps_.push_back(std::move(step));
    if (main_graph) core::report_progress("building CPU kernels", plan->steps_.size(), node_count);
    core::check_deadline();
    // A big model's plan takes a while: other models' more urgent work goes
    // first between two of its nodes, as between two nodes of an inference.
    Scheduler::yield_in_run();
  }
  for (const core::Value* v : graph.outputs) {
    if (v->owner != &graph)
      fail(HETERO_NOT_SUPPORTED, "graph '" + graph.name + "' output '" + v->name + "' is an outer-scope value");
    plan->output_slots_.push_back(slot(v));
  }

  // After which step each intermediate is read for the last time, so that its
  // buffer returns to the frame's pool early. Graph inputs, outputs and
  // constants are never released.
  std::vector<int> last(plan->slot_values_.size(), -1);
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    for (int s : plan->steps_[i].inputs)
      if (s >= 0) last[s] = static_cast<int>(i);
    for (int s : plan->steps_[i].captures) last[s] = static_cast<int>(i);
  }
  // A step's output nobody reads dies right after that step.
  for (size_t i = 0; i < plan->steps_.size(); ++i)
    for (int s : plan->steps_[i].outputs)
      if (s >= 0 && last[s] < 0) last[s] = static_cast<int>(i);
  for (int s : plan->input_slots_) last[s] = -1;
  for (int s : plan->output_slots_) last[s] = -1;
  plan->last_use_.resize(plan->steps_.size());
  for (size_t s = 0; s < last.size(); ++s) {
    if (last[s] >= 0 && !plan->slot_values_[s]->is_constant()) plan->last_use_[last[s]].push_back(static_cast<int>(s));
  }
  return plan;
}

struct Frame::StepState {
  MemoryViews views;
  std::unique_ptr<KernelMemo> memo;
};

// The KernelRun a step sees: its inputs from the frame's slots, its outputs
// into them, buffers from the frame's pool.
class StepRun final : public KernelRun {
 public:
  StepRun(Frame& frame, const Plan::Step& step, Frame::StepState& state) : frame_(frame), step_(step), state_(state) {}

  const core::Node& node() const override { return *step_.node; }
  size_t num_inputs() const override { return step_.inputs.size(); }
  const core::Tensor* input(size_t i) const override {
    if (i >= step_.inputs.size()) return nullptr;
    const int s = step_.inputs[i];
    if (s == kAbsent) return nullptr;
    const core::Tensor* t = s == kOuterScope ? frame_.lookup(step_.node->inputs[i]) : &frame_.slots_[s];
    if (!t || t->empty())
      fail(HETERO_INTERNAL, node().describe() + ": input '" + step_.node->inputs[i]->name + "' has no value");
    return t;
  }
  size_t num_outputs() const override { return step_.outputs.size(); }
  bool output_wanted(size_t i) const override {
    if (i >= step_.outputs.size() || step_.outputs[i] == kAbsent) return false;
    const core::Value* v = step_.node->outputs[i];
    if (!v->uses.empty()) return true;
    const auto& outs = frame_.plan_.graph().outputs;
    return std::find(outs.begin(), outs.end(), v) != outs.end();
  }
  core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) override {
    core::Tensor& dst = slot(i);
    dst = frame_.take_buffer(dtype, shape);
    return dst;
  }
  void set_output(size_t i, core::Tensor tensor) override { slot(i) = std::move(tensor); }
  dnnl::stream& stream() override { return frame_.stream_; }
  const dnnl::engine& engine() const override { return frame_.engine_; }
  int threads() const override { return frame_.threads_; }
  Frame& body_frame(const Plan& body) override { return frame_.nested(body); }
  void checkpoint() override {
    if (frame_.control_) frame_.control_->at_node_boundary();
  }
  core::Tensor workspace(size_t bytes) override { return frame_.take_buffer(core::DType::U8, {int64_t(bytes)}); }
  MemoryViews& views() override { return state_.views; }
  std::unique_ptr<KernelMemo>& memo() override { return state_.memo; }

 private:
  core::Tensor& slot(size_t i) {
    if (i >= step_.outputs.size())
      fail(HETERO_INTERNAL, node().describe() + ": output " + std::to_string(i) + " does not exist");
    const int s = step_.outputs[i];
    if (s == kAbsent) {
      // An omitted optional output still needs somewhere to be written.
      if (scratch_.size() <= i) scratch_.resize(i + 1);
      return scratch_[i];
    }
    return frame_.slots_[s];
  }
  Frame& frame_;
  const Plan::Step& step_;
  Frame::StepState& state_;
  std::vector<core::Tensor> scratch_;
};

void RunControl::at_node_boundary() const {
  if (cancelled && cancelled->load(std::memory_order_relaxed)) core::fail_cancelled();
  if (scheduler) scheduler->yield(priority);
}

Frame::Frame(const Plan& plan, const Frame* outer, dnnl::stream& stream, int threads, const RunControl* control)
    : plan_(plan),
      outer_(outer),
      stream_(stream),
      engine_(outer ? outer->engine_ : stream.get_engine()),
      threads_(threads),
      control_(outer ? outer->control_ : control),
      slots_(plan.num_slots()),
      held_(outer ? outer->held_ : &held_bytes_),
      step_state_(std::make_unique<StepState[]>(plan.steps().size())) {
  for (size_t s = 0; s < slots_.size(); ++s) {
    const core::Value* v = plan.slot_value(s);
    if (v->constant) slots_[s] = *v->constant;
  }
}

Frame::~Frame() {
  for (const Buffer& b : owned_) *held_ -= b.capacity;
  for (const Buffer& b : pool_) *held_ -= b.capacity;
}

void Frame::drop_pool() {
  for (const Buffer& b : pool_) *held_ -= b.capacity;
  pool_.clear();
}

Frame& Frame::nested(const Plan& body) {
  auto it = std::find_if(nested_.begin(), nested_.end(), [&](const auto& n) { return n.first == &body; });
  if (it == nested_.end()) {
    nested_.emplace_back(&body, std::make_unique<Frame>(body, this, stream_, threads_));
    it = std::prev(nested_.end());
  }
  it->second->set_threads(threads_);
  return *it->second;
}

void Frame::release_memory() {
  for (auto& n : nested_) n.second->release_memory();
  for (size_t s = 0; s < slots_.size(); ++s)
    if (!plan_.slot_value(s)->constant) slots_[s] = core::Tensor();
  drop_pool();
  // What only this frame references now is free: freed, not pooled.
  for (size_t i = 0; i < owned_.size();) {
    if (owned_[i].owner.use_count() == 1) {
      *held_ -= owned_[i].capacity;
      owned_[i] = std::move(owned_.back());
      owned_.pop_back();
    } else {
      ++i;
    }
  }
}

const core::Tensor* Frame::lookup(const core::Value* v) const {
  const int s = plan_.slot_of(v);
  if (s >= 0 && !slots_[s].empty()) return &slots_[s];
  return outer_ ? outer_->lookup(v) : nullptr;
}

core::Tensor Frame::take_buffer(core::DType dtype, const core::Shape& shape) {
  const size_t bytes = core::shape_numel(shape) * core::dtype_size(dtype);
  // A buffer nobody but this frame references any more (its slot released it,
  // the caller dropped an output) is free again.
  for (size_t i = 0; i < owned_.size();) {
    if (owned_[i].owner.use_count() == 1) {
      pool_.push_back(std::move(owned_[i]));
      owned_[i] = std::move(owned_.back());
      owned_.pop_back();
    } else {
      ++i;
    }
  }
  // Smallest free buffer that fits.
  size_t best = pool_.size();
  for (size_t i = 0; i < pool_.size(); ++i) {
    if (pool_[i].capacity >= bytes && (best == pool_.size() || pool_[i].capacity < pool_[best].capacity)) best = i;
  }
  core::Tensor t;
  if (best != pool_.size()) {
    Buffer b = std::move(pool_[best]);
    pool_[best] = std::move(pool_.back());
    pool_.pop_back();
    t = core::Tensor::wrap(dtype, shape, const_cast<void*>(b.owner.get()), b.owner);
    owned_.push_back(std::move(b));
  } else {
    if (const uint64_t limit = control_ ? control_->max_bytes : 0; limit && *held_ + bytes > limit) {
      drop_pool();  // free buffers too small for this one: give them back first
      if (*held_ + bytes > limit)
        fail(HETERO_OUT_OF_MEMORY, "one inference needs more than " + std::to_string(limit >> 20) +
                                       " MiB for its values (CPU config max_inference_mb)");
    }
    t = core::Tensor::allocate(dtype, shape, false);
    owned_.push_back({bytes, t.owner()});
    *held_ += bytes;
  }
  // Shapes that keep changing must not grow the pool without bound: keep the
  // largest few free buffers.
  constexpr size_t kMaxPooled = 64;
  if (pool_.size() > kMaxPooled) {
    std::sort(pool_.begin(), pool_.end(), [](const Buffer& a, const Buffer& b) { return a.capacity > b.capacity; });
    for (size_t i = kMaxPooled; i < pool_.size(); ++i) *held_ -= pool_[i].capacity;
    pool_.resize(kMaxPooled);
  }
  return t;
}

std::vector<core::Tensor> Frame::run(const std::vector<core::Tensor>& inputs) {
  const auto& in_slots = plan_.input_slots();
  if (inputs.size() != in_slots.size())
    fail(HETERO_INVALID_ARGUMENT, "graph '" + plan_.graph().name + "' takes " + std::to_string(in_slots.size()) +
                                      " inputs, got " + std::to_string(inputs.size()));
  // Values still held from an earlier run are dropped; their buffers become
  // free once the caller lets go of them too. (Nearly all were dropped at
  // their last use: an empty slot is passed over without looking up its value.)
  for (size_t s = 0; s < slots_.size(); ++s)
    if (!slots_[s].empty() && !plan_.slot_value(s)->is_constant()) slots_[s] = core::Tensor();
  for (size_t i = 0; i < inputs.size(); ++i) slots_[in_slots[i]] = inputs[i];

  const auto& steps = plan_.steps();
  // Checked before every node; a graph with none (an empty Loop body) is
  // checked once per run, so that an endless Loop over it still stops.
  if (control_ && steps.empty()) control_->at_node_boundary();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (control_) control_->at_node_boundary();
    StepRun run(*this, steps[i], step_state_[i]);
    steps[i].kernel->run(run);
    for (int s : plan_.last_use_[i]) slots_[s] = core::Tensor();
  }
  std::vector<core::Tensor> outputs;
  outputs.reserve(plan_.output_slots().size());
  for (int s : plan_.output_slots()) outputs.push_back(slots_[s]);
  // Inputs and outputs are not kept past the run: the caller's memory is the
  // caller's, and a frame kept for the next run (Frame::nested) would
  // otherwise hold its outer frame's buffers until then.
  for (int s : in_slots) slots_[s] = core::Tensor();
  for (int s : plan_.output_slots())
    if (!plan_.slot_value(s)->is_constant()) slots_[s] = core::Tensor();
  return outputs;
}

}  // namespace hetero::cpu
