// y = UNARY_OP(x), then the fused post-ops; one work item per element. TX
// and TY are the element types: float, or for Cast, Not and integer Abs and
// Neg also int, long and uchar (bool). Post-ops come only with float.
__kernel void KERNEL_NAME(__global const TX* x, __global TY* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const TX u = x[o];
  TY v = UNARY_OP(u);
  POST_OPS(v, o);
  y[o] = v;
}
