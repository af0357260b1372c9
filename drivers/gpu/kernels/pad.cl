// Pad: PAD_INDEX sets ix to the input offset output element o reads, or
// clears `inside` where o lies in constant padding (then PAD_VALUE).
__kernel void KERNEL_NAME(__global const float* x, __global float* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ix = 0;
  int inside = 1;
  PAD_INDEX
  y[o] = inside ? x[ix] : PAD_VALUE;
}
