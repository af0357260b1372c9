#include "tests/models/onnx_edit.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace hetero::test {

// Float values of an initializer.
std::vector<float> floats_of(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) throw std::runtime_error("initializer " + t.name() + " is not float32");
  if (t.has_raw_data()) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    return v;
  }
  return {t.float_data().begin(), t.float_data().end()};
}

onnx::TensorProto* find_initializer(onnx::GraphProto& g, const std::string& name) {
  for (auto& t : *g.mutable_initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<int> consumers(const onnx::GraphProto& g, const std::string& name) {
  std::vector<int> out;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input())
      if (in == name) {
        out.push_back(i);
        break;
      }
  return out;
}

bool is_graph_output(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& o : g.output())
    if (o.name() == name) return true;
  return false;
}

void add_scalar_initializer(onnx::GraphProto& g, const std::string& name, float v) {
  set_values(*g.add_initializer(), name, onnx::TensorProto::FLOAT, {}, std::vector<float>{v});
}

void constants_to_initializers(onnx::GraphProto& g) {
  auto* nodes = g.mutable_node();
  for (int i = 0; i < nodes->size();) {
    const onnx::NodeProto& n = nodes->Get(i);
    if (n.op_type() == "Constant" && n.attribute_size() == 1 && n.attribute(0).name() == "value") {
      onnx::TensorProto t = n.attribute(0).t();
      t.set_name(n.output(0));
      *g.add_initializer() = t;
      nodes->DeleteSubrange(i, 1);
    } else {
      ++i;
    }
  }
}


void fold_batch_norms(onnx::GraphProto& g) {
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto bn = g.node(i);
    if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5) continue;
    int producer = -1;
    for (int j = 0; j < g.node_size(); ++j)
      if (g.node(j).output_size() > 0 && g.node(j).output(0) == bn.input(0)) producer = j;
    if (producer < 0 || consumers(g, bn.input(0)).size() != 1 || is_graph_output(g, bn.input(0))) continue;
    onnx::NodeProto& conv = *g.mutable_node(producer);
    const bool transposed = conv.op_type() == "ConvTranspose";
    if (conv.op_type() != "Conv" && !transposed) continue;
    onnx::TensorProto* w = find_initializer(g, conv.input(1));
    std::vector<onnx::TensorProto*> p;
    for (int k = 1; k < 5; ++k) p.push_back(find_initializer(g, bn.input(k)));
    if (!w || std::find(p.begin(), p.end(), nullptr) != p.end()) continue;
    int64_t group = 1;
    float eps = 1e-5f;
    for (const auto& a : conv.attribute())
      if (a.name() == "group") group = a.i();
    for (const auto& a : bn.attribute())
      if (a.name() == "epsilon") eps = a.f();
    const std::vector<float> gamma = floats_of(*p[0]), beta = floats_of(*p[1]), mean = floats_of(*p[2]),
                             var = floats_of(*p[3]);
    const size_t m = gamma.size();
    std::vector<float> wv = floats_of(*w);
    std::vector<float> b(m, 0.0f);
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      const onnx::TensorProto* bt = find_initializer(g, conv.input(2));
      if (!bt) continue;
      b = floats_of(*bt);
    }
    std::vector<int64_t> wdims(w->dims().begin(), w->dims().end());
    // Output channel of each weight: Conv [M, C/G, k...]; ConvTranspose [C, M/G, k...].
    const size_t inner = wv.size() / static_cast<size_t>(wdims[0] * wdims[1]);
    for (size_t idx = 0; idx < wv.size(); ++idx) {
      const size_t d0 = idx / (static_cast<size_t>(wdims[1]) * inner), d1 = idx / inner % static_cast<size_t>(wdims[1]);
      const size_t channel = transposed ? d0 / (static_cast<size_t>(wdims[0]) / group) * wdims[1] + d1 : d0;
      wv[idx] = static_cast<float>(wv[idx] * (gamma[channel] / std::sqrt(static_cast<double>(var[channel]) + eps)));
    }
    for (size_t c = 0; c < m; ++c) {
      const double s = gamma[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      b[c] = static_cast<float>((b[c] - mean[c]) * s + beta[c]);
    }
    const std::string wname = conv.input(1) + "_bn_folded", bname = conv.output(0) + "_bn_bias";
    set_values(*g.add_initializer(), wname, onnx::TensorProto::FLOAT, wdims, wv);
    set_values(*g.add_initializer(), bname, onnx::TensorProto::FLOAT, {static_cast<int64_t>(m)}, b);
    conv.set_input(1, wname);
    if (conv.input_size() > 2) conv.set_input(2, bname);
    else conv.add_input(bname);
    conv.set_output(0, bn.output(0));
    g.mutable_node()->DeleteSubrange(i, 1);
    --i;
  }
}

void upgrade_to_opset13(onnx::ModelProto& model, const std::map<std::string, size_t>& ranks) {
  onnx::GraphProto& g = *model.mutable_graph();
  auto* opset = [&]() -> onnx::OperatorSetIdProto* {
    for (auto& o : *model.mutable_opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") return &o;
    return nullptr;
  }();
  if (!opset) throw std::runtime_error("the model imports no ai.onnx opset");
  const int64_t from = opset->version();
  if (from >= 13) return;
  auto take_attr = [](onnx::NodeProto& n, const std::string& name) -> std::optional<onnx::AttributeProto> {
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i)
      if (attrs->Get(i).name() == name) {
        onnx::AttributeProto a = attrs->Get(i);
        attrs->DeleteSubrange(i, 1);
        return a;
      }
    return std::nullopt;
  };
  for (auto& n : *g.mutable_node()) {
    const std::string base = n.name().empty() ? n.output(0) : n.name();
    if (n.op_type() == "Clip" && from < 11) {
      const auto lo = take_attr(n, "min"), hi = take_attr(n, "max");
      n.add_input(lo ? base + "_min" : "");
      n.add_input(hi ? base + "_max" : "");
      if (lo) add_scalar_initializer(g, base + "_min", lo->f());
      if (hi) add_scalar_initializer(g, base + "_max", hi->f());
      if (!hi) n.mutable_input()->RemoveLast();
    } else if (n.op_type() == "Slice" && from < 10) {
      const auto starts = take_attr(n, "starts"), ends = take_attr(n, "ends"), axes = take_attr(n, "axes");
      if (!starts || !ends) throw std::runtime_error("Slice " + base + " has no starts or ends");
      for (const auto& [suffix, attr] : {std::pair{"_starts", starts}, {"_ends", ends}, {"_axes", axes}}) {
        if (!attr) continue;
        const std::vector<int64_t> v(attr->ints().begin(), attr->ints().end());
        set_values(*g.add_initializer(), base + suffix, onnx::TensorProto::INT64, {static_cast<int64_t>(v.size())}, v);
        n.add_input(base + suffix);
      }
    } else if ((n.op_type() == "Softmax" || n.op_type() == "LogSoftmax") && from < 13) {
      int64_t axis = 1;
      for (const auto& a : n.attribute())
        if (a.name() == "axis") axis = a.i();
      const auto rank = ranks.find(n.input(0));
      if (rank == ranks.end() || (rank->second != 2 && axis != static_cast<int64_t>(rank->second) - 1 && axis != -1))
        throw std::runtime_error(n.op_type() + " " + base + " coerces its input to 2-D, which opset 13 does not");
    } else if (n.op_type() == "Upsample" || n.op_type() == "Resize") {
      if (from < 11) throw std::runtime_error(n.op_type() + " " + base + " predates opset 11; not converted");
    }
  }
  opset->set_version(13);
}

}  // namespace hetero::test
