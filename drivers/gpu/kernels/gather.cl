// Gather along an axis of AXIS elements with constant indices: output
// element o is [outer][position p][inner], and the table holds each
// position's index along the axis (as a float, exact below 2^24). T is the
// element type (float, int, long, uchar).
__kernel void KERNEL_NAME(__global const T* x, __global const float* tab, __global T* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const size_t inner = o % INNER, p = (o / INNER) % NIDX, outer = o / (INNER * NIDX);
  y[o] = x[(outer * AXIS + (size_t)tab[p]) * INNER + inner];
}
