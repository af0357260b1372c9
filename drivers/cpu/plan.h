// The CPU driver's execution plan: the graph's nodes in topological order,
// each with its kernel and the value slots it reads and writes.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "core/graph.h"
#include "core/priority.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/scheduler.h"

namespace hetero::cpu {

class Plan {
 public:
  // One kernel per node of `graph` (which must outlive the plan). Fails with
  // NOT_SUPPORTED naming the first node no kernel handles.
  static std::shared_ptr<Plan> compile(const core::Graph& graph, const core::Model& model, dnnl::engine& engine);

  const core::Graph& graph() const noexcept { return graph_; }

  struct Step {
    const core::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // slot per node input; -1 absent; -2 outer scope
    std::vector<int> outputs;  // slot per node output; -1 absent
    // Slots the node's bodies (If/Loop/Scan) read from this graph: they must
    // live until the node has run, like inputs.
    std::vector<int> captures;
  };
  const std::vector<Step>& steps() const noexcept { return steps_; }
  size_t num_slots() const noexcept { return slot_values_.size(); }
  const core::Value* slot_value(size_t slot) const { return slot_values_[slot]; }
  int slot_of(const core::Value* v) const;
  const std::vector<int>& input_slots() const noexcept { return input_slots_; }
  const std::vector<int>& output_slots() const noexcept { return output_slots_; }

 private:
  Plan(const core::Graph& graph) : graph_(graph) {}
  const core::Graph& graph_;
  std::vector<Step> steps_;
  std::vector<const core::Value*> slot_values_;
  std::unordered_map<const core::Value*, int> slot_index_;
  std::vector<int> input_slots_, output_slots_;
  // Slot of each value that is read after step i for the last time, so that
  // its memory can be freed early: last_use_[i] lists slots to drop after step i.
  std::vector<std::vector<int>> last_use_;
  friend class Frame;
};

// What an inference checks between two nodes: whether it was cancelled
// (then it stops, failing with CANCELLED) and whether work of higher priority
// waits for its stream (then that runs first). Nested frames (Loop, If and
// Scan bodies) use their outer frame's.
struct RunControl {
  const std::atomic<bool>* cancelled = nullptr;
  Scheduler* scheduler = nullptr;
  core::Priority priority = core::Priority::Normal;
  // The most bytes the frames of one inference may hold for its values
  // (max_inference_mb); 0: no limit. A model that would need more fails with
  // OUT_OF_MEMORY instead of taking the process's memory.
  uint64_t max_bytes = 0;

  void at_node_boundary() const;
};

// The values of one execution of a plan. A frame is reused across runs of the
// same request so that output buffers can be reused.
class Frame {
 public:
  // `control` may be null (compile-time evaluation); a nested frame takes its
  // outer frame's.
  Frame(const Plan& plan, const Frame* outer, dnnl::stream& stream, int threads,
        const RunControl* control = nullptr);
  ~Frame();
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  // Runs the plan on `inputs` (graph-input order); returns the graph outputs.
  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs);
  // The current value of `v`, looked up here and then in enclosing frames.
  const core::Tensor* lookup(const core::Value* v) const;
  const Plan& plan() const noexcept { return plan_; }
  // The OpenMP team the next run's kernels use: at most the compiled width
  // (TeamWidth narrows it while the box is busy).
  void set_threads(int threads) noexcept { threads_ = threads; }
  // Between runs: frees the values of the last run and the buffers kept for
  // the next (those a caller still holds, its outputs, stay theirs), nested
  // frames' too.
  void release_memory();
  // The frame for a subgraph `body` that one of this frame's nodes runs (an
  // If branch, a Loop or Scan body), as wide as this frame's team. Made at
  // the first run and kept: a model whose whole graph sits in an If (Silero
  // VAD branches on its sample rate) would otherwise copy the body's
  // constants and allocate every value of it afresh each inference (some 80
  // allocations of Silero's 680). A body's plan belongs to one node and runs
  // one run at a time, so one frame per body is enough.
  Frame& nested(const Plan& body);

 private:
  const Plan& plan_;
  const Frame* outer_;
  dnnl::stream& stream_;
  dnnl::engine engine_;  // stream_'s
  int threads_;
  const RunControl* control_;
  std::vector<core::Tensor> slots_;
  // A buffer this frame allocated; `capacity` bytes at owner.get().
  struct Buffer {
    size_t capacity;
    std::shared_ptr<const void> owner;
  };
  core::Tensor take_buffer(core::DType dtype, const core::Shape& shape);
  // Frees the pool's buffers and uncounts them.
  void drop_pool();
  std::vector<Buffer> owned_;  // handed out, maybe still in use
  std::vector<Buffer> pool_;   // free for reuse
  // The bytes of the buffers this frame and those nested in it hold,
  // against RunControl::max_bytes: the outermost frame's count.
  uint64_t held_bytes_ = 0;
  uint64_t* held_ = &held_bytes_;
  // What each step keeps between runs: its views of its operands
  // (KernelRun::views()) and its kernel's memo (KernelRun::memo()).
  struct StepState;
  std::unique_ptr<StepState[]> step_state_;
  // Declared after held_bytes_: their destructors uncount their buffers from it.
  std::vector<std::pair<const Plan*, std::unique_ptr<Frame>>> nested_;
  friend class StepRun;
};

}  // namespace hetero::cpu
