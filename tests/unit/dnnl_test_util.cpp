#include "tests/unit/dnnl_test_util.h"

#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu::testing {

std::vector<core::Tensor> run_dnnl_node(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs,
                                        size_t num_outputs, int threads) {
  // Only the families under test: the others have tests of their own.
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_nn_kernels(r);
    register_dnnl_kernels(r);
    return r;
  }();
  const KernelFactory* f = registry.find(node.op_type, node.domain, node.opset);
  if (!f) fail(HETERO_NOT_SUPPORTED, "no kernel for " + node.op_type);
  KernelBuild build{node, node.opset, test_engine(), {}};
  std::unique_ptr<Kernel> k = (*f)(build);
  DnnlRun run(node, inputs, num_outputs, threads);
  k->run(run);
  // A second run takes the cached primitive and must give the same bits.
  DnnlRun again(node, std::move(inputs), num_outputs, threads);
  k->run(again);
  for (size_t i = 0; i < num_outputs; ++i) {
    const core::Tensor &a = run.outputs()[i], &b = again.outputs()[i];
    if (a.empty() || a.shape() != b.shape() || std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0)
      ADD_FAILURE() << node.describe() << ": second run differs in output " << i;
  }
  return std::move(run.outputs());
}

}  // namespace hetero::cpu::testing
