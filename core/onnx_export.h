// heterod IR → ONNX bytes: the form in which a model (or a submodel cut from
// one) is stored in blobs and shown to other tools.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace hetero::core {

// Serializes `model` as an ONNX ModelProto. Deterministic: the same model
// gives the same bytes.
std::vector<uint8_t> export_onnx(const Model& model);

}  // namespace hetero::core
