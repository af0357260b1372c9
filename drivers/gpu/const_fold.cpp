#include "drivers/gpu/const_fold.h"

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "drivers/gpu/topology.h"

namespace hetero::gpu {

namespace {

// Shape tensors are tiny: folding works on int64/double copies.
bool is_integer(core::DType t) {
  return t == core::DType::I64 || t == core::DType::I32 || t == core::DType::I8 || t == core::DType::U8 ||
         t == core::DType::I16 || t == core::DType::U16 || t == core::DType::U32 || t == core::DType::U64 ||
         t == core::DType::Bool;
}

bool is_supported_type(core::DType t) { return is_integer(t) || t == core::DType::F32 || t == core::DType::F64; }

// A tensor of `dtype` and `shape` from doubles.
core::Tensor make(core::DType dtype, const core::Shape& shape, const std::vector<double>& v) {
  core::Tensor t = core::Tensor::allocate(dtype, shape);
  for (size_t i = 0; i < v.size() && i < t.numel(); ++i) {
    switch (dtype) {
      case core::DType::F32: t.data<float>()[i] = static_cast<float>(v[i]); break;
      case core::DType::F64: t.data<double>()[i] = v[i]; break;
      case core::DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(v[i]); break;
      case core::DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(v[i]); break;
      case core::DType::I8: t.data<int8_t>()[i] = static_cast<int8_t>(v[i]); break;
      case core::DType::U8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]); break;
      case core::DType::Bool: t.data<bool>()[i] = v[i] != 0; break;
      case core::DType::I16: t.data<int16_t>()[i] = static_cast<int16_t>(v[i]); break;
      case core::DType::U16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v[i]); break;
      case core::DType::U32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v[i]); break;
      case core::DType::U64: t.data<uint64_t>()[i] = static_cast<uint64_t>(v[i]); break;
      default: fail(HETERO_NOT_SUPPORTED, std::string("cannot fold values of type ") + core::dtype_name(dtype));
    }
  }
  return t;
}

std::vector<double> values(const core::Tensor& t) {
  std::vector<double> v(t.numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.as_double(i);
  return v;
}

// Folding is for shape-sized tensors only; a large constant computation
// belongs on the device. Moving constants around (weights sliced per gate
// and concatenated again, as exported LSTMs do) is folded up to a larger
// size: done once here, it is not a copy per inference there.
constexpr size_t kMaxFoldElements = 4096;
constexpr size_t kMaxMovedElements = size_t{1} << 20;

int64_t norm_axis(int64_t axis, int64_t rank, const core::Node& node) {
  if (axis < -rank || axis >= rank)
    fail(HETERO_INVALID_MODEL, node.describe() + ": axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + rank : axis;
}

// The output's static shape: ONNX's, or, where its inference stopped at
// shape arithmetic folded before this node, inferred from the folded inputs.
const core::Shape* output_shape(const core::Node& node, const FoldContext& ctx, core::Shape& storage) {
  auto s = node.outputs[0]->static_shape();
  if (!s) s = infer_output_shape(node, ctx.shape_of, ctx.constant_of);
  if (!s) return nullptr;
  storage = *s;
  return &storage;
}

// The constants of `node`'s inputs (null for an absent one), each of at
// most `limit` elements of a type folding handles; nullopt when one is not
// (or the first input is absent).
std::optional<std::vector<const core::Tensor*>> constant_inputs(const core::Node& node, const FoldContext& ctx,
                                                                size_t limit) {
  std::vector<const core::Tensor*> in;
  for (const core::Value* v : node.inputs) {
    const core::Tensor* t = v ? ctx.constant_of(v) : nullptr;
    if (v && !t) return std::nullopt;
    if (t && (t->numel() > limit || !is_supported_type(t->dtype()))) return std::nullopt;
    in.push_back(t);
  }
  if (in.empty() || !in[0]) return std::nullopt;
  return in;
}

}  // namespace

namespace fold {

std::optional<core::Tensor> constant(const core::Node& node, const FoldContext&) {
  if (const core::Attribute* a = node.attr("value"); a && a->type == core::AttrType::Tensor) return a->t;
  if (const core::Attribute* a = node.attr("value_float")) return core::Tensor::from_vector<float>({a->f}, {});
  if (const core::Attribute* a = node.attr("value_floats"))
    return core::Tensor::from_vector<float>(a->floats, {static_cast<int64_t>(a->floats.size())});
  if (const core::Attribute* a = node.attr("value_int")) return core::Tensor::from_vector<int64_t>({a->i}, {});
  if (const core::Attribute* a = node.attr("value_ints"))
    return core::Tensor::from_vector<int64_t>(a->ints, {static_cast<int64_t>(a->ints.size())});
  return std::nullopt;
}

// Shape and Size of an input whose shape is static.
std::optional<core::Tensor> shape_or_size(const core::Node& node, const FoldContext& ctx) {
  const core::Value* in = node.input(0);
  if (!in) return std::nullopt;
  const core::Shape* shape = ctx.shape_of(in);
  if (!shape) return std::nullopt;
  if (node.op_type == "Size") return core::Tensor::from_vector<int64_t>({static_cast<int64_t>(core::shape_numel(*shape))}, {});
  const auto rank = static_cast<int64_t>(shape->size());
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  std::vector<int64_t> dims(shape->begin() + start, shape->begin() + std::max(start, end));
  return core::Tensor::from_vector<int64_t>(dims, {static_cast<int64_t>(dims.size())});
}

std::optional<core::Tensor> identity(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxMovedElements);
  if (!in) return std::nullopt;
  return *(*in)[0];
}

std::optional<core::Tensor> cast(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxFoldElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  const auto to = static_cast<core::DType>(node.attr_int("to", 0));
  if (!is_supported_type(to)) return std::nullopt;
  return make(to, x.shape(), values(x));
}

// Unsqueeze, Squeeze, Reshape, Flatten: the same values in the output's shape.
std::optional<core::Tensor> reshaped(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxMovedElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  core::Shape storage;
  const core::Shape* out_shape = output_shape(node, ctx, storage);
  if (!out_shape || core::shape_numel(*out_shape) != x.numel()) return std::nullopt;
  return make(x.dtype(), *out_shape, values(x));
}

std::optional<core::Tensor> concat(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxMovedElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  core::Shape storage;
  const core::Shape* out_shape = output_shape(node, ctx, storage);
  if (!out_shape) return std::nullopt;
  const int64_t axis = norm_axis(node.attr_int("axis", 0), static_cast<int64_t>(x.rank()), node);
  // outer × (axis × inner) blocks, appended input by input.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<size_t>(d));
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const core::Tensor* t : *in) {
      if (!t) continue;
      const size_t block = t->numel() / static_cast<size_t>(outer ? outer : 1);
      for (size_t i = 0; i < block; ++i) out.push_back(t->as_double(static_cast<size_t>(o) * block + i));
    }
  return make(x.dtype(), *out_shape, out);
}

// Gather from a 1-D source.
std::optional<core::Tensor> gather(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxFoldElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  if (x.rank() != 1 || in->size() < 2 || !(*in)[1]) return std::nullopt;
  std::vector<double> out;
  const auto n = static_cast<int64_t>(x.numel());
  for (int64_t i : (*in)[1]->to_int64_vector()) {
    if (i < -n || i >= n) fail(HETERO_INVALID_MODEL, node.describe() + ": index " + std::to_string(i) + " out of range");
    out.push_back(x.as_double(static_cast<size_t>(i < 0 ? i + n : i)));
  }
  return make(x.dtype(), (*in)[1]->shape(), out);  // a 1-D source: the indices' shape
}

std::optional<core::Tensor> transpose(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxMovedElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  const size_t rank = x.rank();
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  if (perm.size() != rank) fail(HETERO_INVALID_MODEL, node.describe() + ": perm does not have one entry per axis");
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape()[d];
  core::Shape shape(rank);
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t p = perm[d];
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[size_t(p)])
      fail(HETERO_INVALID_MODEL, node.describe() + ": perm is not a permutation");
    seen[size_t(p)] = true;
    shape[d] = x.shape()[size_t(p)];
  }
  std::vector<double> out(x.numel());
  for (size_t o = 0; o < out.size(); ++o) {
    size_t rest = o, at = 0;
    for (size_t d = rank; d-- > 0;) {
      at += rest % static_cast<size_t>(shape[d]) * static_cast<size_t>(strides[size_t(perm[d])]);
      rest /= static_cast<size_t>(shape[d]);
    }
    out[o] = x.as_double(at);
  }
  return make(x.dtype(), shape, out);
}

std::optional<core::Tensor> slice(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxMovedElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  auto g = slice_geometry(node, x.shape(), ctx.constant_of);
  if (!g) return std::nullopt;
  // Output element by element: its index along each axis, mapped through
  // that axis's start and step to the input's offset.
  const size_t rank = x.rank();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape()[d];
  std::vector<double> out(core::shape_numel(g->out));
  for (size_t o = 0; o < out.size(); ++o) {
    size_t rest = o, at = 0;
    for (size_t d = rank; d-- > 0;) {
      const auto i = static_cast<int64_t>(rest % static_cast<size_t>(g->out[d]));
      rest /= static_cast<size_t>(g->out[d]);
      at += static_cast<size_t>((g->starts[d] + i * g->steps[d]) * strides[d]);
    }
    out[o] = x.as_double(at);
  }
  return make(x.dtype(), g->out, out);
}

std::optional<core::Tensor> logical_not(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxFoldElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  if (x.dtype() != core::DType::Bool) return std::nullopt;
  std::vector<double> out = values(x);
  for (double& v : out) v = v == 0;
  return make(core::DType::Bool, x.shape(), out);
}

// A shape-sized tensor of one value (zeros for an initial state).
std::optional<core::Tensor> constant_of_shape(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxFoldElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  core::Shape shape = x.to_int64_vector();
  // A scalar counts as the 1-D shape of its one value, as on the CPU and in
  // ONNX Runtime (Silero VAD's opset-15 export pads with one).
  if (x.rank() > 1) fail(HETERO_INVALID_MODEL, node.describe() + ": the shape input is not 1-D");
  for (int64_t d : shape)
    if (d < 0) fail(HETERO_INVALID_MODEL, node.describe() + ": negative dim " + std::to_string(d));
  if (core::shape_numel(shape) > kMaxFoldElements) return std::nullopt;
  const core::Attribute* a = node.attr("value");
  if (a && (a->type != core::AttrType::Tensor || a->t.numel() != 1 || !is_supported_type(a->t.dtype())))
    return std::nullopt;
  const core::DType dt = a ? a->t.dtype() : core::DType::F32;
  return make(dt, shape, std::vector<double>(core::shape_numel(shape), a ? a->t.as_double(0) : 0.0));
}

// Add, Sub, Mul, Div on integers, and the comparisons and logic (And, Or)
// of the conditions models compute from shapes and small inputs (an If on a
// rank, a dim, a sample rate): equal shapes or a scalar side only.
std::optional<core::Tensor> integer_arithmetic(const core::Node& node, const FoldContext& ctx) {
  const auto in = constant_inputs(node, ctx, kMaxFoldElements);
  if (!in) return std::nullopt;
  const core::Tensor& x = *(*in)[0];
  const std::string& op = node.op_type;
  static const std::set<std::string> comparisons = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                                   "And", "Or"};
  const bool compare = comparisons.count(op) > 0;
  if (in->size() != 2 || !(*in)[1] || !is_integer(x.dtype()) || !is_integer((*in)[1]->dtype())) return std::nullopt;
  const core::Tensor& y = *(*in)[1];
  if ((!compare && x.dtype() != y.dtype()) || (x.numel() != y.numel() && x.numel() != 1 && y.numel() != 1))
    return std::nullopt;
  const core::Tensor& big = x.numel() >= y.numel() ? x : y;
  std::vector<double> out(big.numel());
  auto apply = [&](int64_t a, int64_t b) -> int64_t {
    if (op == "Add") return a + b;
    if (op == "Sub") return a - b;
    if (op == "Mul") return a * b;
    if (op == "Div") {
      if (b == 0) fail(HETERO_INVALID_MODEL, node.describe() + ": integer division by zero");
      return a / b;
    }
    if (op == "Equal") return a == b;
    if (op == "Less") return a < b;
    if (op == "LessOrEqual") return a <= b;
    if (op == "Greater") return a > b;
    if (op == "GreaterOrEqual") return a >= b;
    if (op == "And") return a && b;
    return a || b;  // Or
  };
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>(apply(x.as_int64(x.numel() == 1 ? 0 : i), y.as_int64(y.numel() == 1 ? 0 : i)));
  return make(compare ? core::DType::Bool : x.dtype(), big.shape(), out);
}

}  // namespace fold

}  // namespace hetero::gpu
