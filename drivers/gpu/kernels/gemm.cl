// Batched matrix product y[b][m][n] = sum_k a[b][m][k] * b[b][k][n], both
// operands row-major (numpy batch broadcasting through INDEX_BATCH, which
// gives the matrix offsets ia, ib of output batch bt), a per-row bias and the
// post-ops. It also runs 1x1 convolutions of stride 1 without padding: a is
// the weights [OC][IC], b one image [IC][H * W].
//
// With B_SCALE(k), b's row k is scaled first (a squeeze-and-excitation
// block's channel scale folded into the 1x1 convolution after it).
//
// Tiled: each work item computes MB rows for NV vectors of VW consecutive
// columns, accumulating in registers; per k it loads NV vectors of b and
// multiplies each a value (a scalar, the same for every lane) into them.
// Columns past N (N % (VW * NV)) take a copy of the loop that checks them.
//
// Launch: global [ceil(N / (VW * NV)), ceil(M / MB), BATCH].
#define floatV VECF(VW)
#define TILE_N (VW * NV)
#define N_TILES ((N + TILE_N - 1) / TILE_N)
#define M_TILES ((M + MB - 1) / MB)

#define GM_GATHER CAT(gm_gather_, KERNEL_NAME)
inline floatV GM_GATHER(__global const float* p, int n0) {
  float t[VW];
  _Pragma("unroll") for (int i = 0; i < VW; ++i) t[i] = n0 + i < N ? p[n0 + i] : 0.0f;
  return VLOADF(VW)(0, t);
}

#ifdef B_SCALE
#define GM_SCALE(k) B_SCALE(k)
#define GM_SCALE_ARG B_SCALE_ARG
#else
#define GM_SCALE(k) 1.0f
#define GM_SCALE_ARG
#endif

#define GM_LOOP(LOAD)                                                                       \
  for (int k = 0; k < K; ++k) {                                                             \
    __global const float* brow = pb + (size_t)k * N;                                        \
    const float scale = GM_SCALE(k);                                                        \
    floatV bv[NV];                                                                          \
    _Pragma("unroll") for (int v = 0; v < NV; ++v) bv[v] = LOAD(brow, n0 + v * VW) * scale;  \
    _Pragma("unroll") for (int j = 0; j < MB; ++j) {                                        \
      const float av = pa[(size_t)GM_AROW(j) * K + k];                                      \
      _Pragma("unroll") for (int v = 0; v < NV; ++v) acc[j * NV + v] = fma((floatV)(av), bv[v], acc[j * NV + v]); \
    }                                                                                       \
  }
#define GM_LOAD_INNER(p, n0) VLOADF(VW)(0, (p) + (n0))

__kernel void KERNEL_NAME(__global const float* a, __global const float* b, __global float* y BIAS_ARG GM_SCALE_ARG
                          POST_ARGS) {
  const int nt = get_global_id(0), mt = get_global_id(1), bt = get_global_id(2);
  if (nt >= N_TILES || mt >= M_TILES || bt >= BATCH) return;
  size_t ia = 0, ib = 0;
  INDEX_BATCH
  const int m0 = mt * MB, n0 = nt * TILE_N;
  // Rows past M (M % MB) compute row m0 again and are not stored.
#define GM_AROW(j) (m0 + (j) < M ? m0 + (j) : m0)
  __global const float* pa = a + ia * (size_t)(M * K);
  __global const float* pb = b + ib * (size_t)(K * N);
  floatV acc[MB * NV];
  _Pragma("unroll") for (int j = 0; j < MB * NV; ++j) acc[j] = (floatV)(0.0f);
  if (n0 + TILE_N <= N) {
    GM_LOOP(GM_LOAD_INNER)
  } else {
    GM_LOOP(GM_GATHER)
  }
  // Whole tiles store vectors when the post-ops have a vector form, others
  // lane by lane. (Guards, not breaks: loops with an early exit are not
  // unrolled.)
  _Pragma("unroll") for (int j = 0; j < MB; ++j) {
    const int m = m0 + j;
    const size_t base = ((size_t)bt * M + m) * N + n0;
#ifdef VPOST_OPS
    if (m < M && n0 + TILE_N <= N) {
      _Pragma("unroll") for (int t = 0; t < NV; ++t) {
        floatV v = acc[j * NV + t] + (floatV)(BIAS_VALUE);
        VPOST_OPS(v, base + t * VW);
        VSTOREF(VW)(v, 0, y + base + t * VW);
      }
      continue;
    }
#endif
    float r[TILE_N];
    _Pragma("unroll") for (int v = 0; v < NV; ++v) VSTOREF(VW)(acc[j * NV + v], 0, r + v * VW);
    _Pragma("unroll") for (int i = 0; i < TILE_N; ++i) {
      if (m < M && n0 + i < N) {
        const size_t o = base + i;
        float v = r[i] + BIAS_VALUE;
        POST_OPS(v, o);
        y[o] = v;
      }
    }
  }
#undef GM_AROW
}

#undef floatV
#undef TILE_N
#undef N_TILES
#undef M_TILES
#undef GM_GATHER
#undef GM_SCALE
#undef GM_SCALE_ARG
#undef GM_LOOP
#undef GM_LOAD_INNER
