// CLBlast, the GEMM library the OpenCL driver times against its own kernels,
// opened when a device first asks for it rather than linked: mapping it
// costs a process about 3 MiB of resident memory (its tuning database is
// relocated at load), which a daemon that serves CPU models with the OpenCL
// driver installed would otherwise pay without ever starting OpenCL.
#pragma once

#if HETERO_HAVE_CLBLAST
#include <clblast_c.h>
#endif

namespace hetero::opencl {

#if HETERO_HAVE_CLBLAST
struct ClblastLibrary {
  decltype(&CLBlastSgemmStridedBatched) sgemm_strided_batched = nullptr;
};

// The library, opened on the first call (once per process); null when the
// build has it but this machine does not (the driver then runs its own
// kernels only).
const ClblastLibrary* clblast_library();
#endif

}  // namespace hetero::opencl
