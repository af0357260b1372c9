// hetero_* entry points: tensors (owning, wrapping caller memory, files).
#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/tensor_file.h"
#include "core/dtype.h"

using namespace hetero::capi;
using hetero::fail;
namespace core = hetero::core;

namespace {

// A C caller's dtype, checked to be one a tensor can hold.
core::DType tensor_dtype(hetero_dtype dtype, const char* fn) {
  if (!core::dtype_is_known(dtype) || dtype == HETERO_DTYPE_UNDEFINED)
    fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(static_cast<int>(dtype)) +
                                      " is not a hetero_dtype");
  const auto d = static_cast<core::DType>(dtype);
  if (core::dtype_size(d) == 0)
    fail(HETERO_NOT_SUPPORTED, std::string(fn) + ": tensors of type " + core::dtype_name(d) + " are not supported");
  return d;
}

const core::Tensor& tensor_of(const hetero_tensor_t* tensor, const char* fn) {
  require(tensor, fn, "tensor");
  return tensor->tensor;
}

}  // namespace

extern "C" {

hetero_status hetero_tensor_create(hetero_tensor_t** out, hetero_dtype dtype, const int64_t* dims, size_t rank) {
  return guard([&] {
    constexpr const char* fn = "hetero_tensor_create";
    require(out, fn, "out");
    const core::DType d = tensor_dtype(dtype, fn);
    auto t = std::make_unique<hetero_tensor>();
    t->tensor = core::Tensor::allocate(d, shape_from_array(fn, dims, rank));
    *out = t.release();
  });
}

hetero_status hetero_tensor_wrap(hetero_tensor_t** out, hetero_dtype dtype, const int64_t* dims, size_t rank,
                                 void* data, size_t size) {
  return guard([&] {
    constexpr const char* fn = "hetero_tensor_wrap";
    require(out, fn, "out");
    const core::DType d = tensor_dtype(dtype, fn);
    core::Shape shape = shape_from_array(fn, dims, rank);
    const size_t needed = core::shape_numel(shape) * core::dtype_size(d);
    if (needed) require(data, fn, "data");
    if (size < needed)
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": shape " + core::shape_to_string(shape) + " of " +
                                        core::dtype_name(d) + " needs " + std::to_string(needed) + " bytes, " +
                                        std::to_string(size) + " given");
    if (reinterpret_cast<uintptr_t>(data) % core::dtype_size(d) != 0)
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": data is not aligned to the " +
                                        std::to_string(core::dtype_size(d)) + "-byte elements of " +
                                        core::dtype_name(d));
    auto t = std::make_unique<hetero_tensor>();
    // No owner: the caller keeps the memory alive, as the header documents.
    t->tensor = core::Tensor::wrap(d, std::move(shape), data, nullptr);
    *out = t.release();
  });
}

hetero_status hetero_tensor_read_file(hetero_tensor_t** out, const char* path) {
  return guard([&] {
    require(out, "hetero_tensor_read_file", "out");
    require(path, "hetero_tensor_read_file", "path");
    auto t = std::make_unique<hetero_tensor>();
    t->tensor = read_tensor_file(path);
    *out = t.release();
  });
}

hetero_status hetero_tensor_write_npy(const hetero_tensor_t* tensor, const char* path) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_write_npy");
    require(path, "hetero_tensor_write_npy", "path");
    write_npy_file(t, path);
  });
}

hetero_status hetero_tensor_get_data(hetero_tensor_t* tensor, void** out_data) {
  return guard([&] {
    require(tensor, "hetero_tensor_get_data", "tensor");
    require(out_data, "hetero_tensor_get_data", "out_data");
    *out_data = tensor->tensor.numel() ? tensor->tensor.raw() : nullptr;
  });
}

hetero_status hetero_tensor_get_dtype(const hetero_tensor_t* tensor, hetero_dtype* out_dtype) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_get_dtype");
    require(out_dtype, "hetero_tensor_get_dtype", "out_dtype");
    *out_dtype = static_cast<hetero_dtype>(t.dtype());
  });
}

hetero_status hetero_tensor_get_rank(const hetero_tensor_t* tensor, size_t* out_rank) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_get_rank");
    require(out_rank, "hetero_tensor_get_rank", "out_rank");
    *out_rank = t.rank();
  });
}

hetero_status hetero_tensor_get_shape(const hetero_tensor_t* tensor, const int64_t** out_dims, size_t* out_rank) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_get_shape");
    require(out_dims, "hetero_tensor_get_shape", "out_dims");
    *out_dims = t.rank() ? t.shape().data() : nullptr;
    if (out_rank) *out_rank = t.rank();
  });
}

hetero_status hetero_tensor_get_element_count(const hetero_tensor_t* tensor, size_t* out_count) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_get_element_count");
    require(out_count, "hetero_tensor_get_element_count", "out_count");
    *out_count = t.numel();
  });
}

hetero_status hetero_tensor_get_byte_size(const hetero_tensor_t* tensor, size_t* out_size) {
  return guard([&] {
    const core::Tensor& t = tensor_of(tensor, "hetero_tensor_get_byte_size");
    require(out_size, "hetero_tensor_get_byte_size", "out_size");
    *out_size = t.nbytes();
  });
}

hetero_status hetero_tensor_release(hetero_tensor_t* tensor) {
  return guard([&] { delete tensor; });
}

}  // extern "C"
