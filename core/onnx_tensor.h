// Conversions between onnx.proto messages (TensorProto, TypeProto,
// AttributeProto) and the IR's tensors, dims and attributes. Internal to core/:
// shared by onnx_import and function_expand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph.h"

namespace hetero::core {

// TensorProto.DataType → DType; Undefined for types heterod has none for
// (complex, unknown numbers).
DType dtype_from_onnx(int32_t elem_type) noexcept;

// Shape of a tensor TypeProto; nullopt when not a tensor or the rank is unknown.
std::optional<std::vector<Dim>> dims_from_type(const onnx::TypeProto& type);
// Element type of a tensor TypeProto; Undefined when not a tensor.
DType dtype_from_type(const onnx::TypeProto& type) noexcept;
// A tensor TypeProto for `value`; left empty (no type) when its dtype is unknown.
onnx::TypeProto type_to_proto(const Value& value);

// Bytes that hold a tensor's raw_data outside the proto (the mapped model file
// or an external data file), kept alive by `owner`.
struct RawBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;
};

// Converts a TensorProto. `what` names it in messages ("initializer 'w'").
// With `raw`, the data is taken from there instead of the proto's fields and
// viewed in place when naturally aligned (copied otherwise). Sizes claimed by
// dims are checked against the data actually present before anything is
// allocated. Fails with INVALID_MODEL on inconsistent tensors and with
// NOT_SUPPORTED on string, complex, segmented and (without `raw`) external ones.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const RawBytes* raw = nullptr);
// A TensorProto holding a copy of `tensor` as raw_data.
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

// Builds the IR graph of a GRAPH attribute (import supplies it; scope rules live there).
using GraphConverter = std::function<std::shared_ptr<Graph>(const onnx::GraphProto&, const std::string& attr_name)>;

// Converts an attribute (which must not be a ref_attr_name reference). `what`
// names its node in messages. A null `graphs` makes GRAPH attributes NOT_SUPPORTED.
Attribute attribute_from_proto(const onnx::AttributeProto& proto, const std::string& what, const GraphConverter& graphs);
// The reverse; false for graph attributes, which have no proto form here.
bool attribute_to_proto(const Attribute& attr, onnx::AttributeProto& proto);

// The value of a Constant node (value, value_float(s), value_int(s)) as a
// tensor; nullopt without one (the checker reports that); NOT_SUPPORTED for
// strings and sparse values.
std::optional<Tensor> constant_node_value(const Node& node);

}  // namespace hetero::core
