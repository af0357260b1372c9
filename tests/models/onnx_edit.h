// Editing ONNX models in place, for the test quantizer (quantize_model.cpp):
// initializer helpers, and what ONNX Runtime's pre-processing does to a
// model before quantising it (Constant nodes become initializers,
// BatchNormalization after a convolution is folded into it, the opset is
// raised to 13 with the ops whose form changed rewritten). Errors are
// std::runtime_error naming the node or tensor.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hetero::test {

// The float32 values of an initializer.
std::vector<float> floats_of(const onnx::TensorProto& t);

// Makes `t` the tensor `name` of ONNX type `type` with these dims and values.
template <typename T>
void set_values(onnx::TensorProto& t, const std::string& name, int type, const std::vector<int64_t>& dims,
                const std::vector<T>& values) {
  t.Clear();
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

onnx::TensorProto* find_initializer(onnx::GraphProto& g, const std::string& name);
void add_scalar_initializer(onnx::GraphProto& g, const std::string& name, float v);
// Indices of the nodes that read `name`.
std::vector<int> consumers(const onnx::GraphProto& g, const std::string& name);
bool is_graph_output(const onnx::GraphProto& g, const std::string& name);

void constants_to_initializers(onnx::GraphProto& g);
// y = BN(Conv(x, W, B)) = Conv(x, W * s, (B - mean) * s + beta), s = gamma / sqrt(var + eps).
void fold_batch_norms(onnx::GraphProto& g);
// Raises the ai.onnx opset to 13 (per-axis DequantizeLinear): Clip and Slice
// get their bounds as inputs; a Softmax must mean the same at 13 (its input,
// of rank `ranks[name]`, has rank 2 or the axis is the last one).
void upgrade_to_opset13(onnx::ModelProto& model, const std::map<std::string, size_t>& ranks);

}  // namespace hetero::test
