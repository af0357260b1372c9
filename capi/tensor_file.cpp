#include "capi/tensor_file.h"

#include <climits>

#include <onnx/onnx_pb.h>

#include "capi/file_io.h"
#include "capi/npy.h"
#include "core/error.h"
#include "core/onnx_tensor.h"

namespace hetero::capi {

namespace {

core::Tensor decode_tensor_proto(const std::vector<uint8_t>& bytes, const std::string& path) {
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT_MAX) || !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail(HETERO_INVALID_ARGUMENT, path + ": neither a .npy file nor a serialized ONNX TensorProto");
  try {
    core::Tensor t = core::tensor_from_proto(proto, path + " (TensorProto)");
    // Converted tensors may view the proto's bytes; make the result own its data.
    return t.owner() ? t : t.clone();
  } catch (const Failure& e) {
    // The converter speaks of models (it serves the importer); a tensor file
    // is an argument, not a model.
    if (e.status() == HETERO_INVALID_MODEL) fail(HETERO_INVALID_ARGUMENT, e.what());
    throw;
  }
}

}  // namespace

core::Tensor read_tensor_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  if (bytes.empty()) fail(HETERO_INVALID_ARGUMENT, path + ": the file is empty");
  if (npy_has_magic(bytes)) return npy_decode(bytes, path);
  const bool npy_name = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  if (npy_name) return npy_decode(bytes, path);  // for its message about the magic
  return decode_tensor_proto(bytes, path);
}

void write_npy_file(const core::Tensor& tensor, const std::string& path) {
  write_file_atomic(path, npy_encode(tensor));
}

}  // namespace hetero::capi
