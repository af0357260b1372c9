// Miscellaneous kernels that select or reorder elements by value or position:
// TopK, Unique, Trilu, ReverseSequence and NonMaxSuppression. Einsum and
// GridSample live in their own files and are registered from here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "drivers/cpu/kernel.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

// A strict total order for sorting: NaN sorts above every number, so that a
// NaN in the data can never break std::sort's preconditions.
template <typename K>
bool total_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}

// The elements of `t` as sortable keys: the dtype itself, or float for
// float16/bfloat16. f receives a pointer to the keys.
template <class F>
void with_keys(const Node& node, const Tensor& t, F&& f) {
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16) {
    std::vector<float> keys(t.numel());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<float>(t.as_double(i));
    f(static_cast<const float*>(keys.data()));
  } else {
    visit_arithmetic(node, t.dtype(), [&](auto tag) { f(t.data<decltype(tag)>()); });
  }
}

std::unique_ptr<Kernel> make_topk(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", -1);
  const bool k_attr = b.opset < 10;
  const int64_t k_value = b.node.attr_int("k", 0);
  const bool largest = b.opset < 11 || b.node.attr_int("largest", 1) != 0;
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() == 0) bad_input(r.node(), "the input must have at least one dim");
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(x.rank())));
    int64_t k = k_value;
    if (!k_attr) {
      const std::vector<int64_t> kv = int_input_values(r.node(), required_input(r, 1), "K");
      if (kv.size() != 1) bad_input(r.node(), "K must hold one value");
      k = kv[0];
    }
    const int64_t dim = x.dim(axis);
    if (k < 0 || k > dim)
      bad_input(r.node(), "K " + std::to_string(k) + " is out of range for a dim of " + std::to_string(dim));
    Shape out = x.shape();
    out[axis] = k;
    Tensor& values = r.output(0, x.dtype(), out);
    Tensor& indices = r.output(1, DType::I64, out);
    const int64_t outer = product(x.shape(), 0, axis), inner = product(x.shape(), axis + 1, x.rank());
    const size_t elem = core::dtype_size(x.dtype());
    with_keys(r.node(), x, [&](const auto* keys) {
      std::vector<int64_t> order(static_cast<size_t>(dim));
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * dim * inner + i;
          auto key = [&](int64_t j) { return keys[base + j * inner]; };
          std::iota(order.begin(), order.end(), 0);
          // Equal values keep the lower index first.
          auto before = [&](int64_t a, int64_t c) {
            if (largest ? total_less(key(c), key(a)) : total_less(key(a), key(c))) return true;
            if (total_less(key(a), key(c)) || total_less(key(c), key(a))) return false;
            return a < c;
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t dst = (o * k + j) * inner + i;
            const int64_t src = base + order[static_cast<size_t>(j)] * inner;
            std::memcpy(static_cast<char*>(values.raw()) + static_cast<size_t>(dst) * elem,
                        static_cast<const char*>(x.raw()) + static_cast<size_t>(src) * elem, elem);
            indices.data<int64_t>()[dst] = order[static_cast<size_t>(j)];
          }
        }
      }
    });
  });
}

std::unique_ptr<Kernel> make_unique(const KernelBuild& b) {
  const bool sorted = b.node.attr_int("sorted", 1) != 0;
  const bool has_axis = b.node.has_attr("axis");
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& in = required_input(r, 0);
    // Without an axis, unique elements of the flattened tensor.
    const Tensor x = has_axis ? in : in.reshaped({static_cast<int64_t>(in.numel())});
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dim(axis);
    const int64_t outer = product(x.shape(), 0, axis), inner = product(x.shape(), axis + 1, x.rank());
    std::vector<int64_t> order(static_cast<size_t>(dim));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> group_of(static_cast<size_t>(dim));
    std::vector<int64_t> first, counts;  // per group, in sorted order
    with_keys(r.node(), x, [&](const auto* keys) {
      // Slices along the axis compare lexicographically in row-major order.
      auto cmp = [&](int64_t a, int64_t c) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t e = 0; e < inner; ++e) {
            const auto ka = keys[(o * dim + a) * inner + e], kc = keys[(o * dim + c) * inner + e];
            if (total_less(ka, kc)) return -1;
            if (total_less(kc, ka)) return 1;
          }
        return 0;
      };
      // Stable: among equal slices the first occurrence comes first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return cmp(a, c) < 0; });
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
          first.push_back(order[i]);
          counts.push_back(0);
        }
        ++counts.back();
        group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
      }
    });
    const size_t groups = first.size();
    // Output order of the groups: sorted, or by first occurrence.
    std::vector<size_t> out_order(groups);
    std::iota(out_order.begin(), out_order.end(), 0);
    if (!sorted)
      std::sort(out_order.begin(), out_order.end(), [&](size_t a, size_t c) { return first[a] < first[c]; });
    std::vector<int64_t> rank_of(groups);
    for (size_t g = 0; g < groups; ++g) rank_of[out_order[g]] = static_cast<int64_t>(g);
    Shape y_shape = x.shape();
    y_shape[axis] = static_cast<int64_t>(groups);
    Tensor& y = r.output(0, x.dtype(), y_shape);
    const size_t block = static_cast<size_t>(inner) * core::dtype_size(x.dtype());
    for (int64_t o = 0; o < outer; ++o)
      for (size_t g = 0; g < groups; ++g)
        std::memcpy(static_cast<char*>(y.raw()) + (static_cast<size_t>(o) * groups + g) * block,
                    static_cast<const char*>(x.raw()) +
                        static_cast<size_t>(o * dim + first[out_order[g]]) * block,
                    block);
    const auto n = static_cast<int64_t>(groups);
    if (r.num_outputs() > 1 && r.output_wanted(1)) {
      Tensor& t = r.output(1, DType::I64, {n});
      for (size_t g = 0; g < groups; ++g) t.data<int64_t>()[g] = first[out_order[g]];
    }
    if (r.num_outputs() > 2 && r.output_wanted(2)) {
      Tensor& t = r.output(2, DType::I64, {dim});
      for (int64_t i = 0; i < dim; ++i)
        t.data<int64_t>()[i] = rank_of[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
    }
    if (r.num_outputs() > 3 && r.output_wanted(3)) {
      Tensor& t = r.output(3, DType::I64, {n});
      for (size_t g = 0; g < groups; ++g) t.data<int64_t>()[g] = counts[out_order[g]];
    }
  });
}

std::unique_ptr<Kernel> make_trilu(const KernelBuild& b) {
  const bool upper = b.node.attr_int("upper", 1) != 0;
  return make_fn_kernel([upper](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() < 2) bad_input(r.node(), "the input must have at least two dims");
    int64_t k = 0;
    if (const Tensor* kt = r.input(1)) {
      const std::vector<int64_t> kv = int_input_values(r.node(), *kt, "k");
      if (kv.size() != 1) bad_input(r.node(), "k must hold one value");
      k = kv[0];
    }
    Tensor& y = r.output(0, x.dtype(), x.shape());
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    const int64_t mats = product(x.shape(), 0, x.rank() - 2);
    const size_t elem = core::dtype_size(x.dtype());
    // Zero is all-zero bytes in every dtype.
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < rows; ++i) {
        const size_t off = static_cast<size_t>((m * rows + i) * cols) * elem;
        const char* src = static_cast<const char*>(x.raw()) + off;
        char* dst = static_cast<char*>(y.raw()) + off;
        // Upper keeps j >= i + k, lower keeps j <= i + k.
        const int64_t split = std::clamp<int64_t>(upper ? i + k : i + k + 1, 0, cols);
        const auto a = static_cast<size_t>(split) * elem, all = static_cast<size_t>(cols) * elem;
        if (upper) {
          std::memset(dst, 0, a);
          std::memcpy(dst + a, src + a, all - a);
        } else {
          std::memcpy(dst, src, a);
          std::memset(dst + a, 0, all - a);
        }
      }
  });
}

std::unique_ptr<Kernel> make_reverse_sequence(const KernelBuild& b) {
  const int64_t time_axis = b.node.attr_int("time_axis", 0), batch_axis = b.node.attr_int("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0)))
    b.unsupported("time_axis and batch_axis must be 0 and 1");
  return make_fn_kernel([time_axis](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() < 2) bad_input(r.node(), "the input must have at least two dims");
    const std::vector<int64_t> lens = int_input_values(r.node(), required_input(r, 1), "sequence_lens");
    const int64_t steps = x.dim(static_cast<size_t>(time_axis)), batch = x.dim(time_axis == 0 ? 1 : 0);
    if (static_cast<int64_t>(lens.size()) != batch) bad_input(r.node(), "sequence_lens does not match the batch");
    Tensor& y = r.output(0, x.dtype(), x.shape());
    const size_t block = static_cast<size_t>(product(x.shape(), 2, x.rank())) * core::dtype_size(x.dtype());
    auto offset = [&](int64_t t, int64_t bi) {
      return static_cast<size_t>(time_axis == 0 ? t * batch + bi : bi * steps + t) * block;
    };
    for (int64_t bi = 0; bi < batch; ++bi) {
      const int64_t len = lens[static_cast<size_t>(bi)];
      if (len < 0 || len > steps)
        bad_input(r.node(), "sequence length " + std::to_string(len) + " is out of range for " +
                                std::to_string(steps) + " steps");
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t src_t = t < len ? len - 1 - t : t;
        std::memcpy(static_cast<char*>(y.raw()) + offset(t, bi),
                    static_cast<const char*>(x.raw()) + offset(src_t, bi), block);
      }
    }
  });
}

struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

float iou(const Box& a, const Box& b) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return 0;
  const float inter = ih * iw;
  const float uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

std::unique_ptr<Kernel> make_nms(const KernelBuild& b) {
  const bool center = b.node.attr_int("center_point_box", 0) != 0;
  return make_fn_kernel([center](KernelRun& r) {
    const Tensor& boxes = required_input(r, 0);
    const Tensor& scores = required_input(r, 1);
    if (boxes.dtype() != DType::F32 || scores.dtype() != DType::F32)
      fail(HETERO_NOT_SUPPORTED, r.node().describe() + ": boxes and scores must be float32");
    if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1))
      bad_input(r.node(), "boxes " + core::shape_to_string(boxes.shape()) + " and scores " +
                              core::shape_to_string(scores.shape()) + " do not fit [B,N,4] and [B,C,N]");
    const Tensor* max_t = r.input(2);
    const int64_t max_out = max_t && max_t->numel() ? max_t->as_int64(0) : 0;
    const Tensor* iou_t = r.input(3);
    const double iou_thr = iou_t && iou_t->numel() ? iou_t->as_double(0) : 0.0;
    const Tensor* score_t = r.input(4);
    const bool has_score_thr = score_t && score_t->numel();
    const double score_thr = has_score_thr ? score_t->as_double(0) : 0.0;
    const int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
    std::vector<int64_t> selected;  // triples
    std::vector<Box> bx(static_cast<size_t>(n));
    for (int64_t bi = 0; bi < batches && max_out > 0; ++bi) {
      const float* p = boxes.data<float>() + bi * n * 4;
      for (int64_t i = 0; i < n; ++i) {
        const float* q = p + i * 4;
        Box& c = bx[static_cast<size_t>(i)];
        if (center) {
          c = {q[1] - q[3] / 2, q[0] - q[2] / 2, q[1] + q[3] / 2, q[0] + q[2] / 2};
        } else {
          // Corners may come in either order.
          c = {std::min(q[0], q[2]), std::min(q[1], q[3]), std::max(q[0], q[2]), std::max(q[1], q[3])};
        }
      }
      for (int64_t ci = 0; ci < classes; ++ci) {
        const float* s = scores.data<float>() + (bi * classes + ci) * n;
        std::vector<int64_t> cand;
        for (int64_t i = 0; i < n; ++i)
          if (!has_score_thr || s[i] > score_thr) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(), [s](int64_t a, int64_t c) { return total_less(s[c], s[a]); });
        std::vector<int64_t> kept;
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t j : kept)
            if (iou(bx[static_cast<size_t>(i)], bx[static_cast<size_t>(j)]) > iou_thr) {
              keep = false;
              break;
            }
          if (keep) kept.push_back(i);
        }
        for (int64_t i : kept) selected.insert(selected.end(), {bi, ci, i});
      }
    }
    Tensor& y = r.output(0, DType::I64, {static_cast<int64_t>(selected.size() / 3), 3});
    if (!selected.empty()) std::memcpy(y.raw(), selected.data(), selected.size() * sizeof(int64_t));
  });
}

}  // namespace

void register_misc_kernels(KernelRegistry& r) {
  r.add("TopK", make_topk);
  r.add("Unique", make_unique, "", 11);
  r.add("Trilu", make_trilu, "", 14);
  r.add("ReverseSequence", make_reverse_sequence, "", 10);
  r.add("NonMaxSuppression", make_nms, "", 10);
  register_einsum_kernels(r);
  register_grid_sample_kernels(r);
}

}  // namespace hetero::cpu
