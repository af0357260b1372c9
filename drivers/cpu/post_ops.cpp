#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/post_ops.h"

#include <algorithm>
#include <cmath>

#include "drivers/cpu/broadcast.h"

namespace hetero::cpu {

namespace {

struct KindName {
  PostOp::Kind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {PostOp::Kind::Relu, "relu"},       {PostOp::Kind::Elu, "elu"},       {PostOp::Kind::Clip, "clip"},
    {PostOp::Kind::Sigmoid, "sigmoid"}, {PostOp::Kind::Tanh, "tanh"},     {PostOp::Kind::Linear, "linear"},
    {PostOp::Kind::HardSwish, "hardswish"}, {PostOp::Kind::Add, "add"}, {PostOp::Kind::Mul, "mul"},
};

dnnl::algorithm eltwise_algorithm(PostOp::Kind kind) {
  switch (kind) {
    case PostOp::Kind::Relu: return dnnl::algorithm::eltwise_relu;
    case PostOp::Kind::Elu: return dnnl::algorithm::eltwise_elu;
    case PostOp::Kind::Clip: return dnnl::algorithm::eltwise_clip;
    case PostOp::Kind::Sigmoid: return dnnl::algorithm::eltwise_logistic;
    case PostOp::Kind::Tanh: return dnnl::algorithm::eltwise_tanh;
    case PostOp::Kind::Linear: return dnnl::algorithm::eltwise_linear;
    case PostOp::Kind::HardSwish: return dnnl::algorithm::eltwise_hardswish;
    case PostOp::Kind::Add: return dnnl::algorithm::binary_add;
    case PostOp::Kind::Mul: return dnnl::algorithm::binary_mul;
  }
  return dnnl::algorithm::undef;
}

// The scalar function of an elementwise post-op, as oneDNN defines it.
float eltwise(const PostOp& op, float x) {
  switch (op.kind) {
    case PostOp::Kind::Relu: return x > 0 ? x : op.alpha * x;
    case PostOp::Kind::Elu: return x > 0 ? x : op.alpha * std::expm1(x);
    case PostOp::Kind::Clip: return std::min(std::max(x, op.alpha), op.beta);
    case PostOp::Kind::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case PostOp::Kind::Tanh: return std::tanh(x);
    case PostOp::Kind::Linear: return op.alpha * x + op.beta;
    case PostOp::Kind::HardSwish: return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    default: return x;
  }
}

// `shape` with leading 1s up to `rank`.
core::Shape pad_rank(const core::Shape& shape, size_t rank) {
  core::Shape padded(rank - std::min(rank, shape.size()), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

}  // namespace

const char* post_op_name(PostOp::Kind kind) {
  for (const KindName& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "?";
}

std::optional<PostOp::Kind> post_op_kind(const std::string& name) {
  for (const KindName& k : kKindNames)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

PostOpChain PostOpChain::parse(const KernelBuild& b, size_t first_input) {
  PostOpChain chain;
  const core::Attribute* names = b.node.attr(kPostOpsAttr);
  if (!names) return chain;
  if (names->type != core::AttrType::Strings)
    fail(HETERO_INVALID_MODEL, b.node.describe() + ": attribute post_ops is not a list of strings");
  const std::vector<float> alpha = b.node.attr_floats(kPostAlphaAttr);
  const std::vector<float> beta = b.node.attr_floats(kPostBetaAttr);
  if (alpha.size() != names->strings.size() || beta.size() != names->strings.size())
    fail(HETERO_INVALID_MODEL, b.node.describe() + ": post_ops, post_alpha and post_beta differ in length");
  size_t next_input = first_input;
  for (size_t i = 0; i < names->strings.size(); ++i) {
    const auto kind = post_op_kind(names->strings[i]);
    if (!kind) fail(HETERO_INVALID_MODEL, b.node.describe() + ": unknown post-op '" + names->strings[i] + "'");
    PostOp op;
    op.kind = *kind;
    op.alpha = alpha[i];
    op.beta = beta[i];
    if (op.binary()) {
      op.input = next_input++;
      if (!b.node.input(op.input))
        fail(HETERO_INVALID_MODEL, b.node.describe() + ": post-op " + std::to_string(i) + " has no operand input");
      if (const core::Tensor* c = b.constant_input(op.input)) {
        if (c->dtype() != core::DType::F32) b.unsupported("a post-op operand is not float32");
        op.constant = *c;
      } else if (b.input_dtype(op.input) != core::DType::F32 && b.input_dtype(op.input) != core::DType::Undefined) {
        b.unsupported("a post-op operand is not float32");
      }
    }
    chain.ops_.push_back(std::move(op));
  }
  return chain;
}

const core::Tensor& PostOpChain::operand(const PostOp& op, const KernelRun& run) const {
  if (!op.constant.empty()) return op.constant;
  const core::Tensor* t = run.input(op.input);
  if (!t || t->empty()) fail(HETERO_INVALID_ARGUMENT, run.node().describe() + ": a fused operand is missing");
  if (t->dtype() != core::DType::F32)
    fail(HETERO_INVALID_ARGUMENT, run.node().describe() + ": a fused operand is not float32");
  return *t;
}

void PostOpChain::append_key(std::vector<int64_t>& key, const KernelRun& run) const {
  for (const PostOp& op : ops_)
    if (op.binary() && op.constant.empty()) cpu::append_key(key, operand(op, run).shape());
}

std::optional<dnnl::memory::desc> operand_desc(const core::Shape& memory_shape, size_t rank, bool channels_last) {
  if (memory_shape.size() > rank) return std::nullopt;
  const core::Shape padded = pad_rank(memory_shape, rank);
  DnnlDims strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(padded[i], 1);
  DnnlDims dims = to_dims(padded);
  if (channels_last && rank > 2) {
    // Memory order is N, spatial..., C: logical dim 1 is the last one.
    DnnlDims ldims{dims[0], dims[rank - 1]}, lstrides{strides[0], strides[rank - 1]};
    for (size_t i = 1; i + 1 < rank; ++i) {
      ldims.push_back(dims[i]);
      lstrides.push_back(strides[i]);
    }
    dims = std::move(ldims);
    strides = std::move(lstrides);
  }
  return dnnl::memory::desc(dims, dnnl_dt::f32, strides);
}

std::optional<dnnl::post_ops> PostOpChain::to_dnnl(const DnnlDims& dst_dims, bool channels_last,
                                                   const KernelRun& run) const {
  dnnl::post_ops po;
  for (const PostOp& op : ops_) {
    if (!op.binary()) {
      po.append_eltwise(1.0f, eltwise_algorithm(op.kind), op.alpha, op.beta);
      continue;
    }
    const auto md = operand_desc(operand(op, run).shape(), dst_dims.size(), channels_last);
    if (!md) return std::nullopt;
    // oneDNN broadcasts a dimension of size 1 only; anything else must match.
    const DnnlDims dims = md->dims();
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != 1 && dims[i] != dst_dims[i]) return std::nullopt;
    po.append_binary(eltwise_algorithm(op.kind), *md);
  }
  return po;
}

void PostOpChain::add_args(PrimitiveArgs& args, const DnnlDims& dst_dims, bool channels_last, KernelRun& run,
                           const dnnl::engine& engine) const {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i].binary()) continue;
    const core::Tensor& t = operand(ops_[i], run);
    const auto md = operand_desc(t.shape(), dst_dims.size(), channels_last);
    const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1;
    args[arg] = run.views().bind(arg, *md, engine, t.raw());
  }
}

void PostOpChain::apply(float* data, const core::Shape& shape, KernelRun& run) const {
  const size_t n = core::shape_numel(shape);
  for (const PostOp& op : ops_) {
    if (!op.binary()) {
      const int64_t count = static_cast<int64_t>(n);
      const bool parallel = run.parallel(count > 32768);
      for_checkpoint_blocks(run, count, 2 * sizeof(float), [&](int64_t begin, int64_t end) {
        parallel_for(parallel, begin, end, [&](int64_t i) { data[i] = eltwise(op, data[i]); });
      });
      continue;
    }
    const core::Tensor& t = operand(op, run);
    const Broadcast b = plan_broadcast({&shape, &t.shape()}, run.node());
    if (b.out_shape != shape)
      fail(HETERO_INVALID_ARGUMENT, run.node().describe() + ": fused operand of shape " +
                                        core::shape_to_string(t.shape()) + " does not broadcast onto the output " +
                                        core::shape_to_string(shape));
    const float* other = t.data<float>();
    const bool add = op.kind == PostOp::Kind::Add;
    for_each_segment<2>(run, b, [&](size_t out, const std::array<size_t, 2>& off, size_t len) {
      float* y = data + out;
      const float* z = other + off[1];
      if (b.inner_stride[1] == 0) {
        const float v = *z;
        for (size_t j = 0; j < len; ++j) y[j] = add ? y[j] + v : y[j] * v;
      } else {
        for (size_t j = 0; j < len; ++j) y[j] = add ? y[j] + z[j] : y[j] * z[j];
      }
    });
  }
}

}  // namespace hetero::cpu
