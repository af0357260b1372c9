#include "core/onnx_export.h"

#include <onnx/onnx_pb.h>

#include "core/error.h"

namespace hetero::core {

namespace {

void fill_tensor(onnx::TensorProto& proto, const Tensor& t, const std::string& name) {
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) proto.add_dims(d);
  proto.set_raw_data(t.raw(), t.nbytes());
}

void fill_type(onnx::ValueInfoProto& proto, const Value& v) {
  proto.set_name(v.name);
  auto* tensor_type = proto.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(static_cast<int32_t>(v.dtype));
  if (!v.shape) return;
  auto* shape = tensor_type->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* dim = shape->add_dim();
    if (d.known())
      dim->set_dim_value(d.size);
    else if (!d.param.empty())
      dim->set_dim_param(d.param);
  }
}

void fill_graph(onnx::GraphProto& proto, const Graph& graph);

void fill_attribute(onnx::AttributeProto& proto, const Attribute& a) {
  proto.set_name(a.name);
  switch (a.type) {
    case AttrType::Float: proto.set_type(onnx::AttributeProto::FLOAT); proto.set_f(a.f); break;
    case AttrType::Int: proto.set_type(onnx::AttributeProto::INT); proto.set_i(a.i); break;
    case AttrType::String: proto.set_type(onnx::AttributeProto::STRING); proto.set_s(a.s); break;
    case AttrType::Tensor:
      proto.set_type(onnx::AttributeProto::TENSOR);
      fill_tensor(*proto.mutable_t(), a.t, "");
      break;
    case AttrType::Graph:
      proto.set_type(onnx::AttributeProto::GRAPH);
      fill_graph(*proto.mutable_g(), *a.g);
      break;
    case AttrType::Floats:
      proto.set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) proto.add_floats(f);
      break;
    case AttrType::Ints:
      proto.set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) proto.add_ints(i);
      break;
    case AttrType::Strings:
      proto.set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : a.strings) proto.add_strings(s);
      break;
    case AttrType::Tensors:
      proto.set_type(onnx::AttributeProto::TENSORS);
      for (const auto& t : a.tensors) fill_tensor(*proto.add_tensors(), t, "");
      break;
    case AttrType::Graphs:
      proto.set_type(onnx::AttributeProto::GRAPHS);
      for (const auto& g : a.graphs) fill_graph(*proto.add_graphs(), *g);
      break;
  }
}

void fill_graph(onnx::GraphProto& proto, const Graph& graph) {
  proto.set_name(graph.name);
  for (const Value* v : graph.inputs) fill_type(*proto.add_input(), *v);
  for (const Value* v : graph.outputs) fill_type(*proto.add_output(), *v);
  for (const auto& v : graph.values()) {
    if (v->constant && !v->producer) {
      fill_tensor(*proto.add_initializer(), *v->constant, v->name);
    } else if (v->producer && v->dtype != DType::Undefined) {
      bool is_output = false;
      for (const Value* o : graph.outputs) is_output |= o == v.get();
      if (!is_output) fill_type(*proto.add_value_info(), *v);
    }
  }
  for (const auto& n : graph.nodes()) {
    auto* node = proto.add_node();
    node->set_name(n->name);
    node->set_op_type(n->op_type);
    node->set_domain(n->domain);
    for (const Value* in : n->inputs) node->add_input(in ? in->name : "");
    for (const Value* out : n->outputs) node->add_output(out ? out->name : "");
    for (const Attribute& a : n->attributes) fill_attribute(*node->add_attribute(), a);
  }
}

}  // namespace

std::vector<uint8_t> export_onnx(const Model& model) {
  onnx::ModelProto proto;
  proto.set_ir_version(model.ir_version);
  proto.set_producer_name(model.producer_name);
  for (const auto& [domain, version] : model.opsets) {
    auto* op = proto.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  fill_graph(*proto.mutable_graph(), model.graph);
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    fail(HETERO_INTERNAL, "cannot serialize model '" + model.source + "' as ONNX (over 2 GiB?)");
  return {bytes.begin(), bytes.end()};
}

}  // namespace hetero::core
