#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_elementwise_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
