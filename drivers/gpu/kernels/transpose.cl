// Transpose, Slice and Expand, a copy of elements of type T: INDEX_IN gives
// the input offset of output element o. Then the fused post-ops (float only):
// the bias and activation after a ConvTranspose's channel shuffle.
__kernel void KERNEL_NAME(__global const T* x, __global T* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ix = 0;
  INDEX_IN
  T v = x[ix];
  POST_OPS(v, o);
  y[o] = v;
}
