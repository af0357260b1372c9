#include "protocol/tensor_codec.h"

#include <cstring>

#include "core/error.h"

namespace hetero::wire {

bool tensor_byte_size(int32_t dtype, std::span<const int64_t> dims, size_t& out) {
  if (!core::dtype_is_known(dtype)) return false;
  const size_t element = core::dtype_size(static_cast<core::DType>(dtype));
  if (element == 0) return false;
  size_t bytes = element;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d != 0 && bytes > SIZE_MAX / static_cast<uint64_t>(d)) return false;
    bytes *= static_cast<size_t>(d);
  }
  out = bytes;
  return true;
}

TensorView decode_tensor(const Tensor& tensor, std::span<const UniqueFd> fds, TensorMappings& mappings,
                         const std::string& what) {
  auto bad = [&](const std::string& why) { fail(HETERO_PROTOCOL_ERROR, what + ": " + why); };
  if (tensor.dims_size() > static_cast<int>(kMaxRank))
    bad("rank " + std::to_string(tensor.dims_size()) + " exceeds " + std::to_string(kMaxRank));
  for (int k = 0; k < tensor.dims_size(); ++k)
    if (tensor.dims(k) < 0) bad("dims[" + std::to_string(k) + "] is negative");
  if (!core::dtype_is_known(tensor.dtype()) || core::dtype_size(static_cast<core::DType>(tensor.dtype())) == 0)
    bad("dtype " + std::to_string(tensor.dtype()) + " is not a numeric tensor type");
  size_t bytes = 0;
  if (!tensor_byte_size(tensor.dtype(), {tensor.dims().data(), static_cast<size_t>(tensor.dims_size())}, bytes)) bad("its dims overflow the address space");

  TensorView view;
  view.name = tensor.name();
  view.dtype = static_cast<core::DType>(tensor.dtype());
  view.dims.assign(tensor.dims().begin(), tensor.dims().end());
  view.bytes = bytes;
  switch (tensor.data_case()) {
    case Tensor::kInlineData:
      if (tensor.inline_data().size() != bytes)
        bad("inline_data holds " + std::to_string(tensor.inline_data().size()) + " bytes, its dtype and dims need " +
            std::to_string(bytes));
      view.data = reinterpret_cast<const uint8_t*>(tensor.inline_data().data());
      break;
    case Tensor::kMemfd: {
      const MemfdRef& ref = tensor.memfd();
      if (ref.fd_index() >= fds.size())
        bad("memfd.fd_index " + std::to_string(ref.fd_index()) + " but the frame carries " +
            std::to_string(fds.size()) + " descriptors");
      if (ref.size() != bytes)
        bad("memfd.size is " + std::to_string(ref.size()) + " bytes, its dtype and dims need " + std::to_string(bytes));
      mappings.maps.push_back(std::make_unique<MappedMemfd>(fds[ref.fd_index()].get(), ref.offset(), ref.size(),
                                                            what.c_str()));
      view.data = mappings.maps.back()->data();
      break;
    }
    default:
      if (bytes != 0) bad("has no data");
  }
  return view;
}

UniqueFd encode_tensors(std::span<const OutgoingTensor> tensors, uint64_t memfd_threshold,
                        google::protobuf::RepeatedPtrField<Tensor>& into, const char* memfd_name) {
  std::vector<size_t> offsets;
  offsets.reserve(tensors.size());
  size_t total = 0;
  for (const OutgoingTensor& t : tensors) {
    offsets.push_back((total + 63) / 64 * 64);
    total = offsets.back() + t.bytes;
    Tensor* wt = into.Add();
    wt->set_name(std::string(t.name));
    wt->set_dtype(t.dtype);
    for (int64_t d : t.dims) wt->add_dims(d);
  }
  if (memfd_threshold == 0 || total < memfd_threshold) {
    for (size_t k = 0; k < tensors.size(); ++k)
      into[static_cast<int>(k)].set_inline_data(tensors[k].data, tensors[k].bytes);
    return {};
  }
  struct Fill {
    std::span<const OutgoingTensor> tensors;
    const std::vector<size_t>& offsets;
  } fill{tensors, offsets};
  UniqueFd fd = make_sealed_memfd(
      memfd_name, total,
      [](void* dst, void* context) {
        const auto* f = static_cast<const Fill*>(context);
        for (size_t k = 0; k < f->tensors.size(); ++k)
          if (f->tensors[k].bytes)
            std::memcpy(static_cast<uint8_t*>(dst) + f->offsets[k], f->tensors[k].data, f->tensors[k].bytes);
      },
      &fill);
  for (size_t k = 0; k < tensors.size(); ++k) {
    MemfdRef* ref = into[static_cast<int>(k)].mutable_memfd();
    ref->set_fd_index(0);
    ref->set_offset(offsets[k]);
    ref->set_size(tensors[k].bytes);
  }
  return fd;
}

}  // namespace hetero::wire
