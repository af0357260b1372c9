// The kernels cache: kernel sources collected during kernel selection,
// deduplicated by content, grouped into batches of a few kernels and the
// batches compiled in parallel into device programs. In-process only: the
// device runtime may keep its own on-disk cache, and blobs carry binaries.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "drivers/gpu/device_api.h"
#include "drivers/gpu/network_plan.h"

namespace hetero::gpu {

struct BuiltKernels {
  std::vector<ProgramSource> programs;
  std::vector<std::shared_ptr<Executable>> executables;
  std::map<std::string, uint32_t> program_of;  // kernel name → program index
};

// Compiles `codes` (kernel name → instantiated source), `per_batch` kernels
// per device program, batches on up to `threads` threads at once. A build
// failure is INTERNAL with the device's build log. Reports the batches built
// as `progress_stage` (core/progress.h), from the calling thread only.
BuiltKernels build_kernels(Device& device, const std::map<std::string, std::string>& codes, size_t per_batch,
                           size_t threads, const char* progress_stage = "building GPU kernels");

// The build options every program of this driver is compiled with.
const char* kernel_build_options();

}  // namespace hetero::gpu
