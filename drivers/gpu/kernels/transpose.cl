// Transpose, Slice and Expand, a copy of elements of type T: INDEX_IN gives
// the input offset of output element o.
__kernel void KERNEL_NAME(__global const T* x, __global T* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ix = 0;
  INDEX_IN
  y[o] = x[ix];
}
