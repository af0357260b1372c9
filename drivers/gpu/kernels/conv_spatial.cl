// Direct convolution, NCHW (1-D as H = 1), tiled along the output row: each
// work item computes OCB output channels of one group for PV vectors of VW
// consecutive output columns of one row, accumulating in registers (every
// loop over the tile is unrolled: private arrays indexed in a loop would
// live in memory). Inputs are read as vectors along the row (stride 1: one
// vload per kernel column; stride 2: a vload twice as wide, even lanes;
// other strides: gathered). A work item whose window crosses the left or
// right border first copies the part of each input row it reads, zero
// outside the row, into a private segment and reads that instead. Weights
// are scalars, the same for every lane. Depthwise convolutions are the case
// OCG = ICG = OCB = 1.
//
// Launch: global [ceil(OW / (VW * PV)), OH, NB * GROUPS * ceil(OCG / OCB)].
#define floatV VECF(VW)
#define TILE_W (VW * PV)
#define OW_TILES ((OW + TILE_W - 1) / TILE_W)
#define OC_TILES ((OCG + OCB - 1) / OCB)
#define GROUPS (IC / ICG)

// CS_LOAD(base, off): VW columns off, off + SW, ... of a row; CS_READ: how
// many columns from the tile's first the loads of a row read.
#if SW == 1
#define CS_LOAD(base, off) VLOADF(VW)(0, (base) + (off))
#define CS_READ (TILE_W + (KW - 1) * DW)
#elif SW == 2 && VW > 1 && VW <= 8
#define CS_LOAD(base, off) (VLOADF(VW2)(0, (base) + (off))).even
#define CS_READ (2 * TILE_W + (KW - 1) * DW)
#else
#define CS_GATHER CAT(cs_gather_, KERNEL_NAME)
inline floatV __attribute__((overloadable)) CS_GATHER(const __global float* p) {
  float t[VW];
  _Pragma("unroll") for (int i = 0; i < VW; ++i) t[i] = p[i * SW];
  return VLOADF(VW)(0, t);
}
inline floatV __attribute__((overloadable)) CS_GATHER(const float* p) {
  float t[VW];
  _Pragma("unroll") for (int i = 0; i < VW; ++i) t[i] = p[i * SW];
  return VLOADF(VW)(0, t);
}
#define CS_LOAD(base, off) CS_GATHER((base) + (off))
#define CS_READ ((TILE_W - 1) * SW + (KW - 1) * DW + 1)
#endif

// The loop over input channels and kernel rows; ROW(row) gives what the
// loads of one input row read from (the row itself at the tile, or its
// segment).
#if KH <= 8
#define CS_UNROLL_KH UNROLL_FULL
#else
#define CS_UNROLL_KH UNROLL_4
#endif
#if KW <= 8
#define CS_UNROLL_KW UNROLL_FULL
#else
#define CS_UNROLL_KW UNROLL_4
#endif
#define CS_LOOP(ROW)                                                                        \
  for (int ic = 0; ic < ICG; ++ic) {                                                        \
    __global const float* xc = x + ((size_t)(n * IC + g * ICG + ic)) * (IH * IW);           \
    __global const float* wc = w + ((size_t)oc0 * ICG + ic) * (KH * KW);                    \
    CS_UNROLL_KH for (int kh = 0; kh < KH; ++kh) {                                           \
      const int ih = ih0 + kh * DH;                                                         \
      if (ih < 0 || ih >= IH) continue;                                                     \
      ROW(xc + ih * IW)                                                                     \
      CS_UNROLL_KW for (int kw = 0; kw < KW; ++kw) {                                         \
        floatV xv[PV];                                                                      \
        _Pragma("unroll") for (int p = 0; p < PV; ++p) xv[p] = CS_LOAD(src, p * VW * SW + kw * DW); \
        _Pragma("unroll") for (int j = 0; j < OCB; ++j) {                                   \
          const float wv = wc[(size_t)CS_WROW(j) * (ICG * KH * KW) + kh * KW + kw];         \
          _Pragma("unroll") for (int p = 0; p < PV; ++p) acc[j * PV + p] = fma((floatV)(wv), xv[p], acc[j * PV + p]); \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }
#define CS_ROW_INNER(row) __global const float* src = (row) + iw0;
#define CS_ROW_BORDER(row)                                                                  \
  float src[CS_READ];                                                                       \
  for (int i = 0; i < CS_READ; ++i) {                                                       \
    const int c = iw0 + i;                                                                  \
    src[i] = c >= 0 && c < IW ? (row)[c] : 0.0f;                                            \
  }

__kernel void KERNEL_NAME(__global const float* x, __global const float* w, __global float* y BIAS_ARG POST_ARGS) {
  const int owt = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  if (owt >= OW_TILES || oh >= OH || z >= NB * GROUPS * OC_TILES) return;
  const int ocg0 = (z % OC_TILES) * OCB, g = (z / OC_TILES) % GROUPS, n = z / (OC_TILES * GROUPS);
  const int oc0 = g * OCG + ocg0;
  // A tile past the group's last channel (OCG % OCB) computes channel ocg0
  // again in those rows and does not store them.
#define CS_WROW(j) (ocg0 + (j) < OCG ? (j) : 0)
  const int ow0 = owt * TILE_W;
  const int ih0 = oh * SH - PH, iw0 = ow0 * SW - PW;
  floatV acc[OCB * PV];
  _Pragma("unroll") for (int j = 0; j < OCB * PV; ++j) acc[j] = (floatV)(0.0f);
  if (iw0 >= 0 && iw0 + CS_READ <= IW) {
    CS_LOOP(CS_ROW_INNER)
  } else {
    CS_LOOP(CS_ROW_BORDER)
  }
  // Whole tiles store vectors when the post-ops have a vector form, others
  // lane by lane. (Guards, not breaks: loops with an early exit are not
  // unrolled.)
  _Pragma("unroll") for (int j = 0; j < OCB; ++j) {
    const int oc = oc0 + j;
    const size_t base = (((size_t)n * OC + oc) * OH + oh) * OW + ow0;
#ifdef VPOST_OPS
    if (ocg0 + j < OCG && ow0 + TILE_W <= OW) {
      _Pragma("unroll") for (int p = 0; p < PV; ++p) {
        floatV v = acc[j * PV + p] + (floatV)(BIAS_VALUE);
        VPOST_OPS(v, base + p * VW);
        VSTOREF(VW)(v, 0, y + base + p * VW);
      }
      continue;
    }
#endif
    float r[TILE_W];
    _Pragma("unroll") for (int p = 0; p < PV; ++p) VSTOREF(VW)(acc[j * PV + p], 0, r + p * VW);
    _Pragma("unroll") for (int i = 0; i < TILE_W; ++i) {
      if (ocg0 + j < OCG && ow0 + i < OW) {
        const size_t o = base + i;
        float v = r[i] + BIAS_VALUE;
        POST_OPS(v, o);
        y[o] = v;
      }
    }
  }
#undef CS_WROW
}

#undef floatV
#undef TILE_W
#undef OW_TILES
#undef OC_TILES
#undef GROUPS
#undef CS_LOAD
#undef CS_READ
#undef CS_GATHER
#undef CS_LOOP
#undef CS_UNROLL_KH
#undef CS_UNROLL_KW
#undef CS_ROW_INNER
#undef CS_ROW_BORDER
