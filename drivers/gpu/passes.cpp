// The program passes: constant folding into convolution weights, post-op
// fusion, weight reorders, layout choice. Each keeps results within float
// rounding.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "core/error.h"
#include "drivers/gpu/program.h"

namespace hetero::gpu {

namespace {

// How many nodes read each value, and whether it leaves the graph.
struct Uses {
  std::map<std::string, int> count;
  std::set<std::string> outputs;
  explicit Uses(const ProgramGraph& g) {
    for (const ProgramNode& n : g.nodes) {
      for (const std::string& in : n.prim.inputs)
        if (!in.empty()) ++count[in];
      for (const PostOp& p : n.post_ops)
        if (!p.tensor.empty()) ++count[p.tensor];
    }
    outputs.insert(g.outputs.begin(), g.outputs.end());
  }
  bool single_internal(const std::string& v) const {
    auto it = count.find(v);
    return it != count.end() && it->second == 1 && !outputs.count(v);
  }
};

// The index of the node reading `v` (the one, when single_internal).
ProgramNode* reader_of(ProgramGraph& g, const std::string& v, size_t after) {
  for (size_t i = after + 1; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].prim.inputs)
      if (in == v) return &g.nodes[i];
  return nullptr;
}

// The axis along which `other` varies when broadcast to `out` (right
// aligned): -1 for a scalar, `rank` for the full shape, -2 when it varies
// along more than one axis or does not broadcast.
int broadcast_axis(const core::Shape& out, const core::Shape& other) {
  if (other.size() > out.size()) return -2;
  if (other == out) return static_cast<int>(out.size());
  int axis = -1;
  const size_t off = out.size() - other.size();
  for (size_t d = 0; d < other.size(); ++d) {
    if (other[d] == 1) continue;
    if (other[d] != out[d + off] || axis != -1) return -2;
    axis = static_cast<int>(d + off);
  }
  return axis;
}

bool is_fusable_unary(const std::string& op) { return op != "Identity" && op != "Cast" && op != "Not"; }

// The nodes whose kernels apply post-ops to each value they compute
// (POST_OPS in their templates, kernels/*.cl).
bool takes_post_ops(PrimKind k) {
  switch (k) {
    case PrimKind::Conv:
    case PrimKind::ConvTranspose:
    case PrimKind::MatMul:
    case PrimKind::Binary:
    case PrimKind::Unary:
    case PrimKind::Pool:
    case PrimKind::Reduce:
    case PrimKind::Resize:
    case PrimKind::Transpose:
      return true;
    default:
      return false;
  }
}

void erase_done(ProgramGraph& g, const std::set<const ProgramNode*>& gone) {
  std::vector<ProgramNode> kept;
  for (ProgramNode& n : g.nodes)
    if (!gone.count(&n)) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
}

// `t` [rows, cols] transposed.
core::Tensor transposed(const core::Tensor& t) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  core::Tensor out = core::Tensor::allocate(core::DType::F32, {cols, rows});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out.data<float>()[c * rows + r] = t.data<float>()[r * cols + c];
  return out;
}

// Convolution weights [OC][ICG][KH][KW] as [GROUPS][ICG][KH][KW][OCGP],
// OCGP being OCG rounded up to `vw` with zero columns.
core::Tensor channel_layout(const core::Tensor& w, int64_t groups, uint32_t vw) {
  const int64_t oc = w.dim(0), ocg = oc / groups, per = static_cast<int64_t>(w.numel()) / oc;
  const int64_t ocgp = (ocg + vw - 1) / vw * vw;
  core::Tensor out = core::Tensor::allocate(core::DType::F32, {groups, per, ocgp});
  std::fill_n(out.data<float>(), out.numel(), 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < ocg; ++o)
      for (int64_t k = 0; k < per; ++k)
        out.data<float>()[(g * per + k) * ocgp + o] = w.data<float>()[(g * ocg + o) * per + k];
  return out;
}


// The scalar value of constant `v`, if it is one.
std::optional<float> scalar_constant(const ProgramGraph& g, const std::string& v) {
  auto it = g.constants.find(v);
  if (it == g.constants.end() || it->second.numel() != 1 || it->second.dtype() != core::DType::F32) return std::nullopt;
  return it->second.data<float>()[0];
}

bool near(std::optional<float> v, float want) { return v && std::fabs(*v - want) <= 1e-6f * std::fabs(want); }

// The single reader of `v` when it is a node of `kind` (and `op`).
ProgramNode* only_reader(ProgramGraph& g, const Uses& uses, const std::string& v, size_t after, PrimKind kind,
                         const char* op) {
  if (!uses.single_internal(v)) return nullptr;
  ProgramNode* r = reader_of(g, v, after);
  return r && r->prim.kind == kind && r->prim.op == op ? r : nullptr;
}

// Hard-swish written out as elementwise ops, as exporters write it:
// x * Clip(x + 3, 0, 6) / 6 (or * 1/6), and x * HardSigmoid(x) with alpha
// 1/6 and beta 1/2, becomes one HardSwish node, which reads x once (and so
// can become a post-op of the node that makes x).
void recognise_hard_swish(ProgramGraph& g) {
  std::set<const ProgramNode*> gone;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ProgramNode& head = g.nodes[i];
    const bool spelled_out = head.prim.kind == PrimKind::Binary && head.prim.op == "Add";
    if (gone.count(&head) || !(spelled_out || (head.prim.kind == PrimKind::Unary && head.prim.op == "HardSigmoid")))
      continue;
    std::string x;
    if (spelled_out) {
      const auto& in = head.prim.inputs;
      x = near(scalar_constant(g, in[1]), 3) ? in[0] : near(scalar_constant(g, in[0]), 3) ? in[1] : "";
    } else if (near(head.prim.attrs.alpha, 1.0f / 6) && near(head.prim.attrs.beta, 0.5f)) {
      x = head.prim.inputs[0];
    }
    if (x.empty()) continue;
    const Uses uses(g);
    std::vector<ProgramNode*> chain;  // after the head; the last writes the result
    if (spelled_out) {
      ProgramNode* clip = only_reader(g, uses, head.prim.output, i, PrimKind::Unary, "Clip");
      if (!clip || clip->prim.attrs.alpha != 0 || clip->prim.attrs.beta != 6) continue;
      chain.push_back(clip);
    }
    const std::string& gate = chain.empty() ? head.prim.output : chain.back()->prim.output;
    ProgramNode* mul = only_reader(g, uses, gate, i, PrimKind::Binary, "Mul");
    if (!mul || (mul->prim.inputs[0] != x && mul->prim.inputs[1] != x) || mul->prim.inputs[0] == mul->prim.inputs[1])
      continue;
    chain.push_back(mul);
    if (spelled_out) {  // then / 6, or * 1/6
      ProgramNode* div = only_reader(g, uses, mul->prim.output, i, PrimKind::Binary, "Div");
      ProgramNode* by = only_reader(g, uses, mul->prim.output, i, PrimKind::Binary, "Mul");
      if (div && div->prim.inputs[0] == mul->prim.output && near(scalar_constant(g, div->prim.inputs[1]), 6)) {
        chain.push_back(div);
      } else if (by && (near(scalar_constant(g, by->prim.inputs[0]), 1.0f / 6) ||
                        near(scalar_constant(g, by->prim.inputs[1]), 1.0f / 6))) {
        chain.push_back(by);
      } else {
        continue;
      }
    }
    head.prim.kind = PrimKind::Unary;
    head.prim.op = "HardSwish";
    head.prim.inputs = {x};
    head.prim.output = chain.back()->prim.output;
    for (ProgramNode* n : chain) {
      n->prim.inputs.clear();
      gone.insert(n);
    }
  }
  erase_done(g, gone);
}

}  // namespace

namespace passes {

void fold_channel_constants(ProgramGraph& g) {
  std::set<const ProgramNode*> gone;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ProgramNode& conv = g.nodes[i];
    if (conv.prim.kind != PrimKind::Conv || !conv.post_ops.empty() || gone.count(&conv)) continue;
    for (;;) {
      const Uses uses(g);
      if (!uses.single_internal(conv.prim.output)) break;
      ProgramNode* next = reader_of(g, conv.prim.output, i);
      if (!next || next->prim.kind != PrimKind::Binary || (next->prim.op != "Mul" && next->prim.op != "Add")) break;
      const std::string& other = next->prim.inputs[0] == conv.prim.output ? next->prim.inputs[1] : next->prim.inputs[0];
      auto oc = g.constants.find(other);
      auto wc = g.constants.find(conv.prim.inputs[1]);
      if (oc == g.constants.end() || wc == g.constants.end() || other == conv.prim.output) break;
      const core::Shape& out = g.shapes.at(conv.prim.output);
      const int axis = broadcast_axis(out, oc->second.shape());
      if (axis != 1 && axis != -1) break;
      if (g.shapes.at(next->prim.output) != out) break;
      const int64_t channels = out[1];
      auto factor = [&](int64_t c) { return oc->second.data<float>()[axis == -1 ? 0 : c]; };
      // New tensors: the originals may be shared with other nodes.
      core::Tensor bias = core::Tensor::allocate(core::DType::F32, {channels});
      if (!conv.prim.inputs[2].empty()) {
        const core::Tensor* b = g.constants.count(conv.prim.inputs[2]) ? &g.constants.at(conv.prim.inputs[2]) : nullptr;
        if (!b) break;  // a bias computed at run time stays as it is
        std::copy_n(b->data<float>(), channels, bias.data<float>());
      }
      if (next->prim.op == "Mul") {
        core::Tensor w = wc->second.clone();
        const size_t per = w.numel() / static_cast<size_t>(channels);
        for (int64_t c = 0; c < channels; ++c) {
          for (size_t k = 0; k < per; ++k) w.data<float>()[size_t(c) * per + k] *= factor(c);
          bias.data<float>()[c] *= factor(c);
        }
        const std::string wname = conv.prim.inputs[1] + "@" + conv.prim.id;
        g.constants[wname] = w;
        g.shapes[wname] = w.shape();
        conv.prim.inputs[1] = wname;
      } else {
        for (int64_t c = 0; c < channels; ++c) bias.data<float>()[c] += factor(c);
      }
      const std::string bname = conv.prim.output + "/bias@" + next->prim.id;
      g.constants[bname] = bias;
      g.shapes[bname] = bias.shape();
      conv.prim.inputs[2] = bname;
      conv.prim.output = next->prim.output;
      next->prim.inputs.clear();  // no longer reads anything
      gone.insert(next);
    }
  }
  erase_done(g, gone);
}

void fuse_post_ops(ProgramGraph& g) {
  recognise_hard_swish(g);
  std::set<const ProgramNode*> gone;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ProgramNode& head = g.nodes[i];
    // Post-ops compute in float: integer and bool nodes take none.
    if (gone.count(&head) || !takes_post_ops(head.prim.kind) || g.dtype(head.prim.output) != core::DType::F32) continue;
    for (;;) {
      const Uses uses(g);
      const std::string& out = head.prim.output;
      if (!uses.single_internal(out)) break;
      ProgramNode* next = reader_of(g, out, i);
      if (!next || gone.count(next) || g.dtype(next->prim.output) != core::DType::F32) break;
      const core::Shape& shape = g.shapes.at(out);
      if (g.shapes.at(next->prim.output) != shape) break;
      PostOp p;
      p.op = next->prim.op;
      if (next->prim.kind == PrimKind::Unary && is_fusable_unary(next->prim.op)) {
        p.kind = PostOp::Kind::Unary;
        p.alpha = next->prim.attrs.alpha;
        p.beta = next->prim.attrs.beta;
      } else if (next->prim.kind == PrimKind::Binary) {
        const bool first = next->prim.inputs[1] == out;
        const std::string& other = first ? next->prim.inputs[0] : next->prim.inputs[1];
        if (other == out || g.dtype(other) != core::DType::F32) break;  // x op x, or an operand not float
        // The other operand must be ready before the head runs: a constant,
        // a graph input or a value produced by an earlier node.
        bool ready = g.constants.count(other) ||
                     std::find(g.inputs.begin(), g.inputs.end(), other) != g.inputs.end();
        for (size_t j = 0; j < i && !ready; ++j) ready = g.nodes[j].prim.output == other;
        if (!ready || broadcast_axis(shape, g.shapes.at(other)) == -2) break;
        p.kind = PostOp::Kind::Binary;
        p.tensor = other;
        p.tensor_first = first;
      } else {
        break;
      }
      head.post_ops.push_back(p);
      head.prim.output = next->prim.output;
      next->prim.inputs.clear();
      gone.insert(next);
    }
  }
  erase_done(g, gone);
}

void fuse_squeeze_excite(ProgramGraph& g) {
  // Its vectors live in local memory: C + CH floats of the 32 KiB OpenCL
  // promises every device.
  constexpr int64_t kMaxChannels = 2048;
  const Uses uses(g);
  std::set<const ProgramNode*> gone;
  // A 1x1 convolution of the single reader of `v` that is not an output.
  auto pointwise_reader = [&](const std::string& v, size_t after) -> ProgramNode* {
    ProgramNode* r = only_reader(g, uses, v, after, PrimKind::Conv, "Conv");
    return r && r->prim.inputs[0] == v && conv_geometry(*r, g).pointwise ? r : nullptr;
  };
  // The block's output, x scaled by channel (Mul(x, s)), read only by a 1x1
  // convolution (the projection after it, in MobileNetV3): that convolution
  // reads x and the scales and applies them itself (gemm.cl's B_SCALE),
  // which saves the Mul's launch and its pass over x.
  auto fold_excitation = [&](const ProgramNode& excite) {
    const std::string& x = excite.prim.inputs[0];
    const std::string& s = excite.prim.output;
    const size_t at = static_cast<size_t>(&excite - g.nodes.data());
    ProgramNode* mul = only_reader(g, uses, s, at, PrimKind::Binary, "Mul");
    if (!mul || mul->prim.inputs[0] == mul->prim.inputs[1] || !mul->post_ops.empty()) return;
    if ((mul->prim.inputs[0] != x && mul->prim.inputs[1] != x) || g.shapes.at(s)[1] != g.shapes.at(x)[1]) return;
    ProgramNode* conv = pointwise_reader(mul->prim.output, static_cast<size_t>(mul - g.nodes.data()));
    if (!conv) return;
    conv->prim.inputs[0] = x;
    conv->prim.inputs.resize(4);
    conv->prim.inputs[3] = s;
    mul->prim.inputs.clear();
    gone.insert(mul);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ProgramNode& pool = g.nodes[i];
    if (pool.prim.kind != PrimKind::Pool || pool.prim.op != "GlobalAveragePool" || !pool.post_ops.empty()) continue;
    const core::Shape& x = g.shapes.at(pool.prim.inputs[0]);
    if ((x.size() != 3 && x.size() != 4) || x[1] > kMaxChannels) continue;  // 1-D and 2-D images
    ProgramNode* first = pointwise_reader(pool.prim.output, i);
    if (!first || !uses.single_internal(first->prim.output)) continue;
    const bool unary_only = std::all_of(first->post_ops.begin(), first->post_ops.end(),
                                        [](const PostOp& p) { return p.kind == PostOp::Kind::Unary; });
    if (!unary_only || g.shapes.at(first->prim.output)[1] > kMaxChannels) continue;
    ProgramNode* second = pointwise_reader(first->prim.output, static_cast<size_t>(first - g.nodes.data()));
    if (!second) continue;
    // The second convolution becomes the fused node, where its output is made.
    Primitive fused = second->prim;
    fused.kind = PrimKind::SqueezeExcite;
    fused.op = "SqueezeExcite";
    fused.inputs = {pool.prim.inputs[0], first->prim.inputs[1], first->prim.inputs[2], second->prim.inputs[1],
                    second->prim.inputs[2]};
    second->prim = std::move(fused);
    second->hidden_ops = first->post_ops;
    pool.prim.inputs.clear();
    first->prim.inputs.clear();
    gone.insert(&pool);
    gone.insert(first);
    fold_excitation(*second);
  }
  erase_done(g, gone);
}

void reorder_weights(ProgramGraph& g) {
  // New constants under new names: the originals may be shared with nodes
  // whose variants read them as given.
  auto replace_input = [&](ProgramNode& n, size_t i, const std::string& suffix, core::Tensor t) {
    const std::string name = n.prim.inputs[i] + suffix;
    g.shapes[name] = t.shape();
    g.constants[name] = std::move(t);
    n.prim.inputs[i] = name;
  };
  for (ProgramNode& n : g.nodes) {
    if (n.prim.kind == PrimKind::Conv && n.variant.kind == KernelVariant::Kind::Channel) {
      const core::Tensor& w = g.constants.at(n.prim.inputs[1]);
      replace_input(n, 1, "/oc" + std::to_string(n.variant.vw), channel_layout(w, n.prim.attrs.group, n.variant.vw));
      continue;
    }
    if (n.prim.kind != PrimKind::MatMul) continue;
    const bool given_transposed = !n.prim.attrs.perm.empty() && n.prim.attrs.perm[0] == 1;
    n.weights_transposed = given_transposed;
    auto it = g.constants.find(n.prim.inputs[1]);
    if (it == g.constants.end() || it->second.rank() != 2) continue;
    const bool gemm = n.variant.kind == KernelVariant::Kind::Gemm || n.variant.kind == KernelVariant::Kind::Library;
    if (gemm == given_transposed) {  // plain wants [N, K], gemm and the library [K, N]
      replace_input(n, 1, "/T", transposed(it->second));
      n.weights_transposed = !gemm;
    }
  }
}

void choose_layouts(ProgramGraph& g) {
  for (ProgramNode& n : g.nodes) n.layout = "bfyx";
}

}  // namespace passes

}  // namespace hetero::gpu
