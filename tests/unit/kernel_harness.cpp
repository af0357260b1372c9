#include "tests/unit/kernel_harness.h"

#include <cstring>

#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_passes.h"
#include "tests/unit/model_text.h"

namespace hetero::cpu::testing {

namespace {

// One run of one kernel over tensors the test holds.
class TestRun final : public KernelRun {
 public:
  TestRun(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), stream_(test_engine()), threads_(threads) {}

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
  dnnl::stream& stream() override { return stream_; }
  const dnnl::engine& engine() const override { return test_engine(); }
  int threads() const override { return threads_; }
  // Subgraph kernels (If, Loop, Scan) run through real plans instead
  // (test_cpu_control_flow.cpp).
  Frame& body_frame(const Plan&) override { std::abort(); }
  void checkpoint() override { ++checkpoints_; }
  core::Tensor workspace(size_t bytes) override {
    return core::Tensor::allocate(core::DType::U8, {int64_t(bytes)}, false);
  }
  MemoryViews& views() override { return views_; }
  std::unique_ptr<KernelMemo>& memo() override { return memo_; }

  std::vector<core::Tensor>& outputs() { return outputs_; }
  size_t checkpoints() const { return checkpoints_; }

 private:
  const core::Node& node_;
  std::vector<std::optional<core::Tensor>> inputs_;
  std::vector<core::Tensor> outputs_;
  dnnl::stream stream_;
  int threads_;
  size_t checkpoints_ = 0;
  MemoryViews views_;
  std::unique_ptr<KernelMemo> memo_;
};

core::Attribute& add_attr(core::Node& node, const std::string& name, core::AttrType type) {
  core::Attribute a;
  a.name = name;
  a.type = type;
  node.attributes.push_back(std::move(a));
  return node.attributes.back();
}

}  // namespace

dnnl::engine& test_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

KernelNode::KernelNode(const std::string& op_type, int64_t opset, size_t num_inputs, size_t num_outputs,
                       const std::string& domain) {
  node = graph.add_node(op_type, "n");
  node->opset = opset;
  node->domain = domain;
  for (size_t i = 0; i < num_inputs; ++i) graph.set_input(node, i, graph.add_value("in" + std::to_string(i)));
  for (size_t i = 0; i < num_outputs; ++i) graph.set_output(node, i, graph.add_value("out" + std::to_string(i)));
}

KernelNode& KernelNode::attr_int(const std::string& name, int64_t v) {
  add_attr(*node, name, core::AttrType::Int).i = v;
  return *this;
}
KernelNode& KernelNode::attr_float(const std::string& name, float v) {
  add_attr(*node, name, core::AttrType::Float).f = v;
  return *this;
}
KernelNode& KernelNode::attr_string(const std::string& name, const std::string& v) {
  add_attr(*node, name, core::AttrType::String).s = v;
  return *this;
}
KernelNode& KernelNode::attr_ints(const std::string& name, std::vector<int64_t> v) {
  add_attr(*node, name, core::AttrType::Ints).ints = std::move(v);
  return *this;
}
KernelNode& KernelNode::attr_floats(const std::string& name, std::vector<float> v) {
  add_attr(*node, name, core::AttrType::Floats).floats = std::move(v);
  return *this;
}
KernelNode& KernelNode::attr_strings(const std::string& name, std::vector<std::string> v) {
  add_attr(*node, name, core::AttrType::Strings).strings = std::move(v);
  return *this;
}

KernelNode& KernelNode::input_dtype(size_t i, core::DType dtype) {
  node->inputs.at(i)->dtype = dtype;
  return *this;
}

KernelNode& KernelNode::input_shape(size_t i, const core::Shape& shape) {
  std::vector<core::Dim> dims;
  for (int64_t d : shape) dims.push_back({d, {}});
  node->inputs.at(i)->shape = dims;
  return *this;
}

KernelNode& KernelNode::constant(size_t i, const core::Tensor& t) {
  node->inputs.at(i)->constant = t;
  node->inputs[i]->dtype = t.dtype();
  return *this;
}

KernelNode& KernelNode::omit_input(size_t i) {
  std::erase_if(node->inputs.at(i)->uses, [&](const core::Use& u) { return u.node == node; });
  node->inputs[i] = nullptr;
  return *this;
}

std::unique_ptr<Kernel> KernelNode::build() const {
  const KernelFactory* f = KernelRegistry::builtin().find(node->op_type, node->domain, node->opset);
  if (!f) fail(HETERO_NOT_SUPPORTED, "no kernel for " + node->op_type);
  KernelBuild build{*node, node->opset, test_engine(), {}};
  return (*f)(build);
}

std::vector<core::Tensor> KernelNode::run(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs,
                                          int threads) const {
  std::unique_ptr<Kernel> k = build();
  return run_twice(*k, *node, std::move(inputs), num_outputs, threads);
}

std::vector<core::Tensor> KernelNode::run_once(std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs,
                                               int threads) const {
  std::unique_ptr<Kernel> k = build();
  return run_kernel(*k, *node, std::move(inputs), num_outputs, threads);
}

std::vector<core::Tensor> KernelNode::run_counting_checkpoints(std::vector<std::optional<core::Tensor>> inputs,
                                                               size_t& checkpoints, int threads) const {
  std::unique_ptr<Kernel> k = build();
  return run_kernel(*k, *node, std::move(inputs), node->outputs.size(), threads, &checkpoints);
}

std::vector<core::Tensor> run_kernel(Kernel& kernel, const core::Node& node,
                                     std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads,
                                     size_t* checkpoints) {
  TestRun r(node, std::move(inputs), num_outputs, threads);
  kernel.run(r);
  if (checkpoints) *checkpoints = r.checkpoints();
  return std::move(r.outputs());
}

std::vector<core::Tensor> run_twice(Kernel& kernel, const core::Node& node,
                                    std::vector<std::optional<core::Tensor>> inputs, size_t num_outputs, int threads) {
  TestRun first(node, inputs, num_outputs, threads);
  kernel.run(first);
  TestRun again(node, std::move(inputs), num_outputs, threads);
  kernel.run(again);
  for (size_t i = 0; i < num_outputs; ++i) {
    const core::Tensor &a = first.outputs()[i], &b = again.outputs()[i];
    if (a.empty()) {
      ADD_FAILURE() << node.describe() << ": output " << i << " was not written";
    } else if (a.dtype() != b.dtype() || a.shape() != b.shape() ||
               (a.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0)) {
      ADD_FAILURE() << node.describe() << ": a second run differs in output " << i;
    }
  }
  return std::move(first.outputs());
}

core::Runtime& test_runtime() {
  static core::Runtime runtime;
  return runtime;
}

std::vector<core::Tensor> run_model(const char* text, const std::vector<core::Tensor>& inputs,
                                    const driver::Config& config) {
  const auto model = test::model_from_text(text);
  auto compiled = test_runtime().compile(*model, "CPU", config);
  auto request = compiled->create_infer_request();
  for (size_t i = 0; i < inputs.size(); ++i) request->set_input(i, inputs[i]);
  request->infer();
  std::vector<core::Tensor> out;
  for (size_t i = 0; i < compiled->outputs().size(); ++i) out.push_back(request->output(i).clone());
  return out;
}

std::map<std::string, int> optimized_ops(const std::string& text) {
  auto model = test::model_from_text(text.c_str());
  optimize_graph(*model);
  std::map<std::string, int> ops;
  for (const auto& n : model->graph.nodes()) ++ops[(n->domain.empty() ? "" : n->domain + ".") + n->op_type];
  return ops;
}

void expect_compile_error(const char* text, hetero_status status, std::initializer_list<std::string> parts) {
  expect_error(
      [&] {
        const auto model = test::model_from_text(text);
        test_runtime().compile(*model, "CPU");
      },
      status, parts);
}

core::Tensor iota_f32(const core::Shape& shape) {
  core::Tensor t = core::Tensor::allocate(core::DType::F32, shape);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

core::Tensor random_f32(const core::Shape& shape, std::mt19937& rng, float lo, float hi) {
  core::Tensor t = core::Tensor::allocate(core::DType::F32, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

core::Tensor random_f32(const core::Shape& shape, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  return random_f32(shape, rng, lo, hi);
}

std::vector<float> floats(const core::Tensor& t) {
  std::vector<float> v(t.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.as_double(i));
  return v;
}

std::vector<double> doubles(const core::Tensor& t) {
  std::vector<double> v(t.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.as_double(i);
  return v;
}

::testing::AssertionResult near(const core::Tensor& a, const std::vector<double>& b, double atol, double rtol) {
  if (a.numel() != b.size()) return ::testing::AssertionFailure() << a.numel() << " values, expected " << b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    const double x = a.as_double(i);
    if (!(std::fabs(x - b[i]) <= atol + rtol * std::fabs(b[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << ", expected " << b[i];
  }
  return ::testing::AssertionSuccess();
}

std::vector<int64_t> unravel(int64_t i, const core::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const core::Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

::testing::AssertionResult all_close(const core::Tensor& a, const core::Tensor& b, float atol, float rtol) {
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
