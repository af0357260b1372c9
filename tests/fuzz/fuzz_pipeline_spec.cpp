// libFuzzer target: the pipeline file reader (pipeline/pipeline_spec.h) on
// arbitrary text. Every input must give a PipelineSpec or fail with a
// hetero::Failure naming the file, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "pipeline/pipeline_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)hetero::pipeline::parse_pipeline(text, "fuzz.yaml", "/models");
  } catch (const hetero::Failure& e) {
    if (std::string(e.what()).rfind("fuzz.yaml", 0) != 0) __builtin_trap();  // every error names the file
  }
  return 0;
}
