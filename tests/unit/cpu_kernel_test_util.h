// Running single CPU kernels outside a plan, for kernel unit tests: a node
// built by hand, a KernelRun over plain tensors, and the built kernel.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu::testing {

class FakeRun final : public KernelRun {
 public:
  FakeRun(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs) {}

  const core::Node& node() const override { return node_; }
  size_t num_inputs() const override { return inputs_.size(); }
  const core::Tensor* input(size_t i) const override {
    return i < inputs_.size() && inputs_[i] ? &*inputs_[i] : nullptr;
  }
  size_t num_outputs() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return i < outputs_.size(); }
  core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) override {
    // Filled with a pattern so kernels that forget to write show up.
    outputs_.at(i) = core::Tensor::allocate(dtype, shape, false);
    std::memset(outputs_[i].raw(), 0x5a, outputs_[i].nbytes());
    return outputs_[i];
  }
  void set_output(size_t i, core::Tensor tensor) override { outputs_.at(i) = std::move(tensor); }
  dnnl::stream& stream() override { std::abort(); }
  int threads() const override { return 1; }
  const Frame& frame() const override { std::abort(); }

  std::vector<core::Tensor>& outputs() { return outputs_; }

 private:
  const core::Node& node_;
  std::vector<std::optional<core::Tensor>> inputs_;
  std::vector<core::Tensor> outputs_;
};

// A one-node graph whose inputs are values named in0.. (constants where
// given) and whose node has the given attributes.
struct TestNode {
  core::Graph graph;
  core::Node* node = nullptr;

  TestNode(const std::string& op_type, int64_t opset, size_t num_inputs, size_t num_outputs = 1) {
    node = graph.add_node(op_type, "n");
    node->opset = opset;
    for (size_t i = 0; i < num_inputs; ++i) graph.set_input(node, i, graph.add_value("in" + std::to_string(i)));
    for (size_t i = 0; i < num_outputs; ++i) graph.set_output(node, i, graph.add_value("out" + std::to_string(i)));
  }
  TestNode& attr_int(const std::string& name, int64_t v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Int;
    a.i = v;
    node->attributes.push_back(a);
    return *this;
  }
  TestNode& attr_float(const std::string& name, float v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Float;
    a.f = v;
    node->attributes.push_back(a);
    return *this;
  }
  TestNode& attr_string(const std::string& name, const std::string& v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::String;
    a.s = v;
    node->attributes.push_back(a);
    return *this;
  }
  TestNode& attr_ints(const std::string& name, std::vector<int64_t> v) {
    core::Attribute a;
    a.name = name;
    a.type = core::AttrType::Ints;
    a.ints = std::move(v);
    node->attributes.push_back(a);
    return *this;
  }
  TestNode& input_dtype(size_t i, core::DType dtype) {
    node->inputs.at(i)->dtype = dtype;
    return *this;
  }
};

// Builds the node's kernel from the registry and runs it once.
std::vector<core::Tensor> run_node(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs,
                                   size_t num_outputs = 1);
// Builds the kernel only (to test refusals).
std::unique_ptr<Kernel> build_kernel(const core::Node& node);

}  // namespace hetero::cpu::testing
