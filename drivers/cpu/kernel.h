// The CPU driver's kernel interface.
//
// A kernel is built once per node at compile time by its factory (which may
// refuse the node with hetero::Error(HETERO_NOT_SUPPORTED, reason); query()
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
  virtual int threads() const = 0;
  // The frame running this kernel, for kernels that run subgraphs.
  virtual const Frame& frame() const = 0;
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

class KernelRegistry {
 public:
  // `domain` is "" for ai.onnx. `min_opset`..`max_opset` bound the opset
  // versions the factory handles (inclusive).
  void add(const std::string& op_type, KernelFactory factory, const std::string& domain = "",
           int64_t min_opset = 1, int64_t max_opset = 1000);
  // Null when no kernel handles this op at this opset.
  const KernelFactory* find(const std::string& op_type, const std::string& domain, int64_t opset) const;
  std::vector<std::string> op_types() const;

  // All the CPU driver's kernels.
  static const KernelRegistry& builtin();

 private:
  struct Entry {
    std::string op_type, domain;
    int64_t min_opset, max_opset;
    KernelFactory factory;
  };
  std::vector<Entry> entries_;
};

// Each kernel family registers itself here; kernel_registry.cpp calls them all.
void register_elementwise_kernels(KernelRegistry& r);
void register_unary_kernels(KernelRegistry& r);
void register_cast_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);
void register_reduction_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_data_movement_kernels(KernelRegistry& r);
void register_dnnl_kernels(KernelRegistry& r);
void register_nn_kernels(KernelRegistry& r);
void register_control_flow_kernels(KernelRegistry& r);
void register_misc_kernels(KernelRegistry& r);
void register_rnn_kernels(KernelRegistry& r);
void register_quantization_kernels(KernelRegistry& r);
// The rest of the ONNX op set, a subject per file.
void register_spectral_kernels(KernelRegistry& r);  // kernels_spectral.cpp: DFT, STFT, MelWeightMatrix
void register_loss_kernels(KernelRegistry& r);      // kernels_loss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_linalg_kernels(KernelRegistry& r);    // kernels_linalg.cpp: Det
void register_roi_align_kernels(KernelRegistry& r); // kernels_roi_align.cpp: RoiAlign
void register_unpool_kernels(KernelRegistry& r);    // kernels_unpool.cpp: MaxUnpool
void register_random_kernels(KernelRegistry& r);    // kernels_random.cpp: Random*, Bernoulli, Dropout
void register_optimizer_kernels(KernelRegistry& r); // kernels_optimizers.cpp: Adagrad, Adam, Momentum
void register_tfidf_kernels(KernelRegistry& r);     // kernels_tfidf.cpp: TfIdfVectorizer

}  // namespace hetero::cpu
