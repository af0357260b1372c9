// hetero_* entry points of a daemon connection (API 0.3): connecting, and
// the models a daemon serves.
#include <cstring>

#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/stats_format.h"

using namespace hetero::capi;
using hetero::fail;

extern "C" {

hetero_status hetero_core_connect(hetero_core_t** out, const char* socket_path) {
  return guard([&] {
    require(out, "hetero_core_connect", "out");
    require(socket_path, "hetero_core_connect", "socket_path");
    auto core = std::make_unique<hetero_core>();
    core->backend = make_remote_backend(socket_path);
    *out = core.release();
  });
}

hetero_status hetero_core_list_models(hetero_model_list_t** out, hetero_core_t* core) {
  return guard([&] {
    require(out, "hetero_core_list_models", "out");
    require(core, "hetero_core_list_models", "core");
    auto list = std::make_unique<hetero_model_list>();
    list->models = core->backend->list_models();
    *out = list.release();
  });
}

hetero_status hetero_model_list_get_count(const hetero_model_list_t* list, size_t* out_count) {
  return guard([&] {
    require(list, "hetero_model_list_get_count", "list");
    require(out_count, "hetero_model_list_get_count", "out_count");
    *out_count = list->models.size();
  });
}

hetero_status hetero_model_list_get(const hetero_model_list_t* list, const char** out_name, const char** out_device,
                                    const char** out_state, const char** out_error, size_t index) {
  return guard([&] {
    require(list, "hetero_model_list_get", "list");
    if (index >= list->models.size())
      fail(HETERO_INVALID_ARGUMENT, "hetero_model_list_get: index " + std::to_string(index) +
                                        " is out of range (there are " + std::to_string(list->models.size()) + ")");
    const ServedModelEntry& m = list->models[index];
    if (out_name) *out_name = m.name.c_str();
    if (out_device) *out_device = m.device.c_str();
    if (out_state) *out_state = m.state.c_str();
    if (out_error) *out_error = m.error.c_str();
  });
}

hetero_status hetero_model_list_release(hetero_model_list_t* list) {
  delete list;
  return HETERO_OK;
}

hetero_status hetero_compiled_model_open(hetero_compiled_model_t** out, hetero_core_t* core, const char* name) {
  return guard([&] {
    constexpr const char* fn = "hetero_compiled_model_open";
    require(out, fn, "out");
    require(core, fn, "core");
    require(name, fn, "name");
    auto compiled = std::make_unique<hetero_compiled_model>();
    compiled->impl = core->backend->open_model(name);
    *out = compiled.release();
  });
}

hetero_status hetero_core_load_model(hetero_core_t* core, const char* name, const char* path, const char* device,
                                     const char* const* config_keys, const char* const* config_values,
                                     size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_core_load_model";
    require(core, fn, "core");
    require(name, fn, "name");
    require(path, fn, "path");
    if (!*path) fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": path is empty");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    core->backend->load_model(name, path, {}, device ? device : "", config);
  });
}

hetero_status hetero_core_load_model_memory(hetero_core_t* core, const char* name, const void* data, size_t size,
                                            const char* device, const char* const* config_keys,
                                            const char* const* config_values, size_t config_count) {
  return guard([&] {
    constexpr const char* fn = "hetero_core_load_model_memory";
    require(core, fn, "core");
    require(name, fn, "name");
    require(data, fn, "data");
    const Config config = config_from_pairs(fn, config_keys, config_values, config_count);
    core->backend->load_model(name, "", {static_cast<const uint8_t*>(data), size}, device ? device : "", config);
  });
}

hetero_status hetero_core_unload_model(hetero_core_t* core, const char* name) {
  return guard([&] {
    require(core, "hetero_core_unload_model", "core");
    require(name, "hetero_core_unload_model", "name");
    core->backend->unload_model(name);
  });
}

hetero_status hetero_core_get_stats(hetero_core_t* core, char** out_text, hetero_stats_format format) {
  return guard([&] {
    require(core, "hetero_core_get_stats", "core");
    require(out_text, "hetero_core_get_stats", "out_text");
    *out_text = malloc_string(format_stats(core->backend->stats(), format));
  });
}

hetero_status hetero_core_reload(hetero_core_t* core) {
  return guard([&] {
    require(core, "hetero_core_reload", "core");
    core->backend->reload();
  });
}

}  // extern "C"
