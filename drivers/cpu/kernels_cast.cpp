// Cast and CastLike between the numeric dtypes, bool, float16 and bfloat16.
// Element rules are convert<D>() in dtype_dispatch.h: C++ conversions, with
// float to integer truncating toward zero and never undefined. Strings are
// refused: heterod tensors have no string storage.
#include <cstring>
#include <string>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {
namespace {

using core::DType;
using core::Tensor;

// Cast-1 names its target with TensorProto's enum spelling.
DType dtype_from_onnx_name(const std::string& name) {
  static const struct {
    const char* name;
    DType dtype;
  } kNames[] = {
      {"FLOAT", DType::F32},  {"UINT8", DType::U8},    {"INT8", DType::I8},         {"UINT16", DType::U16},
      {"INT16", DType::I16},  {"INT32", DType::I32},   {"INT64", DType::I64},       {"STRING", DType::String},
      {"BOOL", DType::Bool},  {"FLOAT16", DType::F16}, {"DOUBLE", DType::F64},      {"UINT32", DType::U32},
      {"UINT64", DType::U64}, {"BFLOAT16", DType::BF16},
  };
  for (const auto& e : kNames)
    if (name == e.name) return e.dtype;
  return DType::Undefined;
}

bool castable(DType dtype) {
  return is_half_type(dtype) || dispatch(AllTypes{}, dtype, [](auto) {});
}

// Converts `x` into `y` (same element count). float16/bfloat16 go through
// float32 on either side, as ONNX Runtime does.
void cast_into(KernelRun& r, const Tensor& x, Tensor& y) {
  if (x.dtype() == y.dtype()) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  if (is_half_type(x.dtype())) {
    cast_into(r, to_float32(x), y);
    return;
  }
  if (is_half_type(y.dtype())) {
    Tensor tmp = Tensor::allocate(DType::F32, x.shape(), false);
    cast_into(r, x, tmp);
    narrow_from_float32(tmp, y);
    return;
  }
  const int64_t n = static_cast<int64_t>(x.numel());
  dispatch_or_fail(AllTypes{}, x.dtype(), r.node(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    dispatch_or_fail(AllTypes{}, y.dtype(), r.node(), [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* s = x.data<S>();
      D* d = y.data<D>();
      const bool parallel = r.parallel(n > int64_t(kParallelThreshold));
      for_checkpoint_blocks(r, n, sizeof(S) + sizeof(D), [&](int64_t begin, int64_t end) {
        parallel_for(parallel, begin, end, [&](int64_t i) { d[i] = convert<D>(s[i]); });
      });
    });
  });
}

void refuse_strings(const KernelBuild& b, DType dtype) {
  if (dtype == DType::String) b.unsupported("casting to or from strings is not supported");
}

}  // namespace

std::unique_ptr<Kernel> make_cast(const KernelBuild& b) {
  DType to = DType::Undefined;
  const core::Attribute* a = b.node.attr("to");
  if (!a) b.unsupported("attribute 'to' is missing");
  if (a->type == core::AttrType::String) {
    to = dtype_from_onnx_name(a->s);
    if (to == DType::Undefined) b.unsupported("unknown target type '" + a->s + "'");
  } else {
    to = static_cast<DType>(a->i);
    if (!core::dtype_is_known(static_cast<int32_t>(a->i)))
      b.unsupported("unknown target type " + std::to_string(a->i));
  }
  refuse_strings(b, to);
  refuse_strings(b, b.input_dtype(0));
  if (!castable(to)) b.unsupported(std::string("cannot cast to ") + core::dtype_name(to));
  return std::make_unique<FunctionKernel>([to](KernelRun& r) {
    const Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input 0 is missing");
    if (x->dtype() == to) {  // a no-op cast is a view, not a copy
      r.set_output(0, *x);
      return;
    }
    cast_into(r, *x, r.output(0, to, x->shape()));
  });
}

std::unique_ptr<Kernel> make_cast_like(const KernelBuild& b) {
  refuse_strings(b, b.input_dtype(0));
  refuse_strings(b, b.input_dtype(1));
  return std::make_unique<FunctionKernel>([](KernelRun& r) {
    const Tensor* x = r.input(0);
    const Tensor* like = r.input(1);
    if (!x || !like) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": needs two inputs");
    if (x->dtype() == like->dtype()) {
      r.set_output(0, *x);
      return;
    }
    cast_into(r, *x, r.output(0, like->dtype(), x->shape()));
  });
}

}  // namespace hetero::cpu
