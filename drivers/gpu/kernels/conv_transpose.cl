// Transposed convolution, NCHW (1-D as H = 1), groups and dilations,
// weights [IC][OCG][KH][KW]; one work item per output element. Along each
// axis only the taps with ih * SH + kh * DH - PH == oh reach it (with a
// kernel the size of the stride, one): those are found first, without a
// test per tap when undilated, and the sum over the group's input channels
// runs for each, with no test inside it.
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
  const size_t plane = (size_t)IH * IW, wstep = (size_t)OCG * KH * KW;
  __global const float* xg = x + ((size_t)n * IC + (size_t)g * ICG) * plane;
  __global const float* wg = w + ((size_t)g * ICG * OCG + ocg) * KH * KW;
  float acc = BIAS_VALUE;
#if DH == 1 && DW == 1
  // Undilated: the taps along an axis are every SH-th from the first.
  const int rh = ((oh + PH) % SH + SH) % SH, rw = ((ow + PW) % SW + SW) % SW;
  for (int kh = rh; kh < KH; kh += SH) {
    const int ih = (oh + PH - kh) / SH;
    if (ih < 0 || ih >= IH) continue;
    for (int kw = rw; kw < KW; kw += SW) {
      const int iw = (ow + PW - kw) / SW;
      if (iw < 0 || iw >= IW) continue;
#else
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
#endif
      __global const float* xp = xg + ih * IW + iw;
      __global const float* wp = wg + kh * KW + kw;
      for (int ic = 0; ic < ICG; ++ic) acc += xp[ic * plane] * wp[ic * wstep];
    }
  }
  POST_OPS(acc, o);
  y[o] = acc;
}
