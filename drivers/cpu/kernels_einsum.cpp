// Einsum: the equation is parsed once at build time into labels per operand
// (ellipsis dims become labels of their own, aligned from the right). Two
// float32 operands whose labels sort into batch / row / column / contracted
// groups run as permute + batched matrix product + permute. Everything else
// (diagonals, one operand, three or more, sums over one operand's own labels)
// runs as a direct loop over every label combination, reading repeated labels
// through the sum of their strides.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/transpose.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

// Labels 0..51 are letters; 52.. are ellipsis dims (52 + position in the
// broadcast ellipsis, counted from the left of the widest one).
constexpr int kEllipsisBase = 52;

struct Term {
  std::vector<int> letters;  // letter labels, with -1 where "..." stands
  bool has_ellipsis = false;
};

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

Term parse_term(const KernelBuild& b, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.has_ellipsis) b.unsupported("a term of the equation has two ellipses");
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
      continue;
    }
    const int l = letter_label(s[i]);
    if (l < 0) b.unsupported(std::string("the equation has the invalid character '") + s[i] + "'");
    t.letters.push_back(l);
  }
  return t;
}

Equation parse_equation(const KernelBuild& b, std::string eq) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(b, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = parse_term(b, eq.substr(arrow + 2));
  }
  return e;
}

// The equation applied to concrete input shapes.
struct Bound {
  std::vector<std::vector<int>> in_labels;  // per operand, per dim
  std::vector<int> out_labels;
  std::map<int, int64_t> size;              // label -> extent
};

Bound bind_shapes(const Node& node, const Equation& e, const std::vector<const Tensor*>& ins) {
  if (ins.size() != e.inputs.size())
    bad_input(node, "the equation has " + std::to_string(e.inputs.size()) + " operands, the node " +
                        std::to_string(ins.size()));
  Bound bd;
  size_t ell = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const size_t named = e.inputs[i].letters.size() - (e.inputs[i].has_ellipsis ? 1 : 0);
    if (ins[i]->rank() < named || (!e.inputs[i].has_ellipsis && ins[i]->rank() != named))
      bad_input(node, "operand " + std::to_string(i) + " of shape " + core::shape_to_string(ins[i]->shape()) +
                          " does not fit its term");
    if (e.inputs[i].has_ellipsis) ell = std::max(ell, ins[i]->rank() - named);
  }
  std::array<int, 52> count{};
  for (size_t i = 0; i < ins.size(); ++i) {
    const Term& t = e.inputs[i];
    const size_t ell_dims = t.has_ellipsis ? ins[i]->rank() - (t.letters.size() - 1) : 0;
    std::vector<int> labels;
    for (int l : t.letters) {
      if (l >= 0) {
        labels.push_back(l);
        ++count[static_cast<size_t>(l)];
      } else {
        for (size_t k = 0; k < ell_dims; ++k) labels.push_back(kEllipsisBase + static_cast<int>(ell - ell_dims + k));
      }
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int64_t n = ins[i]->dim(d);
      auto [it, fresh] = bd.size.emplace(labels[d], n);
      // Ellipsis dims broadcast; letters must agree.
      if (!fresh && it->second != n) {
        if (labels[d] >= kEllipsisBase && (it->second == 1 || n == 1))
          it->second = std::max(it->second, n);
        else
          bad_input(node, "label sizes disagree (" + std::to_string(it->second) + " vs " + std::to_string(n) + ")");
      }
    }
    bd.in_labels.push_back(std::move(labels));
  }
  if (e.explicit_output) {
    for (int l : e.output.letters) {
      if (l >= 0) {
        if (!bd.size.count(l)) bad_input(node, "an output label appears in no operand");
        bd.out_labels.push_back(l);
      } else {
        for (size_t k = 0; k < ell; ++k) bd.out_labels.push_back(kEllipsisBase + static_cast<int>(k));
      }
    }
  } else {
    // Implicit output: the ellipsis, then labels used once, alphabetically.
    for (size_t k = 0; k < ell; ++k) bd.out_labels.push_back(kEllipsisBase + static_cast<int>(k));
    std::vector<std::pair<char, int>> once;
    for (int l = 0; l < 52; ++l)
      if (count[static_cast<size_t>(l)] == 1) once.emplace_back(l < 26 ? 'A' + l : 'a' + (l - 26), l);
    std::sort(once.begin(), once.end());
    for (auto& p : once) bd.out_labels.push_back(p.second);
  }
  return bd;
}

// The direct loop: every combination of output labels then summed labels.
template <typename T>
void einsum_loop(KernelRun& r, const Bound& bd, const std::vector<const Tensor*>& ins, Tensor& y) {
  std::vector<int> labels = bd.out_labels;
  for (auto& [l, n] : bd.size)
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  const size_t nl = labels.size(), nin = ins.size();
  std::vector<int64_t> extent(nl);
  for (size_t j = 0; j < nl; ++j) extent[j] = bd.size.at(labels[j]);
  // stride[i][j]: step of operand i's offset when label j advances (summed for
  // repeated labels, 0 for absent or broadcast ones).
  std::vector<std::vector<int64_t>> stride(nin, std::vector<int64_t>(nl, 0));
  for (size_t i = 0; i < nin; ++i) {
    const std::vector<int64_t> s = contiguous_strides(ins[i]->shape());
    for (size_t d = 0; d < bd.in_labels[i].size(); ++d) {
      const size_t j = static_cast<size_t>(std::find(labels.begin(), labels.end(), bd.in_labels[i][d]) - labels.begin());
      if (ins[i]->dim(d) != 1) stride[i][j] += s[d];
    }
  }
  const size_t n_out = bd.out_labels.size();
  const int64_t out_count = product(extent, 0, n_out), sum_count = product(extent, n_out, nl);
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  std::vector<int64_t> idx(nl, 0), off(nin, 0);
  // Advances labels [first, last) as an odometer, moving every operand's
  // offset along; a full cycle brings the offsets back where they started.
  auto advance = [&](size_t first, size_t last) {
    for (size_t j = last; j-- > first;) {
      for (size_t i = 0; i < nin; ++i) off[i] += stride[i][j];
      if (++idx[j] < extent[j]) return;
      for (size_t i = 0; i < nin; ++i) off[i] -= stride[i][j] * extent[j];
      idx[j] = 0;
    }
  };
  T* out = y.data<T>();
  // One serial loop, checked every block of outputs; a product term costs
  // about as much as 4 bytes moved per operand.
  const int64_t block = checkpoint_block_units(out_count, 4.0 * double(sum_count) * double(nin), kCheckpointWork);
  for (int64_t o = 0; o < out_count; ++o) {
    if (block > 0 && o > 0 && o % block == 0) r.checkpoint();
    Acc acc = 0;
    for (int64_t s = 0; s < sum_count; ++s) {
      Acc p = 1;
      for (size_t i = 0; i < nin; ++i) p *= static_cast<Acc>(ins[i]->data<T>()[off[i]]);
      acc += p;
      advance(n_out, nl);
    }
    out[o] = static_cast<T>(acc);
    advance(0, n_out);
  }
}

// Permutes t's labels into `order` (every label of t, each once).
Tensor permuted(KernelRun& r, const Tensor& t, const std::vector<int>& labels, const std::vector<int>& order) {
  std::vector<int64_t> perm;
  Shape shape;
  for (int l : order) {
    const auto d = static_cast<size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
    perm.push_back(static_cast<int64_t>(d));
    shape.push_back(t.dim(d));
  }
  if (permutation_keeps_layout(t.shape(), perm)) return t.reshaped(shape);
  Tensor out = Tensor::allocate(t.dtype(), shape, false);
  permute_copy(r, t.raw(), out.raw(), t.shape(), perm, core::dtype_size(t.dtype()));
  return out;
}

// Two float32 operands as a batched matrix product; false when the labels do
// not fit that form (the caller then uses the direct loop).
bool einsum_matmul(KernelRun& r, const Bound& bd, const Tensor& a, const Tensor& b, Tensor& y) {
  const auto& la = bd.in_labels[0];
  const auto& lb = bd.in_labels[1];
  auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  auto unique = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  if (!unique(la) || !unique(lb)) return false;
  std::vector<int> batch, m, n, k;
  for (int l : bd.out_labels) {
    if (has(la, l) && has(lb, l)) batch.push_back(l);
    else if (has(la, l)) m.push_back(l);
    else n.push_back(l);
  }
  for (int l : la) {
    if (has(bd.out_labels, l)) continue;
    if (!has(lb, l)) return false;  // summed over A alone
    k.push_back(l);
  }
  for (int l : lb)
    if (!has(bd.out_labels, l) && !has(la, l)) return false;
  // Broadcast ellipsis dims (size 1 in one operand) need the direct loop.
  for (size_t d = 0; d < la.size(); ++d)
    if (a.dim(d) != bd.size.at(la[d])) return false;
  for (size_t d = 0; d < lb.size(); ++d)
    if (b.dim(d) != bd.size.at(lb[d])) return false;
  auto extent = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= bd.size.at(l);
    return p;
  };
  const int64_t nb = extent(batch), nm = extent(m), nn = extent(n), nk = extent(k);
  std::vector<int> a_order = batch, b_order = batch, c_labels = batch;
  a_order.insert(a_order.end(), m.begin(), m.end());
  a_order.insert(a_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), n.begin(), n.end());
  c_labels.insert(c_labels.end(), m.begin(), m.end());
  c_labels.insert(c_labels.end(), n.begin(), n.end());
  const Tensor pa = permuted(r, a, la, a_order), pb = permuted(r, b, lb, b_order);
  Shape c_shape;
  for (int l : c_labels) c_shape.push_back(bd.size.at(l));
  const bool direct = c_labels == bd.out_labels;
  Tensor c = direct ? y : Tensor::allocate(DType::F32, c_shape, false);
  const float* A = pa.data<float>();
  const float* B = pb.data<float>();
  float* C = c.data<float>();
  const bool parallel = nb * nm * nn * nk >= (1 << 16);
  parallel_blocks(r, nb * nm, double(nk) * double(nn), parallel, [&](int64_t row) {
    const int64_t bi = row / nm;
    float* cr = C + row * nn;
    std::fill(cr, cr + nn, 0.0f);
    const float* ar = A + row * nk;
    const float* bm = B + bi * nk * nn;
    for (int64_t kk = 0; kk < nk; ++kk) {
      const float av = ar[kk];
      const float* br = bm + kk * nn;
      for (int64_t j = 0; j < nn; ++j) cr[j] += av * br[j];
    }
  });
  if (!direct) {
    const Tensor out = permuted(r, c, c_labels, bd.out_labels);
    std::memcpy(y.raw(), out.raw(), y.nbytes());
  }
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_einsum(const KernelBuild& b) {
  const Equation eq = parse_equation(b, b.node.attr_string("equation", ""));
  return make_fn_kernel([eq](KernelRun& r) {
    std::vector<const Tensor*> ins;
    for (size_t i = 0; i < r.num_inputs(); ++i) ins.push_back(&required_input(r, i));
    for (const Tensor* t : ins)
      if (t->dtype() != ins[0]->dtype()) bad_input(r.node(), "operands differ in type");
    const Bound bd = bind_shapes(r.node(), eq, ins);
    Shape out;
    for (int l : bd.out_labels) out.push_back(bd.size.at(l));
    Tensor& y = r.output(0, ins[0]->dtype(), out);
    if (y.numel() == 0) return;
    if (ins.size() == 2 && y.dtype() == DType::F32 && einsum_matmul(r, bd, *ins[0], *ins[1], y)) return;
    if (y.dtype() == DType::Bool) fail(HETERO_NOT_SUPPORTED, r.node().describe() + ": bool operands are not supported");
    dispatch_or_fail(AllTypes{}, y.dtype(), r.node(),
                     [&](auto tag) { einsum_loop<typename decltype(tag)::type>(r, bd, ins, y); });
  });
}

}  // namespace hetero::cpu
