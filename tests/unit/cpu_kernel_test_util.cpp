#include "tests/unit/cpu_kernel_test_util.h"

namespace hetero::cpu::testing {

namespace {

const KernelRegistry& registry() {
  static const KernelRegistry r = [] {
    KernelRegistry reg;
    register_elementwise_kernels(reg);
    register_unary_kernels(reg);
    register_cast_kernels(reg);
    register_reduction_kernels(reg);
    register_softmax_kernels(reg);
    return reg;
  }();
  return r;
}

}  // namespace

std::unique_ptr<Kernel> build_kernel(const core::Node& node) {
  const KernelFactory* f = registry().find(node.op_type, node.domain, node.opset);
  if (!f) fail(HETERO_NOT_SUPPORTED, "no kernel for " + node.op_type);
  // Elementwise kernels never touch the oneDNN engine.
  alignas(64) static char fake_engine[256];
  KernelBuild build{node, node.opset, *reinterpret_cast<dnnl::engine*>(fake_engine), {}};
  return (*f)(build);
}

std::vector<core::Tensor> run_node(const core::Node& node, std::vector<std::optional<core::Tensor>> inputs,
                                   size_t num_outputs) {
  std::unique_ptr<Kernel> k = build_kernel(node);
  FakeRun run(node, std::move(inputs), num_outputs);
  k->run(run);
  return std::move(run.outputs());
}

}  // namespace hetero::cpu::testing
