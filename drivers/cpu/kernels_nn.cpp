#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

void register_nn_kernels(KernelRegistry&) {}

}  // namespace hetero::cpu
