// Binary and n-ary elementwise ops with numpy broadcasting: arithmetic, Pow,
// Mod, bit shifts, comparisons, logic, PRelu, variadic Max/Min/Sum/Mean and
// Where. Unary ops live in kernels_unary.cpp, Cast in kernels_cast.cpp.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "drivers/cpu/broadcast.h"
#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

// ---- Integer arithmetic without undefined behaviour: signed overflow wraps
// (through unsigned arithmetic at least as wide as `unsigned`, which compiles
// to the same instructions), and INT_MIN / -1 does not trap.
template <typename T>
using Wrap = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(Wrap<T>(a) + Wrap<T>(b));
  else return a + b;
}
template <typename T>
T sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(Wrap<T>(a) - Wrap<T>(b));
  else return a - b;
}
template <typename T>
T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(Wrap<T>(a) * Wrap<T>(b));
  else return a * b;
}
// Integer divisors were checked for zero before the loop (see check_divisor).
template <typename T>
T div(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    if (b == -1) return sub(T(0), a);
  return static_cast<T>(a / b);
}
// C's remainder: the sign of the dividend (Mod with fmod=1).
template <typename T>
T mod_trunc(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::fmod(a, b);
  else if constexpr (std::is_signed_v<T>) return b == -1 ? T(0) : static_cast<T>(a % b);
  else return static_cast<T>(a % b);
}
// Python's remainder: the sign of the divisor (Mod with fmod=0).
template <typename T>
T mod_floor(T a, T b) {
  T r = mod_trunc(a, b);
  if constexpr (std::is_signed_v<T>)
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  return r;
}
// Integer a**e by squaring (exact where pow() in double would round).
template <typename T>
T int_pow(T a, int64_t e) {
  if (e < 0) return a == 1 ? T(1) : a == -1 ? T(e % 2 ? -1 : 1) : T(0);
  T result = 1;
  while (e) {
    if (e & 1) result = mul(result, a);
    a = mul(a, a);
    e >>= 1;
  }
  return result;
}

// ---- Broadcast loops.

// out[j] = op(a[j], b[j]) over broadcast `bc`, whose inputs ia and ib are a
// and b. The four inner-stride cases are separate loops so each vectorises.
// `out` may be `a` itself (variadic ops accumulate in place).
template <size_t N, typename A, typename B, typename O, typename Op>
void apply_binary(KernelRun& r, const Broadcast& bc, size_t ia, size_t ib, const A* a, const B* b, O* out, Op op) {
  const bool sa = bc.inner_stride[ia] != 0, sb = bc.inner_stride[ib] != 0;
  for_each_segment<N>(r, bc, [&](size_t o, const std::array<size_t, N>& off, size_t len) {
    const A* pa = a + off[ia];
    const B* pb = b + off[ib];
    O* po = out + o;
    if (sa && sb) {
      for (size_t i = 0; i < len; ++i) po[i] = op(pa[i], pb[i]);
    } else if (sa) {
      const B y = *pb;
      for (size_t i = 0; i < len; ++i) po[i] = op(pa[i], y);
    } else if (sb) {
      const A x = *pa;
      for (size_t i = 0; i < len; ++i) po[i] = op(x, pb[i]);
    } else {
      const O v = op(*pa, *pb);
      for (size_t i = 0; i < len; ++i) po[i] = v;
    }
  });
}

template <typename T>
const T* ptr(const Tensor& t) {
  return t.data<T>();
}

// ---- Shapes of legacy (opset < 7) broadcasting.

// Before opset 7, Add/Mul/... broadcast B onto A only when broadcast=1, with
// `axis` saying where B's dims start in A; without `axis` B aligns with A's
// trailing dims, which numpy rules already do.
Shape legacy_b_shape(const Shape& a, const Shape& b, int64_t axis, const core::Node& node) {
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": legacy broadcast of shape " + core::shape_to_string(b) +
                                      " onto " + core::shape_to_string(a) + " at axis " + std::to_string(axis) +
                                      " does not fit");
  Shape s(static_cast<size_t>(ra), 1);
  for (int64_t d = 0; d < rb; ++d) s[static_cast<size_t>(axis + d)] = b[static_cast<size_t>(d)];
  return s;
}

enum class ShapeRule {
  Numpy,
  LegacyAxis,    // opset < 7 with broadcast=1 and an axis attribute
  PreluChannel,  // PRelu before opset 7: a 1-D slope of size C is per channel
};

struct BinarySpec {
  ShapeRule rule = ShapeRule::Numpy;
  int64_t axis = 0;
  bool nonzero_divisor = false;  // integer Div/Mod: refuse a zero divisor
};

BinarySpec binary_spec(const KernelBuild& build) {
  BinarySpec spec;
  const core::Node& node = build.node;
  if (build.opset < 7 && node.attr_int("broadcast", 0) == 1 && node.has_attr("axis")) {
    spec.rule = ShapeRule::LegacyAxis;
    spec.axis = node.attr_int("axis", 0);
  }
  return spec;
}

// B's shape for the broadcast: its own, or one the legacy rules give, made
// in `legacy` (B's own is not copied: this runs at every inference).
const Shape& b_shape(const BinarySpec& spec, const Tensor& a, const Tensor& b, const core::Node& node, Shape& legacy) {
  switch (spec.rule) {
    case ShapeRule::LegacyAxis:
      return legacy = legacy_b_shape(a.shape(), b.shape(), spec.axis, node);
    case ShapeRule::PreluChannel:
      if (b.rank() == 1 && a.rank() >= 2 && b.dim(0) == a.dim(1) && b.dim(0) != 1)
        return legacy = legacy_b_shape(a.shape(), b.shape(), 1, node);
      return b.shape();
    case ShapeRule::Numpy:
      break;
  }
  return b.shape();
}

template <typename T>
void check_divisor(const KernelRun& r, const Tensor& b) {
  if constexpr (std::is_integral_v<T>) {
    const T* p = b.data<T>();
    for (size_t i = 0; i < b.numel(); ++i)
      if (p[i] == 0) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": integer division by zero");
  }
}

void need_inputs(const KernelRun& r, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!r.input(i)) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input " + std::to_string(i) + " is missing");
}

void same_dtype(const KernelRun& r, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": inputs have different types (" + core::dtype_name(a.dtype()) +
                                      " and " + core::dtype_name(b.dtype()) + ")");
}

// out = op(a, b) for a and b of one type T in `Types`; the output type is
// op's result type (T, or bool for comparisons). float16/bfloat16 compute in
// float32 when `half_ok`.
template <typename Types, bool half_ok, typename Op>
std::unique_ptr<Kernel> binary_kernel(const KernelBuild& build, Op op, BinarySpec spec = {}) {
  require_dtype(build, 0, Types{}, half_ok);
  return std::make_unique<FunctionKernel>([op, spec](KernelRun& r) {
    need_inputs(r, 2);
    const Tensor* a = r.input(0);
    const Tensor* b = r.input(1);
    same_dtype(r, *a, *b);
    Shape legacy;
    const Shape& sb = b_shape(spec, *a, *b, r.node(), legacy);
    const Broadcast& bc = memo_broadcast(r, {&a->shape(), &sb});
    const DType dtype = a->dtype();
    if constexpr (half_ok) {
      if (is_half_type(dtype)) {
        const Tensor fa = to_float32(*a), fb = to_float32(*b);
        using O = decltype(op(0.0f, 0.0f));
        if constexpr (std::is_same_v<O, bool>) {
          Tensor& out = r.output(0, DType::Bool, bc.out_shape);
          apply_binary<2>(r, bc, 0, 1, ptr<float>(fa), ptr<float>(fb), out.data<bool>(), op);
        } else {
          Tensor tmp = Tensor::allocate(DType::F32, bc.out_shape, false);
          apply_binary<2>(r, bc, 0, 1, ptr<float>(fa), ptr<float>(fb), tmp.data<float>(), op);
          narrow_from_float32(tmp, r.output(0, dtype, bc.out_shape));
        }
        return;
      }
    }
    dispatch_or_fail(Types{}, dtype, r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using O = decltype(op(T(), T()));
      if (spec.nonzero_divisor) check_divisor<T>(r, *b);
      Tensor& out = r.output(0, core::DTypeOf<O>::value, bc.out_shape);
      apply_binary<2>(r, bc, 0, 1, ptr<T>(*a), ptr<T>(*b), out.data<O>(), op);
    });
  });
}

// ---- Pow: base and exponent may differ in type (Pow(float, int64), ...).

using PowBaseTypes = TypeList<float, double, int32_t, int64_t>;

template <typename B, typename E>
B pow_elem(B a, E e) {
  if constexpr (std::is_floating_point_v<B>) {
    return std::pow(a, static_cast<B>(e));
  } else if constexpr (std::is_integral_v<E>) {
    return int_pow(a, static_cast<int64_t>(e));
  } else {
    return convert<B>(std::pow(static_cast<double>(a), static_cast<double>(e)));
  }
}

// Pow with a constant-like scalar exponent of 2, 0.5 or 1 (squares and roots
// in real models) needs no pow() call.
template <typename B>
bool pow_fast_path(KernelRun& r, const Tensor& base, double e, Tensor& out) {
  const B* x = base.data<B>();
  B* y = out.data<B>();
  const int64_t n = static_cast<int64_t>(base.numel());
  const bool parallel = r.parallel(n > int64_t(kParallelThreshold));
  if (e == 2) {
    for_checkpoint_blocks(r, n, 2 * sizeof(B), [&](int64_t begin, int64_t end) {
      parallel_for(parallel, begin, end, [&](int64_t i) { y[i] = x[i] * x[i]; });
    });
  } else if (e == 0.5 && std::is_floating_point_v<B>) {
    for_checkpoint_blocks(r, n, 2 * sizeof(B), [&](int64_t begin, int64_t end) {
      parallel_for(parallel, begin, end, [&](int64_t i) { y[i] = static_cast<B>(std::sqrt(x[i])); });
    });
  } else if (e == 1) {
    std::memcpy(y, x, base.nbytes());
  } else {
    return false;
  }
  return true;
}

// ---- Variadic Max/Min/Sum/Mean: a left fold over broadcast inputs.

template <typename Op>
std::unique_ptr<Kernel> variadic_kernel(const KernelBuild& build, Op op, bool mean) {
  for (size_t i = 0; i < build.node.inputs.size(); ++i) require_dtype(build, i, NumericTypes{}, true);
  return std::make_unique<FunctionKernel>([op, mean](KernelRun& r) {
    std::vector<const Tensor*> in;
    for (size_t i = 0; i < r.num_inputs(); ++i)
      if (r.input(i)) in.push_back(r.input(i));
    if (in.empty()) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": needs at least one input");
    for (const Tensor* t : in) same_dtype(r, *in[0], *t);
    const DType dtype = in[0]->dtype();
    std::vector<Tensor> widened;  // float32 copies of float16/bfloat16 inputs
    if (is_half_type(dtype)) {
      widened.reserve(in.size());
      for (const Tensor*& t : in) t = &widened.emplace_back(to_float32(*t));
    }
    std::vector<const Shape*> shapes;
    for (const Tensor* t : in) shapes.push_back(&t->shape());
    const Shape full = broadcast_shape(shapes, r.node());
    Tensor tmp;
    Tensor& out = widened.empty() ? r.output(0, dtype, full) : (tmp = Tensor::allocate(DType::F32, full, false));

    dispatch_or_fail(NumericTypes{}, in[0]->dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      // The first step broadcasts to the full shape (a dummy input of that
      // shape fixes it); later steps fold each input into `out` in place.
      if (in.size() == 1) {
        const Broadcast bc = plan_broadcast({&full, shapes[0]}, r.node());
        apply_binary<2>(r, bc, 1, 1, ptr<T>(*in[0]), ptr<T>(*in[0]), o, [](T x, T) { return x; });
      } else {
        const Broadcast bc = plan_broadcast({&full, shapes[0], shapes[1]}, r.node());
        apply_binary<3>(r, bc, 1, 2, ptr<T>(*in[0]), ptr<T>(*in[1]), o, [&](T x, T y) { return static_cast<T>(op(x, y)); });
      }
      for (size_t k = 2; k < in.size(); ++k) {
        const Broadcast bc = plan_broadcast({&full, shapes[k]}, r.node());
        apply_binary<2>(r, bc, 0, 1, static_cast<const T*>(o), ptr<T>(*in[k]), o,
                        [&](T x, T y) { return static_cast<T>(op(x, y)); });
      }
      if (mean) {
        const T count = static_cast<T>(in.size());
        const size_t n = out.numel();
        for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(o[i] / count);
      }
    });
    if (!widened.empty()) narrow_from_float32(tmp, r.output(0, dtype, full));
  });
}

// An op whose functor does not depend on attributes; opsets before 7 may
// ask for legacy broadcasting.
template <typename Types, bool half_ok, typename Op>
std::unique_ptr<Kernel> simple_binary(const KernelBuild& b, Op op, bool nonzero_divisor = false) {
  BinarySpec spec = binary_spec(b);
  spec.nonzero_divisor = nonzero_divisor;
  return binary_kernel<Types, half_ok>(b, op, spec);
}

// Ternaries instead of std::max/min: they vectorise to max/min instructions.
constexpr auto kMax = [](auto a, auto b) { return a < b ? b : a; };
constexpr auto kMin = [](auto a, auto b) { return b < a ? b : a; };
constexpr auto kAdd = [](auto a, auto b) { return add(a, b); };

}  // namespace

std::unique_ptr<Kernel> make_pow(const KernelBuild& build) {
  require_dtype(build, 0, PowBaseTypes{}, true);
  require_dtype(build, 1, NumericTypes{}, true);
  BinarySpec spec = binary_spec(build);
  return std::make_unique<FunctionKernel>([spec](KernelRun& r) {
    need_inputs(r, 2);
    const Tensor* a = r.input(0);
    const Tensor* b = r.input(1);
    Tensor wa, wb;  // float32 copies of float16/bfloat16 inputs
    if (is_half_type(a->dtype())) a = &(wa = to_float32(*a));
    if (is_half_type(b->dtype())) b = &(wb = to_float32(*b));
    Shape legacy;
    const Shape& sb = b_shape(spec, *a, *b, r.node(), legacy);
    const Broadcast& bc = memo_broadcast(r, {&a->shape(), &sb});
    const DType out_dtype = r.input(0)->dtype();
    Tensor tmp;
    Tensor& out = wa.empty() ? r.output(0, out_dtype, bc.out_shape)
                             : (tmp = Tensor::allocate(DType::F32, bc.out_shape, false));
    dispatch_or_fail(PowBaseTypes{}, a->dtype(), r.node(), [&](auto base_tag) {
      using B = typename decltype(base_tag)::type;
      if (b->numel() == 1 && bc.out_shape == a->shape() && pow_fast_path<B>(r, *a, b->as_double(0), out)) return;
      dispatch_or_fail(NumericTypes{}, b->dtype(), r.node(), [&](auto exp_tag) {
        using E = typename decltype(exp_tag)::type;
        apply_binary<2>(r, bc, 0, 1, ptr<B>(*a), ptr<E>(*b), out.data<B>(), [](B x, E e) { return pow_elem(x, e); });
      });
    });
    if (!wa.empty()) narrow_from_float32(tmp, r.output(0, out_dtype, bc.out_shape));
  });
}

// ---- Where(condition, X, Y): selection only moves bits, so any dtype is
// handled by its element width.

std::unique_ptr<Kernel> make_where(const KernelBuild&) {
  return std::make_unique<FunctionKernel>([](KernelRun& r) {
    need_inputs(r, 3);
    const Tensor& c = *r.input(0);
    const Tensor& x = *r.input(1);
    const Tensor& y = *r.input(2);
    if (c.dtype() != DType::Bool)
      fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": condition must be bool, not " + core::dtype_name(c.dtype()));
    same_dtype(r, x, y);
    const Broadcast& bc = memo_broadcast(r, {&c.shape(), &x.shape(), &y.shape()});
    Tensor& out = r.output(0, x.dtype(), bc.out_shape);
    dispatch_width(x.dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool* pc = c.data<bool>();
      const T* px = static_cast<const T*>(x.raw());
      const T* py = static_cast<const T*>(y.raw());
      T* po = static_cast<T*>(out.raw());
      const size_t sc = bc.inner_stride[0], sx = bc.inner_stride[1], sy = bc.inner_stride[2];
      for_each_segment<3>(r, bc, [&](size_t o, const std::array<size_t, 3>& off, size_t len) {
        for (size_t i = 0; i < len; ++i) po[o + i] = pc[off[0] + i * sc] ? px[off[1] + i * sx] : py[off[2] + i * sy];
      });
    });
  });
}

std::unique_ptr<Kernel> make_add(const KernelBuild& b) { return simple_binary<NumericTypes, true>(b, kAdd); }
std::unique_ptr<Kernel> make_sub(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) { return sub(x, y); });
}
std::unique_ptr<Kernel> make_mul(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) { return mul(x, y); });
}
std::unique_ptr<Kernel> make_div(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) { return div(x, y); }, true);
}

std::unique_ptr<Kernel> make_mod(const KernelBuild& b) {
  BinarySpec spec;
  spec.nonzero_divisor = true;
  if (b.node.attr_int("fmod", 0) != 0)
    return binary_kernel<NumericTypes, true>(b, [](auto x, auto y) { return mod_trunc(x, y); }, spec);
  return binary_kernel<NumericTypes, true>(b, [](auto x, auto y) { return mod_floor(x, y); }, spec);
}

std::unique_ptr<Kernel> make_bit_shift(const KernelBuild& b) {
  const std::string direction = b.node.attr_string("direction", "");
  // Shifting by the bit width or more gives 0 rather than undefined behaviour.
  if (direction == "LEFT")
    return binary_kernel<UnsignedIntTypes, false>(b, [](auto x, auto s) {
      using T = decltype(x);
      return s >= sizeof(T) * 8 ? T(0) : static_cast<T>(Wrap<T>(x) << s);
    });
  if (direction == "RIGHT")
    return binary_kernel<UnsignedIntTypes, false>(b, [](auto x, auto s) {
      using T = decltype(x);
      return s >= sizeof(T) * 8 ? T(0) : static_cast<T>(x >> s);
    });
  b.unsupported("direction must be LEFT or RIGHT, not '" + direction + "'");
}

std::unique_ptr<Kernel> make_and(const KernelBuild& b) {
  return simple_binary<BoolTypes, false>(b, [](bool x, bool y) { return x && y; });
}
std::unique_ptr<Kernel> make_or(const KernelBuild& b) {
  return simple_binary<BoolTypes, false>(b, [](bool x, bool y) { return x || y; });
}
std::unique_ptr<Kernel> make_xor(const KernelBuild& b) {
  return simple_binary<BoolTypes, false>(b, [](bool x, bool y) { return x != y; });
}
std::unique_ptr<Kernel> make_equal(const KernelBuild& b) {
  return simple_binary<AllTypes, true>(b, [](auto x, auto y) -> bool { return x == y; });
}
std::unique_ptr<Kernel> make_less(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) -> bool { return x < y; });
}
std::unique_ptr<Kernel> make_greater(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) -> bool { return x > y; });
}
std::unique_ptr<Kernel> make_less_or_equal(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) -> bool { return x <= y; });
}
std::unique_ptr<Kernel> make_greater_or_equal(const KernelBuild& b) {
  return simple_binary<NumericTypes, true>(b, [](auto x, auto y) -> bool { return x >= y; });
}

std::unique_ptr<Kernel> make_prelu(const KernelBuild& b) {
  BinarySpec spec;
  if (b.opset < 7) spec.rule = ShapeRule::PreluChannel;
  return binary_kernel<SignedTypes, true>(b, [](auto x, auto slope) { return x < 0 ? mul(x, slope) : x; }, spec);
}

std::unique_ptr<Kernel> make_max(const KernelBuild& b) { return variadic_kernel(b, kMax, false); }
std::unique_ptr<Kernel> make_min(const KernelBuild& b) { return variadic_kernel(b, kMin, false); }
std::unique_ptr<Kernel> make_sum(const KernelBuild& b) { return variadic_kernel(b, kAdd, false); }
std::unique_ptr<Kernel> make_mean(const KernelBuild& b) { return variadic_kernel(b, kAdd, true); }

}  // namespace hetero::cpu
