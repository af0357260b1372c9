/* hetero: the heterod command-line tool. Each command lives in cmd_*.c; this
 * file only dispatches and answers --version and --help. */
#include <string.h>

#include "cli.h"

static const char kHelp[] =
    "usage: hetero [--version] [--help] [--connect SOCKET] COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  devices   list devices, drivers and driver modules that failed to load\n"
    "  run       run one inference of a model and write its outputs\n"
    "  bench     measure a model's latency and throughput\n"
    "  partition show how a HETERO device splits a model across devices\n"
    "  compile   precompile a model into a blob that run, bench and the C ABI import\n"
    "  blob      describe a compiled blob (blob info [--json] BLOB)\n"
    "\n"
    "With --connect SOCKET, devices, run and bench go through the heterod daemon\n"
    "listening there (run and bench then take a served model's name), and these\n"
    "commands manage it:\n"
    "  models    list the models it serves\n"
    "  stats     per-model requests, errors and latency (--json, --prometheus)\n"
    "  load      serve another model (load NAME PATH [--device D] [--config K=V])\n"
    "  unload    stop serving a model (unload NAME)\n"
    "  reload    re-read the daemon's config, as SIGHUP does, and wait for it\n"
    "\n"
    "'hetero COMMAND --help' describes a command.\n";

typedef struct command {
  const char* name;
  int (*run)(int argc, char** argv);
} command;

static const command kCommands[] = {
    {"devices", cmd_devices},
    {"run", cmd_run},
    {"bench", cmd_bench},
    {"partition", cmd_partition},
    {"compile", cmd_compile},
    {"blob", cmd_blob},
    {"models", cmd_models},
    {"stats", cmd_stats},
    {"load", cmd_load},
    {"unload", cmd_unload},
    {"reload", cmd_reload},
};

const char* cli_connect = NULL;

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kHelp, stderr);
    return CLI_USAGE;
  }
  if (strcmp(argv[1], "--connect") == 0 || strncmp(argv[1], "--connect=", 10) == 0) {
    const bool joined = argv[1][9] == '=';
    if (!joined && argc < 3) return cli_usage_error("hetero", "--connect needs a socket path");
    cli_connect = joined ? argv[1] + 10 : argv[2];
    argc -= joined ? 1 : 2;
    argv += joined ? 1 : 2;
    if (argc < 2) {
      fputs(kHelp, stderr);
      return CLI_USAGE;
    }
  }
  const char* name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    fputs(kHelp, stdout);
    return CLI_OK;
  }
  if (strcmp(name, "--version") == 0) {
    const uint32_t api = hetero_api_version();
    printf("hetero %s (C API %u.%u)\n", hetero_library_version(), api >> 16, api & 0xffffu);
    return CLI_OK;
  }
  for (size_t k = 0; k < sizeof kCommands / sizeof kCommands[0]; ++k)
    if (strcmp(name, kCommands[k].name) == 0) return kCommands[k].run(argc - 1, argv + 1);
  cli_error("unknown command '%s'", name);
  fputs(kHelp, stderr);
  return CLI_USAGE;
}
