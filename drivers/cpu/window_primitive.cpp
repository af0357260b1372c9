#include "drivers/cpu/window_primitive.h"

#include <unordered_map>

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
    const dnnl::engine engine = s.get_engine();
    std::unordered_map<int, dnnl::memory> args;
    args[DNNL_ARG_SRC] = e.src_in.apply(view_memory(e.src_user, engine, x), Scratch::Src, s);
    args[DNNL_ARG_WEIGHTS] = !in.weights.empty()
                                 ? in.weights.get(e.weights_desc, in.user_w, engine, s)
                                 : e.weights_in.apply(view_memory(in.user_w, engine, in.w.raw()), Scratch::Weights, s);
    if (in.bias) args[DNNL_ARG_BIAS] = view_memory(e.bias_desc, engine, in.bias->raw());
    const dnnl::memory user_y = view_memory(e.dst_user, engine, y);
    const dnnl::memory dst =
        e.dst_out.needed() ? view_memory(e.dst_desc, engine, scratch_buffer(Scratch::Dst, e.dst_desc.get_size()))
                           : user_y;
    args[DNNL_ARG_DST] = dst;
    if (e.scratchpad) args[DNNL_ARG_SCRATCHPAD] = scratchpad_memory(e.scratchpad, engine);
    if (!e.manual_post_ops) post.add_args(args, e.dst_dims, in.channels_last, r, engine);
    e.prim.execute(s, args);
    if (e.dst_out.needed()) e.dst_out.apply(dst, user_y, s);
    s.wait();
  });
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
