// A small static quantizer for the int8 model tests and benchmark: it writes
// a QDQ model the way ONNX Runtime's quantize_static does by default (uint8
// asymmetric per-tensor activations, int8 symmetric per-channel weights,
// int32 biases, QuantizeLinear/DequantizeLinear pairs around the quantised
// ops), calibrated with one run of the float model on the given inputs.
//
//   quantize_model FLOAT.onnx OUT.onnx --input NAME=FILE.npy [...] [--reduce-range]
//                  [--report FILE.json]
//
// Before quantising it does what ONNX Runtime's pre-processing does for such
// models: Constant nodes become initializers, BatchNormalization after a
// Conv or ConvTranspose is folded into it, and the opset is raised to 13
// (per-axis DequantizeLinear), rewriting the ops whose form changed on the
// way (Clip and Slice take inputs instead of attributes; Softmax is checked
// to be unchanged: its input has rank 2, or the axis is the last one). Like
// quantize_static, a Relu or Clip right after a quantised op is dropped: the
// quantisation of its output (which starts at its lower bound) clamps the
// same. The calibration run uses heterod's CPU driver in-process, with every
// float tensor made a graph output. --reduce-range writes 7-bit weights
// ([-64, 64]), what processors without VNNI need for exact int8 products.
//
// --report writes what the tests need to know of the result, as JSON:
//   outputs: graph output -> {scale, zero_point} (each output is a DQ's), so
//            that differences can be counted in quantisation steps;
//   split:   names of the nodes of a first half of the graph that only hands
//            quantised tensors (Q outputs) to the rest, for HETERO splits that
//            keep every QDQ group whole.
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "capi/npy.h"
#include "core/error.h"
#include "core/onnx_import.h"
#include "core/runtime.h"
#include "tests/models/onnx_edit.h"

namespace {

using hetero::core::Tensor;
using namespace hetero::test;

struct Range {
  float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
};

// Ops whose activations are quantised (ONNX Runtime's QDQ defaults for them).
const std::set<std::string> kQuantizedOps = {
    "Conv", "ConvTranspose", "MatMul", "Gemm", "Add", "Mul", "LeakyRelu", "Sigmoid", "Relu", "Clip",
    "GlobalAveragePool", "AveragePool", "MaxPool", "Concat", "Resize", "Reshape", "Transpose", "Squeeze",
    "Unsqueeze", "Flatten", "Softmax", "Split"};
// Of those, the ones whose output shares its input's parameters.
const std::set<std::string> kSharedParamOps = {"MaxPool", "Resize", "Reshape", "Transpose", "Squeeze",
                                               "Unsqueeze", "Flatten", "Split"};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "quantize_model: %s\n", message.c_str());
  std::exit(1);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Quantizer {
 public:
  Quantizer(onnx::ModelProto model, bool reduce_range) : model_(std::move(model)), reduce_range_(reduce_range) {}

  // Constant nodes become initializers; BatchNormalization is folded.
  void prepare();
  void calibrate(const std::map<std::string, Tensor>& inputs);
  void upgrade() { upgrade_to_opset13(model_, ranks_); }
  void quantize();
  const onnx::ModelProto& model() const { return model_; }
  std::string report();

 private:
  onnx::GraphProto& g() { return *model_.mutable_graph(); }
  onnx::TensorProto* initializer(const std::string& name) { return find_initializer(g(), name); }
  std::vector<int> consumers(const std::string& name) { return hetero::test::consumers(g(), name); }
  bool is_graph_output(const std::string& name) { return hetero::test::is_graph_output(g(), name); }
  void drop_activations();
  std::string quantize_weights(const std::string& name, size_t axis, bool per_channel, std::vector<float>& scales);
  std::string quantize_bias(const std::string& name, float x_scale, const std::vector<float>& w_scales);
  std::string quantize_constant(const std::string& name);
  std::pair<float, int> activation_params(const Range& r) const;
  void add_initializer_scalar(const std::string& name, float v) { add_scalar_initializer(g(), name, v); }
  // A DequantizeLinear of `base` with `base`_scale and `base`_zero_point
  // (per axis when axis >= 0); returns its output's name.
  std::string add_dequantize(const std::string& base, int64_t axis = -1);

  onnx::ModelProto model_;
  bool reduce_range_;
  std::map<std::string, Range> ranges_;
  std::map<std::string, size_t> ranks_;  // of the float tensors, from calibration
  // Weights already quantised (shared by several ops): DQ output and scales.
  std::map<std::string, std::pair<std::string, std::vector<float>>> weights_done_;
  std::map<std::string, std::pair<float, int>> output_params_;
  int serial_ = 0;
};

void Quantizer::prepare() {
  constants_to_initializers(g());
  fold_batch_norms(g());
}

void Quantizer::calibrate(const std::map<std::string, Tensor>& inputs) {
  onnx::ModelProto probe = model_;
  onnx::shape_inference::InferShapes(probe, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(false, 0, true));
  std::set<std::string> outputs;
  for (const auto& o : probe.graph().output()) outputs.insert(o.name());
  for (const auto& vi : probe.graph().value_info()) {
    if (vi.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT || outputs.count(vi.name())) continue;
    *probe.mutable_graph()->add_output() = vi;
    outputs.insert(vi.name());
  }
  std::string bytes;
  probe.SerializeToString(&bytes);
  hetero::core::ImportOptions options;
  options.check = false;  // outputs whose shape inference could not tell have none
  for (const auto& [name, t] : inputs) options.input_shapes[name] = t.shape();
  auto model = hetero::core::import_onnx_bytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, options,
                                               "calibration model");
  hetero::core::Runtime runtime;
  auto compiled = runtime.compile(*model, "CPU");
  auto request = compiled->create_infer_request();
  for (size_t i = 0; i < compiled->inputs().size(); ++i) {
    auto it = inputs.find(compiled->inputs()[i].name);
    if (it == inputs.end()) die("no --input for model input " + compiled->inputs()[i].name);
    request->set_input(i, it->second);
  }
  request->infer();
  auto measure = [&](const std::string& name, const Tensor& t) {
    ranks_[name] = t.rank();
    Range& r = ranges_[name];
    for (float v : t.values<float>()) {
      if (std::isnan(v)) continue;
      r.lo = std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    }
  };
  for (const auto& [name, t] : inputs)
    if (t.dtype() == hetero::core::DType::F32) measure(name, t);
  for (size_t i = 0; i < compiled->outputs().size(); ++i) {
    const Tensor t = request->output(i);
    if (t.dtype() != hetero::core::DType::F32) continue;
    measure(compiled->outputs()[i].name, t);
  }
}

// A Relu or Clip after a quantised op goes: the op writes the activation's
// output, whose range (starting at the activation's lower bound) then clamps.
void Quantizer::drop_activations() {
  for (int i = 0; i < g().node_size(); ++i) {
    const onnx::NodeProto act = g().node(i);
    if (act.op_type() != "Relu" && act.op_type() != "Clip") continue;
    const std::string& in = act.input(0);
    if (consumers(in).size() != 1 || is_graph_output(in)) continue;
    int producer = -1;
    for (int j = 0; j < g().node_size(); ++j)
      for (int k = 0; k < g().node(j).output_size(); ++k)
        if (g().node(j).output(k) == in) producer = j;
    if (producer < 0 || !kQuantizedOps.count(g().node(producer).op_type()) || g().node(producer).output_size() != 1)
      continue;
    g().mutable_node(producer)->set_output(0, act.output(0));
    g().mutable_node()->DeleteSubrange(i, 1);
    --i;
  }
}

std::pair<float, int> Quantizer::activation_params(const Range& r) const {
  // ONNX Runtime's compute_scale_zp for uint8: the range always holds 0.
  const float lo = std::min(r.lo, 0.0f), hi = std::max(r.hi, 0.0f);
  float scale = (hi - lo) / 255.0f;
  if (!(scale > 0) || !std::isfinite(scale)) return {1.0f, 0};
  const int zp = static_cast<int>(std::clamp(std::nearbyint(0.0f - lo / scale), 0.0f, 255.0f));
  return {scale, zp};
}

std::string Quantizer::add_dequantize(const std::string& base, int64_t axis) {
  onnx::NodeProto& dq = *g().add_node();
  dq.set_op_type("DequantizeLinear");
  dq.set_name(base + "_DequantizeLinear");
  dq.add_input(base);
  dq.add_input(base + "_scale");
  dq.add_input(base + "_zero_point");
  dq.add_output(base + "_dequantized");
  if (axis >= 0) {
    auto* a = dq.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return dq.output(0);
}

// Symmetric int8 weights, per channel along `axis` (or per tensor); returns
// the DequantizeLinear output's name.
std::string Quantizer::quantize_weights(const std::string& name, size_t axis, bool per_channel,
                                        std::vector<float>& scales) {
  if (auto it = weights_done_.find(name); it != weights_done_.end()) {
    scales = it->second.second;
    return it->second.first;
  }
  const onnx::TensorProto& w = *initializer(name);
  const std::vector<float> v = floats_of(w);
  const std::vector<int64_t> dims(w.dims().begin(), w.dims().end());
  size_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  const size_t channels = per_channel ? static_cast<size_t>(dims[axis]) : 1;
  const float qmax = reduce_range_ ? 64.0f : 127.0f;
  std::vector<float> absmax(channels, 0.0f);
  auto channel_of = [&](size_t i) { return per_channel ? i / inner % channels : 0; };
  for (size_t i = 0; i < v.size(); ++i) absmax[channel_of(i)] = std::max(absmax[channel_of(i)], std::fabs(v[i]));
  scales.assign(channels, 1.0f);
  for (size_t c = 0; c < channels; ++c)
    if (absmax[c] > 0) scales[c] = absmax[c] * 2.0f / (2.0f * qmax);
  std::vector<int8_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(v[i] / scales[channel_of(i)]), -qmax, qmax));
  const std::string base = name + "_quantized";
  set_values(*g().add_initializer(), base, onnx::TensorProto::INT8, dims, q);
  const std::vector<int64_t> pdims = per_channel ? std::vector<int64_t>{static_cast<int64_t>(channels)} : std::vector<int64_t>{};
  set_values(*g().add_initializer(), base + "_scale", onnx::TensorProto::FLOAT, pdims, scales);
  set_values(*g().add_initializer(), base + "_zero_point", onnx::TensorProto::INT8, pdims,
             std::vector<int8_t>(channels, 0));
  const std::string out = add_dequantize(base, per_channel ? static_cast<int64_t>(axis) : -1);
  weights_done_[name] = {out, scales};
  return out;
}

// int32 bias with scale x_scale * w_scale (per output channel).
std::string Quantizer::quantize_bias(const std::string& name, float x_scale, const std::vector<float>& w_scales) {
  const std::vector<float> v = floats_of(*initializer(name));
  std::vector<float> scales(v.size());
  std::vector<int32_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    scales[i] = x_scale * w_scales[w_scales.size() == 1 ? 0 : i];
    q[i] = static_cast<int32_t>(std::nearbyint(v[i] / scales[i]));
  }
  const std::string base = name + "_quantized";
  const int64_t n = static_cast<int64_t>(v.size());
  set_values(*g().add_initializer(), base, onnx::TensorProto::INT32, {n}, q);
  set_values(*g().add_initializer(), base + "_scale", onnx::TensorProto::FLOAT, {n}, scales);
  set_values(*g().add_initializer(), base + "_zero_point", onnx::TensorProto::INT32, {n}, std::vector<int32_t>(v.size(), 0));
  return add_dequantize(base, 0);
}

// A float initializer read by an Add or Mul: uint8 per tensor, like an activation.
std::string Quantizer::quantize_constant(const std::string& name) {
  const onnx::TensorProto& c = *initializer(name);
  const std::vector<float> v = floats_of(c);
  Range r;
  for (float x : v) r.lo = std::min(r.lo, x), r.hi = std::max(r.hi, x);
  const auto [scale, zp] = activation_params(r);
  std::vector<uint8_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) q[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(v[i] / scale) + zp, 0.0f, 255.0f));
  const std::string base = name + "_quantized";
  set_values(*g().add_initializer(), base, onnx::TensorProto::UINT8, {c.dims().begin(), c.dims().end()}, q);
  add_initializer_scalar(base + "_scale", scale);
  set_values(*g().add_initializer(), base + "_zero_point", onnx::TensorProto::UINT8, {}, std::vector<uint8_t>{static_cast<uint8_t>(zp)});
  return add_dequantize(base);
}

void Quantizer::quantize() {
  drop_activations();
  // Sort so that shared parameters flow from inputs to outputs.
  std::map<std::string, std::pair<float, int>> params;  // activation tensor -> (scale, zp)
  std::set<std::string> initializers;
  for (const auto& t : g().initializer()) initializers.insert(t.name());
  const int original_nodes = g().node_size();
  auto data_inputs = [](const onnx::NodeProto& n) -> size_t {
    if (n.op_type() == "Add" || n.op_type() == "Mul" || n.op_type() == "Concat") return n.input_size();
    return 1;
  };
  for (int i = 0; i < original_nodes; ++i) {
    const onnx::NodeProto& n = g().node(i);
    if (!kQuantizedOps.count(n.op_type())) continue;
    for (size_t k = 0; k < data_inputs(n); ++k) {
      const std::string& in = n.input(static_cast<int>(k));
      if (in.empty() || initializers.count(in) || params.count(in) || !ranges_.count(in)) continue;
      params[in] = activation_params(ranges_[in]);
    }
    for (const std::string& out : n.output()) {
      if (!ranges_.count(out) || params.count(out)) continue;
      if (kSharedParamOps.count(n.op_type()) && params.count(n.input(0))) params[out] = params[n.input(0)];
      // Probabilities: [0, 1) in steps of 1/256, as ONNX Runtime fixes them
      // (its fused softmax kernel assumes so).
      else if (n.op_type() == "Softmax") params[out] = {1.0f / 256.0f, 0};
      else params[out] = activation_params(ranges_[out]);
    }
  }
  // Weights, biases and the constants of Add/Mul.
  for (int i = 0; i < original_nodes; ++i) {
    onnx::NodeProto n = g().node(i);
    const std::string& op = n.op_type();
    if (!kQuantizedOps.count(op)) continue;
    const bool conv = op == "Conv" || op == "ConvTranspose";
    if ((conv || op == "MatMul" || op == "Gemm") && n.input_size() > 1 && initializers.count(n.input(1)) &&
        params.count(n.input(0))) {
      int64_t group = 1, trans_b = 0;
      for (const auto& a : n.attribute()) {
        if (a.name() == "group") group = a.i();
        if (a.name() == "transB") trans_b = a.i();
      }
      const onnx::TensorProto& w = *initializer(n.input(1));
      size_t axis = op == "Conv" ? 0 : op == "ConvTranspose" ? 1 : op == "Gemm" && trans_b ? 0 : 1;
      const bool per_channel = w.dims_size() >= 2 && !(op == "ConvTranspose" && group != 1);
      std::vector<float> scales;
      n.set_input(1, quantize_weights(n.input(1), axis, per_channel, scales));
      if ((conv || op == "Gemm") && n.input_size() > 2 && initializers.count(n.input(2))) {
        const onnx::TensorProto& b = *initializer(n.input(2));
        if (b.dims_size() == 1) n.set_input(2, quantize_bias(n.input(2), params[n.input(0)].first, scales));
      }
    } else if (op == "Add" || op == "Mul") {
      for (int k = 0; k < n.input_size(); ++k)
        if (initializers.count(n.input(k))) n.set_input(k, quantize_constant(n.input(k)));
    }
    *g().mutable_node(i) = n;
  }
  // Q -> DQ after every quantised activation; its readers read the DQ.
  for (const auto& [name, p] : params) {
    const std::string base = name + "_" + std::to_string(serial_++);
    std::string source = name;
    if (is_graph_output(name)) {
      // The graph output keeps its name, on the DQ.
      source = name + "_float";
      for (auto& node : *g().mutable_node())
        for (auto& out : *node.mutable_output())
          if (out == name) out = source;
      for (auto& node : *g().mutable_node())
        for (auto& in : *node.mutable_input())
          if (in == name) in = source;
    }
    if (is_graph_output(name)) output_params_[name] = p;
    const std::string dq_out = is_graph_output(name) ? name : base + "_dequantized";
    for (auto& node : *g().mutable_node())
      for (auto& in : *node.mutable_input())
        if (in == source) in = dq_out;
    add_initializer_scalar(base + "_scale", p.first);
    set_values(*g().add_initializer(), base + "_zero_point", onnx::TensorProto::UINT8, {},
               std::vector<uint8_t>{static_cast<uint8_t>(p.second)});
    onnx::NodeProto& q = *g().add_node();
    q.set_op_type("QuantizeLinear");
    q.set_name(base + "_QuantizeLinear");
    q.add_input(source);
    q.add_input(base + "_scale");
    q.add_input(base + "_zero_point");
    q.add_output(base + "_quantized");
    onnx::NodeProto& dq = *g().add_node();
    dq.set_op_type("DequantizeLinear");
    dq.set_name(base + "_DequantizeLinear");
    dq.add_input(base + "_quantized");
    dq.add_input(base + "_scale");
    dq.add_input(base + "_zero_point");
    dq.add_output(dq_out);
  }
  // Nodes in topological order again (the new ones were appended).
  std::vector<onnx::NodeProto> pending(g().node().begin(), g().node().end()), sorted;
  std::set<std::string> known(initializers.begin(), initializers.end());
  for (const auto& t : g().initializer()) known.insert(t.name());
  for (const auto& in : g().input()) known.insert(in.name());
  while (!pending.empty()) {
    const size_t before = pending.size();
    for (auto it = pending.begin(); it != pending.end();) {
      bool ready = true;
      for (const auto& in : it->input()) ready = ready && (in.empty() || known.count(in));
      if (!ready) {
        ++it;
        continue;
      }
      for (const auto& out : it->output()) known.insert(out);
      sorted.push_back(*it);
      it = pending.erase(it);
    }
    if (pending.size() == before) die("the quantised graph has a cycle or a dangling input (" + pending[0].name() + ")");
  }
  g().clear_node();
  for (auto& n : sorted) {
    if (n.name().empty()) n.set_name("node_" + std::to_string(serial_++));
    *g().add_node() = std::move(n);
  }
  // The float weights the quantised ones replaced.
  std::set<std::string> used;
  for (const auto& n : g().node())
    for (const auto& in : n.input()) used.insert(in);
  for (const auto& o : g().output()) used.insert(o.name());
  auto* inits = g().mutable_initializer();
  for (int i = inits->size(); i-- > 0;)
    if (!used.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  g().clear_value_info();
  model_.set_producer_name("heterod-test-quantizer");
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string Quantizer::report() {
  std::string out = "{\n  \"outputs\": {";
  bool first = true;
  for (const auto& [name, p] : output_params_) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.9g", p.first);
    out += std::string(first ? "" : ",") + "\n    " + json_string(name) + ": {\"scale\": " + scale +
           ", \"zero_point\": " + std::to_string(p.second) + "}";
    first = false;
  }
  // The first prefix of at least half the nodes that hands the rest only Q outputs.
  const int n = g().node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g().node(i).output()) producer[o] = i;
  int cut = -1;
  for (int k = n / 2; k < n && cut < 0; ++k) {
    bool clean = true;
    for (int i = k; i < n && clean; ++i)
      for (const auto& in : g().node(i).input()) {
        auto it = producer.find(in);
        if (it != producer.end() && it->second < k && g().node(it->second).op_type() != "QuantizeLinear") clean = false;
      }
    if (clean) cut = k;
  }
  out += "\n  },\n  \"split\": [";
  for (int i = 0; i < cut; ++i) out += std::string(i ? ", " : "") + json_string(g().node(i).name());
  return out + "]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path;
  std::map<std::string, std::string> input_files;
  bool reduce_range = false;
  std::string report_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--input" && i + 1 < argc) {
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) die("--input wants NAME=FILE.npy, got " + spec);
      input_files[spec.substr(0, eq)] = spec.substr(eq + 1);
    } else if (a == "--report" && i + 1 < argc) {
      report_path = argv[++i];
    } else if (a == "--reduce-range") {
      reduce_range = true;
    } else if (in_path.empty()) {
      in_path = a;
    } else if (out_path.empty()) {
      out_path = a;
    } else {
      die("unexpected argument " + a);
    }
  }
  if (in_path.empty() || out_path.empty() || input_files.empty())
    die("usage: quantize_model FLOAT.onnx OUT.onnx --input NAME=FILE.npy [...] [--reduce-range]");
  try {
    onnx::ModelProto model;
    const std::vector<uint8_t> bytes = read_file(in_path);
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) die(in_path + " is not an ONNX model");
    std::map<std::string, Tensor> inputs;
    for (const auto& [name, file] : input_files) inputs[name] = hetero::capi::npy_decode(read_file(file), file);
    Quantizer q(std::move(model), reduce_range);
    q.prepare();
    q.calibrate(inputs);
    q.upgrade();
    q.quantize();
    std::string out;
    q.model().SerializeToString(&out);
    const std::string tmp = out_path + ".partial";
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.close();
    if (!f || std::rename(tmp.c_str(), out_path.c_str()) != 0) die("cannot write " + out_path);
    if (!report_path.empty()) {
      std::ofstream r(report_path, std::ios::trunc);
      r << q.report();
      if (!r) die("cannot write " + report_path);
    }
  } catch (const std::exception& e) {
    die(e.what());
  }
  return 0;
}
