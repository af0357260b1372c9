// Long nodes run in blocks, with a checkpoint between two
// (KernelRun::checkpoint): a cancel or a passed deadline is seen there, and
// waiting work of a higher priority runs there, after about one block
// instead of after the whole node. A client's upload of a few hundred bytes
// holding one huge MatMul or Conv otherwise held its stream for seconds.
// The kernels that split their work this way: MatMul and Gemm (blocks of A's
// rows), Conv (blocks of output rows) and the layout changes the layout pass
// puts before and after convolutions (blocks of rows).
#pragma once

#include <algorithm>
#include <cstdint>

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

}  // namespace hetero::cpu
