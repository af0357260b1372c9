// Tensors between the Open Inference Protocol and heterod: datatype names
// ("FP32", and Triton's TYPE_FP32) for heterod's element types, a request's
// inputs checked and viewed where they already lie, and outputs appended to
// a response.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/kserve/grpc_predict_v2.pb.h"
#include "hetero/hetero.h"
#include "protocol/tensor_view.h"

namespace hetero::daemon::kserve {

// The v2 name of a heterod element type ("FP32", "INT64", "BOOL", ...);
// "" for none (a string, an undefined type).
const char* datatype_name(int32_t dtype) noexcept;
// The data_type Triton's model configuration gives a heterod element type
// (TYPE_FP32, ...); TYPE_INVALID for none.
inference::DataType config_data_type(int32_t dtype) noexcept;
// The element type a v2 datatype names; HETERO_DTYPE_UNDEFINED for a name
// heterod has no tensors of ("BYTES", a misspelling).
int32_t dtype_of(std::string_view datatype) noexcept;

// The inputs of `request`, each checked against itself before anything is
// allocated for it: a known datatype, a rank and dims the address space
// holds, and contents (raw, or the typed field of its datatype) of exactly
// the size they make. The views point into `request`, except for types
// narrower than their typed field (INT8, INT16, UINT8, UINT16), copied into
// `copies`. Fails with INVALID_ARGUMENT naming the input and the field.
std::vector<wire::TensorView> decode_inputs(const inference::ModelInferRequest& request,
                                            std::vector<std::vector<uint64_t>>& copies);

// Appends an output (name, datatype, shape, and its bytes as its
// raw_output_contents entry) to `response`.
void add_output(inference::ModelInferResponse& response, const wire::OutgoingTensor& tensor);

}  // namespace hetero::daemon::kserve
