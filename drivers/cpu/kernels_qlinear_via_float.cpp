// 8-bit ops defined as "dequantize, run the float op, quantize", computed
// with the CPU driver's own float kernel so that they give exactly what the
// float simulation of the QDQ graph gives:
//   - elementwise functions of one input (com.microsoft QLinearSigmoid and
//     QLinearLeakyRelu, hetero.cpu QLinearUnary for any such op the int8
//     pass found between a DQ and a Q): the float kernel maps all 256 codes
//     once, and the op is a table lookup; hetero.cpu QLinearTable likewise
//     for a chain of 8-bit nodes of one input (x * relu6(x + 3) / 6);
//   - QLinearAveragePool: the float AveragePool over the dequantised input;
//   - QLinearGlobalAveragePool: integer sums per channel, requantised as
//     ONNX Runtime does (for the reason kernels_qlinear_binary.cpp gives).
#include <omp.h>

#include <algorithm>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/graph_eval.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/quant_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

// Attributes of hetero.cpu QLinear* nodes that are not the float op's.
bool quant_attr(const std::string& name) {
  for (const char* prefix : {"x_", "y_", "float_op"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// A float op run inside a quantised kernel: a copy of the node in a graph
// of its own, float32 input 0, and the node's other inputs (constants).
class FloatOp {
 public:
  FloatOp(const KernelBuild& b, const std::string& op_type, const std::string& domain, int64_t opset,
          std::vector<core::Attribute> attrs, const std::vector<std::optional<Tensor>>& extra_inputs) {
    core::Node* node = graph_.add_node(op_type, b.node.name + "/float");
    node->domain = domain;
    node->opset = opset;
    node->attributes = std::move(attrs);
    core::Value* x = graph_.add_value("x");
    x->dtype = DType::F32;
    graph_.set_input(node, 0, x);
    for (size_t i = 0; i < extra_inputs.size(); ++i) {
      if (!extra_inputs[i]) continue;
      core::Value* v = graph_.add_value("in" + std::to_string(i + 1));
      v->constant = *extra_inputs[i];
      v->dtype = extra_inputs[i]->dtype();
      graph_.set_input(node, i + 1, v);
    }
    core::Value* out = graph_.add_value("out");
    graph_.set_output(node, 0, out);
    graph_.inputs = {x};
    graph_.outputs = {out};
    eval_.emplace(b, graph_);
  }

  Tensor run(const Tensor& x, dnnl::stream& stream, int threads) const {
    Tensor out = eval_->run(x, stream, threads);
    if (out.dtype() != DType::F32) fail(HETERO_NOT_SUPPORTED, "the float op did not produce float32");
    return out;
  }

 private:
  core::Graph graph_;
  std::optional<GraphEval> eval_;
};

// Input x and output y parameters: inputs 1..4 (ORT's form) or attributes.
struct InOut {
  QuantSpec x_spec, y_spec;
  QuantInputs x_in, y_in;
  std::optional<QuantParams> x_attr, y_attr;

  InOut(const KernelBuild& b, bool attrs) {
    if (attrs) {
      x_attr = quant_params_from_attrs(b.node, "x");
      y_attr = quant_params_from_attrs(b.node, "y");
      if (!x_attr->per_tensor() || !y_attr->per_tensor())
        fail(HETERO_INVALID_MODEL, b.node.describe() + ": x and y must be quantised per tensor");
      x_spec = {"x", x_attr->dtype};
      y_spec = {"y", y_attr->dtype};
    } else {
      const DType t = b.input_dtype(0) != DType::Undefined ? b.input_dtype(0) : zero_point_type(b, 2);
      x_spec = {"x", t};
      y_spec = {"y", t};
      x_in = QuantInputs(b, 1, 2, x_spec);
      y_in = QuantInputs(b, 3, 4, y_spec);
    }
    if (x_spec.dtype != DType::U8 && x_spec.dtype != DType::I8)
      fail(HETERO_INVALID_MODEL, b.node.describe() + ": X must be uint8 or int8, got " + core::dtype_name(x_spec.dtype));
  }
  bool constant() const { return (x_attr || x_in.constant()) && (y_attr || y_in.constant()); }
  const QuantParams& x(const KernelRun* r, QuantParams& s) const {
    return x_attr ? *x_attr : x_in.constant() ? *x_in.constant() : x_in.get(*r, x_spec, s);
  }
  const QuantParams& y(const KernelRun* r, QuantParams& s) const {
    return y_attr ? *y_attr : y_in.constant() ? *y_in.constant() : y_in.get(*r, y_spec, s);
  }
};

const Tensor& input_checked(const KernelRun& r, DType dtype) {
  const Tensor* x = r.input(0);
  if (!x || x->dtype() != dtype)
    fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": X must be a " + core::dtype_name(dtype) + " tensor");
  return *x;
}

// y = table[x's byte]: the run of every table-driven op.
void look_up(KernelRun& r, const Tensor& x, const uint8_t* table, Tensor& y) {
  look_up_bytes(r, static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y.raw()), x.numel(), table);
}

// The 256 codes of an 8-bit type, indexed by their byte.
Tensor all_codes(DType dtype) {
  Tensor t = Tensor::allocate(dtype, {256}, false);
  for (int b = 0; b < 256; ++b) static_cast<uint8_t*>(t.raw())[b] = static_cast<uint8_t>(b);
  return t;
}

class TableKernel final : public Kernel {
 public:
  TableKernel(const KernelBuild& b, bool attrs, const std::string& op_type, int64_t opset,
              std::vector<core::Attribute> op_attrs, std::vector<std::optional<Tensor>> extra)
      : io_(b, attrs), op_(b, op_type, "", opset, std::move(op_attrs), extra) {
    if (io_.constant()) {
      dnnl::stream stream(b.engine);
      QuantParams sx, sy;
      table_ = make_table(io_.x(nullptr, sx), io_.y(nullptr, sy), stream, 1);
    }
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor& x = input_checked(r, io_.x_spec.dtype);
    std::vector<uint8_t> run_table;
    if (table_.empty()) {
      QuantParams sx, sy;
      run_table = make_table(io_.x(&r, sx), io_.y(&r, sy), r.stream(), r.threads());
    }
    look_up(r, x, table_.empty() ? run_table.data() : table_.data(), r.output(0, io_.y_spec.dtype, x.shape()));
  }

 private:
  std::vector<uint8_t> make_table(const QuantParams& px, const QuantParams& py, dnnl::stream& stream,
                                  int threads) const {
    const std::vector<float> codes = dequantized_codes(px);
    const Tensor in = Tensor::from_vector(codes, {256});
    const Tensor out = op_.run(in, stream, threads);
    if (out.numel() != 256) fail(HETERO_NOT_SUPPORTED, "the float op is not elementwise");
    return quantize_codes({out.data<float>(), out.data<float>() + 256}, py);
  }

  InOut io_;
  FloatOp op_;
  std::vector<uint8_t> table_;
};

// hetero.cpu QLinearTable: a chain of 8-bit elementwise nodes of one input
// (its attribute `body`, a graph of hetero.cpu QLinear* nodes the int8 pass
// folded together) evaluated once for all 256 codes by those nodes' own
// kernels: one lookup instead of a pass per node, with the same results.
class ChainTableKernel final : public Kernel {
 public:
  explicit ChainTableKernel(const KernelBuild& b) {
    const core::Attribute* body = b.node.attr("body");
    if (!body || !body->g || body->g->inputs.size() != 1 || body->g->outputs.size() != 1)
      fail(HETERO_INVALID_MODEL, b.node.describe() + ": needs a graph attribute 'body' of one input and one output");
    in_ = body->g->inputs[0]->dtype;
    out_ = body->g->outputs[0]->dtype;
    for (DType t : {in_, out_})
      if (t != DType::U8 && t != DType::I8)
        fail(HETERO_INVALID_MODEL, b.node.describe() + ": body input and output must be uint8 or int8");
    const GraphEval eval(b, *body->g);
    dnnl::stream stream(b.engine);
    const Tensor codes = eval.run(all_codes(in_), stream, 1);
    if (codes.numel() != 256 || codes.dtype() != out_)
      fail(HETERO_INVALID_MODEL, b.node.describe() + ": body is not elementwise");
    table_.assign(static_cast<const uint8_t*>(codes.raw()), static_cast<const uint8_t*>(codes.raw()) + 256);
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor& x = input_checked(r, in_);
    look_up(r, x, table_.data(), r.output(0, out_, x.shape()));
  }

 private:
  DType in_ = DType::U8, out_ = DType::U8;
  std::vector<uint8_t> table_;
};

std::vector<core::Attribute> float_op_attrs(const core::Node& node) {
  std::vector<core::Attribute> out;
  for (const core::Attribute& a : node.attributes)
    if (!quant_attr(a.name) && a.name != kChannelsLastAttr) out.push_back(a);
  return out;
}


// QLinearAveragePool: the float AveragePool (channels-last or not) on the
// dequantised input, quantised.
class AveragePoolKernel final : public Kernel {
 public:
  AveragePoolKernel(const KernelBuild& b, bool attrs)
      : io_(b, attrs), op_(b, "AveragePool", b.node.attr_int(kChannelsLastAttr, 0) ? kCpuDomain : "",
                           b.node.attr_int(kChannelsLastAttr, 0) ? 1 : 11, pool_attrs(b.node), {}) {}

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor& x = input_checked(r, io_.x_spec.dtype);
    QuantParams sx, sy;
    const QuantParams &px = io_.x(&r, sx), &py = io_.y(&r, sy);
    Tensor xf = Tensor::wrap(DType::F32, x.shape(), scratch_buffer(Scratch::Extra, x.numel() * sizeof(float)), nullptr);
    if (x.dtype() == DType::U8)
      dequantize_span(x.data<uint8_t>(), xf.data<float>(), x.numel(), px.scale[0], px.zero_point[0]);
    else
      dequantize_span(x.data<int8_t>(), xf.data<float>(), x.numel(), px.scale[0], px.zero_point[0]);
    const Tensor yf = op_.run(xf, r.stream(), r.threads());
    Tensor& y = r.output(0, io_.y_spec.dtype, yf.shape());
    if (y.dtype() == DType::U8)
      quantize_span(yf.data<float>(), y.data<uint8_t>(), y.numel(), py.scale[0], py.zero_point[0]);
    else
      quantize_span(yf.data<float>(), y.data<int8_t>(), y.numel(), py.scale[0], py.zero_point[0]);
  }

 private:
  static std::vector<core::Attribute> pool_attrs(const core::Node& node) {
    std::vector<core::Attribute> out = float_op_attrs(node);
    if (node.attr_int(kChannelsLastAttr, 0)) {
      core::Attribute a;
      a.name = kChannelsLastAttr;
      a.type = core::AttrType::Int;
      a.i = 1;
      out.push_back(a);
    }
    return out;
  }
  InOut io_;
  FloatOp op_;
};

// QLinearGlobalAveragePool: per-channel integer sums, then
// quantize((sum / count - zx) * sx) with y's parameters.
class GlobalAveragePoolKernel final : public Kernel {
 public:
  GlobalAveragePoolKernel(const KernelBuild& b, bool attrs)
      : io_(b, attrs), channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {}

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor& x = input_checked(r, io_.x_spec.dtype);
    if (x.rank() < 3)
      fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": X must have rank 3 or more, got " +
                                        core::shape_to_string(x.shape()));
    QuantParams sx, sy;
    const QuantParams &px = io_.x(&r, sx), &py = io_.y(&r, sy);
    const DnnlDims dims = logical_dims(x.shape(), channels_last_);
    const int64_t N = dims[0], C = dims[1], plane = static_cast<int64_t>(x.numel()) / std::max<int64_t>(1, N * C);
    DnnlDims out_dims(dims.size(), 1);
    out_dims[0] = N;
    out_dims[1] = C;
    Tensor& y = r.output(0, io_.y_spec.dtype, memory_shape(out_dims, channels_last_));
    // Sums per channel: a plane at a time, or (channels-last) each thread
    // walking every position over its own slice of the channels.
    // int32 sums: a plane of up to 2^23 codes cannot overflow them.
    if (plane >= (int64_t{1} << 23))
      fail(HETERO_NOT_SUPPORTED, r.node().describe() + ": planes of 2^23 elements or more are not supported");
    std::vector<int32_t> sum(static_cast<size_t>(N * C), 0);
    with_8bit_type(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = x.data<T>();
      const bool parallel = r.parallel(x.numel() > (size_t{1} << 16));
      if (!channels_last_) {
        parallel_for(parallel, 0, N * C, [&](int64_t nc) {
          int32_t s = 0;
          for (int64_t p = 0; p < plane; ++p) s += v[nc * plane + p];
          sum[static_cast<size_t>(nc)] = s;
        });
        return;
      }
      for (int64_t n = 0; n < N; ++n) {
        parallel_region(parallel, [&] {
          const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
          const int64_t per = (C + threads - 1) / threads, c0 = std::min(C, t * per), c1 = std::min(C, c0 + per);
          int32_t* s = sum.data() + n * C;
          for (int64_t p = 0; p < plane; ++p) {
            const T* row = v + (n * plane + p) * C;
            for (int64_t c = c0; c < c1; ++c) s[c] += row[c];
          }
        });
      }
    });
    // As ONNX Runtime requantizes: (sum - zx * count) * (sx / (sy * count)),
    // rounded, plus zy.
    const int64_t count = std::max<int64_t>(plane, 1);
    const float scale = px.scale[0] / (py.scale[0] * static_cast<float>(count));
    const float lo = static_cast<float>(quant_min(y.dtype()) - py.zero_point[0]);
    const float hi = static_cast<float>(quant_max(y.dtype()) - py.zero_point[0]);
    std::vector<float> v(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) {
      const float biased = static_cast<float>(sum[i] - px.zero_point[0] * static_cast<int32_t>(count));
      v[i] = std::nearbyint(std::min(std::max(biased * scale, lo), hi)) + static_cast<float>(py.zero_point[0]);
    }
    with_8bit_type(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      round_to_codes(v.data(), y.data<T>(), v.size());
    });
  }

 private:
  InOut io_;
  bool channels_last_;
};

}  // namespace

std::unique_ptr<Kernel> make_qlinear_sigmoid(const KernelBuild& b) {
  return std::make_unique<TableKernel>(b, false, "Sigmoid", 13, std::vector<core::Attribute>{},
                                       std::vector<std::optional<Tensor>>{});
}

std::unique_ptr<Kernel> make_qlinear_leaky_relu(const KernelBuild& b) {
  core::Attribute alpha;
  alpha.name = "alpha";
  alpha.type = core::AttrType::Float;
  alpha.f = b.node.attr_float("alpha", 0.01f);
  return std::make_unique<TableKernel>(b, false, "LeakyRelu", 16, std::vector<core::Attribute>{alpha},
                                       std::vector<std::optional<Tensor>>{});
}

std::unique_ptr<Kernel> make_int8_unary(const KernelBuild& b) {
  const std::string op = b.node.attr_string("float_op", "");
  if (op.empty()) b.unsupported("float_op is missing");
  std::vector<std::optional<Tensor>> extra;
  for (size_t i = 1; i < b.node.inputs.size(); ++i) {
    const Tensor* c = b.constant_input(i);
    if (b.node.input(i) && !c) b.unsupported("input " + std::to_string(i) + " of the float op must be a constant");
    extra.push_back(c ? std::optional<Tensor>(*c) : std::nullopt);
  }
  return std::make_unique<TableKernel>(b, true, op, b.node.attr_int("float_op_opset", 13), float_op_attrs(b.node),
                                       std::move(extra));
}

std::unique_ptr<Kernel> make_int8_table(const KernelBuild& b) { return std::make_unique<ChainTableKernel>(b); }

// The ONNX Runtime forms take their quantisation parameters as inputs, the
// int8 pass's (hetero.cpu domain) as attributes.
std::unique_ptr<Kernel> make_qlinear_average_pool(const KernelBuild& b) {
  return std::make_unique<AveragePoolKernel>(b, false);
}
std::unique_ptr<Kernel> make_qlinear_global_average_pool(const KernelBuild& b) {
  return std::make_unique<GlobalAveragePoolKernel>(b, false);
}
std::unique_ptr<Kernel> make_int8_average_pool(const KernelBuild& b) {
  return std::make_unique<AveragePoolKernel>(b, true);
}
std::unique_ptr<Kernel> make_int8_global_average_pool(const KernelBuild& b) {
  return std::make_unique<GlobalAveragePoolKernel>(b, true);
}

}  // namespace hetero::cpu
