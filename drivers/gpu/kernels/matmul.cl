// Batched matrix product y[.., M, N] = a[.., M, K] x b[.., K, N] with batch
// broadcasting (INDEX_BATCH gives the matrix offsets ia, ib of output batch
// bt). With B_TRANS, b is stored [N, K] (reordered once at compile time) so
// that both operands are read contiguously.
__kernel void KERNEL_NAME(__global const float* a, __global const float* b, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const size_t n = o % N;
  const size_t m = (o / N) % M;
  const size_t bt = o / ((size_t)M * N);
  size_t ia = 0, ib = 0;
  INDEX_BATCH
  __global const float* pa = a + ia * M * K + m * K;
  float acc = 0.0f;
#if B_TRANS
  __global const float* pb = b + ib * N * K + n * K;
  for (int k = 0; k < K; ++k) acc += pa[k] * pb[k];
#else
  __global const float* pb = b + ib * K * N + n;
  for (int k = 0; k < K; ++k) acc += pa[k] * pb[(size_t)k * N];
#endif
  POST_OPS(acc, o);
  y[o] = acc;
}
