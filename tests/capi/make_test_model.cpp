// Writes the C ABI tests' fixtures into the directory given as argv[1]:
//   tiny.onnx          y = Relu(x·W + b), x float[1,4], y float[1,3]
//   tiny_dynamic.onnx  the same with x float[N,4] (a dynamic batch)
//   tiny_input.pb      x = [[1, 2, 3, 4]] as an ONNX TensorProto
//   odd_names.onnx     tiny.onnx with node and tensor names that JSON must
//                      escape (quotes, backslashes, a tab) or repair (a byte
//                      that is not UTF-8)
//   stream_lstm.onnx   a streaming LSTM: x float[T,1,2] and state h, c
//                      float[1,1,3] in; y float[T,1,1,3] and state hn, cn out
// The C tests cannot build models themselves (the C ABI reads models, it does
// not write them), so this small generator runs at build time.
//
// With x = [1, 2, 3, 4]: x·W = [5, 6, -1], + b = [5.5, 5, -0.5], Relu gives
// y = [5.5, 5, 0] — one output of each kind (passed, changed, clamped).
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/onnx_model_file.h"

namespace {

const char* const kStatic = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-capi-tests">
tiny (float[1, 4] x) => (float[1, 3] y) {
  xw = MatMul(x, W)
  xwb = Add(xw, b)
  y = Relu(xwb)
}
)ONNX";

const char* const kDynamic = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-capi-tests">
tiny_dynamic (float[N, 4] x) => (float[N, 3] y) {
  xw = MatMul(x, W)
  xwb = Add(xw, b)
  y = Relu(xwb)
}
)ONNX";

const char* const kStreamLstm = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-capi-tests">
stream_lstm (float[T, 1, 2] x, float[1, 1, 3] h, float[1, 1, 3] c) => (float[T, 1, 1, 3] y, float[1, 1, 3] hn,
                                                                       float[1, 1, 3] cn) {
  y, hn, cn = LSTM <hidden_size = 3> (x, W, R, B, , h, c)
}
)ONNX";

void fill(onnx::TensorProto& t, const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  // raw_data, as exporters write initializers (little-endian floats).
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

using hetero::test::write_message;

std::optional<onnx::ModelProto> parse(const std::string& path, const char* text) {
  return hetero::test::parse_model_text("make_test_model", path, text);
}

// Weights of no particular meaning, in (-0.5, 0.5).
std::vector<float> weights(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f * std::sin(static_cast<float>(i) * 1.7f + phase);
  return v;
}

bool write_stream_model(const std::string& path) {
  std::optional<onnx::ModelProto> model = parse(path, kStreamLstm);
  if (!model) return false;
  auto* graph = model->mutable_graph();
  fill(*graph->add_initializer(), "W", {1, 12, 2}, weights(24, 0.1f));
  fill(*graph->add_initializer(), "R", {1, 12, 3}, weights(36, 0.7f));
  fill(*graph->add_initializer(), "B", {1, 24}, weights(24, 1.3f));
  return write_message(path, *model);
}

bool write_model(const std::string& path, const char* text) {
  std::optional<onnx::ModelProto> model = parse(path, text);
  if (!model) return false;
  auto* graph = model->mutable_graph();
  fill(*graph->add_initializer(), "W", {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, -1});
  fill(*graph->add_initializer(), "b", {3}, {0.5f, -1.0f, 0.5f});
  return write_message(path, *model);
}

// The names odd_names.onnx gives its nodes and its MatMul's output.
const char* const kOddNodes[] = {"MatMul \"quoted\" C:\\dir\\", "Add\tafter a tab", "Relu \xff not UTF-8"};
const char* const kOddTensor = "x\"w\\";

bool write_odd_names(const std::string& path) {
  std::optional<onnx::ModelProto> model = parse(path, kStatic);
  if (!model) return false;
  auto* graph = model->mutable_graph();
  fill(*graph->add_initializer(), "W", {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, -1});
  fill(*graph->add_initializer(), "b", {3}, {0.5f, -1.0f, 0.5f});
  for (int k = 0; k < graph->node_size(); ++k) graph->mutable_node(k)->set_name(kOddNodes[k]);
  graph->mutable_node(0)->set_output(0, kOddTensor);
  graph->mutable_node(1)->set_input(0, kOddTensor);
  return write_message(path, *model);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_model OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  onnx::TensorProto input;
  fill(input, "x", {1, 4}, {1, 2, 3, 4});
  const bool ok = write_model(dir + "/tiny.onnx", kStatic) && write_model(dir + "/tiny_dynamic.onnx", kDynamic) &&
                  write_message(dir + "/tiny_input.pb", input) && write_odd_names(dir + "/odd_names.onnx") &&
                  write_stream_model(dir + "/stream_lstm.onnx");
  if (!ok) std::fprintf(stderr, "make_test_model: cannot write the fixtures to %s\n", dir.c_str());
  return ok ? 0 : 1;
}
