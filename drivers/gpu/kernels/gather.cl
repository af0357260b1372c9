// Gather along an axis of AXIS elements with constant indices: output
// element o is [outer][position p][inner], and the table holds each
// position's index along the axis (as a float, exact below 2^24).
__kernel void KERNEL_NAME(__global const float* x, __global const float* tab, __global float* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const size_t inner = o % INNER, p = (o / INNER) % NIDX, outer = o / (INNER * NIDX);
  y[o] = x[(outer * AXIS + (size_t)tab[p]) * INNER + inner];
}
