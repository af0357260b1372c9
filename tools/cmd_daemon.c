/* Commands that manage a heterod daemon (hetero COMMAND [--connect SOCKET]):
 * models, stats, load, unload, reload. */
#include <string.h>

#include "cli.h"

static bool wants_help(int argc, char** argv, const char* help) {
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(help, stdout);
      return true;
    }
  return false;
}

/* The core connected to --connect's socket, else to the default one: these
 * commands are the daemon's own. */
static int connect_core(const char* command, hetero_core_t** core) {
  (void)command;
  if (!cli_connect) cli_connect = cli_default_socket();
  return cli_core_open(core, NULL);
}

int cmd_models(int argc, char** argv) {
  static const char kHelp[] =
      "usage: hetero models [--connect SOCKET]\n\nLists the models heterod serves: name, state, device.\n";
  if (wants_help(argc, argv, kHelp)) return CLI_OK;
  if (argc > 1) return cli_usage_error("models", "unexpected argument '%s'", argv[1]);
  hetero_core_t* core = NULL;
  int rc = connect_core("models", &core);
  if (rc != CLI_OK) return rc;
  hetero_model_list_t* list = NULL;
  size_t count = 0;
  if (hetero_core_list_models(&list, core) || hetero_model_list_get_count(list, &count)) {
    rc = cli_call_failed("cannot list the models");
  } else {
    printf("%-24s %-8s %s\n", "MODEL", "STATE", "DEVICE");
    for (size_t k = 0; k < count; ++k) {
      const char *name = "", *device = "", *state = "", *error = "";
      hetero_model_list_get(list, &name, &device, &state, &error, k);
      printf("%-24s %-8s %s%s%s\n", name, state, device, *error ? "  " : "", error);
    }
  }
  hetero_model_list_release(list);
  hetero_core_release(core);
  return rc;
}

int cmd_stats(int argc, char** argv) {
  static const char kHelp[] =
      "usage: hetero stats [--json | --prometheus] [--connect SOCKET]\n"
      "\n"
      "Per model: requests answered, errors, busy replies, timeouts, latency\n"
      "percentiles, queue depth and inferences running. --prometheus prints the\n"
      "text exposition format, for node_exporter's textfile collector.\n";
  if (wants_help(argc, argv, kHelp)) return CLI_OK;
  hetero_stats_format format = HETERO_STATS_TEXT;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0)
      format = HETERO_STATS_JSON;
    else if (strcmp(argv[i], "--prometheus") == 0)
      format = HETERO_STATS_PROMETHEUS;
    else
      return cli_usage_error("stats", "unexpected argument '%s'", argv[i]);
  }
  hetero_core_t* core = NULL;
  int rc = connect_core("stats", &core);
  if (rc != CLI_OK) return rc;
  char* text = NULL;
  if (hetero_core_get_stats(core, &text, format))
    rc = cli_call_failed("cannot read the statistics");
  else
    fputs(text, stdout);
  hetero_free(text);
  hetero_core_release(core);
  return rc;
}

int cmd_load(int argc, char** argv) {
  static const char kHelp[] =
      "usage: hetero load NAME PATH [--device DEVICE] [--config KEY=VALUE]... [--connect SOCKET]\n"
      "\n"
      "Asks heterod to serve the model at PATH (an .onnx file or a blob, in one of\n"
      "the directories its config lists under model_dirs) as NAME, and waits\n"
      "until it is ready.\n";
  if (wants_help(argc, argv, kHelp)) return CLI_OK;
  const char *name = NULL, *path = NULL, *device = "CPU";
  cli_strings keys = {0}, values = {0};
  int rc = CLI_OK;
  for (int i = 1; i < argc && rc == CLI_OK; ++i) {
    const char* v = NULL;
    int r;
    if ((r = cli_option(argc, argv, &i, "load", "--device", &v)) != 0) {
      if (r < 0) rc = CLI_USAGE;
      else device = v;
    } else if ((r = cli_option(argc, argv, &i, "load", "--config", &v)) != 0) {
      char* eq = r > 0 ? strchr(v, '=') : NULL;
      if (!eq) {
        rc = r < 0 ? CLI_USAGE : cli_usage_error("load", "--config '%s' is not KEY=VALUE", v);
      } else {
        *eq = '\0';
        if (!cli_strings_push(&keys, v) || !cli_strings_push(&values, eq + 1)) rc = CLI_FAILED;
      }
    } else if (!name) {
      name = argv[i];
    } else if (!path) {
      path = argv[i];
    } else {
      rc = cli_usage_error("load", "unexpected argument '%s'", argv[i]);
    }
  }
  if (rc == CLI_OK && !path) rc = cli_usage_error("load", "give a model NAME and PATH");
  hetero_core_t* core = NULL;
  if (rc == CLI_OK) rc = connect_core("load", &core);
  if (rc == CLI_OK && hetero_core_load_model(core, name, path, device, keys.items, values.items, keys.count))
    rc = cli_call_failed("cannot load the model");
  if (rc == CLI_OK) printf("%s: ready on %s\n", name, device);
  hetero_core_release(core);
  cli_strings_free(&keys);
  cli_strings_free(&values);
  return rc;
}

int cmd_unload(int argc, char** argv) {
  static const char kHelp[] = "usage: hetero unload NAME [--connect SOCKET]\n\nStops serving model NAME.\n";
  if (wants_help(argc, argv, kHelp)) return CLI_OK;
  if (argc != 2) return cli_usage_error("unload", "give one model NAME");
  hetero_core_t* core = NULL;
  int rc = connect_core("unload", &core);
  if (rc == CLI_OK && hetero_core_unload_model(core, argv[1])) rc = cli_call_failed("cannot unload the model");
  hetero_core_release(core);
  return rc;
}

int cmd_reload(int argc, char** argv) {
  static const char kHelp[] =
      "usage: hetero reload [--connect SOCKET]\n"
      "\n"
      "Makes heterod re-read its config, as SIGHUP does, and waits until models\n"
      "added or changed are ready (what systemd's ExecReload= runs).\n";
  if (wants_help(argc, argv, kHelp)) return CLI_OK;
  if (argc != 1) return cli_usage_error("reload", "unexpected argument '%s'", argv[1]);
  hetero_core_t* core = NULL;
  int rc = connect_core("reload", &core);
  if (rc == CLI_OK && hetero_core_reload(core)) rc = cli_call_failed("reload failed");
  hetero_core_release(core);
  return rc;
}
