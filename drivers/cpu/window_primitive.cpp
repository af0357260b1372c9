#include "drivers/cpu/window_primitive.h"

#include <algorithm>
#include <array>

namespace hetero::cpu {

void build_window_kernel(const KernelBuild& b, const char* first_dim, WindowAttrs& attrs, PostOpChain& post,
                         ReorderedConstant& weights) {
  require_float_inputs(b, {0, 1, 2});
  post = PostOpChain::parse(b, 3);
  if (const core::Tensor* w = b.constant_input(1)) {
    if (w->rank() < 3) b.unsupported("weights must have rank 3 or more, got " + core::shape_to_string(w->shape()));
    if (w->dim(0) % attrs.group != 0) b.unsupported(std::string(first_dim) + " are not a multiple of group");
    attrs.resolve(b.node, w->rank() - 2);
    weights.set(*w);
  }
}

std::vector<int64_t> window_primitive_key(const core::Tensor& x, const core::Tensor& w, bool constant_weights,
                                          const core::Tensor* bias, const PostOpChain& post, const KernelRun& r) {
  std::vector<int64_t> key;
  key.reserve(16);
  append_key(key, x.shape());
  if (!constant_weights) append_key(key, w.shape());
  key.push_back(bias != nullptr);
  post.append_key(key, r);
  key.push_back(r.threads());
  return key;
}

void run_window_primitive(KernelRun& r, const core::Node& node, const WindowPrimitive& e, const WindowInputs& in,
                          const PostOpChain& post, core::Tensor& y) {
  execute_window_primitive(r, node, e, in, post, in.x.data<float>(), y.data<float>());
  if (e.manual_post_ops) post.apply(y.data<float>(), y.shape(), r);
}

void execute_window_primitive(KernelRun& r, const core::Node& node, const WindowPrimitive& e,
                              const WindowInputs& in, const PostOpChain& post, const float* x, float* y) {
  with_dnnl_errors(node, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine& engine = r.engine();
    MemoryViews& views = r.views();
    PrimitiveArgs args;
    args[DNNL_ARG_SRC] = e.src_in.apply(views.bind(DNNL_ARG_SRC, e.src_user, engine, x), Scratch::Src, r);
    args[DNNL_ARG_WEIGHTS] =
        !in.weights.empty()
            ? in.weights.get(e.weights_desc, e.weights_user, engine, s)
            : e.weights_in.apply(views.bind(DNNL_ARG_WEIGHTS, e.weights_user, engine, in.w.raw()), Scratch::Weights, r);
    if (in.bias) args[DNNL_ARG_BIAS] = views.bind(DNNL_ARG_BIAS, e.bias_desc, engine, in.bias->raw());
    const dnnl::memory user_y = views.bind(DNNL_ARG_DST, e.dst_user, engine, y);
    const dnnl::memory dst = e.dst_out.needed() ? views.scratch(Scratch::Dst, e.dst_desc, engine) : user_y;
    args[DNNL_ARG_DST] = dst;
    if (e.scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e.scratchpad, engine);
    if (!e.manual_post_ops) post.add_args(args, e.dst_dims, in.channels_last, r, engine);
    args.execute(e.prim, s);
    if (e.dst_out.needed()) e.dst_out.apply(dst, user_y, s);
    s.wait();
  });
}

namespace {

// The elements between two rows of an activation of logical dims N, C,
// spatial... in the kernel's layout.
int64_t row_stride(const DnnlDims& dims, bool channels_last) {
  return activation_desc(dims, channels_last).data.format_desc.blocking.strides[2];
}

}  // namespace

dnnl::memory::desc block_src_desc(const DnnlDims& src_dims, const RowBlock* block, bool channels_last) {
  const dnnl::memory::desc whole = activation_desc(src_dims, channels_last);
  return block ? whole.submemory_desc(block->src_dims, DnnlDims(src_dims.size(), 0)) : whole;
}

dnnl::memory::desc block_dst_desc(const DnnlDims& whole_dst_dims, const RowBlock* block, bool channels_last) {
  const dnnl::memory::desc whole = activation_desc(whole_dst_dims, channels_last);
  return block ? whole.submemory_desc(block->geo.dst_dims, DnnlDims(whole_dst_dims.size(), 0)) : whole;
}

bool RowBlocks::make(int64_t out_rows, int64_t rows, const Cut& cut, const Make& make) {
  using Shape = std::array<int64_t, 4>;
  std::vector<Shape> shapes;
  for (int64_t first = 0; first < out_rows; first += rows) {
    std::optional<RowBlock> block = cut(first, std::min(rows, out_rows - first));
    if (!block) break;
    const Shape shape{block->src_dims[2], block->count, block->geo.pad_l[0], block->geo.pad_r[0]};
    const auto seen = std::find(shapes.begin(), shapes.end(), shape);
    primitive_of_.push_back(static_cast<size_t>(seen - shapes.begin()));
    if (seen == shapes.end()) {
      shapes.push_back(shape);
      primitives_.push_back(make(*block));
      const WindowPrimitive& made = primitives_.back();
      if (made.reference || made.manual_post_ops != primitives_.front().manual_post_ops) break;
    }
    blocks_.push_back(std::move(*block));
  }
  if (blocks_.size() == primitive_of_.size() && !blocks_.empty() && blocks_.back().first + blocks_.back().count == out_rows)
    return true;
  *this = RowBlocks();
  return false;
}

void RowBlocks::run(KernelRun& r, const core::Node& node, const WindowInputs& in, const PostOpChain& post,
                    core::Tensor& y) const {
  const int64_t src_stride = row_stride(in.src_dims, in.channels_last);
  const int64_t dst_stride = row_stride(logical_dims(y.shape(), in.channels_last), in.channels_last);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (i > 0) r.checkpoint();
    const RowBlock& b = blocks_[i];
    execute_window_primitive(r, node, primitives_[primitive_of_[i]], in, post,
                             in.x.data<float>() + b.src_first * src_stride, y.data<float>() + b.first * dst_stride);
  }
  if (primitives_.front().manual_post_ops) post.apply(y.data<float>(), y.shape(), r);
}

WindowDescs window_descs(const DnnlDims& src_dims, const DnnlDims& dst_dims, const dnnl::memory::desc& user_w,
                         bool channels_last, bool any_layout, int64_t bias_channels) {
  WindowDescs d;
  d.src = any_layout ? dnnl::memory::desc(src_dims, dnnl_dt::f32, dnnl_tag::any) : activation_desc(src_dims, channels_last);
  d.dst = any_layout ? dnnl::memory::desc(dst_dims, dnnl_dt::f32, dnnl_tag::any) : activation_desc(dst_dims, channels_last);
  d.weights = dnnl::memory::desc(user_w.dims(), dnnl_dt::f32, dnnl_tag::any);
  if (bias_channels) d.bias = plain_desc(DnnlDims{bias_channels});
  return d;
}

WindowOperands window_operands(const core::Node& node, KernelRun& r, bool channels_last) {
  const core::Tensor* x = r.input(0);
  const core::Tensor* w = r.input(1);
  if (!x || !w) fail(HETERO_INVALID_ARGUMENT, node.describe() + ": input X or W is missing");
  if (x->dtype() != core::DType::F32 || w->dtype() != core::DType::F32)
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": X and W must be float32");
  if (x->rank() < 3 || x->rank() != w->rank())
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": input rank " + std::to_string(x->rank()) +
                                      " does not match weights " + core::shape_to_string(w->shape()));
  return {*x, *w, logical_dims(x->shape(), channels_last)};
}

}  // namespace hetero::cpu
