// OpenCL C → SPIR-V at run time, with the toolchain the build used for the
// build-time modules (clang -target spir64, llvm-spirv, spirv-val; paths found
// by Meson). The kernel selector instantiates each template per node with its
// shapes as #defines, so a node's kernels can only be compiled once the model
// is known; blobs carry the device's native binaries, so importing one needs
// no toolchain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetero::level_zero {

struct SpirvToolchain {
  std::string clang, llvm_spirv, spirv_val;
  // The build's toolchain; HETERO_CLANG, HETERO_LLVM_SPIRV, HETERO_SPIRV_VAL
  // override each path.
  static SpirvToolchain from_build();
};

// Compiles `source` (OpenCL C) with `options` (only -cl-std=... and -D...
// are accepted) to SPIR-V and validates it. DRIVER_ERROR with the tool's
// output when a step fails.
std::vector<uint8_t> compile_to_spirv(const SpirvToolchain& tools, const std::string& source,
                                      const std::string& options);

// Runs spirv-val on a module; empty when it is valid, else the validator's
// message.
std::string validate_spirv(const SpirvToolchain& tools, const std::vector<uint8_t>& module);

// The SPIR-V modules built and validated at build time (one reference
// instantiation per kernel template; see build_spirv.py): name → module.
struct PrebuiltSpirv {
  const char* name;
  const uint8_t* data;
  size_t size;
};
std::vector<PrebuiltSpirv> prebuilt_spirv();

}  // namespace hetero::level_zero
