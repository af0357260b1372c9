#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_dnnl_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
