// Squeeze and excitation (passes.cpp: fuse_squeeze_excite), one work group
// of LWS items per batch item n: the mean of each of the C channels of x
// over its HW positions, then the two 1x1 convolutions of that vector,
// C -> CH (HIDDEN_OPS after it) and CH -> C2 (POST_OPS after it), into
// y [N, C2]. Small work; what it saves is two launches of three.
__kernel __attribute__((reqd_work_group_size(LWS, 1, 1)))
void KERNEL_NAME(__global const float* x, __global const float* w1, __global const float* w2,
                 __global float* y B1_ARG B2_ARG POST_ARGS) {
  __local float pooled[C];
  __local float hidden[CH];
  const size_t l = get_local_id(0), n = get_group_id(0);
  for (size_t c = l; c < C; c += LWS) {
    __global const float* xc = x + (n * C + c) * HW;
    float acc = 0.0f;
    for (size_t i = 0; i < HW; ++i) acc += xc[i];
    pooled[c] = acc / (float)HW;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t j = l; j < CH; j += LWS) {
    float v = B1_VALUE(j);
    for (size_t c = 0; c < C; ++c) v += w1[j * C + c] * pooled[c];
    HIDDEN_OPS(v);
    hidden[j] = v;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t k = l; k < C2; k += LWS) {
    float v = B2_VALUE(k);
    for (size_t j = 0; j < CH; ++j) v += w2[k * CH + j] * hidden[j];
    const size_t o = n * C2 + k;
    POST_OPS(v, o);
    y[o] = v;
  }
}
