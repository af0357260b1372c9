#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_control_flow_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
