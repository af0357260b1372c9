#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

namespace {

std::string describe(const std::string& op_type, const std::string& domain, int64_t min_opset, int64_t max_opset) {
  std::string s = (domain.empty() ? "" : domain + ".") + op_type + " at opset " + std::to_string(min_opset);
  if (max_opset == KernelRegistry::kLatestOpset) return s + " and later";
  return max_opset == min_opset ? s : s + " to " + std::to_string(max_opset);
}

const std::string& onnx_as_empty(const std::string& domain) {
  static const std::string empty;
  return domain == "ai.onnx" ? empty : domain;
}

}  // namespace

void KernelRegistry::add(const std::string& op_type, KernelFactory factory, const std::string& domain,
                         int64_t min_opset, int64_t max_opset) {
  const std::string& d = onnx_as_empty(domain);
  for (const Entry& e : entries_)
    if (e.op_type == op_type && e.domain == d && min_opset <= e.max_opset && e.min_opset <= max_opset)
      fail(HETERO_DRIVER_ERROR, "CPU kernel list: " + describe(op_type, d, min_opset, max_opset) +
                                    " overlaps the kernel of " +
                                    describe(e.op_type, e.domain, e.min_opset, e.max_opset));
  entries_.push_back({op_type, d, min_opset, max_opset, std::move(factory)});
}

const KernelFactory* KernelRegistry::find(const std::string& op_type, const std::string& domain,
                                          int64_t opset) const {
  const std::string& d = onnx_as_empty(domain);
  for (const Entry& e : entries_)
    if (e.op_type == op_type && e.domain == d && opset >= e.min_opset && opset <= e.max_opset) return &e.factory;
  return nullptr;
}

}  // namespace hetero::cpu
