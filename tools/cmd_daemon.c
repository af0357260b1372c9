/* Commands that manage a heterod daemon (hetero COMMAND [--connect SOCKET]):
 * models, stats, load, unload, reload. */
#include <string.h>

#include "cli.h"

/* What these commands take: operands (NAME, PATH) and a few options. */
enum { OPT_JSON = CLI_OPT_COMMAND, OPT_PROMETHEUS, OPT_DEVICE, OPT_CONFIG };

typedef struct daemon_args {
  const char* command;
  size_t max_operands;
  size_t operand_count;
  const char* operands[2];
  hetero_stats_format format;
  const char* device;
  cli_strings keys, values;
} daemon_args;

static int take(void* ctx, int id, const char* v) {
  daemon_args* a = ctx;
  switch (id) {
    case CLI_OPERAND:
      if (a->operand_count == a->max_operands) return cli_usage_error(a->command, "unexpected argument '%s'", v);
      a->operands[a->operand_count++] = v;
      return CLI_OK;
    case OPT_JSON: a->format = HETERO_STATS_JSON; return CLI_OK;
    case OPT_PROMETHEUS: a->format = HETERO_STATS_PROMETHEUS; return CLI_OK;
    case OPT_DEVICE: a->device = v; return CLI_OK;
    default: {  /* OPT_CONFIG: split in place, as argv may be written */
      char* eq = strchr((char*)v, '=');
      if (!eq || eq == v) return cli_usage_error(a->command, "--config '%s' is not KEY=VALUE", v);
      *eq = '\0';
      return cli_strings_push(&a->keys, v) && cli_strings_push(&a->values, eq + 1) ? CLI_OK : CLI_FAILED;
    }
  }
}

/* Parses argv for `command`, expecting `operands` operands (at most). */
static int parse(const cli_command* command, int argc, char** argv, size_t operands, daemon_args* a) {
  memset(a, 0, sizeof *a);
  a->command = command->name;
  a->max_operands = operands;
  a->format = HETERO_STATS_TEXT;
  a->device = "CPU";
  return cli_parse(command, argc, argv, take, a);
}

/* The core connected to --connect's socket, else to the default one: these
 * commands are the daemon's own. */
static int connect_core(hetero_core_t** core) {
  if (!cli_connect) cli_connect = cli_default_socket();
  return cli_core_open(core, NULL);
}

static const cli_command kModels = {
    "models", "[--connect SOCKET]",
    "Lists the models heterod serves: name, state, device (hetero info NAME\n"
    "describes one: its inputs and outputs).\n",
    NULL, NULL,
};

int cmd_models(int argc, char** argv) {
  daemon_args args;
  const int parsed = parse(&kModels, argc, argv, 0, &args);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  hetero_core_t* core = NULL;
  int rc = connect_core(&core);
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

static const cli_opt kStatsOptions[] = {
    {OPT_JSON, 0, "json", NULL, "print one JSON object"},
    {OPT_PROMETHEUS, 0, "prometheus", NULL, "print Prometheus' text exposition format"},
    {0},
};

static const cli_command kStats = {
    "stats", "[--json | --prometheus] [--connect SOCKET]",
    "Per model: requests answered, errors, busy replies, timeouts, latency\n"
    "percentiles, queue depth and inferences running. --prometheus prints the\n"
    "text exposition format, for node_exporter's textfile collector.\n",
    kStatsOptions, NULL,
};

int cmd_stats(int argc, char** argv) {
  daemon_args args;
  const int parsed = parse(&kStats, argc, argv, 0, &args);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  const hetero_stats_format format = args.format;
  hetero_core_t* core = NULL;
  int rc = connect_core(&core);
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

static const cli_opt kLoadOptions[] = {
    {OPT_DEVICE, 0, "device", "D", "the device to serve it on (default CPU)"},
    {OPT_CONFIG, 0, "config", "K=V", "a compile setting of the model (repeatable)"},
    {0},
};

static const cli_command kLoad = {
    "load", "NAME PATH [--device D] [--config K=V]... [--connect SOCKET]",
    "Asks heterod to serve the model at PATH (an .onnx file or a blob, in one of\n"
    "the directories its config lists under model_dirs) as NAME, and waits\n"
    "until it is ready.\n",
    kLoadOptions, NULL,
};

int cmd_load(int argc, char** argv) {
  daemon_args args;
  int rc = parse(&kLoad, argc, argv, 2, &args);
  if (rc == CLI_OK && args.operand_count < 2) rc = cli_usage_error("load", "give a model NAME and PATH");
  const char *name = args.operands[0], *path = args.operands[1], *device = args.device;
  hetero_core_t* core = NULL;
  if (rc == CLI_OK) rc = connect_core(&core);
  if (rc == CLI_OK &&
      hetero_core_load_model(core, name, path, device, args.keys.items, args.values.items, args.keys.count))
    rc = cli_call_failed("cannot load the model");
  if (rc == CLI_OK) printf("%s: ready on %s\n", name, device);
  hetero_core_release(core);
  cli_strings_free(&args.keys);
  cli_strings_free(&args.values);
  return rc == CLI_HELP ? CLI_OK : rc;
}

static const cli_command kUnload = {
    "unload", "NAME [--connect SOCKET]", "Stops serving model NAME.\n", NULL, NULL,
};

int cmd_unload(int argc, char** argv) {
  daemon_args args;
  const int parsed = parse(&kUnload, argc, argv, 1, &args);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  if (args.operand_count != 1) return cli_usage_error("unload", "give one model NAME");
  hetero_core_t* core = NULL;
  int rc = connect_core(&core);
  if (rc == CLI_OK && hetero_core_unload_model(core, args.operands[0])) rc = cli_call_failed("cannot unload the model");
  hetero_core_release(core);
  return rc;
}

static const cli_command kReload = {
    "reload", "[--connect SOCKET]",
    "Makes heterod re-read its config, as SIGHUP does, and waits until models\n"
    "added or changed are ready (what systemd's ExecReload= runs).\n",
    NULL, NULL,
};

int cmd_reload(int argc, char** argv) {
  daemon_args args;
  const int parsed = parse(&kReload, argc, argv, 0, &args);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  hetero_core_t* core = NULL;
  int rc = connect_core(&core);
  if (rc == CLI_OK && hetero_core_reload(core)) rc = cli_call_failed("reload failed");
  hetero_core_release(core);
  return rc;
}
