// y = c ? a : b with numpy broadcasting: INDEX_CAB turns the output index o
// into the offsets ic, ia and ib (broadcast dimensions have stride 0). c is
// bool (uchar); a, b and y are of element type T.
__kernel void KERNEL_NAME(__global const uchar* c, __global const T* a, __global const T* b, __global T* y) {
  const size_t o = get_global_id(0);
  if (o >= TOTAL) return;
  size_t ic = 0, ia = 0, ib = 0;
  INDEX_CAB
  y[o] = c[ic] ? a[ia] : b[ib];
}
