// MaxPool, AveragePool, LpPool and their Global forms, over NC+spatial or
// channels-last (hetero.cpu layout pass) activations.
//
// Plain loops rather than oneDNN: pooling is memory-bound, ONNX's details
// (ceil mode windows, count_include_pad next to ceil-mode overhang,
// dilations, Indices with storage_order) map onto oneDNN only partly, and a
// loop over whole planes (or, channels-last, over contiguous channel rows)
// already runs at memory speed.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/post_ops.h"

namespace hetero::cpu {

namespace {

enum class PoolKind { Max, Average, Lp };

// One pooling problem, spatial dims padded to three with size-1 dims.
struct PoolGeometry {
  int64_t n = 0, c = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  size_t spatial = 0;
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
};

struct PoolParams {
  PoolKind kind = PoolKind::Max;
  bool global = false;
  WindowAttrs window;
  bool ceil_mode = false;
  bool count_include_pad = false;
  bool column_major_indices = false;  // MaxPool storage_order 1
  float p = 2.0f;                     // LpPool
  bool channels_last = false;
};

PoolGeometry pool_geometry(const core::Node& node, const PoolParams& prm, const DnnlDims& dims) {
  if (dims.size() < 3 || dims.size() > 5)
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": pooling takes inputs of rank 3 to 5, got rank " +
                                      std::to_string(dims.size()));
  PoolGeometry g;
  g.n = dims[0];
  g.c = dims[1];
  g.spatial = dims.size() - 2;
  WindowAttrs w = prm.window;
  if (!prm.global) {
    if (w.kernel_shape.size() != g.spatial)
      fail(HETERO_INVALID_MODEL, node.describe() + ": kernel_shape must have one value per spatial dim");
    w.resolve(node, g.spatial);
  }
  for (size_t i = 0; i < g.spatial; ++i) {
    g.in[i] = dims[2 + i];
    if (prm.global) {
      g.k[i] = g.in[i];
      continue;
    }
    g.k[i] = w.kernel_shape[i];
    g.s[i] = w.strides[i];
    g.d[i] = w.dilations[i];
    const SpatialDim sd =
        conv_output_dim(w.auto_pad, g.in[i], g.k[i], g.s[i], g.d[i], w.pads[i], w.pads[g.spatial + i], prm.ceil_mode);
    if (sd.out <= 0)
      fail(HETERO_INVALID_ARGUMENT, node.describe() + ": input spatial size " + std::to_string(g.in[i]) +
                                        " is smaller than the pooling window");
    g.out[i] = sd.out;
    g.pb[i] = sd.pad_begin;
    g.pe[i] = sd.pad_end;
  }
  return g;
}

// The window of output position o along one dim: the kernel taps that land
// inside the input, and how many count as the divisor of an average.
struct Taps {
  int64_t first = 0, last = 0;  // tap indices [first, last)
  int64_t counted = 0;          // divisor contribution (count_include_pad: taps within the explicit pads)
};

Taps window_taps(const PoolGeometry& g, size_t dim, int64_t o, bool include_pad) {
  const int64_t start = o * g.s[dim] - g.pb[dim];
  Taps t;
  t.first = start >= 0 ? 0 : (-start + g.d[dim] - 1) / g.d[dim];
  t.last = g.k[dim];
  const int64_t past = g.in[dim] - start;  // taps must satisfy start + k*d < in
  t.last = std::min<int64_t>(t.last, past <= 0 ? 0 : (past + g.d[dim] - 1) / g.d[dim]);
  if (t.last < t.first) t.last = t.first;
  if (include_pad) {
    // Taps inside [-pad_begin, in + pad_end): ceil-mode overhang does not count.
    const int64_t end = g.in[dim] + g.pe[dim] - start;
    t.counted = std::min<int64_t>(g.k[dim], end <= 0 ? 0 : (end + g.d[dim] - 1) / g.d[dim]);
  } else {
    t.counted = t.last - t.first;
  }
  return t;
}

// Pools one output position of the channels-first (n, c) plane `in`.
template <typename T, typename Acc>
void pool_position(const PoolParams& prm, const PoolGeometry& g, const T* in, T* out, int64_t* index,
                   int64_t index_base, const int64_t o[3]) {
  const Taps t0 = window_taps(g, 0, o[0], prm.count_include_pad);
  const Taps t1 = window_taps(g, 1, o[1], prm.count_include_pad);
  const Taps t2 = window_taps(g, 2, o[2], prm.count_include_pad);
  const int64_t base0 = o[0] * g.s[0] - g.pb[0], base1 = o[1] * g.s[1] - g.pb[1], base2 = o[2] * g.s[2] - g.pb[2];
  {
    Acc acc = prm.kind == PoolKind::Max ? std::numeric_limits<Acc>::lowest() : Acc(0);
    int64_t best = -1;
    for (int64_t k0 = t0.first; k0 < t0.last; ++k0) {
      const int64_t i0 = base0 + k0 * g.d[0];
      for (int64_t k1 = t1.first; k1 < t1.last; ++k1) {
        const int64_t i1 = base1 + k1 * g.d[1];
        for (int64_t k2 = t2.first; k2 < t2.last; ++k2) {
          const int64_t i2 = base2 + k2 * g.d[2];
          const int64_t pos = (i0 * g.in[1] + i1) * g.in[2] + i2;
          const Acc v = static_cast<Acc>(in[pos]);
          if (prm.kind == PoolKind::Max) {
            if (v > acc || best < 0) {
              acc = v;
              best = prm.column_major_indices ? (i2 * g.in[1] + i1) * g.in[0] + i0 : pos;
            }
          } else if (prm.kind == PoolKind::Average) {
            acc += v;
          } else {
            acc += static_cast<Acc>(std::pow(std::fabs(static_cast<double>(v)), prm.p));
          }
        }
      }
    }
    if (prm.kind == PoolKind::Average) {
      const int64_t count = t0.counted * t1.counted * t2.counted;
      acc = count > 0 ? acc / static_cast<Acc>(count) : Acc(0);
    } else if (prm.kind == PoolKind::Lp) {
      acc = static_cast<Acc>(std::pow(static_cast<double>(acc), 1.0 / prm.p));
    } else if (best < 0) {
      acc = Acc(0);  // a window with no input tap (not reachable with valid pads)
    }
    *out = static_cast<T>(acc);
    if (index) *index = index_base + best;
  }
}

// Pools one output position of channels-last image `in` into the row of C
// channels `out`, tap by tap so that the inner loop runs over contiguous
// channels. `acc` holds C accumulators.
template <typename T, typename Acc>
void pool_position_cl(const PoolParams& prm, const PoolGeometry& g, const T* in, T* out, Acc* acc,
                      const int64_t o[3]) {
  const Taps t0 = window_taps(g, 0, o[0], prm.count_include_pad);
  const Taps t1 = window_taps(g, 1, o[1], prm.count_include_pad);
  const Taps t2 = window_taps(g, 2, o[2], prm.count_include_pad);
  const int64_t base0 = o[0] * g.s[0] - g.pb[0], base1 = o[1] * g.s[1] - g.pb[1], base2 = o[2] * g.s[2] - g.pb[2];
  const int64_t C = g.c;
  const bool empty = t0.last == t0.first || t1.last == t1.first || t2.last == t2.first;
  // Every tap's row of C channels, in order.
  auto for_each_row = [&](auto&& fn) {
    for (int64_t k0 = t0.first; k0 < t0.last; ++k0)
      for (int64_t k1 = t1.first; k1 < t1.last; ++k1)
        for (int64_t k2 = t2.first; k2 < t2.last; ++k2)
          fn(in + (((base0 + k0 * g.d[0]) * g.in[1] + base1 + k1 * g.d[1]) * g.in[2] + base2 + k2 * g.d[2]) * C);
  };
  if constexpr (sizeof(T) == 1) {
    // The max of 8-bit codes is one of them: taken in bytes, sixteen to an
    // instruction, rather than widened to Acc.
    if (prm.kind == PoolKind::Max) {
      std::fill_n(out, C, empty ? T(0) : std::numeric_limits<T>::lowest());
      for_each_row([&](const T* __restrict row) {
        T* __restrict max = out;
        for (int64_t c = 0; c < C; ++c) max[c] = std::max(max[c], row[c]);
      });
      return;
    }
  }
  std::fill_n(acc, C, prm.kind == PoolKind::Max ? std::numeric_limits<Acc>::lowest() : Acc(0));
  for_each_row([&](const T* row) {
    if (prm.kind == PoolKind::Max) {
      for (int64_t c = 0; c < C; ++c) acc[c] = std::max(acc[c], static_cast<Acc>(row[c]));
    } else if (prm.kind == PoolKind::Average) {
      for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<Acc>(row[c]);
    } else {
      for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<Acc>(std::pow(std::fabs(double(row[c])), prm.p));
    }
  });
  const int64_t count = prm.kind == PoolKind::Average ? t0.counted * t1.counted * t2.counted : 1;
  for (int64_t c = 0; c < C; ++c) {
    Acc v = acc[c];
    if (prm.kind == PoolKind::Average) v = count > 0 ? v / static_cast<Acc>(count) : Acc(0);
    if (prm.kind == PoolKind::Lp) v = static_cast<Acc>(std::pow(double(v), 1.0 / prm.p));
    if (prm.kind == PoolKind::Max && empty) v = Acc(0);
    out[c] = static_cast<T>(v);
  }
}

// Global average or max of channels-last images: threads split the
// channels, each walking the positions (in checkpoint blocks of them) over
// its contiguous slice of them, into sums of its own that it adds to the
// image's after each block.
template <typename T, typename Acc>
void global_pool_cl(KernelRun& r, const PoolParams& prm, const PoolGeometry& g, const T* in, T* out) {
  const int64_t plane = g.in_plane(), C = g.c;
  const bool max = prm.kind == PoolKind::Max;
  const bool parallel = r.parallel(g.n * C * plane > 16384);
  const Acc identity = max ? std::numeric_limits<Acc>::lowest() : Acc(0);
  std::vector<Acc> image(static_cast<size_t>(C));
  for (int64_t n = 0; n < g.n; ++n) {
    const T* img = in + n * plane * C;
    std::fill(image.begin(), image.end(), identity);
    for_checkpoint_blocks(r, plane, double(C) * sizeof(T), [&](int64_t first, int64_t last) {
      parallel_region(parallel, [&] {
        const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
        // Slices of whole cache lines (16 floats) where there are enough channels.
        const int64_t per = std::max<int64_t>((C + threads - 1) / threads, std::min<int64_t>(C, 16));
        const int64_t c0 = std::min(C, t * per), c1 = std::min(C, c0 + per);
        if (c0 < c1) {
          std::vector<Acc> acc(static_cast<size_t>(c1 - c0), identity);
          for (int64_t p = first; p < last; ++p) {
            const T* row = img + p * C + c0;
            if (max) {
              for (int64_t c = 0; c < c1 - c0; ++c) acc[c] = std::max(acc[c], static_cast<Acc>(row[c]));
            } else {
              for (int64_t c = 0; c < c1 - c0; ++c) acc[c] += static_cast<Acc>(row[c]);
            }
          }
          Acc* mine = image.data() + c0;
          for (int64_t c = 0; c < c1 - c0; ++c) mine[c] = max ? std::max(mine[c], acc[c]) : mine[c] + acc[c];
        }
      });
    });
    for (int64_t c = 0; c < C; ++c)
      out[n * C + c] = static_cast<T>(max ? image[c] : image[c] / static_cast<Acc>(plane));
  }
}

template <typename T, typename Acc>
void pool(KernelRun& r, const PoolParams& prm, const PoolGeometry& g, const T* in, T* out, int64_t* indices) {
  const int64_t in_plane = g.in_plane(), out_plane = g.out_plane();
  auto position = [&](int64_t p, int64_t o[3]) {
    o[2] = p % g.out[2];
    o[1] = p / g.out[2] % g.out[1];
    o[0] = p / (g.out[2] * g.out[1]);
  };
  // Each output position reads its window: taps x the channels it pools.
  const double taps = double(g.k[0]) * double(g.k[1]) * double(g.k[2]) * sizeof(T);
  const bool parallel =
      r.parallel(g.n * g.c * out_plane > 1 && g.n * g.c * out_plane * g.k[0] * g.k[1] * g.k[2] > 16384);
  if (prm.channels_last) {
    if (prm.global && prm.kind != PoolKind::Lp) {
      global_pool_cl<T, Acc>(r, prm, g, in, out);
      return;
    }
    const int64_t work = g.n * out_plane;
    for_checkpoint_blocks(r, work, taps * double(g.c), [&](int64_t first, int64_t last) {
      parallel_region(parallel, [&] {
        std::vector<Acc> acc(static_cast<size_t>(g.c));
#pragma omp for schedule(static)
        for (int64_t w = first; w < last; ++w) {
          int64_t o[3];
          position(w % out_plane, o);
          pool_position_cl<T, Acc>(prm, g, in + w / out_plane * in_plane * g.c, out + w * g.c, acc.data(), o);
        }
      });
    });
    return;
  }
  // Planes by output position: one huge plane splits into blocks too.
  parallel_blocks(r, g.n * g.c * out_plane, taps, parallel, [&](int64_t i) {
    const int64_t w = i / out_plane, p = i % out_plane;
    int64_t o[3];
    position(p, o);
    pool_position<T, Acc>(prm, g, in + w * in_plane, out + i, indices ? indices + i : nullptr, w * in_plane, o);
  });
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const KernelBuild& b, PoolKind kind, bool global) : node_(b.node) {
    prm_.kind = kind;
    prm_.global = global;
    prm_.channels_last = b.node.attr_int(kChannelsLastAttr, 0) != 0;
    if (!global) {
      prm_.window = WindowAttrs::parse(b.node);
      if (prm_.window.kernel_shape.empty()) b.unsupported("kernel_shape is required");
      prm_.ceil_mode = b.node.attr_int("ceil_mode", 0) != 0;
      prm_.count_include_pad = b.node.attr_int("count_include_pad", 0) != 0;
      prm_.column_major_indices = b.node.attr_int("storage_order", 0) != 0;
    }
    if (kind == PoolKind::Lp) prm_.p = static_cast<float>(b.node.attr_float("p", 2.0f));
    if (kind == PoolKind::Lp && prm_.p <= 0) b.unsupported("p must be positive");
    if (prm_.channels_last && b.node.outputs.size() > 1 && b.node.outputs[1])
      b.unsupported("Indices are not produced for channels-last activations");
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const core::Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input X is missing");
    const DnnlDims dims = logical_dims(x->shape(), prm_.channels_last);
    const PoolGeometry g = pool_geometry(node_, prm_, dims);
    DnnlDims out_dims{g.n, g.c};
    for (size_t i = 0; i < g.spatial; ++i) out_dims.push_back(g.out[i]);
    const core::Shape out_shape = memory_shape(out_dims, prm_.channels_last);
    core::Tensor& y = r.output(0, x->dtype(), out_shape);
    int64_t* indices = nullptr;
    if (prm_.kind == PoolKind::Max && r.output_wanted(1))
      indices = r.output(1, core::DType::I64, out_shape).data<int64_t>();
    if (y.numel() == 0) return;
    dispatch_or_fail(TypeList<float, double, int8_t, uint8_t>{}, x->dtype(), node_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        pool<T, T>(r, prm_, g, x->data<T>(), y.data<T>(), indices);
      } else {
        // 8-bit integers: MaxPool only, compared in int32.
        if (prm_.kind != PoolKind::Max) unsupported_dtype(node_, x->dtype());
        pool<T, int32_t>(r, prm_, g, x->data<T>(), y.data<T>(), indices);
      }
    });
  }

 private:
  const core::Node& node_;
  PoolParams prm_;
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Max, false);
}
std::unique_ptr<Kernel> make_average_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Average, false);
}
std::unique_ptr<Kernel> make_lp_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Lp, false);
}
std::unique_ptr<Kernel> make_global_max_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Max, true);
}
std::unique_ptr<Kernel> make_global_average_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Average, true);
}
std::unique_ptr<Kernel> make_global_lp_pool(const KernelBuild& b) {
  return std::make_unique<PoolKernel>(b, PoolKind::Lp, true);
}

}  // namespace hetero::cpu
