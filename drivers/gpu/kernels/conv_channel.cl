// Direct convolution, NCHW (1-D as H = 1), tiled along the output channels:
// weights are stored [GROUPS][ICG][KH][KW][OCGP] (reordered once at compile
// time; OCGP is OCG rounded up to VW, zero padded), so that VW consecutive
// output channels are one vector load. Each work item computes OCB such
// vectors for PB consecutive output columns of one row; every input value is
// a scalar load multiplied into all of them. Any stride and dilation; work
// items whose window crosses the left or right border take a copy of the
// loop that checks every column.
//
// Launch: global [ceil(OW / PB), OH, NB * GROUPS * ceil(OCGP / (VW * OCB))].
#define floatV VECF(VW)
#define OCGP ((OCG + VW - 1) / VW * VW)
#define OW_TILES ((OW + PB - 1) / PB)
#define OC_TILES ((OCGP + VW * OCB - 1) / (VW * OCB))
#define GROUPS (IC / ICG)

#if KH <= 8
#define CC_UNROLL_KH UNROLL_FULL
#else
#define CC_UNROLL_KH UNROLL_4
#endif
#if KW <= 8
#define CC_UNROLL_KW UNROLL_FULL
#else
#define CC_UNROLL_KW UNROLL_4
#endif
#define CC_LOOP(CHECK)                                                                      \
  for (int ic = 0; ic < ICG; ++ic) {                                                        \
    __global const float* xc = x + ((size_t)(n * IC + g * ICG + ic)) * (IH * IW);           \
    __global const float* wc = w + ((size_t)(g * ICG + ic)) * (KH * KW * OCGP) + ocg0;      \
    CC_UNROLL_KH for (int kh = 0; kh < KH; ++kh) {                                           \
      const int ih = ih0 + kh * DH;                                                         \
      if (ih < 0 || ih >= IH) continue;                                                     \
      __global const float* row = xc + ih * IW;                                             \
      CC_UNROLL_KW for (int kw = 0; kw < KW; ++kw) {                                         \
        floatV wv[OCB];                                                                     \
        _Pragma("unroll") for (int j = 0; j < OCB; ++j)                                     \
          wv[j] = VLOADF(VW)(0, wc + (kh * KW + kw) * OCGP + CC_WCOL(j));                   \
        _Pragma("unroll") for (int p = 0; p < PB; ++p) {                                    \
          const int iw = iw0 + p * SW + kw * DW;                                            \
          const float xs = !(CHECK) || (iw >= 0 && iw < IW) ? row[iw] : 0.0f;              \
          _Pragma("unroll") for (int j = 0; j < OCB; ++j)                                   \
            acc[p * OCB + j] = fma((floatV)(xs), wv[j], acc[p * OCB + j]);                  \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }

__kernel void KERNEL_NAME(__global const float* x, __global const float* w, __global float* y BIAS_ARG POST_ARGS) {
  const int owt = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  if (owt >= OW_TILES || oh >= OH || z >= NB * GROUPS * OC_TILES) return;
  const int ocg0 = (z % OC_TILES) * (OCB * VW), g = (z / OC_TILES) % GROUPS, n = z / (OC_TILES * GROUPS);
  // A tile reaching past OCGP reads the group's first vector again in those
  // rows and does not store them.
#define CC_WCOL(j) (ocg0 + ((j) + 1) * VW <= OCGP ? (j) * VW : -ocg0)
  const int ow0 = owt * PB;
  const int ih0 = oh * SH - PH, iw0 = ow0 * SW - PW;
  floatV acc[PB * OCB];
  _Pragma("unroll") for (int j = 0; j < PB * OCB; ++j) acc[j] = (floatV)(0.0f);
  if (iw0 >= 0 && iw0 + (PB - 1) * SW + (KW - 1) * DW < IW) {
    CC_LOOP(0)
  } else {
    CC_LOOP(1)
  }
  _Pragma("unroll") for (int j = 0; j < OCB; ++j) {
    float r[PB * VW];
    _Pragma("unroll") for (int p = 0; p < PB; ++p) VSTOREF(VW)(acc[p * OCB + j], 0, r + p * VW);
    // (Guards, not breaks: loops with an early exit are not unrolled.)
    _Pragma("unroll") for (int l = 0; l < VW; ++l) {
      const int ocg = ocg0 + j * VW + l;
      const int oc = g * OCG + ocg;
      const size_t base = (((size_t)n * OC + oc) * OH + oh) * OW + ow0;
      _Pragma("unroll") for (int p = 0; p < PB; ++p) {
        if (ocg < OCG && ow0 + p < OW) {
          const size_t o = base + p;
          float v = r[p * VW + l] + BIAS_VALUE;
          POST_OPS(v, o);
          y[o] = v;
        }
      }
    }
  }
#undef CC_WCOL
}

#undef floatV
#undef OCGP
#undef OW_TILES
#undef OC_TILES
#undef GROUPS
#undef CC_LOOP
#undef CC_UNROLL_KH
#undef CC_UNROLL_KW
