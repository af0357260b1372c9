// Reading the input_*.pb / output_*.pb files of ONNX backend test data sets
// into core tensors. Written independently of core/onnx_tensor.h on purpose:
// the conformance runner is an oracle for the importer, so it must not share
// the importer's conversion code (a bug there would cancel out here).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "core/tensor.h"

namespace hetero::onnx_case {

// Parses `path` as a serialized onnx.TensorProto. Throws std::runtime_error
// naming the file when it cannot be read or parsed.
onnx::TensorProto read_tensor_proto(const std::string& path);

// Converts a TensorProto (raw_data or the typed repeated fields) into a fresh
// tensor. Throws std::runtime_error for element types heterod has no dtype for
// (strings, complex, 8-bit floats, 4-bit ints), external or segmented data,
// and data whose size disagrees with the dims.
core::Tensor tensor_from_pb(const onnx::TensorProto& proto, const std::string& what);

// "FLOAT", "INT64", ... (TensorProto.DataType's names) for messages.
std::string onnx_type_name(int32_t elem_type);

}  // namespace hetero::onnx_case
