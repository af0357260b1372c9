// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare
// over any set of axes, ArgMax/ArgMin along one axis, and CumSum (the running
// form of a sum).
//
// A reduction is described by a reducer (init, map, combine, finish) and run
// by one engine over three layouts: [outer, n] rows (reducing trailing dims),
// [outer, n, inner] blocks (reducing a middle run of dims), and offset lists
// for reduced dims that are not one contiguous run.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
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

// ---- Reducers. Integer sums accumulate in 64 bits so that a result that
// fits its type is exact even when partial sums would not.

template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, T,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename T, typename A>
T finish_as(A a) {
  return convert<T>(a);
}

template <typename T>
struct SumR {
  using Acc = SumAcc<T>;
  static Acc init() { return Acc(0); }
  static Acc map(T x) { return static_cast<Acc>(x); }
  static Acc combine(Acc a, Acc b) { return a + b; }
  static T finish(Acc a, size_t, T) { return finish_as<T>(a); }
};
template <typename T>
struct MeanR : SumR<T> {
  using Acc = SumAcc<T>;
  static T finish(Acc a, size_t n, T) {
    if constexpr (std::is_floating_point_v<T>) return a / static_cast<T>(n);  // NaN for an empty set, as NumPy
    else return n ? finish_as<T>(a / static_cast<Acc>(n)) : T(0);
  }
};
template <typename T>
struct SumSquareR : SumR<T> {
  using Acc = SumAcc<T>;
  static Acc map(T x) { return static_cast<Acc>(x) * static_cast<Acc>(x); }
};
template <typename T>
struct L1R : SumR<T> {
  using Acc = SumAcc<T>;
  static Acc map(T x) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? -static_cast<Acc>(x) : static_cast<Acc>(x);
  }
};
template <typename T>
struct L2R : SumSquareR<T> {
  using Acc = SumAcc<T>;
  static T finish(Acc a, size_t, T) {
    if constexpr (std::is_floating_point_v<T>) return std::sqrt(a);
    else return convert<T>(std::sqrt(static_cast<double>(a)));
  }
};
template <typename T>
struct LogSumR : SumR<T> {
  using Acc = SumAcc<T>;
  static T finish(Acc a, size_t, T) {
    if constexpr (std::is_floating_point_v<T>) return std::log(a);
    else return convert<T>(std::log(static_cast<double>(a)));
  }
};
// Σ exp(x - shift) with shift the maximum (see run_reduce), finished as
// log(Σ) + shift: the sum cannot overflow.
template <typename T>
struct SumExpR : SumR<T> {
  using Acc = SumAcc<T>;
  static Acc map(T x) {
    if constexpr (std::is_floating_point_v<T>) return std::exp(x);
    else return static_cast<Acc>(std::exp(static_cast<double>(x)));
  }
  static T finish(Acc a, size_t, T shift) {
    if constexpr (std::is_floating_point_v<T>) return std::log(a) + shift;
    else return convert<T>(std::log(static_cast<double>(a)) + static_cast<double>(shift));
  }
};
template <typename T>
struct ProdR {
  // Integer products wrap (through unsigned) instead of overflowing.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  static Acc init() { return Acc(1); }
  static Acc map(T x) { return static_cast<Acc>(x); }
  static Acc combine(Acc a, Acc b) { return a * b; }
  static T finish(Acc a, size_t, T) { return static_cast<T>(a); }
};
template <typename T>
struct MaxR {
  using Acc = T;
  static T init() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  static T map(T x) { return x; }
  static T combine(T a, T b) { return a < b ? b : a; }  // vectorises, unlike std::max
  static T finish(T a, size_t, T) { return a; }
};
template <typename T>
struct MinR : MaxR<T> {
  static T init() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  static T combine(T a, T b) { return b < a ? b : a; }
};

// ---- The engine.

struct ReduceLayout {
  bool general = false;
  AxisSplit split;                    // !general: [outer, n, inner]
  std::vector<size_t> kept, reduced;  // general: element offsets
  size_t outputs() const { return general ? kept.size() : split.outer * split.inner; }
  size_t count() const { return general ? reduced.size() : split.n; }
};

// Coalesces runs of kept and reduced dims (size-1 dims belong to neither).
ReduceLayout make_layout(const Shape& shape, const std::vector<bool>& reduce) {
  std::vector<size_t> sizes;
  std::vector<bool> red;
  for (size_t d = 0; d < shape.size(); ++d) {
    const size_t size = static_cast<size_t>(shape[d]);
    if (size == 1) continue;
    if (!sizes.empty() && red.back() == reduce[d]) {
      sizes.back() *= size;
    } else {
      sizes.push_back(size);
      red.push_back(reduce[d]);
    }
  }
  ReduceLayout L;
  const auto reduced_runs = std::count(red.begin(), red.end(), true);
  if (reduced_runs <= 1) {  // kept runs are merged, so at most one each side
    bool seen = false;
    for (size_t r = 0; r < sizes.size(); ++r) {
      if (red[r]) L.split.n = sizes[r], seen = true;
      else (seen ? L.split.inner : L.split.outer) *= sizes[r];
    }
    return L;
  }
  // Offsets of every combination of kept (resp. reduced) coordinates, in
  // row-major order, so kept[j] is output j's first input element.
  L.general = true;
  L.kept = {0};
  L.reduced = {0};
  size_t stride = 1;
  std::vector<size_t> strides(sizes.size());
  for (size_t r = sizes.size(); r-- > 0;) strides[r] = stride, stride *= sizes[r];
  for (size_t r = 0; r < sizes.size(); ++r) {
    std::vector<size_t>& list = red[r] ? L.reduced : L.kept;
    std::vector<size_t> next;
    next.reserve(list.size() * sizes[r]);
    for (size_t base : list)
      for (size_t i = 0; i < sizes[r]; ++i) next.push_back(base + i * strides[r]);
    list = std::move(next);
  }
  return L;
}

// Reduces `len` elements at `p` (element k at p[k * step]) from `acc`.
// Eight independent accumulators let the compiler vectorise without
// reassociating floating-point sums on its own (which -O3 won't).
template <typename R, typename T, typename Load>
typename R::Acc reduce_run(size_t len, Load load) {
  using Acc = typename R::Acc;
  Acc acc[8];
  for (Acc& a : acc) a = R::init();
  size_t k = 0;
  for (; k + 8 <= len; k += 8)
    for (size_t j = 0; j < 8; ++j) acc[j] = R::combine(acc[j], R::map(load(k + j)));
  for (; k < len; ++k) acc[0] = R::combine(acc[0], R::map(load(k)));
  for (size_t j = 1; j < 8; ++j) acc[0] = R::combine(acc[0], acc[j]);
  return acc[0];
}

// y[j] = finish(reduce of x over output j's elements). With kShift, every
// element of output j enters as x - shift[j] (a template flag so that the
// common case has no subtraction in its loops).
template <typename R, bool kShift = false, typename T>
void reduce(KernelRun& r, const T* x, T* y, const ReduceLayout& L, const T* shift = nullptr) {
  using Acc = typename R::Acc;
  const size_t n = L.count(), outputs = L.outputs();
  const bool parallel = r.parallel(outputs * n > kParallelThreshold);
  const int64_t threads = parallel ? r.threads() : 1;
  auto sh = [shift](size_t j) { return kShift ? shift[j] : T(0); };
  auto shifted = [](T v, T s) { return kShift ? static_cast<T>(v - s) : v; };

  if (L.general) {
    parallel_blocks(r, static_cast<int64_t>(outputs), double(n) * 2 * sizeof(T), parallel, [&](int64_t j) {
      const T* base = x + L.kept[j];
      const T s = sh(j);
      const Acc a = reduce_run<R, T>(n, [&](size_t k) { return shifted(base[L.reduced[k]], s); });
      y[j] = R::finish(a, n, s);
    });
    return;
  }

  const size_t outer = L.split.outer, inner = L.split.inner;
  if (inner == 1) {
    // Rows; a few long rows (reducing everything) are split into parts
    // whose partial results combine afterwards, as are rows longer than
    // half a checkpoint block: those in parts of a power of two (so that
    // the float sum of 2^25 ones is still 2^25).
    size_t parts = 1;
    if (parallel && outer < static_cast<size_t>(threads))
      parts = std::min<size_t>((threads * 2 + outer - 1) / outer, std::max<size_t>(1, n / 4096));
    size_t part_len = (n + parts - 1) / parts;
    const size_t longest = std::bit_floor(static_cast<size_t>(kCheckpointWork / 2) / sizeof(T));
    if (part_len > longest) {
      part_len = longest;
      parts = (n + part_len - 1) / part_len;
    }
    std::vector<Acc> partial(outer * parts);
    parallel_blocks(r, static_cast<int64_t>(outer * parts), double(part_len) * sizeof(T), parallel, [&](int64_t t) {
      const size_t o = static_cast<size_t>(t) / parts;
      const size_t k0 = static_cast<size_t>(t) % parts * part_len;
      const size_t k1 = std::min(n, k0 + part_len);
      const T* row = x + o * n;
      const T s = sh(o);
      partial[static_cast<size_t>(t)] =
          reduce_run<R, T>(k1 > k0 ? k1 - k0 : 0, [&](size_t k) { return shifted(row[k0 + k], s); });
    });
    for (size_t o = 0; o < outer; ++o) {
      Acc a = partial[o * parts];
      for (size_t p = 1; p < parts; ++p) a = R::combine(a, partial[o * parts + p]);
      y[o] = R::finish(a, n, sh(o));
    }
    return;
  }

  // [outer, n, inner]: accumulate whole blocks of `inner` at a time, which
  // vectorises across the inner dimension. (One such block of a huge `n`
  // runs whole: at most the inference's memory bound.)
  constexpr size_t kBlock = 256;
  const size_t blocks = (inner + kBlock - 1) / kBlock;
  const double work = double(n) * double(std::min(kBlock, inner)) * sizeof(T);
  parallel_blocks(r, static_cast<int64_t>(outer * blocks), work, parallel, [&](int64_t t) {
    const size_t o = static_cast<size_t>(t) / blocks;
    const size_t i0 = static_cast<size_t>(t) % blocks * kBlock;
    const size_t len = std::min(kBlock, inner - i0);
    const size_t j0 = o * inner + i0;  // first output of this block
    Acc acc[kBlock];
    for (size_t i = 0; i < len; ++i) acc[i] = R::init();
    for (size_t k = 0; k < n; ++k) {
      const T* p = x + (o * n + k) * inner + i0;
      for (size_t i = 0; i < len; ++i) acc[i] = R::combine(acc[i], R::map(shifted(p[i], sh(j0 + i))));
    }
    for (size_t i = 0; i < len; ++i) y[j0 + i] = R::finish(acc[i], n, sh(j0 + i));
  });
}

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <typename T>
void run_reduce(KernelRun& r, ReduceOp op, const T* x, T* y, const ReduceLayout& L) {
  switch (op) {
    case ReduceOp::Sum: return reduce<SumR<T>>(r, x, y, L);
    case ReduceOp::Mean: return reduce<MeanR<T>>(r, x, y, L);
    case ReduceOp::Max: return reduce<MaxR<T>>(r, x, y, L);
    case ReduceOp::Min: return reduce<MinR<T>>(r, x, y, L);
    case ReduceOp::Prod: return reduce<ProdR<T>>(r, x, y, L);
    case ReduceOp::L1: return reduce<L1R<T>>(r, x, y, L);
    case ReduceOp::L2: return reduce<L2R<T>>(r, x, y, L);
    case ReduceOp::LogSum: return reduce<LogSumR<T>>(r, x, y, L);
    case ReduceOp::SumSquare: return reduce<SumSquareR<T>>(r, x, y, L);
    case ReduceOp::LogSumExp:
      if constexpr (std::is_floating_point_v<T>) {
        // Shift by the max; an infinite max shifts by 0 (-inf - -inf is NaN).
        std::vector<T> m(L.outputs());
        reduce<MaxR<T>>(r, x, m.data(), L);
        for (T& v : m)
          if (std::isinf(v)) v = 0;
        return reduce<SumExpR<T>, true>(r, x, y, L, m.data());
      } else {
        return reduce<SumExpR<T>>(r, x, y, L);
      }
  }
}

struct ReduceSpec {
  ReduceOp op;
  bool keepdims;
  bool noop_with_empty_axes;
  bool axes_from_input;
  std::vector<int64_t> axes;  // the attribute, when !axes_from_input
};

void reduce_tensor(KernelRun& r, const ReduceSpec& spec) {
  const Tensor* x = r.input(0);
  if (!x) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input 0 is missing");
  std::vector<int64_t> axes = spec.axes;
  if (spec.axes_from_input && r.input(1)) axes = r.input(1)->to_int64_vector();
  if (axes.empty() && spec.noop_with_empty_axes) {
    r.set_output(0, *x);
    return;
  }
  const size_t rank = x->rank();
  std::vector<bool> reduce_dim(rank, axes.empty());
  for (int64_t a : axes) reduce_dim[normalize_axis(a, rank, r.node())] = true;
  Shape out_shape;
  for (size_t d = 0; d < rank; ++d) {
    if (!reduce_dim[d]) out_shape.push_back(x->dim(d));
    else if (spec.keepdims) out_shape.push_back(1);
  }
  const ReduceLayout L = make_layout(x->shape(), reduce_dim);
  if (is_half_type(x->dtype())) {
    const Tensor xf = to_float32(*x);
    Tensor tmp = Tensor::allocate(DType::F32, out_shape, false);
    run_reduce(r, spec.op, xf.data<float>(), tmp.data<float>(), L);
    narrow_from_float32(tmp, r.output(0, x->dtype(), out_shape));
    return;
  }
  dispatch_or_fail(NumericTypes{}, x->dtype(), r.node(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduce(r, spec.op, x->data<T>(), r.output(0, x->dtype(), out_shape).data<T>(), L);
  });
}

std::unique_ptr<Kernel> reduce_kernel(const KernelBuild& b, ReduceOp op) {
  require_dtype(b, 0, NumericTypes{}, true);
  ReduceSpec spec;
  spec.op = op;
  spec.keepdims = b.node.attr_int("keepdims", 1) != 0;
  // Axes became an input in opset 13 for ReduceSum and in 18 for the rest.
  spec.axes_from_input = b.opset >= (op == ReduceOp::Sum ? 13 : 18);
  spec.noop_with_empty_axes = spec.axes_from_input && b.node.attr_int("noop_with_empty_axes", 0) != 0;
  if (!spec.axes_from_input) spec.axes = b.node.attr_ints("axes");
  return std::make_unique<FunctionKernel>([spec](KernelRun& r) { reduce_tensor(r, spec); });
}

// ---- ArgMax / ArgMin.

template <typename T, bool kMax>
void arg_reduce(KernelRun& r, const T* x, int64_t* y, const AxisSplit& s, bool last) {
  // Strict comparison keeps the first extreme; non-strict the last one.
  auto better = [last](T v, T best) {
    if constexpr (kMax) return last ? v >= best : v > best;
    else return last ? v <= best : v < best;
  };
  const bool parallel = r.parallel(s.outer * s.n * s.inner > kParallelThreshold);
  const int64_t outer = static_cast<int64_t>(s.outer);
  const double work = double(s.n) * double(s.inner) * sizeof(T);
  if (s.inner == 1) {
    parallel_blocks(r, outer, work, parallel, [&](int64_t o) {
      const T* row = x + static_cast<size_t>(o) * s.n;
      size_t best = 0;
      for (size_t k = 1; k < s.n; ++k)
        if (better(row[k], row[best])) best = k;
      y[o] = static_cast<int64_t>(best);
    });
    return;
  }
  // Blocks of [n, inner]: track the best of every inner position at once.
  for_checkpoint_blocks(r, outer, work, [&](int64_t begin, int64_t end) {
    parallel_region(parallel, [&] {
      std::vector<T> best(s.inner);  // per-thread scratch
#pragma omp for schedule(static)
      for (int64_t o = begin; o < end; ++o) {
        const T* block = x + static_cast<size_t>(o) * s.n * s.inner;
        int64_t* out = y + static_cast<size_t>(o) * s.inner;
        std::copy(block, block + s.inner, best.begin());
        std::fill(out, out + s.inner, 0);
        for (size_t k = 1; k < s.n; ++k) {
          const T* p = block + k * s.inner;
          for (size_t i = 0; i < s.inner; ++i) {
            if (better(p[i], best[i])) {
              best[i] = p[i];
              out[i] = static_cast<int64_t>(k);
            }
          }
        }
      }
    });
  });
}

template <bool kMax>
std::unique_ptr<Kernel> arg_kernel(const KernelBuild& b) {
  require_dtype(b, 0, NumericTypes{}, true);
  const int64_t axis = b.node.attr_int("axis", 0);
  const bool keepdims = b.node.attr_int("keepdims", 1) != 0;
  const bool last = b.node.attr_int("select_last_index", 0) != 0;
  return std::make_unique<FunctionKernel>([axis, keepdims, last](KernelRun& r) {
    const Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": input 0 is missing");
    const size_t ax = normalize_axis(axis, x->rank(), r.node());
    if (x->dim(ax) == 0) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": cannot take the index over an empty axis");
    Shape out_shape = x->shape();
    if (keepdims) out_shape[ax] = 1;
    else out_shape.erase(out_shape.begin() + static_cast<int64_t>(ax));
    const AxisSplit s = split_at_axis(x->shape(), ax);
    int64_t* y = r.output(0, DType::I64, out_shape).data<int64_t>();
    if (is_half_type(x->dtype())) {
      arg_reduce<float, kMax>(r, to_float32(*x).data<float>(), y, s, last);
      return;
    }
    dispatch_or_fail(NumericTypes{}, x->dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      arg_reduce<T, kMax>(r, x->data<T>(), y, s, last);
    });
  });
}

// ---- CumSum(x, axis) with the exclusive and reverse attributes.

template <typename T>
void cumsum(KernelRun& r, const T* x, T* y, const AxisSplit& s, bool exclusive, bool reverse) {
  using Acc = SumAcc<T>;
  const bool parallel = r.parallel(s.outer * s.n * s.inner > kParallelThreshold);
  const double work = 2.0 * double(s.n) * double(s.inner) * sizeof(T);
  for_checkpoint_blocks(r, static_cast<int64_t>(s.outer), work, [&](int64_t begin, int64_t end) {
    parallel_region(parallel, [&] {
      std::vector<Acc> acc(s.inner);  // per-thread running sums of one block
#pragma omp for schedule(static)
      for (int64_t o = begin; o < end; ++o) {
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (size_t step = 0; step < s.n; ++step) {
          const size_t k = reverse ? s.n - 1 - step : step;
          const size_t base = (static_cast<size_t>(o) * s.n + k) * s.inner;
          for (size_t i = 0; i < s.inner; ++i) {
            const Acc v = static_cast<Acc>(x[base + i]);
            if (exclusive) {
              y[base + i] = static_cast<T>(acc[i]);
              acc[i] += v;
            } else {
              acc[i] += v;
              y[base + i] = static_cast<T>(acc[i]);
            }
          }
        }
      }
    });
  });
}

}  // namespace

std::unique_ptr<Kernel> make_cum_sum(const KernelBuild& b) {
  require_dtype(b, 0, NumericTypes{}, true);
  const bool exclusive = b.node.attr_int("exclusive", 0) != 0;
  const bool reverse = b.node.attr_int("reverse", 0) != 0;
  return std::make_unique<FunctionKernel>([exclusive, reverse](KernelRun& r) {
    const Tensor* x = r.input(0);
    const Tensor* axis_t = r.input(1);
    if (!x || !axis_t) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": needs inputs x and axis");
    if (axis_t->numel() != 1)
      fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": axis must hold one value, not " +
                                        std::to_string(axis_t->numel()));
    const size_t ax = normalize_axis(axis_t->as_int64(0), x->rank(), r.node());
    const AxisSplit s = split_at_axis(x->shape(), ax);
    if (is_half_type(x->dtype())) {
      const Tensor xf = to_float32(*x);
      Tensor tmp = Tensor::allocate(DType::F32, x->shape(), false);
      cumsum(r, xf.data<float>(), tmp.data<float>(), s, exclusive, reverse);
      narrow_from_float32(tmp, r.output(0, x->dtype(), x->shape()));
      return;
    }
    dispatch_or_fail(NumericTypes{}, x->dtype(), r.node(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      cumsum(r, x->data<T>(), r.output(0, x->dtype(), x->shape()).data<T>(), s, exclusive, reverse);
    });
  });
}

std::unique_ptr<Kernel> make_reduce_sum(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::Sum); }
std::unique_ptr<Kernel> make_reduce_mean(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::Mean); }
std::unique_ptr<Kernel> make_reduce_max(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::Max); }
std::unique_ptr<Kernel> make_reduce_min(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::Min); }
std::unique_ptr<Kernel> make_reduce_prod(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::Prod); }
std::unique_ptr<Kernel> make_reduce_l1(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::L1); }
std::unique_ptr<Kernel> make_reduce_l2(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::L2); }
std::unique_ptr<Kernel> make_reduce_log_sum(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::LogSum); }
std::unique_ptr<Kernel> make_reduce_log_sum_exp(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::LogSumExp); }
std::unique_ptr<Kernel> make_reduce_sum_square(const KernelBuild& b) { return reduce_kernel(b, ReduceOp::SumSquare); }
std::unique_ptr<Kernel> make_arg_max(const KernelBuild& b) { return arg_kernel<true>(b); }
std::unique_ptr<Kernel> make_arg_min(const KernelBuild& b) { return arg_kernel<false>(b); }

}  // namespace hetero::cpu
