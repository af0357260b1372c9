// Max and average pooling, NCHW (1-D as H = 1); one work item per output.
// Averages divide by the window positions inside the input, or inside the
// padded input with COUNT_PAD.
__kernel void KERNEL_NAME(__global const float* x, __global float* y POST_ARGS) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  const int ow = (int)(o % OW);
  const int oh = (int)((o / OW) % OH);
  const size_t nc = o / ((size_t)OW * OH);
  __global const float* xc = x + nc * IH * IW;
  const int ih0 = oh * SH - PH, iw0 = ow * SW - PW;
  float acc = POOL_MAX ? -INFINITY : 0.0f;
  int count = 0;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * DH;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * DW;
      if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) {
        if (COUNT_PAD && ih >= -PH && ih < IH + PH_END && iw >= -PW && iw < IW + PW_END) ++count;
        continue;
      }
      const float v = xc[ih * IW + iw];
      acc = POOL_MAX ? fmax(acc, v) : acc + v;
      ++count;
    }
  }
  float v = POOL_MAX ? acc : acc / (float)max(count, 1);
  POST_OPS(v, o);
  y[o] = v;
}
