// Program: program nodes made from the topology's primitives, the passes that
// transform them (fusion, weight reorders, layouts), the kernel selected for
// each, and the kernels compiled in batches (the second of the three levels
// in drivers/gpu/README.md). A program is built once per compiled model and
// shared by every network (stream) made from it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/driver.h"
#include "core/graph.h"
#include "drivers/gpu/device_api.h"
#include "drivers/gpu/kernel_variants.h"
#include "drivers/gpu/network_plan.h"
#include "drivers/gpu/topology.h"

namespace hetero::gpu {

// An elementwise op applied to a kernel's result before it is stored.
struct PostOp {
  enum class Kind : uint8_t { Unary, Binary };
  Kind kind = Kind::Unary;
  std::string op;           // Relu, Clip, ..., Add, Mul, ...
  float alpha = 0, beta = 0;
  std::string tensor;       // Binary: the other operand (value id)
  bool tensor_first = false;  // Binary: the other operand is on the left (Sub, Div, Pow)
};

// One launch of a kernel, or a call of the device's GEMM library (then
// `kernel` is empty and the arguments are a, b, c): its arguments as value
// ids, in kernel order.
struct Launch {
  std::string kernel;
  std::vector<std::string> args;
  size_t output_arg = 0;  // the argument it writes
  Range range;
  std::optional<LibraryGemm> gemm;
};

struct ProgramNode {
  Primitive prim;
  std::vector<PostOp> post_ops;
  std::vector<PostOp> hidden_ops;  // SqueezeExcite: the first convolution's (unary) post-ops
  std::string layout = "bfyx";  // plain row-major NCHW: the only layout the kernels take
  bool weights_transposed = false;  // MatMul: B is stored [N, K] (reordered once at compile time)
  KernelVariant variant;            // Conv, MatMul: chosen by the tuner or by default
  std::vector<Launch> launches;     // set by kernel selection
};

// The program while it is built: nodes in execution order and the values
// they use.
struct ProgramGraph {
  std::vector<ProgramNode> nodes;
  std::map<std::string, core::Shape> shapes;
  std::map<std::string, core::DType> dtypes;  // values other than float32
  std::map<std::string, core::Tensor> constants;
  std::vector<std::string> inputs, outputs;
  core::DType dtype(const std::string& v) const { return value_dtype(dtypes, constants, v); }
};

struct BuildOptions {
  bool optimize = true;       // fusion, weight reorder passes and tiled kernels
  size_t kernels_per_batch = 8;  // kernels compiled together in one device program
  Tuning tuning = Tuning::Off;   // time candidate variants of the heavy nodes on the device
};

// The compiled program: plan, constants on the device, built executables.
struct CompiledProgram {
  std::shared_ptr<Device> device;
  NetworkPlan plan;
  std::vector<std::shared_ptr<Buffer>> constant_buffers;  // plan.constants, uploaded once
  std::vector<std::shared_ptr<Executable>> executables;    // plan.programs
  std::vector<driver::Port> inputs, outputs;
};

ProgramGraph init_program(Topology topology);

namespace passes {
// Folds a per-channel constant Mul/Add after a Conv into its weights and bias.
void fold_channel_constants(ProgramGraph& g);
// Moves single-use activations and elementwise ops into the node before them.
void fuse_post_ops(ProgramGraph& g);
// A squeeze-and-excitation block's GlobalAveragePool and the two 1x1
// convolutions after it (MobileNetV3, EfficientNet) become one
// SqueezeExcite node: one launch instead of three. Runs after fuse_post_ops,
// whose activations it takes along.
void fuse_squeeze_excite(ProgramGraph& g);
// Stores constant weights in the layout each node's kernel variant reads:
// MatMul B transposed ([N, K]) for the plain kernel, so that each output reads
// both operands contiguously, and as [K, N] for gemm.cl and the GEMM library;
// convolution weights [GROUPS][ICG][KH][KW][OCG rounded up] for
// conv_channel.cl.
void reorder_weights(ProgramGraph& g);
// Every node keeps the plain layout; recorded so that a device-specific
// layout has a place to go.
void choose_layouts(ProgramGraph& g);
}  // namespace passes

// Kernel selection: the launches of every node, and the source of every
// kernel they name (name → code), deduplicated by content. A tiled launch
// whose variant leaves its work-group size open gets at least `min_groups`
// groups, or the runtime's choice with 0.
std::map<std::string, std::string> select_kernels(ProgramGraph& g, size_t max_work_group, size_t min_groups = 0);
// The same for `device`: its work-group limit and min_work_groups().
std::map<std::string, std::string> select_kernels(ProgramGraph& g, const Device& device);

// Builds a model's program on `device`: topology, passes, variant choice
// (tuning), kernel selection, batch compilation, memory plan. NOT_SUPPORTED
// naming the node when a node cannot run; OpenCondition at an If whose
// condition the host works out and `choices` does not settle
// (program_set.h builds one program per outcome).
std::shared_ptr<CompiledProgram> build_program(const core::Model& model, std::shared_ptr<Device> device,
                                               const BuildOptions& options, const ConditionChoices& choices = {});
// The same from the program nodes on (the ports are left empty): what a
// benchmark or the tuner uses for a part of a model.
std::shared_ptr<CompiledProgram> build_program(ProgramGraph g, std::shared_ptr<Device> device,
                                               const BuildOptions& options);

struct BuiltKernels;
// A program from `g`, whose nodes have their launches, and `built`, which
// holds every kernel they name: the plan, and the constants uploaded.
std::shared_ptr<CompiledProgram> assemble_program(const ProgramGraph& g, std::shared_ptr<Device> device,
                                                  const BuiltKernels& built);

// Export and import (plan_codec.cpp): the plan, constants and program
// binaries; import compiles no source.
std::vector<uint8_t> export_program(const CompiledProgram& program);
std::shared_ptr<CompiledProgram> import_program(std::span<const uint8_t> bytes, std::shared_ptr<Device> device);

}  // namespace hetero::gpu
