// Running one CPU kernel, or a whole text model, for the tests of the
// numeric ops (loss, spectral, linear algebra, RoiAlign, MaxUnpool, random,
// training ops): a node built by hand with its kernel from the driver's
// registry (KernelRegistry::builtin(), as a compiled model gets it) on the
// real oneDNN engine; models in ONNX's text syntax compiled for the real CPU
// device; tensor helpers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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
#include "tests/unit/dnnl_test_util.h"
#include "tests/unit/model_text.h"

namespace hetero::cpu::testing {

// A one-node graph: inputs are values in0.., outputs out0...; input dtypes
// and shapes are unknown at build time unless set.
struct KernelNode {
  core::Graph graph;
  core::Node* node = nullptr;

  KernelNode(const std::string& op_type, int64_t opset, size_t num_inputs, size_t num_outputs = 1,
             const std::string& domain = "") {
    node = graph.add_node(op_type, "n");
    node->opset = opset;
    node->domain = domain;
    for (size_t i = 0; i < num_inputs; ++i) graph.set_input(node, i, graph.add_value("in" + std::to_string(i)));
    for (size_t i = 0; i < num_outputs; ++i) graph.set_output(node, i, graph.add_value("out" + std::to_string(i)));
  }
  KernelNode(const KernelNode&) = delete;
  KernelNode& operator=(const KernelNode&) = delete;

  KernelNode& attr_int(const std::string& name, int64_t v) {
    return add(name, core::AttrType::Int, [&](core::Attribute& a) { a.i = v; });
  }
  KernelNode& attr_float(const std::string& name, float v) {
    return add(name, core::AttrType::Float, [&](core::Attribute& a) { a.f = v; });
  }
  KernelNode& attr_string(const std::string& name, const std::string& v) {
    return add(name, core::AttrType::String, [&](core::Attribute& a) { a.s = v; });
  }
  KernelNode& attr_ints(const std::string& name, std::vector<int64_t> v) {
    return add(name, core::AttrType::Ints, [&](core::Attribute& a) { a.ints = v; });
  }
  KernelNode& input_dtype(size_t i, core::DType dtype) {
    node->inputs.at(i)->dtype = dtype;
    return *this;
  }
  // The static shape the factory sees for input i.
  KernelNode& input_shape(size_t i, const core::Shape& shape) {
    std::vector<core::Dim> dims;
    for (int64_t d : shape) dims.push_back({d, {}});
    node->inputs.at(i)->shape = dims;
    return *this;
  }
  KernelNode& constant(size_t i, const core::Tensor& t) {
    node->inputs.at(i)->constant = t;
    node->inputs.at(i)->dtype = t.dtype();
    return *this;
  }
  KernelNode& omit_input(size_t i) {
    std::erase_if(node->inputs[i]->uses, [&](const core::Use& u) { return u.node == node; });
    node->inputs[i] = nullptr;
    return *this;
  }

  std::unique_ptr<Kernel> build() const {
    const KernelFactory* f = KernelRegistry::builtin().find(node->op_type, node->domain, node->opset);
    if (!f) fail(HETERO_NOT_SUPPORTED, "no kernel for " + node->op_type);
    KernelBuild b{*node, node->opset, test_engine(), {}};
    return (*f)(b);
  }
  // Builds the kernel and runs it on `inputs` (nullopt: omitted) with
  // `threads` threads; returns outputs 0..num_outputs-1.
  std::vector<core::Tensor> run(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs = 1,
                                int threads = 1) const {
    std::unique_ptr<Kernel> k = build();
    DnnlRun r(*node, std::move(inputs), num_outputs, threads);
    k->run(r);
    return std::move(r.outputs());
  }

 private:
  template <typename Set>
  KernelNode& add(const std::string& name, core::AttrType type, Set&& set) {
    core::Attribute a;
    a.name = name;
    a.type = type;
    set(a);
    node->attributes.push_back(std::move(a));
    return *this;
  }
};

template <typename T>
core::Tensor tensor(const std::vector<T>& values, const core::Shape& shape) {
  core::Tensor t = core::Tensor::allocate(core::DTypeOf<T>::value, shape);
  EXPECT_EQ(t.numel(), values.size());
  for (size_t i = 0; i < values.size() && i < t.numel(); ++i) t.data<T>()[i] = values[i];
  return t;
}
inline core::Tensor f32(const std::vector<float>& v, const core::Shape& shape) { return tensor<float>(v, shape); }
inline core::Tensor i64(const std::vector<int64_t>& v) { return tensor<int64_t>(v, {static_cast<int64_t>(v.size())}); }
inline core::Tensor scalar_i64(int64_t v) { return tensor<int64_t>({v}, {}); }

// Any float dtype's elements as double.
inline std::vector<double> doubles(const core::Tensor& t) {
  std::vector<double> v(t.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.as_double(i);
  return v;
}

inline std::vector<int64_t> ints(const core::Tensor& t) { return t.to_int64_vector(); }

// |a - b| <= atol + rtol * |b| elementwise, any float dtypes; names the first
// element that is not.
inline ::testing::AssertionResult near(const core::Tensor& a, const std::vector<double>& b, double atol,
                                       double rtol = 0) {
  if (a.numel() != b.size())
    return ::testing::AssertionFailure() << a.numel() << " values, expected " << b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    const double x = a.as_double(i);
    if (!(std::fabs(x - b[i]) <= atol + rtol * std::fabs(b[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << ", expected " << b[i];
  }
  return ::testing::AssertionSuccess();
}

// Expects `fn` to throw hetero::Error with `status` and every one of `parts`
// in its message.
template <class F>
void expect_error(F&& fn, hetero_status status, std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error was raised";
}

// The CPU device of the real driver, for whole models.
inline core::Runtime& runtime() {
  static core::Runtime rt;
  return rt;
}

// A text model compiled for CPU (with `config`) and run once on `inputs`;
// its outputs.
inline std::vector<core::Tensor> run_model(const char* text, const std::vector<core::Tensor>& inputs,
                                           const driver::Config& config = {}) {
  const auto model = test::model_from_text(text);
  auto compiled = runtime().compile(*model, "CPU", config);
  auto req = compiled->create_infer_request();
  for (size_t i = 0; i < inputs.size(); ++i) req->set_input(i, inputs[i]);
  req->infer();
  std::vector<core::Tensor> out;
  for (size_t i = 0; i < compiled->outputs().size(); ++i) out.push_back(req->output(i).clone());
  return out;
}

// Compiling the text model for CPU fails with `status` and `parts` (the
// node's name, what is wrong).
inline void expect_compile_error(const char* text, hetero_status status, std::initializer_list<std::string> parts) {
  expect_error(
      [&] {
        const auto model = test::model_from_text(text);
        runtime().compile(*model, "CPU");
      },
      status, parts);
}

}  // namespace hetero::cpu::testing
