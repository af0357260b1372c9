// hetero_* entry points: versions, errors, dtypes and the core (drivers and
// devices).
#include <cstdlib>

#include "capi/guard.h"
#include "capi/handles.h"
#include "core/dtype.h"
#include "hetero_build_config.h"

using namespace hetero::capi;
using hetero::fail;

namespace {

template <typename Vec>
const typename Vec::value_type& entry_at(const Vec& entries, size_t index, const char* what) {
  if (index >= entries.size())
    fail(HETERO_INVALID_ARGUMENT, std::string(what) + " index " + std::to_string(index) + " is out of range (there are " +
                                      std::to_string(entries.size()) + ")");
  return entries[index];
}

}  // namespace

extern "C" {

uint32_t hetero_api_version(void) { return HETERO_API_VERSION; }

const char* hetero_library_version(void) { return HETERO_VERSION; }

const char* hetero_status_name(hetero_status status) { return hetero::status_name(status); }

const char* hetero_status_message(hetero_status status) { return hetero::status_message(status); }

const char* hetero_last_error(void) { return last_error(); }

void hetero_free(void* ptr) { std::free(ptr); }

size_t hetero_dtype_size(hetero_dtype dtype) {
  if (!hetero::core::dtype_is_known(dtype)) return 0;
  return hetero::core::dtype_size(static_cast<hetero::core::DType>(dtype));
}

const char* hetero_dtype_name(hetero_dtype dtype) {
  if (!hetero::core::dtype_is_known(dtype)) return "undefined";
  return hetero::core::dtype_name(static_cast<hetero::core::DType>(dtype));
}

hetero_status hetero_core_create(hetero_core_t** out, const char* const* config_keys,
                                 const char* const* config_values, size_t config_count) {
  return guard([&] {
    require(out, "hetero_core_create", "out");
    const Config options = config_from_pairs("hetero_core_create", config_keys, config_values, config_count);
    auto core = std::make_unique<hetero_core>();
    core->backend = make_local_backend(options);
    *out = core.release();
  });
}

hetero_status hetero_core_set_progress(hetero_core_t* core, hetero_progress_fn fn, void* user_data) {
  return guard([&] {
    require(core, "hetero_core_set_progress", "core");
    Backend::ProgressFn progress;
    if (fn) progress = [fn, user_data](const char* stage, uint64_t done, uint64_t total) { fn(user_data, stage, done, total); };
    core->backend->set_progress(std::move(progress));
  });
}

hetero_status hetero_core_release(hetero_core_t* core) {
  return guard([&] { delete core; });
}

hetero_status hetero_core_get_device_count(const hetero_core_t* core, size_t* out_count) {
  return guard([&] {
    require(core, "hetero_core_get_device_count", "core");
    require(out_count, "hetero_core_get_device_count", "out_count");
    *out_count = core->backend->devices().size();
  });
}

hetero_status hetero_core_get_device_name(const hetero_core_t* core, const char** out_name, size_t index) {
  return guard([&] {
    require(core, "hetero_core_get_device_name", "core");
    require(out_name, "hetero_core_get_device_name", "out_name");
    *out_name = entry_at(core->backend->devices(), index, "device").name.c_str();
  });
}

hetero_status hetero_core_get_device_full_name(const hetero_core_t* core, const char** out_name, size_t index) {
  return guard([&] {
    require(core, "hetero_core_get_device_full_name", "core");
    require(out_name, "hetero_core_get_device_full_name", "out_name");
    *out_name = entry_at(core->backend->devices(), index, "device").full_name.c_str();
  });
}

hetero_status hetero_core_get_metric(const hetero_core_t* core, char** out_value, const char* device,
                                     const char* name) {
  return guard([&] {
    require(core, "hetero_core_get_metric", "core");
    require(out_value, "hetero_core_get_metric", "out_value");
    require(device, "hetero_core_get_metric", "device");
    require(name, "hetero_core_get_metric", "name");
    *out_value = malloc_string(core->backend->metric(device, name));
  });
}

hetero_status hetero_core_get_driver_count(const hetero_core_t* core, size_t* out_count) {
  return guard([&] {
    require(core, "hetero_core_get_driver_count", "core");
    require(out_count, "hetero_core_get_driver_count", "out_count");
    *out_count = core->backend->drivers().size();
  });
}

hetero_status hetero_core_get_driver(const hetero_core_t* core, const char** out_name, const char** out_version,
                                     const char** out_path, size_t index) {
  return guard([&] {
    require(core, "hetero_core_get_driver", "core");
    const DriverEntry& d = entry_at(core->backend->drivers(), index, "driver");
    if (out_name) *out_name = d.name.c_str();
    if (out_version) *out_version = d.version.c_str();
    if (out_path) *out_path = d.path.c_str();
  });
}

hetero_status hetero_core_get_driver_no_device_reason(const hetero_core_t* core, const char** out_reason,
                                                    size_t index) {
  return guard([&] {
    require(core, "hetero_core_get_driver_no_device_reason", "core");
    require(out_reason, "hetero_core_get_driver_no_device_reason", "out_reason");
    *out_reason = entry_at(core->backend->drivers(), index, "driver").no_device_reason.c_str();
  });
}

hetero_status hetero_core_get_driver_failure_count(const hetero_core_t* core, size_t* out_count) {
  return guard([&] {
    require(core, "hetero_core_get_driver_failure_count", "core");
    require(out_count, "hetero_core_get_driver_failure_count", "out_count");
    *out_count = core->backend->driver_failures().size();
  });
}

hetero_status hetero_core_get_driver_failure(const hetero_core_t* core, const char** out_path,
                                             const char** out_reason, size_t index) {
  return guard([&] {
    require(core, "hetero_core_get_driver_failure", "core");
    const DriverFailureEntry& f = entry_at(core->backend->driver_failures(), index, "driver failure");
    if (out_path) *out_path = f.path.c_str();
    if (out_reason) *out_reason = f.reason.c_str();
  });
}

}  // extern "C"
