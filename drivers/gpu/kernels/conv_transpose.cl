// Transposed convolution, NCHW (1-D as H = 1), groups and dilations,
// weights [IC][OCG][KH][KW]; one work item per output element, which sums
// the input elements whose kernel window covers it: along each axis, those
// ih with ih * SH + kh * DH - PH == oh.
__kernel void KERNEL_NAME(__global const float* x, __global const float* w, __global float* y BIAS_ARG POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const int ow = (int)(o % OW);
  size_t t = o / OW;
  const int oh = (int)(t % OH);
  t /= OH;
  const int oc = (int)(t % OC);
  const int n = (int)(t / OC);
  const int g = oc / OCG, ocg = oc % OCG;
  float acc = BIAS_VALUE;
  for (int ic = 0; ic < ICG; ++ic) {
    const int c = g * ICG + ic;
    __global const float* xc = x + ((size_t)(n * IC + c)) * IH * IW;
    __global const float* wc = w + ((size_t)(c * OCG + ocg)) * KH * KW;
    for (int kh = 0; kh < KH; ++kh) {
      const int sh = oh + PH - kh * DH;
      if (sh < 0 || sh % SH) continue;
      const int ih = sh / SH;
      if (ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int sw = ow + PW - kw * DW;
        if (sw < 0 || sw % SW) continue;
        const int iw = sw / SW;
        if (iw >= IW) continue;
        acc += xc[ih * IW + iw] * wc[kh * KW + kw];
      }
    }
  }
  POST_OPS(acc, o);
  y[o] = acc;
}
