// hetero_* entry points: compiling, blob export and import, and the inputs
// and outputs of compiled models.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "capi/file_io.h"
#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/port_getters.h"
#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/mapped_file.h"
#include "pipeline/pipeline_spec.h"

using namespace hetero::capi;
using hetero::fail;

namespace {

const CompiledModelImpl& compiled_of(const hetero_compiled_model_t* compiled, const char* fn) {
  require(compiled, fn, "compiled");
  return *compiled->impl;
}

// Its inputs or outputs, for the port getters (capi/port_getters.h).
auto compiled_inputs(const hetero_compiled_model_t* compiled) {
  return [compiled](const char* fn) -> const std::vector<Port>& { return compiled_of(compiled, fn).inputs(); };
}
auto compiled_outputs(const hetero_compiled_model_t* compiled) {
  return [compiled](const char* fn) -> const std::vector<Port>& { return compiled_of(compiled, fn).outputs(); };
}

// Runs `body` with its errors naming the file `path` (the blob container's
// messages speak of "blob").
template <typename Body>
void about_file(const char* path, Body&& body) {
  try {
    body();
  } catch (const hetero::Failure& e) {
    fail(e.status(), std::string(path) + ": " + e.what());
  }
}

// hetero_compiled_model_open_*: a blob's config is the import's, less the
// policy its plan replaces.
Config blob_config(Config config) {
  config.erase("policy");
  return config;
}

// hetero_compiled_model_open_*: a blob is refused when it is not what the
// caller asked for (`device` null: any).
void check_opened_blob(const CompiledModelImpl& blob, const char* device, const Backend::InputShapes& shapes) {
  if (device) hetero::core::check_blob_device(blob.device(), device);
  for (const auto& [name, shape] : shapes) {
    const auto port = std::find_if(blob.inputs().begin(), blob.inputs().end(),
                                   [&](const Port& p) { return p.name == name; });
    if (port == blob.inputs().end()) fail(HETERO_INVALID_ARGUMENT, "the blob has no input '" + name + "'");
    if (!port->shape) continue;  // any rank goes
    const std::vector<int64_t>& dims = *port->shape;
    bool agrees = dims.size() == shape.size();
    for (size_t d = 0; agrees && d < shape.size(); ++d) agrees = dims[d] < 0 || dims[d] == shape[d];
    if (!agrees)
      fail(HETERO_BLOB_MISMATCH, "input '" + name + "' of the blob is " + hetero::core::shape_to_string(dims) +
                                     ", not " + hetero::core::shape_to_string(shape));
  }
}

}  // namespace

extern "C" {

hetero_status hetero_compile(hetero_compiled_model_t** out, hetero_core_t* core, const hetero_model_t* model,
                             const char* device, const char* const* config_keys, const char* const* config_values,
                             size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compile";
    require(out, fn, "out");
    require(core, fn, "core");
    require(model, fn, "model");
    require(device, fn, "device");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    auto compiled = std::make_unique<hetero_compiled_model>();
    compiled->impl = core->backend->compile(*model->impl, device, config);
    *out = compiled.release();
  });
}

hetero_status hetero_compile_file(hetero_compiled_model_t** out, hetero_core_t* core, const char* path,
                                  const char* const* shape_names, const int64_t* const* shape_dims,
                                  const size_t* shape_ranks, size_t shape_count, const char* device,
                                  const char* const* config_keys, const char* const* config_values,
                                  size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compile_file";
    require(out, fn, "out");
    require(core, fn, "core");
    require(path, fn, "path");
    require(device, fn, "device");
    const auto shapes = shapes_from_arrays(fn, shape_names, shape_dims, shape_ranks, shape_count);
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    auto compiled = std::make_unique<hetero_compiled_model>();
    compiled->impl = core->backend->compile_file(path, shapes, device, config);
    *out = compiled.release();
  });
}

hetero_status hetero_compiled_model_import(hetero_compiled_model_t** out, hetero_core_t* core, const void* data,
                                           size_t size, const char* const* config_keys,
                                           const char* const* config_values, size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compiled_model_import";
    require(out, fn, "out");
    require(core, fn, "core");
    if (size) require(data, fn, "data");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    auto compiled = std::make_unique<hetero_compiled_model>();
    compiled->impl = core->backend->import_blob({static_cast<const uint8_t*>(data), size}, config);
    *out = compiled.release();
  });
}

hetero_status hetero_compiled_model_import_file(hetero_compiled_model_t** out, hetero_core_t* core,
                                                const char* path, const char* const* config_keys,
                                                const char* const* config_values, size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compiled_model_import_file";
    require(out, fn, "out");
    require(core, fn, "core");
    require(path, fn, "path");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    // Mapped, not read: the import's only copy is the driver's own.
    const hetero::core::MappedBytes blob = hetero::core::map_file(path);
    auto compiled = std::make_unique<hetero_compiled_model>();
    about_file(path, [&] { compiled->impl = core->backend->import_blob({blob.data, blob.size}, config); });
    *out = compiled.release();
  });
}

hetero_status hetero_model_file_format(hetero_model_format* out_format, const char* path) {
  return guard([&] {
    require(out_format, "hetero_model_file_format", "out_format");
    require(path, "hetero_model_file_format", "path");
    const hetero::core::MappedBytes bytes = hetero::core::map_file(path);
    *out_format = hetero::pipeline::is_pipeline_path(path)               ? HETERO_MODEL_FORMAT_PIPELINE
                  : hetero::core::has_blob_magic({bytes.data, bytes.size}) ? HETERO_MODEL_FORMAT_BLOB
                                                                         : HETERO_MODEL_FORMAT_ONNX;
  });
}

hetero_status hetero_compiled_model_open_file(hetero_compiled_model_t** out, hetero_core_t* core, const char* path,
                                              const char* const* shape_names, const int64_t* const* shape_dims,
                                              const size_t* shape_ranks, size_t shape_count, const char* device,
                                              const char* const* config_keys, const char* const* config_values,
                                              size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compiled_model_open_file";
    require(out, fn, "out");
    require(core, fn, "core");
    require(path, fn, "path");
    const auto shapes = shapes_from_arrays(fn, shape_names, shape_dims, shape_ranks, shape_count);
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    const hetero::core::MappedBytes bytes = hetero::core::map_file(path);
    auto compiled = std::make_unique<hetero_compiled_model>();
    if (hetero::core::has_blob_magic({bytes.data, bytes.size})) {
      about_file(path, [&] {
        compiled->impl = core->backend->import_blob({bytes.data, bytes.size}, blob_config(config));
        check_opened_blob(*compiled->impl, device, shapes);
      });
    } else {
      if (!device) fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": device is NULL, and " + path + " is an ONNX model");
      compiled->impl = core->backend->compile_file(path, shapes, device, config);
    }
    *out = compiled.release();
  });
}

hetero_status hetero_compiled_model_open_memory(hetero_compiled_model_t** out, hetero_core_t* core, const void* data,
                                                size_t size, const char* const* shape_names,
                                                const int64_t* const* shape_dims, const size_t* shape_ranks,
                                                size_t shape_count, const char* device,
                                                const char* const* config_keys, const char* const* config_values,
                                                size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_compiled_model_open_memory";
    require(out, fn, "out");
    require(core, fn, "core");
    if (size) require(data, fn, "data");
    const auto shapes = shapes_from_arrays(fn, shape_names, shape_dims, shape_ranks, shape_count);
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), size);
    auto compiled = std::make_unique<hetero_compiled_model>();
    if (hetero::core::has_blob_magic(bytes)) {
      compiled->impl = core->backend->import_blob(bytes, blob_config(config));
      check_opened_blob(*compiled->impl, device, shapes);
    } else {
      if (!device) fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": device is NULL, and the bytes are an ONNX model");
      compiled->impl = core->backend->compile(*core->backend->read_model_memory(bytes, shapes), device, config);
    }
    *out = compiled.release();
  });
}

hetero_status hetero_compiled_model_export(const hetero_compiled_model_t* compiled, void** out_data,
                                           size_t* out_size) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_export");
    require(out_data, "hetero_compiled_model_export", "out_data");
    require(out_size, "hetero_compiled_model_export", "out_size");
    const std::vector<uint8_t> blob = c.export_blob();
    // malloc, not new: the caller frees it with hetero_free().
    void* p = std::malloc(blob.empty() ? 1 : blob.size());
    if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(blob.size()) + " bytes for the blob");
    if (!blob.empty()) std::memcpy(p, blob.data(), blob.size());
    *out_data = p;
    *out_size = blob.size();
  });
}

hetero_status hetero_compiled_model_export_file(const hetero_compiled_model_t* compiled, const char* path) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_export_file");
    require(path, "hetero_compiled_model_export_file", "path");
    write_file_atomic(path, c.export_blob());
  });
}

hetero_status hetero_compiled_model_get_device(const hetero_compiled_model_t* compiled, const char** out_device) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_device");
    require(out_device, "hetero_compiled_model_get_device", "out_device");
    *out_device = c.device().c_str();
  });
}

hetero_status hetero_blob_describe(char** out_text, const void* data, size_t size) {
  return guard([&] {
    require(out_text, "hetero_blob_describe", "out_text");
    if (size) require(data, "hetero_blob_describe", "data");
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), size);
    *out_text = malloc_string(hetero::core::describe_blob(hetero::core::read_blob(bytes), size));
  });
}

hetero_status hetero_blob_describe_json(char** out_json, const void* data, size_t size) {
  return guard([&] {
    require(out_json, "hetero_blob_describe_json", "out_json");
    if (size) require(data, "hetero_blob_describe_json", "data");
    const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(data), size);
    *out_json = malloc_string(hetero::core::describe_blob_json(hetero::core::read_blob(bytes), size));
  });
}

hetero_status hetero_compiled_model_get_submodel_count(const hetero_compiled_model_t* compiled, size_t* out_count) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_submodel_count");
    require(out_count, "hetero_compiled_model_get_submodel_count", "out_count");
    *out_count = c.submodel_devices().size();
  });
}

hetero_status hetero_compiled_model_get_submodel_device(const hetero_compiled_model_t* compiled,
                                                        const char** out_device, size_t index) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_submodel_device");
    require(out_device, "hetero_compiled_model_get_submodel_device", "out_device");
    const auto& devices = c.submodel_devices();
    if (index >= devices.size())
      fail(HETERO_INVALID_ARGUMENT, "submodel index " + std::to_string(index) + " is out of range (the model has " +
                                        std::to_string(devices.size()) + " submodels)");
    *out_device = devices[index].c_str();
  });
}

hetero_status hetero_compiled_model_get_input_count(const hetero_compiled_model_t* compiled, size_t* out_count) {
  return get_port_count("hetero_compiled_model_get_input_count", compiled_inputs(compiled), out_count);
}

hetero_status hetero_compiled_model_get_input_name(const hetero_compiled_model_t* compiled, const char** out_name,
                                                   size_t index) {
  return get_port_name("hetero_compiled_model_get_input_name", compiled_inputs(compiled), "input", out_name, index);
}

hetero_status hetero_compiled_model_get_input_dtype(const hetero_compiled_model_t* compiled, hetero_dtype* out_dtype,
                                                    size_t index) {
  return get_port_dtype("hetero_compiled_model_get_input_dtype", compiled_inputs(compiled), "input", out_dtype, index);
}

hetero_status hetero_compiled_model_get_input_shape(const hetero_compiled_model_t* compiled, const int64_t** out_dims,
                                                    int64_t* out_rank, size_t index) {
  return get_port_shape("hetero_compiled_model_get_input_shape",
                        compiled_inputs(compiled), "input", out_dims, out_rank, index);
}

hetero_status hetero_compiled_model_get_output_count(const hetero_compiled_model_t* compiled, size_t* out_count) {
  return get_port_count("hetero_compiled_model_get_output_count", compiled_outputs(compiled), out_count);
}

hetero_status hetero_compiled_model_get_output_name(const hetero_compiled_model_t* compiled, const char** out_name,
                                                    size_t index) {
  return get_port_name("hetero_compiled_model_get_output_name", compiled_outputs(compiled), "output", out_name, index);
}

hetero_status hetero_compiled_model_get_output_dtype(const hetero_compiled_model_t* compiled,
                                                     hetero_dtype* out_dtype, size_t index) {
  return get_port_dtype("hetero_compiled_model_get_output_dtype",
                        compiled_outputs(compiled), "output", out_dtype, index);
}

hetero_status hetero_compiled_model_get_output_shape(const hetero_compiled_model_t* compiled,
                                                     const int64_t** out_dims, int64_t* out_rank, size_t index) {
  return get_port_shape("hetero_compiled_model_get_output_shape",
                        compiled_outputs(compiled), "output", out_dims, out_rank, index);
}

hetero_status hetero_compiled_model_release(hetero_compiled_model_t* compiled) {
  return guard([&] { delete compiled; });
}

hetero_status hetero_compiled_model_end_sequence(hetero_compiled_model_t* compiled, uint64_t sequence_id) {
  return guard([&] {
    require(compiled, "hetero_compiled_model_end_sequence", "compiled");
    compiled->impl->end_sequence(sequence_id);
  });
}

hetero_status hetero_compiled_model_get_state_pair_count(const hetero_compiled_model_t* compiled,
                                                         size_t* out_count) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_state_pair_count");
    require(out_count, "hetero_compiled_model_get_state_pair_count", "out_count");
    *out_count = c.state_pairs().size();
  });
}

hetero_status hetero_compiled_model_get_state_pair(const hetero_compiled_model_t* compiled, const char** out_output,
                                                   const char** out_input, size_t index) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_state_pair");
    require(out_output, "hetero_compiled_model_get_state_pair", "out_output");
    require(out_input, "hetero_compiled_model_get_state_pair", "out_input");
    const auto& pairs = c.state_pairs();
    if (index >= pairs.size())
      fail(HETERO_INVALID_ARGUMENT, "state pair index " + std::to_string(index) + " is out of range (the model has " +
                                        std::to_string(pairs.size()) + ")");
    *out_output = pairs[index].first.c_str();
    *out_input = pairs[index].second.c_str();
  });
}

hetero_status hetero_compiled_model_get_input_given(const hetero_compiled_model_t* compiled, int* out_given,
                                                    size_t index) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_get_input_given");
    require(out_given, "hetero_compiled_model_get_input_given", "out_given");
    if (index >= c.inputs().size())
      fail(HETERO_INVALID_ARGUMENT, "input index " + std::to_string(index) + " is out of range (the model has " +
                                        std::to_string(c.inputs().size()) + ")");
    *out_given = c.input_given(index) ? 1 : 0;
  });
}

hetero_status hetero_compiled_model_is_cached(const hetero_compiled_model_t* compiled, int* out_cached) {
  return guard([&] {
    const CompiledModelImpl& c = compiled_of(compiled, "hetero_compiled_model_is_cached");
    require(out_cached, "hetero_compiled_model_is_cached", "out_cached");
    *out_cached = c.from_cache ? 1 : 0;
  });
}

}  // extern "C"
