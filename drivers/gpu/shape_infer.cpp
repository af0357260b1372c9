#include "drivers/gpu/shape_infer.h"

#include <algorithm>

#include "core/error.h"

namespace hetero::gpu {

namespace {

std::optional<core::Shape> broadcast(const core::Shape& a, const core::Shape& b) {
  core::Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) fail(HETERO_INVALID_MODEL, "shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t axis_of(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(HETERO_INVALID_MODEL, "axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + r : axis;
}

// The spatial dims of a Conv's or pool's output: `x` [N, C, spatial...],
// `kernel` per spatial dim (ceil_mode for pools).
core::Shape windowed(const core::Node& node, const core::Shape& x, const std::vector<int64_t>& kernel,
                     int64_t channels) {
  const size_t sp = x.size() - 2;
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(sp, 1));
  const auto dilations = node.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  const auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (kernel.size() != sp || strides.size() != sp || dilations.size() != sp || pads.size() != 2 * sp)
    fail(HETERO_INVALID_MODEL, "kernel, strides, dilations or pads have the wrong length");
  core::Shape out = {x[0], channels};
  for (size_t d = 0; d < sp; ++d) {
    const int64_t s = strides[d], ext = (kernel[d] - 1) * dilations[d] + 1, n = x[d + 2];
    if (s < 1 || ext < 1) fail(HETERO_INVALID_MODEL, "a non-positive kernel, stride or dilation");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") out.push_back((n + s - 1) / s);
    else {
      const int64_t span = n + (auto_pad == "VALID" ? 0 : pads[d] + pads[d + sp]) - ext;
      if (span < 0) fail(HETERO_INVALID_MODEL, "the window is larger than the padded input");
      out.push_back((ceil_mode ? (span + s - 1) / s : span / s) + 1);
    }
  }
  return out;
}

}  // namespace

std::optional<SliceGeometry> slice_geometry(const core::Node& node, const core::Shape& x,
                                            const TensorLookup& constant_of) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset < 10) {
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    axes = node.attr_ints("axes");
  } else {
    bool constant = true;
    auto ints = [&](size_t i) {
      if (!node.input(i)) return std::vector<int64_t>{};
      const core::Tensor* c = constant_of(node.input(i));
      if (!c) constant = false;
      return c ? c->to_int64_vector() : std::vector<int64_t>{};
    };
    starts = ints(1), ends = ints(2), axes = ints(3), steps = ints(4);
    if (!constant) return std::nullopt;
  }
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(HETERO_INVALID_MODEL, "Slice's starts, ends, axes and steps differ in length");
  SliceGeometry g{std::vector<int64_t>(x.size(), 0), std::vector<int64_t>(x.size(), 1), x};
  for (size_t i = 0; i < starts.size(); ++i) {
    const auto ax = static_cast<size_t>(axis_of(axes[i], x.size()));
    const int64_t n = x[ax], step = steps[i];
    if (step == 0) fail(HETERO_INVALID_MODEL, "a Slice step is 0");
    // Negative positions count from the end; then clamp to [0, n] going
    // forward, [-1, n - 1] going back.
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
    const int64_t s = step > 0 ? clamp(starts[i], 0, n) : clamp(starts[i], -1, n - 1);
    const int64_t e = step > 0 ? clamp(ends[i], 0, n) : clamp(ends[i], -1, n - 1);
    const int64_t count = step > 0 ? std::max<int64_t>(0, (e - s + step - 1) / step)
                                   : std::max<int64_t>(0, (s - e - step - 1) / -step);
    g.out[ax] = count;
    g.starts[ax] = count ? s : 0;
    g.steps[ax] = step;
  }
  return g;
}

std::optional<std::vector<int64_t>> pad_amounts(const core::Node& node, size_t rank, const TensorLookup& constant_of) {
  std::vector<int64_t> pads;
  if (node.opset < 11) {
    pads = node.attr_ints("pads");
  } else {
    const core::Tensor* p = node.input(1) ? constant_of(node.input(1)) : nullptr;
    if (!p) return std::nullopt;
    pads = p->to_int64_vector();
  }
  if (pads.size() != 2 * rank)
    fail(HETERO_INVALID_MODEL, node.describe() + ": " + std::to_string(pads.size()) + " pads for rank " + std::to_string(rank));
  return pads;
}

namespace shape {

// Elementwise ops of one input, and those that keep their input's shape.
std::optional<core::Shape> same(const core::Node&, const core::Shape& x, const ShapeLookup&, const TensorLookup&) {
  return x;
}

// Numpy broadcasting of every input.
std::optional<core::Shape> broadcast_all(const core::Node& node, const core::Shape& x,
                                         const ShapeLookup& shape_of, const TensorLookup&) {
  core::Shape out = x;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    const core::Shape* y = node.input(i) ? shape_of(node.input(i)) : nullptr;
    if (!y) return std::nullopt;
    out = *broadcast(out, *y);
  }
  return out;
}

std::optional<core::Shape> matmul(const core::Node& node, const core::Shape& x,
                                  const ShapeLookup& shape_of, const TensorLookup&) {
  const core::Shape* y = node.input(1) ? shape_of(node.input(1)) : nullptr;
  if (!y || x.size() < 2 || y->size() < 2) return std::nullopt;
  core::Shape out = *broadcast(core::Shape(x.begin(), x.end() - 2), core::Shape(y->begin(), y->end() - 2));
  out.push_back(x[x.size() - 2]);
  out.push_back(y->back());
  return out;
}

std::optional<core::Shape> reshape(const core::Node& node, const core::Shape& x,
                                   const ShapeLookup&, const TensorLookup& constant_of) {
  const core::Tensor* s = node.input(1) ? constant_of(node.input(1)) : nullptr;
  if (!s) return std::nullopt;
  std::vector<int64_t> dims = s->to_int64_vector();
  const bool allowzero = node.attr_int("allowzero", 0) != 0;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allowzero) {
      if (i >= x.size()) fail(HETERO_INVALID_MODEL, "Reshape copies a dimension the input lacks");
      dims[i] = x[i];
    }
    if (dims[i] == -1) {
      if (infer >= 0) fail(HETERO_INVALID_MODEL, "Reshape with two -1 dimensions");
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      fail(HETERO_INVALID_MODEL, "Reshape to a negative dimension");
    } else {
      known *= dims[i];
    }
  }
  const auto total = static_cast<int64_t>(core::shape_numel(x));
  if (infer >= 0) {
    if (known == 0 || total % known) fail(HETERO_INVALID_MODEL, "Reshape cannot infer its -1 dimension");
    dims[size_t(infer)] = total / known;
  }
  if (static_cast<int64_t>(core::shape_numel(dims)) != total) fail(HETERO_INVALID_MODEL, "Reshape changes the element count");
  return dims;
}

std::optional<core::Shape> flatten(const core::Node& node, const core::Shape& x,
                                   const ShapeLookup&, const TensorLookup&) {
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.size(); ++i) (static_cast<int64_t>(i) < a ? outer : inner) *= x[i];
  return core::Shape{outer, inner};
}

std::optional<core::Shape> transpose(const core::Node& node, const core::Shape& x,
                                     const ShapeLookup&, const TensorLookup&) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty())
    for (size_t d = x.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != x.size()) fail(HETERO_INVALID_MODEL, "perm has the wrong length");
  core::Shape out;
  for (int64_t p : perm) out.push_back(x[size_t(axis_of(p, x.size()))]);
  return out;
}

// Squeeze and Unsqueeze: axes as an attribute, or (opset 13) a constant input.
std::optional<core::Shape> squeeze_or_unsqueeze(const core::Node& node, const core::Shape& x,
                                                const ShapeLookup&, const TensorLookup& constant_of) {
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (node.opset >= 13 && node.input(1)) {
    const core::Tensor* t = constant_of(node.input(1));
    if (!t) return std::nullopt;
    axes = t->to_int64_vector();
  }
  if (node.op_type == "Squeeze") {
    core::Shape out;
    for (size_t d = 0; d < x.size(); ++d) {
      bool drop = axes.empty() ? x[d] == 1 : false;
      for (int64_t a : axes) drop = drop || axis_of(a, x.size()) == static_cast<int64_t>(d);
      if (!drop) out.push_back(x[d]);
    }
    return out;
  }
  const size_t rank = x.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) inserted[size_t(axis_of(a, rank))] = true;
  core::Shape out;
  size_t k = 0;
  for (size_t d = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : x[k++]);
  return out;
}

std::optional<core::Shape> concat(const core::Node& node, const core::Shape& x,
                                  const ShapeLookup& shape_of, const TensorLookup&) {
  core::Shape out = x;
  const auto axis = static_cast<size_t>(axis_of(node.attr_int("axis", 0), x.size()));
  out[axis] = 0;
  for (const core::Value* v : node.inputs) {
    const core::Shape* s = v ? shape_of(v) : nullptr;
    if (!s || s->size() != x.size()) return std::nullopt;
    out[axis] += (*s)[axis];
  }
  return out;
}

std::optional<core::Shape> pad(const core::Node& node, const core::Shape& x,
                               const ShapeLookup&, const TensorLookup& constant_of) {
  auto pads = pad_amounts(node, x.size(), constant_of);
  if (!pads) return std::nullopt;
  core::Shape out = x;
  for (size_t d = 0; d < out.size(); ++d) {
    out[d] += (*pads)[d] + (*pads)[d + out.size()];
    if (out[d] < 0) fail(HETERO_INVALID_MODEL, node.describe() + ": pads remove more than axis " + std::to_string(d) + " holds");
  }
  return out;
}

std::optional<core::Shape> gather(const core::Node& node, const core::Shape& x,
                                  const ShapeLookup& shape_of, const TensorLookup&) {
  // Data dims before the axis, the indices' dims, data dims after it.
  const core::Shape* idx = node.input(1) ? shape_of(node.input(1)) : nullptr;
  if (!idx || x.empty()) return std::nullopt;
  const int64_t axis = axis_of(node.attr_int("axis", 0), x.size());
  core::Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

std::optional<core::Shape> slice(const core::Node& node, const core::Shape& x,
                                 const ShapeLookup&, const TensorLookup& constant_of) {
  auto g = slice_geometry(node, x, constant_of);
  return g ? std::optional<core::Shape>(g->out) : std::nullopt;
}

std::optional<core::Shape> conv(const core::Node& node, const core::Shape& x,
                                const ShapeLookup& shape_of, const TensorLookup&) {
  const core::Shape* w = node.input(1) ? shape_of(node.input(1)) : nullptr;
  if (x.size() < 3 || !w || w->size() != x.size()) return std::nullopt;
  return windowed(node, x, core::Shape(w->begin() + 2, w->end()), (*w)[0]);
}

// MaxPool and AveragePool.
std::optional<core::Shape> pool(const core::Node& node, const core::Shape& x,
                                const ShapeLookup&, const TensorLookup&) {
  if (x.size() < 3) return std::nullopt;
  return windowed(node, x, node.attr_ints("kernel_shape"), x[1]);
}

std::optional<core::Shape> global_pool(const core::Node&, const core::Shape& x,
                                       const ShapeLookup&, const TensorLookup&) {
  core::Shape out = x;
  for (size_t d = 2; d < out.size(); ++d) out[d] = 1;
  return out;
}

std::optional<core::Shape> reduce(const core::Node& node, const core::Shape& x,
                                  const ShapeLookup&, const TensorLookup& constant_of) {
  std::vector<int64_t> axes = node.attr_ints("axes");
  if ((node.op_type == "ReduceSum" && node.opset >= 13) || node.opset >= 18) {
    if (node.input(1)) {
      const core::Tensor* t = constant_of(node.input(1));
      if (!t) return std::nullopt;
      axes = t->to_int64_vector();
    }
    if (axes.empty() && node.attr_int("noop_with_empty_axes", 0)) return x;
  }
  const bool keep = node.attr_int("keepdims", 1) != 0;
  core::Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    bool reduced = axes.empty();
    for (int64_t a : axes) reduced = reduced || axis_of(a, x.size()) == static_cast<int64_t>(d);
    if (!reduced) out.push_back(x[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}

}  // namespace shape

}  // namespace hetero::gpu
