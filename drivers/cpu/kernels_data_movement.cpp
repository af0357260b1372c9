#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_data_movement_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
