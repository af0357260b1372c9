#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_reduction_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
