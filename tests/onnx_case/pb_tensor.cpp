#include "tests/onnx_case/pb_tensor.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hetero::onnx_case {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw std::runtime_error(what + ": " + why);
}

// Copies a repeated proto field into the tensor, narrowing each element to
// the tensor's element type (int32_data carries int8..uint16, bool, and the
// bit patterns of float16/bfloat16, as onnx.proto specifies).
template <typename T, typename Field>
void copy_field(const Field& field, core::Tensor& t, const std::string& what) {
  if (static_cast<size_t>(field.size()) != t.numel())
    bad(what, "holds " + std::to_string(field.size()) + " values for " + std::to_string(t.numel()) +
                  " elements of shape " + core::shape_to_string(t.shape()));
  T* out = t.data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

std::string onnx_type_name(int32_t elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  return "type " + std::to_string(elem_type);
}

onnx::TensorProto read_tensor_proto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes.str())) throw std::runtime_error(path + ": not a TensorProto");
  return proto;
}

core::Tensor tensor_from_pb(const onnx::TensorProto& proto, const std::string& what) {
  const int32_t type = proto.data_type();
  // Strings have a dtype number but no fixed element size, so no dense tensor.
  if (!core::dtype_is_known(type) || type == static_cast<int32_t>(core::DType::String))
    bad(what, "element type " + onnx_type_name(type) + " has no heterod dtype");
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) bad(what, "external data is not handled");
  if (proto.has_segment()) bad(what, "segmented tensors are not handled");

  const auto dtype = static_cast<core::DType>(type);
  core::Shape shape(proto.dims().begin(), proto.dims().end());
  core::Tensor t = core::Tensor::allocate(dtype, shape);  // validates dims, fails on overflow

  if (proto.has_raw_data()) {
    // raw_data is little-endian, as is every host heterod runs on.
    if (proto.raw_data().size() != t.nbytes())
      bad(what, "raw_data has " + std::to_string(proto.raw_data().size()) + " bytes, shape " +
                    core::shape_to_string(shape) + " of " + core::dtype_name(dtype) + " needs " +
                    std::to_string(t.nbytes()));
    if (t.nbytes()) std::memcpy(t.raw(), proto.raw_data().data(), t.nbytes());
    return t;
  }

  switch (dtype) {
    case core::DType::F32: copy_field<float>(proto.float_data(), t, what); break;
    case core::DType::F64: copy_field<double>(proto.double_data(), t, what); break;
    case core::DType::I64: copy_field<int64_t>(proto.int64_data(), t, what); break;
    case core::DType::U32: copy_field<uint32_t>(proto.uint64_data(), t, what); break;
    case core::DType::U64: copy_field<uint64_t>(proto.uint64_data(), t, what); break;
    case core::DType::I32: copy_field<int32_t>(proto.int32_data(), t, what); break;
    case core::DType::I16: copy_field<int16_t>(proto.int32_data(), t, what); break;
    case core::DType::I8: copy_field<int8_t>(proto.int32_data(), t, what); break;
    case core::DType::U8: copy_field<uint8_t>(proto.int32_data(), t, what); break;
    case core::DType::U16:
    case core::DType::F16:
    case core::DType::BF16: copy_field<uint16_t>(proto.int32_data(), t, what); break;
    case core::DType::Bool: {
      // bool is one byte; copy_field<bool> would write through bool*, fine
      // for 0/1 but normalise anything else to 1 like NumPy does.
      const auto& f = proto.int32_data();
      if (static_cast<size_t>(f.size()) != t.numel()) bad(what, "int32_data size disagrees with the dims");
      auto* out = static_cast<uint8_t*>(t.raw());
      for (int i = 0; i < f.size(); ++i) out[i] = f.Get(i) != 0;
      break;
    }
    default: bad(what, "element type " + onnx_type_name(type) + " is not handled");
  }
  return t;
}

}  // namespace hetero::onnx_case
