// Writes LSTM, GRU and RNN models with the attribute combinations ONNX's
// backend test data leaves out (clip, input_forget, peepholes with sequence
// lengths, every activation function with alpha and beta, linear_before_reset,
// two directions with different activations) into the directory argv[1], for
// check_recurrent.js to run against ONNX Runtime. Each model takes
// x float[4, 3, 3], lens int32[3], h (and c for LSTM) float[D, 3, 5].
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/onnx_model_file.h"

namespace {

struct Spec {
  const char* file;
  const char* op;
  int directions;
  const char* attributes;  // after hidden_size
};

const Spec kModels[] = {
    {"lstm_clip_input_forget", "LSTM", 2, R"(direction = "bidirectional", clip = 0.7, input_forget = 1)"},
    {"lstm_activations", "LSTM", 1,
     R"(direction = "reverse", activations = ["HardSigmoid", "ScaledTanh", "LeakyRelu"],
        activation_alpha = [0.3, 1.5, 0.2], activation_beta = [0.4, 0.7])"},
    {"gru_lbr_activations", "GRU", 2,
     R"(direction = "bidirectional", linear_before_reset = 1, clip = 1.1,
        activations = ["Affine", "Elu", "Sigmoid", "Softsign"], activation_alpha = [0.9, 0.5],
        activation_beta = [0.1])"},
    {"gru_activations", "GRU", 1, R"(activations = ["ThresholdedRelu", "Softplus"], activation_alpha = [0.05])"},
    {"rnn_two_activations", "RNN", 2, R"(direction = "bidirectional", activations = ["Relu", "Tanh"])"},
    {"rnn_leaky_clip", "RNN", 1,
     R"(direction = "reverse", activations = ["LeakyRelu"], activation_alpha = [0.15], clip = 0.5)"},
};

constexpr int kHidden = 5, kInput = 3;

// Weights of no particular meaning, as raw_data.
void fill(onnx::TensorProto& t, const std::string& name, std::vector<int64_t> dims, float scale, float phase) {
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  size_t n = 1;
  for (int64_t d : dims) t.add_dims(d), n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(static_cast<float>(i) * 0.91f + phase);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), n * sizeof(float)));
}

bool write(const std::string& dir, const Spec& s) {
  const bool lstm = std::string(s.op) == "LSTM";
  const int gates = lstm ? 4 : std::string(s.op) == "GRU" ? 3 : 1;
  const std::string d = std::to_string(s.directions);
  const std::string state = "float[" + d + ", 3, 5]";
  std::string text = "<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[4, 3, 3] x, int32[3] lens, " + state + " h";
  if (lstm) text += ", " + state + " c";
  text += ") => (float[4, " + d + ", 3, 5] y, " + state + " y_h";
  if (lstm) text += ", " + state + " y_c";
  text += ") {\n  y, y_h" + std::string(lstm ? ", y_c" : "") + " = " + s.op + " <hidden_size = 5, " + s.attributes +
          "> (x, W, R, B, lens, h" + (lstm ? ", c, P" : "") + ")\n}\n";
  std::optional<onnx::ModelProto> model = hetero::test::parse_model_text("make_rnn_models", s.file, text);
  if (!model) return false;
  auto* g = model->mutable_graph();
  const int64_t dirs = s.directions, gh = gates * kHidden;
  fill(*g->add_initializer(), "W", {dirs, gh, kInput}, 0.6f, 0.1f);
  fill(*g->add_initializer(), "R", {dirs, gh, kHidden}, 0.6f, 0.7f);
  fill(*g->add_initializer(), "B", {dirs, 2 * gh}, 0.4f, 1.3f);
  if (lstm) fill(*g->add_initializer(), "P", {dirs, 3 * kHidden}, 0.5f, 2.1f);
  return hetero::test::write_message(dir + "/" + s.file + ".onnx", *model);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_rnn_models OUTDIR\n");
    return 2;
  }
  for (const Spec& s : kModels)
    if (!write(argv[1], s)) return 1;
  return 0;
}
