// A small graph run node by node with the CPU driver's kernels, inside
// another kernel: how the table-driven 8-bit ops map their 256 codes
// through the ops they stand for (a float op between a DQ and a Q, or a
// chain of int8 nodes the int8 pass folded into one table); and one node run
// on its constant inputs, for folding it at compile time.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <dnnl.hpp>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

class GraphEval {
 public:
  // Builds the kernels of `graph`'s nodes (in order; the graph must outlive
  // this), refusing with NOT_SUPPORTED naming `b`'s node what has no kernel.
  GraphEval(const KernelBuild& b, const core::Graph& graph);
  // Runs every node with `x` as graph input 0; returns graph output 0.
  core::Tensor run(const core::Tensor& x, dnnl::stream& stream, int threads) const;

 private:
  const core::Graph& graph_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

// Runs `node` once, every input of which is a constant, with its CPU kernel:
// its outputs, or nothing when its kernel refuses it (its error is then the
// inference's, as before), or when an output would hold more than
// `max_elements`.
std::optional<std::vector<core::Tensor>> evaluate_constant_node(const core::Node& node, int64_t opset,
                                                                 dnnl::engine& engine, size_t max_elements);

}  // namespace hetero::cpu
