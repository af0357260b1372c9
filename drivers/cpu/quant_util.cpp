#include "drivers/cpu/quant_util.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <limits>

#include <dnnl.hpp>

#include "core/error.h"
#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/graph_rewrite.h"

namespace hetero::cpu {

namespace {

std::string type_list() { return "uint8, int8 or int32"; }

// The scale of a tensor given only by its zero point (ConvInteger,
// MatMulInteger): ones, shaped like the zero point.
core::Tensor unit_scale(const core::Tensor* zero_point) {
  core::Tensor s = core::Tensor::allocate(core::DType::F32, zero_point ? zero_point->shape() : core::Shape{}, false);
  std::fill_n(s.data<float>(), s.numel(), 1.0f);
  return s;
}

}  // namespace

QuantInputs::QuantInputs(const KernelBuild& b, size_t scale_input, size_t zero_point_input, const QuantSpec& spec)
    : scale_(scale_input), zero_point_(zero_point_input) {
  const bool has_zp = zero_point_input != kNone && b.node.input(zero_point_input);
  const core::Tensor* zp = has_zp ? b.constant_input(zero_point_input) : nullptr;
  if (has_zp && !zp) return;
  if (scale_input == kNone) {
    constant_ = read_quant_params(b.node, unit_scale(zp), zp, spec, HETERO_INVALID_MODEL);
  } else if (const core::Tensor* scale = b.constant_input(scale_input)) {
    constant_ = read_quant_params(b.node, *scale, zp, spec, HETERO_INVALID_MODEL);
  }
}

const QuantParams& QuantInputs::get(const KernelRun& r, const QuantSpec& spec, QuantParams& storage) const {
  if (constant_) return *constant_;
  const core::Tensor* zp = zero_point_ == kNone ? nullptr : r.input(zero_point_);
  if (scale_ == kNone) {
    storage = read_quant_params(r.node(), unit_scale(zp), zp, spec, HETERO_INVALID_ARGUMENT);
    return storage;
  }
  const core::Tensor* scale = r.input(scale_);
  if (!scale) fail(HETERO_INVALID_ARGUMENT, r.node().describe() + ": " + spec.what + " scale is missing");
  storage = read_quant_params(r.node(), *scale, zp, spec, HETERO_INVALID_ARGUMENT);
  return storage;
}

core::DType zero_point_type(const KernelBuild& b, size_t zero_point_input) {
  const core::DType t = b.input_dtype(zero_point_input);
  return t == core::DType::Undefined ? core::DType::U8 : t;
}

core::DType output_zero_point_type(const KernelBuild& b, size_t zero_point_input) {
  const core::DType t = zero_point_input == QuantInputs::kNone ? core::DType::U8 : zero_point_type(b, zero_point_input);
  if (t != core::DType::U8 && t != core::DType::I8)
    fail(HETERO_INVALID_MODEL, b.node.describe() + ": y zero point must be uint8 or int8, got " + core::dtype_name(t));
  return t;
}

QuantParams quant_params_from_attrs(const core::Node& node, const std::string& prefix) {
  QuantParams p;
  const int64_t type = node.attr_int(prefix + "_type", static_cast<int64_t>(core::DType::U8));
  p.dtype = static_cast<core::DType>(type);
  if (!is_quantized_type(p.dtype))
    fail(HETERO_INVALID_MODEL, node.describe() + ": " + prefix + "_type " + std::to_string(type) + " is not " + type_list());
  p.scale = node.attr_floats(prefix + "_scale");
  const std::vector<int64_t> zp = node.attr_ints(prefix + "_zero_point");
  p.axis = node.attr_int(prefix + "_axis", -1);
  if (p.scale.empty() || zp.size() != p.scale.size() || (p.scale.size() > 1 && p.axis < 0))
    fail(HETERO_INVALID_MODEL, node.describe() + ": attributes " + prefix + "_scale and " + prefix +
                                   "_zero_point disagree");
  for (size_t i = 0; i < zp.size(); ++i) {
    if (!(p.scale[i] > 0) || !std::isfinite(p.scale[i]) || zp[i] < quant_min(p.dtype) || zp[i] > quant_max(p.dtype))
      fail(HETERO_INVALID_MODEL, node.describe() + ": bad " + prefix + " quantisation attributes");
    p.zero_point.push_back(static_cast<int32_t>(zp[i]));
  }
  return p;
}

void set_quant_attrs(core::Node& node, const std::string& prefix, const QuantParams& p) {
  passes::set_attr_int(&node, prefix + "_type", static_cast<int64_t>(p.dtype));
  passes::set_attr_floats(&node, prefix + "_scale", p.scale);
  passes::set_attr_ints(&node, prefix + "_zero_point", {p.zero_point.begin(), p.zero_point.end()});
  if (!p.per_tensor()) passes::set_attr_int(&node, prefix + "_axis", p.axis);
}

bool has_quant_attrs(const core::Node& node, const std::string& prefix) { return node.has_attr(prefix + "_scale"); }

std::string concat_input_prefix(size_t i) {
  std::string prefix = std::to_string(i);
  prefix.insert(prefix.begin(), 'x');
  return prefix;
}

namespace {

// Four floats quantised with SSE2: divide, clamp to the code range less the
// zero point, convert (cvtps2dq rounds half to even in the default mode),
// add the zero point.
inline __m128i quantize4(__m128 x, __m128 scale, __m128 lo, __m128 hi, __m128i zp) {
  __m128 q = _mm_div_ps(x, scale);
  q = _mm_min_ps(_mm_max_ps(q, lo), hi);  // NaN becomes lo (maxps returns its second operand)
  return _mm_add_epi32(_mm_cvtps_epi32(q), zp);
}

}  // namespace

template <typename T>
void quantize_span(const float* x, T* y, size_t n, float scale, int32_t zero_point) {
  constexpr core::DType dt = core::DTypeOf<T>::value;
  const int32_t lo = quant_min(dt), hi = quant_max(dt);
  const __m128 s = _mm_set1_ps(scale), vlo = _mm_set1_ps(static_cast<float>(lo - zero_point)),
               vhi = _mm_set1_ps(static_cast<float>(hi - zero_point));
  const __m128i zp = _mm_set1_epi32(zero_point);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = quantize4(_mm_loadu_ps(x + i), s, vlo, vhi, zp);
    const __m128i b = quantize4(_mm_loadu_ps(x + i + 4), s, vlo, vhi, zp);
    const __m128i c = quantize4(_mm_loadu_ps(x + i + 8), s, vlo, vhi, zp);
    const __m128i d = quantize4(_mm_loadu_ps(x + i + 12), s, vlo, vhi, zp);
    const __m128i ab = _mm_packs_epi32(a, b), cd = _mm_packs_epi32(c, d);  // exact: values are in range
    const __m128i bytes = std::is_same_v<T, uint8_t> ? _mm_packus_epi16(ab, cd) : _mm_packs_epi16(ab, cd);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), bytes);
  }
  for (; i < n; ++i) y[i] = static_cast<T>(quantize_value(x[i], scale, zero_point, lo, hi));
}

template <typename T>
void round_to_codes(const float* v, T* y, size_t n) {
  size_t i = 0;
  // cvtps2dq rounds half to even; the packs saturate (out-of-range floats
  // convert to INT_MIN and so saturate low, as in ONNX Runtime).
  for (; i + 8 <= n; i += 8) {
    const __m128i a = _mm_cvtps_epi32(_mm_loadu_ps(v + i)), b = _mm_cvtps_epi32(_mm_loadu_ps(v + i + 4));
    const __m128i w = _mm_packs_epi32(a, b);
    const __m128i bytes = std::is_same_v<T, uint8_t> ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), bytes);
  }
  constexpr core::DType dt = core::DTypeOf<T>::value;
  for (; i < n; ++i) {
    const float r = std::nearbyint(v[i]);
    y[i] = static_cast<T>(!(r >= quant_min(dt)) ? quant_min(dt) : r > quant_max(dt) ? quant_max(dt) : static_cast<int32_t>(r));
  }
}

template <typename T>
void dequantize_span(const T* x, float* y, size_t n, float scale, int32_t zero_point) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero_point) * scale;
}

template void quantize_span<uint8_t>(const float*, uint8_t*, size_t, float, int32_t);
template void quantize_span<int8_t>(const float*, int8_t*, size_t, float, int32_t);
template void round_to_codes<uint8_t>(const float*, uint8_t*, size_t);
template void round_to_codes<int8_t>(const float*, int8_t*, size_t);
template void dequantize_span<uint8_t>(const uint8_t*, float*, size_t, float, int32_t);
template void dequantize_span<int8_t>(const int8_t*, float*, size_t, float, int32_t);
template void dequantize_span<int32_t>(const int32_t*, float*, size_t, float, int32_t);

namespace {

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void look_up_vbmi(const uint8_t* x, uint8_t* y, size_t n,
                                                                       const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i idx = _mm512_loadu_si512(x + i);
    // Bits 0-6 pick one of 128 entries of each half; bit 7 picks the half.
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1), hi = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}

void look_up_plain(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  for (size_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace

void look_up_run(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
  (vbmi ? look_up_vbmi : look_up_plain)(x, y, n, table);
}

void look_up_bytes(KernelRun& r, const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  constexpr size_t kChunk = size_t{1} << 16;
  if (n <= kChunk) {
    look_up_run(x, y, n, table);
    return;
  }
  const auto chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
  parallel_blocks(r, chunks, 2.0 * kChunk, true, [&](int64_t c) {
    const size_t at = static_cast<size_t>(c) * kChunk;
    look_up_run(x + at, y + at, std::min(kChunk, n - at), table);
  });
}

std::vector<float> dequantized_codes(const QuantParams& in) {
  std::vector<float> v(256);
  for (int b = 0; b < 256; ++b) {
    const int32_t q = in.dtype == core::DType::I8 ? static_cast<int8_t>(b) : b;
    v[b] = static_cast<float>(q - in.zero_point[0]) * in.scale[0];
  }
  return v;
}

std::vector<uint8_t> quantize_codes(const std::vector<float>& values, const QuantParams& out) {
  std::vector<uint8_t> t(values.size());
  const int32_t lo = quant_min(out.dtype), hi = quant_max(out.dtype);
  for (size_t i = 0; i < values.size(); ++i)
    t[i] = static_cast<uint8_t>(quantize_value(values[i], out.scale[0], out.zero_point[0], lo, hi));
  return t;
}

bool dnnl_int8_exact(const core::Tensor& s8_weights, bool signed_src) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const bool vnni = (isa & static_cast<unsigned>(dnnl_cpu_isa_avx512_core_vnni & ~dnnl_cpu_isa_avx512_core)) ||
                    (isa & static_cast<unsigned>(dnnl_cpu_isa_avx2_vnni & ~dnnl_cpu_isa_avx2));
  if (vnni) return true;
  if (signed_src) return false;
  const int8_t* w = s8_weights.data<int8_t>();
  for (size_t i = 0; i < s8_weights.numel(); ++i)
    if (w[i] > 64 || w[i] < -64) return false;
  return true;
}

}  // namespace hetero::cpu
