// MatMul and Gemm (and their hetero.cpu Fused* forms with post-ops) on
// oneDNN's matmul primitive: batched, with numpy broadcasting of the batch
// dims, 1-D operands, transposes as strides, alpha as an output scale and
// "+ beta * C" as a binary post-op.
#include <algorithm>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/matmul_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu {

ProductShapes product_shapes(const core::Node& node, const core::Shape& a_shape, const core::Shape& b_shape,
                             bool trans_a, bool trans_b) {
  if (a_shape.empty() || b_shape.empty())
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": operands must have rank 1 or more");
  DnnlDims a(a_shape.begin(), a_shape.end()), b(b_shape.begin(), b_shape.end());
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b = {b[0], 1};
  if (trans_a) std::swap(a[a.size() - 2], a[a.size() - 1]);
  if (trans_b) std::swap(b[b.size() - 2], b[b.size() - 1]);
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  ProductShapes p;
  p.m = a[rank - 2];
  p.k = a[rank - 1];
  p.n = b[rank - 1];
  if (b[rank - 2] != p.k)
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": inner dimensions differ: " + core::shape_to_string(a_shape) +
                                      " times " + core::shape_to_string(b_shape));
  p.y.resize(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      fail(HETERO_INVALID_ARGUMENT, node.describe() + ": batch dimensions of " + core::shape_to_string(a_shape) +
                                        " and " + core::shape_to_string(b_shape) + " do not broadcast");
    p.y[i] = a[i] == 1 ? b[i] : a[i];
  }
  p.y[rank - 2] = p.m;
  p.y[rank - 1] = p.n;
  p.a = std::move(a);
  p.b = std::move(b);
  p.out.assign(p.y.begin(), p.y.end());
  if (b_vector) p.out.erase(p.out.end() - 1);
  if (a_vector) p.out.erase(p.out.end() - (b_vector ? 1 : 2));
  return p;
}

dnnl::memory::desc matrix_desc(const DnnlDims& dims, bool transposed, dnnl_dt dt) {
  const size_t rank = dims.size();
  DnnlDims stored = dims;
  if (transposed) std::swap(stored[rank - 2], stored[rank - 1]);
  DnnlDims strides(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) strides[i - 1] = strides[i] * std::max<int64_t>(stored[i], 1);
  if (transposed) std::swap(strides[rank - 2], strides[rank - 1]);
  return dnnl::memory::desc(dims, dt, strides);
}

namespace {

class ProductKernel final : public Kernel {
 public:
  ProductKernel(const KernelBuild& b, bool gemm);
  void run(KernelRun& r) override;

 private:
  // The primitive for some of A's rows at a time, reading them inside A.
  struct Block {
    dnnl::matmul prim;
    dnnl::memory::desc a_desc, y_desc;
    size_t scratchpad = 0;
    bool reference = false;  // oneDNN's reference kernel (is_reference)
  };
  struct Entry {
    dnnl::matmul prim;
    dnnl::memory::desc a_desc, b_desc, b_user_desc, y_desc;
    ProductShapes shapes;
    bool manual_post_ops = false;
    size_t scratchpad = 0;
    bool reference = false;
    // A long product's rows per block (0: it runs whole), and the blocks'
    // primitives: block_rows rows, then the last block's fewer, if any.
    int64_t block_rows = 0;
    std::vector<Block> blocks;
  };
  Entry make_entry(KernelRun& r, const core::Shape& a_shape, const core::Shape& b_shape) const;
  // The rows of a plain 2-D product per block; 0 when it runs whole (small,
  // batched, or with post-ops, whose inputs would need cutting too).
  int64_t block_rows(const Entry& e) const;
  // The primitive for `rows` of A's rows at a time, B in the layout the whole
  // product reads it in.
  Block make_block(KernelRun& r, const Entry& e, int64_t rows) const;
  void run_blocks(KernelRun& r, const Entry& e, const core::Tensor& a, const core::Tensor& b, core::Tensor& y);

  const core::Node& node_;
  bool gemm_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f;  // Gemm: output scale (alpha / beta when C is a run-time input)
  PostOpChain post_;
  ReorderedConstant weights_;
  ShapeCache<Entry> cache_;
};

ProductKernel::ProductKernel(const KernelBuild& b, bool gemm) : node_(b.node), gemm_(gemm) {
  require_float_inputs(b, {0, 1, 2});
  post_ = PostOpChain::parse(b, gemm ? 3 : 2);
  if (gemm) {
    trans_a_ = b.node.attr_int("transA", 0) != 0;
    trans_b_ = b.node.attr_int("transB", 0) != 0;
    alpha_ = b.node.attr_float("alpha", 1.0f);
    const float beta = b.node.attr_float("beta", 1.0f);
    if (b.node.input(2) && beta != 0.0f) {
      // Y = alpha * A·B + beta * C as post-ops: a constant C is scaled once;
      // a run-time one is added to (alpha / beta) * A·B and the sum scaled by beta.
      PostOp add;
      add.kind = PostOp::Kind::Add;
      add.input = 2;
      if (const core::Tensor* c = b.constant_input(2)) {
        add.constant = c->clone();
        for (size_t i = 0; i < add.constant.numel(); ++i) add.constant.data<float>()[i] *= beta;
        post_.prepend(add);
      } else {
        if (beta != 1.0f) {
          PostOp scale;
          scale.kind = PostOp::Kind::Linear;
          scale.alpha = beta;
          post_.prepend(scale);
          alpha_ /= beta;
        }
        post_.prepend(add);
      }
    }
  }
  if (const core::Tensor* w = b.constant_input(1)) {
    if (w->rank() == 0) b.unsupported("B is a scalar");
    if (gemm && w->rank() != 2) b.unsupported("Gemm's B must be a matrix");
    weights_.set(*w);
  }
}

ProductKernel::Entry ProductKernel::make_entry(KernelRun& r, const core::Shape& a_shape,
                                               const core::Shape& b_shape) const {
  const dnnl::engine& engine = r.engine();
  Entry e;
  e.shapes = product_shapes(node_, a_shape, b_shape, trans_a_, trans_b_);
  e.a_desc = matrix_desc(e.shapes.a, trans_a_);
  const dnnl::memory::desc user_b = matrix_desc(e.shapes.b, trans_b_);
  e.b_user_desc = user_b;
  e.y_desc = plain_desc(e.shapes.y);
  // Constant weights may take whatever layout the primitive likes best.
  const dnnl::memory::desc b_md = weights_.empty() ? user_b : dnnl::memory::desc(e.shapes.b, dnnl_dt::f32, dnnl_tag::any);
  auto make_pd = [&](const dnnl::post_ops* po) {
    dnnl::primitive_attr attr = scratchpad_attr(po);
    if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(e.a_desc, b_md, e.y_desc), attr, engine);
  };
  const auto [pd, manual_post_ops] = make_with_post_ops(post_, e.shapes.y, false, r, make_pd);
  e.manual_post_ops = manual_post_ops;
  e.prim = dnnl::matmul(pd);
  e.b_desc = pd.weights_desc();
  e.scratchpad = pd.scratchpad_desc().get_size();
  e.reference = is_reference(pd);
  if (const int64_t rows = block_rows(e)) {
    // Blocks only where oneDNN runs them as fast as the whole: for some
    // strides (A transposed, B in a blocked layout) it has only its
    // reference kernel for a block's rows, a hundred times slower.
    bool fast = true;
    for (const int64_t count : {rows, e.shapes.m % rows}) {
      if (count == 0) continue;
      Block b = make_block(r, e, count);
      fast = fast && (!b.reference || e.reference);
      e.blocks.push_back(std::move(b));
    }
    if (fast) e.block_rows = rows;
    else e.blocks.clear();
  }
  return e;
}

int64_t ProductKernel::block_rows(const Entry& e) const {
  const ProductShapes& p = e.shapes;
  if (p.a.size() != 2 || !post_.empty() || e.manual_post_ops) return 0;
  return checkpoint_block_units(p.m, double(p.n) * double(p.k), kCheckpointMacs);
}

ProductKernel::Block ProductKernel::make_block(KernelRun& r, const Entry& e, int64_t rows) const {
  // A's rows keep their strides in the whole A: [m, k] stored row-major, or
  // transposed ([k, m] stored). Every block takes B as the whole product
  // does: a constant B in its reordered layout, a run-time one as it is.
  const int64_t m = e.shapes.m, k = e.shapes.k, n = e.shapes.n;
  Block block;
  block.a_desc = dnnl::memory::desc({rows, k}, dnnl_dt::f32, trans_a_ ? DnnlDims{1, m} : DnnlDims{k, 1});
  block.y_desc = dnnl::memory::desc({rows, n}, dnnl_dt::f32, DnnlDims{n, 1});
  dnnl::primitive_attr attr = scratchpad_attr();
  if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
  const dnnl::memory::desc& b_md = weights_.empty() ? e.b_user_desc : e.b_desc;
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(block.a_desc, b_md, block.y_desc), attr,
                                        r.engine());
  block.prim = dnnl::matmul(pd);
  block.scratchpad = pd.scratchpad_desc().get_size();
  block.reference = is_reference(pd);
  return block;
}

void ProductKernel::run_blocks(KernelRun& r, const Entry& e, const core::Tensor& a, const core::Tensor& b,
                               core::Tensor& y) {
  const int64_t m = e.shapes.m, k = e.shapes.k, n = e.shapes.n;
  const int64_t a_row_stride = trans_a_ ? 1 : k;
  dnnl::stream& s = r.stream();
  const dnnl::engine& engine = r.engine();
  const dnnl::memory b_memory = with_dnnl_errors(node_, [&] {
    return weights_.empty() ? r.views().bind(DNNL_ARG_WEIGHTS, e.b_user_desc, engine, b.raw())
                            : weights_.get(e.b_desc, e.b_user_desc, engine, s);
  });
  for (int64_t first = 0; first < m; first += e.block_rows) {
    const Block& block = e.blocks[first + e.block_rows <= m ? 0 : 1];
    with_dnnl_errors(node_, [&] {
      PrimitiveArgs args;
      MemoryViews& views = r.views();
      args[DNNL_ARG_SRC] = views.bind(DNNL_ARG_SRC, block.a_desc, engine, a.data<float>() + first * a_row_stride);
      args[DNNL_ARG_WEIGHTS] = b_memory;
      args[DNNL_ARG_DST] = views.bind(DNNL_ARG_DST, block.y_desc, engine, y.data<float>() + first * n);
      if (block.scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(block.scratchpad, engine);
      args.execute(block.prim, s);
      s.wait();
    });
    if (first + e.block_rows < m) r.checkpoint();
  }
}

void ProductKernel::run(KernelRun& r) {
  const core::Tensor* a = r.input(0);
  const core::Tensor* b = r.input(1);
  if (!a || !b) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input A or B is missing");
  if (a->dtype() != core::DType::F32 || b->dtype() != core::DType::F32)
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": A and B must be float32");
  if (gemm_ && (a->rank() != 2 || b->rank() != 2))
    fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": Gemm takes matrices, got " +
                                      core::shape_to_string(a->shape()) + " and " + core::shape_to_string(b->shape()));
  // Multiply-adds (at least): each of A's elements meets each of B's N columns.
  const int64_t n = b->rank() < 2 ? 1 : b->shape()[b->rank() - (trans_b_ ? 2 : 1)];
  const TeamForWork team(r.threads(), static_cast<double>(a->numel()) * static_cast<double>(n));
  std::vector<int64_t> key;
  key.reserve(16);
  append_key(key, a->shape());
  append_key(key, b->shape());
  post_.append_key(key, r);
  key.push_back(team.threads());
  auto e = with_dnnl_errors(node_, [&] { return cache_.get(key, [&] { return make_entry(r, a->shape(), b->shape()); }); });

  core::Tensor& y = r.output(0, core::DType::F32, e->shapes.out);
  if (y.numel() == 0) return;
  if (e->shapes.k == 0) {
    // An empty sum: zeros, then whatever follows.
    std::fill_n(y.data<float>(), y.numel(), 0.0f);
    post_.apply(y.data<float>(), y.shape(), r);
    return;
  }
  if (e->block_rows) return run_blocks(r, *e, *a, *b, y);
  with_dnnl_errors(node_, [&] {
    dnnl::stream& s = r.stream();
    const dnnl::engine& engine = r.engine();
    MemoryViews& views = r.views();
    PrimitiveArgs args;
    args[DNNL_ARG_SRC] = views.bind(DNNL_ARG_SRC, e->a_desc, engine, a->raw());
    args[DNNL_ARG_WEIGHTS] = weights_.empty() ? views.bind(DNNL_ARG_WEIGHTS, e->b_desc, engine, b->raw())
                                              : weights_.get(e->b_desc, e->b_user_desc, engine, s);
    args[DNNL_ARG_DST] = views.bind(DNNL_ARG_DST, e->y_desc, engine, y.raw());
    if (e->scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e->scratchpad, engine);
    if (!e->manual_post_ops) post_.add_args(args, e->shapes.y, false, r, engine);
    args.execute(e->prim, s);
    s.wait();
  });
  if (e->manual_post_ops) post_.apply(y.data<float>(), y.shape(), r);
}

}  // namespace

std::unique_ptr<Kernel> make_matmul(const KernelBuild& b) { return std::make_unique<ProductKernel>(b, false); }
std::unique_ptr<Kernel> make_gemm(const KernelBuild& b) { return std::make_unique<ProductKernel>(b, true); }

}  // namespace hetero::cpu
