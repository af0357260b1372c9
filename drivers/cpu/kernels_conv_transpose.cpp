// ConvTranspose (and hetero.cpu FusedConvTranspose with post-ops and
// channels-last activations) on oneDNN's deconvolution primitive.
//
// ONNX's output_padding and output_shape both become end padding: oneDNN
// takes the end padding that yields the output size exactly, negative where
// the output grows past the last input tap (those positions get the bias).
//
// A 2-D ConvTranspose whose kernel equals its stride (no padding, dilation or
// groups; the upsampling heads of segmentation models such as PP-OCR det)
// touches every output pixel exactly once: each input pixel becomes a
// kernel-sized patch. That is one matrix product, pixels x IC times
// IC x (kh*kw*OC), and a scatter of its rows into place. oneDNN 2.6's
// deconvolution runs it as a strided backward convolution that is 20x
// slower (33 ms against 1.5 ms for 24 channels at 160x160 -> 320x320).
//
// A long deconvolution runs in blocks of output rows (RowBlocks,
// drivers/cpu/window_primitive.h): input row i makes output rows
// i*stride - pad + k*dilation, so a block of output rows reads the input
// rows that reach it, with the padding that puts them in place.

#include <algorithm>
#include <cstring>
#include <optional>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/post_ops.h"
#include "drivers/cpu/window_primitive.h"

namespace hetero::cpu {

namespace {

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelBuild& b);
  void run(KernelRun& r) override;

 private:
  // The patch form of kernel == stride (see the top of the file).
  struct Patches {
    dnnl::matmul prim;
    core::Tensor weights;      // IC x (kh, kw, OC), from ONNX's IC x OC x kh x kw
    dnnl::memory::desc src_desc, weights_desc, bias_desc, dst_desc;
    int64_t n = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0;
    bool fused_post_ops = false;
  };

  struct Entry {
    std::optional<Patches> patches;  // set: the patch form replaces the deconvolution
    WindowPrimitive deconv;          // its dst_dims and out_shape hold for all three forms
    RowBlocks blocks;                // not empty: the deconvolution runs in these
  };
  Entry make_entry(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape) const;
  // The output rows per block; 0 when the deconvolution runs whole.
  int64_t block_rows(const ConvGeometry& geo, const DnnlDims& src_dims, const core::Shape& w_shape) const;
  // The deconvolution of `geo`, or `block`'s rows of it.
  WindowPrimitive make_deconv(KernelRun& r, const DnnlDims& src_dims, const core::Shape& w_shape,
                              const ConvGeometry& geo, const RowBlock* block) const;
  std::optional<Patches> make_patches(KernelRun& r, const DnnlDims& src_dims, const DnnlDims& dst_dims) const;
  void run_patches(KernelRun& r, const Entry& e, const core::Tensor& x, const core::Tensor* bias, core::Tensor& y);

  const core::Node& node_;
  WindowAttrs attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
  bool channels_last_;
  PostOpChain post_;
  ReorderedConstant weights_;
  ShapeCache<Entry> cache_;
};

ConvTransposeKernel::ConvTransposeKernel(const KernelBuild& b)
    : node_(b.node), attrs_(WindowAttrs::parse(b.node)), output_padding_(b.node.attr_ints("output_padding")),
      output_shape_(b.node.attr_ints("output_shape")), channels_last_(b.node.attr_int(kChannelsLastAttr, 0) != 0) {
  build_window_kernel(b, "input channels", attrs_, post_, weights_);
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// The deconvolution that makes output rows [first, first + count): the input
// rows whose taps reach them, and the padding that puts those taps in
// place; nullopt where no input row reaches them (they hold the bias alone)
// or where the first one's taps start past `first` (a stride longer than
// the kernel), which would need negative padding at the start.
std::optional<RowBlock> deconv_row_block(const ConvGeometry& whole, const DnnlDims& src_dims, int64_t kernel_rows,
                                         int64_t first, int64_t count) {
  const int64_t s = whole.strides[0], pad = whole.pad_l[0];
  const int64_t reach = (kernel_rows - 1) * (whole.dilates[0] + 1);  // an input row's last tap, past its first
  const int64_t lo = std::max<int64_t>(0, -floor_div(-(first + pad - reach), s));
  const int64_t hi = std::min<int64_t>(src_dims[2] - 1, floor_div(first + count - 1 + pad, s));
  if (hi < lo) return std::nullopt;
  RowBlock b{first, count, lo, src_dims, whole};
  b.src_dims[2] = hi - lo + 1;
  b.geo.dst_dims[2] = count;
  b.geo.pad_l[0] = pad + first - lo * s;
  if (b.geo.pad_l[0] < 0) return std::nullopt;
  // oneDNN: out = (in - 1) * stride + reach + 1 - pad_l - pad_r.
  b.geo.pad_r[0] = (b.src_dims[2] - 1) * s + reach + 1 - b.geo.pad_l[0] - count;
  return b;
}

ConvTransposeKernel::Entry ConvTransposeKernel::make_entry(KernelRun& r, const DnnlDims& src_dims,
                                                           const core::Shape& w_shape) const {
  WindowAttrs a = attrs_;
  const size_t spatial = src_dims.size() - 2;
  a.resolve(node_, spatial);
  std::vector<int64_t> out_pad = output_padding_, out_shape = output_shape_;
  if (out_pad.empty()) out_pad.assign(spatial, 0);
  if (out_shape.size() == spatial + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (out_pad.size() != spatial || (!out_shape.empty() && out_shape.size() != spatial))
    fail(HETERO_INVALID_MODEL, node_.describe() + ": output_padding or output_shape has the wrong length");

  ConvGeometry geo;
  DnnlDims &strides = geo.strides, &dilates = geo.dilates, &pad_l = geo.pad_l, &pad_r = geo.pad_r;
  DnnlDims& dst_dims = geo.dst_dims;
  dst_dims = {src_dims[0], w_shape[1] * a.group};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = src_dims[2 + i], k = w_shape[2 + i], s = a.strides[i], d = a.dilations[i];
    if (!a.kernel_shape.empty() && a.kernel_shape[i] != k)
      fail(HETERO_INVALID_MODEL, node_.describe() + ": kernel_shape disagrees with the weights");
    const int64_t ek = (k - 1) * d + 1;
    const int64_t natural = s * (in - 1) + out_pad[i] + ek;  // output size with no padding
    int64_t begin = 0, end = 0, out = 0;
    const bool same = a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower;
    if (!out_shape.empty() || same) {
      out = !out_shape.empty() ? out_shape[i] : in * s;
      const int64_t total = natural - out;
      // ONNX: SAME_UPPER puts the odd pad at the end, everything else at the
      // beginning; halves round down (as in ONNX's reference) when the
      // requested output is larger than the natural one and total < 0.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin = a.auto_pad == AutoPad::SameUpper ? half : total - half;
      end = total - begin;
      if (begin < 0)
        fail(HETERO_NOT_SUPPORTED, node_.describe() + ": an output_shape that needs negative begin padding is not supported");
    } else {
      if (a.auto_pad == AutoPad::NotSet) {
        begin = a.pads[i];
        end = a.pads[spatial + i];
      }
      out = natural - begin - end;
    }
    if (out <= 0) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": the output would be empty");
    dst_dims.push_back(out);
    strides.push_back(s);
    dilates.push_back(d - 1);
    pad_l.push_back(begin);
    pad_r.push_back(end - out_pad[i]);  // output_padding extends the end
  }

  Entry e;
  e.deconv.dst_dims = dst_dims;
  e.deconv.out_shape = memory_shape(dst_dims, channels_last_);
  const bool non_overlapping = spatial == 2 && a.group == 1 &&
                               std::all_of(dilates.begin(), dilates.end(), [](int64_t d) { return d == 0; }) &&
                               std::all_of(pad_l.begin(), pad_l.end(), [](int64_t p) { return p == 0; }) &&
                               std::all_of(pad_r.begin(), pad_r.end(), [](int64_t p) { return p == 0; }) &&
                               strides[0] == w_shape[2] && strides[1] == w_shape[3];
  if (non_overlapping && !weights_.empty()) {
    e.patches = make_patches(r, src_dims, dst_dims);
    return e;
  }
  if (const int64_t rows = block_rows(geo, src_dims, w_shape)) {
    const bool cut = e.blocks.make(
        dst_dims[2], rows,
        [&](int64_t first, int64_t count) { return deconv_row_block(geo, src_dims, w_shape[2], first, count); },
        [&](const RowBlock& block) { return make_deconv(r, src_dims, w_shape, geo, &block); });
    if (cut) return e;
  }
  e.deconv = make_deconv(r, src_dims, w_shape, geo, nullptr);
  return e;
}

int64_t ConvTransposeKernel::block_rows(const ConvGeometry& geo, const DnnlDims& src_dims,
                                        const core::Shape& w_shape) const {
  if (post_.reads_operands()) return 0;  // an operand would need cutting too
  // Every input element meets the kernel window of OC / group outputs.
  double macs = double(src_dims[0]) * double(src_dims[1]) * double(w_shape[1]);
  for (size_t i = 2; i < w_shape.size(); ++i) macs *= double(w_shape[i]) * double(src_dims[i]);
  const int64_t out_rows = geo.dst_dims[2];
  const int64_t rows = checkpoint_block_units(out_rows, macs / double(out_rows), kCheckpointMacs);
  // Whole strides of rows, so that the blocks share a few shapes.
  const int64_t s = geo.strides[0];
  return rows == 0 ? 0 : (rows + s - 1) / s * s;
}

WindowPrimitive ConvTransposeKernel::make_deconv(KernelRun& r, const DnnlDims& whole_src_dims,
                                                 const core::Shape& w_shape, const ConvGeometry& whole,
                                                 const RowBlock* block) const {
  const dnnl::engine& engine = r.engine();
  const ConvGeometry& geo = block ? block->geo : whole;
  const DnnlDims& src_dims = block ? block->src_dims : whole_src_dims;
  const dnnl::memory::desc user_w = onnx_weights_desc(w_shape, attrs_.group, true);
  const WindowDescs md =
      window_descs(src_dims, geo.dst_dims, user_w, channels_last_, !channels_last_, r.input(2) ? geo.dst_dims[1] : 0);
  auto make_pd = [&](const dnnl::post_ops* po) {
    const dnnl::primitive_attr attr = scratchpad_attr(po);
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        md.src, md.weights, md.bias, md.dst, geo.strides, geo.dilates, geo.pad_l,
                                        geo.pad_r);
    return dnnl::deconvolution_forward::primitive_desc(d, attr, engine);
  };
  const auto [pd, manual_post_ops] = make_with_post_ops(post_, geo.dst_dims, channels_last_, r, make_pd);
  WindowPrimitive p;
  p.set<dnnl::deconvolution_forward>(pd, block_src_desc(whole_src_dims, block, channels_last_),
                                     block_dst_desc(whole.dst_dims, block, channels_last_), geo.dst_dims,
                                     channels_last_, user_w, !weights_.empty(), md.bias, manual_post_ops);
  return p;
}

std::optional<ConvTransposeKernel::Patches> ConvTransposeKernel::make_patches(KernelRun& r, const DnnlDims& src_dims,
                                                                              const DnnlDims& dst_dims) const {
  const dnnl::engine& engine = r.engine();
  const core::Tensor& w = weights_.source();
  Patches p;
  p.n = src_dims[0];
  p.h = src_dims[2];
  p.w = src_dims[3];
  p.oc = dst_dims[1];
  p.kh = w.dim(2);
  p.kw = w.dim(3);
  const int64_t ic = src_dims[1], k = p.kh * p.kw * p.oc, pixels = p.h * p.w;

  // Weights as IC x (kh, kw, OC), so that a product row holds each output
  // pixel's channels together (one copy per pixel for channels-last).
  p.weights = core::Tensor::allocate(core::DType::F32, {ic, k}, false);
  const float* wv = w.data<float>();
  float* pw = p.weights.data<float>();
  for (int64_t c = 0; c < ic; ++c)
    for (int64_t o = 0; o < p.oc; ++o)
      for (int64_t t = 0; t < p.kh * p.kw; ++t) pw[c * k + t * p.oc + o] = wv[(c * p.oc + o) * p.kh * p.kw + t];

  // Source pixels as rows: N x (H*W) x IC, strided over NCHW or NHWC memory.
  const dnnl::memory::dims src_strides =
      channels_last_ ? dnnl::memory::dims{pixels * ic, ic, 1} : dnnl::memory::dims{pixels * ic, 1, pixels};
  p.src_desc = dnnl::memory::desc({p.n, pixels, ic}, dnnl_dt::f32, src_strides);
  p.weights_desc = dnnl::memory::desc({1, ic, k}, dnnl_dt::f32, dnnl_tag::abc);
  p.bias_desc = dnnl::memory::desc({1, 1, k}, dnnl_dt::f32, dnnl_tag::abc);
  p.dst_desc = dnnl::memory::desc({p.n, pixels, k}, dnnl_dt::f32, dnnl_tag::abc);

  // Elementwise post-ops act per element, so they run inside the product;
  // a binary operand is laid out for the output and waits for the scatter.
  dnnl::primitive_attr attr;
  if (!post_.empty() && !post_.reads_operands())
    if (const auto po = post_.to_dnnl(dst_dims, channels_last_, r)) {
      attr.set_post_ops(*po);
      p.fused_post_ops = true;
    }
  const dnnl::memory::desc bias_md = r.input(2) ? p.bias_desc : dnnl::memory::desc();
  p.prim = dnnl::matmul(dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(p.src_desc, p.weights_desc, bias_md, p.dst_desc), attr, engine));
  return p;
}

void ConvTransposeKernel::run_patches(KernelRun& r, const Entry& e, const core::Tensor& x, const core::Tensor* bias,
                                      core::Tensor& y) {
  const Patches& p = *e.patches;
  const int64_t k = p.kh * p.kw * p.oc, pixels = p.h * p.w;
  float* rows = static_cast<float*>(scratch_buffer(Scratch::Dst, p.dst_desc.get_size()));
  std::vector<float> patch_bias;
  with_dnnl_errors(node_, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine& engine = r.engine();
    PrimitiveArgs args;
    MemoryViews& views = r.views();
    args[DNNL_ARG_SRC] = views.bind(DNNL_ARG_SRC, p.src_desc, engine, x.raw());
    args[DNNL_ARG_WEIGHTS] = views.bind(DNNL_ARG_WEIGHTS, p.weights_desc, engine, p.weights.raw());
    if (bias) {  // one value per output channel, repeated for each kernel tap
      patch_bias.resize(static_cast<size_t>(k));
      for (int64_t t = 0; t < p.kh * p.kw; ++t)
        std::memcpy(&patch_bias[static_cast<size_t>(t * p.oc)], bias->raw(), static_cast<size_t>(p.oc) * sizeof(float));
      args[DNNL_ARG_BIAS] = views.bind(DNNL_ARG_BIAS, p.bias_desc, engine, patch_bias.data());
    }
    args[DNNL_ARG_DST] = views.bind(DNNL_ARG_DST, p.dst_desc, engine, rows);
    args.execute(p.prim, s);
    s.wait();
  });

  // Row (n, h, w) holds the kh x kw patch of output pixels at (h*kh, w*kw).
  const int64_t out_h = p.h * p.kh, out_w = p.w * p.kw;
  float* out = y.data<float>();
  const bool parallel = r.parallel(y.numel() > 65536);
  if (channels_last_) {
    parallel_for(parallel, 0, p.n * p.h, [&](int64_t nh) {
      const int64_t n = nh / p.h, h = nh % p.h;
      for (int64_t w = 0; w < p.w; ++w) {
        const float* row = rows + (n * pixels + h * p.w + w) * k;
        for (int64_t i = 0; i < p.kh; ++i)
          std::memcpy(out + ((n * out_h + h * p.kh + i) * out_w + w * p.kw) * p.oc, row + i * p.kw * p.oc,
                      static_cast<size_t>(p.kw * p.oc) * sizeof(float));
      }
    });
  } else {
    parallel_for(parallel, 0, p.n * p.oc, [&](int64_t no) {
      const int64_t n = no / p.oc, o = no % p.oc;
      float* plane = out + no * out_h * out_w;
      for (int64_t h = 0; h < p.h; ++h)
        for (int64_t w = 0; w < p.w; ++w) {
          const float* row = rows + (n * pixels + h * p.w + w) * k + o;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) plane[(h * p.kh + i) * out_w + w * p.kw + j] = row[(i * p.kw + j) * p.oc];
        }
    });
  }
  if (!post_.empty() && !p.fused_post_ops) post_.apply(out, y.shape(), r);
}

void ConvTransposeKernel::run(KernelRun& r) {
  use_threads(r.threads());
  const WindowOperands in = window_operands(node_, r, channels_last_);
  const core::Tensor* x = &in.x;
  const core::Tensor* w = &in.w;
  const DnnlDims& src_dims = in.src_dims;
  if (src_dims[1] != w->dim(0) || w->dim(0) % attrs_.group != 0)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input channels " + std::to_string(src_dims[1]) +
                                      " do not match weights " + core::shape_to_string(w->shape()));
  const core::Tensor* bias = r.input(2);
  if (bias && (bias->dtype() != core::DType::F32 || bias->numel() != static_cast<size_t>(w->dim(1) * attrs_.group)))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": bias must be float32 with one value per output channel");

  const std::vector<int64_t> key = window_primitive_key(*x, *w, !weights_.empty(), bias, post_, r);
  auto e = with_dnnl_errors(node_, [&] { return cache_.get(key, [&] { return make_entry(r, src_dims, w->shape()); }); });

  core::Tensor& y = r.output(0, core::DType::F32, e->deconv.out_shape);
  if (y.numel() == 0) return;
  if (e->patches) return run_patches(r, *e, *x, bias, y);
  const WindowInputs inputs{*x, *w, bias, src_dims, channels_last_, weights_};
  if (!e->blocks.empty()) return e->blocks.run(r, node_, inputs, post_, y);
  run_window_primitive(r, node_, e->deconv, inputs, post_, y);
}

}  // namespace

std::unique_ptr<Kernel> make_conv_transpose(const KernelBuild& b) { return std::make_unique<ConvTransposeKernel>(b); }

}  // namespace hetero::cpu
