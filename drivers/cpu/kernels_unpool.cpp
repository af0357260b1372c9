// MaxUnpool (opsets 9 and 11): the values a MaxPool kept, put back at the
// positions its indices output recorded, zeros elsewhere.
//
// The output is the tensor MaxPool would have read, [N, C, (in - 1) * stride
// - pads + kernel ...], unless output_shape asks for more: then that tensor
// sits at the start of each axis of the larger output and the rest is zero,
// as ONNX's reference and test data have it. An index is a flat position in
// the inferred tensor, not in the larger output. (ONNX Runtime reads it as a
// position in the output instead, like PyTorch's max_unpool with
// output_size; the two agree whenever output_shape is the inferred shape.)
#include <cstring>
#include <string>
#include <vector>

#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::Shape;
using core::Tensor;

struct UnpoolAttrs {
  std::vector<int64_t> kernel, strides, pads;  // pads: begins then ends
};

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

}  // namespace

std::unique_ptr<Kernel> make_max_unpool(const KernelBuild& b) {
  UnpoolAttrs a;
  a.kernel = b.node.attr_ints("kernel_shape");
  const size_t k = a.kernel.size();
  if (k == 0) b.invalid("kernel_shape is required");
  a.strides = b.node.attr_ints("strides", std::vector<int64_t>(k, 1));
  a.pads = b.node.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  for (int64_t v : a.kernel)
    if (v < 1) b.invalid("kernel_shape " + list(a.kernel) + " must be positive");
  if (a.strides.size() != k) b.invalid("strides " + list(a.strides) + " must have one value per kernel axis");
  for (int64_t v : a.strides)
    if (v < 1) b.invalid("strides " + list(a.strides) + " must be positive");
  if (a.pads.size() != 2 * k) b.invalid("pads " + list(a.pads) + " must have two values per kernel axis");
  for (int64_t v : a.pads)
    if (v < 0) b.invalid("pads " + list(a.pads) + " must not be negative");
  if (const std::vector<core::Dim>* dims = b.input_dims(0); dims && dims->size() != k + 2)
    b.invalid("X has rank " + std::to_string(dims->size()) + ", a " + std::to_string(k) +
              "-D kernel needs rank " + std::to_string(k + 2));
  if (b.input_dtype(1) != core::DType::Undefined && b.input_dtype(1) != core::DType::I64)
    b.invalid(std::string("I must be int64, got ") + core::dtype_name(b.input_dtype(1)));
  return make_fn_kernel([a](KernelRun& r) {
    const core::Node& node = r.node();
    const Tensor& x = required_input(r, 0);
    const Tensor& indices = required_input(r, 1);
    const size_t k = a.kernel.size();
    if (x.rank() != k + 2)
      bad_input(node, "X " + core::shape_to_string(x.shape()) + " must have rank " + std::to_string(k + 2));
    if (indices.dtype() != core::DType::I64 || indices.shape() != x.shape())
      bad_input(node, std::string("I must be int64 of X's shape ") + core::shape_to_string(x.shape()) + ", got " +
                          core::dtype_name(indices.dtype()) + " " + core::shape_to_string(indices.shape()));
    Shape inferred = x.shape();
    for (size_t d = 0; d < k; ++d) {
      int64_t v = 0;
      const bool overflow = __builtin_mul_overflow(x.dim(d + 2) - 1, a.strides[d], &v) ||
                            __builtin_add_overflow(v, a.kernel[d], &v) || __builtin_sub_overflow(v, a.pads[d], &v) ||
                            __builtin_sub_overflow(v, a.pads[d + k], &v);
      if (overflow || v < 1)
        bad_input(node, "X " + core::shape_to_string(x.shape()) + " unpools to no valid size along axis " +
                            std::to_string(d + 2));
      inferred[d + 2] = v;
    }
    Shape out_shape = inferred;
    if (const Tensor* t = r.input(2)) {
      out_shape = int_input_values(node, *t, "output_shape");
      bool fits = out_shape.size() == inferred.size();
      for (size_t d = 0; fits && d < inferred.size(); ++d) fits = out_shape[d] >= inferred[d];
      if (!fits)
        bad_input(node, "output_shape " + core::shape_to_string(out_shape) + " must have rank " +
                            std::to_string(inferred.size()) + " and hold the unpooled " +
                            core::shape_to_string(inferred));
    }
    Tensor& y = r.output(0, x.dtype(), out_shape);  // zero bytes are zero in every dtype
    std::memset(y.raw(), 0, y.nbytes());
    const int64_t total = product(inferred, 0, inferred.size());
    const size_t elem = core::dtype_size(x.dtype());
    const int64_t* idx = indices.data<int64_t>();
    const bool same = out_shape == inferred;
    std::vector<int64_t> pos(inferred.size());
    for (size_t e = 0; e < x.numel(); ++e) {
      int64_t i = idx[e];
      if (i < 0 || i >= total)
        bad_input(node, "index " + std::to_string(i) + " at position " + std::to_string(e) + " is outside [0, " +
                            std::to_string(total) + ")");
      if (!same) {
        // The position in the inferred tensor, then in the larger output.
        for (size_t d = inferred.size(); d-- > 0;) {
          pos[d] = i % inferred[d];
          i /= inferred[d];
        }
        i = 0;
        for (size_t d = 0; d < out_shape.size(); ++d) i = i * out_shape[d] + pos[d];
      }
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(i) * elem,
                  static_cast<const char*>(x.raw()) + e * elem, elem);
    }
  });
}

}  // namespace hetero::cpu
