// The OpenCL C kernel templates of drivers/gpu/kernels/, embedded at build
// time (embed_kernels.py writes kernel_sources.cpp), so that the driver reads
// no files at run time and a Level Zero build can compile the same sources.
#pragma once

#include <string_view>

namespace hetero::gpu {

// The source of kernels/<name>.cl; fails with INTERNAL for an unknown name.
std::string_view kernel_source(std::string_view name);

}  // namespace hetero::gpu
