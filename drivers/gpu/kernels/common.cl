// Helpers every batch of kernels starts with. Each kernel that follows is a
// template instantiated by #defines the kernel selector writes before it
// (KERNEL_NAME, TOTAL, shapes, POST_OPS, POST_ARGS) and #undefs after it.

inline float act_sigmoid(float v) { return 1.0f / (1.0f + exp(-v)); }
inline float act_softplus(float v) { return v > 20.0f ? v : log1p(exp(v)); }
inline float act_pow(float a, float b) { return b == 2.0f ? a * a : pow(a, b); }
