// Ops that draw random numbers: RandomUniform, RandomNormal, their *Like
// forms, Bernoulli, and Dropout (whose inference form is the identity).
//
// The generator is MT19937 drawing doubles in [0, 1) from two 32-bit outputs
// (53 bits) and normals by the polar method, the way NumPy's legacy
// RandomState does: a node with seed s gives the numbers
// numpy.random.seed(s) followed by random_sample() / standard_normal()
// gives. ONNX leaves the generator to each runtime; this one is documented
// and reproducible, and it is what ONNX's reference Dropout uses, so its test
// data can be checked exactly. (Bernoulli's test data draws from NumPy's
// global state without the node's seed, so no runtime reproduces it.)
//
// With a seed, every run starts the sequence again from it: a model's output
// is a function of its inputs, whichever request runs it and on however
// many threads. Without one, each run draws a fresh seed.
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "drivers/cpu/float_io.h"
#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

class RandomStream {
 public:
  explicit RandomStream(uint32_t seed) : mt_(seed) {}

  // Uniform in [0, 1), 53 random bits.
  double uniform() {
    const uint32_t a = mt_() >> 5, b = mt_() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  // Standard normal: the polar method, which yields two values per accepted
  // pair; the second is kept for the next call.
  double normal() {
    if (spare_) {
      const double g = *spare_;
      spare_.reset();
      return g;
    }
    double x1, x2, r2;
    do {
      x1 = 2 * uniform() - 1;
      x2 = 2 * uniform() - 1;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1 || r2 == 0);
    const double f = std::sqrt(-2 * std::log(r2) / r2);
    spare_ = f * x1;
    return f * x2;
  }

 private:
  std::mt19937 mt_;
  std::optional<double> spare_;
};

// The seed attribute (float in the random ops, int in Dropout), or none.
class Seed {
 public:
  explicit Seed(const KernelBuild& b) {
    const core::Attribute* a = b.node.attr("seed");
    if (!a) return;
    const double v = a->type == core::AttrType::Int ? static_cast<double>(a->i) : b.node.attr_float("seed", 0);
    if (!std::isfinite(v)) b.invalid("seed must be a finite number");
    // NumPy takes seeds in [0, 2^32); other values wrap into that range.
    value_ = static_cast<uint32_t>(static_cast<int64_t>(std::fmod(std::trunc(v), 4294967296.0)));
  }
  RandomStream stream() const { return RandomStream(value_ ? *value_ : std::random_device{}()); }

 private:
  std::optional<uint32_t> value_;
};

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F64 || is_half_type(t); }

// The dtype attribute: `fallback` when absent (Undefined: required).
DType dtype_attr(const KernelBuild& b, DType fallback, bool (*allowed)(DType), const char* allowed_names) {
  if (!b.node.has_attr("dtype")) return fallback;
  const int64_t code = b.node.attr_int("dtype", 0);
  // DType's values are ONNX's element type numbers.
  const DType t = code > 0 && code < 64 ? static_cast<DType>(code) : DType::Undefined;
  if (!allowed(t)) b.invalid("dtype " + std::to_string(code) + " is not " + allowed_names);
  return t;
}

// Fills `out` (a float type) with f(stream) per element.
template <typename Draw>
void fill_random(Tensor& out, RandomStream& stream, Draw&& draw) {
  if (out.dtype() == DType::F64) {
    for (size_t i = 0; i < out.numel(); ++i) out.data<double>()[i] = draw(stream);
  } else {
    Tensor wide = out.dtype() == DType::F32 ? out : Tensor::allocate(DType::F32, out.shape(), false);
    for (size_t i = 0; i < wide.numel(); ++i) wide.data<float>()[i] = static_cast<float>(draw(stream));
    if (out.dtype() != DType::F32) narrow_from_float32(wide, out);
  }
}

// RandomUniform(Like) and RandomNormal(Like).
std::unique_ptr<Kernel> make_random(const KernelBuild& b, bool normal, bool like) {
  const Seed seed(b);
  const double a = b.node.attr_float(normal ? "mean" : "low", 0.0f);
  const double c = b.node.attr_float(normal ? "scale" : "high", 1.0f);
  std::optional<Shape> shape;
  if (!like) {
    if (!b.node.has_attr("shape")) b.invalid("the shape attribute is required");
    shape = b.node.attr_ints("shape");
    for (int64_t d : *shape)
      if (d < 0) b.invalid("shape " + core::shape_to_string(*shape) + " has a negative dim");
  }
  // The *Like forms default to the input's dtype, which must then be a float.
  const DType dtype = dtype_attr(b, like ? b.input_dtype(0) : DType::F32, is_float_type, "a float type");
  if (like && dtype != DType::Undefined && !is_float_type(dtype))
    b.invalid(std::string("the input is ") + core::dtype_name(dtype) + ": the dtype attribute must name a float type");
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor* x = like ? &required_input(r, 0) : nullptr;
    const DType t = dtype != DType::Undefined ? dtype : x->dtype();
    if (!is_float_type(t))
      bad_input(r.node(), std::string("the input is ") + core::dtype_name(t) + ": give dtype a float type");
    Tensor& y = r.output(0, t, x ? x->shape() : *shape);
    RandomStream stream = seed.stream();
    if (normal) fill_random(y, stream, [&](RandomStream& s) { return a + c * s.normal(); });
    else fill_random(y, stream, [&](RandomStream& s) { return a + (c - a) * s.uniform(); });
  });
}

bool bernoulli_output_ok(DType t) {
  return is_float_type(t) || t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64 ||
         t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 || t == DType::Bool;
}

}  // namespace

// 1 with probability p (the input), else 0. As ONNX's function body for it
// has it: uniform u in [0, 1), then u < p.
std::unique_ptr<Kernel> make_bernoulli(const KernelBuild& b) {
  const Seed seed(b);
  require_float_input(b, 0);
  const DType dtype = dtype_attr(b, DType::Undefined, bernoulli_output_ok, "a numeric or bool type");
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& p_in = required_input(r, 0);
    check_float_input(r, p_in);
    const Tensor p = widen_half(p_in);
    const DType t = dtype != DType::Undefined ? dtype : p_in.dtype();
    Tensor& y = r.output(0, t, p.shape());
    RandomStream stream = seed.stream();
    dispatch(FloatTypes{}, p.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pv = p.data<T>();
      for (size_t i = 0; i < y.numel(); ++i)
        store_double(t, y.raw(), i, stream.uniform() < static_cast<double>(pv[i]) ? 1.0 : 0.0);
    });
  });
}

// Inference: the identity (and an all-true mask). Training mode (opset 12
// on, an input) with a non-zero ratio keeps each element with probability
// 1 - ratio, where the draw u >= ratio, and scales the kept by 1 / (1 - ratio).
std::unique_ptr<Kernel> make_dropout(const KernelBuild& b) {
  // Opset 12 moved ratio and training_mode from attributes to inputs.
  const bool inputs_form = b.opset >= 12;
  // The mask is bool from opset 10, the input's type before.
  const bool bool_mask = b.opset >= 10;
  const Seed seed(b);
  return make_fn_kernel([=](KernelRun& r) {
    const Tensor& x = required_input(r, 0);
    const bool want_mask = r.num_outputs() > 1 && r.output_wanted(1);
    double ratio = 0;
    if (inputs_form) {
      const Tensor* training = r.input(2);
      if (training && training->numel() > 0 && training->as_int64(0) != 0) {
        const Tensor* ratio_t = r.input(1);
        ratio = ratio_t && ratio_t->numel() > 0 ? ratio_t->as_double(0) : 0.5;
        if (!(ratio >= 0 && ratio < 1))
          bad_input(r.node(), "ratio must be in [0, 1), got " + std::to_string(ratio));
      }
    }
    if (ratio == 0) {
      r.set_output(0, x);
      if (want_mask) {
        Tensor& mask = r.output(1, bool_mask ? DType::Bool : x.dtype(), x.shape());
        for (size_t i = 0; i < mask.numel(); ++i) store_double(mask.dtype(), mask.raw(), i, 1.0);
      }
      return;
    }
    check_float_input(r, x);
    std::vector<uint8_t> keep(x.numel());
    RandomStream stream = seed.stream();
    for (uint8_t& k : keep) k = stream.uniform() >= ratio;
    const Tensor xw = widen_half(x);
    FloatOutput y(r, 0, x.dtype(), x.shape());
    dispatch(FloatTypes{}, xw.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // The scale in the element type, as ONNX's reference computes it.
      const T scale = T(1) / (T(1) - static_cast<T>(ratio));
      const T* in = xw.data<T>();
      T* out = y.tensor().data<T>();
      for (size_t i = 0; i < keep.size(); ++i) out[i] = keep[i] ? in[i] * scale : T(0);
    });
    y.finish();
    if (want_mask) std::memcpy(r.output(1, DType::Bool, x.shape()).raw(), keep.data(), keep.size());
  });
}

std::unique_ptr<Kernel> make_random_uniform(const KernelBuild& b) { return make_random(b, false, false); }
std::unique_ptr<Kernel> make_random_normal(const KernelBuild& b) { return make_random(b, true, false); }
std::unique_ptr<Kernel> make_random_uniform_like(const KernelBuild& b) { return make_random(b, false, true); }
std::unique_ptr<Kernel> make_random_normal_like(const KernelBuild& b) { return make_random(b, true, true); }

}  // namespace hetero::cpu
