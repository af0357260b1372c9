// Running one CPU kernel outside a plan, for the kernel unit tests: a node
// built by hand in a graph of its own, its kernel from the driver's kernel
// list (KernelRegistry::builtin(), as a compiled model gets it), run on the
// real oneDNN engine and a stream with a chosen thread count; a small model
// in ONNX's text syntax compiled for the real CPU device; helpers to make and
// read tensors, and closeness and error checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/error.h"
#include "core/graph.h"
#include "core/runtime.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"
#include "tests/unit/expect_error.h"

namespace hetero::cpu::testing {

// The CPU engine every kernel test runs on.
dnnl::engine& test_engine();

// A one-node graph: inputs are values in0.., outputs out0...; input dtypes
// are unknown at build time (as for a subgraph's inputs) unless set.
struct KernelNode {
  core::Graph graph;
  core::Node* node = nullptr;

  KernelNode(const std::string& op_type, int64_t opset, size_t num_inputs, size_t num_outputs = 1,
             const std::string& domain = "");
  KernelNode(const KernelNode&) = delete;
  KernelNode& operator=(const KernelNode&) = delete;

  KernelNode& attr_int(const std::string& name, int64_t v);
  KernelNode& attr_float(const std::string& name, float v);
  KernelNode& attr_string(const std::string& name, const std::string& v);
  KernelNode& attr_ints(const std::string& name, std::vector<int64_t> v);
  KernelNode& attr_floats(const std::string& name, std::vector<float> v);
  KernelNode& attr_strings(const std::string& name, std::vector<std::string> v);
  // The dtype the factory sees for input i.
  KernelNode& input_dtype(size_t i, core::DType dtype);
  // The static shape the factory sees for input i.
  KernelNode& input_shape(size_t i, const core::Shape& shape);
  // Input i as a constant known at build time (weights).
  KernelNode& constant(size_t i, const core::Tensor& t);
  // Input i left out (an omitted optional input).
  KernelNode& omit_input(size_t i);

  // The kernel the driver's list builds for the node (throws its refusal).
  std::unique_ptr<Kernel> build() const;
  // Builds the kernel and runs it on `inputs` (nullopt: omitted) with
  // `threads` threads; returns outputs 0..num_outputs-1, the ones the run
  // wants. It runs twice, the second time reusing the kernel's per-shape
  // state, and adds a test failure when the second run's bits differ.
  std::vector<core::Tensor> run(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs = 1,
                                int threads = 1) const;
  // One run only: for kernels whose outputs differ from run to run (random
  // ops without a seed).
  std::vector<core::Tensor> run_once(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs = 1,
                                     int threads = 1) const;
  // One run, all outputs, counting the kernel's checkpoints
  // (drivers/cpu/checkpoint_blocks.h).
  std::vector<core::Tensor> run_counting_checkpoints(std::vector<std::optional<core::Tensor>> inputs,
                                                     size_t& checkpoints, int threads) const;
};

// Runs a kernel built elsewhere (a kernel's own path chosen by the test) on
// `node` once, or twice as KernelNode::run does.
// `checkpoints`, when given, counts the kernel's checkpoints.
std::vector<core::Tensor> run_kernel(Kernel& kernel, const core::Node& node,
                                     std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads,
                                     size_t* checkpoints = nullptr);
std::vector<core::Tensor> run_twice(Kernel& kernel, const core::Node& node,
                                    std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads);

// ---- Whole models.

// The real runtime with the real CPU driver.
core::Runtime& test_runtime();
// A model in ONNX's text syntax compiled for CPU (with `config`) and run once
// on `inputs`; its outputs.
std::vector<core::Tensor> run_model(const char* text, const std::vector<core::Tensor>& inputs,
                                    const driver::Config& config = {});
// Op counts ("Conv", "hetero.cpu.FusedConv") of the graph the CPU driver's
// passes (graph_passes.h) make of a model in ONNX's text syntax.
std::map<std::string, int> optimized_ops(const std::string& text);

// ---- Tensors.

template <typename T>
core::Tensor tensor(const std::vector<T>& values, const core::Shape& shape) {
  core::Tensor t = core::Tensor::allocate(core::DTypeOf<T>::value, shape);
  EXPECT_EQ(t.numel(), values.size());
  for (size_t i = 0; i < values.size() && i < t.numel(); ++i) t.data<T>()[i] = values[i];
  return t;
}
inline core::Tensor f32(const std::vector<float>& v, const core::Shape& shape) { return tensor<float>(v, shape); }
// A 1-D int64 tensor.
inline core::Tensor i64(const std::vector<int64_t>& v) {
  return tensor<int64_t>(v, {static_cast<int64_t>(v.size())});
}
inline core::Tensor scalar_i64(int64_t v) { return tensor<int64_t>({v}, {}); }
// A float32 tensor of `shape` holding 0, 1, 2, ... (exact in float).
core::Tensor iota_f32(const core::Shape& shape);
// Uniform float32 values in [lo, hi).
core::Tensor random_f32(const core::Shape& shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f);
// The same from a fresh generator seeded with `seed`.
core::Tensor random_f32(const core::Shape& shape, uint32_t seed, float lo, float hi);

// The elements of `t`, which must be of dtype T.
template <typename T>
std::vector<T> values(const core::Tensor& t) {
  EXPECT_EQ(t.dtype(), core::DTypeOf<T>::value);
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
// Any dtype's elements as float or int64.
std::vector<float> floats(const core::Tensor& t);
std::vector<double> doubles(const core::Tensor& t);
inline std::vector<int64_t> ints(const core::Tensor& t) { return t.to_int64_vector(); }

// ---- Indexing.

// The multi-index of flat (row-major) position i in `shape`, and back.
std::vector<int64_t> unravel(int64_t i, const core::Shape& shape);
int64_t ravel(const std::vector<int64_t>& idx, const core::Shape& shape);

// ---- Checks.

// Float32 tensors of one shape with |a - b| <= atol + rtol * |b| elementwise;
// the failure names the first element that is not.
::testing::AssertionResult all_close(const core::Tensor& a, const core::Tensor& b, float atol = 1e-4f,
                                     float rtol = 1e-4f);

// Any float dtype's elements within atol + rtol * |b| of `b`; names the
// first element that is not.
::testing::AssertionResult near(const core::Tensor& a, const std::vector<double>& b, double atol, double rtol = 0);

using hetero::test::expect_error;

// Compiling the text model for CPU fails with `status` and `parts` (the
// node's name, what is wrong).
void expect_compile_error(const char* text, hetero_status status, std::initializer_list<std::string> parts);

// Expects `fn` to throw hetero::Failure with `status`.
template <class F>
void expect_status(hetero_status status, F&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error was raised";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), status) << e.what();
  }
}

}  // namespace hetero::cpu::testing
