#include "drivers/gpu/topology.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string_view>

#include "core/error.h"
#include "core/quant_params.h"
#include "drivers/gpu/const_fold.h"
#include "drivers/gpu/shape_infer.h"

namespace hetero::gpu {

const char* prim_kind_name(PrimKind kind) {
  switch (kind) {
    case PrimKind::Unary: return "unary";
    case PrimKind::Binary: return "binary";
    case PrimKind::Conv: return "conv";
    case PrimKind::ConvTranspose: return "conv_transpose";
    case PrimKind::MatMul: return "matmul";
    case PrimKind::Pool: return "pool";
    case PrimKind::Softmax: return "softmax";
    case PrimKind::Reduce: return "reduce";
    case PrimKind::Transpose: return "transpose";
    case PrimKind::Concat: return "concat";
    case PrimKind::Resize: return "resize";
    case PrimKind::View: return "view";
    case PrimKind::Pad: return "pad";
    case PrimKind::Gather: return "gather";
    case PrimKind::Lstm: return "lstm";
    case PrimKind::Where: return "where";
    case PrimKind::Expand: return "expand";
    case PrimKind::SqueezeExcite: return "squeeze_excite";
  }
  return "?";
}

bool is_device_dtype(core::DType dtype) {
  return dtype == core::DType::F32 || dtype == core::DType::I32 || dtype == core::DType::I64 ||
         dtype == core::DType::Bool;
}

const char* device_ctype(core::DType dtype) {
  switch (dtype) {
    case core::DType::F32: return "float";
    case core::DType::I32: return "int";
    case core::DType::I64: return "long";
    case core::DType::Bool: return "uchar";
    default: fail(HETERO_INTERNAL, std::string("no device type for ") + core::dtype_name(dtype));
  }
}

core::DType value_dtype(const std::map<std::string, core::DType>& dtypes,
                        const std::map<std::string, core::Tensor>& constants, const std::string& v) {
  if (auto c = constants.find(v); c != constants.end()) return c->second.dtype();
  auto it = dtypes.find(v);
  return it == dtypes.end() ? core::DType::F32 : it->second;
}

namespace {

// Binary ops on int32 and int64 as well as float32.
const std::set<std::string> kIntegerBinaryOps = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"};
// Binary ops whose result is bool: comparisons of any device type, and logic on bools.
const std::set<std::string> kCompareOps = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
const std::set<std::string> kLogicOps = {"And", "Or", "Xor"};

class Builder {
 public:
  explicit Builder(Topology& t) : t_(t) {}

  const core::Tensor* constant(const core::Value* v) const {
    if (!v) return nullptr;
    auto it = t_.constants.find(v->name);
    return it == t_.constants.end() ? nullptr : &it->second;
  }

  // The element type of value `v`.
  core::DType dtype_of(const core::Value* v) const {
    const core::Tensor* c = constant(v);
    return c ? c->dtype() : v->dtype;
  }

  // The static shape of a data input, which must be float32.
  const core::Shape& data_input(const core::Node& node, size_t i) {
    const core::Shape& s = input_shape(node, i);
    const core::DType dt = dtype_of(node.input(i));
    if (dt != core::DType::F32)
      fail(HETERO_NOT_SUPPORTED, std::string("input '") + node.input(i)->name + "' is " + core::dtype_name(dt) +
                                     "; the GPU kernel of " + node.op_type + " takes float32 only");
    return s;
  }

  // The static shape of a data input of any device type (float32, int32,
  // int64, bool), which must be `want` when given.
  const core::Shape& typed_input(const core::Node& node, size_t i, std::optional<core::DType> want = {}) {
    const core::Shape& s = input_shape(node, i);
    const core::DType dt = dtype_of(node.input(i));
    if (!is_device_dtype(dt))
      fail(HETERO_NOT_SUPPORTED, std::string("input '") + node.input(i)->name + "' is " + core::dtype_name(dt) +
                                     "; GPU tensors are float32, int32, int64 or bool");
    if (want && dt != *want)
      fail(HETERO_INVALID_MODEL, std::string("input '") + node.input(i)->name + "' is " + core::dtype_name(dt) + ", not " +
                                     core::dtype_name(*want));
    return s;
  }

  // The static shape of input `i`, of whatever type.
  const core::Shape& input_shape(const core::Node& node, size_t i) {
    const core::Value* v = node.input(i);
    if (!v) fail(HETERO_INVALID_MODEL, "input " + std::to_string(i) + " is missing");
    if (const Failure* why = host_only(v->name))
      fail(why->status(), "input '" + v->name + "' is worked out by the host for If conditions only: " + why->what());
    auto it = t_.shapes.find(v->name);
    if (it == t_.shapes.end()) {
      auto s = v->static_shape();
      if (!s) fail(HETERO_NOT_SUPPORTED, "input '" + v->name + "' has no static shape (give the model's input shapes)");
      it = t_.shapes.emplace(v->name, *s).first;
    }
    return it->second;
  }

  // A node into primitives, through its line in kOpLines (below the class).
  void convert(const core::Node& node);

  // A node being converted: its one output, that output's static shape, and
  // the primitive that becomes it (id, op and output set). A converter
  // returns true to have `p` added, false when it added primitives itself
  // (or made constants).
  struct Conversion {
    const core::Value* out = nullptr;
    core::Shape out_shape;
    Primitive p;
  };
  using Converter = bool (Builder::*)(const core::Node&, Conversion&);

  // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (and a Cast to
  // the type it has): the same bytes.
  bool convert_view(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    if (node.op_type == "Dropout" && node.input(2)) {
      // Inference only: training mode must be a constant false.
      const core::Tensor* training = constant(node.input(2));
      if (!training || training->numel() != 1 || training->as_double(0) != 0)
        fail(HETERO_NOT_SUPPORTED, "Dropout in training mode");
    }
    const auto shape_of = [&](const core::Value* v) -> const core::Shape* {
      if (auto it = t_.shapes.find(v->name); it != t_.shapes.end()) return &it->second;
      return nullptr;
    };
    const auto constant_of = [&](const core::Value* v) { return constant(v); };
    const core::Shape& in = typed_input(node, 0, out->dtype);
    if (core::shape_numel(in) != core::shape_numel(out_shape))
      fail(HETERO_INVALID_MODEL, "changes the element count");
    // A view takes the shape its output is declared with, so that shape
    // must be the one the CPU driver computes at run time from the shape
    // input; a model may declare another with the same element count.
    if (op == "Reshape" && out->static_shape())  // else out_shape was inferred the same way
      if (const auto target = infer_output_shape(node, shape_of, constant_of); target && *target != out_shape)
        fail(HETERO_INVALID_MODEL, "its shape input makes " + core::shape_to_string(*target) + ", but its output '" +
                                       out->name + "' is declared " + core::shape_to_string(out_shape));
    p.kind = PrimKind::View;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_cast(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    if (node.input(0) && node.attr_int("to", 0) == int64_t(dtype_of(node.input(0)))) return convert_view(node, cv);
    typed_input(node, 0);
    if (node.attr_int("to", 0) != int64_t(out->dtype))
      fail(HETERO_INVALID_MODEL, std::string("casts to type ") + std::to_string(node.attr_int("to", 0)) +
                                     ", but its output is declared " + core::dtype_name(out->dtype));
    p.kind = PrimKind::Unary;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_not(const core::Node& node, Conversion& cv) {
    Primitive& p = cv.p;
    typed_input(node, 0, core::DType::Bool);
    p.kind = PrimKind::Unary;
    p.inputs = {node.input(0)->name};
    return true;
  }

  // Elementwise float32 ops of one input; Clip with constant bounds.
  bool convert_unary(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    data_input(node, 0);
    p.kind = PrimKind::Unary;
    p.inputs = {node.input(0)->name};
    if (op == "LeakyRelu") a.alpha = node.attr_float("alpha", 0.01f);
    if (op == "Elu") a.alpha = node.attr_float("alpha", 1.0f);
    if (op == "HardSigmoid") a.alpha = node.attr_float("alpha", 0.2f), a.beta = node.attr_float("beta", 0.5f);
    if (op == "Clip") {
      a.alpha = -3.402823466e38f, a.beta = 3.402823466e38f;
      if (node.opset < 11) {
        a.alpha = node.attr_float("min", a.alpha), a.beta = node.attr_float("max", a.beta);
      } else {
        if (const core::Tensor* lo = constant(node.input(1))) a.alpha = scalar(*lo, "min");
        if (const core::Tensor* hi = constant(node.input(2))) a.beta = scalar(*hi, "max");
      }
    }
    return true;
  }

  // Clip: with bounds computed at run time, Max and Min primitives on
  // broadcast tensors; with constant ones (or none), a unary op.
  bool convert_clip(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    if (const_or_absent(node.input(1)) && const_or_absent(node.input(2))) return convert_unary(node, cv);
    // Bounds computed at run time: Max and Min primitives on broadcast tensors.
    data_input(node, 0);
    std::string cur = node.input(0)->name;
    const char* names[2] = {"Max", "Min"};
    for (size_t i = 1; i <= 2; ++i) {
      if (!node.input(i)) continue;
      if (core::shape_numel(data_input(node, i)) != 1) fail(HETERO_INVALID_MODEL, "Clip bounds must be scalars");
      Primitive q;
      q.id = node.name + (i == 1 ? "/min" : "/max");
      q.kind = PrimKind::Binary;
      q.op = names[i - 1];
      q.inputs = {cur, node.input(i)->name};
      q.output = out->name + (i == 1 ? "/clip_min" : "/clip_max");
      t_.shapes[q.output] = out_shape;
      cur = q.output;
      pending_.push_back(q);
    }
    // The last one writes the node's output.
    pending_.back().output = out->name;
    t_.shapes[out->name] = out_shape;
    return false;
  }

  // Abs and Neg: of int32 and int64 as well as float32.
  bool convert_abs_neg(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    if (!node.input(0) || dtype_of(node.input(0)) == core::DType::F32) return convert_unary(node, cv);
    typed_input(node, 0, out->dtype);
    if (out->dtype != core::DType::I32 && out->dtype != core::DType::I64)
      fail(HETERO_NOT_SUPPORTED, op + " of " + core::dtype_name(out->dtype));
    p.kind = PrimKind::Unary;
    p.inputs = {node.input(0)->name};
    return true;
  }

  // Comparisons, logic, and arithmetic on int32 or int64: both operands of
  // one type.
  bool convert_typed_binary(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    // Comparisons, logic and integer arithmetic: both operands of one type.
    if (node.inputs.size() != 2) fail(HETERO_NOT_SUPPORTED, op + " with " + std::to_string(node.inputs.size()) + " inputs (2 supported)");
    const core::DType t = kLogicOps.count(op) ? core::DType::Bool : dtype_of(node.input(0));
    const core::Shape& x = typed_input(node, 0, t);
    const core::Shape& y = typed_input(node, 1, t);
    if (x.size() > 6 || y.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    if (op == "Div" && t != core::DType::F32) {
      // The CPU driver refuses a zero divisor (and x86 traps on one, which
      // PoCL's kernels run on): only a constant divisor without zeros.
      const core::Tensor* divisor = constant(node.input(1));
      if (!divisor) fail(HETERO_NOT_SUPPORTED, "integer Div by a value computed at run time");
      for (size_t i = 0; i < divisor->numel(); ++i)
        if (divisor->as_int64(i) == 0) fail(HETERO_INVALID_MODEL, "integer Div by zero");
    }
    const bool to_bool = kCompareOps.count(op) || kLogicOps.count(op);
    if (out->dtype != (to_bool ? core::DType::Bool : t))
      fail(HETERO_INVALID_MODEL, std::string("output '") + out->name + "' is declared " + core::dtype_name(out->dtype));
    p.kind = PrimKind::Binary;
    if (op == "Sum") p.op = "Add";
    p.inputs = {node.input(0)->name, node.input(1)->name};
    return true;
  }

  // Max, Min and Sum of other than two inputs: a chain of binary primitives
  // (one input: a view).
  bool convert_variadic(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    if (node.inputs.empty()) fail(HETERO_INVALID_MODEL, op + " without inputs");
    data_input(node, 0);
    std::string cur = node.input(0)->name;
    if (node.inputs.size() == 1) {
      pending_.push_back({node.name, PrimKind::View, op, {cur}, out->name, {}});
    }
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      data_input(node, i);
      const bool last = i + 1 == node.inputs.size();
      Primitive q{node.name + "/" + std::to_string(i), PrimKind::Binary, op == "Sum" ? "Add" : op,
                  {cur, node.input(i)->name}, last ? out->name : out->name + "/" + std::to_string(i), {}};
      if (!last) {
        // Partial results take the broadcast of what they combined.
        core::Shape a = i == 1 ? input_shape(node, 0) : t_.shapes.at(cur), b = input_shape(node, i);
        core::Shape r(std::max(a.size(), b.size()), 1);
        for (size_t k = 0; k < r.size(); ++k) {
          const int64_t x = k < r.size() - a.size() ? 1 : a[k - (r.size() - a.size())];
          const int64_t y = k < r.size() - b.size() ? 1 : b[k - (r.size() - b.size())];
          r[k] = x == 1 ? y : x;
        }
        t_.shapes[q.output] = r;
      }
      cur = q.output;
      pending_.push_back(q);
    }
    t_.shapes[out->name] = out_shape;
    return false;
  }

  // Add, Sub, Mul, Div, Pow, Max, Min, Sum: float32 with numpy broadcasting;
  // the integer ones of int32 and int64 too.
  bool convert_binary(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    Primitive& p = cv.p;
    if ((op == "Max" || op == "Min" || op == "Sum") && node.inputs.size() != 2) return convert_variadic(node, cv);
    if (cv.out->dtype != core::DType::F32 && kIntegerBinaryOps.count(op)) return convert_typed_binary(node, cv);
    if (node.inputs.size() != 2) fail(HETERO_NOT_SUPPORTED, op + " with " + std::to_string(node.inputs.size()) + " inputs (2 supported)");
    const core::Shape& x = data_input(node, 0);
    const core::Shape& y = data_input(node, 1);
    if (x.size() > 6 || y.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    p.kind = PrimKind::Binary;
    if (op == "Sum") p.op = "Add";
    p.inputs = {node.input(0)->name, node.input(1)->name};
    return true;
  }

  bool convert_where(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    const core::Shape& c = typed_input(node, 0, core::DType::Bool);
    const core::Shape& x = typed_input(node, 1, out->dtype);
    const core::Shape& y = typed_input(node, 2, out->dtype);
    if (c.size() > 6 || x.size() > 6 || y.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    p.kind = PrimKind::Where;
    p.inputs = {node.input(0)->name, node.input(1)->name, node.input(2)->name};
    return true;
  }

  bool convert_expand(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    const core::Shape& x = typed_input(node, 0, out->dtype);
    if (x.size() > out_shape.size()) fail(HETERO_INVALID_MODEL, "expands to a lower rank");
    for (size_t d = 0; d < x.size(); ++d)
      if (x[d] != 1 && x[d] != (out_shape)[d + out_shape.size() - x.size()])
        fail(HETERO_INVALID_MODEL, core::shape_to_string(x) + " does not broadcast to " + core::shape_to_string(out_shape));
    p.kind = PrimKind::Expand;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_conv(const core::Node& node, Conversion& cv) {
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    const core::Shape& w = data_input(node, 1);
    if (x.size() != 3 && x.size() != 4) fail(HETERO_NOT_SUPPORTED, "Conv of rank " + std::to_string(x.size()) + " (1-D and 2-D only)");
    if (w.size() != x.size()) fail(HETERO_INVALID_MODEL, "weights rank differs from input rank");
    const size_t sp = x.size() - 2;
    p.kind = PrimKind::Conv;
    p.inputs = {node.input(0)->name, node.input(1)->name, node.input(2) ? node.input(2)->name : ""};
    if (node.input(2)) data_input(node, 2);
    a.group = node.attr_int("group", 1);
    if (a.group < 1 || x[1] % a.group || w[0] % a.group || w[1] * a.group != x[1])
      fail(HETERO_INVALID_MODEL, "group " + std::to_string(a.group) + " does not divide the channels");
    a.kernel.assign(w.begin() + 2, w.end());
    spatial_attrs(node, a, x, out_shape, sp);
    return true;
  }

  bool convert_conv_transpose(const core::Node& node, Conversion& cv) {
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    const core::Shape& w = data_input(node, 1);
    if (x.size() != 3 && x.size() != 4)
      fail(HETERO_NOT_SUPPORTED, "ConvTranspose of rank " + std::to_string(x.size()) + " (1-D and 2-D only)");
    if (w.size() != x.size() || w[0] != x[1]) fail(HETERO_INVALID_MODEL, "weights do not match the input's channels");
    p.kind = PrimKind::ConvTranspose;
    p.inputs = {node.input(0)->name, node.input(1)->name, node.input(2) ? node.input(2)->name : ""};
    if (node.input(2)) data_input(node, 2);
    a.group = node.attr_int("group", 1);
    if (a.group < 1 || x[1] % a.group || w[1] * a.group != (out_shape)[1])
      fail(HETERO_INVALID_MODEL, "group " + std::to_string(a.group) + " does not divide the channels");
    a.kernel.assign(w.begin() + 2, w.end());
    transposed_attrs(node, a, x, out_shape, x.size() - 2);
    if (as_product_and_shuffle(p, x, w, out_shape)) return false;
    return true;
  }

  // Resize and Upsample.
  bool convert_resize(const core::Node& node, Conversion& cv) {
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    if (x.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    p.kind = PrimKind::Resize;
    p.inputs = {node.input(0)->name};
    resize_attrs(node, a, x, out_shape);
    return true;
  }

  // MatMul and Gemm (transB; C as an Add the fusion pass folds).
  bool convert_matmul(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    const core::Shape& y = data_input(node, 1);
    if (x.size() < 2 || y.size() < 2) fail(HETERO_NOT_SUPPORTED, "MatMul of 1-D operands");
    if (x.size() > 6 || y.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    p.kind = PrimKind::MatMul;
    p.inputs = {node.input(0)->name, node.input(1)->name};
    if (op == "Gemm") {
      if (node.attr_int("transA", 0) != 0 || node.attr_float("alpha", 1) != 1.0f || node.attr_float("beta", 1) != 1.0f)
        fail(HETERO_NOT_SUPPORTED, "Gemm with transA, alpha or beta other than the defaults");
      a.perm = {node.attr_int("transB", 0)};  // [1]: B is given transposed
      if (node.input(2)) {
        data_input(node, 2);
        // C becomes an Add the fusion pass folds into the product.
        Primitive mm = p;
        mm.output = out->name + "/gemm";
        t_.shapes[mm.output] = out_shape;
        pending_.push_back(mm);
        Primitive add;
        add.id = node.name + "/bias";
        add.kind = PrimKind::Binary;
        add.op = "Add";
        add.inputs = {mm.output, node.input(2)->name};
        add.output = out->name;
        pending_.push_back(add);
        t_.shapes[out->name] = out_shape;
        return false;
      }
    }
    return true;
  }

  // MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
  bool convert_pool(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    if (x.size() != 3 && x.size() != 4) fail(HETERO_NOT_SUPPORTED, op + " of rank " + std::to_string(x.size()) + " (1-D and 2-D only)");
    const size_t sp = x.size() - 2;
    p.kind = PrimKind::Pool;
    p.inputs = {node.input(0)->name};
    if (op.rfind("Global", 0) == 0) {
      a.kernel.assign(x.begin() + 2, x.end());
      a.strides.assign(sp, 1);
      a.pads.assign(2 * sp, 0);
      a.dilations.assign(sp, 1);
    } else {
      a.kernel = node.attr_ints("kernel_shape");
      if (a.kernel.size() != sp) fail(HETERO_INVALID_MODEL, "kernel_shape has the wrong rank");
      if (op == "MaxPool" && node.attr_int("storage_order", 0) != 0) fail(HETERO_NOT_SUPPORTED, "storage_order 1");
      a.count_include_pad = node.attr_int("count_include_pad", 0) != 0;
      spatial_attrs(node, a, x, out_shape, sp);
    }
    return true;
  }

  bool convert_softmax(const core::Node& node, Conversion& cv) {
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    const auto rank = static_cast<int64_t>(x.size());
    a.axis = node.attr_int("axis", node.opset < 13 ? 1 : -1);
    if (a.axis < -rank || a.axis >= rank) fail(HETERO_INVALID_MODEL, "axis out of range");
    if (a.axis < 0) a.axis += rank;
    a.softmax_flatten = node.opset < 13;
    p.kind = PrimKind::Softmax;
    p.inputs = {node.input(0)->name};
    return true;
  }

  // ReduceMax, ReduceMin, ReduceSum, ReduceMean.
  bool convert_reduce(const core::Node& node, Conversion& cv) {
    const std::string& op = node.op_type;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    const auto rank = static_cast<int64_t>(x.size());
    if (rank > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    std::vector<int64_t> axes = node.attr_ints("axes");
    const bool axes_input = (op == "ReduceSum" && node.opset >= 13) || node.opset >= 18;
    if (axes_input && node.input(1)) {
      const core::Tensor* c = constant(node.input(1));
      if (!c) fail(HETERO_NOT_SUPPORTED, "axes computed at run time");
      axes = c->to_int64_vector();
    }
    if (axes.empty() && !(axes_input && node.attr_int("noop_with_empty_axes", 0)))
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    for (int64_t& ax : axes) {
      if (ax < -rank || ax >= rank) fail(HETERO_INVALID_MODEL, "axis out of range");
      if (ax < 0) ax += rank;
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    a.axes = axes;
    p.kind = axes.empty() ? PrimKind::View : PrimKind::Reduce;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_transpose(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = typed_input(node, 0, out->dtype);
    const auto rank = static_cast<int64_t>(x.size());
    if (rank > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    a.perm = node.attr_ints("perm");
    if (a.perm.empty())
      for (int64_t d = rank - 1; d >= 0; --d) a.perm.push_back(d);
    std::vector<int64_t> sorted = a.perm;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(sorted.size()) != rank || sorted[size_t(d)] != d) fail(HETERO_INVALID_MODEL, "perm is not a permutation");
    p.kind = PrimKind::Transpose;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_slice(const core::Node& node, Conversion& cv) {
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    slice(node, p, out_shape);
    return true;
  }

  bool convert_pad(const core::Node& node, Conversion& cv) {
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = data_input(node, 0);
    if (x.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    auto pads = pad_amounts(node, x.size(), [&](const core::Value* v) { return constant(v); });
    if (!pads) fail(HETERO_NOT_SUPPORTED, "pads computed at run time");
    a.pads = std::move(*pads);
    a.pad_mode = node.attr_string("mode", "constant");
    if (a.pad_mode != "constant" && a.pad_mode != "edge" && a.pad_mode != "reflect")
      fail(HETERO_NOT_SUPPORTED, "Pad mode '" + a.pad_mode + "' (constant, edge and reflect are)");
    if (node.opset < 11) {
      a.alpha = node.attr_float("value", 0.0f);
    } else if (node.input(2)) {
      const core::Tensor* value = constant(node.input(2));
      if (!value) fail(HETERO_NOT_SUPPORTED, "the constant value is computed at run time");
      a.alpha = scalar(*value, "constant_value");
    }
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t before = a.pads[d], after = a.pads[d + x.size()];
      if (a.pad_mode != "constant" && (before < 0 || after < 0))
        fail(HETERO_NOT_SUPPORTED, "negative pads with mode " + a.pad_mode);
      if (a.pad_mode == "reflect" && (before >= x[d] || after >= x[d]))
        fail(HETERO_INVALID_MODEL, "reflect pads of axis " + std::to_string(d) + " reach past its " +
                                       std::to_string(x[d]) + " elements");
      if (a.pad_mode == "edge" && x[d] == 0 && before + after > 0)
        fail(HETERO_INVALID_MODEL, "edge pads of an empty axis");
    }
    p.kind = PrimKind::Pad;
    p.inputs = {node.input(0)->name};
    return true;
  }

  bool convert_gather(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const core::Shape& x = typed_input(node, 0, out->dtype);
    const core::Tensor* idx = constant(node.input(1));
    if (!idx) fail(HETERO_NOT_SUPPORTED, "Gather with indices computed at run time");
    if (x.empty()) fail(HETERO_INVALID_MODEL, "Gather of a scalar");
    const auto rank = static_cast<int64_t>(x.size());
    a.axis = node.attr_int("axis", 0);
    if (a.axis < -rank || a.axis >= rank) fail(HETERO_INVALID_MODEL, "axis out of range");
    if (a.axis < 0) a.axis += rank;
    // The indices, normalised and checked, as the float table the kernel
    // reads (exact: an axis longer than 2^24 is refused).
    const int64_t n = x[size_t(a.axis)];
    if (n > (int64_t{1} << 24)) fail(HETERO_NOT_SUPPORTED, "Gather along an axis of more than 2^24 elements");
    core::Tensor table = core::Tensor::allocate(core::DType::F32, {static_cast<int64_t>(std::max<size_t>(idx->numel(), 1))});
    table.data<float>()[0] = 0;
    for (size_t i = 0; i < idx->numel(); ++i) {
      const int64_t k = idx->as_int64(i);
      if (k < -n || k >= n) fail(HETERO_INVALID_MODEL, "index " + std::to_string(k) + " out of range for " + std::to_string(n));
      table.data<float>()[i] = static_cast<float>(k < 0 ? k + n : k);
    }
    const std::string tab = out->name + "/gather_index";
    t_.shapes[tab] = table.shape();
    t_.constants[tab] = std::move(table);
    p.kind = PrimKind::Gather;
    p.inputs = {node.input(0)->name, tab};
    return true;
  }

  bool convert_concat(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    Primitive& p = cv.p;
    PrimAttrs& a = p.attrs;
    const auto rank = static_cast<int64_t>(out_shape.size());
    a.axis = node.attr_int("axis", 0);
    if (a.axis < -rank || a.axis >= rank) fail(HETERO_INVALID_MODEL, "axis out of range");
    if (a.axis < 0) a.axis += rank;
    p.kind = PrimKind::Concat;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      typed_input(node, i, out->dtype);
      p.inputs.push_back(node.input(i)->name);
    }
    return true;
  }

  bool convert_batch_norm(const core::Node& node, Conversion& cv) {
    const core::Value* out = cv.out;
    const core::Shape& out_shape = cv.out_shape;
    // Inference form: y = x * scale + shift per channel, two Binary
    // primitives that the fusion pass folds into a Conv before it.
    const core::Shape& x = data_input(node, 0);
    if (x.size() < 2) fail(HETERO_INVALID_MODEL, "input rank below 2");
    const core::Tensor *s = constant(node.input(1)), *b = constant(node.input(2)), *m = constant(node.input(3)),
                       *v = constant(node.input(4));
    if (!s || !b || !m || !v) fail(HETERO_NOT_SUPPORTED, "scale, B, mean and var must be constants");
    const int64_t c = x[1];
    for (const core::Tensor* t : {s, b, m, v})
      if (t->dtype() != core::DType::F32 || static_cast<int64_t>(t->numel()) != c)
        fail(HETERO_INVALID_MODEL, "parameters must be float32 of the channel count");
    const float eps = node.attr_float("epsilon", 1e-5f);
    core::Shape cs(x.size(), 1);
    cs[1] = c;
    core::Tensor scale = core::Tensor::allocate(core::DType::F32, cs), shift = core::Tensor::allocate(core::DType::F32, cs);
    for (int64_t i = 0; i < c; ++i) {
      const float k = s->data<float>()[i] / std::sqrt(v->data<float>()[i] + eps);
      scale.data<float>()[i] = k;
      shift.data<float>()[i] = b->data<float>()[i] - m->data<float>()[i] * k;
    }
    const std::string sname = out->name + "/bn_scale", bname = out->name + "/bn_shift", mid = out->name + "/bn_mul";
    t_.constants[sname] = scale;
    t_.constants[bname] = shift;
    t_.shapes[sname] = cs;
    t_.shapes[bname] = cs;
    Primitive mul{node.name + "/scale", PrimKind::Binary, "Mul", {node.input(0)->name, sname}, mid, {}};
    Primitive add{node.name + "/shift", PrimKind::Binary, "Add", {mid, bname}, out->name, {}};
    t_.shapes[mid] = out_shape;
    t_.shapes[out->name] = out_shape;
    pending_.push_back(mul);
    pending_.push_back(add);
    return false;
  }

  // LSTM: every output of its own (see lstm()).
  bool convert_lstm(const core::Node& node, Conversion&) {
    lstm(node);
    return false;
  }

  // QDQ models (QuantizeLinear -> DequantizeLinear around each quantised
  // op) in float, as their float form reads: a DequantizeLinear of a
  // constant (weights, biases) is that constant dequantised once. A
  // QuantizeLinear whose every use is a DequantizeLinear with its parameters
  // becomes the unary QuantizeDequantize (rounding to the codes and back:
  // a post-op of the Conv before it, once fused), writing float values in
  // place of the codes, and those DequantizeLinears views of them. The
  // integer codes never exist on the device.
  void quantization(const core::Node& node) {
    const core::Value* x = node.input(0);
    const core::Value* out = node.outputs.empty() ? nullptr : node.outputs[0];
    if (!x || !out) fail(HETERO_INVALID_MODEL, "input or output missing");
    Primitive p;
    p.id = node.name;
    p.inputs = {x->name};
    p.output = out->name;
    if (node.op_type == "QuantizeLinear") {
      const auto params = folded_quantize(node);
      if (!params)
        fail(HETERO_NOT_SUPPORTED, "its codes go elsewhere than to DequantizeLinears of the same per-tensor 8-bit "
                                   "parameters; the GPU kernels hold float32 only");
      t_.shapes[out->name] = data_input(node, 0);
      p.kind = PrimKind::Unary;
      p.op = params->dtype == core::DType::U8 ? "QuantizeDequantizeUint8" : "QuantizeDequantizeInt8";
      p.attrs.alpha = params->scale[0];
      p.attrs.beta = static_cast<float>(params->zero_point[0]);
    } else if (const core::Tensor* codes = constant(x)) {
      auto params = core::qdq_constant_params(node, node.opset);
      if (!params) fail(HETERO_NOT_SUPPORTED, "scale or zero point is not constant");
      core::Tensor real = core::dequantize_tensor(*codes, *params);
      t_.shapes[out->name] = real.shape();
      t_.constants[out->name] = std::move(real);
      return;
    } else {
      if (!x->producer || x->producer->op_type != "QuantizeLinear" || !folded_quantize(*x->producer))
        fail(HETERO_NOT_SUPPORTED, "its codes do not come from a QuantizeLinear the GPU folds");
      t_.shapes[out->name] = input_shape(node, 0);
      p.kind = PrimKind::View;
      p.op = node.op_type;
    }
    pending_.push_back(std::move(p));
  }

  // LSTM with the default activations, no clip, layout 0: one primitive
  // writing Y, Y_h and Y_c into one buffer, and a strided copy out of it for
  // each of them the model reads.
  void lstm(const core::Node& node) {
    const core::Shape& x = data_input(node, 0);
    const core::Shape& w = data_input(node, 1);
    const core::Shape& r = data_input(node, 2);
    if (x.size() != 3 || w.size() != 3 || r.size() != 3) fail(HETERO_INVALID_MODEL, "X, W and R must be 3-D");
    Primitive p;
    p.id = node.name;
    p.kind = PrimKind::Lstm;
    p.op = node.op_type;
    auto& a = p.attrs;
    a.hidden = node.attr_int("hidden_size", r[2]);
    a.direction = node.attr_string("direction", "forward");
    const int64_t dirs = a.direction == "bidirectional" ? 2 : 1;
    if (a.direction != "forward" && a.direction != "reverse" && a.direction != "bidirectional")
      fail(HETERO_INVALID_MODEL, "direction '" + a.direction + "'");
    if (node.attr_int("layout", 0) != 0) fail(HETERO_NOT_SUPPORTED, "layout 1 (batch first)");
    if (node.attr("clip") || node.attr_int("input_forget", 0) != 0)
      fail(HETERO_NOT_SUPPORTED, "clip or input_forget");
    const core::Attribute* act_attr = node.attr("activations");
    const std::vector<std::string> acts = act_attr ? act_attr->strings : std::vector<std::string>{};
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i] != (i % 3 == 0 ? "Sigmoid" : "Tanh"))
        fail(HETERO_NOT_SUPPORTED, "activations other than Sigmoid, Tanh, Tanh");
    const int64_t seq = x[0], batch = x[1], hid = a.hidden;
    if (w != core::Shape{dirs, 4 * hid, x[2]} || r != core::Shape{dirs, 4 * hid, hid})
      fail(HETERO_INVALID_MODEL, "W or R does not match hidden_size " + std::to_string(hid) + " and the input");
    if (const core::Value* lens = node.input(4)) {
      const core::Tensor* l = constant(lens);
      bool full = l != nullptr;
      for (size_t i = 0; full && i < l->numel(); ++i) full = l->as_int64(i) == seq;
      if (!full) fail(HETERO_NOT_SUPPORTED, "sequence_lens other than the whole sequence");
    }
    const core::Shape state{dirs, batch, hid};
    auto optional_input = [&](size_t i, const core::Shape& want, const char* what) -> std::string {
      if (!node.input(i)) return "";
      if (data_input(node, i) != want)
        fail(HETERO_INVALID_MODEL, std::string(what) + " is not " + core::shape_to_string(want));
      return node.input(i)->name;
    };
    p.inputs = {node.input(0)->name, node.input(1)->name, node.input(2)->name,
                optional_input(3, {dirs, 8 * hid}, "B"), optional_input(5, state, "initial_h"),
                optional_input(6, state, "initial_c"), optional_input(7, {dirs, 3 * hid}, "P")};
    const int64_t y_count = seq * dirs * batch * hid, state_count = dirs * batch * hid;
    p.output = node.name + "/lstm_all";
    t_.shapes[p.output] = {y_count + 2 * state_count};
    pending_.push_back(p);
    const core::Shape shapes[3] = {{seq, dirs, batch, hid}, state, state};
    const int64_t offsets[3] = {0, y_count, y_count + state_count};
    for (size_t k = 0; k < 3 && k < node.outputs.size(); ++k) {
      const core::Value* o = node.outputs[k];
      if (!o || (o->uses.empty() && !is_graph_output(o))) continue;
      const std::string flat = o->name + "/flat";
      Primitive copy{node.name + "/out" + std::to_string(k), PrimKind::Transpose, "Slice", {p.output}, flat, {}};
      copy.attrs.perm = {0};
      copy.attrs.starts = {offsets[k]};
      copy.attrs.steps = {1};
      t_.shapes[flat] = {static_cast<int64_t>(core::shape_numel(shapes[k]))};
      pending_.push_back(copy);
      pending_.push_back({node.name + "/view" + std::to_string(k), PrimKind::View, "Reshape", {flat}, o->name, {}});
      t_.shapes[o->name] = shapes[k];
    }
  }

  std::vector<Primitive> take_pending() { return std::move(pending_); }
  // Values the host computes from small integer inputs, for If conditions;
  // host-only ones, with why the GPU cannot compute them, have no device
  // tensor.
  void mark_host_value(const std::string& name, std::optional<Failure> only = {}) {
    host_values_.insert(name);
    if (only) host_only_.emplace(name, std::move(*only));
  }
  bool is_host_value(const std::string& name) const { return host_values_.count(name) > 0; }
  const Failure* host_only(const std::string& name) const {
    auto it = host_only_.find(name);
    return it == host_only_.end() ? nullptr : &it->second;
  }
  void set_graph(const core::Graph& g) { graph_ = &g; }
  const core::Graph* graph() const { return graph_; }

 private:
  bool is_graph_output(const core::Value* v) const {
    return std::find(graph_->outputs.begin(), graph_->outputs.end(), v) != graph_->outputs.end();
  }
  bool const_or_absent(const core::Value* v) const { return !v || constant(v); }
  // A QuantizeLinear's parameters when it is folded into the
  // DequantizeLinears that read it (quantization()): float input, constant
  // per-tensor 8-bit parameters, and every use such a DequantizeLinear with
  // the same parameters.
  std::optional<core::QuantParams> folded_quantize(const core::Node& q) const {
    const core::Value* x = q.input(0);
    const core::Value* codes = q.outputs.empty() ? nullptr : q.outputs[0];
    if (!q.domain.empty() || !x || x->dtype != core::DType::F32 || constant(x) || !codes || codes->uses.empty() ||
        is_graph_output(codes))
      return std::nullopt;
    auto params = core::qdq_constant_params(q, q.opset);
    if (!params || !params->per_tensor() || (params->dtype != core::DType::U8 && params->dtype != core::DType::I8))
      return std::nullopt;
    for (const core::Use& use : codes->uses) {
      const core::Node& dq = *use.node;
      if (dq.op_type != "DequantizeLinear" || !dq.domain.empty() || use.input_index != 0) return std::nullopt;
      auto dq_params = core::qdq_constant_params(dq, dq.opset);
      if (!dq_params || !(*dq_params == *params)) return std::nullopt;
    }
    return params;
  }
  static float scalar(const core::Tensor& t, const char* what) {
    if (t.numel() != 1) fail(HETERO_INVALID_MODEL, std::string(what) + " must be a scalar");
    return static_cast<float>(t.as_double(0));
  }
  // Strides, dilations and begin/end pads; auto_pad resolved against the
  // output shape that shape inference gave.
  static void spatial_attrs(const core::Node& node, PrimAttrs& a, const core::Shape& x, const core::Shape& y, size_t sp) {
    a.strides = node.attr_ints("strides", std::vector<int64_t>(sp, 1));
    a.dilations = node.attr_ints("dilations", std::vector<int64_t>(sp, 1));
    a.pads = node.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
    if (a.strides.size() != sp || a.dilations.size() != sp || a.pads.size() != 2 * sp)
      fail(HETERO_INVALID_MODEL, "strides, dilations or pads have the wrong length");
    for (size_t d = 0; d < sp; ++d)
      if (a.strides[d] < 1 || a.dilations[d] < 1 || a.kernel[d] < 1 || a.pads[d] < 0 || a.pads[d + sp] < 0)
        fail(HETERO_INVALID_MODEL, "non-positive kernel, stride or dilation, or negative pad");
    const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t d = 0; d < sp; ++d) {
        const int64_t ext = (a.kernel[d] - 1) * a.dilations[d] + 1;
        const int64_t total = std::max<int64_t>(0, (y[d + 2] - 1) * a.strides[d] + ext - x[d + 2]);
        a.pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        a.pads[d + sp] = total - a.pads[d];
      }
    } else if (auto_pad == "VALID") {
      std::fill(a.pads.begin(), a.pads.end(), 0);
    } else if (auto_pad != "NOTSET") {
      fail(HETERO_INVALID_MODEL, "auto_pad '" + auto_pad + "'");
    }
  }

  // ConvTranspose: strides, dilations, and the pads at the start of each
  // axis, from the output shape that shape inference gave. (The pads at the
  // end follow from it; output_padding and output_shape only move them.)
  static void transposed_attrs(const core::Node& node, PrimAttrs& a, const core::Shape& x, const core::Shape& y,
                               size_t sp) {
    a.strides = node.attr_ints("strides", std::vector<int64_t>(sp, 1));
    a.dilations = node.attr_ints("dilations", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
    const std::vector<int64_t> output_padding = node.attr_ints("output_padding", std::vector<int64_t>(sp, 0));
    if (a.strides.size() != sp || a.dilations.size() != sp || pads.size() != 2 * sp || output_padding.size() != sp)
      fail(HETERO_INVALID_MODEL, "strides, dilations, pads or output_padding have the wrong length");
    for (size_t d = 0; d < sp; ++d)
      if (a.strides[d] < 1 || a.dilations[d] < 1 || a.kernel[d] < 1 || pads[d] < 0 || pads[d + sp] < 0)
        fail(HETERO_INVALID_MODEL, "non-positive kernel, stride or dilation, or negative pad");
    const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    const bool given_shape = !node.attr_ints("output_shape").empty();
    if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
      fail(HETERO_INVALID_MODEL, "auto_pad '" + auto_pad + "'");
    a.pads.assign(2 * sp, 0);
    for (size_t d = 0; d < sp; ++d) {
      const int64_t ext = (a.kernel[d] - 1) * a.dilations[d] + 1;
      const int64_t total = a.strides[d] * (x[d + 2] - 1) + output_padding[d] + ext - y[d + 2];
      // Halved rounding down, as ONNX's reference does: an output_shape
      // larger than the kernels reach makes `total` negative, and the
      // outputs past them zero.
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      int64_t begin = 0;
      if (auto_pad == "SAME_UPPER")
        begin = half;
      else if (auto_pad == "SAME_LOWER" || (auto_pad == "NOTSET" && given_shape))
        begin = total - half;
      else if (auto_pad == "NOTSET")
        begin = pads[d];
      a.pads[d] = begin;
      a.pads[d + sp] = total - begin;
    }
  }

  // A ConvTranspose whose kernel is its stride (no overlap, no pads, no
  // dilation, one group, constant weights and bias: the upsampling heads of
  // detectors) is a 1x1 convolution to OC * KH * KW channels, whose tiled
  // kernels are fast, then a shuffle of those channels into the KH x KW
  // block of each input pixel: views and a Transpose, and the bias as an Add
  // after. False for any other ConvTranspose, which gets its own kernel.
  bool as_product_and_shuffle(const Primitive& p, const core::Shape& x, const core::Shape& w, const core::Shape& y) {
    const PrimAttrs& a = p.attrs;
    const core::Tensor* wt = constant_named(p.inputs[1]);
    const core::Tensor* bt = p.inputs[2].empty() ? nullptr : constant_named(p.inputs[2]);
    if (x.size() != 4 || a.group != 1 || !wt || (!p.inputs[2].empty() && !bt)) return false;
    const int64_t n = x[0], ic = x[1], ih = x[2], iw = x[3], oc = w[1], kh = w[2], kw = w[3];
    if (a.strides != std::vector<int64_t>{kh, kw} || a.dilations != std::vector<int64_t>{1, 1} ||
        a.pads != std::vector<int64_t>{0, 0, 0, 0} || y != core::Shape{n, oc, ih * kh, iw * kw})
      return false;
    // Weights [IC][OC][KH][KW] as a 1x1 convolution's [OC * KH * KW][IC][1][1].
    const std::string base = p.output + "/ct";
    const core::Shape ws{oc * kh * kw, ic, 1, 1};
    core::Tensor w2 = core::Tensor::allocate(core::DType::F32, ws);
    const float* src = wt->data<float>();
    float* dst = w2.data<float>();
    for (int64_t c = 0; c < ic; ++c)
      for (int64_t k = 0; k < oc * kh * kw; ++k) dst[k * ic + c] = src[c * oc * kh * kw + k];
    t_.constants[base + "_w"] = std::move(w2);
    t_.shapes[base + "_w"] = ws;
    Primitive conv{p.id + "/product", PrimKind::Conv, "Conv", {p.inputs[0], base + "_w", ""}, base + "_product", {}};
    if (bt) {
      // The bias of output channel c, on each of its KH x KW product channels.
      core::Tensor b2 = core::Tensor::allocate(core::DType::F32, {oc * kh * kw});
      for (int64_t k = 0; k < oc * kh * kw; ++k) b2.data<float>()[k] = static_cast<float>(bt->as_double(size_t(k / (kh * kw))));
      t_.shapes[base + "_bias"] = b2.shape();
      t_.constants[base + "_bias"] = std::move(b2);
      conv.inputs[2] = base + "_bias";
    }
    conv.attrs.kernel = {1, 1};
    conv.attrs.strides = {1, 1};
    conv.attrs.dilations = {1, 1};
    conv.attrs.pads = {0, 0, 0, 0};
    t_.shapes[conv.output] = {n, oc * kh * kw, ih, iw};
    // [N][OC][KH][KW][IH][IW] -> [N][OC][IH][KH][IW][KW] is the output. The
    // copy walks that order and writes y's shape directly, so that the ops
    // after the ConvTranspose (batch norm, activation) fuse into it.
    Primitive split{p.id + "/blocks", PrimKind::View, "Reshape", {conv.output}, base + "_blocks", {}};
    t_.shapes[split.output] = {n, oc, kh, kw, ih, iw};
    Primitive shuffle{p.id + "/shuffle", PrimKind::Transpose, "Transpose", {split.output}, p.output, {}};
    shuffle.attrs.perm = {0, 1, 4, 2, 5, 3};
    shuffle.attrs.walk = {n, oc, ih, kh, iw, kw};
    t_.shapes[p.output] = y;
    for (Primitive* q : {&conv, &split, &shuffle}) pending_.push_back(*q);
    return true;
  }
  const core::Tensor* constant_named(const std::string& name) const {
    auto it = t_.constants.find(name);
    return it == t_.constants.end() ? nullptr : &it->second;
  }

  // Resize (opset 10 on; Upsample's scales input at 9, attribute at 7): the
  // per-axis scales, from the scales or the sizes, and the modes the GPU
  // kernel takes: nearest and linear (along at most 3 axes), no cubic,
  // antialias, axes or crop.
  void resize_attrs(const core::Node& node, PrimAttrs& a, const core::Shape& x, const core::Shape& y) const {
    if (y.size() != x.size()) fail(HETERO_INVALID_MODEL, "output rank differs from input rank");
    const bool upsample = node.op_type == "Upsample";
    a.resize_mode = node.attr_string("mode", "nearest");
    a.coordinate_mode = upsample ? "asymmetric" : node.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest_mode = upsample ? "floor" : node.attr_string("nearest_mode", "round_prefer_floor");
    if (!upsample && node.opset == 10) a.coordinate_mode = "asymmetric", a.nearest_mode = "floor";  // opset 10's only
    if (a.resize_mode != "nearest" && a.resize_mode != "linear")
      fail(HETERO_NOT_SUPPORTED, "Resize mode '" + a.resize_mode + "' (nearest and linear are)");
    if (a.coordinate_mode != "half_pixel" && a.coordinate_mode != "pytorch_half_pixel" &&
        a.coordinate_mode != "asymmetric" && a.coordinate_mode != "align_corners" &&
        a.coordinate_mode != "tf_half_pixel_for_nn")
      fail(HETERO_NOT_SUPPORTED, "coordinate_transformation_mode '" + a.coordinate_mode + "'");
    if (a.nearest_mode != "round_prefer_floor" && a.nearest_mode != "round_prefer_ceil" && a.nearest_mode != "floor" &&
        a.nearest_mode != "ceil")
      fail(HETERO_INVALID_MODEL, "nearest_mode '" + a.nearest_mode + "'");
    if (node.attr_int("antialias", 0) != 0 || !node.attr_ints("axes").empty())
      fail(HETERO_NOT_SUPPORTED, "Resize with antialias or axes");
    // The scales: given (the attribute at opset 7, else input 1 at 9-10 and
    // input 2 after), or the sizes over the input's.
    std::vector<double> scales;
    if (upsample && node.opset < 9) {
      for (float s : node.attr_floats("scales")) scales.push_back(s);
    } else {
      const core::Value* sv = node.input(upsample || node.opset == 10 ? 1 : 2);
      const core::Value* zv = upsample || node.opset == 10 ? nullptr : node.input(3);
      const core::Tensor* st = constant(sv);
      const core::Tensor* zt = constant(zv);
      if ((sv && !st) || (zv && !zt)) fail(HETERO_NOT_SUPPORTED, "scales or sizes computed at run time");
      if (st && st->numel() > 0)
        for (size_t i = 0; i < st->numel(); ++i) scales.push_back(st->as_double(i));
      else if (zt && zt->numel() > 0)
        for (size_t i = 0; i < zt->numel() && i < x.size(); ++i)
          scales.push_back(static_cast<double>(zt->as_double(i)) / static_cast<double>(x[i]));
    }
    if (scales.size() != x.size()) fail(HETERO_INVALID_MODEL, "scales or sizes do not have one value per axis");
    size_t interpolated = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      if (!(scales[d] > 0)) fail(HETERO_INVALID_MODEL, "a scale is not positive");
      interpolated += x[d] != y[d] || scales[d] != 1.0;
    }
    if (a.resize_mode == "linear" && interpolated > 3) fail(HETERO_NOT_SUPPORTED, "linear Resize along more than 3 axes");
    a.scales = std::move(scales);
  }

  // Slice with constant parameters: a strided copy, the Transpose kernel
  // with the identity perm, a start offset and strides scaled by the steps.
  void slice(const core::Node& node, Primitive& p, const core::Shape& out) {
    const core::Shape& x = typed_input(node, 0, node.outputs[0]->dtype);
    if (x.size() > 6) fail(HETERO_NOT_SUPPORTED, "rank above 6");
    auto g = slice_geometry(node, x, [&](const core::Value* v) { return constant(v); });
    if (!g) fail(HETERO_NOT_SUPPORTED, "Slice's starts, ends, axes or steps are not constant");
    if (g->out != out)
      fail(HETERO_INVALID_MODEL, "the slice's shape is " + core::shape_to_string(g->out) + ", its output's " +
                                     core::shape_to_string(out));
    for (size_t d = 0; d < x.size(); ++d) p.attrs.perm.push_back(static_cast<int64_t>(d));
    p.attrs.starts = std::move(g->starts);
    p.attrs.steps = std::move(g->steps);
    p.kind = PrimKind::Transpose;
    p.inputs = {node.input(0)->name};
  }

  Topology& t_;
  const core::Graph* graph_ = nullptr;
  std::vector<Primitive> pending_;
  std::set<std::string> host_values_;
  std::map<std::string, Failure> host_only_;
};

// Every ONNX op (default domain) the GPU drivers run, one line each: the
// Builder member that converts a node of it, and whether its kernel takes
// device types other than float32 (for the others a non-float32 output is
// refused), the rule for its output's shape where ONNX's shape inference
// stopped (shape_infer.h), and the rule for its value when its inputs are
// constants (const_fold.h; a few ops, Shape and Constant among them, are
// only ever folded and have no converter). Each op has exactly one line, so the order is for reading; a
// converter that serves several cases (an integer Add, a Cast to the type it
// has) tells them apart itself. QuantizeLinear, DequantizeLinear and If are
// the topology walk's (add_node): they choose between primitives, constants
// and branches.
struct OpLine {
  const char* op_type;
  Builder::Converter convert;
  ShapeRule* infer_shape;  // null: only what ONNX's shape inference gives
  FoldRule* fold;          // null: never folded on the host
  bool any_device_type;
  bool one_output = true;  // false: the converter makes every output (LSTM)
};

constexpr bool kF32 = false, kAny = true;

// clang-format off
const OpLine kOpLines[] = {
    // elementwise, one input
    {"Relu", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"LeakyRelu", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"HardSigmoid", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Sigmoid", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Tanh", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Exp", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Log", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Sqrt", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Reciprocal", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Floor", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Ceil", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Elu", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Softplus", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"HardSwish", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Erf", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Sin", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Cos", &Builder::convert_unary, shape::same, nullptr, kF32},
    {"Abs", &Builder::convert_abs_neg, shape::same, nullptr, kAny},
    {"Neg", &Builder::convert_abs_neg, shape::same, nullptr, kAny},
    {"Clip", &Builder::convert_clip, shape::same, nullptr, kF32},
    {"Cast", &Builder::convert_cast, shape::same, fold::cast, kAny},
    {"Not", &Builder::convert_not, nullptr, fold::logical_not, kAny},
    // elementwise, two or more inputs, numpy broadcasting
    {"Add", &Builder::convert_binary, shape::broadcast_all, fold::integer_arithmetic, kAny},
    {"Sub", &Builder::convert_binary, shape::broadcast_all, fold::integer_arithmetic, kAny},
    {"Mul", &Builder::convert_binary, shape::broadcast_all, fold::integer_arithmetic, kAny},
    {"Div", &Builder::convert_binary, shape::broadcast_all, fold::integer_arithmetic, kAny},
    {"Max", &Builder::convert_binary, shape::broadcast_all, nullptr, kAny},
    {"Min", &Builder::convert_binary, shape::broadcast_all, nullptr, kAny},
    {"Sum", &Builder::convert_binary, shape::broadcast_all, nullptr, kAny},
    {"Pow", &Builder::convert_binary, shape::broadcast_all, nullptr, kF32},
    {"Equal", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"Less", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"Greater", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"LessOrEqual", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"GreaterOrEqual", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"And", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"Or", &Builder::convert_typed_binary, nullptr, fold::integer_arithmetic, kAny},
    {"Xor", &Builder::convert_typed_binary, nullptr, nullptr, kAny},
    {"Where", &Builder::convert_where, nullptr, nullptr, kAny},
    {"Expand", &Builder::convert_expand, nullptr, nullptr, kAny},
    // the same bytes
    {"Reshape", &Builder::convert_view, shape::reshape, fold::reshaped, kAny},
    {"Flatten", &Builder::convert_view, shape::flatten, fold::reshaped, kAny},
    {"Squeeze", &Builder::convert_view, shape::squeeze_or_unsqueeze, fold::reshaped, kAny},
    {"Unsqueeze", &Builder::convert_view, shape::squeeze_or_unsqueeze, fold::reshaped, kAny},
    {"Identity", &Builder::convert_view, shape::same, fold::identity, kAny},
    {"Dropout", &Builder::convert_view, shape::same, nullptr, kAny},
    // copies
    {"Transpose", &Builder::convert_transpose, shape::transpose, fold::transpose, kAny},
    {"Slice", &Builder::convert_slice, shape::slice, fold::slice, kAny},
    {"Concat", &Builder::convert_concat, shape::concat, fold::concat, kAny},
    {"Gather", &Builder::convert_gather, shape::gather, fold::gather, kAny},
    {"Pad", &Builder::convert_pad, shape::pad, nullptr, kF32},
    // windows and products
    {"Conv", &Builder::convert_conv, shape::conv, nullptr, kF32},
    {"ConvTranspose", &Builder::convert_conv_transpose, nullptr, nullptr, kF32},
    {"MatMul", &Builder::convert_matmul, shape::matmul, nullptr, kF32},
    {"Gemm", &Builder::convert_matmul, nullptr, nullptr, kF32},
    {"MaxPool", &Builder::convert_pool, shape::pool, nullptr, kF32},
    {"AveragePool", &Builder::convert_pool, shape::pool, nullptr, kF32},
    {"GlobalAveragePool", &Builder::convert_pool, shape::global_pool, nullptr, kF32},
    {"GlobalMaxPool", &Builder::convert_pool, shape::global_pool, nullptr, kF32},
    {"Resize", &Builder::convert_resize, nullptr, nullptr, kF32},
    {"Upsample", &Builder::convert_resize, nullptr, nullptr, kF32},
    // normalisation and reductions
    {"Softmax", &Builder::convert_softmax, shape::same, nullptr, kF32},
    {"BatchNormalization", &Builder::convert_batch_norm, shape::same, nullptr, kF32},
    {"ReduceMax", &Builder::convert_reduce, shape::reduce, nullptr, kF32},
    {"ReduceMin", &Builder::convert_reduce, shape::reduce, nullptr, kF32},
    {"ReduceSum", &Builder::convert_reduce, shape::reduce, nullptr, kF32},
    {"ReduceMean", &Builder::convert_reduce, shape::reduce, nullptr, kF32},
    // recurrent
    {"LSTM", &Builder::convert_lstm, nullptr, nullptr, kF32, false},
    // folded on the host, never run on the device
    {"Constant", nullptr, nullptr, fold::constant, kF32},
    {"Shape", nullptr, nullptr, fold::shape_or_size, kF32},
    {"Size", nullptr, nullptr, fold::shape_or_size, kF32},
    {"ConstantOfShape", nullptr, nullptr, fold::constant_of_shape, kF32},
};
// clang-format on

const OpLine* op_line(const std::string& op) {
  static const std::map<std::string_view, const OpLine*> by_name = [] {
    std::map<std::string_view, const OpLine*> m;
    for (const OpLine& line : kOpLines) m.emplace(line.op_type, &line);
    return m;
  }();
  auto it = by_name.find(op);
  return it == by_name.end() ? nullptr : it->second;
}

}  // namespace

std::optional<core::Shape> infer_output_shape(const core::Node& node, const ShapeLookup& shape_of,
                                              const TensorLookup& constant_of) {
  const OpLine* line = op_line(node.op_type);
  const core::Shape* x = node.input(0) ? shape_of(node.input(0)) : nullptr;
  if (!line || !line->infer_shape || !x) return std::nullopt;
  return line->infer_shape(node, *x, shape_of, constant_of);
}

std::optional<core::Tensor> fold_node(const core::Node& node, const ConstantLookup& constant_of,
                                      const StaticShapeLookup& shape_of) {
  const OpLine* line = node.domain.empty() ? op_line(node.op_type) : nullptr;
  if (!line || !line->fold || node.outputs.size() != 1 || !node.outputs[0]) return std::nullopt;
  return line->fold(node, FoldContext{constant_of, shape_of});
}

bool is_foldable_op(const std::string& op_type) {
  const OpLine* line = op_line(op_type);
  return line && line->fold;
}

namespace {

void Builder::convert(const core::Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    fail(HETERO_NOT_SUPPORTED,
         "no GPU kernel for " + node.domain + "." + node.op_type + " (no ops of domain '" + node.domain + "')");
  const std::string& op = node.op_type;
  const OpLine* line = op_line(op);
  if (!line || !line->convert) fail(HETERO_NOT_SUPPORTED, "no GPU kernel for " + op);
  Conversion c;
  if (!line->one_output) {
    (this->*line->convert)(node, c);
    return;
  }
  size_t wanted_outputs = 0;
  for (const core::Value* o : node.outputs) wanted_outputs += o && (!o->uses.empty() || is_graph_output(o));
  if (node.outputs.empty() || !node.outputs[0])
    fail(HETERO_NOT_SUPPORTED, "only the first output of " + op + " is supported");
  if (wanted_outputs > 1 || (wanted_outputs == 1 && node.outputs[0]->uses.empty() && !is_graph_output(node.outputs[0])))
    fail(HETERO_NOT_SUPPORTED, "only the first output of " + op + " is supported");
  const core::Value* out = c.out = node.outputs[0];
  if (!is_device_dtype(out->dtype))
    fail(HETERO_NOT_SUPPORTED, std::string("output '") + out->name + "' is " + core::dtype_name(out->dtype) +
                                   "; GPU tensors are float32, int32, int64 or bool");
  if (out->dtype != core::DType::F32) t_.dtypes[out->name] = out->dtype;
  auto out_shape = out->static_shape();
  if (!out_shape)  // shape inference stopped at shape arithmetic folded since
    out_shape = infer_output_shape(
        node,
        [&](const core::Value* v) -> const core::Shape* {
          auto it = t_.shapes.find(v->name);
          return it == t_.shapes.end() ? nullptr : &it->second;
        },
        [&](const core::Value* v) { return constant(v); });
  if (!out_shape) fail(HETERO_NOT_SUPPORTED, "output '" + out->name + "' has no static shape");
  c.out_shape = *out_shape;
  c.p.id = node.name;
  c.p.op = op;
  c.p.output = out->name;
  if (!(this->*line->convert)(node, c)) return;
  if (out->dtype != core::DType::F32 && !line->any_device_type)
    fail(HETERO_NOT_SUPPORTED, std::string("output '") + out->name + "' is " + core::dtype_name(out->dtype) +
                                   "; the GPU kernel of " + op + " produces float32 only");
  t_.shapes[out->name] = c.out_shape;
  pending_.push_back(std::move(c.p));
}

}  // namespace

namespace {

// If bodies inlined inside one another at most this deep: what a model
// needs is a few levels, and the bound keeps a hostile model's recursion
// off the stack.
constexpr int kMaxIfDepth = 16;

// The node of `graph` that is `node` or holds it in a body (an If's branch,
// nested or not); null if none does.
const core::Node* top_level_of(const core::Node& node, const core::Graph& graph) {
  if (node.index < graph.nodes().size() && graph.nodes()[node.index].get() == &node) return &node;
  std::function<bool(const core::Graph&)> holds = [&](const core::Graph& g) {
    for (const auto& n : g.nodes()) {
      if (n.get() == &node) return true;
      for (const core::Attribute& a : n->attributes) {
        if (a.g && holds(*a.g)) return true;
        for (const auto& sub : a.graphs)
          if (sub && holds(*sub)) return true;
      }
    }
    return false;
  };
  for (const auto& n : graph.nodes())
    for (const core::Attribute& a : n->attributes)
      if ((a.g && holds(*a.g)) || std::any_of(a.graphs.begin(), a.graphs.end(), [&](const auto& sub) { return sub && holds(*sub); }))
        return n.get();
  return nullptr;
}

// What add_node() needs besides the node: the model's main graph (whose
// inputs a host condition may read), the outcomes chosen for host
// conditions, and whether this is a query (no program is built).
struct Context {
  const core::Graph& main;
  const ConditionChoices& choices;
  bool query;
};

void add_node(Topology& t, Builder& b, const core::Node& node, int depth, const Context& ctx);

// Forgets what `node`, which did not convert, recorded of its outputs.
void forget_outputs(Topology& t, const core::Node& node) {
  for (const core::Value* o : node.outputs)
    if (o) t.shapes.erase(o->name), t.constants.erase(o->name), t.dtypes.erase(o->name);
}

// A compile's failure at `node`: a model that breaks ONNX's rules stays
// INVALID_MODEL (no device runs it); anything else is NOT_SUPPORTED here.
[[noreturn]] void fail_at(const core::Node& node, hetero_status status, const std::string& why) {
  if (status == HETERO_INVALID_MODEL) fail(HETERO_INVALID_MODEL, node.describe() + ": " + why);
  fail(HETERO_NOT_SUPPORTED, node.describe() + " cannot run on the GPU: " + why);
}

// The nodes of If `node`'s `branch` in its place, and the branch's outputs
// as the If's: constants stay constants, the rest are views (the same bytes
// under the If's output names).
void add_branch(Topology& t, Builder& b, const core::Node& node, const char* branch, int depth, const Context& ctx) {
  const core::Attribute* a = node.attr(branch);
  if (!a || a->type != core::AttrType::Graph || !a->g) fail(HETERO_INVALID_MODEL, std::string(branch) + " is missing");
  const core::Graph& body = *a->g;
  if (body.outputs.size() != node.outputs.size())
    fail(HETERO_INVALID_MODEL, std::string(branch) + " has " + std::to_string(body.outputs.size()) + " outputs, the If " +
                                   std::to_string(node.outputs.size()));
  if (depth >= kMaxIfDepth) fail(HETERO_NOT_SUPPORTED, "Ifs nested deeper than " + std::to_string(kMaxIfDepth));
  for (const auto& v : body.values())
    if (v->constant) {
      t.constants[v->name] = *v->constant;
      t.shapes[v->name] = v->constant->shape();
    }
  const core::Graph* outer = b.graph();
  b.set_graph(body);
  for (const auto& inner : body.nodes()) {
    try {
      add_node(t, b, *inner, depth + 1, ctx);
    } catch (const Failure& e) {
      b.set_graph(*outer);
      fail(e.status(), std::string("in its ") + branch + ", " + inner->describe() + ": " + e.what());
    } catch (...) {
      b.set_graph(*outer);
      throw;
    }
  }
  b.set_graph(*outer);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const core::Value* out = node.outputs[i];
    const core::Value* src = body.outputs[i];
    if (!out || !src) continue;
    if (const core::Tensor* c = b.constant(src)) {
      t.constants[out->name] = *c;
      t.shapes[out->name] = c->shape();
      continue;
    }
    auto it = t.shapes.find(src->name);
    if (it == t.shapes.end()) fail(HETERO_NOT_SUPPORTED, "output '" + src->name + "' of its " + branch + " has no static shape");
    t.shapes[out->name] = it->second;
    if (const core::DType dt = value_dtype(t.dtypes, t.constants, src->name); dt != core::DType::F32)
      t.dtypes[out->name] = dt;
    t.primitives.push_back({node.name + "/" + std::to_string(i), PrimKind::View, "If", {src->name}, out->name, {}});
  }
}

// Adds `node` to the topology: folded to a constant, converted to
// primitives, or, for an If, replaced by the nodes of the branch it takes.
// Models exported from PyTorch branch on shapes (a rank, a batch of one),
// which static shapes make constants, and on small inputs (a sample rate),
// which the host works out before each inference (host_conditions.h): either
// way the branch is just more of the graph.
void add_node(Topology& t, Builder& b, const core::Node& node, int depth, const Context& ctx) {
  auto shape_of = [&](const core::Value* v) -> const core::Shape* {
    if (auto it = t.shapes.find(v->name); it != t.shapes.end()) return &it->second;
    if (auto s = v->static_shape()) return &(t.shapes[v->name] = *s);
    return nullptr;
  };
  if (node.domain.empty() && (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear")) {
    b.quantization(node);
    for (Primitive& p : b.take_pending()) t.primitives.push_back(std::move(p));
    return;
  }
  if (node.domain.empty() && node.op_type == "If") {
    bool taken = false;
    if (const core::Tensor* cond = b.constant(node.input(0))) {
      if (cond->numel() != 1) fail(HETERO_INVALID_MODEL, "the condition holds " + std::to_string(cond->numel()) + " values");
      taken = cond->as_double(0) != 0;
    } else if (auto it = ctx.choices.find(node.name); it != ctx.choices.end()) {
      taken = it->second;
    } else {
      auto host = host_condition(node, ctx.main, [&](const core::Value* v) { return b.constant(v); });
      if (!host)
        fail(HETERO_NOT_SUPPORTED, "its condition is computed from device values at run time (the GPU runs an If "
                                   "whose condition is known at compile time, or follows from small integer inputs)");
      if (!ctx.query) throw OpenCondition{std::move(*host)};
      // A query: the If runs here when a branch does (the other may not
      // fit the input shapes given: Silero VAD's 8 kHz branch on a 16 kHz
      // chunk), and inferences that take a branch that does not fail then.
      try {
        add_branch(t, b, node, "then_branch", depth, ctx);
      } catch (const Failure&) {
        add_branch(t, b, node, "else_branch", depth, ctx);
        return;
      }
      try {
        add_branch(t, b, node, "else_branch", depth, ctx);
      } catch (const Failure&) {
      }
      return;
    }
    add_branch(t, b, node, taken ? "then_branch" : "else_branch", depth, ctx);
    return;
  }
  if (auto folded = fold_node(node, [&](const core::Value* v) { return b.constant(v); }, shape_of)) {
    t.constants[node.outputs[0]->name] = *folded;
    t.shapes[node.outputs[0]->name] = folded->shape();
    return;
  }
  // Arithmetic on small integer inputs (a condition's cone): the host's,
  // never the device's.
  if (node.domain.empty() && is_foldable_op(node.op_type) && node.op_type != "Shape" && node.op_type != "Size") {
    bool host = true, reads_inputs = false;
    for (const core::Value* in : node.inputs) {
      const bool from_inputs = in && (b.is_host_value(in->name) || is_condition_input(*in, ctx.main));
      host = host && (!in || b.constant(in) || from_inputs);
      reads_inputs = reads_inputs || from_inputs;
    }
    if (host && reads_inputs) {
      // Also a device tensor where the GPU can compute it, for the nodes
      // other than conditions that read it (what only conditions read is
      // dropped as dead code).
      std::optional<Failure> not_on_device;
      try {
        b.convert(node);
        for (Primitive& p : b.take_pending()) t.primitives.push_back(std::move(p));
      } catch (const Failure& e) {
        not_on_device = e;
        b.take_pending();
        forget_outputs(t, node);
      }
      for (const core::Value* o : node.outputs)
        if (o) b.mark_host_value(o->name, not_on_device);
      return;
    }
  }
  b.convert(node);
  for (Primitive& p : b.take_pending()) t.primitives.push_back(std::move(p));
}

}  // namespace

Topology build_topology(const core::Graph& graph, std::vector<std::string>* reasons, const ConditionChoices& choices) {
  Topology t;
  Builder b(t);
  b.set_graph(graph);
  for (const auto& v : graph.values())
    if (v->constant) {
      t.constants[v->name] = *v->constant;
      t.shapes[v->name] = v->constant->shape();
    }
  for (const core::Value* v : graph.inputs) {
    t.inputs.push_back(v->name);
    if (v->dtype != core::DType::F32) t.dtypes[v->name] = v->dtype;
    if (auto s = v->static_shape()) t.shapes[v->name] = *s;
    else if (!reasons)
      fail(HETERO_NOT_SUPPORTED, "input '" + v->name + "' has no static shape; give its shape when reading the model");
  }
  for (const core::Value* v : graph.outputs) t.outputs.push_back(v->name);

  for (const auto& node : graph.nodes()) {
    const size_t before = t.primitives.size();
    try {
      add_node(t, b, *node, 0, Context{graph, choices, reasons != nullptr});
    } catch (const Failure& e) {
      b.take_pending();
      t.primitives.resize(before);  // what an If's branch added before it failed
      forget_outputs(t, *node);
      b.set_graph(graph);
      if (!reasons) fail_at(*node, e.status(), e.what());
      (*reasons)[node->index] = e.what();
    }
  }
  // Host arithmetic serves the conditions of Ifs that run here, and only
  // those: a value it computes cannot leave as an output (compile), and a
  // query says so for each node whose result goes elsewhere.
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    const core::Node& n = **it;
    for (const core::Value* o : n.outputs) {
      const Failure* why = o ? b.host_only(o->name) : nullptr;
      if (!why || (reasons && !(*reasons)[n.index].empty())) continue;
      bool served = std::find(graph.outputs.begin(), graph.outputs.end(), o) == graph.outputs.end();
      for (const core::Use& use : o->uses) {
        const core::Node& u = *use.node;
        const core::Node* top = top_level_of(u, graph);
        served = served && top && (!reasons || (*reasons)[top->index].empty()) &&
                 ((u.op_type == "If" && use.input_index == 0) ||
                  std::any_of(u.outputs.begin(), u.outputs.end(),
                              [&](const core::Value* x) { return x && b.is_host_value(x->name); }));
      }
      if (served) continue;
      // The GPU could not compute it, for the reason it gave then.
      const std::string reason = std::string(why->what()) +
                                 " (the host works it out, but only for the conditions of Ifs that run here)";
      if (!reasons) fail_at(n, why->status(), reason);
      (*reasons)[n.index] = reason;
    }
  }
  // A DequantizeLinear of a folded QuantizeLinear is a view of its float
  // values: its readers read those directly, so that the post-op fusion
  // goes on through the pair (a Conv, its rounding, then the Add after it).
  std::map<std::string, std::string> same;
  std::erase_if(t.primitives, [&](const Primitive& p) {
    if (p.kind != PrimKind::View || p.op != "DequantizeLinear" ||
        std::find(t.outputs.begin(), t.outputs.end(), p.output) != t.outputs.end())
      return false;
    const auto it = same.find(p.inputs[0]);
    same[p.output] = it == same.end() ? p.inputs[0] : it->second;
    return true;
  });
  for (Primitive& p : t.primitives)
    for (std::string& in : p.inputs)
      if (auto it = same.find(in); it != same.end()) in = it->second;
  return t;
}

}  // namespace hetero::gpu
