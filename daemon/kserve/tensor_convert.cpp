#include "daemon/kserve/tensor_convert.h"

#include <cstring>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"
#include "protocol/tensor_codec.h"

namespace hetero::daemon::kserve {

namespace {

using inference::InferTensorContents;
using inference::ModelInferRequest;

struct Datatype {
  int32_t dtype;
  const char* name;                  // the v2 datatype
  inference::DataType config_type;   // Triton's ModelConfig data_type
};
// Every element type a heterod tensor can hold, with the names the
// specification and Triton's model configuration give it.
constexpr Datatype kDatatypes[] = {
    {HETERO_DTYPE_BOOL, "BOOL", inference::TYPE_BOOL},        {HETERO_DTYPE_UINT8, "UINT8", inference::TYPE_UINT8},
    {HETERO_DTYPE_UINT16, "UINT16", inference::TYPE_UINT16},  {HETERO_DTYPE_UINT32, "UINT32", inference::TYPE_UINT32},
    {HETERO_DTYPE_UINT64, "UINT64", inference::TYPE_UINT64},  {HETERO_DTYPE_INT8, "INT8", inference::TYPE_INT8},
    {HETERO_DTYPE_INT16, "INT16", inference::TYPE_INT16},     {HETERO_DTYPE_INT32, "INT32", inference::TYPE_INT32},
    {HETERO_DTYPE_INT64, "INT64", inference::TYPE_INT64},     {HETERO_DTYPE_FLOAT16, "FP16", inference::TYPE_FP16},
    {HETERO_DTYPE_FLOAT32, "FP32", inference::TYPE_FP32},     {HETERO_DTYPE_FLOAT64, "FP64", inference::TYPE_FP64},
    {HETERO_DTYPE_BFLOAT16, "BF16", inference::TYPE_BF16},
};

// Zero elements still need an address to wrap.
const uint64_t kEmpty = 0;

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  fail(HETERO_INVALID_ARGUMENT, what + ": " + why);
}

// The typed contents' fields, by name, with their element counts: exactly
// one may hold elements, the one of the input's datatype.
struct TypedField {
  const char* name;
  int count;
};

std::vector<TypedField> typed_fields(const InferTensorContents& c) {
  return {{"bool_contents", c.bool_contents_size()},   {"int_contents", c.int_contents_size()},
          {"int64_contents", c.int64_contents_size()}, {"uint_contents", c.uint_contents_size()},
          {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
          {"fp64_contents", c.fp64_contents_size()},   {"bytes_contents", c.bytes_contents_size()}};
}

// The field that carries `dtype` and, for the narrow types, the range its
// values must stay within.
const char* field_of(int32_t dtype) {
  switch (dtype) {
    case HETERO_DTYPE_BOOL: return "bool_contents";
    case HETERO_DTYPE_INT8:
    case HETERO_DTYPE_INT16:
    case HETERO_DTYPE_INT32: return "int_contents";
    case HETERO_DTYPE_INT64: return "int64_contents";
    case HETERO_DTYPE_UINT8:
    case HETERO_DTYPE_UINT16:
    case HETERO_DTYPE_UINT32: return "uint_contents";
    case HETERO_DTYPE_UINT64: return "uint64_contents";
    case HETERO_DTYPE_FLOAT32: return "fp32_contents";
    case HETERO_DTYPE_FLOAT64: return "fp64_contents";
    default: return nullptr;  // FP16 and BF16 travel raw only
  }
}

// Typed values narrower than their field, copied down after a range check.
template <typename Narrow, typename Wide>
const uint8_t* narrow(const google::protobuf::RepeatedField<Wide>& values, std::vector<std::vector<uint64_t>>& copies,
                      const std::string& what, const char* field) {
  std::vector<uint64_t>& copy = copies.emplace_back((values.size() * sizeof(Narrow) + 7) / 8);
  auto* out = reinterpret_cast<Narrow*>(copy.data());
  for (int k = 0; k < values.size(); ++k) {
    const Wide v = values.Get(k);
    if (!std::in_range<Narrow>(v))
      bad(what, std::string(field) + "[" + std::to_string(k) + "] = " + std::to_string(v) + " does not fit its datatype");
    out[k] = static_cast<Narrow>(v);
  }
  return reinterpret_cast<const uint8_t*>(copy.data());
}

template <typename T>
const uint8_t* bytes_of(const google::protobuf::RepeatedField<T>& values) {
  return reinterpret_cast<const uint8_t*>(values.data());
}

const uint8_t* typed_data(const ModelInferRequest::InferInputTensor& input, int32_t dtype,
                          std::vector<std::vector<uint64_t>>& copies, const std::string& what) {
  const InferTensorContents& c = input.contents();
  switch (dtype) {
    case HETERO_DTYPE_BOOL: return bytes_of(c.bool_contents());
    case HETERO_DTYPE_INT8: return narrow<int8_t>(c.int_contents(), copies, what, "int_contents");
    case HETERO_DTYPE_INT16: return narrow<int16_t>(c.int_contents(), copies, what, "int_contents");
    case HETERO_DTYPE_INT32: return bytes_of(c.int_contents());
    case HETERO_DTYPE_INT64: return bytes_of(c.int64_contents());
    case HETERO_DTYPE_UINT8: return narrow<uint8_t>(c.uint_contents(), copies, what, "uint_contents");
    case HETERO_DTYPE_UINT16: return narrow<uint16_t>(c.uint_contents(), copies, what, "uint_contents");
    case HETERO_DTYPE_UINT32: return bytes_of(c.uint_contents());
    case HETERO_DTYPE_UINT64: return bytes_of(c.uint64_contents());
    case HETERO_DTYPE_FLOAT32: return bytes_of(c.fp32_contents());
    case HETERO_DTYPE_FLOAT64: return bytes_of(c.fp64_contents());
    default: return nullptr;
  }
}

static_assert(sizeof(bool) == 1, "BOOL tensors are one byte per element");

}  // namespace

const char* datatype_name(int32_t dtype) noexcept {
  for (const Datatype& d : kDatatypes)
    if (d.dtype == dtype) return d.name;
  return "";
}

inference::DataType config_data_type(int32_t dtype) noexcept {
  for (const Datatype& d : kDatatypes)
    if (d.dtype == dtype) return d.config_type;
  return inference::TYPE_INVALID;
}

int32_t dtype_of(std::string_view datatype) noexcept {
  for (const Datatype& d : kDatatypes)
    if (datatype == d.name) return d.dtype;
  return HETERO_DTYPE_UNDEFINED;
}

std::vector<wire::TensorView> decode_inputs(const ModelInferRequest& request, std::vector<std::vector<uint64_t>>& copies) {
  const int count = request.inputs_size();
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != count)
    fail(HETERO_INVALID_ARGUMENT, "raw_input_contents has " + std::to_string(request.raw_input_contents_size()) +
                                      " entries for " + std::to_string(count) + " inputs");
  std::vector<wire::TensorView> views;
  views.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const ModelInferRequest::InferInputTensor& input = request.inputs(i);
    const std::string what = "input '" + input.name() + "'";
    if (!input.parameters().empty())
      bad(what, "parameter '" + input.parameters().begin()->first + "' is not one heterod knows (inputs take none)");
    const int32_t dtype = dtype_of(input.datatype());
    if (dtype == HETERO_DTYPE_UNDEFINED)
      bad(what, "datatype '" + input.datatype() + "' is not one heterod runs (BOOL, UINT8-64, INT8-64, FP16, FP32, FP64, BF16)");
    if (input.shape_size() > static_cast<int>(wire::kMaxRank))
      bad(what, "rank " + std::to_string(input.shape_size()) + " exceeds " + std::to_string(wire::kMaxRank));
    for (int k = 0; k < input.shape_size(); ++k)
      if (input.shape(k) < 0) bad(what, "shape[" + std::to_string(k) + "] is " + std::to_string(input.shape(k)));
    size_t bytes = 0;
    if (!wire::tensor_byte_size(dtype, {input.shape().data(), static_cast<size_t>(input.shape_size())}, bytes))
      bad(what, "its shape overflows the address space");
    const size_t element = core::dtype_size(static_cast<core::DType>(dtype));

    wire::TensorView view;
    view.name = input.name();
    view.dtype = static_cast<core::DType>(dtype);
    view.dims.assign(input.shape().begin(), input.shape().end());
    view.bytes = bytes;
    if (raw) {
      if (input.has_contents()) bad(what, "contents is set as well as raw_input_contents (one or the other)");
      const std::string& data = request.raw_input_contents(i);
      if (data.size() != bytes)
        bad(what, "raw_input_contents[" + std::to_string(i) + "] holds " + std::to_string(data.size()) + " bytes, " +
                      input.datatype() + " of its shape needs " + std::to_string(bytes));
      view.data = reinterpret_cast<const uint8_t*>(data.data());
    } else {
      const char* field = field_of(dtype);
      if (!field) bad(what, input.datatype() + " travels as raw_input_contents (it has no typed field)");
      const size_t elements = bytes / element;
      for (const TypedField& f : typed_fields(input.contents())) {
        if (std::strcmp(f.name, field) == 0) {
          if (static_cast<size_t>(f.count) != elements)
            bad(what, std::string("contents.") + field + " holds " + std::to_string(f.count) + " values, its shape needs " +
                          std::to_string(elements));
        } else if (f.count != 0) {
          bad(what, std::string("contents.") + f.name + " is set for a " + input.datatype() + " input (it takes " +
                        field + ")");
        }
      }
      view.data = typed_data(input, dtype, copies, what);
    }
    if (bytes == 0 || !view.data) view.data = reinterpret_cast<const uint8_t*>(&kEmpty);
    // Tensors are aligned to their element size; bytes in a message usually
    // are, but nothing promises it.
    if (reinterpret_cast<uintptr_t>(view.data) % element != 0) {
      std::vector<uint64_t>& copy = copies.emplace_back((bytes + 7) / 8);
      std::memcpy(copy.data(), view.data, bytes);
      view.data = reinterpret_cast<const uint8_t*>(copy.data());
    }
    views.push_back(std::move(view));
  }
  return views;
}

void add_output(inference::ModelInferResponse& response, const wire::OutgoingTensor& tensor) {
  const char* datatype = datatype_name(tensor.dtype);
  if (!*datatype) fail(HETERO_INTERNAL, "output '" + std::string(tensor.name) + "' has an element type v2 cannot name");
  inference::ModelInferResponse::InferOutputTensor* out = response.add_outputs();
  out->set_name(std::string(tensor.name));
  out->set_datatype(datatype);
  for (const int64_t dim : tensor.dims) out->add_shape(dim);
  response.add_raw_output_contents()->assign(static_cast<const char*>(tensor.data), tensor.bytes);
}

}  // namespace hetero::daemon::kserve
