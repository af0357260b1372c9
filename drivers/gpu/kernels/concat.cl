// One input of a Concat copied into its slice of the output: the input is
// OUTER blocks of A_IN x INNER elements, placed at OFFSET along an axis of
// A_OUT in the output. T is the element type (float, int, long, uchar).
__kernel void KERNEL_NAME(__global const T* x, __global T* y) {
  const size_t i = get_global_id(0);
  if (i >= TOTAL) return;
  const size_t block = (size_t)A_IN * INNER;
  const size_t outer = i / block, rest = i % block;
  y[outer * A_OUT * INNER + (size_t)OFFSET * INNER + rest] = x[i];
}
