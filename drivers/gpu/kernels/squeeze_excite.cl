// Squeeze and excitation (passes.cpp: fuse_squeeze_excite), one work group
// of LWS items per batch item n: the mean of each of the C channels of x
// over its HW positions, then the two 1x1 convolutions of that vector,
// C -> CH (HIDDEN_OPS after it) and CH -> C2 (POST_OPS after it), into
// y [N, C2]. Small work; what it saves is two launches of three. Each work
// item reads its row with vector loads (SE_DOT), which a CPU device (PoCL)
// needs: it runs the group's items one after another on one thread.
#define SE_DOT CAT(se_dot_, KERNEL_NAME)
// The dot product of n floats at p with n at q, or their sum with q null.
inline float SE_DOT(__global const float* p, __local const float* q, size_t n) {
  float4 acc = (float4)(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) acc += q ? vload4(0, p + i) * vload4(0, q + i) : vload4(0, p + i);
  float sum = (acc.s0 + acc.s1) + (acc.s2 + acc.s3);
  for (; i < n; ++i) sum += q ? p[i] * q[i] : p[i];
  return sum;
}

__kernel __attribute__((reqd_work_group_size(LWS, 1, 1)))
void KERNEL_NAME(__global const float* x, __global const float* w1, __global const float* w2,
                 __global float* y B1_ARG B2_ARG POST_ARGS) {
  __local float pooled[C];
  __local float hidden[CH];
  const size_t l = get_local_id(0), n = get_group_id(0);
  for (size_t c = l; c < C; c += LWS) pooled[c] = SE_DOT(x + (n * C + c) * HW, 0, HW) / (float)HW;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t j = l; j < CH; j += LWS) {
    float v = B1_VALUE(j) + SE_DOT(w1 + j * C, pooled, C);
    HIDDEN_OPS(v);
    hidden[j] = v;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t k = l; k < C2; k += LWS) {
    float v = B2_VALUE(k) + SE_DOT(w2 + k * CH, hidden, CH);
    const size_t o = n * C2 + k;
    POST_OPS(v, o);
    y[o] = v;
  }
}

#undef SE_DOT
