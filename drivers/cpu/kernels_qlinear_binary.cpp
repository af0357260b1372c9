// 8-bit elementwise sums and products and concatenation, as ONNX Runtime's
// com.microsoft QLinearAdd, QLinearMul and QLinearConcat define them, and
// their hetero.cpu forms (quantisation in attributes, from the int8 pass):
//
//   QLinearAdd:    C = saturate(round((sa (A - za) + sb (B - zb)) / sc) + zc)
//   QLinearMul:    C = saturate(round(sa sb (A - za)(B - zb) / sc) + zc)
//   QLinearConcat: each input requantised to Y's parameters, then joined.
//
// Both are computed the way ONNX Runtime computes them (zero points folded
// into float32 ratios and an offset, rounding after the output's zero point
// is added), so that results agree with it bit for bit: an output on a
// rounding tie would otherwise go the other way, and the layers after it
// can turn one step into many (a hardswish's x + 3 at x = 0 is such a
// tie). Inputs broadcast like numpy; a run over which one input is
// constant is computed as ONNX Runtime's scalar case is.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/broadcast.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/dtype_dispatch.h"
#include "drivers/cpu/quant_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

constexpr size_t kNone = QuantInputs::kNone;

// The parameters of one 8-bit operand given as node inputs or attributes.
class Operand {
 public:
  Operand() = default;
  // ORT's form: scale and zero point inputs.
  Operand(const KernelBuild& b, const std::string& what, size_t data, size_t scale, size_t zero_point) {
    spec_ = {what, b.input_dtype(data) != DType::Undefined ? b.input_dtype(data) : zero_point_type(b, zero_point)};
    inputs_ = QuantInputs(b, scale, zero_point, spec_);
    check_type(b.node);
  }
  // hetero.cpu form: attributes `prefix`_*.
  Operand(const KernelBuild& b, const std::string& prefix) {
    attrs_ = quant_params_from_attrs(b.node, prefix);
    if (!attrs_->per_tensor())
      fail(HETERO_INVALID_MODEL, b.node.describe() + ": " + prefix + " must be quantised per tensor");
    spec_ = {prefix, attrs_->dtype};
    check_type(b.node);
  }
  DType dtype() const { return spec_.dtype; }
  const QuantParams& get(const KernelRun& r, QuantParams& storage) const {
    return attrs_ ? *attrs_ : inputs_.get(r, spec_, storage);
  }

 private:
  void check_type(const core::Node& node) const {
    if (spec_.dtype != DType::U8 && spec_.dtype != DType::I8)
      fail(HETERO_INVALID_MODEL, node.describe() + ": " + spec_.what + " must be uint8 or int8, got " +
                                     core::dtype_name(spec_.dtype));
  }
  QuantSpec spec_;
  QuantInputs inputs_;
  std::optional<QuantParams> attrs_;
};

// Sixteen at a time in AVX-512 where the processor has it: the arithmetic
// of the SSE2 loops in BinaryKernel::segment, operation for operation (no
// fused multiply-add, whose single rounding would differ), so that results
// are the same on every processor. Each returns how many it did.
#define HETERO_AVX512_EXACT __attribute__((target("avx512f,avx512bw"), optimize("fp-contract=off")))
// GCC 12 warns of the undefined vectors inside its own AVX-512 intrinsics
// (-Wmaybe-uninitialized optimised, -Wuninitialized at -Og).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

template <typename T>
HETERO_AVX512_EXACT __m512i widen16(const T* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<T, uint8_t>) return _mm512_cvtepu8_epi32(x);
  else return _mm512_cvtepi8_epi32(x);
}

// Rounded to nearest even and saturated, as the SSE2 packs do.
template <typename T>
HETERO_AVX512_EXACT void store16(T* y, __m512 v) {
  const __m512i i = _mm512_cvtps_epi32(v);
  __m128i codes;
  if constexpr (std::is_same_v<T, uint8_t>) codes = _mm512_cvtusepi32_epi8(_mm512_max_epi32(i, _mm512_setzero_si512()));
  else codes = _mm512_cvtsepi32_epi8(i);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), codes);
}

template <typename T>
HETERO_AVX512_EXACT size_t mul16(const T* a, const T* b, size_t step_b, int32_t za, int32_t zb, float ratio, float zc,
                                 T* y, size_t len) {
  const __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb);
  const __m512 vratio = _mm512_set1_ps(ratio), vzc = _mm512_set1_ps(zc);
  const __m512i b_scalar = _mm512_set1_epi32(int32_t{b[0]} - zb);
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    const __m512i da = _mm512_sub_epi32(widen16(a + i), vza);
    const __m512i db = step_b == 0 ? b_scalar : _mm512_sub_epi32(widen16(b + i), vzb);
    const __m512 product = _mm512_cvtepi32_ps(_mm512_mullo_epi32(da, db));
    store16(y + i, _mm512_add_ps(_mm512_mul_ps(product, vratio), vzc));
  }
  return i;
}

template <typename T>
HETERO_AVX512_EXACT size_t add16(const T* a, const T* b, size_t step_b, float fixed, float ra, float rb, T* y,
                                 size_t len) {
  const __m512 vfixed = _mm512_set1_ps(fixed), vra = _mm512_set1_ps(ra), vrb = _mm512_set1_ps(rb);
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    __m512 sum = _mm512_add_ps(vfixed, _mm512_mul_ps(_mm512_cvtepi32_ps(widen16(a + i)), vra));
    if (step_b != 0) sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_cvtepi32_ps(widen16(b + i)), vrb));
    store16(y + i, sum);
  }
  return i;
}

#pragma GCC diagnostic pop
#undef HETERO_AVX512_EXACT

const bool kHasAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const KernelBuild& b, bool mul, bool attrs) : node_(b.node), mul_(mul) {
    if (attrs) {
      a_ = Operand(b, "a");
      b_ = Operand(b, "b");
      y_ = Operand(b, "y");
    } else {
      in_b_ = 3;
      a_ = Operand(b, "A", 0, 1, 2);
      b_ = Operand(b, "B", 3, 4, 5);
      y_ = Operand(b, "C", 0, 6, 7);
    }
    if (a_.dtype() != b_.dtype() || a_.dtype() != y_.dtype())
      fail(HETERO_INVALID_MODEL, node_.describe() + ": A, B and C must have the same 8-bit type");
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const Tensor* a = r.input(0);
    const Tensor* b = r.input(in_b_);
    if (!a || !b) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input A or B is missing");
    if (a->dtype() != a_.dtype() || b->dtype() != a_.dtype())
      fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": A and B must be " + core::dtype_name(a_.dtype()));
    QuantParams sa, sb, sy;
    const QuantParams &pa = a_.get(r, sa), &pb = b_.get(r, sb), &py = y_.get(r, sy);
    const Broadcast bc = plan_broadcast({&a->shape(), &b->shape()}, node_);
    Tensor& y = r.output(0, a_.dtype(), bc.out_shape);
    with_8bit_type(a->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* da = a->data<T>();
      const T* db = b->data<T>();
      T* dy = y.data<T>();
      if (run_in_blocks(r, bc, a->numel(), da, db, pa, pb, py, dy)) return;
      for_each_segment<2>(r, bc, [&](size_t out, const std::array<size_t, 2>& in, size_t len) {
        const size_t step_a = bc.inner_stride[0], step_b = bc.inner_stride[1];
        // A constant run of A is ONNX Runtime's scalar case with the operands swapped.
        if (step_a == 0 && step_b != 0)
          segment(db + in[1], step_b, pb, da + in[0], 0, pa, py, dy + out, len);
        else
          segment(da + in[0], step_a, pa, db + in[1], step_b, pb, py, dy + out, len);
      });
    });
  }

 private:
  // The codes of a block of rows (run_in_blocks), at most.
  static constexpr size_t kBlock = 256;

  // The squeeze-excite multiply of a channels-last tensor: A whole, one row
  // of B (a value per channel) for every row of A (a pixel's channels), the
  // rows a dozen or a few dozen codes long. Segment by segment, each row
  // would pay segment()'s set-up and a scalar tail for its few codes. So B's
  // row is repeated into a block of whole rows, and each segment covers a
  // block of rows of A, the last block the rows left. The same arithmetic
  // code for code. False, having done nothing, for other broadcasts.
  template <typename T>
  bool run_in_blocks(KernelRun& r, const Broadcast& bc, size_t a_numel, const T* a, const T* b, const QuantParams& pa,
                     const QuantParams& pb, const QuantParams& py, T* y) const {
    const size_t row = bc.inner;
    const bool one_b_row = std::all_of(bc.strides[1].begin(), bc.strides[1].end(), [](size_t s) { return s == 0; });
    if (bc.numel == 0 || a_numel != bc.numel || bc.inner_stride[0] != 1 || bc.inner_stride[1] != 1 ||
        2 * row > kBlock || !one_b_row)
      return false;
    // Rows per block: as many as fit, a multiple of what makes a block a
    // whole number of 16-code vectors where that many fit.
    const size_t whole = 16 / std::gcd(row, size_t{16});
    size_t rows = kBlock / row;
    if (rows >= whole) rows -= rows % whole;
    const size_t block = rows * row;
    std::array<T, kBlock> repeated{};
    for (size_t k = 0; k < rows; ++k) std::memcpy(repeated.data() + k * row, b, row * sizeof(T));
    // A as whole blocks, each against the repeated row.
    const core::Shape whole_blocks{static_cast<int64_t>(bc.rows / rows), static_cast<int64_t>(block)};
    const core::Shape one_block{static_cast<int64_t>(block)};
    const Broadcast blocks = plan_broadcast({&whole_blocks, &one_block}, node_);
    for_each_segment<2>(r, blocks, [&](size_t out, const std::array<size_t, 2>& in, size_t len) {
      segment(a + in[0], 1, pa, repeated.data(), 1, pb, py, y + out, len);
    });
    if (const size_t left = bc.numel - blocks.numel)
      segment(a + blocks.numel, 1, pa, repeated.data(), 1, pb, py, y + blocks.numel, left);
    return true;
  }

  // y[i] for a[i * step_a], b[i * step_b], steps 1 or 0 (one value for the
  // run): sixteen at a time in AVX-512 (mul16, add16), eight at a time in
  // SSE2 as ONNX Runtime does, then the same arithmetic one at a time.
  template <typename T>
  void segment(const T* a, size_t step_a, const QuantParams& pa, const T* b, size_t step_b, const QuantParams& pb,
               const QuantParams& py, T* y, size_t len) const {
    const float zc = static_cast<float>(py.zero_point[0]);
    size_t i = 0;
    if (mul_) {
      const float ratio = pa.scale[0] * pb.scale[0] / py.scale[0];
      const int32_t za = pa.zero_point[0], zb = pb.zero_point[0];
      const __m128i vza = _mm_set1_epi16(static_cast<int16_t>(za)), vzb = _mm_set1_epi16(static_cast<int16_t>(zb));
      const __m128 vratio = _mm_set1_ps(ratio), vzc = _mm_set1_ps(zc);
      const __m128i b_scalar = _mm_sub_epi16(_mm_set1_epi16(static_cast<int16_t>(b[0])), vzb);
      if (step_a == 1 && kHasAvx512) i = mul16(a, b, step_b, za, zb, ratio, zc, y, len);
      for (; step_a == 1 && i + 8 <= len; i += 8) {
        const __m128i da = _mm_sub_epi16(widen8(a + i), vza);
        const __m128i db = step_b == 0 ? b_scalar : _mm_sub_epi16(widen8(b + i), vzb);
        const __m128i lo = _mm_mullo_epi16(da, db), hi = _mm_mulhi_epi16(da, db);
        const __m128 p0 = _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, hi)), p1 = _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, hi));
        store8(y + i, _mm_add_ps(_mm_mul_ps(p0, vratio), vzc), _mm_add_ps(_mm_mul_ps(p1, vratio), vzc));
      }
      for (; i < len; ++i) {
        const int32_t product = (int32_t{a[i * step_a]} - za) * (int32_t{b[i * step_b]} - zb);
        store1(y + i, static_cast<float>(product) * ratio + zc);
      }
      return;
    }
    const float ra = pa.scale[0] / py.scale[0], rb = pb.scale[0] / py.scale[0];
    float fixed = zc - (ra * static_cast<float>(pa.zero_point[0]) + rb * static_cast<float>(pb.zero_point[0]));
    if (step_b == 0) fixed = fixed + static_cast<float>(b[0]) * rb;
    const __m128 vfixed = _mm_set1_ps(fixed), vra = _mm_set1_ps(ra), vrb = _mm_set1_ps(rb);
    if (step_a == 1 && kHasAvx512) i = add16(a, b, step_b, fixed, ra, rb, y, len);
    for (; step_a == 1 && i + 8 <= len; i += 8) {
      __m128 a0, a1;
      floats8(widen8(a + i), a0, a1);
      a0 = _mm_add_ps(vfixed, _mm_mul_ps(a0, vra));
      a1 = _mm_add_ps(vfixed, _mm_mul_ps(a1, vra));
      if (step_b != 0) {
        __m128 b0, b1;
        floats8(widen8(b + i), b0, b1);
        a0 = _mm_add_ps(a0, _mm_mul_ps(b0, vrb));
        a1 = _mm_add_ps(a1, _mm_mul_ps(b1, vrb));
      }
      store8(y + i, a0, a1);
    }
    for (; i < len; ++i) {
      const float fa = fixed + static_cast<float>(a[i * step_a]) * ra;
      store1(y + i, step_b == 0 ? fa : fa + static_cast<float>(b[i * step_b]) * rb);
    }
  }

  // Eight codes as int16.
  static __m128i widen8(const uint8_t* p) {
    return _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128());
  }
  static __m128i widen8(const int8_t* p) {
    const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8);
  }
  static void floats8(__m128i v16, __m128& lo, __m128& hi) {
    lo = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(v16, v16), 16));
    hi = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(v16, v16), 16));
  }
  // Rounded (half to even) and saturated, like ONNX Runtime's packs.
  template <typename T>
  static void store8(T* y, __m128 lo, __m128 hi) {
    const __m128i w = _mm_packs_epi32(_mm_cvtps_epi32(lo), _mm_cvtps_epi32(hi));
    const __m128i bytes = std::is_same_v<T, uint8_t> ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y), bytes);
  }
  template <typename T>
  static void store1(T* y, float v) {
    round_to_codes(&v, y, 1);
  }

  const core::Node& node_;
  bool mul_;
  size_t in_b_ = 1;
  Operand a_, b_, y_;
};

// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
// input; the hetero.cpu form takes the inputs alone and attributes y_* and
// x<i>_* (i = 0, 1, ...).
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const KernelBuild& b, bool attrs) : node_(b.node), axis_(b.node.attr_int("axis", 1)) {
    if (!b.node.has_attr("axis")) b.unsupported("axis is required");
    if (attrs) {
      y_ = Operand(b, "y");
      for (size_t i = 0; i < b.node.inputs.size(); ++i) {
        xs_.emplace_back(b, concat_input_prefix(i));
        data_.push_back(i);
      }
    } else {
      if (b.node.inputs.size() < 5 || (b.node.inputs.size() - 2) % 3 != 0)
        b.unsupported("inputs must be Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples");
      y_ = Operand(b, "Y", 2 /* any 8-bit input */, 0, 1);
      for (size_t i = 2; i < b.node.inputs.size(); i += 3) {
        xs_.emplace_back(b, "input " + std::to_string((i - 2) / 3), i, i + 1, i + 2);
        data_.push_back(i);
      }
    }
    for (const Operand& x : xs_)
      if (x.dtype() != y_.dtype()) fail(HETERO_INVALID_MODEL, node_.describe() + ": inputs and Y must have one 8-bit type");
  }

  void run(KernelRun& r) override {
    use_threads(r.threads());
    std::vector<const Tensor*> in;
    for (size_t i : data_) {
      const Tensor* t = r.input(i);
      if (!t || t->dtype() != y_.dtype())
        fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input " + std::to_string(in.size()) + " must be a " +
                                          core::dtype_name(y_.dtype()) + " tensor");
      in.push_back(t);
    }
    const size_t rank = in[0]->rank();
    const size_t axis = normalize_axis(axis_, rank, node_);
    core::Shape out_shape = in[0]->shape();
    out_shape[axis] = 0;
    for (const Tensor* t : in) {
      bool same = t->rank() == rank;
      for (size_t d = 0; same && d < rank; ++d) same = d == axis || t->dim(d) == in[0]->dim(d);
      if (!same)
        fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input shapes " + core::shape_to_string(in[0]->shape()) +
                                          " and " + core::shape_to_string(t->shape()) + " differ outside axis " +
                                          std::to_string(axis));
      out_shape[axis] += t->dim(axis);
    }
    QuantParams sy;
    const QuantParams& py = y_.get(r, sy);
    Tensor& y = r.output(0, y_.dtype(), out_shape);
    const AxisSplit split = split_at_axis(out_shape, axis);
    // Per input: its slab of each output row, and the table that
    // requantises it (none when its parameters are the output's).
    struct Part {
      const uint8_t* src;
      size_t slab, offset;
      std::vector<uint8_t> table;
    };
    std::vector<Part> parts;
    size_t offset = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      QuantParams sx;
      const QuantParams& px = xs_[k].get(r, sx);
      Part p{static_cast<const uint8_t*>(in[k]->raw()), static_cast<size_t>(in[k]->dim(axis)) * split.inner, offset, {}};
      if (px.scale != py.scale || px.zero_point != py.zero_point) p.table = quantize_codes(dequantized_codes(px), py);
      offset += p.slab;
      parts.push_back(std::move(p));
    }
    auto* dst = static_cast<uint8_t*>(y.raw());
    const size_t row = split.n * split.inner;
    const int64_t outer = static_cast<int64_t>(split.outer);
    parallel_blocks(r, outer, 2.0 * double(row), y.numel() > kParallelThreshold, [&](int64_t o) {
      for (const Part& p : parts) {
        uint8_t* d = dst + static_cast<size_t>(o) * row + p.offset;
        const uint8_t* s = p.src + static_cast<size_t>(o) * p.slab;
        if (p.table.empty())
          std::memcpy(d, s, p.slab);
        else
          look_up_run(s, d, p.slab, p.table.data());
      }
    });
  }

 private:
  const core::Node& node_;
  int64_t axis_;
  Operand y_;
  std::vector<Operand> xs_;
  std::vector<size_t> data_;
};

}  // namespace

// The ONNX Runtime forms take their quantisation parameters as inputs, the
// int8 pass's (hetero.cpu domain) as attributes.
std::unique_ptr<Kernel> make_qlinear_add(const KernelBuild& b) { return std::make_unique<BinaryKernel>(b, false, false); }
std::unique_ptr<Kernel> make_qlinear_mul(const KernelBuild& b) { return std::make_unique<BinaryKernel>(b, true, false); }
std::unique_ptr<Kernel> make_int8_add(const KernelBuild& b) { return std::make_unique<BinaryKernel>(b, false, true); }
std::unique_ptr<Kernel> make_int8_mul(const KernelBuild& b) { return std::make_unique<BinaryKernel>(b, true, true); }
std::unique_ptr<Kernel> make_qlinear_concat(const KernelBuild& b) { return std::make_unique<ConcatKernel>(b, false); }
std::unique_ptr<Kernel> make_int8_concat(const KernelBuild& b) { return std::make_unique<ConcatKernel>(b, true); }

}  // namespace hetero::cpu
