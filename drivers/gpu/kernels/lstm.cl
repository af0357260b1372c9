// LSTM, every time step in one launch of one work group (ONNX's gate order
// i, o, f, c; activations sigmoid, tanh, tanh). Work item (dir, b, j) owns
// hidden unit j of batch row b in direction dir: it computes that unit's
// four gates from x_t and all of h_{t-1}, so the group meets at a barrier
// between reading h_{t-1} and writing h_t, and after writing it.
// The output y holds Y [SEQ][NDIR][BATCH][HID], then Y_h and Y_c
// [NDIR][BATCH][HID]; Y_h doubles as the hidden state while it runs.
// Optional inputs (BIAS_ARG, H0_ARG, C0_ARG, PEEP_ARG) are present or not
// per instantiation; their values come from BIAS, H0, C0 and PEEP.
__kernel void KERNEL_NAME(__global const float* x, __global const float* w, __global const float* r,
                          __global float* y BIAS_ARG H0_ARG C0_ARG PEEP_ARG) {
  const int id = (int)get_global_id(0);
  const int j = id % HID, b = (id / HID) % BATCH, dir = id / (HID * BATCH);
  __global float* yh = y + (size_t)SEQ * NDIR * BATCH * HID;
  __global float* yc = yh + (size_t)NDIR * BATCH * HID;
  __global float* h = yh + (size_t)(dir * BATCH + b) * HID;  // this row's hidden state
  float c = C0(dir, b, j);
  h[j] = H0(dir, b, j);
  barrier(CLK_GLOBAL_MEM_FENCE);
  const int reverse = REVERSE(dir);
  for (int s = 0; s < SEQ; ++s) {
    const int t = reverse ? SEQ - 1 - s : s;
    __global const float* xt = x + (size_t)(t * BATCH + b) * INP;
    float g[4];
    for (int k = 0; k < 4; ++k) {
      const int row = k * HID + j;
      __global const float* wr = w + (size_t)(dir * 4 * HID + row) * INP;
      __global const float* rr = r + (size_t)(dir * 4 * HID + row) * HID;
      float acc = BIAS(dir, row);
      for (int i = 0; i < INP; ++i) acc = fma(xt[i], wr[i], acc);
      for (int i = 0; i < HID; ++i) acc = fma(h[i], rr[i], acc);
      g[k] = acc;
    }
    const float ig = 1.0f / (1.0f + exp(-(g[0] + PEEP(dir, 0, j) * c)));
    const float fg = 1.0f / (1.0f + exp(-(g[2] + PEEP(dir, 2, j) * c)));
    c = fg * c + ig * tanh(g[3]);
    const float og = 1.0f / (1.0f + exp(-(g[1] + PEEP(dir, 1, j) * c)));
    const float ht = og * tanh(c);
    barrier(CLK_GLOBAL_MEM_FENCE);  // every unit has read h_{t-1}
    h[j] = ht;
    y[(size_t)((t * NDIR + dir) * BATCH + b) * HID + j] = ht;
    barrier(CLK_GLOBAL_MEM_FENCE);  // h_t is whole before the next step reads it
  }
  yc[(size_t)(dir * BATCH + b) * HID + j] = c;
}
