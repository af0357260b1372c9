// Shape kernels: ops that read or change a tensor's shape and pass its bytes
// through as a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity), the
// broadcasting copies (Expand, Tile) and the small generators
// (Shape, Size, Constant, ConstantOfShape, Range, EyeLike).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "drivers/cpu/checkpoint_blocks.h"
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

// Reshape's target: 0 copies the input dim (unless allowzero), one -1 is
// inferred from the element count.
Shape reshape_target(const Node& node, const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int64_t infer = -1;
  size_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer >= 0) bad_input(node, "the target shape has more than one -1");
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) bad_input(node, "the target shape has the invalid dim " + std::to_string(d));
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        bad_input(node, "the target shape copies dim " + std::to_string(i) + " of a rank " +
                            std::to_string(in.size()) + " input");
      d = in[i];
    }
    has_zero = has_zero || d == 0;
    out[i] = d;
    if (d != 0) known = core::shape_numel({static_cast<int64_t>(known), d});
  }
  const size_t numel = core::shape_numel(in);
  if (infer >= 0) {
    if (has_zero)
      bad_input(node, "cannot infer the -1 dim of a target shape with a zero dim (input " +
                          core::shape_to_string(in) + ")");
    if (numel % known != 0)
      bad_input(node, "cannot reshape " + core::shape_to_string(in) + " with target " +
                          core::shape_to_string(spec));
    out[static_cast<size_t>(infer)] = static_cast<int64_t>(numel / known);
  }
  if (core::shape_numel(out) != numel)
    bad_input(node, "cannot reshape " + core::shape_to_string(in) + " to " + core::shape_to_string(out));
  return out;
}

// An output shape derived from the input's shape and its axes (Squeeze, Unsqueeze).
struct OutShapeMemo final : KernelMemo {
  MemoKey key;
  Shape out;
};

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, input 1 from 13.
std::vector<int64_t> axes_of(const KernelRun& r, bool from_attr, const std::vector<int64_t>& attr_axes) {
  if (from_attr) return attr_axes;
  const Tensor* t = r.input(1);
  return t ? int_input_values(r.node(), *t, "axes") : std::vector<int64_t>{};
}

template <typename T>
void fill_range(KernelRun& r, const Tensor& start_t, const Tensor& limit_t, const Tensor& delta_t) {
  const T start = start_t.data<T>()[0], limit = limit_t.data<T>()[0], delta = delta_t.data<T>()[0];
  if (delta == 0) bad_input(r.node(), "delta is zero");
  int64_t n = 0;
  if constexpr (std::is_floating_point_v<T>) {
    const double count = std::ceil((static_cast<double>(limit) - start) / delta);
    if (!(count < 9.0e18)) bad_input(r.node(), "the range is too long");  // also catches NaN
    n = std::max<int64_t>(static_cast<int64_t>(count), 0);
  } else {
    // 128-bit so that the difference of extreme int64 bounds cannot overflow.
    const __int128 span = static_cast<__int128>(limit) - start;
    const __int128 d = delta;
    if ((span > 0 && d > 0) || (span < 0 && d < 0))
      n = static_cast<int64_t>((span + d - (d > 0 ? 1 : -1)) / d);
  }
  Tensor& y = r.output(0, start_t.dtype(), {n});
  T* out = y.data<T>();
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

// Copies `in` broadcast to `out`'s shape. Dims from `tail` on match exactly
// and form one contiguous block; above it, a dim of size 1 in the input is
// produced once and then replicated by memcpy.
// Repeats the `block` bytes at dst `count` times (the first is in place) by
// doubling copies, in checkpoint blocks: a few bytes of input can ask for
// hundreds of megabytes of output.
void repeat_block(KernelRun& r, char* dst, size_t count, size_t block) {
  for (size_t done = 1; done < count;) {
    const size_t n = std::min(done, count - done);
    copy_in_checkpoint_blocks(r, dst + done * block, dst, n * block);
    done += n;
  }
}

struct Broadcaster {
  KernelRun& r;
  const Shape& in_shape;  // aligned to out's rank with leading 1s
  const Shape& out_shape;
  std::vector<int64_t> in_strides, out_strides;
  size_t elem, tail;

  void run(size_t d, const char* src, char* dst) const {
    if (d == tail) {
      copy_in_checkpoint_blocks(r, dst, src, block_bytes(d));
      return;
    }
    const size_t chunk = block_bytes(d + 1);
    if (in_shape[d] == out_shape[d]) {
      for (int64_t i = 0; i < out_shape[d]; ++i)
        run(d + 1, src + static_cast<size_t>(i * in_strides[d]) * elem, dst + i * chunk);
    } else {
      run(d + 1, src, dst);
      repeat_block(r, dst, static_cast<size_t>(out_shape[d]), chunk);
    }
  }
  // Bytes of the output block spanned by dims d.. (one step of dim d-1).
  size_t block_bytes(size_t d) const {
    return static_cast<size_t>(product(out_shape, d, out_shape.size())) * elem;
  }
};

// Tile: each dim's block is produced once from the input, then repeated.
void tile_dim(KernelRun& r, size_t d, const Shape& in, const std::vector<int64_t>& reps,
              const std::vector<int64_t>& in_strides, const std::vector<int64_t>& out_strides, size_t elem,
              const char* src, char* dst) {
  const size_t block = static_cast<size_t>(in[d] * out_strides[d]) * elem;
  if (d + 1 == in.size()) {
    copy_in_checkpoint_blocks(r, dst, src, block);
  } else {
    for (int64_t i = 0; i < in[d]; ++i)
      tile_dim(r, d + 1, in, reps, in_strides, out_strides, elem, src + static_cast<size_t>(i * in_strides[d]) * elem,
               dst + static_cast<size_t>(i * out_strides[d]) * elem);
  }
  repeat_block(r, dst, static_cast<size_t>(reps[d]), block);
}

}  // namespace

std::unique_ptr<Kernel> make_shape(const KernelBuild& b) {
  // start/end exist from opset 15; both clamp to [0, rank] after wrapping.
  const int64_t start = b.opset >= 15 ? b.node.attr_int("start", 0) : 0;
  const bool has_end = b.opset >= 15 && b.node.has_attr("end");
  const int64_t end = has_end ? b.node.attr_int("end", 0) : 0;
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const auto rank = static_cast<int64_t>(x.rank());
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t s = clamp(start), e = has_end ? clamp(end) : rank;
    const int64_t n = std::max<int64_t>(e - s, 0);
    Tensor& y = r.output(0, DType::I64, {n});
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = x.dim(static_cast<size_t>(s + i));
  });
}

std::unique_ptr<Kernel> make_size(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    r.output(0, DType::I64, {}).data<int64_t>()[0] = static_cast<int64_t>(x.numel());
  });
}

std::unique_ptr<Kernel> make_reshape(const KernelBuild& b) {
  // Opsets 1-4 carry the target as an attribute, later ones as input 1.
  const bool from_attr = b.opset < 5;
  const std::vector<int64_t> attr_shape = b.node.attr_ints("shape");
  const bool allowzero = b.opset >= 14 && b.node.attr_int("allowzero", 0) != 0;
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const std::vector<int64_t> spec =
        from_attr ? attr_shape : int_input_values(r.node(), required_input(r, 1), "the target shape");
    r.set_output(0, x.reshaped(reshape_target(r.node(), x.shape(), spec, allowzero)));
  });
}

std::unique_ptr<Kernel> make_flatten(const KernelBuild& b) {
  const int64_t axis = b.node.attr_int("axis", 1);
  return make_fn_kernel([axis](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const auto rank = static_cast<int64_t>(x.rank());
    // axis may equal rank (everything in the first dim).
    if (axis < -rank || axis > rank)
      bad_input(r.node(), "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    r.set_output(0, x.reshaped({product(x.shape(), 0, a), product(x.shape(), a, x.rank())}));
  });
}

std::unique_ptr<Kernel> make_squeeze(const KernelBuild& b) {
  const bool from_attr = b.opset < 13;
  const std::vector<int64_t> attr_axes = b.node.attr_ints("axes");
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    OutShapeMemo& memo = memo_of<OutShapeMemo>(r);
    if (!memo.key.same(r, {0}, {1})) {
      const std::vector<int64_t> axes = axes_of(r, from_attr, attr_axes);
      const auto rank = static_cast<int64_t>(x.rank());
      std::vector<bool> drop(x.rank(), false);
      if (axes.empty()) {
        for (size_t i = 0; i < x.rank(); ++i) drop[i] = x.dim(i) == 1;
      }
      for (int64_t a : axes) {
        const auto i = static_cast<size_t>(normalize_axis(r.node(), a, rank));
        if (x.dim(i) != 1)
          bad_input(r.node(), "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.dim(i)));
        drop[i] = true;
      }
      memo.out.clear();
      for (size_t i = 0; i < x.rank(); ++i)
        if (!drop[i]) memo.out.push_back(x.dim(i));
      memo.key.commit();
    }
    r.set_output(0, x.reshaped(memo.out));
  });
}

std::unique_ptr<Kernel> make_unsqueeze(const KernelBuild& b) {
  const bool from_attr = b.opset < 13;
  const std::vector<int64_t> attr_axes = b.node.attr_ints("axes");
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    OutShapeMemo& memo = memo_of<OutShapeMemo>(r);
    if (!memo.key.same(r, {0}, {1})) {
      const std::vector<int64_t> axes = axes_of(r, from_attr, attr_axes);
      // Axes index the output, whose rank counts the new dims.
      const auto out_rank = static_cast<int64_t>(x.rank() + axes.size());
      std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
      for (int64_t a : axes) {
        const auto i = static_cast<size_t>(normalize_axis(r.node(), a, out_rank));
        if (inserted[i]) bad_input(r.node(), "axes repeat axis " + std::to_string(a));
        inserted[i] = true;
      }
      memo.out.clear();
      size_t next = 0;
      for (size_t i = 0; i < inserted.size(); ++i) memo.out.push_back(inserted[i] ? 1 : x.dim(next++));
      memo.key.commit();
    }
    r.set_output(0, x.reshaped(memo.out));
  });
}

std::unique_ptr<Kernel> make_identity(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) { r.set_output(0, required_input(r, 0)); });
}

std::unique_ptr<Kernel> make_constant(const KernelBuild& b) {
  const Node& n = b.node;
  Tensor value;
  if (const core::Attribute* a = n.attr("value")) {
    if (a->type != core::AttrType::Tensor) b.unsupported("attribute 'value' is not a tensor");
    value = a->t;
  } else if (n.has_attr("value_float")) {
    value = Tensor::from_vector<float>({n.attr_float("value_float", 0)}, {});
  } else if (n.has_attr("value_floats")) {
    const std::vector<float> v = n.attr_floats("value_floats");
    value = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
  } else if (n.has_attr("value_int")) {
    value = Tensor::from_vector<int64_t>({n.attr_int("value_int", 0)}, {});
  } else if (n.has_attr("value_ints")) {
    const std::vector<int64_t> v = n.attr_ints("value_ints");
    value = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  } else if (n.has_attr("sparse_value")) {
    b.unsupported("sparse constants are not supported");
  } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
    b.unsupported("string constants are not supported");
  } else {
    b.unsupported("no value attribute");
  }
  if (value.empty()) b.unsupported("the constant's tensor is empty or of an unsupported type");
  return make_fn_kernel([value](KernelRun& r) { r.set_output(0, value); });
}

std::unique_ptr<Kernel> make_constant_of_shape(const KernelBuild& b) {
  Tensor value = Tensor::from_vector<float>({0.0f}, {1});
  if (const core::Attribute* a = b.node.attr("value")) {
    if (a->type != core::AttrType::Tensor || a->t.numel() != 1)
      b.unsupported("attribute 'value' must be a one-element tensor");
    value = a->t;
  }
  return make_fn_kernel([value](KernelRun& r) {
    const std::vector<int64_t> shape = int_input_values(r.node(), required_input(r, 0), "the shape");
    Tensor& y = r.output(0, value.dtype(), shape);
    if (y.numel() == 0) return;
    std::memcpy(y.raw(), value.raw(), value.nbytes());
    repeat_block(r, static_cast<char*>(y.raw()), y.numel(), value.nbytes());
  });
}

std::unique_ptr<Kernel> make_range(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) {
    const Tensor &s = required_input(r, 0), &l = required_input(r, 1), &d = required_input(r, 2);
    if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1) bad_input(r.node(), "inputs must be scalars");
    if (l.dtype() != s.dtype() || d.dtype() != s.dtype()) bad_input(r.node(), "inputs differ in type");
    dispatch_or_fail(TypeList<float, double, int16_t, int32_t, int64_t>{}, s.dtype(), r.node(),
                     [&](auto tag) { fill_range<typename decltype(tag)::type>(r, s, l, d); });
  });
}

std::unique_ptr<Kernel> make_eye_like(const KernelBuild& b) {
  const bool has_dtype = b.node.has_attr("dtype");
  const auto dtype = static_cast<DType>(b.node.attr_int("dtype", 0));
  if (has_dtype && (!core::dtype_is_known(static_cast<int32_t>(dtype)) || core::dtype_size(dtype) == 0))
    b.unsupported("dtype " + std::to_string(static_cast<int>(dtype)) + " is not supported");
  const int64_t k = b.node.attr_int("k", 0);
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    if (x.rank() != 2) bad_input(r.node(), "the input must be 2-D, not " + core::shape_to_string(x.shape()));
    Tensor& y = r.output(0, has_dtype ? dtype : x.dtype(), x.shape());
    std::memset(y.raw(), 0, y.nbytes());
    const int64_t rows = x.dim(0), cols = x.dim(1);
    for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i)
      store_double(y.dtype(), y.raw(), static_cast<size_t>(i * cols + i + k), 1.0);
  });
}

std::unique_ptr<Kernel> make_expand(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const std::vector<int64_t> target = int_input_values(r.node(), required_input(r, 1), "the shape");
    const size_t rank = std::max(x.rank(), target.size());
    Shape in(rank, 1), out(rank, 1);
    std::copy(x.shape().begin(), x.shape().end(), in.begin() + static_cast<ptrdiff_t>(rank - x.rank()));
    for (size_t i = 0; i < rank; ++i) {
      const int64_t t = i + target.size() >= rank ? target[i + target.size() - rank] : 1;
      if (t < 0) bad_input(r.node(), "the shape has a negative dim");
      if (in[i] == t || t == 1)
        out[i] = in[i];
      else if (in[i] == 1)
        out[i] = t;
      else
        bad_input(r.node(), "cannot expand " + core::shape_to_string(x.shape()) + " to " +
                                core::shape_to_string(target));
    }
    if (in == out) {
      r.set_output(0, x.reshaped(out));
      return;
    }
    Tensor& y = r.output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    size_t tail = rank;
    while (tail > 0 && in[tail - 1] == out[tail - 1]) --tail;
    Broadcaster bc{r, in, out, contiguous_strides(in), contiguous_strides(out), core::dtype_size(x.dtype()), tail};
    bc.run(0, static_cast<const char*>(x.raw()), static_cast<char*>(y.raw()));
  });
}

std::unique_ptr<Kernel> make_tile(const KernelBuild&) {
  return make_fn_kernel([](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const std::vector<int64_t> reps = int_input_values(r.node(), required_input(r, 1), "repeats");
    if (reps.size() != x.rank())
      bad_input(r.node(), "repeats has " + std::to_string(reps.size()) + " entries for a rank " +
                              std::to_string(x.rank()) + " input");
    Shape out(x.rank());
    for (size_t i = 0; i < x.rank(); ++i) {
      if (reps[i] < 0) bad_input(r.node(), "repeats has a negative entry");
      out[i] = x.dim(i) * reps[i];
    }
    Tensor& y = r.output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    if (x.rank() == 0) {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
      return;
    }
    tile_dim(r, 0, x.shape(), reps, contiguous_strides(x.shape()), contiguous_strides(out),
             core::dtype_size(x.dtype()), static_cast<const char*>(x.raw()), static_cast<char*>(y.raw()));
  });
}

}  // namespace hetero::cpu
