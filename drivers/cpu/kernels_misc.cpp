#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_misc_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
