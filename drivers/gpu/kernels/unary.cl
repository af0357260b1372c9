// y = UNARY_OP(x), then the fused post-ops; one work item per element.
__kernel void KERNEL_NAME(__global const float* x, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  float v = x[o];
  v = UNARY_OP(v);
  POST_OPS(v, o);
  y[o] = v;
}
