// A convolution-shaped oneDNN primitive made for one input shape: Conv's
// convolution and ConvTranspose's deconvolution. Both kernels choose their
// primitive differently (geometry, weights read transposed or not) and then
// keep, key and run it the same way, here: the layout changes around it
// (activations stay in the layout the graph gave them, weights are
// reordered into the one the primitive prefers), its post-ops fused or run
// after, and its user scratchpad.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu {

struct WindowPrimitive {
  dnnl::primitive prim;
  LayoutChange src_in, dst_out, weights_in;  // user layout → primitive layout (dst: back)
  dnnl::memory::desc src_user, dst_user;     // how X and Y are read and written
  dnnl::memory::desc weights_user;           // how the ONNX weights are read
  dnnl::memory::desc weights_desc, bias_desc, dst_desc;
  DnnlDims dst_dims;      // logical N, M, spatial...
  core::Shape out_shape;  // in memory order
  bool manual_post_ops = false;
  size_t scratchpad = 0;
  bool reference = false;  // oneDNN's reference kernel (is_reference)

  // What the description `pd` of a `Primitive` (dnnl::convolution_forward,
  // dnnl::deconvolution_forward) chose, for an output of logical dims `dst`
  // and ONNX weights read through `user_w` (reordered on every run unless
  // `constant_weights`). X and Y are read and written through `user_src`
  // and `user_dst` in the kernel's layout: the whole tensors, or a part of
  // them (a block of output rows, kernels_conv.cpp).
  template <typename Primitive>
  void set(const typename Primitive::primitive_desc& pd, const dnnl::memory::desc& user_src,
           const dnnl::memory::desc& user_dst, const DnnlDims& dst, bool channels_last,
           const dnnl::memory::desc& user_w, bool constant_weights, const dnnl::memory::desc& bias, bool manual) {
    const dnnl::engine engine = pd.get_engine();
    prim = Primitive(pd);
    dst_dims = dst;
    out_shape = memory_shape(dst, channels_last);
    src_user = user_src;
    dst_user = user_dst;
    weights_user = user_w;
    src_in = LayoutChange(user_src, pd.src_desc(), engine);
    dst_desc = pd.dst_desc();
    dst_out = LayoutChange(pd.dst_desc(), user_dst, engine);
    weights_desc = pd.weights_desc();
    if (!constant_weights) weights_in = LayoutChange(user_w, pd.weights_desc(), engine);
    bias_desc = bias;
    manual_post_ops = manual;
    scratchpad = pd.scratchpad_desc().get_size();
    reference = is_reference(pd);
  }
};

// The memory descriptors a window primitive is described with: activations
// of `src_dims` and `dst_dims` in the kernel's layout, or in the one oneDNN
// picks when `any_layout` (it runs much faster there, even after reordering
// in and out); weights in the one it picks, read through `user_w`; a bias of
// `bias_channels` (0: none).
struct WindowDescs {
  dnnl::memory::desc src, dst, weights, bias;
};
WindowDescs window_descs(const DnnlDims& src_dims, const DnnlDims& dst_dims, const dnnl::memory::desc& user_w,
                         bool channels_last, bool any_layout, int64_t bias_channels);

// What both kernels take from their node when they are built: float X, W and
// B; the post-ops fused after them (inputs 3 on); and constant weights, of
// rank 3 or more and whose first dim (`first_dim`: output channels for Conv,
// input channels for ConvTranspose) is a multiple of the group, kept in
// `weights` to be reordered once. Refuses the node (KernelBuild::unsupported)
// otherwise.
void build_window_kernel(const KernelBuild& b, const char* first_dim, WindowAttrs& attrs, PostOpChain& post,
                         ReorderedConstant& weights);

// A window kernel's X and W at run time, checked (present, float32, ranks
// that match), and X's logical dims in the kernel's layout. The channel and
// bias checks, which differ between the two, are the kernel's.
struct WindowOperands {
  const core::Tensor& x;
  const core::Tensor& w;
  DnnlDims src_dims;
};
WindowOperands window_operands(const core::Node& node, KernelRun& r, bool channels_last);

// What a window primitive made for `x` depends on besides the node: its key
// in the kernel's ShapeCache.
std::vector<int64_t> window_primitive_key(const core::Tensor& x, const core::Tensor& w, bool constant_weights,
                                          const core::Tensor* bias, const PostOpChain& post, const KernelRun& r);

// The input a window kernel runs on, and how its weights are read.
struct WindowInputs {
  const core::Tensor& x;
  const core::Tensor& w;
  const core::Tensor* bias;
  DnnlDims src_dims;            // x's logical dims
  bool channels_last;
  ReorderedConstant& weights;   // the constant weights, if they are
};

// Runs `e` into `y` (shaped e.out_shape): the primitive with its fused
// post-ops, or followed by the chain where they could not be fused.
void run_window_primitive(KernelRun& r, const core::Node& node, const WindowPrimitive& e, const WindowInputs& in,
                          const PostOpChain& post, core::Tensor& y);
// The primitive alone, with the post-ops it fused, reading X through
// e.src_user from `x` on and writing Y through e.dst_user from `y` on.
void execute_window_primitive(KernelRun& r, const core::Node& node, const WindowPrimitive& e,
                              const WindowInputs& in, const PostOpChain& post, const float* x, float* y);

// ---- Blocks of output rows.
//
// A long Conv or ConvTranspose runs in blocks of output rows of its first
// spatial dim, with a checkpoint between two (drivers/cpu/checkpoint_blocks.h):
// each block is a primitive of its own over the input rows it reads, with
// the padding that falls inside them. The kernel says how its geometry cuts
// (a convolution's input rows follow its output rows; a deconvolution's
// output rows follow its input rows) and makes each block's primitive.

// The part that makes output rows [first, first + count): the input rows it
// reads, from `src_first` on, and its geometry.
struct RowBlock {
  int64_t first = 0, count = 0;
  int64_t src_first = 0;
  DnnlDims src_dims;
  ConvGeometry geo;
};

// X's and Y's descriptors for `block` of a window primitive over the whole
// `src_dims` and `whole_dst_dims` (or the whole tensors when `block` is
// null): a view inside the whole tensors from the block's first rows on.
dnnl::memory::desc block_src_desc(const DnnlDims& src_dims, const RowBlock* block, bool channels_last);
dnnl::memory::desc block_dst_desc(const DnnlDims& whole_dst_dims, const RowBlock* block, bool channels_last);

class RowBlocks {
 public:
  // The block of `count` rows from `first`; nullopt where the geometry
  // leaves no primitive for it.
  using Cut = std::function<std::optional<RowBlock>(int64_t first, int64_t count)>;
  using Make = std::function<WindowPrimitive(const RowBlock&)>;

  // Cuts `out_rows` into blocks of `rows` and makes a primitive per block
  // shape (rows read, rows made, padding at either end). False, and
  // nothing kept, where a block cannot be cut, runs on oneDNN's reference
  // kernel (a hundred times slower than the whole would be), or fuses the
  // post-ops where another does not (run applies an unfused chain once,
  // to the whole).
  bool make(int64_t out_rows, int64_t rows, const Cut& cut, const Make& make);
  bool empty() const { return blocks_.empty(); }
  // Runs every block into y, with a checkpoint between two, then the
  // post-op chain where the blocks did not fuse it.
  void run(KernelRun& r, const core::Node& node, const WindowInputs& in, const PostOpChain& post,
           core::Tensor& y) const;

 private:
  std::vector<RowBlock> blocks_;
  std::vector<size_t> primitive_of_;  // per block: its shape's primitive
  std::vector<WindowPrimitive> primitives_;
};

}  // namespace hetero::cpu
