#include "drivers/cpu/conv_util.h"

#include <algorithm>

namespace hetero::cpu {

AutoPad parse_auto_pad(const core::Node& node) {
  const std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  fail(HETERO_INVALID_MODEL, node.describe() + ": auto_pad '" + s + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

WindowAttrs WindowAttrs::parse(const core::Node& node) {
  WindowAttrs a;
  a.auto_pad = parse_auto_pad(node);
  a.kernel_shape = node.attr_ints("kernel_shape");
  a.strides = node.attr_ints("strides");
  a.dilations = node.attr_ints("dilations");
  a.pads = node.attr_ints("pads");
  a.group = node.attr_int("group", 1);
  if (a.group < 1) fail(HETERO_INVALID_MODEL, node.describe() + ": group must be at least 1");
  return a;
}

void WindowAttrs::resolve(const core::Node& node, size_t spatial) {
  auto check = [&](std::vector<int64_t>& v, size_t n, int64_t fallback, int64_t min, const char* name) {
    if (v.empty()) v.assign(n, fallback);
    if (v.size() != n)
      fail(HETERO_INVALID_MODEL, node.describe() + ": " + name + " has " + std::to_string(v.size()) +
                                     " values, expected " + std::to_string(n));
    for (int64_t x : v)
      if (x < min)
        fail(HETERO_INVALID_MODEL, node.describe() + ": " + name + " value " + std::to_string(x) + " is below " +
                                       std::to_string(min));
  };
  if (!kernel_shape.empty()) check(kernel_shape, spatial, 1, 1, "kernel_shape");
  check(strides, spatial, 1, 1, "strides");
  check(dilations, spatial, 1, 1, "dilations");
  check(pads, 2 * spatial, 0, 0, "pads");
}

SpatialDim conv_output_dim(AutoPad auto_pad, int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t ek = (kernel - 1) * dilation + 1;
  SpatialDim d;
  if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
    d.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (d.out - 1) * stride + ek - in);
    const int64_t small = total / 2;
    d.pad_begin = auto_pad == AutoPad::SameUpper ? small : total - small;
    d.pad_end = total - d.pad_begin;
    return d;
  }
  if (auto_pad == AutoPad::NotSet) {
    d.pad_begin = pad_begin;
    d.pad_end = pad_end;
  }
  const int64_t span = in + d.pad_begin + d.pad_end - ek;
  if (span < 0) {
    d.out = 0;
    return d;
  }
  d.out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // A last window that would start past the input and its begin padding
  // covers nothing; ceil mode does not create it.
  if (ceil_mode && (d.out - 1) * stride >= in + d.pad_begin) --d.out;
  return d;
}

ConvGeometry conv_geometry(const core::Node& node, WindowAttrs a, const DnnlDims& src_dims,
                           const core::Shape& w_shape) {
  const size_t spatial = src_dims.size() - 2;
  a.resolve(node, spatial);
  ConvGeometry g;
  g.dst_dims = {src_dims[0], w_shape[0]};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t k = w_shape[2 + i];
    if (!a.kernel_shape.empty() && a.kernel_shape[i] != k)
      fail(HETERO_INVALID_MODEL, node.describe() + ": kernel_shape disagrees with the weights " +
                                     core::shape_to_string(w_shape));
    const SpatialDim d = conv_output_dim(a.auto_pad, src_dims[2 + i], k, a.strides[i], a.dilations[i], a.pads[i],
                                         a.pads[spatial + i]);
    if (d.out <= 0)
      fail(HETERO_INVALID_ARGUMENT, node.describe() + ": input spatial size " + std::to_string(src_dims[2 + i]) +
                                        " is smaller than the kernel window");
    g.dst_dims.push_back(d.out);
    g.strides.push_back(a.strides[i]);
    g.dilates.push_back(a.dilations[i] - 1);  // oneDNN counts the gaps
    g.pad_l.push_back(d.pad_begin);
    // oneDNN wants the end padding that exactly produces the output size.
    g.pad_r.push_back((d.out - 1) * a.strides[i] + (k - 1) * a.dilations[i] + 1 - src_dims[2 + i] - d.pad_begin);
  }
  return g;
}

DnnlDims logical_dims(const core::Shape& memory_shape, bool channels_last) {
  DnnlDims d = to_dims(memory_shape);
  if (!channels_last || d.size() < 3) return d;
  DnnlDims l{d[0], d.back()};
  l.insert(l.end(), d.begin() + 1, d.end() - 1);
  return l;
}

core::Shape memory_shape(const DnnlDims& logical, bool channels_last) {
  core::Shape s(logical.begin(), logical.end());
  if (!channels_last || s.size() < 3) return s;
  core::Shape m{s[0]};
  m.insert(m.end(), s.begin() + 2, s.end());
  m.push_back(s[1]);
  return m;
}

dnnl::memory::desc activation_desc(const DnnlDims& logical, bool channels_last, dnnl_dt dt) {
  return channels_last ? channels_last_desc(logical, dt) : plain_desc(logical, dt);
}

dnnl::memory::desc onnx_weights_desc(const core::Shape& w_shape, int64_t group, bool transposed, dnnl_dt dt) {
  // ONNX order: dim0 (outer channels), dim1 (per-group channels), kernel...
  const size_t rank = w_shape.size();
  int64_t k = 1;
  for (size_t i = 2; i < rank; ++i) k *= w_shape[i];
  DnnlDims kernel_dims(w_shape.begin() + 2, w_shape.end());
  DnnlDims kernel_strides(rank - 2, 1);
  for (size_t i = rank - 2; i-- > 1;) kernel_strides[i - 1] = kernel_strides[i] * kernel_dims[i];
  const int64_t d0 = w_shape[0], d1 = w_shape[1];
  const int64_t per_group0 = d0 / group;  // Conv: M/G outputs; ConvTranspose: C/G inputs
  DnnlDims dims, strides;
  if (group > 1) dims.push_back(group), strides.push_back(per_group0 * d1 * k);
  if (!transposed) {
    // [G][M/G][C/G][k]: already oneDNN's order.
    dims.push_back(per_group0), strides.push_back(d1 * k);
    dims.push_back(d1), strides.push_back(k);
  } else {
    // ONNX [G][C/G][M/G][k] read as oneDNN [G][M/G (o)][C/G (i)][k].
    dims.push_back(d1), strides.push_back(k);
    dims.push_back(per_group0), strides.push_back(d1 * k);
  }
  dims.insert(dims.end(), kernel_dims.begin(), kernel_dims.end());
  strides.insert(strides.end(), kernel_strides.begin(), kernel_strides.end());
  return dnnl::memory::desc(dims, dt, strides);
}

}  // namespace hetero::cpu
