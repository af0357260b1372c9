// Long nodes run in blocks, with a checkpoint between two
// (KernelRun::checkpoint): a cancel or a passed deadline is seen there, and
// waiting work of a higher priority runs there, after about one block
// instead of after the whole node. A client's upload of a few hundred bytes
// holding one huge MatMul or Conv otherwise held its stream for seconds.
// The kernels that split their work this way: MatMul and Gemm (blocks of A's
// rows), Conv and ConvTranspose (blocks of output rows, RowBlocks in
// window_primitive.h) and the layout changes the layout pass
// puts before and after convolutions (blocks of rows), all on oneDNN; the
// recurrent layers (blocks of steps, rnn.h); and
// the driver's own parallel loops (parallel_blocks below), whose work
// grows with what a model asks: broadcasts, reductions, copies, Einsum.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// About how many multiply-adds one block of a MatMul or Conv holds: about
// 25 ms on two AVX-512 cores, 50 ms on two AVX2 cores. On AVX-512 these
// blocks cost nothing measurable against the whole node (a 4096x4096x4096
// MatMul: 438 ms in blocks, 439 ms whole; a 3x3 Conv of 256 channels over
// 384x384: 513 against 490 ms, within noise), while blocks half this size
// cost 28% and 10%. On AVX2 oneDNN's gemm packs B again for every call of
// a matrix product, which made the MatMul in these blocks twice as slow
// (0.94 s whole, 1.9 s): the price of seeing a higher priority within
// about 50 ms there, paid by nodes of over 2^33 multiply-adds only.
inline constexpr double kCheckpointMacs = double(1ull << 32);
// About how many bytes one block of a layout change writes: 8 MiB, about
// 20 ms at the 0.44 GB/s a daemon's reorder into fresh memory ran at here
// (in 16 MiB blocks: 38 ms each).
inline constexpr double kCheckpointBytes = double(1ull << 23);

// How many of a node's `units` (rows), of `work_per_unit` each, make one
// block of `block_work`; 0 when the node is short enough to run whole (at
// most two blocks' worth).
inline int64_t checkpoint_block_units(int64_t units, double work_per_unit, double block_work) {
  if (double(units) * work_per_unit <= 2 * block_work) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(block_work / work_per_unit));
}

// About how much work one block of the driver's own loops holds, counted in
// bytes moved or scalar operations, whichever the loop is bound by: 16 Mi of
// either is 2-40 ms on two cores (a vectorised multiply-add loop at the
// fast end, a copy into fresh memory at the slow one). One block costs one
// wake-up of the OpenMP team, a few microseconds.
inline constexpr double kCheckpointWork = double(1ull << 24);

// Runs body(begin, end) over the units [0, units): in one piece when they
// hold at most two blocks of kCheckpointWork, else in blocks of units with
// r.checkpoint() between two. `body` runs its own parallel loop over
// [begin, end) (for loops that keep scratch per thread).
template <typename Body>
void for_checkpoint_blocks(KernelRun& r, int64_t units, double work_per_unit, Body&& body) {
  const int64_t block = checkpoint_block_units(units, work_per_unit, kCheckpointWork);
  const int64_t step = block > 0 ? block : units;
  for (int64_t begin = 0; begin < units; begin += step) {
    if (begin > 0) r.checkpoint();
    body(begin, std::min(units, begin + step));
  }
}

// body(i) for every i in [begin, end): on the team of the calling thread
// when `parallel` (KernelRun::parallel), else on this thread alone. Not an
// OpenMP `if` clause: with one, libgomp still opens a region of one thread,
// with its futex wake-up at the end. `body` must not throw.
template <typename Body>
void parallel_for(bool parallel, int64_t begin, int64_t end, Body&& body) {
  if (!parallel) {
    for (int64_t i = begin; i < end; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = begin; i < end; ++i) body(i);
}

// body() once on every thread of the calling thread's team when `parallel`,
// else once on this thread (where omp_get_num_threads() is 1 and an
// `omp for` inside runs every iteration), opening no region: as
// parallel_for. `body` must not throw.
template <typename Body>
void parallel_region(bool parallel, Body&& body) {
  if (!parallel) {
    body();
    return;
  }
#pragma omp parallel
  body();
}

// The driver's parallel loop: body(i) for every i in [0, units) on the
// kernel's threads (on this one alone, opening no OpenMP region, unless
// `parallel`), in blocks as above. `body` must not throw: it runs inside an
// OpenMP loop.
template <typename Body>
void parallel_blocks(KernelRun& r, int64_t units, double work_per_unit, bool parallel, Body&& body) {
  const bool on_team = r.parallel(parallel);
  for_checkpoint_blocks(r, units, work_per_unit,
                        [&](int64_t begin, int64_t end) { parallel_for(on_team, begin, end, body); });
}

// std::memcpy in pieces of half a block (a copy moves each byte twice),
// with a checkpoint between two: for serial copies whose size a model
// decides (Expand's and Tile's repeats).
inline void copy_in_checkpoint_blocks(KernelRun& r, void* dst, const void* src, size_t bytes) {
  constexpr auto kPiece = static_cast<size_t>(kCheckpointWork / 2);
  for (size_t done = 0; done < bytes; done += kPiece) {
    if (done > 0) r.checkpoint();
    std::memcpy(static_cast<char*>(dst) + done, static_cast<const char*>(src) + done, std::min(kPiece, bytes - done));
  }
}

}  // namespace hetero::cpu
