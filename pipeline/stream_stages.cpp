#include "pipeline/stream_stages.h"

#include <cstring>

#include "core/error.h"

namespace hetero::pipeline {

namespace {

// A tensor seen as [outer, steps, inner bytes] around `axis`.
struct Split {
  size_t outer = 1, steps = 0, inner = 1;  // inner: bytes of one step of one outer row
};

Split split(const core::Shape& shape, int64_t axis, core::DType dtype) {
  Split s;
  s.inner = core::dtype_size(dtype);
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= static_cast<size_t>(shape[d]);
    if (d > axis) s.inner *= static_cast<size_t>(shape[d]);
  }
  s.steps = static_cast<size_t>(shape[axis]);
  return s;
}

// Shapes equal but along `axis`.
bool same_but_axis(const core::Shape& a, const core::Shape& b, int64_t axis) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (static_cast<int64_t>(d) != axis && a[d] != b[d]) return false;
  return true;
}

// Steps [first, first + count) of `t` along `axis`: a view when the steps are
// contiguous (one outer row), else a copy.
core::Tensor steps_of(const core::Tensor& t, int64_t axis, size_t first, size_t count) {
  const Split s = split(t.shape(), axis, t.dtype());
  core::Shape shape = t.shape();
  shape[axis] = static_cast<int64_t>(count);
  const auto* base = static_cast<const uint8_t*>(t.raw());
  if (s.outer == 1)
    return core::Tensor::wrap(t.dtype(), shape, const_cast<uint8_t*>(base) + first * s.inner, t.owner());
  core::Tensor out = core::Tensor::allocate(t.dtype(), shape, false);
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (size_t o = 0; o < s.outer; ++o)
    std::memcpy(dst + o * count * s.inner, base + (o * s.steps + first) * s.inner, count * s.inner);
  return out;
}

}  // namespace

core::Tensor scale(const core::Tensor& x, float a, float b) {
  core::Tensor out = core::Tensor::allocate(core::DType::F32, x.shape(), false);
  const float* src = x.data<float>();
  float* dst = out.data<float>();
  for (size_t i = 0; i < x.numel(); ++i) dst[i] = src[i] * a + b;
  return out;
}

std::vector<core::Tensor> Window::push(State& state, const core::Tensor& x, size_t max_windows,
                                       const std::string& what) const {
  const core::Tensor& buffer = state.buffer;
  if (x.dtype() != buffer.dtype() || x.rank() <= static_cast<size_t>(axis) ||
      !same_but_axis(x.shape(), buffer.shape(), axis) || buffer.dim(axis) != size)
    fail(HETERO_INVALID_ARGUMENT, what + ": its input is " + core::dtype_name(x.dtype()) + " " +
                                      core::shape_to_string(x.shape()) + ", which does not go on its window of " +
                                      core::dtype_name(buffer.dtype()) + " " + core::shape_to_string(buffer.shape()) +
                                      " (the same dims but along axis " + std::to_string(axis) + ")");
  if (state.steps < 0 || state.steps >= steps_limit())
    fail(HETERO_INVALID_ARGUMENT, what + ": its step count is " + std::to_string(state.steps) + ", outside 0.." +
                                      std::to_string(steps_limit() - 1));
  const auto n = static_cast<int64_t>(x.dim(axis));
  // The emissions: after new step j (1-based), counted from `steps`.
  std::vector<int64_t> ends;
  for (int64_t j = 1; j <= n; ++j) {
    const int64_t t = state.steps + j;
    if (prefill ? t % step == 0 : t >= size && (t - size) % step == 0) {
      if (ends.size() == max_windows)
        fail(HETERO_INVALID_ARGUMENT, what + ": its input of " + std::to_string(n) +
                                          " steps would make more than " + std::to_string(max_windows) +
                                          " windows in one call; send the stream in smaller pieces");
      ends.push_back(j);
    }
  }
  // The buffer and the new steps in one tensor: each window is `size` steps of it.
  core::Shape joined_shape = x.shape();
  joined_shape[axis] = size + n;
  core::Tensor joined = core::Tensor::allocate(x.dtype(), joined_shape, false);
  const Split in = split(x.shape(), axis, x.dtype());
  auto* dst = static_cast<uint8_t*>(joined.raw());
  const auto* old_steps = static_cast<const uint8_t*>(buffer.raw());
  const auto* new_steps = static_cast<const uint8_t*>(x.raw());
  const size_t row = (size + n) * in.inner;
  for (size_t o = 0; o < in.outer; ++o) {
    std::memcpy(dst + o * row, old_steps + o * size * in.inner, size * in.inner);
    std::memcpy(dst + o * row + size * in.inner, new_steps + o * n * in.inner, n * in.inner);
  }
  std::vector<core::Tensor> windows;
  windows.reserve(ends.size());
  for (int64_t j : ends) windows.push_back(steps_of(joined, axis, static_cast<size_t>(j), static_cast<size_t>(size)));
  state.buffer = steps_of(joined, axis, static_cast<size_t>(n), static_cast<size_t>(size));
  const int64_t t = state.steps + n;
  state.steps = prefill ? t % step : t < size ? t : size + (t - size) % step;
  return windows;
}

core::Tensor concat(const std::vector<core::Tensor>& parts, int64_t axis, core::DType dtype,
                    const core::Shape& empty_shape, const std::string& what) {
  if (parts.empty()) return core::Tensor::allocate(dtype, empty_shape);
  if (parts.size() == 1) return parts.front();
  core::Shape shape = parts.front().shape();
  int64_t total = 0;
  for (const core::Tensor& p : parts) {
    if (p.dtype() != parts.front().dtype() || p.rank() <= static_cast<size_t>(axis) ||
        !same_but_axis(p.shape(), shape, axis))
      fail(HETERO_INVALID_ARGUMENT, what + ": it cannot join " + core::shape_to_string(shape) + " and " +
                                        core::shape_to_string(p.shape()) + " along axis " + std::to_string(axis));
    total += p.dim(axis);
  }
  shape[axis] = total;
  core::Tensor out = core::Tensor::allocate(parts.front().dtype(), shape, false);
  const Split whole = split(shape, axis, out.dtype());
  auto* dst = static_cast<uint8_t*>(out.raw());
  size_t offset = 0;  // steps of the parts before
  for (const core::Tensor& p : parts) {
    const Split s = split(p.shape(), axis, p.dtype());
    const auto* src = static_cast<const uint8_t*>(p.raw());
    for (size_t o = 0; o < s.outer; ++o)
      std::memcpy(dst + (o * whole.steps + offset) * s.inner, src + o * s.steps * s.inner, s.steps * s.inner);
    offset += s.steps;
  }
  return out;
}

}  // namespace hetero::pipeline
