// hetero_* entry points: models (reading, inputs and outputs) and device
// queries.
#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/port_getters.h"

using namespace hetero::capi;
using hetero::fail;

namespace {

const ModelImpl& model_of(const hetero_model_t* model, const char* fn) {
  require(model, fn, "model");
  return *model->impl;
}

// Its inputs or outputs, for the port getters (capi/port_getters.h).
auto model_inputs(const hetero_model_t* model) {
  return [model](const char* fn) -> const std::vector<Port>& { return model_of(model, fn).inputs(); };
}
auto model_outputs(const hetero_model_t* model) {
  return [model](const char* fn) -> const std::vector<Port>& { return model_of(model, fn).outputs(); };
}

}  // namespace

extern "C" {

hetero_status hetero_model_read_file(hetero_model_t** out, hetero_core_t* core, const char* path,
                                     const char* const* shape_names, const int64_t* const* shape_dims,
                                     const size_t* shape_ranks, size_t shape_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_model_read_file";
    require(out, fn, "out");
    require(core, fn, "core");
    require(path, fn, "path");
    const auto shapes = shapes_from_arrays(fn, shape_names, shape_dims, shape_ranks, shape_count);
    auto model = std::make_unique<hetero_model>();
    model->impl = core->backend->read_model_file(path, shapes);
    *out = model.release();
  });
}

hetero_status hetero_model_read_memory(hetero_model_t** out, hetero_core_t* core, const void* data, size_t size,
                                       const char* const* shape_names, const int64_t* const* shape_dims,
                                       const size_t* shape_ranks, size_t shape_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_model_read_memory";
    require(out, fn, "out");
    require(core, fn, "core");
    if (size) require(data, fn, "data");
    const auto shapes = shapes_from_arrays(fn, shape_names, shape_dims, shape_ranks, shape_count);
    auto model = std::make_unique<hetero_model>();
    model->impl = core->backend->read_model_memory({static_cast<const uint8_t*>(data), size}, shapes);
    *out = model.release();
  });
}

hetero_status hetero_model_release(hetero_model_t* model) {
  return guard([&] { delete model; });
}

hetero_status hetero_model_get_input_count(const hetero_model_t* model, size_t* out_count) {
  return get_port_count("hetero_model_get_input_count", model_inputs(model), out_count);
}

hetero_status hetero_model_get_input_name(const hetero_model_t* model, const char** out_name, size_t index) {
  return get_port_name("hetero_model_get_input_name", model_inputs(model), "input", out_name, index);
}

hetero_status hetero_model_get_input_dtype(const hetero_model_t* model, hetero_dtype* out_dtype, size_t index) {
  return get_port_dtype("hetero_model_get_input_dtype", model_inputs(model), "input", out_dtype, index);
}

hetero_status hetero_model_get_input_shape(const hetero_model_t* model, const int64_t** out_dims, int64_t* out_rank,
                                           size_t index) {
  return get_port_shape("hetero_model_get_input_shape", model_inputs(model), "input", out_dims, out_rank, index);
}

hetero_status hetero_model_get_output_count(const hetero_model_t* model, size_t* out_count) {
  return get_port_count("hetero_model_get_output_count", model_outputs(model), out_count);
}

hetero_status hetero_model_get_output_name(const hetero_model_t* model, const char** out_name, size_t index) {
  return get_port_name("hetero_model_get_output_name", model_outputs(model), "output", out_name, index);
}

hetero_status hetero_model_get_output_dtype(const hetero_model_t* model, hetero_dtype* out_dtype, size_t index) {
  return get_port_dtype("hetero_model_get_output_dtype", model_outputs(model), "output", out_dtype, index);
}

hetero_status hetero_model_get_output_shape(const hetero_model_t* model, const int64_t** out_dims,
                                            int64_t* out_rank, size_t index) {
  return get_port_shape("hetero_model_get_output_shape", model_outputs(model), "output", out_dims, out_rank, index);
}

hetero_status hetero_model_describe_json(const hetero_model_t* model, char** out_json) {
  return guard([&] {
    const ModelImpl& m = model_of(model, "hetero_model_describe_json");
    require(out_json, "hetero_model_describe_json", "out_json");
    *out_json = malloc_string(m.describe_json());
  });
}

hetero_status hetero_query(hetero_query_result_t** out, hetero_core_t* core, const hetero_model_t* model,
                           const char* device, const char* const* config_keys, const char* const* config_values,
                           size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_query";
    require(out, fn, "out");
    require(core, fn, "core");
    const ModelImpl& m = model_of(model, fn);
    require(device, fn, "device");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    auto result = std::make_unique<hetero_query_result>();
    result->nodes = core->backend->query(m, device, config);
    *out = result.release();
  });
}

hetero_status hetero_query_result_get_node_count(const hetero_query_result_t* result, size_t* out_count) {
  return guard([&] {
    require(result, "hetero_query_result_get_node_count", "result");
    require(out_count, "hetero_query_result_get_node_count", "out_count");
    *out_count = result->nodes.size();
  });
}

hetero_status hetero_query_result_get_node(const hetero_query_result_t* result, const char** out_name,
                                           const char** out_op_type, int* out_supported, const char** out_reason,
                                           size_t index) {
  return guard([&] {
    require(result, "hetero_query_result_get_node", "result");
    if (index >= result->nodes.size())
      fail(HETERO_INVALID_ARGUMENT, "node index " + std::to_string(index) + " is out of range (the query has " +
                                        std::to_string(result->nodes.size()) + " nodes)");
    const QueryNode& n = result->nodes[index];
    if (out_name) *out_name = n.name.c_str();
    if (out_op_type) *out_op_type = n.op_type.c_str();
    if (out_supported) *out_supported = n.supported ? 1 : 0;
    if (out_reason) *out_reason = n.reason.c_str();
  });
}

hetero_status hetero_query_result_release(hetero_query_result_t* result) {
  return guard([&] { delete result; });
}

hetero_status hetero_partition(hetero_core_t* core, char** out_text, const hetero_model_t* model,
                               const char* device, hetero_plan_format format, const char* const* config_keys,
                               const char* const* config_values, size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_partition";
    require(core, fn, "core");
    require(out_text, fn, "out_text");
    const ModelImpl& m = model_of(model, fn);
    require(device, fn, "device");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    *out_text = malloc_string(core->backend->partition(m, device, format, config));
  });
}

}  // extern "C"
