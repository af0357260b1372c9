#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "core/error.h"

namespace hetero::core {

namespace {
// One tensor may not claim more than this many bytes: a model or a client that
// asks for more is refused instead of being allowed to exhaust the box.
constexpr size_t kMaxTensorBytes = size_t{1} << 38;  // 256 GiB, above any edge box
}  // namespace

size_t shape_numel(const Shape& shape) {
  size_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(HETERO_INVALID_ARGUMENT, "shape " + shape_to_string(shape) + " has a negative dimension");
    if (d != 0 && n > kMaxTensorBytes / static_cast<size_t>(d))
      fail(HETERO_INVALID_ARGUMENT, "shape " + shape_to_string(shape) + " is too large");
    n *= static_cast<size_t>(d);
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s;
}

Tensor Tensor::allocate(DType dtype, Shape shape, bool zero) {
  const size_t elem = dtype_size(dtype);
  if (elem == 0) fail(HETERO_NOT_SUPPORTED, std::string("tensors of type ") + dtype_name(dtype) + " are not supported");
  const size_t n = shape_numel(shape);
  if (n > kMaxTensorBytes / elem)
    fail(HETERO_INVALID_ARGUMENT, "tensor of shape " + shape_to_string(shape) + " is too large");
  const size_t bytes = n * elem;
  // Aligned to 128 bytes, the base alignment OpenCL devices ask of their
  // buffers (PoCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN), so that a tensor can be
  // lent to a device whose memory is the host's instead of copied
  // (drivers/gpu/README.md, "Zero-copy hand-offs"); rounded up so that
  // vectorised kernels may read a full last cache line.
  constexpr size_t kAlign = 128;
  const size_t alloc = (bytes + kAlign - 1) / kAlign * kAlign + kAlign;
  void* p = std::aligned_alloc(kAlign, alloc);
  if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes for a tensor");
  if (zero) std::memset(p, 0, alloc);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.data_ = p;
  t.owner_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<const void> owner) {
  if (dtype_size(dtype) == 0)
    fail(HETERO_NOT_SUPPORTED, std::string("tensors of type ") + dtype_name(dtype) + " are not supported");
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_)
    fail(HETERO_INVALID_ARGUMENT,
         "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (empty()) return {};
  Tensor t = allocate(dtype_, shape_, false);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

double Tensor::as_double(size_t i) const {
  switch (dtype_) {
    case DType::F32: return data<float>()[i];
    case DType::F64: return data<double>()[i];
    case DType::F16: return half_to_float(data<uint16_t>()[i]);
    case DType::BF16: return bf16_to_float(data<uint16_t>()[i]);
    case DType::I8: return data<int8_t>()[i];
    case DType::U8: return data<uint8_t>()[i];
    case DType::I16: return data<int16_t>()[i];
    case DType::U16: return data<uint16_t>()[i];
    case DType::I32: return data<int32_t>()[i];
    case DType::U32: return data<uint32_t>()[i];
    case DType::I64: return static_cast<double>(data<int64_t>()[i]);
    case DType::U64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
    default: fail(HETERO_NOT_SUPPORTED, std::string("cannot read elements of type ") + dtype_name(dtype_));
  }
}

int64_t Tensor::as_int64(size_t i) const {
  switch (dtype_) {
    case DType::I64: return data<int64_t>()[i];
    case DType::U64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::I32: return data<int32_t>()[i];
    case DType::U32: return data<uint32_t>()[i];
    case DType::I16: return data<int16_t>()[i];
    case DType::U16: return data<uint16_t>()[i];
    case DType::I8: return data<int8_t>()[i];
    case DType::U8: return data<uint8_t>()[i];
    case DType::Bool: return data<uint8_t>()[i] ? 1 : 0;
    default: return static_cast<int64_t>(as_double(i));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(numel_);
  for (size_t i = 0; i < numel_; ++i) v[i] = as_int64(i);
  return v;
}

}  // namespace hetero::core
