// 8-bit ops defined as "dequantize, run the float op, quantize", computed
// with the CPU driver's own float kernel so that they give exactly what the
// float simulation of the QDQ graph gives:
//   - elementwise functions of one input (com.microsoft QLinearSigmoid and
//     QLinearLeakyRelu, hetero.cpu QLinearUnary for any such op the int8
//     pass found between a DQ and a Q): the float kernel maps all 256 codes
//     once, and the op is a table lookup;
//   - QLinearAveragePool: the float AveragePool over the dequantised input;
//   - QLinearGlobalAveragePool: integer sums per channel, requantised as
//     ONNX Runtime does (for the reason kernels_qlinear_binary.cpp gives).
#include <omp.h>

#include <algorithm>

#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/quant_util.h"

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
          std::vector<core::Attribute> attrs, std::vector<std::optional<Tensor>> extra_inputs)
      : extra_(std::move(extra_inputs)) {
    node_ = graph_.add_node(op_type, b.node.name + "/float");
    node_->domain = domain;
    node_->opset = opset;
    node_->attributes = std::move(attrs);
    for (size_t i = 0; i <= extra_.size(); ++i) {
      core::Value* v = graph_.add_value("in" + std::to_string(i));
      v->dtype = DType::F32;
      if (i > 0 && extra_[i - 1]) {
        v->constant = *extra_[i - 1];
        v->dtype = extra_[i - 1]->dtype();
      }
      if (i == 0 || extra_[i - 1]) graph_.set_input(node_, i, v);
    }
    graph_.set_output(node_, 0, graph_.add_value("out"));
    const KernelFactory* factory = KernelRegistry::builtin().find(op_type, domain, opset);
    if (!factory) b.unsupported("the CPU driver has no float kernel for " + op_type);
    KernelBuild inner{*node_, opset, b.engine, b.compile_subgraph};
    kernel_ = (*factory)(inner);
  }

  Tensor run(const Tensor& x, dnnl::stream& stream, int threads) const {
    Run r(*node_, x, extra_, stream, threads);
    kernel_->run(r);
    return r.result();
  }

 private:
  class Run final : public KernelRun {
   public:
    Run(const core::Node& node, const Tensor& x, const std::vector<std::optional<Tensor>>& extra, dnnl::stream& stream,
        int threads)
        : node_(node), x_(x), extra_(extra), stream_(stream), threads_(threads) {}
    const core::Node& node() const override { return node_; }
    size_t num_inputs() const override { return extra_.size() + 1; }
    const Tensor* input(size_t i) const override {
      if (i == 0) return &x_;
      return i <= extra_.size() && extra_[i - 1] ? &*extra_[i - 1] : nullptr;
    }
    size_t num_outputs() const override { return 1; }
    bool output_wanted(size_t i) const override { return i == 0; }
    Tensor& output(size_t, DType dtype, const core::Shape& shape) override {
      out_ = Tensor::allocate(dtype, shape, false);
      return out_;
    }
    void set_output(size_t, Tensor tensor) override { out_ = std::move(tensor); }
    dnnl::stream& stream() override { return stream_; }
    int threads() const override { return threads_; }
    const Frame& frame() const override {
      fail(HETERO_NOT_SUPPORTED, node_.describe() + ": runs no subgraphs inside a quantised op");
    }
    Tensor result() {
      if (out_.dtype() != DType::F32)
        fail(HETERO_NOT_SUPPORTED, node_.describe() + ": the float op did not produce float32");
      return std::move(out_);
    }

   private:
    const core::Node& node_;
    const Tensor& x_;
    const std::vector<std::optional<Tensor>>& extra_;
    dnnl::stream& stream_;
    int threads_;
    Tensor out_;
  };

  core::Graph graph_;
  core::Node* node_ = nullptr;
  std::vector<std::optional<Tensor>> extra_;
  std::unique_ptr<Kernel> kernel_;
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

class TableKernel final : public Kernel {
 public:
  TableKernel(const KernelBuild& b, bool attrs, const std::string& op_type, int64_t opset,
              std::vector<core::Attribute> op_attrs, std::vector<std::optional<Tensor>> extra)
      : io_(b, attrs), op_(b, op_type, "", opset, std::move(op_attrs), std::move(extra)) {
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
    const uint8_t* t = table_.empty() ? run_table.data() : table_.data();
    Tensor& y = r.output(0, io_.y_spec.dtype, x.shape());
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y.raw());
    const int64_t n = static_cast<int64_t>(x.numel());
#pragma omp parallel for schedule(static) if (n > static_cast<int64_t>(1) << 16)
    for (int64_t i = 0; i < n; ++i) dst[i] = t[src[i]];
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

std::vector<core::Attribute> float_op_attrs(const core::Node& node) {
  std::vector<core::Attribute> out;
  for (const core::Attribute& a : node.attributes)
    if (!quant_attr(a.name) && a.name != kChannelsLastAttr) out.push_back(a);
  return out;
}

std::unique_ptr<Kernel> make_unary(const KernelBuild& b) {
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
    std::vector<int64_t> sum(static_cast<size_t>(N * C), 0);
    with_8bit_type(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = x.data<T>();
      const bool parallel = x.numel() > (size_t{1} << 16);
      if (!channels_last_) {
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t nc = 0; nc < N * C; ++nc) {
          int64_t s = 0;
          for (int64_t p = 0; p < plane; ++p) s += v[nc * plane + p];
          sum[static_cast<size_t>(nc)] = s;
        }
        return;
      }
      for (int64_t n = 0; n < N; ++n) {
#pragma omp parallel if (parallel)
        {
          const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
          const int64_t per = (C + threads - 1) / threads, c0 = std::min(C, t * per), c1 = std::min(C, c0 + per);
          int64_t* s = sum.data() + n * C;
          for (int64_t p = 0; p < plane; ++p) {
            const T* row = v + (n * plane + p) * C;
            for (int64_t c = c0; c < c1; ++c) s[c] += row[c];
          }
        }
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
      const float biased = static_cast<float>(static_cast<int32_t>(sum[i] - px.zero_point[0] * count));
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

void register_qlinear_via_float_kernels(KernelRegistry& r) {
  r.add("QLinearSigmoid", [](const KernelBuild& b) -> std::unique_ptr<Kernel> {
    return std::make_unique<TableKernel>(b, false, "Sigmoid", 13, std::vector<core::Attribute>{},
                                         std::vector<std::optional<Tensor>>{});
  }, "com.microsoft", 1, 1);
  r.add("QLinearLeakyRelu", [](const KernelBuild& b) -> std::unique_ptr<Kernel> {
    core::Attribute alpha;
    alpha.name = "alpha";
    alpha.type = core::AttrType::Float;
    alpha.f = b.node.attr_float("alpha", 0.01f);
    return std::make_unique<TableKernel>(b, false, "LeakyRelu", 16, std::vector<core::Attribute>{alpha},
                                         std::vector<std::optional<Tensor>>{});
  }, "com.microsoft", 1, 1);
  r.add("QLinearUnary", make_unary, kCpuDomain, 1, 1);
  auto pool = [](bool global, bool attrs) -> KernelFactory {
    return [global, attrs](const KernelBuild& b) -> std::unique_ptr<Kernel> {
      if (global) return std::make_unique<GlobalAveragePoolKernel>(b, attrs);
      return std::make_unique<AveragePoolKernel>(b, attrs);
    };
  };
  r.add("QLinearAveragePool", pool(false, false), "com.microsoft", 1, 1);
  r.add("QLinearGlobalAveragePool", pool(true, false), "com.microsoft", 1, 1);
  r.add("QLinearAveragePool", pool(false, true), kCpuDomain, 1, 1);
  r.add("QLinearGlobalAveragePool", pool(true, true), kCpuDomain, 1, 1);
}

}  // namespace hetero::cpu
