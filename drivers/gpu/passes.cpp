// The program passes: constant folding into convolution weights, post-op
// fusion, weight reorders, layout choice. Each keeps results within float
// rounding.
#include <algorithm>
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

bool is_fusable_unary(const std::string& op) { return op != "Identity"; }

void erase_done(ProgramGraph& g, const std::set<const ProgramNode*>& gone) {
  std::vector<ProgramNode> kept;
  for (ProgramNode& n : g.nodes)
    if (!gone.count(&n)) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
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
  std::set<const ProgramNode*> gone;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    ProgramNode& head = g.nodes[i];
    const PrimKind k = head.prim.kind;
    if (gone.count(&head) || (k != PrimKind::Conv && k != PrimKind::MatMul && k != PrimKind::Binary)) continue;
    for (;;) {
      const Uses uses(g);
      const std::string& out = head.prim.output;
      if (!uses.single_internal(out)) break;
      ProgramNode* next = reader_of(g, out, i);
      if (!next || gone.count(next)) break;
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
        if (other == out) break;  // x op x
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

void reorder_weights(ProgramGraph& g) {
  for (ProgramNode& n : g.nodes) {
    if (n.prim.kind != PrimKind::MatMul) continue;
    const bool given_transposed = !n.prim.attrs.perm.empty() && n.prim.attrs.perm[0] == 1;
    n.weights_transposed = given_transposed;
    auto it = g.constants.find(n.prim.inputs[1]);
    if (given_transposed || it == g.constants.end() || it->second.rank() != 2) continue;
    const core::Tensor& b = it->second;
    const int64_t kk = b.dim(0), nn = b.dim(1);
    core::Tensor t = core::Tensor::allocate(core::DType::F32, {nn, kk});
    for (int64_t r = 0; r < kk; ++r)
      for (int64_t c = 0; c < nn; ++c) t.data<float>()[c * kk + r] = b.data<float>()[r * nn + c];
    const std::string name = n.prim.inputs[1] + "/T";
    g.constants[name] = t;
    g.shapes[name] = t.shape();
    n.prim.inputs[1] = name;
    n.weights_transposed = true;
  }
}

void choose_layouts(ProgramGraph& g) {
  for (ProgramNode& n : g.nodes) n.layout = "bfyx";
}

}  // namespace passes

}  // namespace hetero::gpu
