// fold_constants (graph_passes.h): nodes whose every input is a constant are
// run once at compile time with their own kernels, and their outputs become
// constants.
//
// Why. Exports keep arithmetic on weights in the graph: Silero VAD v5
// slices and concatenates its LSTM weights inside nested If branches, 107
// Constant and about 40 Slice/Concat/Unsqueeze nodes run on every 32 ms
// chunk, and the LSTM's weights then changed every inference, so oneDNN
// reordered them every time. Folded, the LSTM sees constant weights it
// prepares once. Shape arithmetic on static shapes folds the same way.
#include <omp.h>

#include <dnnl.hpp>

#include "core/error.h"
#include "core/progress.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_eval.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"

namespace hetero::cpu::passes {

namespace {

// Larger outputs stay run-time work: a folded constant lives in the compiled
// model (and its blob) for good.
constexpr size_t kMaxFoldedElements = size_t{1} << 20;

// Ops whose outputs are not a function of their inputs.
bool nondeterministic(const core::Node& n) {
  return n.op_type == "RandomNormal" || n.op_type == "RandomUniform" || n.op_type == "RandomNormalLike" ||
         n.op_type == "RandomUniformLike" || n.op_type == "Multinomial" || n.op_type == "Bernoulli";
}

bool has_subgraphs(const core::Node& n) {
  for (const core::Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool foldable(const core::Node& n) {
  if (!n.domain.empty() || nondeterministic(n) || has_subgraphs(n)) return false;
  for (const core::Value* in : n.inputs)
    if (in && !in->constant) return false;
  return true;
}

class Folder {
 public:
  explicit Folder(int64_t onnx_opset) : onnx_opset_(onnx_opset), engine_(dnnl::engine::kind::cpu, 0) {}

  void fold(core::Graph& g) {
    std::vector<core::Node*> folded;
    for (const auto& node : g.nodes()) {
      core::Node& n = *node;
      // Bodies first see what this graph folded before their node.
      for (core::Attribute& a : n.attributes) {
        if (a.g) fold(*a.g);
        for (auto& body : a.graphs) fold(*body);
      }
      if (!foldable(n)) continue;
      const int64_t opset = n.opset ? n.opset : onnx_opset_;
      std::optional<std::vector<core::Tensor>> outputs = evaluate_constant_node(n, opset, engine_, kMaxFoldedElements);
      core::check_deadline();
      if (!outputs) continue;
      bool complete = true;
      for (size_t i = 0; i < n.outputs.size(); ++i) complete = complete && (!n.outputs[i] || !(*outputs)[i].empty());
      if (!complete) continue;
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (n.outputs[i]) n.outputs[i]->constant = std::move((*outputs)[i]);
      folded.push_back(&n);
    }
    for (core::Node* n : folded) g.erase_node(n);
    // What folding consumed (a weight sliced and concatenated into another)
    // is read by no node now: neither kept in memory nor written to blobs.
    for (const auto& v : g.values())
      if (v->constant && v->uses.empty() && !is_graph_output(g, v.get())) v->constant.reset();
  }

 private:
  int64_t onnx_opset_;
  dnnl::engine engine_;
};

}  // namespace

void fold_constants(core::Graph& graph, int64_t onnx_opset) {
  // A compile's graph work runs on the caller's thread with no OpenMP team
  // (drivers/cpu/scheduler.h says why): the folded nodes run on one thread.
  const TeamForWork one_thread(omp_get_max_threads(), 0);
  Folder(onnx_opset).fold(graph);
}

}  // namespace hetero::cpu::passes
