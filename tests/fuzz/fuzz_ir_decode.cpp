// libFuzzer target: decoding heterod's IR (what CPU blobs hold) from
// arbitrary bytes must end in a model or a hetero::Failure, never a crash, a
// hang or an unbounded allocation; a decoded model must encode again.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/ir_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto model = hetero::core::decode_model(std::span<const uint8_t>(data, size), "fuzz input");
    (void)hetero::core::encode_model(*model);
  } catch (const hetero::Failure&) {
  }
  return 0;
}
