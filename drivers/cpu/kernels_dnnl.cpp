// The oneDNN-backed kernel families (convolutions, matrix products, pooling,
// layout changes); the normalisations live in kernels_nn.cpp.
#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

void register_dnnl_kernels(KernelRegistry& r) {
  register_conv_kernels(r);
  register_conv_transpose_kernels(r);
  register_matmul_kernels(r);
  register_pool_kernels(r);
  register_layout_kernels(r);
}

}  // namespace hetero::cpu
