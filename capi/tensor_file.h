// Tensor files for hetero_tensor_read_file / hetero_tensor_write_npy: NumPy
// .npy and serialized ONNX TensorProto (.pb, as in ONNX's test data sets).
#pragma once

#include <string>

#include "core/tensor.h"

namespace hetero::capi {

// Reads `path`, telling the formats apart by content (the .npy magic) rather
// than by extension. Errors name the file.
core::Tensor read_tensor_file(const std::string& path);

// Writes `tensor` to `path` as .npy, atomically.
void write_npy_file(const core::Tensor& tensor, const std::string& path);

}  // namespace hetero::capi
