#include "drivers/gpu/shape_infer.h"

#include <algorithm>
#include <set>

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

}  // namespace

std::optional<core::Shape> infer_output_shape(const core::Node& node, const ShapeLookup& shape_of,
                                              const TensorLookup& constant_of) {
  const std::string& op = node.op_type;
  const core::Shape* x = node.input(0) ? shape_of(node.input(0)) : nullptr;
  if (!x) return std::nullopt;
  static const std::set<std::string> same = {"Relu", "LeakyRelu", "HardSigmoid", "Sigmoid", "Tanh", "Exp", "Log",
                                             "Abs", "Neg", "Sqrt", "Reciprocal", "Floor", "Ceil", "Elu",
                                             "Softplus", "HardSwish", "Erf", "Sin", "Cos", "Clip", "Identity",
                                             "Dropout", "Softmax", "BatchNormalization", "Cast"};
  if (same.count(op)) return *x;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" || op == "Min" || op == "Sum") {
    core::Shape out = *x;
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      const core::Shape* y = node.input(i) ? shape_of(node.input(i)) : nullptr;
      if (!y) return std::nullopt;
      out = *broadcast(out, *y);
    }
    return out;
  }
  if (op == "MatMul") {
    const core::Shape* y = node.input(1) ? shape_of(node.input(1)) : nullptr;
    if (!y || x->size() < 2 || y->size() < 2) return std::nullopt;
    core::Shape out = *broadcast(core::Shape(x->begin(), x->end() - 2), core::Shape(y->begin(), y->end() - 2));
    out.push_back((*x)[x->size() - 2]);
    out.push_back(y->back());
    return out;
  }
  if (op == "Reshape") {
    const core::Tensor* s = node.input(1) ? constant_of(node.input(1)) : nullptr;
    if (!s) return std::nullopt;
    std::vector<int64_t> dims = s->to_int64_vector();
    const bool allowzero = node.attr_int("allowzero", 0) != 0;
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && !allowzero) {
        if (i >= x->size()) fail(HETERO_INVALID_MODEL, "Reshape copies a dimension the input lacks");
        dims[i] = (*x)[i];
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
    const auto total = static_cast<int64_t>(core::shape_numel(*x));
    if (infer >= 0) {
      if (known == 0 || total % known) fail(HETERO_INVALID_MODEL, "Reshape cannot infer its -1 dimension");
      dims[size_t(infer)] = total / known;
    }
    if (static_cast<int64_t>(core::shape_numel(dims)) != total) fail(HETERO_INVALID_MODEL, "Reshape changes the element count");
    return dims;
  }
  if (op == "Flatten") {
    const int64_t axis = node.attr_int("axis", 1);
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x->size()) : axis;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < x->size(); ++i) (static_cast<int64_t>(i) < a ? outer : inner) *= (*x)[i];
    return core::Shape{outer, inner};
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = node.attr_ints("perm");
    if (perm.empty())
      for (size_t d = x->size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    if (perm.size() != x->size()) fail(HETERO_INVALID_MODEL, "perm has the wrong length");
    core::Shape out;
    for (int64_t p : perm) out.push_back((*x)[size_t(axis_of(p, x->size()))]);
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes = node.attr_ints("axes");
    if (node.opset >= 13 && node.input(1)) {
      const core::Tensor* t = constant_of(node.input(1));
      if (!t) return std::nullopt;
      axes = t->to_int64_vector();
    }
    if (op == "Squeeze") {
      core::Shape out;
      for (size_t d = 0; d < x->size(); ++d) {
        bool drop = axes.empty() ? (*x)[d] == 1 : false;
        for (int64_t a : axes) drop = drop || axis_of(a, x->size()) == static_cast<int64_t>(d);
        if (!drop) out.push_back((*x)[d]);
      }
      return out;
    }
    const size_t rank = x->size() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : axes) inserted[size_t(axis_of(a, rank))] = true;
    core::Shape out;
    size_t k = 0;
    for (size_t d = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : (*x)[k++]);
    return out;
  }
  if (op == "Concat") {
    core::Shape out = *x;
    const auto axis = static_cast<size_t>(axis_of(node.attr_int("axis", 0), x->size()));
    out[axis] = 0;
    for (const core::Value* v : node.inputs) {
      const core::Shape* s = v ? shape_of(v) : nullptr;
      if (!s || s->size() != x->size()) return std::nullopt;
      out[axis] += (*s)[axis];
    }
    return out;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    core::Shape out = *x;
    for (size_t d = 2; d < out.size(); ++d) out[d] = 1;
    return out;
  }
  if (op == "ReduceMax" || op == "ReduceMin" || op == "ReduceSum" || op == "ReduceMean") {
    std::vector<int64_t> axes = node.attr_ints("axes");
    if ((op == "ReduceSum" && node.opset >= 13) || node.opset >= 18) {
      if (node.input(1)) {
        const core::Tensor* t = constant_of(node.input(1));
        if (!t) return std::nullopt;
        axes = t->to_int64_vector();
      }
      if (axes.empty() && node.attr_int("noop_with_empty_axes", 0)) return *x;
    }
    const bool keep = node.attr_int("keepdims", 1) != 0;
    core::Shape out;
    for (size_t d = 0; d < x->size(); ++d) {
      bool reduced = axes.empty();
      for (int64_t a : axes) reduced = reduced || axis_of(a, x->size()) == static_cast<int64_t>(d);
      if (!reduced) out.push_back((*x)[d]);
      else if (keep) out.push_back(1);
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace hetero::gpu
