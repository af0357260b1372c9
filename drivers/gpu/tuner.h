// The tuner: chooses the kernel variant of each heavy node (Conv, MatMul) by
// building a few candidates (kernel_variants.h) and timing them on the
// device, alternating between them so that load on a shared machine falls on
// all alike. A choice is paid once: the process keeps it per (device, node
// shape) so that a repeated shape is not tuned again, and a program's plan
// keeps its choices so that an exported blob (which carries the chosen
// kernels' binaries) imports without tuning and seeds that cache.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "drivers/gpu/program.h"

namespace hetero::gpu {

// Sets the variant of every Conv and MatMul node of `g`: timed on `device`
// when `level` is not Off and the node is heavy enough for it (or taken from
// the cache), else the default. Returns every node's choice, for the plan.
std::vector<TuningRecord> choose_variants(ProgramGraph& g, Device& device, Tuning level, size_t kernels_per_batch);

// How many candidate kernels this process has timed on the device named
// `device` (Device::name()): the KERNEL_TUNING_RUNS metric.
uint64_t tuning_runs(const std::string& device);

// Puts a blob's timed choices into the process's cache for `device`.
void remember_choices(const std::string& device, const std::vector<TuningRecord>& records);

// Times kernel variants of nodes: every candidate added is built (all of
// them together, batched and in parallel), then each node's candidates are
// timed in rounds that alternate between them; a candidate's time is its
// best round. choose_variants() runs one; benchmarks run one to compare the
// variants of a node.
class TuningSession {
 public:
  struct Timed {
    KernelVariant variant;
    double ms = 0;  // its best round (one far behind the best stops being timed)
  };
  TuningSession(Device& device, size_t kernels_per_batch) : device_(device), kernels_per_batch_(kernels_per_batch) {}
  // The node (of `g`) under `key`, with the variants to time.
  void add(const std::string& key, const ProgramNode& node, const ProgramGraph& g,
           const std::vector<KernelVariant>& candidates);
  // Builds and times everything added; per key, the candidates in the order
  // given with their times.
  std::map<std::string, std::vector<Timed>> run(int rounds);

 private:
  Device& device_;
  size_t kernels_per_batch_;
  std::map<std::string, std::vector<std::pair<KernelVariant, ProgramGraph>>> nodes_;
};

// "off", "fast", "full"; parse_tuning fails with INVALID_ARGUMENT naming
// `what` for any other text.
const char* tuning_name(Tuning t);
Tuning parse_tuning(const std::string& text, const std::string& what);

}  // namespace hetero::gpu
