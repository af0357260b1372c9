// The CPU driver's kernel interface.
//
// A kernel is built once per node at compile time by its factory (which may
// refuse the node with hetero::Failure(HETERO_NOT_SUPPORTED, reason); query()
// reports that reason) and run at every inference. Shapes may change between
// inferences: a kernel computes its output shapes from its inputs on each run
// and caches whatever depends on them (oneDNN primitives) per input shape.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace dnnl {
class engine;
class stream;
}  // namespace dnnl

namespace hetero::cpu {

class Plan;
class Frame;
class MemoryViews;

// What a kernel keeps from one run of its node to the next in the same
// frame, derived from the inputs' shapes (a broadcast's loops) and reused
// while they stay the same. A frame runs one inference at a time, so a memo,
// unlike the kernel, is never shared by requests running at once. Kernels
// derive their own type from this.
class KernelMemo {
 public:
  virtual ~KernelMemo() = default;
};

// What a factory may look at: the node, and what is known before any input
// arrives (static dtypes/shapes, constant inputs such as weights).
struct KernelBuild {
  const core::Node& node;
  int64_t opset;  // version of the node's domain the model imports
  dnnl::engine& engine;
  // Compiles a subgraph (If/Loop/Scan body) with the same kernels.
  using Compiler = std::function<std::shared_ptr<Plan>(const core::Graph&)>;
  Compiler compile_subgraph;

  // Input i's constant value (initializer or folded), or null.
  const core::Tensor* constant_input(size_t i) const {
    const core::Value* v = node.input(i);
    return v && v->constant ? &*v->constant : nullptr;
  }
  // Input i's dtype when known (Undefined otherwise or when absent).
  core::DType input_dtype(size_t i) const {
    const core::Value* v = node.input(i);
    return v ? v->dtype : core::DType::Undefined;
  }
  [[noreturn]] void unsupported(const std::string& reason) const {
    fail(HETERO_NOT_SUPPORTED, node.describe() + ": " + reason);
  }
  // The node breaks ONNX's rules (an attribute out of range, static shapes
  // that cannot fit): INVALID_MODEL naming the node.
  [[noreturn]] void invalid(const std::string& reason) const {
    fail(HETERO_INVALID_MODEL, node.describe() + ": " + reason);
  }
  // Input i's static dims when its rank is known (a dim may be unknown).
  const std::vector<core::Dim>* input_dims(size_t i) const {
    const core::Value* v = node.input(i);
    return v && v->shape ? &*v->shape : nullptr;
  }
};

// One execution of one kernel.
class KernelRun {
 public:
  virtual ~KernelRun() = default;
  virtual const core::Node& node() const = 0;
  virtual size_t num_inputs() const = 0;
  // Input i, or null for an omitted optional input (or i past the end).
  virtual const core::Tensor* input(size_t i) const = 0;
  virtual size_t num_outputs() const = 0;
  // True when output i is consumed by someone (an omitted optional output is not).
  virtual bool output_wanted(size_t i) const = 0;
  // Output i in memory the kernel writes; contents are unspecified (reused
  // from an earlier run when shape and dtype allow).
  virtual core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) = 0;
  // Output i as an existing tensor (views such as Reshape, Identity).
  virtual void set_output(size_t i, core::Tensor tensor) = 0;
  virtual dnnl::stream& stream() = 0;
  // The stream's engine (dnnl::stream::get_engine() allocates a handle each call).
  virtual const dnnl::engine& engine() const = 0;
  virtual int threads() const = 0;
  // Whether a loop `big` enough to split runs on the team (parallel_for in
  // checkpoint_blocks.h): never on a team of one. libgomp builds a team even
  // for one thread, and ends it with a futex wake-up once the thread has had
  // helpers: a system call per node, 10-20 us on a virtual machine, more
  // than a small node's whole work (the melspectrogram paid four per
  // inference).
  bool parallel(bool big) const { return big && threads() > 1; }
  // The frame in which this kernel runs its subgraph `body` (If, Loop, Scan),
  // nested in the frame running the kernel. It is kept with that frame for
  // the next inference, as the frame keeps its own buffers (Frame::nested).
  virtual Frame& body_frame(const Plan& body) = 0;
  // What the frame does between two nodes (RunControl::at_node_boundary):
  // stops a cancelled inference (throws CANCELLED), and runs waiting work of
  // higher priority on this thread first. A kernel whose one node would run
  // for long calls it between parts of its work, holding nothing that the
  // work run meanwhile could need.
  virtual void checkpoint() = 0;
  // Working memory a kernel keeps across its checkpoints: `bytes`, 64-byte
  // aligned, freed when the tensor is dropped, and counted against the
  // inference's memory bound (the per-thread scratch buffers of dnnl_util.h
  // are not: work run at a checkpoint on this thread reuses them).
  virtual core::Tensor workspace(size_t bytes) = 0;
  // This node's views of its operands for its oneDNN primitives, kept with
  // the frame between runs (MemoryViews, dnnl_util.h).
  virtual MemoryViews& views() = 0;
  // This node's memo in the frame, kept between runs like views(); null
  // until the kernel keeps one.
  virtual std::unique_ptr<KernelMemo>& memo() = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelRun& run) = 0;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelBuild&)>;

// A kernel from a plain function, for stateless ops.
class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(std::function<void(KernelRun&)> fn) : fn_(std::move(fn)) {}
  void run(KernelRun& r) override { fn_(r); }

 private:
  std::function<void(KernelRun&)> fn_;
};

// The domain of the nodes the CPU driver's graph passes create (fused and
// channels-last forms); "" is ai.onnx.
inline constexpr const char* kCpuDomain = "hetero.cpu";

// Which kernel factory handles a node: the CPU driver's kernels by (op type,
// domain, opset range). Each (op type, domain, opset) has at most one
// factory: add() refuses a registration that overlaps an earlier one, so the
// order of registration never decides anything. kernel_list.cpp holds the
// driver's whole list and says how a node's kernel is chosen.
class KernelRegistry {
 public:
  // `domain` is "" for ai.onnx. `min_opset`..`max_opset` bound the opset
  // versions the factory handles (inclusive). Fails with DRIVER_ERROR naming
  // both when the op already has a factory for one of those opsets.
  void add(const std::string& op_type, KernelFactory factory, const std::string& domain = "",
           int64_t min_opset = 1, int64_t max_opset = kLatestOpset);
  // Null when no kernel handles this op at this opset.
  const KernelFactory* find(const std::string& op_type, const std::string& domain, int64_t opset) const;

  // All the CPU driver's kernels (kernel_list.cpp).
  static const KernelRegistry& builtin();

  // No opset bound above.
  static constexpr int64_t kLatestOpset = 1000;

 private:
  struct Entry {
    std::string op_type, domain;
    int64_t min_opset, max_opset;
    KernelFactory factory;
  };
  std::vector<Entry> entries_;
};

}  // namespace hetero::cpu
