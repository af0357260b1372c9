// Kernel selection: for each program node, the kernel template it runs, the
// #defines that instantiate it (shapes and attributes as compile-time
// constants, the fused post-ops as a macro), and its launches. Identical
// instantiations share one kernel, named by a hash of their code.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/sha256.h"
#include "drivers/gpu/kernel_sources.h"
#include "drivers/gpu/program.h"

namespace hetero::gpu {

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

std::string flt(float f) {
  if (std::isnan(f)) return "NAN";
  if (std::isinf(f)) return f > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
  return std::string("(") + buf + ")";
}

// The expression of unary op `op` on `v`, of type `from`, giving type `to`:
// float32 for every op but Cast, Not (bool) and Abs and Neg of integers
// (topology.cpp checks the types).
std::string unary_expr(const std::string& op, float a, float b, const std::string& v,
                       core::DType from = core::DType::F32, core::DType to = core::DType::F32) {
  if (op == "Cast") return to == core::DType::Bool ? "(" + v + " != 0)" : "((TY)" + v + ")";
  if (op == "Not") return "(!" + v + ")";
  if (op == "Abs" && from != core::DType::F32) return "(" + v + " < 0 ? -" + v + " : " + v + ")";
  if (op == "Relu") return "fmax(" + v + ", 0.0f)";
  if (op == "LeakyRelu") return "(" + v + " >= 0.0f ? " + v + " : " + v + " * " + flt(a) + ")";
  if (op == "HardSigmoid") return "clamp(" + flt(a) + " * " + v + " + " + flt(b) + ", 0.0f, 1.0f)";
  if (op == "HardSwish") return "(" + v + " * clamp(" + v + " / 6.0f + 0.5f, 0.0f, 1.0f))";
  if (op == "Sigmoid") return "(1.0f / (1.0f + exp(-" + v + ")))";
  if (op == "Tanh") return "tanh(" + v + ")";
  if (op == "Exp") return "exp(" + v + ")";
  if (op == "Log") return "log(" + v + ")";
  if (op == "Abs") return "fabs(" + v + ")";
  if (op == "Neg") return "(-" + v + ")";
  if (op == "Sqrt") return "sqrt(" + v + ")";
  if (op == "Reciprocal") return "(1.0f / " + v + ")";
  if (op == "Floor") return "floor(" + v + ")";
  if (op == "Ceil") return "ceil(" + v + ")";
  if (op == "Elu") return "(" + v + " >= 0.0f ? " + v + " : " + flt(a) + " * (exp(" + v + ") - 1.0f))";
  if (op == "Softplus") return "(" + v + " > 20.0f ? " + v + " : log1p(exp(" + v + ")))";
  if (op == "Erf") return "erf(" + v + ")";
  if (op == "Sin") return "sin(" + v + ")";
  if (op == "Cos") return "cos(" + v + ")";
  if (op == "Clip") return "fmin(fmax(" + v + ", " + flt(a) + "), " + flt(b) + ")";
  if (op == "Identity") return v;
  if (op == "QuantizeDequantizeUint8" || op == "QuantizeDequantizeInt8") {
    // (saturate(round(v / scale) + zp) - zp) * scale, with the zero point
    // moved into the bounds, which are whole numbers: so clamping before
    // rounding gives the same. Rounding half to even, as ONNX does, by
    // adding and taking away 1.5 * 2^23 (exact for |x| < 2^22 in IEEE
    // arithmetic, which the kernels are built with): PoCL's rint() is a
    // call per element, which made int8 PP-OCR cls 2.5 times slower.
    const float lo = op == "QuantizeDequantizeUint8" ? 0.0f : -128.0f, hi = lo + 255.0f;
    return "(((clamp(" + v + " / " + flt(a) + ", " + flt(lo - b) + ", " + flt(hi - b) +
           ") + 12582912.0f) - 12582912.0f) * " + flt(a) + ")";
  }
  fail(HETERO_INTERNAL, "no GPU expression for unary op " + op);
}

// The expression of binary op `op` on `a` and `b`, both of type `t`
// (topology.cpp checks the types): float32, or int32 and int64 for the
// arithmetic; comparisons and logic give bool.
std::string binary_expr(const std::string& op, const std::string& a, const std::string& b,
                        core::DType t = core::DType::F32) {
  const bool integer = t != core::DType::F32;
  if (op == "Equal") return "(" + a + " == " + b + ")";
  if (op == "Less") return "(" + a + " < " + b + ")";
  if (op == "Greater") return "(" + a + " > " + b + ")";
  if (op == "LessOrEqual") return "(" + a + " <= " + b + ")";
  if (op == "GreaterOrEqual") return "(" + a + " >= " + b + ")";
  if (op == "And") return "(" + a + " && " + b + ")";
  if (op == "Or") return "(" + a + " || " + b + ")";
  if (op == "Xor") return "((" + a + " != 0) != (" + b + " != 0))";
  if (op == "Add") return "(" + a + " + " + b + ")";
  if (op == "Sub") return "(" + a + " - " + b + ")";
  if (op == "Mul") return "(" + a + " * " + b + ")";
  // An integer divisor is a constant without zeros; -1 is a negation, so
  // that the smallest value divided by it wraps instead of trapping.
  if (op == "Div") return integer ? "(" + b + " == -1 ? -" + a + " : " + a + " / " + b + ")" : "(" + a + " / " + b + ")";
  if (op == "Pow" && !integer) return "act_pow(" + a + ", " + b + ")";
  if (op == "Max") return (integer ? "max(" : "fmax(") + a + ", " + b + ")";
  if (op == "Min") return (integer ? "min(" : "fmin(") + a + ", " + b + ")";
  fail(HETERO_INTERNAL, "no GPU expression for binary op " + op + " of " + core::dtype_name(t));
}

std::vector<int64_t> contiguous_strides(const core::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Strides of `in` broadcast to `out` (right-aligned; 0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const core::Shape& out, const core::Shape& in) {
  std::vector<int64_t> st(out.size(), 0);
  const auto cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[d + off] = in[d] == 1 ? 0 : cs[d];
  return st;
}

// Code that splits index `var` over `dims` (row-major) and adds each
// coordinate times its stride to each named offset.
std::string index_code(const std::string& var, const core::Shape& dims,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& offsets) {
  // An offset whose strides are the row-major ones of `dims` (an operand
  // of the output's own shape) is the index itself: no division for it.
  const auto row_major = contiguous_strides(dims);
  std::string direct;
  std::vector<std::pair<std::string, std::vector<int64_t>>> split;
  for (const auto& [name, st] : offsets) {
    bool same = true;
    for (size_t d = 0; d < dims.size() && same; ++d) same = dims[d] == 1 || st[d] == row_major[d];
    if (same) direct += name + " += " + var + "; ";
    else split.emplace_back(name, st);
  }
  if (split.empty()) return direct;
  std::string c = direct + "{ size_t t_ = " + var + "; size_t i_; ";
  for (size_t d = dims.size(); d-- > 0;) {
    bool used = false;
    for (const auto& [name, st] : split) used = used || st[d] != 0;
    if (!used) {
      if (d > 0) c += "t_ /= " + std::to_string(dims[d]) + "UL; ";
      continue;
    }
    c += "i_ = t_ % " + std::to_string(dims[d]) + "UL; t_ /= " + std::to_string(dims[d]) + "UL; ";
    for (const auto& [name, st] : split)
      if (st[d] != 0) c += name + " += i_ * " + std::to_string(st[d]) + "UL; ";
  }
  return c + "(void)t_; (void)i_; }";
}

// A work-group size for a tiled launch whose variant leaves it open, giving
// at least `min_groups` groups where the launch has that many work items:
// the launch's size, divided along one dimension at a time by that
// dimension's smallest factor (the smallest factors first, so as not to
// overshoot the target by much) until there are enough groups and a group
// fits max_wg. Every dimension divides the launch's, so no work item falls
// outside it. All zeros (the runtime chooses) when min_groups is 0.
std::array<size_t, 3> open_local_size(const std::array<size_t, 3>& global, size_t max_wg, size_t min_groups) {
  if (min_groups == 0) return {0, 0, 0};
  auto smallest_factor = [](size_t n) {
    for (size_t f = 2; f * f <= n; ++f)
      if (n % f == 0) return f;
    return n;
  };
  std::array<size_t, 3> local = global;
  auto groups = [&] { return (global[0] / local[0]) * (global[1] / local[1]) * (global[2] / local[2]); };
  while (groups() < min_groups || local[0] * local[1] * local[2] > max_wg) {
    int split = -1;
    for (int d = 0; d < 3; ++d) {
      if (local[d] == 1) continue;
      if (split < 0 || smallest_factor(local[d]) < smallest_factor(local[split]) ||
          (smallest_factor(local[d]) == smallest_factor(local[split]) && local[d] > local[split]))
        split = d;
    }
    if (split < 0) break;
    local[split] /= smallest_factor(local[split]);
  }
  return local;
}

struct Selector {
  ProgramGraph& g;
  size_t max_wg;
  size_t min_groups;
  std::map<std::string, std::string> codes;

  const core::Shape& shape(const std::string& v) const { return g.shapes.at(v); }

  // A 1-D launch of `total` work items in groups of 64; on a CPU device
  // (min_groups set) larger groups where there are enough items, up to 1024
  // while there are still min_groups of them: PoCL pays for each group it
  // schedules (PP-OCR det's upsampling had 38400 groups of 64).
  Range range(size_t total) const {
    Range r;
    size_t lws = 64;
    if (min_groups)
      while (lws < 1024 && total / (2 * lws) >= min_groups) lws *= 2;
    lws = std::min(lws, std::max<size_t>(1, max_wg));
    r.local[0] = lws;
    r.global[0] = (total + lws - 1) / lws * lws;
    return r;
  }

  // A 3-D launch of a tiled template: `global` work items rounded up to the
  // variant's work-group size, or split by open_local_size() when the
  // variant leaves it open.
  Range tiled_range(const KernelVariant& v, const std::array<int64_t, 3>& global) const {
    Range r;
    r.dims = 3;
    const bool local = v.local[0] && v.local[1] && v.local[2];
    for (size_t i = 0; i < 3; ++i) {
      const size_t l = local ? v.local[i] : 1;
      r.global[i] = (static_cast<size_t>(std::max<int64_t>(1, global[i])) + l - 1) / l * l;
      r.local[i] = local ? l : 0;
    }
    if (!local) r.local = open_local_size(r.global, max_wg, min_groups);
    return r;
  }
  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
  // VW (and VW2, twice it), and the template's names for rows and cols.
  static void tile_defines(Defines& d, const KernelVariant& v, const char* rows, const char* cols) {
    d.insert(d.end(), {{"VW", std::to_string(v.vw)}, {"VW2", std::to_string(2 * v.vw)},
                       {rows, std::to_string(v.rows)}, {cols, std::to_string(v.cols)}});
  }

  // Optional input `i` of `p` (absent: an empty name) as the template's
  // MACRO_ARG, its argument or nothing, and MACRO`params`, how a value is
  // read (`value`, which reads argument `name`) or 0.0f, the ONNX default
  // of the optional inputs the templates take (biases, initial states).
  static void optional_input(const Primitive& p, size_t i, const std::string& macro, const std::string& name,
                             const std::string& params, const std::string& value, Defines& d,
                             std::vector<std::string>& args) {
    const bool has = !p.inputs[i].empty();
    d.emplace_back(macro + "_ARG", has ? ", __global const float* " + name : "");
    d.emplace_back(macro + params, has ? value : "0.0f");
    if (has) args.push_back(p.inputs[i]);
  }

  // Instantiates `tmpl` with `defines`; returns the kernel's name.
  std::string instantiate(const std::string& tmpl, Defines defines) {
    std::string body;
    for (const auto& [k, v] : defines) body += "#define " + k + " " + v + "\n";
    body += kernel_source(tmpl);
    for (const auto& [k, v] : defines) body += "#undef " + k.substr(0, k.find('(')) + "\n";
    body += "#undef KERNEL_NAME\n";
    const std::string name = "k_" + core::to_hex(core::sha256(std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()))).substr(0, 16);
    codes.emplace(name, "#define KERNEL_NAME " + name + "\n" + body);
    return name;
  }

  // POST_OPS(v, o) and POST_ARGS for `n`'s fused ops (v: the value of
  // output element o); appends their tensors to args. With `vector_row`, also
  // VPOST_OPS(v, o) for a vector v of VW consecutive elements o, o + 1, ...
  // that lie in one block of vector_row elements (a row, a plane), unless an
  // op has no vector form (Pow) or an operand varies inside such a block
  // other than along the output's last axis.
  void post_ops(const ProgramNode& n, Defines& d, std::vector<std::string>& args, int64_t vector_row = 0) {
    bool vectors = vector_row > 0;
    const core::Shape& out = shape(n.prim.output);
    std::string code, vcode, decl;
    int p = 0;
    for (const PostOp& op : n.post_ops) {
      if (op.kind == PostOp::Kind::Unary) {
        code += "v = " + unary_expr(op.op, op.alpha, op.beta, "(v)") + "; ";
        vcode += "v = " + unary_expr(op.op, op.alpha, op.beta, "(v)") + "; ";
        continue;
      }
      vectors = vectors && op.op != "Pow";
      // (Built in two steps: GCC 12 warns falsely on "p" + std::string here, bug 105651.)
      std::string name = "p";
      name += std::to_string(p++);
      decl += ", __global const float* " + name;
      args.push_back(op.tensor);
      const core::Shape& t = shape(op.tensor);
      // The element of the operand for output element o: the same index, the
      // one element, or the index along the one axis it varies on. A vector
      // of a row reads consecutive elements in the first and last cases, and
      // one element for all lanes in the others.
      std::string idx;
      bool consecutive = false;
      if (t == out) {
        idx = "(o)";
        consecutive = true;
      } else if (core::shape_numel(t) == 1) {
        idx = "0";
      } else {
        const size_t off = out.size() - t.size();
        size_t axis = 0;
        for (size_t k = 0; k < t.size(); ++k)
          if (t[k] != 1) axis = k + off;
        int64_t inner = 1;
        for (size_t k = axis + 1; k < out.size(); ++k) inner *= out[k];
        idx = "(((o) / " + std::to_string(inner) + "UL) % " + std::to_string(out[axis]) + "UL)";
        consecutive = axis + 1 == out.size();
        if (inner % std::max<int64_t>(1, vector_row) != 0 && !(consecutive && vector_row == out.back())) vectors = false;
      }
      const std::string tv = name + "[" + idx + "]";
      const std::string vv = consecutive ? "VLOADF(VW)(0, " + name + " + " + idx + ")" : tv;
      code += "v = " + (op.tensor_first ? binary_expr(op.op, tv, "(v)") : binary_expr(op.op, "(v)", tv)) + "; ";
      vcode += "v = " + (op.tensor_first ? binary_expr(op.op, vv, "(v)") : binary_expr(op.op, "(v)", vv)) + "; ";
    }
    d.emplace_back("POST_OPS(v, o)", "do { " + code + "} while (0)");
    if (vectors) d.emplace_back("VPOST_OPS(v, o)", "do { " + vcode + "} while (0)");
    d.emplace_back("POST_ARGS", decl);
  }

  // A node the device's GEMM library computes: the library call, then (for
  // a bias or post-ops) an elementwise kernel over its product.
  void select_library(ProgramNode& n) {
    const Primitive& p = n.prim;
    const core::Shape& out = shape(p.output);
    const bool conv = p.kind == PrimKind::Conv;
    std::vector<PostOp> epilogue = n.post_ops;
    if (conv && !p.inputs[2].empty()) {
      // The bias shaped [OC, 1, ...] so that it broadcasts along the channels.
      const std::string bias = p.inputs[2] + "/channels";
      if (!g.constants.count(bias)) {
        core::Shape s(out.size() - 1, 1);
        s[0] = out[1];
        g.constants[bias] = g.constants.at(p.inputs[2]).reshaped(s);
        g.shapes[bias] = s;
      }
      epilogue.insert(epilogue.begin(), PostOp{PostOp::Kind::Binary, "Add", 0, 0, bias, false});
    }
    const std::string product = epilogue.empty() ? p.output : p.output + "/library";
    g.shapes[product] = out;
    Launch call;
    call.args = {p.inputs[conv ? 1 : 0], p.inputs[conv ? 0 : 1], product};
    call.output_arg = 2;
    call.gemm = library_gemm_of(n, g);
    if (!call.gemm) fail(HETERO_INTERNAL, "node '" + p.id + "' is no library GEMM");
    n.launches.push_back(call);
    if (epilogue.empty()) return;
    ProgramNode after = n;
    after.post_ops = epilogue;
    const size_t total = core::shape_numel(out);
    Defines d{{"TOTAL", std::to_string(total) + "UL"}, {"TX", "float"}, {"TY", "float"}, {"UNARY_OP(v)", "(v)"}};
    std::vector<std::string> args = {product, p.output};
    post_ops(after, d, args);
    n.launches.push_back({instantiate("unary", d), args, 1, range(total), {}});
  }

  void select(ProgramNode& n) {
    const Primitive& p = n.prim;
    const core::Shape& out = shape(p.output);
    const size_t total = core::shape_numel(out);
    if (p.kind == PrimKind::View || total == 0) return;
    if (has_variants(n) && n.variant.kind == KernelVariant::Kind::Library) return select_library(n);
    Defines d{{"TOTAL", std::to_string(total) + "UL"}};
    std::vector<std::string> args;
    auto launch = [&](const std::string& tmpl, size_t output_arg, size_t work) {
      n.launches.push_back({instantiate(tmpl, d), args, output_arg, range(work), {}});
    };
    auto launch_tiled = [&](const std::string& tmpl, size_t output_arg, const KernelVariant& v,
                            const std::array<int64_t, 3>& global) {
      n.launches.push_back({instantiate(tmpl, d), args, output_arg, tiled_range(v, global), {}});
    };
    switch (p.kind) {
      case PrimKind::Unary: {
        const core::DType from = g.dtype(p.inputs[0]), to = g.dtype(p.output);
        d.emplace_back("TX", device_ctype(from));
        d.emplace_back("TY", device_ctype(to));
        d.emplace_back("UNARY_OP(v)", unary_expr(p.op, p.attrs.alpha, p.attrs.beta, "(v)", from, to));
        args = {p.inputs[0], p.output};
        post_ops(n, d, args);
        launch("unary", 1, total);
        break;
      }
      case PrimKind::Binary: {
        const core::DType operands = g.dtype(p.inputs[0]);
        d.emplace_back("TA", device_ctype(operands));
        d.emplace_back("TY", device_ctype(g.dtype(p.output)));
        d.emplace_back("BINARY_OP(a, b)", binary_expr(p.op, "(a)", "(b)", operands));
        d.emplace_back("INDEX_AB", index_code("o", out, {{"ia", broadcast_strides(out, shape(p.inputs[0]))},
                                                         {"ib", broadcast_strides(out, shape(p.inputs[1]))}}));
        args = {p.inputs[0], p.inputs[1], p.output};
        post_ops(n, d, args);
        launch("binary", 2, total);
        break;
      }
      case PrimKind::Conv: {
        const ConvGeometry c = conv_geometry(n, g);
        auto num = [](int64_t v) { return std::to_string(v); };
        d.insert(d.end(), {{"NB", num(c.n)}, {"OC", num(c.oc)}, {"OH", num(c.oh)}, {"OW", num(c.ow)},
                           {"IC", num(c.ic)}, {"IH", num(c.ih)}, {"IW", num(c.iw)}, {"OCG", num(c.ocg)},
                           {"ICG", num(c.icg)}, {"KH", num(c.kh)}, {"KW", num(c.kw)}, {"SH", num(c.sh)},
                           {"SW", num(c.sw)}, {"DH", num(c.dh)}, {"DW", num(c.dw)}, {"PH", num(c.ph)},
                           {"PW", num(c.pw)}});
        const bool bias = !p.inputs[2].empty();
        const KernelVariant& v = n.variant;
        d.emplace_back("BIAS_ARG", bias ? ", __global const float* bias" : "");
        d.emplace_back("BIAS_VALUE", !bias ? "0.0f" : v.kind == KernelVariant::Kind::Gemm ? "bias[m]" : "bias[oc]");
        args = {p.inputs[0], p.inputs[1], p.output};
        if (bias) args.push_back(p.inputs[2]);
        if (scales_input(n)) {  // gemm.cl's, [N, IC]: per image (bt) and input channel (k)
          d.insert(d.end(), {{"B_SCALE_ARG", ", __global const float* bscale"}, {"B_SCALE(k)", "bscale[(size_t)bt * K + (k)]"}});
          args.push_back(p.inputs[3]);
        }
        // Spatial tiles lie in one output row, gemm's in one output plane.
        post_ops(n, d, args, v.kind == KernelVariant::Kind::Spatial ? c.ow : v.kind == KernelVariant::Kind::Gemm ? c.oh * c.ow : 0);
        const int64_t groups = c.ic / c.icg;
        switch (v.kind) {
          case KernelVariant::Kind::Plain:
            launch("conv", 2, total);
            break;
          case KernelVariant::Kind::Spatial:
            tile_defines(d, v, "OCB", "PV");
            launch_tiled("conv_spatial", 2, v, {ceil_div(c.ow, v.vw * v.cols), c.oh, c.n * groups * ceil_div(c.ocg, v.rows)});
            break;
          case KernelVariant::Kind::Channel: {
            tile_defines(d, v, "OCB", "PB");
            const int64_t ocgp = ceil_div(c.ocg, v.vw) * v.vw;
            launch_tiled("conv_channel", 2, v, {ceil_div(c.ow, v.cols), c.oh, c.n * groups * ceil_div(ocgp, v.vw * v.rows)});
            break;
          }
          case KernelVariant::Kind::Library:  // select_library()
            break;
          case KernelVariant::Kind::Gemm:
            // Weights [OC][IC] (gemm.cl's a) times each image [IC][H * W] (its b).
            std::swap(args[0], args[1]);
            d.insert(d.end(), {{"M", num(c.oc)}, {"N", num(c.oh * c.ow)}, {"K", num(c.ic)}, {"BATCH", num(c.n)},
                               {"INDEX_BATCH", "ib = bt;"}});
            tile_defines(d, v, "MB", "NV");
            launch_tiled("gemm", 2, v, {ceil_div(c.oh * c.ow, v.vw * v.cols), ceil_div(c.oc, v.rows), c.n});
            break;
        }
        break;
      }
      case PrimKind::MatMul: {
        const core::Shape& x = shape(p.inputs[0]);
        const core::Shape& y = shape(p.inputs[1]);
        const int64_t M = out[out.size() - 2], N = out.back(), K = x.back();
        const int64_t bk = n.weights_transposed ? y.back() : y[y.size() - 2];
        if (bk != K) fail(HETERO_INVALID_MODEL, "MatMul '" + p.id + "': inner dimensions differ");
        core::Shape batch(out.begin(), out.end() - 2);
        core::Shape xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
        if (batch.empty()) batch = {1};
        d.insert(d.end(), {{"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)},
                           {"B_TRANS", n.weights_transposed ? "1" : "0"},
                           {"BATCH", std::to_string(core::shape_numel(batch))}});
        d.emplace_back("INDEX_BATCH", index_code("bt", batch, {{"ia", broadcast_strides(batch, xb)},
                                                               {"ib", broadcast_strides(batch, yb)}}));
        args = {p.inputs[0], p.inputs[1], p.output};
        post_ops(n, d, args, n.variant.kind == KernelVariant::Kind::Gemm ? N : 0);
        if (n.variant.kind == KernelVariant::Kind::Gemm) {
          if (n.weights_transposed) fail(HETERO_INTERNAL, "MatMul '" + p.id + "': gemm.cl reads b as [K, N]");
          d.emplace_back("BIAS_ARG", "");
          d.emplace_back("BIAS_VALUE", "0.0f");
          tile_defines(d, n.variant, "MB", "NV");
          launch_tiled("gemm", 2, n.variant,
                       {ceil_div(N, n.variant.vw * n.variant.cols), ceil_div(M, n.variant.rows),
                        static_cast<int64_t>(core::shape_numel(batch))});
        } else {
          launch("matmul", 2, total);
        }
        break;
      }
      case PrimKind::Pool: {
        const core::Shape& x = shape(p.inputs[0]);
        const bool two_d = x.size() == 4;
        const auto& a = p.attrs;
        const size_t sp = two_d ? 2 : 1;
        auto at = [&](const std::vector<int64_t>& v, size_t i, int64_t one) { return std::to_string(two_d ? v[i] : (i == 0 ? one : v[0])); };
        d.insert(d.end(), {{"OH", std::to_string(two_d ? out[2] : 1)}, {"OW", std::to_string(out.back())},
                           {"IH", std::to_string(two_d ? x[2] : 1)}, {"IW", std::to_string(x.back())},
                           {"KH", at(a.kernel, 0, 1)}, {"KW", at(a.kernel, 1, 1)},
                           {"SH", at(a.strides, 0, 1)}, {"SW", at(a.strides, 1, 1)},
                           {"DH", at(a.dilations, 0, 1)}, {"DW", at(a.dilations, 1, 1)},
                           {"PH", two_d ? std::to_string(a.pads[0]) : "0"}, {"PW", std::to_string(a.pads[sp - 1])},
                           {"PH_END", two_d ? std::to_string(a.pads[2]) : "0"}, {"PW_END", std::to_string(a.pads[2 * sp - 1])},
                           {"POOL_MAX", p.op.find("Max") != std::string::npos ? "1" : "0"},
                           {"COUNT_PAD", a.count_include_pad ? "1" : "0"}});
        args = {p.inputs[0], p.output};
        post_ops(n, d, args);
        launch("pool", 1, total);
        break;
      }
      case PrimKind::Softmax: {
        const core::Shape& x = shape(p.inputs[0]);
        int64_t outer = 1, axis = 1, inner = 1;
        for (size_t k = 0; k < x.size(); ++k) {
          const auto kk = static_cast<int64_t>(k);
          if (kk < p.attrs.axis) outer *= x[k];
          else if (kk == p.attrs.axis || p.attrs.softmax_flatten) axis *= x[k];
          else inner *= x[k];
        }
        d.insert(d.end(), {{"OUTER", std::to_string(outer)}, {"AXIS", std::to_string(axis)}, {"INNER", std::to_string(inner)}});
        args = {p.inputs[0], p.output};
        launch("softmax", 1, static_cast<size_t>(outer * inner));
        break;
      }
      case PrimKind::Reduce: {
        const core::Shape& x = shape(p.inputs[0]);
        const auto st = contiguous_strides(x);
        core::Shape keep = x, red;
        std::vector<int64_t> keep_st = st, red_st;
        for (int64_t ax : p.attrs.axes) {
          keep[size_t(ax)] = 1;
          keep_st[size_t(ax)] = 0;
          red.push_back(x[size_t(ax)]);
          red_st.push_back(st[size_t(ax)]);
        }
        size_t rcount = core::shape_numel(red);
        const std::string& op = p.op;
        d.insert(d.end(), {{"RCOUNT", std::to_string(rcount) + "UL"},
                           {"RED_INIT", op == "ReduceMax" ? "(-INFINITY)" : op == "ReduceMin" ? "INFINITY" : "0.0f"},
                           {"RED_OP(a, v)", op == "ReduceMax" ? "fmax(a, v)" : op == "ReduceMin" ? "fmin(a, v)" : "((a) + (v))"},
                           {"RED_FINAL(a)", op == "ReduceMean" ? "((a) / (float)" + std::to_string(rcount) + ")" : "(a)"},
                           {"INDEX_KEEP", index_code("o", keep, {{"base", keep_st}})},
                           {"INDEX_RED", red.empty() ? "" : index_code("r", red, {{"off", red_st}})}});
        args = {p.inputs[0], p.output};
        post_ops(n, d, args);
        launch("reduce", 1, total);
        break;
      }
      case PrimKind::Transpose: {
        // Output dim i walks input axis perm[i]; a Slice starts each input
        // axis at starts[ax] and steps by steps[ax] (negative strides wrap
        // in size_t and come back in range, as unsigned arithmetic does).
        const core::Shape& x = shape(p.inputs[0]);
        const auto st = contiguous_strides(x);
        const auto& a = p.attrs;
        std::vector<int64_t> perm_st;
        for (int64_t ax : a.perm) perm_st.push_back(st[size_t(ax)] * (a.steps.empty() ? 1 : a.steps[size_t(ax)]));
        int64_t base = 0;
        for (size_t ax = 0; ax < a.starts.size(); ++ax) base += a.starts[ax] * st[ax];
        // A stride of 0 would drop the term; a dim of 1 contributes nothing anyway.
        const core::Shape& walk = a.walk.empty() ? out : a.walk;
        d.emplace_back("INDEX_IN", "ix = " + std::to_string(base) + "UL; " + index_code("o", walk, {{"ix", perm_st}}));
        d.emplace_back("T", device_ctype(g.dtype(p.output)));
        args = {p.inputs[0], p.output};
        post_ops(n, d, args);
        launch("transpose", 1, total);
        break;
      }
      case PrimKind::SqueezeExcite: {
        const core::Shape& x = shape(p.inputs[0]);
        const int64_t c = x[1], ch = shape(p.inputs[1])[0], c2 = out[1];
        const size_t hw = core::shape_numel(x) / static_cast<size_t>(x[0] * c);
        // A work item per channel, up to 256 (or the device's limit).
        size_t lws = 1;
        while (lws < static_cast<size_t>(std::max({c, ch, c2})) && lws * 2 <= std::min<size_t>(256, max_wg)) lws *= 2;
        std::string hidden;
        for (const PostOp& op : n.hidden_ops) hidden += "v = " + unary_expr(op.op, op.alpha, op.beta, "(v)") + "; ";
        d.insert(d.end(), {{"C", std::to_string(c)}, {"CH", std::to_string(ch)}, {"C2", std::to_string(c2)},
                           {"HW", std::to_string(hw)}, {"LWS", std::to_string(lws)},
                           {"HIDDEN_OPS(v)", "do { " + hidden + "} while (0)"}});
        args = {p.inputs[0], p.inputs[1], p.inputs[3], p.output};
        optional_input(p, 2, "B1", "b1", "_VALUE(i)", "b1[i]", d, args);
        optional_input(p, 4, "B2", "b2", "_VALUE(i)", "b2[i]", d, args);
        post_ops(n, d, args);
        Range r;
        r.global[0] = static_cast<size_t>(x[0]) * lws;
        r.local[0] = lws;
        n.launches.push_back({instantiate("squeeze_excite", d), args, 3, r, {}});
        break;
      }
      case PrimKind::Expand:  // a copy whose broadcast axes have stride 0
        d.emplace_back("INDEX_IN", index_code("o", out, {{"ix", broadcast_strides(out, shape(p.inputs[0]))}}));
        d.emplace_back("T", device_ctype(g.dtype(p.output)));
        args = {p.inputs[0], p.output};
        post_ops(n, d, args);  // none: defines the template's empty POST_OPS
        launch("transpose", 1, total);
        break;
      case PrimKind::Where:
        d.emplace_back("INDEX_CAB", index_code("o", out, {{"ic", broadcast_strides(out, shape(p.inputs[0]))},
                                                          {"ia", broadcast_strides(out, shape(p.inputs[1]))},
                                                          {"ib", broadcast_strides(out, shape(p.inputs[2]))}}));
        d.emplace_back("T", device_ctype(g.dtype(p.output)));
        args = {p.inputs[0], p.inputs[1], p.inputs[2], p.output};
        launch("where", 3, total);
        break;
      case PrimKind::Concat: {
        const auto axis = static_cast<size_t>(p.attrs.axis);
        int64_t inner = 1, offset = 0;
        for (size_t k = axis + 1; k < out.size(); ++k) inner *= out[k];
        for (const std::string& in : p.inputs) {
          const core::Shape& s = shape(in);
          const size_t count = core::shape_numel(s);
          if (count) {
            d = {{"TOTAL", std::to_string(count) + "UL"}, {"T", device_ctype(g.dtype(p.output))},
                 {"A_IN", std::to_string(s[axis])},
                 {"A_OUT", std::to_string(out[axis])}, {"INNER", std::to_string(inner)},
                 {"OFFSET", std::to_string(offset)}};
            args = {in, p.output};
            launch("concat", 1, count);
          }
          offset += s[axis];
        }
        break;
      }
      case PrimKind::ConvTranspose: {
        // The same geometry as a convolution's (1-D as H = 1), read the
        // other way: OC, OH, OW are its output's, as the kernel computes.
        const ConvGeometry c = conv_geometry(n, g);
        auto num = [](int64_t v) { return std::to_string(v); };
        d.insert(d.end(), {{"OC", num(c.oc)}, {"OH", num(c.oh)}, {"OW", num(c.ow)}, {"IC", num(c.ic)},
                           {"IH", num(c.ih)}, {"IW", num(c.iw)}, {"OCG", num(c.ocg)}, {"ICG", num(c.icg)},
                           {"KH", num(c.kh)}, {"KW", num(c.kw)}, {"SH", num(c.sh)}, {"SW", num(c.sw)},
                           {"DH", num(c.dh)}, {"DW", num(c.dw)}, {"PH", num(c.ph)}, {"PW", num(c.pw)}});
        const bool bias = !p.inputs[2].empty();
        d.emplace_back("BIAS_ARG", bias ? ", __global const float* bias" : "");
        d.emplace_back("BIAS_VALUE", bias ? "bias[oc]" : "0.0f");
        args = {p.inputs[0], p.inputs[1], p.output};
        if (bias) args.push_back(p.inputs[2]);
        post_ops(n, d, args);
        launch("conv_transpose", 2, total);
        break;
      }
      case PrimKind::Resize:
        select_resize(n, d, args);
        launch("resize", 2, total);
        break;
      case PrimKind::Pad: {
        // Per output axis, the coordinate it reads: shifted by the pad
        // before it, then kept (constant: or marked outside), clamped
        // (edge) or mirrored (reflect: pads shorter than the axis).
        const core::Shape& x = shape(p.inputs[0]);
        const auto st = contiguous_strides(x);
        const std::string& mode = p.attrs.pad_mode;
        std::string code = "{ size_t t_ = o; long c_; ";
        for (size_t ax = out.size(); ax-- > 0;) {
          const std::string dim = std::to_string(out[ax]) + "UL", n = std::to_string(x[ax]) + "L";
          code += "c_ = (long)(t_ % " + dim + ") - (" + std::to_string(p.attrs.pads[ax]) + "L); t_ /= " + dim + "; ";
          if (mode == "constant") code += "if (c_ < 0 || c_ >= " + n + ") inside = 0; ";
          else if (mode == "edge") code += "c_ = clamp(c_, 0L, " + n + " - 1); ";
          else code += "if (c_ < 0) c_ = -c_; if (c_ >= " + n + ") c_ = 2 * (" + n + " - 1) - c_; ";
          code += "ix += (size_t)c_ * " + std::to_string(st[ax]) + "UL; ";
        }
        d.emplace_back("PAD_INDEX", code + "(void)t_; }");
        d.emplace_back("PAD_VALUE", flt(p.attrs.alpha));
        args = {p.inputs[0], p.output};
        launch("pad", 1, total);
        break;
      }
      case PrimKind::Gather: {
        const core::Shape& x = shape(p.inputs[0]);
        const auto axis = static_cast<size_t>(p.attrs.axis);
        int64_t inner = 1;
        for (size_t k = axis + 1; k < x.size(); ++k) inner *= x[k];
        const size_t nidx = core::shape_numel(shape(p.inputs[1]));  // the index table
        d.insert(d.end(), {{"T", device_ctype(g.dtype(p.output))}, {"AXIS", std::to_string(x[axis])}, {"NIDX", std::to_string(nidx)},
                           {"INNER", std::to_string(inner)}});
        args = {p.inputs[0], p.inputs[1], p.output};
        launch("gather", 2, total);
        break;
      }
      case PrimKind::Lstm:
        select_lstm(n, d, args);
        break;
      case PrimKind::View:
        break;
    }
  }

  // LSTM: one work group of a work item per (direction, batch row, hidden
  // unit), every time step in the one launch (kernels/lstm.cl).
  void select_lstm(ProgramNode& n, Defines& d, std::vector<std::string>& args) {
    const Primitive& p = n.prim;
    const core::Shape& x = shape(p.inputs[0]);
    const int64_t dirs = p.attrs.direction == "bidirectional" ? 2 : 1, hid = p.attrs.hidden;
    const auto items = static_cast<size_t>(dirs * x[1] * hid);
    if (items > max_wg)
      fail(HETERO_NOT_SUPPORTED, "node '" + p.id + "': LSTM needs one work group of " + std::to_string(items) +
                                     " work items (directions x batch x hidden), the device's largest is " +
                                     std::to_string(max_wg));
    auto num = [](int64_t v) { return std::to_string(v); };
    const std::string state = "(((d) * " + num(x[1]) + " + (b)) * " + num(hid) + " + (j))";
    d = {{"SEQ", num(x[0])}, {"NDIR", num(dirs)}, {"BATCH", num(x[1])}, {"HID", num(hid)}, {"INP", num(x[2])},
         {"REVERSE(d)", p.attrs.direction == "reverse" ? "1" : p.attrs.direction == "bidirectional" ? "((d) == 1)" : "0"}};
    args = {p.inputs[0], p.inputs[1], p.inputs[2], p.output};
    auto optional = [&](size_t i, const std::string& macro, const std::string& name, const std::string& params,
                        const std::string& value) { optional_input(p, i, macro, name, params, value, d, args); };
    optional(3, "BIAS", "bias", "(d, r)",
             "(bias[(d) * " + num(8 * hid) + " + (r)] + bias[(d) * " + num(8 * hid) + " + " + num(4 * hid) + " + (r)])");
    optional(4, "H0", "h0", "(d, b, j)", "h0[" + state + "]");
    optional(5, "C0", "c0", "(d, b, j)", "c0[" + state + "]");
    optional(6, "PEEP", "peep", "(d, g, j)", "peep[(d) * " + num(3 * hid) + " + (g) * " + num(hid) + " + (j)]");
    Range r;
    r.global[0] = r.local[0] = items;
    r.local[1] = r.local[2] = 1;
    n.launches.push_back({instantiate("lstm", d), args, 3, r, {}});
  }

  // Resize: the source of every output coordinate along each resized axis is
  // worked out here, in double precision as ONNX's reference does, into one
  // table the kernel reads: per output coordinate the lower and upper
  // neighbours and the upper one's weight (nearest: the neighbour, weight 0).
  // A kernel in float could round a coordinate that lies on .5 the other way.
  void select_resize(const ProgramNode& n, Defines& d, std::vector<std::string>& args) {
    const Primitive& p = n.prim;
    const PrimAttrs& a = p.attrs;
    const core::Shape& x = shape(p.inputs[0]);
    const core::Shape& y = shape(p.output);
    const auto in_st = contiguous_strides(x);
    const bool linear = a.resize_mode == "linear";
    std::vector<float> table;
    // (Not a block: the neighbours' offsets and weights are RESIZE_VALUE's.)
    std::string index = "size_t t_ = o; size_t i_; ";
    std::vector<std::string> taps;  // per interpolated axis k: its lo_k, hi_k, w_k
    for (size_t ax = y.size(); ax-- > 0;) {
      const std::string dim = std::to_string(y[ax]) + "UL";
      index += "i_ = t_ % " + dim + "; t_ /= " + dim + "; ";
      if (x[ax] == y[ax] && a.scales[ax] == 1.0) {
        index += "base += i_ * " + std::to_string(in_st[ax]) + "UL; ";
        continue;
      }
      if (!linear && y[ax] % x[ax] == 0) {
        // Nearest by a whole factor f whose every source is o / f (what
        // detectors' x2 upsampling comes to in every coordinate mode they
        // use): the division, which the compiler turns into a shift or a
        // multiply, instead of a table read per element and axis.
        const int64_t f = y[ax] / x[ax];
        bool whole = true;
        for (int64_t o = 0; o < y[ax] && whole; ++o) {
          const double c = source_coordinate(a, static_cast<double>(o), a.scales[ax], x[ax], y[ax]);
          whole = std::min<double>(std::max<double>(nearest(a.nearest_mode, c), 0), double(x[ax] - 1)) == double(o / f);
        }
        if (whole) {
          index += "base += (i_ / " + std::to_string(f) + "UL) * " + std::to_string(in_st[ax]) + "UL; ";
          continue;
        }
      }
      const size_t offset = table.size();
      for (int64_t o = 0; o < y[ax]; ++o) {
        const double c = source_coordinate(a, static_cast<double>(o), a.scales[ax], x[ax], y[ax]);
        auto clamp = [&](double v) { return static_cast<float>(std::min<double>(std::max<double>(v, 0), double(x[ax] - 1))); };
        if (!linear) {
          table.insert(table.end(), {clamp(nearest(a.nearest_mode, c)), 0.0f, 0.0f});
        } else {
          const double lo = std::floor(c);
          table.insert(table.end(), {clamp(lo), clamp(lo + 1), static_cast<float>(c - lo)});
        }
      }
      const std::string e = "tab[" + std::to_string(offset) + "UL + 3 * i_ + ";
      const std::string stride = std::to_string(in_st[ax]) + "UL";
      if (!linear) {
        index += "base += (size_t)" + e + "0] * " + stride + "; ";
        continue;
      }
      const std::string k = std::to_string(taps.size());
      index += "const size_t lo" + k + " = (size_t)" + e + "0] * " + stride + ", hi" + k + " = (size_t)" + e + "1] * " +
               stride + "; const float w" + k + " = " + e + "2]; ";
      taps.push_back(k);
    }
    // The value: x at base plus one neighbour offset per interpolated axis,
    // weighted, over every corner.
    std::string value;
    for (size_t corner = 0; corner < (size_t{1} << taps.size()); ++corner) {
      std::string at = "base", weight;
      for (size_t k = 0; k < taps.size(); ++k) {
        const bool hi = (corner >> k) & 1;
        at += std::string(hi ? " + hi" : " + lo") + taps[k];
        weight += std::string(weight.empty() ? "" : " * ") + (hi ? "w" + taps[k] : "(1.0f - w" + taps[k] + ")");
      }
      value += std::string(value.empty() ? "" : " + ") + (weight.empty() ? "" : weight + " * ") + "x[" + at + "]";
    }
    if (table.empty()) table.push_back(0);  // every axis kept: an argument all the same
    const std::string tab = p.output + "/resize_table";
    g.constants[tab] = core::Tensor::allocate(core::DType::F32, {static_cast<int64_t>(table.size())});
    std::copy(table.begin(), table.end(), g.constants[tab].data<float>());
    g.shapes[tab] = {static_cast<int64_t>(table.size())};
    d.emplace_back("RESIZE_INDEX", index + "(void)t_; (void)i_;");
    d.emplace_back("RESIZE_VALUE", value);
    args = {p.inputs[0], tab, p.output};
    post_ops(n, d, args);
  }

  // ONNX's coordinate transformations: where output coordinate `o` lies in
  // the input.
  static double source_coordinate(const PrimAttrs& a, double o, double scale, int64_t in, int64_t out) {
    const std::string& m = a.coordinate_mode;
    if (m == "asymmetric") return o / scale;
    if (m == "align_corners") return out == 1 ? 0.0 : o * double(in - 1) / double(out - 1);
    if (m == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    if (m == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
    return (o + 0.5) / scale - 0.5;  // half_pixel
  }
  static double nearest(const std::string& mode, double c) {
    if (mode == "floor") return std::floor(c);
    if (mode == "ceil") return std::ceil(c);
    if (mode == "round_prefer_ceil") return std::floor(c + 0.5);
    return std::ceil(c - 0.5);  // round_prefer_floor
  }
};

}  // namespace

std::map<std::string, std::string> select_kernels(ProgramGraph& g, size_t max_work_group, size_t min_groups) {
  Selector s{g, max_work_group, min_groups, {}};
  for (ProgramNode& n : g.nodes) s.select(n);
  return std::move(s.codes);
}

std::map<std::string, std::string> select_kernels(ProgramGraph& g, const Device& device) {
  return select_kernels(g, device.max_work_group_size(), min_work_groups(device.traits()));
}

}  // namespace hetero::gpu
