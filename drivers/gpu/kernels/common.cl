// Helpers every batch of kernels starts with. Each kernel that follows is a
// template instantiated by #defines the kernel selector writes before it
// (KERNEL_NAME, TOTAL, shapes, POST_OPS, POST_ARGS) and #undefs after it.

inline float act_pow(float a, float b) { return b == 2.0f ? a * a : pow(a, b); }

// Vector types and loads by width: VECF(4) is float4, VLOADF(4) vload4.
// The tiled templates take their width as VW and use these with it; a width
// of 1 is the scalar float (vload1 and vstore1 are defined for it).
#define VECF_(n) float##n
#define VECF(n) VECF_(n)
#define float1 float
#define VLOADF_(n) vload##n
#define VLOADF(n) VLOADF_(n)
#define VSTOREF_(n) vstore##n
#define VSTOREF(n) VSTOREF_(n)
inline float __attribute__((overloadable)) vload1(size_t i, const __global float* p) { return p[i]; }
inline float __attribute__((overloadable)) vload1(size_t i, const float* p) { return p[i]; }
inline void __attribute__((overloadable)) vstore1(float v, size_t i, float* p) { p[i] = v; }
inline void __attribute__((overloadable)) vstore1(float v, size_t i, __global float* p) { p[i] = v; }

// A helper function of one instantiation: CAT(name_, KERNEL_NAME), so that
// the kernels of a batch do not define the same name twice.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// Unrolling a loop over kernel rows or columns: fully when it is short, by
// four when it is long (a 1-D convolution of a spectrogram has 512 columns).
#define UNROLL_FULL _Pragma("unroll")
#define UNROLL_4 _Pragma("unroll 4")
