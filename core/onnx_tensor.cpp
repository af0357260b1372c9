#include "core/onnx_tensor.h"

#include <bit>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace hetero::core {

// raw_data is little-endian by ONNX's definition; viewing it in place (and
// copying it bytewise) is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "heterod assumes a little-endian host");

namespace {

constexpr int32_t kComplex64 = 14;
constexpr int32_t kComplex128 = 15;

std::string dims_to_string(const onnx::TensorProto& proto) {
  if (proto.dims_size() == 0) return "scalar";
  std::string s;
  for (int i = 0; i < proto.dims_size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(proto.dims(i));
  }
  return s;
}

// Reads the typed repeated field `values` into `out` (numel elements already
// checked), narrowing each element to T as ONNX's storage rules prescribe.
template <typename T, typename Repeated>
void copy_converted(const Repeated& values, Tensor& out) {
  T* dst = out.data<T>();
  for (int i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      dst[i] = values.Get(i) != 0;
    } else {
      dst[i] = static_cast<T>(values.Get(i));
    }
  }
}

}  // namespace

DType dtype_from_onnx(int32_t elem_type) noexcept {
  return dtype_is_known(elem_type) ? static_cast<DType>(elem_type) : DType::Undefined;
}

DType dtype_from_type(const onnx::TypeProto& type) noexcept {
  return type.has_tensor_type() ? dtype_from_onnx(type.tensor_type().elem_type()) : DType::Undefined;
}

std::optional<std::vector<Dim>> dims_from_type(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  const auto& shape = type.tensor_type().shape();
  std::vector<Dim> dims(static_cast<size_t>(shape.dim_size()));
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto& d = shape.dim(i);
    // A negative dim_value is not valid ONNX; treat it as unknown rather than
    // letting -5 pass for a size somewhere downstream.
    if (d.has_dim_value() && d.dim_value() >= 0) dims[static_cast<size_t>(i)].size = d.dim_value();
    if (d.has_dim_param()) dims[static_cast<size_t>(i)].param = d.dim_param();
  }
  return dims;
}

onnx::TypeProto type_to_proto(const Value& value) {
  onnx::TypeProto type;
  if (value.dtype == DType::Undefined) return type;
  auto* tensor = type.mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(value.dtype));
  if (value.shape) {
    auto* shape = tensor->mutable_shape();
    for (const Dim& d : *value.shape) {
      auto* dim = shape->add_dim();
      if (d.known()) {
        dim->set_dim_value(d.size);
      } else if (!d.param.empty()) {
        dim->set_dim_param(d.param);
      }
    }
  }
  return type;
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const RawBytes* raw) {
  const int32_t type = proto.data_type();
  if (type == static_cast<int32_t>(DType::String))
    fail(HETERO_NOT_SUPPORTED, what + ": string tensors are not supported");
  if (type == kComplex64 || type == kComplex128)
    fail(HETERO_NOT_SUPPORTED, what + ": complex tensors are not supported");
  if (type == 0) fail(HETERO_INVALID_MODEL, what + ": data_type is not set");
  const DType dtype = dtype_from_onnx(type);
  if (dtype == DType::Undefined) fail(HETERO_INVALID_MODEL, what + ": unknown data_type " + std::to_string(type));
  if (proto.has_segment()) fail(HETERO_NOT_SUPPORTED, what + ": segmented tensors are not supported");
  if (!raw && proto.data_location() == onnx::TensorProto::EXTERNAL)
    fail(HETERO_NOT_SUPPORTED, what + ": external data is only supported for initializers of the main graph");

  // Element count and byte size, checked for negative dims and overflow here
  // (rather than by shape_numel) so that the message names this tensor.
  Shape shape;
  shape.reserve(static_cast<size_t>(proto.dims_size()));
  size_t numel = 1;
  const size_t elem = dtype_size(dtype);
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  for (int i = 0; i < proto.dims_size(); ++i) {
    const int64_t d = proto.dims(i);
    if (d < 0)
      fail(HETERO_INVALID_MODEL, what + ": dimension " + std::to_string(i) + " is negative (" + std::to_string(d) + ")");
    if (d != 0 && numel > kMax / elem / static_cast<uint64_t>(d))
      fail(HETERO_INVALID_MODEL, what + ": dims " + dims_to_string(proto) + " overflow the address space");
    numel *= static_cast<size_t>(d);
    shape.push_back(d);
  }
  const size_t nbytes = numel * elem;
  const std::string claim = "dims " + dims_to_string(proto) + " of " + dtype_name(dtype) + " need " +
                            std::to_string(nbytes) + " bytes";

  // Which field holds the data; ONNX allows exactly one (none for empty tensors).
  int fields = 0;
  size_t count = 0;
  const char* field = nullptr;
  auto consider = [&](bool present, size_t n, const char* name) {
    if (!present) return;
    ++fields;
    count = n;
    field = name;
  };
  consider(proto.has_raw_data(), proto.raw_data().size(), "raw_data");
  consider(proto.float_data_size() > 0, static_cast<size_t>(proto.float_data_size()), "float_data");
  consider(proto.int32_data_size() > 0, static_cast<size_t>(proto.int32_data_size()), "int32_data");
  consider(proto.int64_data_size() > 0, static_cast<size_t>(proto.int64_data_size()), "int64_data");
  consider(proto.double_data_size() > 0, static_cast<size_t>(proto.double_data_size()), "double_data");
  consider(proto.uint64_data_size() > 0, static_cast<size_t>(proto.uint64_data_size()), "uint64_data");
  consider(proto.string_data_size() > 0, static_cast<size_t>(proto.string_data_size()), "string_data");
  if (raw) {
    // The data lives outside the proto; any typed field as well is a conflict.
    const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
    if (fields > (proto.has_raw_data() && !external ? 1 : 0))
      fail(HETERO_INVALID_MODEL, what + ": holds data in more than one field");
    if (raw->size != nbytes)
      fail(HETERO_INVALID_MODEL, what + ": " + claim + " but the data has " + std::to_string(raw->size));
    // Kernels use natural alignment; a payload the protobuf framing left
    // misaligned is copied, the rest are viewed where they lie.
    if (reinterpret_cast<uintptr_t>(raw->data) % elem == 0)
      return Tensor::wrap(dtype, std::move(shape), const_cast<uint8_t*>(raw->data), raw->owner);
    Tensor t = Tensor::allocate(dtype, std::move(shape), false);
    if (nbytes) std::memcpy(t.raw(), raw->data, nbytes);
    return t;
  }
  if (fields > 1) fail(HETERO_INVALID_MODEL, what + ": holds data in more than one field");
  if (fields == 0) {
    if (numel != 0) fail(HETERO_INVALID_MODEL, what + ": " + claim + " but the tensor has no data");
    return Tensor::allocate(dtype, std::move(shape));
  }
  const std::string f = field;
  if (f == "raw_data") {
    if (count != nbytes) fail(HETERO_INVALID_MODEL, what + ": " + claim + " but raw_data has " + std::to_string(count));
  } else if (count != numel) {
    fail(HETERO_INVALID_MODEL, what + ": dims " + dims_to_string(proto) + " need " + std::to_string(numel) +
                                   " elements but " + f + " has " + std::to_string(count));
  }

  auto wrong_field = [&]() {
    fail(HETERO_INVALID_MODEL, what + ": " + f + " cannot hold elements of type " + dtype_name(dtype));
  };
  // Validate the field/type pairing before allocating.
  if (f == "float_data" && dtype != DType::F32) wrong_field();
  if (f == "int64_data" && dtype != DType::I64) wrong_field();
  if (f == "double_data" && dtype != DType::F64) wrong_field();
  if (f == "uint64_data" && dtype != DType::U32 && dtype != DType::U64) wrong_field();
  if (f == "string_data") wrong_field();
  if (f == "int32_data" && (dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I64 ||
                            dtype == DType::U32 || dtype == DType::U64))
    wrong_field();

  Tensor t = Tensor::allocate(dtype, std::move(shape), false);
  if (f == "raw_data") {
    if (nbytes) std::memcpy(t.raw(), proto.raw_data().data(), nbytes);
  } else if (f == "float_data") {
    copy_converted<float>(proto.float_data(), t);
  } else if (f == "int64_data") {
    copy_converted<int64_t>(proto.int64_data(), t);
  } else if (f == "double_data") {
    copy_converted<double>(proto.double_data(), t);
  } else if (f == "uint64_data") {
    if (dtype == DType::U32) copy_converted<uint32_t>(proto.uint64_data(), t);
    else copy_converted<uint64_t>(proto.uint64_data(), t);
  } else {  // int32_data: the small integer types and the bit patterns of 16-bit floats
    switch (dtype) {
      case DType::I32: copy_converted<int32_t>(proto.int32_data(), t); break;
      case DType::I16: copy_converted<int16_t>(proto.int32_data(), t); break;
      case DType::I8: copy_converted<int8_t>(proto.int32_data(), t); break;
      case DType::U8: copy_converted<uint8_t>(proto.int32_data(), t); break;
      case DType::Bool: copy_converted<bool>(proto.int32_data(), t); break;
      default: copy_converted<uint16_t>(proto.int32_data(), t); break;  // U16, F16, BF16
    }
  }
  return t;
}

void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto) {
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(tensor.raw(), tensor.nbytes());
}

Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::string& what, const GraphConverter& graphs) {
  const std::string where = what + ": attribute '" + proto.name() + "'";
  if (proto.name().empty()) fail(HETERO_INVALID_MODEL, what + ": an attribute has no name");
  if (!proto.ref_attr_name().empty())
    fail(HETERO_INVALID_MODEL, where + " refers to function attribute '" + proto.ref_attr_name() + "' outside a function");
  using A = onnx::AttributeProto;
  A::AttributeType type = proto.type();
  if (type == A::UNDEFINED) {
    // IR version 1 models leave the type out; the field that is set says it.
    if (proto.has_f()) type = A::FLOAT;
    else if (proto.has_i()) type = A::INT;
    else if (proto.has_s()) type = A::STRING;
    else if (proto.has_t()) type = A::TENSOR;
    else if (proto.has_g()) type = A::GRAPH;
    else if (proto.floats_size()) type = A::FLOATS;
    else if (proto.ints_size()) type = A::INTS;
    else if (proto.strings_size()) type = A::STRINGS;
    else if (proto.tensors_size()) type = A::TENSORS;
    else if (proto.graphs_size()) type = A::GRAPHS;
    else fail(HETERO_INVALID_MODEL, where + " has no type and no value");
  }
  Attribute a;
  a.name = proto.name();
  auto graph = [&](const onnx::GraphProto& g) {
    if (!graphs) fail(HETERO_NOT_SUPPORTED, where + ": graph attributes are not supported here");
    return graphs(g, proto.name());
  };
  switch (type) {
    case A::FLOAT: a.type = AttrType::Float; a.f = proto.f(); break;
    case A::INT: a.type = AttrType::Int; a.i = proto.i(); break;
    case A::STRING: a.type = AttrType::String; a.s = proto.s(); break;
    case A::TENSOR: a.type = AttrType::Tensor; a.t = tensor_from_proto(proto.t(), where); break;
    case A::GRAPH: a.type = AttrType::Graph; a.g = graph(proto.g()); break;
    case A::FLOATS: a.type = AttrType::Floats; a.floats.assign(proto.floats().begin(), proto.floats().end()); break;
    case A::INTS: a.type = AttrType::Ints; a.ints.assign(proto.ints().begin(), proto.ints().end()); break;
    case A::STRINGS: a.type = AttrType::Strings; a.strings.assign(proto.strings().begin(), proto.strings().end()); break;
    case A::TENSORS:
      a.type = AttrType::Tensors;
      for (int i = 0; i < proto.tensors_size(); ++i)
        a.tensors.push_back(tensor_from_proto(proto.tensors(i), where + " tensor " + std::to_string(i)));
      break;
    case A::GRAPHS:
      a.type = AttrType::Graphs;
      for (int i = 0; i < proto.graphs_size(); ++i) a.graphs.push_back(graph(proto.graphs(i)));
      break;
    case A::SPARSE_TENSOR:
    case A::SPARSE_TENSORS: fail(HETERO_NOT_SUPPORTED, where + ": sparse tensors are not supported");
    case A::TYPE_PROTO:
    case A::TYPE_PROTOS: fail(HETERO_NOT_SUPPORTED, where + ": type attributes are not supported");
    default: fail(HETERO_INVALID_MODEL, where + " has unknown type " + std::to_string(static_cast<int>(type)));
  }
  return a;
}

bool attribute_to_proto(const Attribute& attr, onnx::AttributeProto& proto) {
  using A = onnx::AttributeProto;
  proto.set_name(attr.name);
  switch (attr.type) {
    case AttrType::Float: proto.set_type(A::FLOAT); proto.set_f(attr.f); return true;
    case AttrType::Int: proto.set_type(A::INT); proto.set_i(attr.i); return true;
    case AttrType::String: proto.set_type(A::STRING); proto.set_s(attr.s); return true;
    case AttrType::Tensor: proto.set_type(A::TENSOR); tensor_to_proto(attr.t, *proto.mutable_t()); return true;
    case AttrType::Floats:
      proto.set_type(A::FLOATS);
      for (float f : attr.floats) proto.add_floats(f);
      return true;
    case AttrType::Ints:
      proto.set_type(A::INTS);
      for (int64_t i : attr.ints) proto.add_ints(i);
      return true;
    case AttrType::Strings:
      proto.set_type(A::STRINGS);
      for (const std::string& s : attr.strings) proto.add_strings(s);
      return true;
    case AttrType::Tensors:
      proto.set_type(A::TENSORS);
      for (const Tensor& t : attr.tensors) tensor_to_proto(t, *proto.add_tensors());
      return true;
    case AttrType::Graph:
    case AttrType::Graphs: return false;
  }
  return false;
}

std::optional<Tensor> constant_node_value(const Node& node) {
  for (const Attribute& a : node.attributes) {
    if (a.name == "value" && a.type == AttrType::Tensor) return a.t;
    if (a.name == "value_float" && a.type == AttrType::Float) return Tensor::from_vector<float>({a.f}, {});
    if (a.name == "value_floats" && a.type == AttrType::Floats)
      return Tensor::from_vector<float>(a.floats, {static_cast<int64_t>(a.floats.size())});
    if (a.name == "value_int" && a.type == AttrType::Int) return Tensor::from_vector<int64_t>({a.i}, {});
    if (a.name == "value_ints" && a.type == AttrType::Ints) return Tensor::from_vector<int64_t>(a.ints, {static_cast<int64_t>(a.ints.size())});
    if (a.name == "value_string" || a.name == "value_strings")
      fail(HETERO_NOT_SUPPORTED, node.describe() + ": string constants are not supported");
  }
  return std::nullopt;
}

}  // namespace hetero::core
