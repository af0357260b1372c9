// Writes the daemon tests' models into the directory argv[1]:
//   scale.onnx  y = 2x + 1 over x float[1, 65536]: 256 KiB in and out, so
//               tensors travel as memfds both ways;
//   slow.onnx   eight 256x256 MatMuls over x float[1, 256, 256]: a few ms
//               per inference, so that requests are really in flight when a
//               test signals the daemon;
//   spin.onnx   a Loop of m iterations (int64 m, float[1, 4] x): with m =
//               2^62 it runs until it is cancelled;
//   heavy.onnx  2^16 nodes once its local functions are inlined: a load
//               that takes seconds (tests/unit/onnx_doubling.h);
//   bomb.onnx   the same chain 40 deep, 2^40 nodes: 1.6 KB that the
//               importer's budget must refuse;
//   expand.onnx float[1] x expanded to 2^28 values (1 GiB) and summed: a
//               model of a few hundred bytes whose one inference would take
//               a gigabyte;
//   long_node.onnx  one 4096x4096 MatMul (137 GFLOP) between two nodes that
//               take no time: a node that runs for seconds;
//   long_conv.onnx  the same with one 3x3 Conv of 256 channels over
//               384x384 (174 GFLOP);
//   accumulate.onnx  a running sum, stateful: y = totalN = x + total over
//               float[1, 4], the pair a sequence carries (totalN: total);
//   big_state.onnx  the same with a state of 16 MiB (float[1, 4194304]) and
//               a scalar x added to all of it; y is their sum.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/onnx_doubling.h"
#include "tests/unit/onnx_model_file.h"
#include "tests/unit/onnx_scalars.h"

namespace {

const char* const kScale = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
scale (float[1, 65536] x) => (float[1, 65536] y) {
  two = Constant<value = float {2.0}>()
  one = Constant<value = float {1.0}>()
  x2 = Mul(x, two)
  y = Add(x2, one)
}
)ONNX";

const char* const kSlow = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
slow (float[1, 256, 256] x) => (float[1, 256, 256] y) {
  a1 = MatMul(x, W)
  a2 = MatMul(a1, W)
  a3 = MatMul(a2, W)
  a4 = MatMul(a3, W)
  a5 = MatMul(a4, W)
  a6 = MatMul(a5, W)
  a7 = MatMul(a6, W)
  y = MatMul(a7, W)
}
)ONNX";

const char* const kSpin = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
spin (int64[] m, float[1, 4] x) => (float[1, 4] y) {
  go = Constant<value = bool {1}>()
  y = Loop(m, go, x) <body = step (int64[] i, bool[] c, float[1, 4] v) => (bool[] c_out, float[1, 4] v_out) {
    c_out = Identity(c)
    v_out = Neg(v)
  }>
}
)ONNX";

const char* const kAccumulate = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
accumulate (float[1, 4] x, float[1, 4] total) => (float[1, 4] y, float[1, 4] totalN) {
  totalN = Add(x, total)
  y = Identity(totalN)
}
)ONNX";

const char* const kBigState = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
big_state (float[1, 1] x, float[1, 4194304] total) => (float[1, 1] y, float[1, 4194304] totalN) {
  totalN = Add(total, x)
  y = ReduceSum<keepdims = 1>(totalN)
}
)ONNX";

const char* const kExpand = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
expand (float[1] x) => (float[1] y) {
  shape = Constant<value = int64[1] {268435456}>()
  big = Expand(x, shape)
  y = ReduceSum<keepdims = 1>(big)
}
)ONNX";

// 128 MiB of values in one inference, none of them kept by the outputs.
const char* const kActivations = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
activations (float[1] x) => (float[1] y) {
  shape = Constant<value = int64[1] {33554432}>()
  big = Expand(x, shape)
  y = ReduceSum<keepdims = 1>(big)
}
)ONNX";

const char* const kLongNode = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
long_node (float[1] x) => (float[1, 1] y) {
  shape = Constant<value = int64[2] {4096, 4096}>()
  a = Expand(x, shape)
  p = MatMul(a, a)
  y = ReduceSum<keepdims = 1>(p)
}
)ONNX";

const char* const kLongConv = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
long_conv (float[1] x) => (float[1, 1, 1, 1] y) {
  x_shape = Constant<value = int64[4] {1, 256, 384, 384}>()
  w_shape = Constant<value = int64[4] {256, 256, 3, 3}>()
  a = Expand(x, x_shape)
  w = Expand(x, w_shape)
  c = Conv<pads = [1, 1, 1, 1]>(a, w)
  y = ReduceSum<keepdims = 1>(c)
}
)ONNX";

const char* const kLongDeconv = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
long_deconv (float[1] x) => (float[1, 1, 1, 1] y) {
  x_shape = Constant<value = int64[4] {1, 256, 224, 224}>()
  w_shape = Constant<value = int64[4] {256, 256, 4, 4}>()
  a = Expand(x, x_shape)
  w = Expand(x, w_shape)
  c = ConvTranspose<strides = [2, 2], pads = [1, 1, 1, 1]>(a, w)
  y = ReduceSum<keepdims = 1>(c)
}
)ONNX";

// The same product through Einsum, which runs in the CPU driver's own loop.
const char* const kLongEinsum = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
long_einsum (float[1] x) => (float[1, 1] y) {
  shape = Constant<value = int64[2] {2304, 2304}>()
  a = Expand(x, shape)
  p = Einsum<equation = "ij,jk->ik">(a, a)
  y = ReduceSum<keepdims = 1>(p)
}
)ONNX";

// A recurrent layer: 16000 steps of an LSTM of 256 units, its weights made
// at run time (the CPU driver's plain path). All ones saturate every gate, so
// the final state is exactly 1 for each of the 256 units.
const char* const kLongLstm = R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "heterod-daemon-tests">
long_lstm (float[1] x) => (float[1, 1, 1] y) {
  x_shape = Constant<value = int64[3] {16000, 1, 256}>()
  w_shape = Constant<value = int64[3] {1, 1024, 256}>()
  seq = Expand(x, x_shape)
  w = Expand(x, w_shape)
  all, last = LSTM<hidden_size = 256>(seq, w, w)
  y = ReduceSum<keepdims = 1>(last)
}
)ONNX";

bool write_model(const std::string& path, const char* text, bool with_weight) {
  std::optional<onnx::ModelProto> parsed = hetero::test::parse_model_text("make_daemon_models", path, text);
  if (!parsed) return false;
  onnx::ModelProto& model = *parsed;
  hetero::test::give_scalars_their_shape(*model.mutable_graph());  // the spin model's m
  if (with_weight) {
    // A scaled permutation-like matrix: values stay in range through 8 products.
    std::vector<float> w(256 * 256, 0.0f);
    for (int i = 0; i < 256; ++i) {
      w[i * 256 + (i * 7 + 3) % 256] = 0.75f;
      w[i * 256 + (i * 13 + 5) % 256] += 0.25f;
    }
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    t->set_name("W");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(256);
    t->add_dims(256);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float)));
  }
  return hetero::test::write_message(path, model);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_daemon_models OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = write_model(dir + "/scale.onnx", kScale, false) && write_model(dir + "/slow.onnx", kSlow, true) &&
                  write_model(dir + "/spin.onnx", kSpin, false) &&
                  write_model(dir + "/heavy.onnx", hetero::test::doubling_functions(16).c_str(), false) &&
                  write_model(dir + "/bomb.onnx", hetero::test::doubling_functions(40).c_str(), false) &&
                  write_model(dir + "/expand.onnx", kExpand, false) &&
                  write_model(dir + "/long_node.onnx", kLongNode, false) &&
                  write_model(dir + "/long_conv.onnx", kLongConv, false) &&
                  write_model(dir + "/long_einsum.onnx", kLongEinsum, false) &&
                  write_model(dir + "/long_deconv.onnx", kLongDeconv, false) &&
                  write_model(dir + "/long_lstm.onnx", kLongLstm, false) &&
                  write_model(dir + "/activations.onnx", kActivations, false) &&
                  write_model(dir + "/accumulate.onnx", kAccumulate, false) &&
                  write_model(dir + "/big_state.onnx", kBigState, false);
  return ok ? 0 : 1;
}
