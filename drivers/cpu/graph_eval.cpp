#include "drivers/cpu/graph_eval.h"

#include <cstdint>
#include <unordered_map>

#include "core/error.h"
#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

namespace {

// One node's view of the values computed so far.
class EvalRun final : public KernelRun {
 public:
  EvalRun(const core::Node& node, std::unordered_map<const core::Value*, core::Tensor>& values, dnnl::stream& stream,
          int threads, size_t max_elements = SIZE_MAX)
      : node_(node), values_(values), stream_(stream), threads_(threads), max_elements_(max_elements) {}
  const core::Node& node() const override { return node_; }
  size_t num_inputs() const override { return node_.inputs.size(); }
  const core::Tensor* input(size_t i) const override {
    const core::Value* v = node_.input(i);
    if (!v) return nullptr;
    if (v->constant) return &*v->constant;
    auto it = values_.find(v);
    return it == values_.end() ? nullptr : &it->second;
  }
  size_t num_outputs() const override { return node_.outputs.size(); }
  bool output_wanted(size_t i) const override { return i < node_.outputs.size() && node_.outputs[i]; }
  core::Tensor& output(size_t i, core::DType dtype, const core::Shape& shape) override {
    if (core::shape_numel(shape) > max_elements_) throw TooLarge{};
    core::Tensor& t = values_[node_.outputs.at(i)];
    t = core::Tensor::allocate(dtype, shape, false);
    return t;
  }
  void set_output(size_t i, core::Tensor tensor) override {
    if (tensor.numel() > max_elements_) throw TooLarge{};
    values_[node_.outputs.at(i)] = std::move(tensor);
  }
  // An output over max_elements: thrown past the kernel, not an error.
  struct TooLarge {};
  dnnl::stream& stream() override { return stream_; }
  const dnnl::engine& engine() const override { return engine_; }
  int threads() const override { return threads_; }
  Frame& body_frame(const Plan&) override {
    fail(HETERO_NOT_SUPPORTED, node_.describe() + ": runs no subgraphs inside a table-driven op");
  }
  void checkpoint() override {}  // compile-time evaluation: nothing to yield to
  core::Tensor workspace(size_t bytes) override {
    return core::Tensor::allocate(core::DType::U8, {int64_t(bytes)}, false);
  }
  MemoryViews& views() override { return views_; }
  std::unique_ptr<KernelMemo>& memo() override { return memo_; }

 private:
  const core::Node& node_;
  std::unordered_map<const core::Value*, core::Tensor>& values_;
  dnnl::stream& stream_;
  dnnl::engine engine_ = stream_.get_engine();
  int threads_;
  size_t max_elements_;
  MemoryViews views_;
  std::unique_ptr<KernelMemo> memo_;
};

}  // namespace

GraphEval::GraphEval(const KernelBuild& b, const core::Graph& graph) : graph_(graph) {
  if (graph.inputs.empty() || graph.outputs.empty())
    b.unsupported("the graph it evaluates has no input or no output");
  for (const auto& n : graph.nodes()) {
    const KernelFactory* factory = KernelRegistry::builtin().find(n->op_type, n->domain, n->opset);
    if (!factory)
      b.unsupported("no CPU kernel for " + (n->domain.empty() ? "" : n->domain + ".") + n->op_type + " inside it");
    KernelBuild inner{*n, n->opset, b.engine, b.compile_subgraph};
    kernels_.push_back((*factory)(inner));
  }
}

core::Tensor GraphEval::run(const core::Tensor& x, dnnl::stream& stream, int threads) const {
  std::unordered_map<const core::Value*, core::Tensor> values;
  values[graph_.inputs[0]] = x;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    EvalRun r(*graph_.nodes()[i], values, stream, threads);
    kernels_[i]->run(r);
  }
  auto it = values.find(graph_.outputs[0]);
  if (it == values.end()) fail(HETERO_DRIVER_ERROR, "a table-driven op's graph did not produce its output");
  return it->second;
}

std::optional<std::vector<core::Tensor>> evaluate_constant_node(const core::Node& node, int64_t opset,
                                                                 dnnl::engine& engine, size_t max_elements) {
  const KernelFactory* factory = KernelRegistry::builtin().find(node.op_type, node.domain, opset);
  if (!factory) return std::nullopt;
  std::unordered_map<const core::Value*, core::Tensor> values;
  try {
    KernelBuild build{node, opset, engine, nullptr};
    const std::unique_ptr<Kernel> kernel = (*factory)(build);
    dnnl::stream stream(engine);
    EvalRun r(node, values, stream, 1, max_elements);
    kernel->run(r);
  } catch (const EvalRun::TooLarge&) {
    return std::nullopt;
  } catch (const Failure&) {
    return std::nullopt;
  }
  std::vector<core::Tensor> outputs;
  for (const core::Value* v : node.outputs) {
    auto it = v ? values.find(v) : values.end();
    outputs.push_back(it == values.end() ? core::Tensor() : it->second);
  }
  return outputs;
}

}  // namespace hetero::cpu
