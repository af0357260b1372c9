// Resize: RESIZE_INDEX finds, for output element o, the input offset `base`
// of its nearest or lower neighbour along every resized axis (from the table
// `tab` made at compile, kernel_selector.cpp) and, along each interpolated
// axis k, the offsets lo_k and hi_k of its two neighbours and the upper one's
// weight w_k; RESIZE_VALUE weighs the corners (nearest: x[base]).
__kernel void KERNEL_NAME(__global const float* x, __global const float* tab, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t base = 0;
  RESIZE_INDEX
  float v = RESIZE_VALUE;
  POST_OPS(v, o);
  y[o] = v;
}
