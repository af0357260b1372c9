// Post-ops: the elementwise steps graph_fusion folded into a convolution or
// matrix product node. oneDNN applies them inside the primitive while the
// output is still in cache; where it cannot (an operand broadcast it has no
// kernel for), a plain loop applies them to the finished output.
//
// On the node they are three parallel attributes, `post_ops` (names below),
// `post_alpha` and `post_beta`; each Add/Mul takes its other operand from
// the next node input after the op's own inputs. An operand is stored in the
// output's memory order (for a channels-last node, permuted like the output).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

inline constexpr const char* kPostOpsAttr = "post_ops";
inline constexpr const char* kPostAlphaAttr = "post_alpha";
inline constexpr const char* kPostBetaAttr = "post_beta";
// Set to 1 on nodes whose activations are stored channels-last (N, spatial..., C).
inline constexpr const char* kChannelsLastAttr = "channels_last";

struct PostOp {
  enum class Kind { Relu, Elu, Clip, Sigmoid, Tanh, Linear, HardSwish, Add, Mul };
  Kind kind = Kind::Relu;
  float alpha = 0;  // Relu: negative slope; Elu: alpha; Clip: low; Linear: scale
  float beta = 0;   // Clip: high; Linear: shift
  size_t input = 0;      // Add/Mul: node input of the other operand
  core::Tensor constant; // Add/Mul: the operand when it is a constant
  bool binary() const { return kind == Kind::Add || kind == Kind::Mul; }
};

const char* post_op_name(PostOp::Kind kind);
std::optional<PostOp::Kind> post_op_kind(const std::string& name);

class PostOpChain {
 public:
  PostOpChain() = default;
  // Reads the post-op attributes of the node; binary operands are node
  // inputs first_input, first_input + 1, ... Fails with INVALID_MODEL naming
  // the node when the attributes disagree.
  static PostOpChain parse(const KernelBuild& b, size_t first_input);

  bool empty() const { return ops_.empty(); }
  // True when a step reads another tensor (Add, Mul), laid out like the output.
  bool reads_operands() const {
    for (const PostOp& op : ops_)
      if (op.binary()) return true;
    return false;
  }
  // Puts `op` first (Gemm's own "+ beta * C" runs before any fused step).
  void prepend(PostOp op) { ops_.insert(ops_.begin(), std::move(op)); }
  const std::vector<PostOp>& ops() const { return ops_; }
  // Adds the shapes of the run-time binary operands to a primitive cache key.
  void append_key(std::vector<int64_t>& key, const KernelRun& run) const;
  // The oneDNN post-ops for an output of logical dims `dst_dims` (N, C,
  // spatial... for convolutions) stored channels-last or plain. Null when an
  // operand does not broadcast onto the output as oneDNN expects.
  std::optional<dnnl::post_ops> to_dnnl(const DnnlDims& dst_dims, bool channels_last, const KernelRun& run) const;
  // Adds the binary operands' memory to a primitive's arguments.
  void add_args(PrimitiveArgs& args, const DnnlDims& dst_dims, bool channels_last, KernelRun& run,
                const dnnl::engine& engine) const;
  // Applies the chain to `data` (`shape` in memory order), for when the
  // primitive was built without post-ops.
  void apply(float* data, const core::Shape& shape, KernelRun& run) const;

 private:
  const core::Tensor& operand(const PostOp& op, const KernelRun& run) const;
  std::vector<PostOp> ops_;
};

// A primitive descriptor of a kernel with a post-op chain (convolution,
// deconvolution, matrix product), and whether the kernel must apply the
// chain itself after the primitive ran.
template <typename PrimitiveDesc>
struct PostOpsPrimitive {
  PrimitiveDesc pd;
  bool manual_post_ops = false;  // run PostOpChain::apply on the output
};

// Builds the primitive descriptor with `chain` fused into it when oneDNN can
// do that fast, else without post-ops (then manual_post_ops is set).
// `make_pd(const dnnl::post_ops*)` builds the descriptor with the given
// post-ops, or with none when passed null. The chain is fused only when its
// operands broadcast as oneDNN expects (PostOpChain::to_dnnl), oneDNN accepts
// the combination, and the implementation it picks is not its reference one:
// the reference kernels are slower than the plain primitive followed by the
// chain as a loop.
template <typename MakePd>
auto make_with_post_ops(const PostOpChain& chain, const DnnlDims& dst_dims, bool channels_last,
                        const KernelRun& run, MakePd&& make_pd) -> PostOpsPrimitive<decltype(make_pd(nullptr))> {
  if (!chain.empty()) {
    if (const auto po = chain.to_dnnl(dst_dims, channels_last, run)) {
      try {
        auto pd = make_pd(&*po);
        if (!is_reference(pd)) return {std::move(pd), false};
      } catch (const dnnl::error&) {
        // A combination oneDNN refuses: the chain runs as a loop.
      }
    }
  }
  return {make_pd(nullptr), !chain.empty()};
}

// The descriptor of `t` (shape in memory order, right-aligned to rank
// dst_dims.size()) as oneDNN sees a tensor broadcast onto logical dims
// `dst_dims`; channels_last permutes memory order N, spatial..., C back to
// logical N, C, spatial.... Null when the operand's rank exceeds the output's.
std::optional<dnnl::memory::desc> operand_desc(const core::Shape& memory_shape, size_t rank, bool channels_last);

}  // namespace hetero::cpu
