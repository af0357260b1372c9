// y = BINARY_OP(a, b) with numpy broadcasting: INDEX_AB turns the output
// index o into the offsets ia and ib (broadcast dimensions have stride 0).
__kernel void KERNEL_NAME(__global const float* a, __global const float* b, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ia = 0, ib = 0;
  INDEX_AB
  float v = BINARY_OP(a[ia], b[ib]);
  POST_OPS(v, o);
  y[o] = v;
}
