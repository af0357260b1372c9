#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_shape_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
