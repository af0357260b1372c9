// Writes the small image classifier that the README's run command and the
// daemon's default config use, so the project ships no binary model files.
// The structure is a typical edge CNN (conv, batch norm, activations, pooling,
// a dense head); the weights are a fixed pseudo-random sequence.
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr const char* kGraph = R"ONNX(
<ir_version: 8, opset_import: ["" : 13], producer_name: "heterod-demo">
demo (float[N, 3, 32, 32] image) => (float[N, 10] probabilities) {
  c1 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (image, w1, b1)
  n1 = BatchNormalization <epsilon = 0.00001> (c1, bn_scale, bn_bias, bn_mean, bn_var)
  r1 = Relu (n1)
  p1 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r1)
  c2 = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (p1, w2, b2)
  r2 = Clip (c2, clip_min, clip_max)
  g = GlobalAveragePool (r2)
  f = Flatten (g)
  logits = Gemm <transB = 1> (f, w3, b3)
  probabilities = Softmax <axis = 1> (logits)
}
)ONNX";

// A deterministic sequence in [-scale, scale] (a 32-bit LCG: reproducible on
// every box, no dependence on the standard library's generators).
class Weights {
 public:
  std::vector<float> next(size_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) {
      state_ = state_ * 1664525u + 1013904223u;
      x = scale * (static_cast<float>(state_ >> 8) / 8388608.0f - 1.0f);
    }
    return v;
  }

 private:
  uint32_t state_ = 12345;
};

void add_initializer(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                     const std::vector<float>& values) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(values.data(), values.size() * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.onnx\n", argv[0]);
    return 2;
  }
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, kGraph);
  if (!status.IsOK()) {
    std::fprintf(stderr, "make_demo_model: %s\n", status.ErrorMessage().c_str());
    return 1;
  }
  Weights w;
  onnx::GraphProto& g = *model.mutable_graph();
  add_initializer(g, "w1", {16, 3, 3, 3}, w.next(16 * 3 * 9, 0.4f));
  add_initializer(g, "b1", {16}, w.next(16, 0.1f));
  add_initializer(g, "bn_scale", {16}, w.next(16, 0.2f));
  add_initializer(g, "bn_bias", {16}, w.next(16, 0.1f));
  add_initializer(g, "bn_mean", {16}, w.next(16, 0.1f));
  std::vector<float> var = w.next(16, 0.5f);
  for (float& v : var) v = 1.0f + std::fabs(v);
  add_initializer(g, "bn_var", {16}, var);
  add_initializer(g, "w2", {32, 16, 3, 3}, w.next(32 * 16 * 9, 0.15f));
  add_initializer(g, "b2", {32}, w.next(32, 0.1f));
  add_initializer(g, "clip_min", {}, {0.0f});
  add_initializer(g, "clip_max", {}, {6.0f});
  add_initializer(g, "w3", {10, 32}, w.next(10 * 32, 0.3f));
  add_initializer(g, "b3", {10}, w.next(10, 0.1f));

  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  if (!out || !model.SerializeToOstream(&out)) {
    std::fprintf(stderr, "make_demo_model: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
