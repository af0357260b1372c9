// Slice and Pad: copies of a rectangular region of a tensor, one reading a
// strided sub-box of the input, the other writing the input into a bigger (or
// cropped) box with a border. Both walk the output row by row and copy the
// contiguous part of each row with memcpy.
#include <algorithm>
#include <cstring>

#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/kernel_memo.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

struct SliceDim {
  int64_t start = 0, step = 1, count = 0;
};

// Start/end/step of one axis clamped as ONNX's reference (NumPy slicing)
// does (opset 10+; the attribute form of opsets 1-9 is the step-1 case).
SliceDim clamp_slice(const Node& node, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0) bad_input(node, "a step is zero");
  SliceDim s;
  if (dim == 0) return s;
  // A step longer than the dim selects at most one element either way;
  // bounding it keeps the arithmetic below from overflowing.
  step = std::clamp<int64_t>(step, -(dim + 1), dim + 1);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  s.step = step;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    // As in NumPy: a start before the first element selects nothing.
    start = std::clamp<int64_t>(start, -1, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    s.count = start > end ? (start - end - step - 1) / -step : 0;
  }
  s.start = s.count > 0 ? start : 0;
  return s;
}

// Copies out[i...] = in[start + i*step ...] for every output row; the last
// dim's run is one memcpy when its step is 1.
void strided_copy(const Tensor& x, Tensor& y, const std::vector<SliceDim>& dims) {
  const size_t rank = x.rank();
  const size_t elem = core::dtype_size(x.dtype());
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) base += dims[d].start * in_strides[d];
  const SliceDim& last = dims[rank - 1];
  const int64_t rows = static_cast<int64_t>(y.numel()) / last.count;
  std::vector<int64_t> idx(rank, 0);
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y.raw());
  dispatch_width(elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t off = base;
      for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * dims[d].step * in_strides[d];
      T* out = reinterpret_cast<T*>(dst) + row * last.count;
      if (last.step == 1) {
        std::memcpy(out, src + static_cast<size_t>(off) * elem, static_cast<size_t>(last.count) * elem);
      } else {
        const T* in = reinterpret_cast<const T*>(src) + off;
        for (int64_t j = 0; j < last.count; ++j) out[j] = in[j * last.step];
      }
      // Next row: odometer over the output dims except the last.
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < dims[d].count) break;
        idx[d] = 0;
      }
    }
  });
}

// Input index of each output position of one padded dim, -1 for the
// constant border.
std::vector<int64_t> pad_map(const Node& node, const std::string& mode, int64_t dim, int64_t before, int64_t out) {
  std::vector<int64_t> map(static_cast<size_t>(out));
  if (mode != "constant" && dim == 0 && out > 0) bad_input(node, "cannot pad an empty dim in mode '" + mode + "'");
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = o - before;
    if (i < 0 || i >= dim) {
      if (mode == "constant") {
        i = -1;
      } else if (mode == "edge") {
        i = std::clamp<int64_t>(i, 0, dim - 1);
      } else if (mode == "wrap") {
        i = ((i % dim) + dim) % dim;
      } else if (dim == 1) {  // reflect on one element repeats it
        i = 0;
      } else {
        // Reflect without repeating the edge: the pattern has period 2(dim-1).
        const int64_t period = 2 * (dim - 1);
        i = ((i % period) + period) % period;
        if (i >= dim) i = period - i;
      }
    }
    map[static_cast<size_t>(o)] = i;
  }
  return map;
}

}  // namespace

std::unique_ptr<Kernel> make_slice(const KernelBuild& b) {
  // Opsets 1-9 describe the slice with attributes, later ones with inputs.
  const bool from_attrs = b.opset < 10;
  const std::vector<int64_t> a_starts = b.node.attr_ints("starts"), a_ends = b.node.attr_ints("ends"),
                             a_axes = b.node.attr_ints("axes");
  // The slice at the shapes and starts, ends, axes and steps of the last run.
  struct SliceMemo final : KernelMemo {
    MemoKey key;
    std::vector<SliceDim> dims;
    Shape out;
    bool view = false;  // a contiguous region: the output views the input
    size_t offset = 0;  // ... from this element on
  };
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    SliceMemo& memo = memo_of<SliceMemo>(r);
    if (memo.key.same(r, {0}, {1, 2, 3, 4})) {
      if (memo.view) {
        r.set_output(0, view_of(x, memo.offset, memo.out));
      } else {
        strided_copy(x, r.output(0, x.dtype(), memo.out), memo.dims);
      }
      return;
    }
    const auto rank = static_cast<int64_t>(x.rank());
    std::vector<int64_t> starts, ends, axes, steps;
    if (from_attrs) {
      starts = a_starts, ends = a_ends, axes = a_axes;
    } else {
      starts = int_input_values(r.node(), required_input(r, 1), "starts");
      ends = int_input_values(r.node(), required_input(r, 2), "ends");
      if (r.input(3)) axes = int_input_values(r.node(), *r.input(3), "axes");
      if (r.input(4)) steps = int_input_values(r.node(), *r.input(4), "steps");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      bad_input(r.node(), "starts, ends, axes and steps differ in length");
    std::vector<SliceDim> dims(x.rank());
    std::vector<bool> seen(x.rank(), false);
    for (size_t d = 0; d < x.rank(); ++d) dims[d].count = x.dim(d);
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<size_t>(normalize_axis(r.node(), axes[i], rank));
      if (seen[a]) bad_input(r.node(), "axis " + std::to_string(axes[i]) + " is sliced twice");
      seen[a] = true;
      dims[a] = clamp_slice(r.node(), x.dim(a), starts[i], ends[i], steps[i]);
    }
    Shape out(x.rank());
    for (size_t d = 0; d < x.rank(); ++d) out[d] = dims[d].count;
    // A contiguous region (only leading single indices, then one step-1
    // range, then whole dims) is returned as a view of the input.
    size_t k = x.rank();
    while (k > 0 && dims[k - 1].start == 0 && dims[k - 1].count == x.dim(k - 1) && dims[k - 1].step == 1) --k;
    bool contiguous = true;
    if (k > 0) {
      contiguous = dims[k - 1].step == 1 || dims[k - 1].count <= 1;
      for (size_t d = 0; d + 1 < k; ++d) contiguous = contiguous && dims[d].count == 1;
    }
    memo.view = contiguous || core::shape_numel(out) == 0;
    if (memo.view) {
      int64_t offset = 0;
      const std::vector<int64_t> strides = contiguous_strides(x.shape());
      for (size_t d = 0; d < x.rank() && core::shape_numel(out) != 0; ++d) offset += dims[d].start * strides[d];
      memo.offset = static_cast<size_t>(offset);
      r.set_output(0, view_of(x, memo.offset, out));
    } else {
      strided_copy(x, r.output(0, x.dtype(), out), dims);
    }
    memo.dims = std::move(dims);
    memo.out = std::move(out);
    memo.key.commit();
  });
}

std::unique_ptr<Kernel> make_pad(const KernelBuild& b) {
  const std::string mode = b.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    b.unsupported("mode '" + mode + "' is not supported");
  // Pads and the value are attributes before opset 11 ("paddings" in Pad-1).
  const bool from_attrs = b.opset < 11;
  const std::vector<int64_t> attr_pads = b.node.attr_ints(b.opset < 2 ? "paddings" : "pads");
  const double attr_value = b.node.attr_float("value", 0.0f);
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const size_t rank = x.rank();
    std::vector<int64_t> pads = from_attrs ? attr_pads : int_input_values(r.node(), required_input(r, 1), "pads");
    // Opset 18's axes input names the dims the pads apply to.
    if (!from_attrs && r.input(3)) {
      const std::vector<int64_t> axes = int_input_values(r.node(), *r.input(3), "axes");
      if (pads.size() != 2 * axes.size()) bad_input(r.node(), "pads and axes differ in length");
      std::vector<int64_t> full(2 * rank, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        const auto a = static_cast<size_t>(normalize_axis(r.node(), axes[i], static_cast<int64_t>(rank)));
        full[a] = pads[i];
        full[a + rank] = pads[i + axes.size()];
      }
      pads = full;
    }
    if (pads.size() != 2 * rank)
      bad_input(r.node(), "pads has " + std::to_string(pads.size()) + " entries for a rank " +
                              std::to_string(rank) + " input");
    const size_t elem = core::dtype_size(x.dtype());
    alignas(8) unsigned char value[8] = {};
    if (from_attrs) {
      store_double(x.dtype(), value, 0, attr_value);
    } else if (const Tensor* v = r.input(2); v && v->numel() > 0) {
      if (v->dtype() != x.dtype()) bad_input(r.node(), "constant_value differs in type from the input");
      std::memcpy(value, v->raw(), elem);
    }
    Shape out(rank);
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t d = 0; d < rank; ++d) {
      out[d] = x.dim(d) + pads[d] + pads[d + rank];
      if (out[d] < 0) bad_input(r.node(), "pads crop dim " + std::to_string(d) + " below zero");
      maps[d] = pad_map(r.node(), mode, x.dim(d), pads[d], out[d]);
    }
    Tensor& y = r.output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    if (rank == 0) {
      std::memcpy(y.raw(), x.raw(), elem);
      return;
    }
    const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
    const std::vector<int64_t>& last = maps[rank - 1];
    const int64_t width = out[rank - 1], in_width = x.dim(rank - 1);
    // The part of each row that is a straight copy of an input row.
    const int64_t mid_out = std::max<int64_t>(pads[rank - 1], 0);
    const int64_t mid_src = std::max<int64_t>(-pads[rank - 1], 0);
    const int64_t mid_len = std::max<int64_t>(0, std::min(in_width - mid_src, width - mid_out));
    const int64_t rows = static_cast<int64_t>(y.numel()) / width;
    std::vector<int64_t> idx(rank, 0);
    dispatch_width(elem, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fill;
      std::memcpy(&fill, value, sizeof(T));
      const T* in = static_cast<const T*>(x.raw());
      for (int64_t row = 0; row < rows; ++row) {
        T* o = static_cast<T*>(y.raw()) + row * width;
        int64_t off = 0;
        bool border = false;
        for (size_t d = 0; d + 1 < rank; ++d) {
          const int64_t i = maps[d][static_cast<size_t>(idx[d])];
          border = border || i < 0;
          off += i * in_strides[d];
        }
        if (border) {
          std::fill(o, o + width, fill);
        } else {
          const T* src = in + off;
          for (int64_t j = 0; j < mid_out; ++j) o[j] = last[static_cast<size_t>(j)] < 0 ? fill : src[last[static_cast<size_t>(j)]];
          std::memcpy(o + mid_out, src + mid_src, static_cast<size_t>(mid_len) * sizeof(T));
          for (int64_t j = mid_out + mid_len; j < width; ++j)
            o[j] = last[static_cast<size_t>(j)] < 0 ? fill : src[last[static_cast<size_t>(j)]];
        }
        for (size_t d = rank - 1; d-- > 0;) {
          if (++idx[d] < out[d]) break;
          idx[d] = 0;
        }
      }
    });
  });
}

}  // namespace hetero::cpu
