// Reduction over some axes: one work item per output element; INDEX_KEEP
// gives the input offset of output o, INDEX_RED the offset of reduced
// position r (RCOUNT of them) relative to it.
__kernel void KERNEL_NAME(__global const float* x, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t base = 0;
  INDEX_KEEP
  float acc = RED_INIT;
  for (size_t r = 0; r < RCOUNT; ++r) {
    size_t off = 0;
    INDEX_RED
    const float v = x[base + off];
    acc = RED_OP(acc, v);
  }
  float v = RED_FINAL(acc);
  POST_OPS(v, o);
  y[o] = v;
}
