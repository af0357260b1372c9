// Attribute parsing and layout helpers shared by Conv and ConvTranspose.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// The attributes Conv, ConvTranspose and the pools share, validated against
// the number of spatial dims once it is known.
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::NotSet;
  std::vector<int64_t> kernel_shape;  // empty: from the weights
  std::vector<int64_t> strides, dilations, pads;  // empty: defaults
  int64_t group = 1;

  static WindowAttrs parse(const core::Node& node);
  // Fills defaults for `spatial` dims and fails with INVALID_MODEL naming the
  // node when a list has the wrong length or a value is out of range.
  void resolve(const core::Node& node, size_t spatial);
};

AutoPad parse_auto_pad(const core::Node& node);

// Begin/end padding and output size of one spatial dim of a convolution or
// pool: NOTSET uses the explicit pads, SAME_* pads so that out = ceil(in /
// stride), VALID pads nothing. `ceil_mode` rounds the output size up (pools).
struct SpatialDim {
  int64_t pad_begin = 0, pad_end = 0, out = 0;
};
SpatialDim conv_output_dim(AutoPad auto_pad, int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode = false);

// The oneDNN view of one convolution: logical output dims (N, M,
// spatial...) and the strides, dilations (counted as gaps) and paddings its
// primitive takes. Fails naming the node when the kernel does not fit the
// input or disagrees with kernel_shape.
struct ConvGeometry {
  DnnlDims dst_dims, strides, dilates, pad_l, pad_r;
};
ConvGeometry conv_geometry(const core::Node& node, WindowAttrs attrs, const DnnlDims& src_dims,
                           const core::Shape& w_shape);

// Logical dims N, C, spatial... of a tensor whose memory order is N,
// spatial..., C when channels_last.
DnnlDims logical_dims(const core::Shape& memory_shape, bool channels_last);
// The memory-order shape of logical dims N, C, spatial....
core::Shape memory_shape(const DnnlDims& logical, bool channels_last);
// The descriptor of an activation of logical dims N, C, spatial....
dnnl::memory::desc activation_desc(const DnnlDims& logical, bool channels_last, dnnl_dt dt = dnnl_dt::f32);

// The descriptor oneDNN reads ONNX weights through: Conv's [M, C/G, k...] and
// ConvTranspose's [C, M/G, k...] both become dims [G, M/G, C/G, k...] (or
// [M, C, k...] for one group) with the strides of the ONNX memory order.
dnnl::memory::desc onnx_weights_desc(const core::Shape& w_shape, int64_t group, bool transposed,
                                     dnnl_dt dt = dnnl_dt::f32);

}  // namespace hetero::cpu
