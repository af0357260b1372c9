// Direct convolution, NCHW (1-D convolutions come as H = 1), groups and
// dilations; one work item per output element, bias and post-ops fused.
__kernel void KERNEL_NAME(__global const float* x, __global const float* w, __global float* y BIAS_ARG POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const int ow = (int)(o % OW);
  size_t t = o / OW;
  const int oh = (int)(t % OH);
  t /= OH;
  const int oc = (int)(t % OC);
  const int n = (int)(t / OC);
  const int g = oc / OCG;
  float acc = BIAS_VALUE;
  const int ih0 = oh * SH - PH, iw0 = ow * SW - PW;
  for (int ic = 0; ic < ICG; ++ic) {
    __global const float* xc = x + ((size_t)(n * IC + g * ICG + ic)) * IH * IW;
    __global const float* wc = w + ((size_t)(oc * ICG + ic)) * KH * KW;
    for (int kh = 0; kh < KH; ++kh) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        const int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= IW) continue;
        acc += xc[ih * IW + iw] * wc[kh * KW + kw];
      }
    }
  }
  POST_OPS(acc, o);
  y[o] = acc;
}
