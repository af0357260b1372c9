// Shape arithmetic shared by the elementwise and axis kernels: numpy
// multidirectional broadcasting turned into loops, and axis normalisation.
//
// A broadcast is described by its output shape with dimensions coalesced:
// neighbouring dimensions merge when every input either spans both or is
// broadcast along both, so NCHW + 1xCx1x1 becomes [N, C, H*W] with the second
// input's innermost stride 0. Kernels then see an outer "row" odometer and an
// innermost run whose per-input stride is 0 or 1, which the compiler
// vectorises when the kernel specialises on it.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/kernel_memo.h"

namespace hetero::cpu {

struct Broadcast {
  core::Shape out_shape;  // the broadcast shape, uncoalesced
  size_t numel = 0;
  size_t inner = 1;            // length of the innermost coalesced dimension
  size_t rows = 0;             // numel / inner
  std::vector<size_t> dims;    // coalesced dimensions outside `inner`
  std::vector<std::vector<size_t>> strides;  // [input][dim] element strides (0 = broadcast)
  std::vector<size_t> inner_stride;          // [input] 0 or 1
};

// The numpy broadcast of `shapes`; fails with INVALID_ARGUMENT naming `node`
// and the shapes when they are incompatible.
inline core::Shape broadcast_shape(const std::vector<const core::Shape*>& shapes, const core::Node& node) {
  size_t rank = 0;
  for (const core::Shape* s : shapes) rank = std::max(rank, s->size());
  core::Shape out(rank, 1);
  for (const core::Shape* s : shapes) {
    const size_t pad = rank - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      const int64_t dim = (*s)[d];
      int64_t& o = out[pad + d];
      if (dim == o || dim == 1) continue;
      if (o == 1) {
        o = dim;
        continue;
      }
      std::string list;
      for (const core::Shape* t : shapes) list += (list.empty() ? "" : ", ") + core::shape_to_string(*t);
      fail(HETERO_INVALID_ARGUMENT, node.describe() + ": input shapes " + list + " cannot be broadcast together");
    }
  }
  return out;
}

inline Broadcast plan_broadcast(const std::vector<const core::Shape*>& shapes, const core::Node& node) {
  Broadcast b;
  b.out_shape = broadcast_shape(shapes, node);
  b.numel = core::shape_numel(b.out_shape);
  const size_t n_in = shapes.size();
  b.strides.assign(n_in, {});
  b.inner_stride.assign(n_in, 1);
  if (b.numel == 0) return b;

  // Drop size-1 output dims, then merge neighbours with the same broadcast
  // pattern. `spans[k]` says whether input k covers the dimension.
  const size_t rank = b.out_shape.size();
  std::vector<size_t> dims;
  std::vector<std::vector<bool>> spans;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = b.out_shape[d];
    if (size == 1) continue;
    std::vector<bool> pattern(n_in);
    for (size_t k = 0; k < n_in; ++k) {
      const core::Shape& s = *shapes[k];
      const size_t pad = rank - s.size();
      pattern[k] = d >= pad && s[d - pad] != 1;
    }
    if (!dims.empty() && spans.back() == pattern) {
      dims.back() *= static_cast<size_t>(size);
    } else {
      dims.push_back(static_cast<size_t>(size));
      spans.push_back(std::move(pattern));
    }
  }
  if (dims.empty()) {  // every dimension is 1: a single element
    dims.push_back(1);
    spans.emplace_back(n_in, true);
  }

  // Per-input strides over the coalesced dims, innermost first.
  const size_t nd = dims.size();
  std::vector<std::vector<size_t>> strides(n_in, std::vector<size_t>(nd, 0));
  for (size_t k = 0; k < n_in; ++k) {
    size_t stride = 1;
    for (size_t d = nd; d-- > 0;) {
      if (spans[d][k]) {
        strides[k][d] = stride;
        stride *= dims[d];
      }
    }
  }
  b.inner = dims.back();
  b.rows = b.numel / b.inner;
  b.dims.assign(dims.begin(), dims.end() - 1);
  for (size_t k = 0; k < n_in; ++k) {
    b.inner_stride[k] = strides[k].back();
    b.strides[k].assign(strides[k].begin(), strides[k].end() - 1);
  }
  return b;
}

// plan_broadcast() as at the node's last run when the shapes are the same
// again, else planned now and kept in the node's memo (KernelRun::memo()):
// a plan takes a dozen small allocations, and a node nearly always sees the
// same shapes run after run. For a kernel that plans one broadcast per run.
struct BroadcastMemo final : KernelMemo {
  std::vector<core::Shape> shapes;
  Broadcast plan;
};

inline const Broadcast& memo_broadcast(KernelRun& r, std::initializer_list<const core::Shape*> shapes) {
  BroadcastMemo& memo = memo_of<BroadcastMemo>(r);
  bool same = memo.shapes.size() == shapes.size();
  for (size_t k = 0; same && k < shapes.size(); ++k) same = memo.shapes[k] == *shapes.begin()[k];
  if (!same) {
    memo.plan = plan_broadcast(std::vector<const core::Shape*>(shapes), r.node());
    memo.shapes.resize(shapes.size());
    for (size_t k = 0; k < shapes.size(); ++k) memo.shapes[k] = *shapes.begin()[k];
  }
  return memo.plan;
}

// Calls fn(out_offset, in_offsets, len) over the whole broadcast, in segments
// of at most one row each: element j of a segment is output out_offset + j
// and input k's element in_offsets[k] + j * inner_stride[k]. Segments run in
// parallel on big tensors, in blocks with a checkpoint of `r` between two
// (drivers/cpu/checkpoint_blocks.h); `fn` must not throw.
template <size_t N, typename Fn>
void for_each_segment(KernelRun& r, const Broadcast& b, Fn&& fn) {
  if (b.numel == 0) return;
  const bool parallel = r.parallel(b.numel > kParallelThreshold);
  const size_t threads = parallel ? static_cast<size_t>(r.threads()) : 1;
  const size_t nd = b.dims.size();
  // Bytes one output element moves: N inputs and the output, taken as 4
  // bytes each.
  const double work_per_element = 4.0 * (N + 1);

  // Offsets of row `row` in every input, by decomposing the row index.
  auto row_offsets = [&](size_t row, std::array<size_t, N>& off, std::vector<size_t>& idx) {
    off.fill(0);
    for (size_t d = nd; d-- > 0;) {
      idx[d] = row % b.dims[d];
      row /= b.dims[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * b.strides[k][d];
    }
  };

  if (parallel && b.rows < threads * 4) {
    // Few long rows (same-shape inputs are one row): split rows into pieces,
    // at least four per thread and none over half a checkpoint block.
    const auto by_block = static_cast<size_t>(double(b.inner) * work_per_element / (kCheckpointWork / 2)) + 1;
    const size_t pieces = std::max((threads * 4 + b.rows - 1) / b.rows, by_block);
    const size_t piece_len = (b.inner + pieces - 1) / pieces;
    parallel_blocks(r, static_cast<int64_t>(b.rows * pieces), double(piece_len) * work_per_element, true, [&](int64_t t) {
      const size_t row = static_cast<size_t>(t) / pieces;
      const size_t begin = static_cast<size_t>(t) % pieces * piece_len;
      if (begin >= b.inner) return;
      const size_t len = std::min(piece_len, b.inner - begin);
      std::array<size_t, N> off;
      std::vector<size_t> idx(nd);
      row_offsets(row, off, idx);
      for (size_t k = 0; k < N; ++k) off[k] += begin * b.inner_stride[k];
      fn(row * b.inner + begin, off, len);
    });
    return;
  }

  // Many rows: contiguous chunks of rows, each walked with an odometer; in
  // parallel, chunks of each checkpoint block.
  auto walk = [&](size_t first, size_t last) {
    std::array<size_t, N> off;
    std::vector<size_t> idx(nd);
    row_offsets(first, off, idx);
    for (size_t row = first; row < last; ++row) {
      fn(row * b.inner, off, b.inner);
      for (size_t d = nd; d-- > 0;) {  // advance the odometer
        for (size_t k = 0; k < N; ++k) off[k] += b.strides[k][d];
        if (++idx[d] < b.dims[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= b.strides[k][d] * b.dims[d];
        idx[d] = 0;
      }
    }
  };
  if (!parallel) return walk(0, b.rows);  // small: no block, no OpenMP region
  for_checkpoint_blocks(r, static_cast<int64_t>(b.rows), double(b.inner) * work_per_element, [&](int64_t begin, int64_t end) {
    const auto rows = static_cast<size_t>(end - begin);
    const size_t chunks = std::min(rows, threads * 4);
    const size_t per_chunk = (rows + chunks - 1) / chunks;
#pragma omp parallel for num_threads(static_cast<int>(threads)) schedule(static)
    for (int64_t c = 0; c < static_cast<int64_t>(chunks); ++c) {
      const size_t first = static_cast<size_t>(begin) + static_cast<size_t>(c) * per_chunk;
      const size_t last = std::min(static_cast<size_t>(end), first + per_chunk);
      if (first < last) walk(first, last);
    }
  });
}

// `axis` in [-rank, rank) mapped to [0, rank); INVALID_ARGUMENT otherwise.
inline size_t normalize_axis(int64_t axis, size_t rank, const core::Node& node) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(HETERO_INVALID_ARGUMENT, node.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                                      std::to_string(rank));
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// A shape seen as [outer, n, inner] around one axis (or, for the 2-D coercion
// of opset < 13 Softmax, around a split point with n = everything after it).
struct AxisSplit {
  size_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit split_at_axis(const core::Shape& shape, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < shape.size(); ++d) {
    const size_t dim = static_cast<size_t>(shape[d]);
    if (d < axis)
      s.outer *= dim;
    else if (d == axis)
      s.n = dim;
    else
      s.inner *= dim;
  }
  return s;
}

}  // namespace hetero::cpu
