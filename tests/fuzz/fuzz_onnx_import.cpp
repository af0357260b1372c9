// libFuzzer target: ONNX import of arbitrary bytes must end in a model or a
// hetero::Failure, never a crash, a hang or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto model = hetero::core::import_onnx_bytes(std::span<const uint8_t>(data, size));
    // Touch what import produced, so that dangling views would show up.
    for (const auto& v : model->graph.values())
      if (v->is_constant() && v->constant->nbytes() > 0) {
        volatile uint8_t first = *static_cast<const uint8_t*>(v->constant->raw());
        (void)first;
      }
  } catch (const hetero::Failure&) {
  }
  return 0;
}
