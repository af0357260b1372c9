// y = BINARY_OP(a, b) with numpy broadcasting: INDEX_AB turns the output
// index o into the offsets ia and ib (broadcast dimensions have stride 0).
// TA is the operands' element type, TY the result's: float, int or long,
// and uchar (bool) for comparisons and logic. Post-ops come only with float.
__kernel void KERNEL_NAME(__global const TA* a, __global const TA* b, __global TY* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ia = 0, ib = 0;
  INDEX_AB
  TY v = BINARY_OP(a[ia], b[ib]);
  POST_OPS(v, o);
  y[o] = v;
}
