// Index-driven data movement: Gather, GatherElements, GatherND, Scatter,
// ScatterElements, ScatterND, Compress, NonZero and OneHot.
//
// Every index a request supplies is checked against the dim it addresses
// before any memory is touched: a bad index is an INVALID_ARGUMENT naming the
// node, never a read or write out of bounds.
#include <algorithm>
#include <cstring>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Node;
using core::Shape;
using core::Tensor;

constexpr size_t kParallelBytes = size_t{1} << 16;

// The raw index at position i of an int32/int64 tensor, wrapped if negative
// and checked against [0, dim).
struct IndexReader {
  const Node& node;
  const Tensor& t;
  IndexReader(const Node& n, const Tensor& idx) : node(n), t(idx) {
    if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
      bad_input(node, std::string("indices must be int64 or int32, not ") + core::dtype_name(t.dtype()));
  }
  int64_t operator()(size_t i, int64_t dim) const {
    int64_t v = t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    if (v < 0) v += dim;
    if (v < 0 || v >= dim)
      bad_input(node, "index " + std::to_string(t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i]) +
                          " is out of range for a dim of " + std::to_string(dim));
    return v;
  }
};

// Walks every position of `shape` (an index tensor's), giving the element
// offset in a tensor of `strides` with the `axis` coordinate left out.
template <class F>
void for_each_position(const Shape& shape, const std::vector<int64_t>& strides, size_t axis, F&& f) {
  const size_t n = core::shape_numel(shape), rank = shape.size();
  std::vector<int64_t> c(rank, 0);
  int64_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = d == axis ? 0 : strides[d];
      if (++c[d] < shape[d]) {
        off += step;
        break;
      }
      off -= step * (c[d] - 1);
      c[d] = 0;
    }
  }
}

// Shared checks of GatherElements and Scatter(Elements): same rank, and the
// index tensor no bigger than the data outside the axis.
size_t elements_axis(const KernelRun& r, const Tensor& data, const Tensor& idx, int64_t axis_attr) {
  if (idx.rank() != data.rank()) bad_input(r.node(), "indices and data differ in rank");
  const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(data.rank())));
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != axis && idx.dim(d) > data.dim(d))
      bad_input(r.node(), "indices " + core::shape_to_string(idx.shape()) + " exceed data " +
                              core::shape_to_string(data.shape()) + " outside the axis");
  return axis;
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const KernelBuild& b) {
  const std::string s = b.node.attr_string("reduction", "none");
  if (s == "none") return Reduction::None;
  if (s == "add") return Reduction::Add;
  if (s == "mul") return Reduction::Mul;
  if (s == "max") return Reduction::Max;
  if (s == "min") return Reduction::Min;
  b.unsupported("reduction '" + s + "' is not supported");
}

template <typename T>
T reduce(Reduction red, T a, T b) {
  switch (red) {
    case Reduction::Add: return static_cast<T>(a + b);
    case Reduction::Mul: return static_cast<T>(a * b);
    case Reduction::Max: return std::max(a, b);
    case Reduction::Min: return std::min(a, b);
    case Reduction::None: break;
  }
  return b;
}

// Applies updates element by element: fn(i, dst_offset) for update i. With a
// reduction, the element types are arithmetic; float16/bfloat16 go through float.
template <class Offsets>
void scatter_apply(const KernelRun& r, Reduction red, Tensor& out, const Tensor& upd, Offsets&& offsets) {
  if (upd.dtype() != out.dtype()) bad_input(r.node(), "updates differ in type from data");
  if (red == Reduction::None) {
    dispatch_width(out.dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      offsets([&](size_t i, int64_t off) { out.data<T>()[off] = upd.data<T>()[i]; });
    });
  } else if (out.dtype() == DType::F16 || out.dtype() == DType::BF16) {
    offsets([&](size_t i, int64_t off) {
      const auto o = static_cast<size_t>(off);
      store_double(out.dtype(), out.raw(), o,
                   reduce<float>(red, static_cast<float>(out.as_double(o)), static_cast<float>(upd.as_double(i))));
    });
  } else {
    dispatch_or_fail(AllTypes{}, out.dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      offsets([&](size_t i, int64_t off) { out.data<T>()[off] = reduce<T>(red, out.data<T>()[off], upd.data<T>()[i]); });
    });
  }
}

// Positions of the non-zero elements; -0.0 counts as zero.
template <typename T>
void collect_nonzero(const Tensor& x, std::vector<size_t>& where) {
  const T* p = x.data<T>();
  for (size_t i = 0; i < x.numel(); ++i)
    if (p[i] != T{}) where.push_back(i);
}

}  // namespace

std::unique_ptr<Kernel> make_gather(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  return make_fn_kernel([axis_attr](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& idx = required_input(r, 1);
    if (x.rank() == 0) bad_input(r.node(), "cannot gather from a scalar");
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(x.rank())));
    const IndexReader read(r.node(), idx);
    const int64_t dim = x.dim(axis);
    std::vector<int64_t> rows(idx.numel());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = read(i, dim);
    Shape out(x.shape().begin(), x.shape().begin() + static_cast<ptrdiff_t>(axis));
    out.insert(out.end(), idx.shape().begin(), idx.shape().end());
    out.insert(out.end(), x.shape().begin() + static_cast<ptrdiff_t>(axis) + 1, x.shape().end());
    Tensor& y = r.output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    const size_t elem = core::dtype_size(x.dtype());
    const int64_t outer = product(x.shape(), 0, axis);
    const auto inner = static_cast<size_t>(product(x.shape(), axis + 1, x.rank()));
    const auto n = static_cast<int64_t>(rows.size());
    const bool parallel = y.nbytes() >= kParallelBytes;
    dispatch_width(elem, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(x.raw());
      T* dst = static_cast<T*>(y.raw());
      parallel_blocks(r, outer * n, 2.0 * double(inner * sizeof(T)), parallel, [&](int64_t item) {
        const int64_t o = item / n, j = item % n;
        const T* from = src + (o * dim + rows[static_cast<size_t>(j)]) * static_cast<int64_t>(inner);
        T* to = dst + item * static_cast<int64_t>(inner);
        if (inner == 1)
          *to = *from;
        else
          std::memcpy(to, from, inner * sizeof(T));
      });
    });
  });
}

std::unique_ptr<Kernel> make_gather_elements(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  return make_fn_kernel([axis_attr](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& idx = required_input(r, 1);
    const size_t axis = elements_axis(r, x, idx, axis_attr);
    const IndexReader read(r.node(), idx);
    Tensor& y = r.output(0, x.dtype(), idx.shape());
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    dispatch_width(x.dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(x.raw());
      T* dst = static_cast<T*>(y.raw());
      for_each_position(idx.shape(), strides, axis, [&](size_t i, int64_t off) {
        dst[i] = src[off + read(i, x.dim(axis)) * strides[axis]];
      });
    });
  });
}

std::unique_ptr<Kernel> make_gather_nd(const KernelBuild& b) {
  const int64_t batch_dims = b.opset >= 12 ? b.node.attr_int("batch_dims", 0) : 0;
  return make_fn_kernel([batch_dims](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& idx = required_input(r, 1);
    const IndexReader read(r.node(), idx);
    const auto bd = static_cast<size_t>(batch_dims);
    if (batch_dims < 0 || idx.rank() == 0 || bd >= std::min(x.rank(), idx.rank()))
      bad_input(r.node(), "batch_dims " + std::to_string(batch_dims) + " does not fit data " +
                              core::shape_to_string(x.shape()) + " and indices " + core::shape_to_string(idx.shape()));
    const auto k = static_cast<size_t>(idx.dim(idx.rank() - 1));
    if (k > x.rank() - bd) bad_input(r.node(), "index tuples are longer than the data's rank");
    for (size_t d = 0; d < bd; ++d)
      if (x.dim(d) != idx.dim(d)) bad_input(r.node(), "data and indices differ in batch dim " + std::to_string(d));
    Shape out(idx.shape().begin(), idx.shape().end() - 1);
    out.insert(out.end(), x.shape().begin() + static_cast<ptrdiff_t>(bd + k), x.shape().end());
    Tensor& y = r.output(0, x.dtype(), out);
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    const int64_t batches = product(x.shape(), 0, bd);
    const int64_t batch_stride = product(x.shape(), bd, x.rank());
    const int64_t per_batch = product(idx.shape(), bd, idx.rank() - 1);
    const auto slice = static_cast<size_t>(product(x.shape(), bd + k, x.rank()));
    const size_t elem = core::dtype_size(x.dtype());
    const auto* src = static_cast<const char*>(x.raw());
    auto* dst = static_cast<char*>(y.raw());
    for (int64_t bi = 0; bi < batches; ++bi) {
      for (int64_t j = 0; j < per_batch; ++j) {
        const auto tuple = static_cast<size_t>(bi * per_batch + j) * k;
        int64_t off = bi * batch_stride;
        for (size_t t = 0; t < k; ++t) off += read(tuple + t, x.dim(bd + t)) * strides[bd + t];
        std::memcpy(dst + static_cast<size_t>(bi * per_batch + j) * slice * elem,
                    src + static_cast<size_t>(off) * elem, slice * elem);
      }
    }
  });
}

std::unique_ptr<Kernel> make_scatter_elements(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  const Reduction red = b.opset >= 16 ? reduction_of(b) : Reduction::None;
  return make_fn_kernel([axis_attr, red](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& idx = required_input(r, 1);
    const Tensor& upd = required_input(r, 2);
    const size_t axis = elements_axis(r, x, idx, axis_attr);
    if (upd.shape() != idx.shape()) bad_input(r.node(), "updates and indices differ in shape");
    const IndexReader read(r.node(), idx);
    Tensor& y = r.output(0, x.dtype(), x.shape());
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    scatter_apply(r, red, y, upd, [&](auto&& apply) {
      for_each_position(idx.shape(), strides, axis,
                        [&](size_t i, int64_t off) { apply(i, off + read(i, x.dim(axis)) * strides[axis]); });
    });
  });
}

std::unique_ptr<Kernel> make_scatter_nd(const KernelBuild& b) {
  const Reduction red = b.opset >= 16 ? reduction_of(b) : Reduction::None;
  return make_fn_kernel([red](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const Tensor& idx = required_input(r, 1);
    const Tensor& upd = required_input(r, 2);
    const IndexReader read(r.node(), idx);
    if (idx.rank() == 0) bad_input(r.node(), "indices must have at least one dim");
    const auto k = static_cast<size_t>(idx.dim(idx.rank() - 1));
    if (k > x.rank()) bad_input(r.node(), "index tuples are longer than the data's rank");
    Shape expect(idx.shape().begin(), idx.shape().end() - 1);
    expect.insert(expect.end(), x.shape().begin() + static_cast<ptrdiff_t>(k), x.shape().end());
    if (upd.shape() != expect)
      bad_input(r.node(), "updates are " + core::shape_to_string(upd.shape()) + ", expected " +
                              core::shape_to_string(expect));
    Tensor& y = r.output(0, x.dtype(), x.shape());
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    const int64_t tuples = product(idx.shape(), 0, idx.rank() - 1);
    const auto slice = static_cast<size_t>(product(x.shape(), k, x.rank()));
    scatter_apply(r, red, y, upd, [&](auto&& apply) {
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        for (size_t j = 0; j < k; ++j) off += read(static_cast<size_t>(t) * k + j, x.dim(j)) * strides[j];
        for (size_t e = 0; e < slice; ++e) apply(static_cast<size_t>(t) * slice + e, off + static_cast<int64_t>(e));
      }
    });
  });
}

std::unique_ptr<Kernel> make_compress(const KernelBuild& b) {
  const bool has_axis = b.node.has_attr("axis");
  const int64_t axis_attr = b.node.attr_int("axis", 0);
  return make_fn_kernel([has_axis, axis_attr](KernelRun& r) {
    const Tensor& in = required_input(r, 0);
    const Tensor& cond = required_input(r, 1);
    if (cond.rank() != 1) bad_input(r.node(), "condition must be 1-D");
    // Without an axis the input is compressed as a flat vector.
    const Tensor x = has_axis ? in : in.reshaped({static_cast<int64_t>(in.numel())});
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dim(axis);
    std::vector<int64_t> kept;
    for (size_t i = 0; i < cond.numel(); ++i) {
      if (cond.as_int64(i) == 0) continue;
      if (static_cast<int64_t>(i) >= dim)
        bad_input(r.node(), "condition selects index " + std::to_string(i) + " of a dim of " + std::to_string(dim));
      kept.push_back(static_cast<int64_t>(i));
    }
    Shape out = x.shape();
    out[axis] = static_cast<int64_t>(kept.size());
    Tensor& y = r.output(0, x.dtype(), out);
    const size_t inner = static_cast<size_t>(product(x.shape(), axis + 1, x.rank())) * core::dtype_size(x.dtype());
    const int64_t outer = product(x.shape(), 0, axis);
    auto* dst = static_cast<char*>(y.raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k : kept) {
        std::memcpy(dst, static_cast<const char*>(x.raw()) + static_cast<size_t>(o * dim + k) * inner, inner);
        dst += inner;
      }
  });
}

std::unique_ptr<Kernel> make_nonzero(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    std::vector<size_t> where;
    if (x.dtype() == DType::F16 || x.dtype() == DType::BF16) {
      for (size_t i = 0; i < x.numel(); ++i)
        if (x.data<uint16_t>()[i] & 0x7fffu) where.push_back(i);
    } else {
      dispatch_or_fail(AllTypes{}, x.dtype(), r.node(),
                       [&](auto tag) { collect_nonzero<typename decltype(tag)::type>(x, where); });
    }
    // A scalar is treated as a one-element vector.
    const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
    const auto n = static_cast<int64_t>(where.size());
    Tensor& y = r.output(0, DType::I64, {static_cast<int64_t>(shape.size()), n});
    int64_t* out = y.data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      auto flat = static_cast<int64_t>(where[static_cast<size_t>(j)]);
      for (size_t d = shape.size(); d-- > 0;) {
        out[static_cast<int64_t>(d) * n + j] = flat % shape[d];
        flat /= shape[d];
      }
    }
  });
}

std::unique_ptr<Kernel> make_one_hot(const KernelBuild& b) {
  const int64_t axis_attr = b.node.attr_int("axis", -1);
  return make_fn_kernel([axis_attr](KernelRun& r) {
    const Tensor& idx = required_input(r, 0);
    const Tensor& depth_t = required_input(r, 1);
    const Tensor& values = required_input(r, 2);
    if (depth_t.numel() != 1) bad_input(r.node(), "depth must hold one value");
    if (values.numel() != 2) bad_input(r.node(), "values must hold [off, on]");
    const double depth_d = depth_t.as_double(0);
    if (!(depth_d >= 1 && depth_d < 9.0e18)) bad_input(r.node(), "depth must be positive");
    const auto depth = static_cast<int64_t>(depth_d);
    const auto out_rank = static_cast<int64_t>(idx.rank()) + 1;
    const auto axis = static_cast<size_t>(normalize_axis(r.node(), axis_attr, out_rank));
    Shape out = idx.shape();
    out.insert(out.begin() + static_cast<ptrdiff_t>(axis), depth);
    Tensor& y = r.output(0, values.dtype(), out);
    const size_t elem = core::dtype_size(values.dtype());
    const auto* off_on = static_cast<const char*>(values.raw());
    fill_elements(y.raw(), off_on, y.numel(), elem);
    const int64_t outer = product(idx.shape(), 0, axis);
    const int64_t inner = product(idx.shape(), axis, idx.rank());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // Indices may be any numeric type; fractions truncate.
        auto v = static_cast<int64_t>(idx.as_double(static_cast<size_t>(o * inner + i)));
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;  // out of range: the row stays "off"
        std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>((o * depth + v) * inner + i) * elem,
                    off_on + elem, elem);
      }
  });
}

}  // namespace hetero::cpu
