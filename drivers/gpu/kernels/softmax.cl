// Softmax along an axis of AXIS elements with INNER elements after it; one
// work item per row (OUTER x INNER rows).
__kernel void KERNEL_NAME(__global const float* x, __global float* y) {
  const size_t r = get_global_id(0);
  if (r >= (size_t)OUTER * INNER) return;
  const size_t base = (r / INNER) * AXIS * INNER + r % INNER;
  float mx = -INFINITY;
  for (int i = 0; i < AXIS; ++i) mx = fmax(mx, x[base + (size_t)i * INNER]);
  float sum = 0.0f;
  for (int i = 0; i < AXIS; ++i) sum += exp(x[base + (size_t)i * INNER] - mx);
  const float inv = 1.0f / sum;
  for (int i = 0; i < AXIS; ++i) y[base + (size_t)i * INNER] = exp(x[base + (size_t)i * INNER] - mx) * inv;
}
