// Unary elementwise ops: math functions, activations, predicates (IsNaN,
// IsInf, Not) and Clip. Each op is a small generic lambda applied
// by one templated loop; attributes are read once, when the kernel is built.
#include <cmath>
#include <limits>
#include <type_traits>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/fast_math.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {
namespace {

using core::DType;
using core::Tensor;

// y[i] = fn(x[i]) on all threads for big tensors, in checkpoint blocks. The
// loop body is inlined from `fn`, so float32 activations without libm calls
// vectorise.
template <typename T, typename O, typename Fn>
void map_elements(KernelRun& r, const T* x, O* y, size_t n, const Fn& fn) {
  const bool parallel = r.parallel(n > kParallelThreshold);
  for_checkpoint_blocks(r, static_cast<int64_t>(n), sizeof(T) + sizeof(O), [&](int64_t begin, int64_t end) {
    parallel_for(parallel, begin, end, [&](int64_t i) { y[i] = static_cast<O>(fn(x[i])); });
  });
}

// Output element type for input T: bool for predicates, T otherwise (integer
// promotion in the lambda, e.g. -int8, is narrowed back).
template <typename T, typename Fn>
using UnaryOut = std::conditional_t<std::is_same_v<decltype(std::declval<Fn>()(T())), bool>, bool, T>;

template <typename Types, bool half_ok, typename Fn>
void run_unary(KernelRun& r, const Fn& fn) {
  const Tensor* x = r.input(0);
  if (!x) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input 0 is missing");
  const DType dtype = x->dtype();
  if constexpr (half_ok) {
    if (is_half_type(dtype)) {
      const Tensor xf = to_float32(*x);
      using O = UnaryOut<float, Fn>;
      if constexpr (std::is_same_v<O, bool>) {
        map_elements(r, xf.data<float>(), r.output(0, DType::Bool, x->shape()).data<bool>(), x->numel(), fn);
      } else {
        Tensor tmp = Tensor::allocate(DType::F32, x->shape(), false);
        map_elements(r, xf.data<float>(), tmp.data<float>(), x->numel(), fn);
        narrow_from_float32(tmp, r.output(0, dtype, x->shape()));
      }
      return;
    }
  }
  dispatch_or_fail(Types{}, dtype, r.node(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = UnaryOut<T, Fn>;
    Tensor& out = r.output(0, core::DTypeOf<O>::value, x->shape());
    map_elements(r, x->data<T>(), out.data<O>(), x->numel(), fn);
  });
}

// The kernel of an op whose function `make(build)` returns from the node's
// attributes; Types are the element types it accepts besides float16/bfloat16.
template <typename Types, typename Make>
std::unique_ptr<Kernel> unary_kernel(const KernelBuild& b, Make make) {
  require_dtype(b, 0, Types{}, true);
  auto fn = make(b);
  return std::make_unique<FunctionKernel>([fn](KernelRun& r) { run_unary<Types, true>(r, fn); });
}
// The same for functions without attributes.
template <typename Types, typename Fn>
std::unique_ptr<Kernel> simple_unary(const KernelBuild& b, Fn fn) {
  return unary_kernel<Types>(b, [fn](const KernelBuild&) { return fn; });
}

// -x without overflow trouble for the most negative integer.
template <typename T>
T negate(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(x));
  else
    return -x;
}

float attr(const KernelBuild& b, const char* name, float fallback) { return b.node.attr_float(name, fallback); }

// log(1 + e^x) without overflowing e^x for large x.
constexpr auto kSoftplus = [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); };

}  // namespace

// ---- Clip: bounds are attributes before opset 11 and optional inputs after.

std::unique_ptr<Kernel> make_clip(const KernelBuild& b) {
  require_dtype(b, 0, NumericTypes{}, true);
  const bool attrs = b.opset < 11;
  const float attr_lo = attr(b, "min", -std::numeric_limits<float>::infinity());
  const float attr_hi = attr(b, "max", std::numeric_limits<float>::infinity());
  return std::make_unique<FunctionKernel>([attrs, attr_lo, attr_hi](KernelRun& r) {
    // A bound input that is absent or empty means no bound.
    auto bound = [&](size_t i) -> const Tensor* {
      const Tensor* t = attrs ? nullptr : r.input(i);
      return t && t->numel() > 0 ? t : nullptr;
    };
    const Tensor* lo_t = bound(1);
    const Tensor* hi_t = bound(2);
    const DType dtype = r.input(0) ? r.input(0)->dtype() : DType::Undefined;
    for (const Tensor* t : {lo_t, hi_t})
      if (t && t->dtype() != dtype)
        fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": bound of type " + core::dtype_name(t->dtype()) +
                                          " for input of type " + core::dtype_name(dtype));
    auto with_bounds = [&](auto lo, auto hi) {
      return [lo, hi](auto x) {
        const auto y = x < lo ? lo : x;
        return y > hi ? hi : y;
      };
    };
    if (is_half_type(dtype) || dtype == DType::F32) {  // float16 bounds are read widened
      const float lo = lo_t ? static_cast<float>(lo_t->as_double(0)) : attr_lo;
      const float hi = hi_t ? static_cast<float>(hi_t->as_double(0)) : attr_hi;
      run_unary<TypeList<float>, true>(r, with_bounds(lo, hi));
      return;
    }
    dispatch_or_fail(NumericTypes{}, dtype, r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (lo_t) lo = lo_t->data<T>()[0];
      if (hi_t) hi = hi_t->data<T>()[0];
      if constexpr (std::is_floating_point_v<T>) {
        if (attrs) lo = static_cast<T>(attr_lo), hi = static_cast<T>(attr_hi);
      }
      run_unary<TypeList<T>, false>(r, with_bounds(lo, hi));
    });
  });
}

// ---- Arithmetic and rounding.

std::unique_ptr<Kernel> make_abs(const KernelBuild& b) {
  return simple_unary<NumericTypes>(b, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? negate(x) : x;
  });
}

std::unique_ptr<Kernel> make_neg(const KernelBuild& b) {
  return simple_unary<SignedTypes>(b, [](auto x) { return negate(x); });
}

std::unique_ptr<Kernel> make_reciprocal(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return decltype(x)(1) / x; });
}

std::unique_ptr<Kernel> make_floor(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::floor(x); });
}

std::unique_ptr<Kernel> make_ceil(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::ceil(x); });
}

// Halves round to even, as ONNX (and the default FP environment) wants.
std::unique_ptr<Kernel> make_round(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::nearbyint(x); });
}

std::unique_ptr<Kernel> make_sign(const KernelBuild& b) {
  return simple_unary<NumericTypes>(b, [](auto x) {
    using T = decltype(x);
    return x > T(0) ? T(1) : x < T(0) ? negate(T(1)) : x;  // keeps 0, -0 and NaN
  });
}

// ---- libm functions.

std::unique_ptr<Kernel> make_sqrt(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::sqrt(x); });
}

std::unique_ptr<Kernel> make_exp(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::exp(x); });
}

std::unique_ptr<Kernel> make_log(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::log(x); });
}

std::unique_ptr<Kernel> make_sin(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::sin(x); });
}

std::unique_ptr<Kernel> make_cos(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::cos(x); });
}

std::unique_ptr<Kernel> make_tan(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::tan(x); });
}

std::unique_ptr<Kernel> make_asin(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::asin(x); });
}

std::unique_ptr<Kernel> make_acos(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::acos(x); });
}

std::unique_ptr<Kernel> make_atan(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::atan(x); });
}

std::unique_ptr<Kernel> make_sinh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::sinh(x); });
}

std::unique_ptr<Kernel> make_cosh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::cosh(x); });
}

std::unique_ptr<Kernel> make_asinh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::asinh(x); });
}

std::unique_ptr<Kernel> make_acosh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::acosh(x); });
}

std::unique_ptr<Kernel> make_atanh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::atanh(x); });
}

std::unique_ptr<Kernel> make_erf(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::erf(x); });
}

std::unique_ptr<Kernel> make_tanh(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return std::tanh(x); });
}

// ---- Predicates.

std::unique_ptr<Kernel> make_not(const KernelBuild& b) {
  return simple_unary<BoolTypes>(b, [](bool x) { return !x; });
}

std::unique_ptr<Kernel> make_is_nan(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) -> bool { return x != x; });
}

std::unique_ptr<Kernel> make_is_inf(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const bool pos = b.node.attr_int("detect_positive", 1) != 0;
    const bool neg = b.node.attr_int("detect_negative", 1) != 0;
    return [pos, neg](auto x) -> bool {
      using T = decltype(x);
      return (pos && x == std::numeric_limits<T>::infinity()) || (neg && x == -std::numeric_limits<T>::infinity());
    };
  });
}

// ---- Activations. Ternaries rather than std::max so loops vectorise.

std::unique_ptr<Kernel> make_relu(const KernelBuild& b) {
  return simple_unary<SignedTypes>(b, [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
}

std::unique_ptr<Kernel> make_leaky_relu(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 0.01f);
    return [alpha](auto x) { return x < 0 ? x * static_cast<decltype(x)>(alpha) : x; };
  });
}

std::unique_ptr<Kernel> make_thresholded_relu(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 1.0f);
    return [alpha](auto x) { return x > static_cast<decltype(x)>(alpha) ? x : decltype(x)(0); };
  });
}

// expm1 keeps the relative accuracy of alpha*(e^x - 1) for small |x|.
std::unique_ptr<Kernel> make_elu(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 1.0f);
    return [alpha](auto x) { return x < 0 ? static_cast<decltype(x)>(alpha) * std::expm1(x) : x; };
  });
}

std::unique_ptr<Kernel> make_selu(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 1.67326319217681884765625f);
    const float gamma = attr(b, "gamma", 1.05070102214813232421875f);
    return [alpha, gamma](auto x) {
      using T = decltype(x);
      return static_cast<T>(gamma) * (x <= 0 ? static_cast<T>(alpha) * std::expm1(x) : x);
    };
  });
}

std::unique_ptr<Kernel> make_celu(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 1.0f);
    return [alpha](auto x) {
      using T = decltype(x);
      const T a = static_cast<T>(alpha);
      return x > 0 ? x : a * std::expm1(x / a);
    };
  });
}

std::unique_ptr<Kernel> make_sigmoid(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, float>) return 1.0f / (1.0f + fast_expf(-x));
    else return T(1) / (T(1) + std::exp(-x));
  });
}

std::unique_ptr<Kernel> make_hard_sigmoid(const KernelBuild& build) {
  return unary_kernel<FloatTypes>(build, [](const KernelBuild& b) {
    const float alpha = attr(b, "alpha", 0.2f), beta = attr(b, "beta", 0.5f);
    return [alpha, beta](auto x) {
      using T = decltype(x);
      const T y = static_cast<T>(alpha) * x + static_cast<T>(beta);
      return y < 0 ? T(0) : (y > 1 ? T(1) : y);
    };
  });
}

std::unique_ptr<Kernel> make_hard_swish(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) {
    using T = decltype(x);
    const T y = x * T(1.0 / 6) + T(0.5);
    return x * (y < 0 ? T(0) : (y > 1 ? T(1) : y));
  });
}

std::unique_ptr<Kernel> make_softplus(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, kSoftplus);
}

std::unique_ptr<Kernel> make_softsign(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
}

std::unique_ptr<Kernel> make_mish(const KernelBuild& b) {
  return simple_unary<FloatTypes>(b, [](auto x) { return x * std::tanh(kSoftplus(x)); });
}

std::unique_ptr<Kernel> make_shrink(const KernelBuild& build) {
  return unary_kernel<NumericTypes>(build, [](const KernelBuild& b) {
    const double lambd = attr(b, "lambd", 0.5f), bias = attr(b, "bias", 0.0f);
    return [lambd, bias](auto x) {
      using T = decltype(x);
      const double v = static_cast<double>(x);
      return v < -lambd ? convert<T>(v + bias) : v > lambd ? convert<T>(v - bias) : T(0);
    };
  });
}

}  // namespace hetero::cpu
