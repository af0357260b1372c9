// Ops that order elements by value: TopK and Unique. Both sort indices with
// a strict total order (total_less: NaN above every number), so that NaN in
// the data cannot break the sort's preconditions, and both accept every
// arithmetic dtype plus float16/bfloat16 (compared widened to float).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

// The elements of `t` as sortable keys: the dtype itself, or float for
// float16/bfloat16. f receives a pointer to the keys.
template <class F>
void with_keys(const Node& node, const Tensor& t, F&& f) {
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16) {
    std::vector<float> keys(t.numel());
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<float>(t.as_double(i));
    f(static_cast<const float*>(keys.data()));
  } else {
    dispatch_or_fail(AllTypes{}, t.dtype(), node, [&](auto tag) { f(t.data<typename decltype(tag)::type>()); });
  }
}

}  // namespace

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

std::unique_ptr<Kernel> make_unique_op(const KernelBuild& b) {
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

}  // namespace hetero::cpu
