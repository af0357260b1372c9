// The network plan: what a network (one per stream) needs to run a program —
// which kernel each step launches with which buffers, the events each step
// waits for, and the sizes of the pooled buffers the memory pool assigned.
// It is plain data so that blobs carry it and an import needs no planning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "drivers/gpu/device_api.h"

namespace hetero::gpu {

// Where a tensor lives while a network runs.
struct Ref {
  enum class Kind : uint8_t { Input = 0, Constant = 1, Pool = 2 };
  Kind kind = Kind::Pool;
  uint32_t index = 0;
  bool operator==(const Ref&) const = default;
};

struct Step {
  uint32_t kernel = 0;  // index into NetworkPlan::kernels (unused for a library call)
  std::optional<LibraryGemm> gemm;  // a call of the device's GEMM library instead
  std::vector<Ref> args;
  Range range;
  std::vector<uint32_t> deps;  // earlier steps whose events this one waits for
  std::string node;            // the program node it came from (messages, profiling)
};

struct KernelRef {
  std::string name;
  uint32_t program = 0;  // index into NetworkPlan::programs
};

// A heavy node's kernel variant and how it was chosen, under the node's
// shape key (kernel_variants.h): blobs carry the choices so that importing
// one seeds the process's tuning cache.
struct TuningRecord {
  std::string key;      // variant_key(): the node's shapes and attributes
  std::string variant;  // KernelVariant::text()
  uint8_t level = 0;    // the Tuning it was chosen at (0: by default, untimed)
  bool operator==(const TuningRecord&) const = default;
};

struct ProgramSource {
  std::string source;   // empty after import: blobs carry binaries only
  std::string options;
};

struct NetworkPlan {
  std::vector<ProgramSource> programs;  // device programs (kernel batches)
  std::vector<KernelRef> kernels;
  std::vector<Step> steps;
  std::vector<core::Tensor> constants;  // Ref::Constant
  std::vector<uint64_t> input_bytes;    // Ref::Input, one per model input
  std::vector<uint64_t> pool_bytes;     // Ref::Pool: buffers the memory pool hands out
  struct Output {
    Ref ref;
    core::Shape shape;
    core::DType dtype = core::DType::F32;  // a blob takes it from the output's port
    int32_t last_writer = -1;  // step whose event the read waits for; -1: none
  };
  std::vector<Output> outputs;
  std::vector<TuningRecord> tuning;  // the variant of each Conv and MatMul node
  uint64_t intermediate_bytes = 0;  // sum of every intermediate tensor (what no pool would take)
  uint64_t pool_total_bytes() const {
    uint64_t s = 0;
    for (uint64_t b : pool_bytes) s += b;
    return s;
  }
};

}  // namespace hetero::gpu
