// Running the CPU driver's shape / data-movement / misc kernels one node at a
// time in unit tests: a hand-built node, a KernelRun over plain tensors with a
// chosen thread count (so the OpenMP paths run too), and helpers to make and
// read tensors.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu::testing {

class ShapeRun final : public KernelRun {
 public:
  ShapeRun(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), threads_(threads) {}

  const core::Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const core::Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i] ? &*inputs_[i] : nullptr;
  }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return i < outputs_.size(); }
  core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) override {
    // A fill pattern, so that elements a kernel forgets to write show up.
    outputs_.at(i) = core::Tensor::allocate(dtype, shape, false);
    std::memset(outputs_[i].raw(), 0x5a, outputs_[i].nbytes());
    return outputs_[i];
  }
  void set_output(size_t i, core::Tensor tensor) override { outputs_.at(i) = std::move(tensor); }
  dnnl::stream& stream() override { std::abort(); }
  int threads() const override { return threads_; }
  const Frame& frame() const override { std::abort(); }

  std::vector<core::Tensor>& outputs() { return outputs_; }

 private:
  const core::Node& node_;
  std::vector<std::optional<core::Tensor>> inputs_;
  std::vector<core::Tensor> outputs_;
  int threads_;
};

// The kernels under test, registered by their families alone.
inline const KernelRegistry& shape_registry() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    register_shape_kernels(reg);
    register_data_movement_kernels(reg);
    register_misc_kernels(reg);
    return reg;
  }();
  return r;
}

// A one-node graph with inputs in0.. and outputs out0...
struct OpNode {
  core::Graph graph;
  core::Node* node = nullptr;

  OpNode(const std::string& op_type, int64_t opset, size_t num_inputs, size_t num_outputs = 1) {
    node = graph.add_node(op_type, "n");
    node->opset = opset;
    for (size_t i = 0; i < num_inputs; ++i) graph.set_input(node, i, graph.add_value("in" + std::to_string(i)));
    for (size_t i = 0; i < num_outputs; ++i) graph.set_output(node, i, graph.add_value("out" + std::to_string(i)));
  }
  OpNode& attr(const std::string& name, int64_t v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Int;
    a.i = v;
    node->attributes.push_back(a);
    return *this;
  }
  OpNode& attr(const std::string& name, float v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Float;
    a.f = v;
    node->attributes.push_back(a);
    return *this;
  }
  OpNode& attr(const std::string& name, const std::string& v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::String;
    a.s = v;
    node->attributes.push_back(a);
    return *this;
  }
  OpNode& attr(const std::string& name, std::vector<int64_t> v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Ints;
    a.ints = std::move(v);
    node->attributes.push_back(a);
    return *this;
  }

  std::unique_ptr<Kernel> build() const {
    const KernelFactory* f = shape_registry().find(node->op_type, node->domain, node->opset);
    if (!f) fail(HETERO_NOT_SUPPORTED, "no kernel for " + node->op_type);
    // These kernels never touch the oneDNN engine.
    alignas(64) static char fake_engine[256];
    KernelBuild build{*node, node->opset, *reinterpret_cast<dnnl::engine*>(fake_engine), {}};
    return (*f)(build);
  }
  std::vector<core::Tensor> run(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs = 1,
                                int threads = 1) const {
    std::unique_ptr<Kernel> k = build();
    ShapeRun r(*node, std::move(inputs), num_outputs, threads);
    k->run(r);
    return std::move(r.outputs());
  }
};

inline core::Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return core::Tensor::from_vector<int64_t>(v, {n});
}

inline core::Tensor f32(std::vector<float> v, core::Shape shape) { return core::Tensor::from_vector<float>(v, shape); }

// A float32 tensor of `shape` holding 0, 1, 2, ... (exact in float).
inline core::Tensor iota_f32(const core::Shape& shape) {
  core::Tensor t = core::Tensor::allocate(core::DType::F32, shape);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

inline core::Tensor random_f32(const core::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  core::Tensor t = core::Tensor::allocate(core::DType::F32, shape);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline std::vector<float> floats(const core::Tensor& t) {
  std::vector<float> v(t.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.as_double(i));
  return v;
}

inline std::vector<int64_t> ints(const core::Tensor& t) { return t.to_int64_vector(); }

// Expects `fn` to throw hetero::Error with `status`.
template <class F>
void expect_status(hetero_status status, F&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error was raised";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
  }
}

}  // namespace hetero::cpu::testing
