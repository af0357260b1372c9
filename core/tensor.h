// A dense tensor: dtype, shape and a view into memory kept alive by a shared
// owner. The owner may be a heap block, a mapped model file (initializers are
// not copied), or memory a C ABI caller lent us.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hetero::core {

using Shape = std::vector<int64_t>;

// Number of elements of a shape; fails with INVALID_ARGUMENT on a negative dim
// or an overflow of the byte count (so callers never allocate absurd sizes).
size_t shape_numel(const Shape& shape);
// "1x3x224x224"; "scalar" for rank 0.
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // A new 128-byte aligned tensor, zero-filled unless `zero` is false. Fails
  // with OUT_OF_MEMORY or INVALID_ARGUMENT rather than aborting.
  static Tensor allocate(DType dtype, Shape shape, bool zero = true);
  // A view of memory owned by `owner` (which may be null for memory the caller
  // guarantees outlives every copy of the tensor).
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<const void> owner);
  // A scalar or 1-D tensor holding the given values.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape);

  bool empty() const noexcept { return dtype_ == DType::Undefined; }
  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  size_t rank() const noexcept { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t numel() const noexcept { return numel_; }
  size_t nbytes() const noexcept { return numel_ * dtype_size(dtype_); }

  void* raw() noexcept { return data_; }
  const void* raw() const noexcept { return data_; }
  template <typename T> T* data() noexcept { return static_cast<T*>(data_); }
  template <typename T> const T* data() const noexcept { return static_cast<const T*>(data_); }
  template <typename T> std::span<const T> values() const noexcept { return {data<T>(), numel_}; }

  // Same memory, another shape of the same element count.
  Tensor reshaped(Shape shape) const;
  // A deep copy in fresh memory.
  Tensor clone() const;
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

  // Element i converted to double / int64 whatever the dtype (slow; for
  // attributes, shape tensors and tests, not for kernels).
  double as_double(size_t i) const;
  int64_t as_int64(size_t i) const;
  std::vector<int64_t> to_int64_vector() const;

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  size_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<const void> owner_;
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape) {
  Tensor t = allocate(DTypeOf<T>::value, std::move(shape));
  for (size_t i = 0; i < t.numel() && i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

}  // namespace hetero::core
