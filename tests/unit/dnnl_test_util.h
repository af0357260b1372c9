// Running the CPU driver's oneDNN kernels outside a plan, for their unit
// tests: a KernelRun with a real engine and stream, random tensors, a node
// builder and a closeness check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu::testing {

inline dnnl::engine& test_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

class DnnlRun final : public KernelRun {
 public:
  DnnlRun(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs,
          int threads = 2)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), stream_(test_engine()), threads_(threads) {}

  const core::Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const core::Tensor* input(size_t i) const override { return i < inputs_.size() && inputs_[i] ? &*inputs_[i] : nullptr; }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return i < outputs_.size(); }
  core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) override {
    // A NaN pattern, so that elements a kernel forgets to write show up.
    outputs_.at(i) = core::Tensor::allocate(dtype, shape, false);
    std::memset(outputs_[i].raw(), 0xff, outputs_[i].nbytes());
    return outputs_[i];
  }
  void set_output(size_t i, core::Tensor tensor) override { outputs_.at(i) = std::move(tensor); }
  dnnl::stream& stream() override { return stream_; }
  int threads() const override { return threads_; }
  const Frame& frame() const override { std::abort(); }
  std::vector<core::Tensor>& outputs() { return outputs_; }

 private:
  const core::Node& node_;
  std::vector<std::optional<core::Tensor>> inputs_;
  std::vector<core::Tensor> outputs_;
  dnnl::stream stream_;
  int threads_;
};

// A node in its own graph; inputs are values in0.., outputs out0...
struct NodeBuilder {
  core::Graph graph;
  core::Node* node;
  NodeBuilder(const std::string& op_type, size_t num_inputs, size_t num_outputs = 1, int64_t opset = 17,
              const std::string& domain = "") {
    node = graph.add_node(op_type, "n");
    node->opset = opset;
    node->domain = domain;
    for (size_t i = 0; i < num_inputs; ++i) {
      core::Value* v = graph.add_value("in" + std::to_string(i));
      v->dtype = core::DType::F32;
      graph.set_input(node, i, v);
    }
    for (size_t i = 0; i < num_outputs; ++i) graph.set_output(node, i, graph.add_value("out" + std::to_string(i)));
  }
  NodeBuilder& omit_input(size_t i) {
    std::erase_if(node->inputs[i]->uses, [&](const core::Use& u) { return u.node == node; });
    node->inputs[i] = nullptr;
    return *this;
  }
  NodeBuilder& constant(size_t i, const core::Tensor& t) {
    node->inputs[i]->constant = t;
    node->inputs[i]->dtype = t.dtype();
    return *this;
  }
  NodeBuilder& i(const std::string& name, int64_t v) { return add(name, core::AttrType::Int, [&](auto& a) { a.i = v; }); }
  NodeBuilder& f(const std::string& name, float v) { return add(name, core::AttrType::Float, [&](auto& a) { a.f = v; }); }
  NodeBuilder& s(const std::string& name, const std::string& v) {
    return add(name, core::AttrType::String, [&](auto& a) { a.s = v; });
  }
  NodeBuilder& ints(const std::string& name, std::vector<int64_t> v) {
    return add(name, core::AttrType::Ints, [&](auto& a) { a.ints = v; });
  }
  NodeBuilder& floats(const std::string& name, std::vector<float> v) {
    return add(name, core::AttrType::Floats, [&](auto& a) { a.floats = v; });
  }
  NodeBuilder& strings(const std::string& name, std::vector<std::string> v) {
    return add(name, core::AttrType::Strings, [&](auto& a) { a.strings = v; });
  }

 private:
  template <typename Set>
  NodeBuilder& add(const std::string& name, core::AttrType type, Set&& set) {
    core::Attribute a;
    a.name = name;
    a.type = type;
    set(a);
    node->attributes.push_back(std::move(a));
    return *this;
  }
};

// Builds the node's kernel from the CPU driver's registry and runs it.
std::vector<core::Tensor> run_dnnl_node(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs,
                                        size_t num_outputs = 1, int threads = 2);

inline core::Tensor random_tensor(core::Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  core::Tensor t = core::Tensor::allocate(core::DType::F32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Elementwise |a - b| <= atol + rtol * |b|, reporting the first mismatch.
inline ::testing::AssertionResult all_close(const core::Tensor& a, const core::Tensor& b, float atol = 1e-4f,
                                            float rtol = 1e-4f) {
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure() << "shape " << core::shape_to_string(a.shape()) << " vs "
                                         << core::shape_to_string(b.shape());
  for (size_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace hetero::cpu::testing
