// PLACEHOLDER until the import lands (helper is writing it).
#include "core/onnx_import.h"
#include "core/error.h"
namespace hetero::core {
std::unique_ptr<Model> import_onnx_file(const std::string& path, const ImportOptions&) {
  fail(HETERO_NOT_SUPPORTED, path + ": import not written yet");
}
std::unique_ptr<Model> import_onnx_bytes(std::span<const uint8_t>, const ImportOptions&, const std::string& s) {
  fail(HETERO_NOT_SUPPORTED, s + ": import not written yet");
}
}  // namespace hetero::core
