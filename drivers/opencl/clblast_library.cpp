#include "drivers/opencl/clblast_library.h"

#if HETERO_HAVE_CLBLAST
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/log.h"

namespace hetero::opencl {

const ClblastLibrary* clblast_library() {
  static std::once_flag once;
  static ClblastLibrary library;
  static bool found = false;
  std::call_once(once, [] {
    // Kept open for the process: the driver's kernels may be in flight on
    // any queue that called it.
    void* handle = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      core::log(core::LogLevel::Warning,
                std::string("OpenCL: no GEMM library (") + dlerror() + "); the driver's own kernels run alone");
      return;
    }
    library.sgemm_strided_batched =
        reinterpret_cast<decltype(library.sgemm_strided_batched)>(dlsym(handle, "CLBlastSgemmStridedBatched"));
    found = library.sgemm_strided_batched != nullptr;
    if (!found)
      core::log(core::LogLevel::Warning,
                "OpenCL: libclblast.so.1 has no CLBlastSgemmStridedBatched; the driver's own kernels run alone");
  });
  return found ? &library : nullptr;
}

}  // namespace hetero::opencl
#endif
