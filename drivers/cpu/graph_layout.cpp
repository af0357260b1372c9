// The channels-last layout pass (see graph_passes.h).
//
// Every convolution is switched to channels-last activations; then, in
// topological order, an op whose kernel does not care about the layout (an
// elementwise op, Concat, Resize) or has a channels-last form (pools,
// BatchNormalization) follows when one of its inputs already is
// channels-last. A converted node reads the channels-last twin of each
// activation input (made by a ToChannelsLast node where missing; constants
// are permuted once here) and writes a twin of its output. The original
// value, where something else still reads it or it is a graph output, is
// then made from the twin by a ToChannelsFirst node. Shapes of twins are the
// originals permuted: [N, C, H, W] becomes [N, H, W, C].
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "drivers/cpu/conv_dft.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu::passes {

namespace {

enum class Role { Conv, Pool, Norm, Elementwise, Concat, Resize };

bool in_list(const std::string& op, std::initializer_list<const char*> list) {
  for (const char* s : list)
    if (op == s) return true;
  return false;
}

bool output_unused(const core::Graph& g, const core::Value* v) {
  return !v || (v->uses.empty() && !is_graph_output(g, v));
}

std::optional<Role> role_of(const core::Graph& g, const core::Node* n) {
  if (n->domain == kCpuDomain) {
    const std::string& op = n->op_type;
    if (op == "FusedConv" || op == "FusedConvTranspose" || op == "QLinearConv") return Role::Conv;
    if (op == "QLinearGlobalAveragePool" || op == "QLinearAveragePool") return Role::Pool;
    if (op == "QLinearAdd" || op == "QLinearMul" || op == "QLinearUnary" || op == "QLinearTable") return Role::Elementwise;
    if (op == "QLinearConcat") return Role::Concat;
    return std::nullopt;
  }
  if (!n->domain.empty()) return std::nullopt;
  const std::string& op = n->op_type;
  if (op == "Conv" && n->input(1) && n->input(1)->constant && dft_basis(*n->input(1)->constant)) {
    // A short-time Fourier transform: its kernel runs FFTs over the
    // channels-first signal and writes bins as rows (conv_dft.h), and what
    // reads them (a transpose to frames x bins, magnitudes) gains nothing
    // from channels-last.
    return std::nullopt;
  }
  if (op == "Conv" || op == "ConvTranspose") return Role::Conv;
  if (in_list(op, {"AveragePool", "GlobalAveragePool", "GlobalMaxPool"})) return Role::Pool;
  if (op == "MaxPool") {
    // Indices address channels-first memory.
    if (n->outputs.size() > 1 && !output_unused(g, n->outputs[1])) return std::nullopt;
    return Role::Pool;
  }
  if (op == "BatchNormalization") {
    for (size_t i = 1; i < n->outputs.size(); ++i)
      if (!output_unused(g, n->outputs[i])) return std::nullopt;
    return Role::Norm;
  }
  if (in_list(op, {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Clip", "Elu", "Selu", "Exp",
                   "Log", "Abs", "Neg", "Sqrt", "Reciprocal", "Softplus", "Erf", "Floor", "Ceil", "Identity", "Add",
                   "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu"}))
    return Role::Elementwise;
  if (op == "Concat") return Role::Concat;
  if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    // Per tensor, they are elementwise; per axis, the axis would move.
    const core::Value* scale = n->input(1);
    if (scale && scale->constant && scale->constant->numel() == 1) return Role::Elementwise;
    return std::nullopt;
  }
  if (op == "Resize" && !n->has_attr("axes") && n->opset != 10) return Role::Resize;
  return std::nullopt;
}

// Inputs that carry activations (converted with the node).
bool activation_input(Role role, size_t i) {
  switch (role) {
    case Role::Conv: return i == 0 || i >= 3;
    case Role::Pool:
    case Role::Norm:
    case Role::Resize: return i == 0;
    case Role::Elementwise:
    case Role::Concat: return true;
  }
  return false;
}

// Memory order of a channels-last tensor of rank r, as a permutation of the
// channels-first dims: N, spatial..., C.
std::vector<size_t> to_last_perm(size_t rank) {
  std::vector<size_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}

// Where channels-first axis `axis` lives in channels-last memory.
int64_t cl_axis(int64_t axis, size_t rank) {
  if (axis == 0) return 0;
  if (axis == 1) return static_cast<int64_t>(rank) - 1;
  return axis - 1;
}

template <typename T>
std::vector<T> permuted(const std::vector<T>& v, size_t rank) {
  std::vector<T> out;
  for (size_t i : to_last_perm(rank)) out.push_back(v[i]);
  return out;
}

// A constant broadcast against rank-r activations, padded to rank r and
// permuted like them.
core::Tensor permute_constant(const core::Tensor& c, size_t rank) {
  core::Shape padded(rank - c.rank(), 1);
  padded.insert(padded.end(), c.shape().begin(), c.shape().end());
  const core::Shape out_shape = permuted(padded, rank);
  core::Tensor out = core::Tensor::allocate(c.dtype(), out_shape, false);
  const size_t elem = core::dtype_size(c.dtype());
  // Strides of the padded source, visited in output order.
  std::vector<int64_t> src_strides(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) src_strides[i - 1] = src_strides[i] * padded[i];
  const std::vector<size_t> perm = to_last_perm(rank);
  const auto* src = static_cast<const char*>(c.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (size_t o = 0; o < out.numel(); ++o) {
    size_t rem = o, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      const size_t idx = rem % static_cast<size_t>(out_shape[d]);
      rem /= static_cast<size_t>(out_shape[d]);
      offset += idx * static_cast<size_t>(src_strides[perm[d]]);
    }
    std::memcpy(dst + o * elem, src + offset * elem, elem);
  }
  return out;
}

class LayoutPass {
 public:
  explicit LayoutPass(core::Graph& g) : g_(g), names_(g) {}
  void run();

 private:
  bool convertible(const core::Node* n, Role role, size_t rank) const;
  void convert(core::Node* n, Role role, size_t rank);
  core::Value* twin_of(core::Value* v, size_t rank);
  core::Value* layout_node(const char* op, core::Value* in, core::Value* out);
  core::Value* new_twin(const core::Value* v, size_t rank);

  core::Graph& g_;
  NameGen names_;
  std::unordered_map<const core::Value*, core::Value*> twin_;
  std::vector<core::Value*> produced_;  // originals whose producer now writes the twin
};

// Activations the region carries: float32, and the 8-bit codes of int8 nodes.
bool activation_type(core::DType t) {
  return t == core::DType::F32 || t == core::DType::U8 || t == core::DType::I8;
}

bool LayoutPass::convertible(const core::Node* n, Role role, size_t rank) const {
  if (n->outputs.empty() || !n->outputs[0] || !used_only_in(g_, n->outputs[0])) return false;
  const core::Value* out = n->outputs[0];
  if (!activation_type(out->dtype) || rank_of(out) != rank) return false;
  bool has_twin = false;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    const core::Value* in = n->inputs[i];
    if (!in || !activation_input(role, i)) continue;
    if (!activation_type(in->dtype)) return false;
    const auto r = rank_of(in);
    if (!r || *r > rank) return false;
    if (twin_.count(in)) has_twin = true;
    // A non-constant operand of lower rank would need an Unsqueeze first.
    else if (!in->constant && *r != rank && *r != 0) return false;
  }
  if (role == Role::Resize) {
    for (size_t i = 1; i < n->inputs.size(); ++i)
      if (n->inputs[i] && !n->inputs[i]->constant) return false;
  }
  return role == Role::Conv || has_twin;
}

core::Value* LayoutPass::new_twin(const core::Value* v, size_t rank) {
  core::Value* t = g_.add_value(names_.value(v->name + "/nhwc"));
  t->dtype = v->dtype;
  if (v->shape && v->shape->size() == rank) t->shape = permuted(*v->shape, rank);
  return t;
}

core::Value* LayoutPass::layout_node(const char* op, core::Value* in, core::Value* out) {
  core::Node* n = g_.add_node(op, names_.node(in->name + "/" + op));
  n->domain = kCpuDomain;
  n->opset = 1;
  g_.set_input(n, 0, in);
  g_.set_output(n, 0, out);
  return out;
}

core::Value* LayoutPass::twin_of(core::Value* v, size_t rank) {
  auto it = twin_.find(v);
  if (it != twin_.end()) return it->second;
  core::Value* t;
  if (v->constant) {
    core::Tensor c = permute_constant(*v->constant, rank);
    t = add_constant(g_, names_, v->name + "/nhwc", std::move(c));
  } else {
    t = layout_node("ToChannelsLast", v, new_twin(v, rank));
  }
  twin_[v] = t;
  return t;
}

void LayoutPass::convert(core::Node* n, Role role, size_t rank) {
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    core::Value* in = n->inputs[i];
    if (!in || !activation_input(role, i)) continue;
    const size_t r = *rank_of(in);
    // Scalars broadcast the same in any layout.
    if (r == 0 || (in->constant && in->constant->numel() == 1 && !twin_.count(in))) continue;
    replace_input(g_, n, i, twin_of(in, rank));
  }
  switch (role) {
    case Role::Conv:
      if (n->domain.empty()) n->op_type = n->op_type == "Conv" ? "FusedConv" : "FusedConvTranspose";
      [[fallthrough]];
    case Role::Pool:
    case Role::Norm:
      n->domain = kCpuDomain;
      n->opset = 1;
      set_attr_int(n, kChannelsLastAttr, 1);
      break;
    case Role::Concat: {
      int64_t axis = n->attr_int("axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(rank);
      set_attr_int(n, "axis", cl_axis(axis, rank));
      break;
    }
    case Role::Resize:
      // roi is [starts..., ends...]; scales and sizes one value per axis.
      for (size_t i = 1; i < n->inputs.size() && i < 4; ++i) {
        core::Value* in = n->inputs[i];
        if (!in || in->constant->numel() == 0) continue;
        const core::Tensor& c = *in->constant;
        const size_t parts = c.numel() == 2 * rank ? 2 : 1;
        if (c.numel() != parts * rank) continue;  // the kernel reports the mismatch
        core::Tensor p = core::Tensor::allocate(c.dtype(), c.shape(), false);
        const size_t elem = core::dtype_size(c.dtype());
        const std::vector<size_t> perm = to_last_perm(rank);
        for (size_t part = 0; part < parts; ++part)
          for (size_t d = 0; d < rank; ++d)
            std::memcpy(static_cast<char*>(p.raw()) + (part * rank + d) * elem,
                        static_cast<const char*>(c.raw()) + (part * rank + perm[d]) * elem, elem);
        replace_input(g_, n, i, add_constant(g_, names_, in->name + "/nhwc", std::move(p)));
      }
      break;
    case Role::Elementwise: break;
  }
  core::Value* out = n->outputs[0];
  core::Value* t = new_twin(out, rank);
  g_.set_output(n, 0, t);
  twin_[out] = t;
  produced_.push_back(out);
}

void LayoutPass::run() {
  std::vector<core::Node*> order;
  for (const auto& n : g_.nodes()) order.push_back(n.get());
  for (core::Node* n : order) {
    const auto role = role_of(g_, n);
    if (!role || n->inputs.empty() || !n->inputs[0]) continue;
    const auto rank = rank_of(n->inputs[0]);
    // Elementwise ops take the rank of their widest input.
    size_t r = rank.value_or(0);
    if (*role == Role::Elementwise)
      for (const core::Value* in : n->inputs) r = std::max(r, rank_of(in).value_or(0));
    if (r < 3 || r > 5 || !convertible(n, *role, r)) continue;
    convert(n, *role, r);
  }
  for (core::Value* v : produced_)
    if (!v->uses.empty() || is_graph_output(g_, v)) layout_node("ToChannelsFirst", twin_[v], v);
  drop_dead_constants(g_);
  g_.sort_topologically();
}

}  // namespace

void to_channels_last(core::Graph& graph) { LayoutPass(graph).run(); }

}  // namespace hetero::cpu::passes
