/* hetero devices: the devices of every loaded driver with their metrics, the
 * driver modules, and the modules that could not be loaded with the reason. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char kHelp[] =
    "usage: hetero devices [--json] [--driver-path DIRS]\n"
    "\n"
    "Lists the devices of every loaded driver (device string, full name and the\n"
    "metrics the driver reports), the driver modules, and the modules found but\n"
    "not loaded, with the reason.\n"
    "\n"
    "  --json               print one JSON object instead of text\n"
    "  --driver-path DIRS   colon-separated directories searched for driver\n"
    "                       modules first\n";

/* Metrics that the device listing shows by name already, or that are lists of
 * other names rather than facts about the device. */
static bool skip_metric(const char* name) {
  return strcmp(name, "FULL_DEVICE_NAME") == 0 || strcmp(name, "SUPPORTED_PROPERTIES") == 0 ||
         strcmp(name, "AVAILABLE_DEVICES") == 0;
}

/* Prints each metric the device supports (SUPPORTED_PROPERTIES lists config
 * keys too; those are not metrics and are skipped when the query fails). */
static void print_metrics(hetero_core_t* core, const char* device, bool json) {
  char* names = NULL;
  if (hetero_core_get_metric(core, &names, device, "SUPPORTED_PROPERTIES") != HETERO_OK) {
    if (json) fputs("{}", stdout);
    return;
  }
  bool first = true;
  if (json) fputc('{', stdout);
  for (char* save = NULL, *name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
    if (skip_metric(name)) continue;
    char* value = NULL;
    if (hetero_core_get_metric(core, &value, device, name) != HETERO_OK) continue;
    if (json) {
      fputs(first ? "" : ", ", stdout);
      cli_json_string(stdout, name);
      fputs(": ", stdout);
      cli_json_string(stdout, value);
    } else {
      printf("    %s: %s\n", name, value);
    }
    first = false;
    hetero_free(value);
  }
  if (json) fputc('}', stdout);
  hetero_free(names);
}

static int list(hetero_core_t* core, bool json) {
  size_t devices = 0, drivers = 0, failures = 0;
  if (hetero_core_get_device_count(core, &devices) || hetero_core_get_driver_count(core, &drivers) ||
      hetero_core_get_driver_failure_count(core, &failures))
    return cli_call_failed("cannot list devices");

  fputs(json ? "{\"devices\": [" : "Devices:\n", stdout);
  if (!json && devices == 0) puts("  (none)");
  for (size_t k = 0; k < devices; ++k) {
    const char *name = NULL, *full = NULL;
    if (hetero_core_get_device_name(core, &name, k) || hetero_core_get_device_full_name(core, &full, k))
      return cli_call_failed("cannot list devices");
    if (json) {
      fputs(k ? ", {\"name\": " : "{\"name\": ", stdout);
      cli_json_string(stdout, name);
      fputs(", \"full_name\": ", stdout);
      cli_json_string(stdout, full);
      fputs(", \"metrics\": ", stdout);
      print_metrics(core, name, true);
      fputc('}', stdout);
    } else {
      printf("  %-12s %s\n", name, full);
      print_metrics(core, name, false);
    }
  }

  fputs(json ? "], \"drivers\": [" : "Drivers:\n", stdout);
  if (!json && drivers == 0) puts("  (none)");
  for (size_t k = 0; k < drivers; ++k) {
    const char *name = NULL, *version = NULL, *path = NULL, *no_device = NULL;
    if (hetero_core_get_driver(core, &name, &version, &path, k) ||
        hetero_core_get_driver_no_device_reason(core, &no_device, k))
      return cli_call_failed("cannot list drivers");
    if (json) {
      fputs(k ? ", {\"name\": " : "{\"name\": ", stdout);
      cli_json_string(stdout, name);
      fputs(", \"version\": ", stdout);
      cli_json_string(stdout, version);
      fputs(", \"path\": ", stdout);
      cli_json_string(stdout, path);
      fputs(", \"no_device_reason\": ", stdout);
      cli_json_string(stdout, no_device);
      fputc('}', stdout);
    } else {
      printf("  %-12s %s  %s\n", name, version, path);
      if (*no_device) printf("    no device: %s\n", no_device);
    }
  }

  if (json) fputs("], \"driver_failures\": [", stdout);
  if (!json && failures) puts("Driver modules that failed to load:");
  for (size_t k = 0; k < failures; ++k) {
    const char *path = NULL, *reason = NULL;
    if (hetero_core_get_driver_failure(core, &path, &reason, k)) return cli_call_failed("cannot list drivers");
    if (json) {
      fputs(k ? ", {\"path\": " : "{\"path\": ", stdout);
      cli_json_string(stdout, path);
      fputs(", \"reason\": ", stdout);
      cli_json_string(stdout, reason);
      fputc('}', stdout);
    } else {
      printf("  %s\n    %s\n", path, reason);
    }
  }
  if (json) fputs("]}\n", stdout);
  return CLI_OK;
}

int cmd_devices(int argc, char** argv) {
  bool json = false;
  const char* driver_path = NULL;
  for (int i = 1; i < argc; ++i) {
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kHelp, stdout);
      return CLI_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if ((r = cli_option(argc, argv, &i, "devices", "--driver-path", &driver_path)) != 0) {
      if (r < 0) return CLI_USAGE;
    } else {
      return cli_usage_error("devices", "unexpected argument '%s'", argv[i]);
    }
  }
  hetero_core_t* core = NULL;
  int rc = cli_core_open(&core, driver_path);
  if (rc != CLI_OK) return rc;
  rc = list(core, json);
  hetero_core_release(core);
  return rc;
}
