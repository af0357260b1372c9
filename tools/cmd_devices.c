/* hetero devices: the devices of every loaded driver with their metrics, the
 * driver modules, and the modules that could not be loaded with the reason. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_JSON = CLI_OPT_COMMAND };

static const cli_opt kOptions[] = {
    {OPT_JSON, 0, "json", NULL, "print one JSON object instead of text"},
    {CLI_OPT_DRIVER_PATH, 0, "driver-path", "DIRS", "colon-separated directories searched for driver\nmodules first"},
    {0},
};

static const cli_command kCommand = {
    "devices",
    "[--json] [--driver-path DIRS]",
    "Lists the devices of every loaded driver (device string, full name and the\n"
    "metrics the driver reports), the driver modules, and the modules found but\n"
    "not loaded, with the reason.\n",
    kOptions,
    NULL,
};

/* Metrics that the device listing shows by name already, or that are lists of
 * other names rather than facts about the device. */
static bool skip_metric(const char* name) {
  return strcmp(name, "FULL_DEVICE_NAME") == 0 || strcmp(name, "SUPPORTED_PROPERTIES") == 0 ||
         strcmp(name, "AVAILABLE_DEVICES") == 0;
}

/* Each metric the device supports, printed or (with `json`) added to it
 * (SUPPORTED_PROPERTIES lists config keys too; those are not metrics and are
 * skipped when the query fails). False when out of memory. */
static bool list_metrics(hetero_core_t* core, const char* device, json_t* json) {
  char* names = NULL;
  if (hetero_core_get_metric(core, &names, device, "SUPPORTED_PROPERTIES") != HETERO_OK) return true;
  bool ok = true;
  for (char* save = NULL, *name = strtok_r(names, " ", &save); ok && name; name = strtok_r(NULL, " ", &save)) {
    if (skip_metric(name)) continue;
    char* value = NULL;
    if (hetero_core_get_metric(core, &value, device, name) != HETERO_OK) continue;
    if (json)
      ok = json_object_set_new(json, name, cli_json_text(value)) == 0;
    else
      printf("    %s: %s\n", name, value);
    hetero_free(value);
  }
  hetero_free(names);
  return ok;
}

/* Appends `item` to `array`; false when `item` is NULL (out of memory). */
static bool add(json_t* array, json_t* item) { return json_array_append_new(array, item) == 0; }

static int list(hetero_core_t* core, bool json) {
  size_t devices = 0, drivers = 0, failures = 0;
  if (hetero_core_get_device_count(core, &devices) || hetero_core_get_driver_count(core, &drivers) ||
      hetero_core_get_driver_failure_count(core, &failures))
    return cli_call_failed("cannot list devices");
  /* With --json: one document, filled in the order the text is printed. */
  json_t* doc = json ? json_pack("{s:[], s:[], s:[]}", "devices", "drivers", "driver_failures") : NULL;
  json_t* device_list = json_object_get(doc, "devices");
  json_t* driver_list = json_object_get(doc, "drivers");
  json_t* failure_list = json_object_get(doc, "driver_failures");
  bool ok = !json || doc;
  int rc = CLI_OK;

  if (!json) puts(devices ? "Devices:" : "Devices:\n  (none)");
  for (size_t k = 0; ok && rc == CLI_OK && k < devices; ++k) {
    const char *name = NULL, *full = NULL;
    if (hetero_core_get_device_name(core, &name, k) || hetero_core_get_device_full_name(core, &full, k)) {
      rc = cli_call_failed("cannot list devices");
    } else if (json) {
      json_t* metrics = json_object();
      ok = add(device_list, json_pack("{s:o, s:o, s:o}", "name", cli_json_text(name), "full_name",
                                      cli_json_text(full), "metrics", metrics)) &&
           list_metrics(core, name, metrics);
    } else {
      printf("  %-12s %s\n", name, full);
      list_metrics(core, name, NULL);
    }
  }

  if (!json) puts(drivers ? "Drivers:" : "Drivers:\n  (none)");
  for (size_t k = 0; ok && rc == CLI_OK && k < drivers; ++k) {
    const char *name = NULL, *version = NULL, *path = NULL, *no_device = NULL;
    if (hetero_core_get_driver(core, &name, &version, &path, k) ||
        hetero_core_get_driver_no_device_reason(core, &no_device, k)) {
      rc = cli_call_failed("cannot list drivers");
    } else if (json) {
      ok = add(driver_list, json_pack("{s:o, s:o, s:o, s:o}", "name", cli_json_text(name), "version",
                                      cli_json_text(version), "path", cli_json_text(path), "no_device_reason",
                                      cli_json_text(no_device)));
    } else {
      printf("  %-12s %s  %s\n", name, version, path);
      if (*no_device) printf("    no device: %s\n", no_device);
    }
  }

  if (!json && failures) puts("Driver modules that failed to load:");
  for (size_t k = 0; ok && rc == CLI_OK && k < failures; ++k) {
    const char *path = NULL, *reason = NULL;
    if (hetero_core_get_driver_failure(core, &path, &reason, k)) {
      rc = cli_call_failed("cannot list drivers");
    } else if (json) {
      ok = add(failure_list,
               json_pack("{s:o, s:o}", "path", cli_json_text(path), "reason", cli_json_text(reason)));
    } else {
      printf("  %s\n    %s\n", path, reason);
    }
  }

  if (rc != CLI_OK || !ok) {
    json_decref(doc);
    if (rc == CLI_OK) cli_error("out of memory while writing JSON");
    return CLI_FAILED;
  }
  return json && !cli_json_print(doc) ? CLI_FAILED : CLI_OK;
}

typedef struct devices_args {
  bool json;
  const char* driver_path;
} devices_args;

static int take(void* ctx, int id, const char* v) {
  devices_args* a = ctx;
  if (id == CLI_OPERAND) return cli_usage_error("devices", "unexpected argument '%s'", v);
  if (id == OPT_JSON) a->json = true;
  if (id == CLI_OPT_DRIVER_PATH) a->driver_path = v;
  return CLI_OK;
}

int cmd_devices(int argc, char** argv) {
  devices_args a = {false, NULL};
  const int parsed = cli_parse(&kCommand, argc, argv, take, &a);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  const bool json = a.json;
  const char* driver_path = a.driver_path;
  hetero_core_t* core = NULL;
  int rc = cli_core_open(&core, driver_path);
  if (rc != CLI_OK) return rc;
  rc = list(core, json);
  hetero_core_release(core);
  return rc;
}
