#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void KernelRegistry::add(const std::string& op_type, KernelFactory factory, const std::string& domain,
                         int64_t min_opset, int64_t max_opset) {
  entries_.push_back({op_type, domain, min_opset, max_opset, std::move(factory)});
}

const KernelFactory* KernelRegistry::find(const std::string& op_type, const std::string& domain,
                                          int64_t opset) const {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  // The last registration wins, so that a specialised family (oneDNN)
  // registered after a reference one takes precedence over it.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->op_type == op_type && it->domain == d && opset >= it->min_opset && opset <= it->max_opset)
      return &it->factory;
  }
  return nullptr;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.domain.empty() ? e.op_type : e.domain + "." + e.op_type);
  return names;
}

const KernelRegistry& KernelRegistry::builtin() {
  // Reference families first; oneDNN last so its kernels win where both exist.
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_elementwise_kernels(r);
    register_unary_kernels(r);
    register_cast_kernels(r);
    register_softmax_kernels(r);
    register_reduction_kernels(r);
    register_shape_kernels(r);
    register_data_movement_kernels(r);
    register_misc_kernels(r);
    register_spectral_kernels(r);
    register_loss_kernels(r);
    register_linalg_kernels(r);
    register_roi_align_kernels(r);
    register_unpool_kernels(r);
    register_random_kernels(r);
    register_optimizer_kernels(r);
    register_tfidf_kernels(r);
    register_control_flow_kernels(r);
    register_nn_kernels(r);
    register_rnn_kernels(r);
    register_quantization_kernels(r);
    register_dnnl_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace hetero::cpu
