// Data-movement kernels that join, cut, regroup or mask whole blocks of a
// tensor by position: Concat, Split, DepthToSpace, SpaceToDepth, Trilu and
// ReverseSequence. They copy contiguous runs with memcpy and return views
// where the result is a contiguous part of an input. Slice/Pad,
// Gather/Scatter and Resize have files of their own.
#include <algorithm>
#include <cstring>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/transpose.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// Below this many bytes a copy is not worth spreading over threads.
constexpr size_t kParallelBytes = size_t{1} << 16;

int64_t blocksize_of(const KernelBuild& b) {
  const int64_t bs = b.node.attr_int("blocksize", 0);
  if (bs <= 0) b.unsupported("attribute 'blocksize' must be positive");
  return bs;
}

}  // namespace

std::unique_ptr<Kernel> make_concat(const KernelBuild& b) {
  // Concat-1..3 defaulted the axis to 1; from opset 4 it is required.
  if (b.opset >= 4 && !b.node.has_attr("axis")) b.unsupported("attribute 'axis' is required");
  const int64_t axis_attr = b.node.attr_int("axis", 1);
  return make_fn_kernel([axis_attr](KernelRun& r) {
    const Tensor& first = required_input(r, 0);
    const auto rank = static_cast<int64_t>(first.rank());
    if (rank == 0) bad_input(r.node(), "cannot concatenate scalars");
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, rank));
    std::vector<const Tensor*> ins;
    Shape out = first.shape();
    out[axis] = 0;
    for (size_t i = 0; i < r.num_inputs(); ++i) {
      const Tensor& t = required_input(r, i);
      bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
      for (size_t d = 0; same && d < t.rank(); ++d) same = d == axis || t.dim(d) == first.dim(d);
      if (!same)
        bad_input(r.node(), "input " + std::to_string(i) + " (" + core::dtype_name(t.dtype()) + " " +
                                core::shape_to_string(t.shape()) + ") does not match input 0 (" +
                                core::dtype_name(first.dtype()) + " " + core::shape_to_string(first.shape()) +
                                ") outside axis " + std::to_string(axis));
      out[axis] += t.dim(axis);
      ins.push_back(&t);
    }
    Tensor& y = r.output(0, first.dtype(), out);
    if (y.numel() == 0) return;
    const size_t elem = core::dtype_size(y.dtype());
    const auto outer = product(out, 0, axis);
    const size_t inner = static_cast<size_t>(product(out, axis + 1, out.size())) * elem;
    const size_t out_row = static_cast<size_t>(out[axis]) * inner;
    auto* dst = static_cast<char*>(y.raw());
    std::vector<size_t> offsets(ins.size()), chunks(ins.size());
    size_t at = 0;
    for (size_t i = 0; i < ins.size(); ++i) {
      offsets[i] = at;
      chunks[i] = static_cast<size_t>(ins[i]->dim(axis)) * inner;
      at += chunks[i];
    }
    const bool parallel = y.nbytes() >= kParallelBytes && outer > 1;
    parallel_blocks(r, outer, 2.0 * double(out_row), parallel, [&](int64_t o) {
      for (size_t i = 0; i < ins.size(); ++i)
        if (chunks[i])
          std::memcpy(dst + static_cast<size_t>(o) * out_row + offsets[i],
                      static_cast<const char*>(ins[i]->raw()) + static_cast<size_t>(o) * chunks[i], chunks[i]);
    });
  });
}

std::unique_ptr<Kernel> make_split(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  // The sizes are an attribute before opset 13 and input 1 from 13 on
  // (Split-1 accepted either).
  const bool split_attr = b.opset < 13;
  const bool split_input = b.opset == 1 || b.opset >= 13;
  const std::vector<int64_t> attr_split = b.node.attr_ints("split");
  const int64_t num_outputs = b.node.attr_int("num_outputs", 0);
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dim(axis);
    const size_t n = r.num_outputs();
    std::vector<int64_t> sizes;
    if (split_attr && !attr_split.empty()) {
      sizes = attr_split;
    } else if (split_input && r.input(1)) {
      sizes = int_input_values(r.node(), *r.input(1), "split");
    } else if (num_outputs > 0) {
      // Opset 18: ceil-sized parts, the last one takes the remainder.
      const int64_t part = (dim + num_outputs - 1) / num_outputs;
      for (int64_t i = 0; i < num_outputs; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * part, 0, part));
    } else {
      if (n == 0 || dim % static_cast<int64_t>(n) != 0)
        bad_input(r.node(), "cannot split a dim of " + std::to_string(dim) + " into " + std::to_string(n) +
                                " equal parts");
      sizes.assign(n, dim / static_cast<int64_t>(n));
    }
    if (sizes.size() != n)
      bad_input(r.node(), "split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(n) +
                              " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) bad_input(r.node(), "split has a negative entry");
      total += s;
    }
    if (total != dim)
      bad_input(r.node(), "split sums to " + std::to_string(total) + " but the dim is " + std::to_string(dim));
    const int64_t outer = product(x.shape(), 0, axis);
    const auto inner = static_cast<size_t>(product(x.shape(), axis + 1, x.rank()));
    const size_t elem = core::dtype_size(x.dtype());
    const size_t in_row = static_cast<size_t>(dim) * inner * elem;
    int64_t start = 0;
    for (size_t i = 0; i < n; ++i) {
      Shape shape = x.shape();
      shape[axis] = sizes[i];
      if (r.output_wanted(i)) {
        if (outer == 1) {
          // Parts of a single row are contiguous: views, no copy.
          r.set_output(i, view_of(x, static_cast<size_t>(start) * inner, shape));
        } else {
          Tensor& y = r.output(i, x.dtype(), shape);
          const size_t chunk = static_cast<size_t>(sizes[i]) * inner * elem;
          const char* src = static_cast<const char*>(x.raw()) + static_cast<size_t>(start) * inner * elem;
          for (int64_t o = 0; o < outer && chunk; ++o)
            std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(o) * chunk,
                        src + static_cast<size_t>(o) * in_row, chunk);
        }
      }
      start += sizes[i];
    }
  });
}

std::unique_ptr<Kernel> make_depth_to_space(const KernelBuild& b) {
  const int64_t bs = blocksize_of(b);
  const std::string mode = b.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") b.unsupported("mode '" + mode + "' is not supported");
  const bool dcr = mode == "DCR";
  return make_fn_kernel([bs, dcr](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() != 4) bad_input(r.node(), "the input must be 4-D, not " + core::shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (c % (bs * bs) != 0)
      bad_input(r.node(), "channels " + std::to_string(c) + " are not a multiple of blocksize^2");
    const int64_t oc = c / (bs * bs);
    // DCR: [N, b, b, C', H, W] -> [N, C', H, b, W, b]; CRD: [N, C', b, b, H, W] -> same.
    const Shape view = dcr ? Shape{n, bs, bs, oc, h, w} : Shape{n, oc, bs, bs, h, w};
    const std::vector<int64_t> perm =
        dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    Tensor& y = r.output(0, x.dtype(), {n, oc, h * bs, w * bs});
    permute_copy(r, x.raw(), y.raw(), view, perm, core::dtype_size(x.dtype()));
  });
}

std::unique_ptr<Kernel> make_space_to_depth(const KernelBuild& b) {
  const int64_t bs = blocksize_of(b);
  return make_fn_kernel([bs](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() != 4) bad_input(r.node(), "the input must be 4-D, not " + core::shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (h % bs != 0 || w % bs != 0)
      bad_input(r.node(), "spatial dims " + std::to_string(h) + "x" + std::to_string(w) +
                              " are not multiples of the blocksize");
    // [N, C, H', b, W', b] -> [N, b, b, C, H', W'].
    Tensor& y = r.output(0, x.dtype(), {n, c * bs * bs, h / bs, w / bs});
    permute_copy(r, x.raw(), y.raw(), {n, c, h / bs, bs, w / bs, bs}, {0, 3, 5, 1, 2, 4},
                 core::dtype_size(x.dtype()));
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

}  // namespace hetero::cpu
