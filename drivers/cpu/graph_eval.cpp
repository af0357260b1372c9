#include "drivers/cpu/graph_eval.h"

#include <unordered_map>

#include "core/error.h"

namespace hetero::cpu {

namespace {

// One node's view of the values computed so far.
class EvalRun final : public KernelRun {
 public:
  EvalRun(const core::Node& node, std::unordered_map<const core::Value*, core::Tensor>& values, dnnl::stream& stream,
          int threads)
      : node_(node), values_(values), stream_(stream), threads_(threads) {}
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
    core::Tensor& t = values_[node_.outputs.at(i)];
    t = core::Tensor::allocate(dtype, shape, false);
    return t;
  }
  void set_output(size_t i, core::Tensor tensor) override { values_[node_.outputs.at(i)] = std::move(tensor); }
  dnnl::stream& stream() override { return stream_; }
  int threads() const override { return threads_; }
  const Frame& frame() const override {
    fail(HETERO_NOT_SUPPORTED, node_.describe() + ": runs no subgraphs inside a table-driven op");
  }

 private:
  const core::Node& node_;
  std::unordered_map<const core::Value*, core::Tensor>& values_;
  dnnl::stream& stream_;
  int threads_;
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

}  // namespace hetero::cpu
