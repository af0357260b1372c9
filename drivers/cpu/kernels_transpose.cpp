// Transpose, and the permuting copy it and other reorders share.
//
// Any permutation is first simplified: size-1 dims are dropped and input dims
// that stay adjacent in the output are merged, so NCHW->NHWC becomes a batch
// of [C, H*W] matrix transposes. Two cases remain: the innermost input dim
// stays innermost (copy contiguous runs with memcpy) or it does not (cache
// blocked 2-D tile transposes between the two innermost dims involved; of
// 32-bit elements, 16x16 tiles in vector registers).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/isa_clones.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/transpose.h"
#include "drivers/cpu/transpose16.h"

namespace hetero::cpu {

namespace {

using core::Shape;
using core::Tensor;

struct Simplified {
  Shape shape;                // input shape after dropping/merging
  std::vector<int64_t> perm;  // permutation of the simplified dims
};

Simplified simplify(const Shape& in_shape, const std::vector<int64_t>& perm) {
  const size_t rank = in_shape.size();
  std::vector<int64_t> new_index(rank, -1);
  Shape kept;
  for (size_t d = 0; d < rank; ++d) {
    if (in_shape[d] != 1) {
      new_index[d] = static_cast<int64_t>(kept.size());
      kept.push_back(in_shape[d]);
    }
  }
  // Groups of input dims that are consecutive in both orders, in output order.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t p : perm) {
    const int64_t q = new_index[static_cast<size_t>(p)];
    if (q < 0) continue;
    if (!groups.empty() && groups.back().back() + 1 == q)
      groups.back().push_back(q);
    else
      groups.push_back({q});
  }
  // Position of each group in input order.
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> input_pos(groups.size());
  Simplified s;
  for (size_t i = 0; i < order.size(); ++i) {
    input_pos[order[i]] = static_cast<int64_t>(i);
    int64_t n = 1;
    for (int64_t d : groups[order[i]]) n *= kept[static_cast<size_t>(d)];
    s.shape.push_back(n);
  }
  for (size_t g = 0; g < groups.size(); ++g) s.perm.push_back(input_pos[g]);
  return s;
}

// Input element offset of outer output index `idx` over the output dims in
// `dims` (their sizes `sizes`, their input strides `in_strides`).
inline int64_t outer_offset(int64_t idx, const std::vector<int64_t>& sizes, const std::vector<int64_t>& in_strides) {
  int64_t off = 0;
  for (size_t i = sizes.size(); i-- > 0;) {
    off += (idx % sizes[i]) * in_strides[i];
    idx /= sizes[i];
  }
  return off;
}

template <typename T>
void tile_transpose(const T* in, T* out, int64_t a_begin, int64_t a_end, int64_t b_count, int64_t in_stride_b,
                    int64_t out_stride_a) {
  // 16x16 tiles: a tile of 4-byte elements spans 16 cache lines each way.
  constexpr int64_t kTile = 16;
  for (int64_t b0 = 0; b0 < b_count; b0 += kTile) {
    const int64_t b1 = std::min(b0 + kTile, b_count);
    for (int64_t a = a_begin; a < a_end; ++a) {
      T* o = out + a * out_stride_a;
      const T* i = in + a;
      for (int64_t b = b0; b < b1; ++b) o[b] = i[b * in_stride_b];
    }
  }
}

// The same for 32-bit elements, whole 16x16 tiles through registers
// (transpose16.h) and the ragged edges as above.
HETERO_ISA_CLONES void tile_transpose_32(const uint32_t* in, uint32_t* out, int64_t a_begin, int64_t a_end,
                                         int64_t b_count, int64_t in_stride_b, int64_t out_stride_a) {
  int64_t b0 = 0;
  if (a_end - a_begin == 16) {
    for (; b0 + 16 <= b_count; b0 += 16) {
      Floats16 v[16];
      for (int64_t k = 0; k < 16; ++k) std::memcpy(&v[k], in + (b0 + k) * in_stride_b + a_begin, sizeof(Floats16));
      transpose16(v);
      for (int64_t k = 0; k < 16; ++k)
        std::memcpy(out + (a_begin + k) * out_stride_a + b0, &v[k], sizeof(Floats16));
    }
  }
  if (b0 < b_count)
    tile_transpose(in + b0 * in_stride_b, out + b0, a_begin, a_end, b_count - b0, in_stride_b, out_stride_a);
}

}  // namespace

bool permutation_keeps_layout(const Shape& in_shape, const std::vector<int64_t>& perm) {
  return simplify(in_shape, perm).shape.size() <= 1;
}

void permute_copy(KernelRun& kernel_run, const void* in, void* out, const Shape& in_shape, const std::vector<int64_t>& perm,
                  size_t elem_size) {
  const size_t total = core::shape_numel(in_shape);
  if (total == 0) return;
  const Simplified s = simplify(in_shape, perm);
  const size_t r = s.shape.size();
  if (r <= 1) {
    std::memcpy(out, in, total * elem_size);
    return;
  }
  const std::vector<int64_t> in_strides = contiguous_strides(s.shape);
  Shape out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = s.shape[static_cast<size_t>(s.perm[i])];
  const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
  const auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(out);
  // Only parallelise copies big enough to pay for waking threads.
  const bool parallel = total * elem_size >= (size_t{1} << 16);

  if (static_cast<size_t>(s.perm[r - 1]) == r - 1) {
    // The innermost dim stays innermost: contiguous runs.
    const int64_t run_len = s.shape[r - 1];
    const size_t run_bytes = static_cast<size_t>(run_len) * elem_size;
    std::vector<int64_t> sizes(out_shape.begin(), out_shape.end() - 1), strides(r - 1);
    for (size_t i = 0; i + 1 < r; ++i) strides[i] = in_strides[static_cast<size_t>(s.perm[i])];
    const int64_t rows = static_cast<int64_t>(total) / run_len;
    parallel_blocks(kernel_run, rows, 2.0 * double(run_bytes), parallel, [&](int64_t row) {
      std::memcpy(dst + static_cast<size_t>(row) * run_bytes,
                  src + static_cast<size_t>(outer_offset(row, sizes, strides)) * elem_size, run_bytes);
    });
    return;
  }

  // Output dim r-1 reads input dim p; output dim q reads the innermost input
  // dim. Loop over the other dims and transpose [B x A] tiles.
  const size_t p = static_cast<size_t>(s.perm[r - 1]);
  size_t q = 0;
  while (static_cast<size_t>(s.perm[q]) != r - 1) ++q;
  const int64_t a_count = s.shape[r - 1], b_count = s.shape[p];
  std::vector<int64_t> sizes, in_str, out_str;
  for (size_t i = 0; i + 1 < r; ++i) {
    if (i == q) continue;
    sizes.push_back(out_shape[i]);
    in_str.push_back(in_strides[static_cast<size_t>(s.perm[i])]);
    out_str.push_back(out_strides[i]);
  }
  const int64_t outer = static_cast<int64_t>(total) / (a_count * b_count);
  // Work items: (outer index, block of 16 rows of A) so that a single big
  // matrix (batch 1) still spreads over the threads.
  constexpr int64_t kRows = 16;
  const int64_t a_blocks = (a_count + kRows - 1) / kRows;
  const int64_t in_stride_b = in_strides[p], out_stride_a = out_strides[q];
  dispatch_width(elem_size, [&](auto tag) {
                  using T = typename decltype(tag)::type;
                  const T* in_t = reinterpret_cast<const T*>(src);
                  T* out_t = reinterpret_cast<T*>(dst);
                  parallel_blocks(kernel_run, outer * a_blocks, 2.0 * double(kRows * b_count * sizeof(T)), parallel,
                                  [&](int64_t item) {
                    const int64_t o = item / a_blocks, blk = item % a_blocks;
                    int64_t in_off = 0, out_off = 0, rest = o;
                    for (size_t i = sizes.size(); i-- > 0;) {
                      const int64_t c = rest % sizes[i];
                      rest /= sizes[i];
                      in_off += c * in_str[i];
                      out_off += c * out_str[i];
                    }
                    const int64_t a_begin = blk * kRows, a_end = std::min(a_count, (blk + 1) * kRows);
                    if constexpr (sizeof(T) == 4)
                      tile_transpose_32(in_t + in_off, out_t + out_off, a_begin, a_end, b_count, in_stride_b,
                                        out_stride_a);
                    else
                      tile_transpose(in_t + in_off, out_t + out_off, a_begin, a_end, b_count, in_stride_b,
                                     out_stride_a);
                  });
                });
}

std::unique_ptr<Kernel> make_transpose(const KernelBuild& b) {
  const bool has_perm = b.node.has_attr("perm");
  const std::vector<int64_t> perm_attr = b.node.attr_ints("perm");
  return make_fn_kernel([has_perm, perm_attr](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const size_t rank = x.rank();
    std::vector<int64_t> perm(rank);
    if (has_perm) {
      if (perm_attr.size() != rank)
        bad_input(r.node(), "perm has " + std::to_string(perm_attr.size()) + " entries for an input of rank " +
                                std::to_string(rank));
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < rank; ++i) {
        const int64_t p = normalize_axis(r.node(), perm_attr[i], static_cast<int64_t>(rank));
        if (seen[static_cast<size_t>(p)]) bad_input(r.node(), "perm repeats axis " + std::to_string(p));
        seen[static_cast<size_t>(p)] = true;
        perm[i] = p;
      }
    } else {
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    Shape out_shape(rank);
    for (size_t i = 0; i < rank; ++i) out_shape[i] = x.dim(static_cast<size_t>(perm[i]));
    if (permutation_keeps_layout(x.shape(), perm)) {
      r.set_output(0, x.reshaped(out_shape));
      return;
    }
    Tensor& y = r.output(0, x.dtype(), out_shape);
    permute_copy(r, x.raw(), y.raw(), x.shape(), perm, core::dtype_size(x.dtype()));
  });
}

}  // namespace hetero::cpu
