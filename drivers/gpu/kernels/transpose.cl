// Transpose: INDEX_IN gives the input offset of output element o.
__kernel void KERNEL_NAME(__global const float* x, __global float* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ix = 0;
  INDEX_IN
  y[o] = x[ix];
}
