/* hetero: the heterod command-line tool. Each command lives in cmd_*.c; this
 * file only dispatches and answers --version and --help. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char kHelp[] =
    "usage: hetero [--version] [--help] COMMAND [ARGS] [--connect[=SOCKET]]\n"
    "\n"
    "Commands:\n"
    "  devices   list devices, drivers and driver modules that failed to load\n"
    "  info      describe a model: inputs, outputs, opsets, what each device runs\n"
    "  run       run one inference of a model and write its outputs\n"
    "  stream    stream a WAV file through a stateful model heterod serves\n"
    "  bench     measure a model's latency and throughput\n"
    "  partition show how a HETERO device splits a model across devices\n"
    "  compile   precompile a model into a blob that run, bench and the C ABI import\n"
    "  blob      describe a compiled blob (blob info [--json] BLOB)\n"
    "\n"
    "With --connect SOCKET (anywhere on the line), devices, info, run and bench\n"
    "go through the heterod daemon listening there (info, run and bench then take\n"
    "a served model's name). A bare --connect, and the commands below without\n"
    "one, use $HETEROD_SOCKET, else the installed daemon's\n"
    CLI_INSTALLED_SOCKET ".\n"
    "These commands manage the daemon:\n"
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
    {"info", cmd_info},
    {"run", cmd_run},
    {"stream", cmd_stream},
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

const char* cli_default_socket(void) {
  const char* env = getenv("HETEROD_SOCKET");
  return env && *env ? env : CLI_INSTALLED_SOCKET;
}

static bool is_command(const char* word) {
  for (size_t k = 0; k < sizeof kCommands / sizeof kCommands[0]; ++k)
    if (strcmp(word, kCommands[k].name) == 0) return true;
  return false;
}

/* Takes --connect out of argv wherever it stands (before or after the
 * command, up to a "--"): "--connect=SOCKET", "--connect SOCKET", or a bare
 * "--connect" (followed by a command, an option or nothing) for the default
 * socket. Returns false (after a usage error) when it is given twice. */
static bool take_connect(int* argc, char** argv) {
  for (int i = 1; i < *argc && strcmp(argv[i], "--") != 0; ++i) {
    const char* arg = argv[i];
    if (strncmp(arg, "--connect", 9) != 0 || (arg[9] != '\0' && arg[9] != '=')) continue;
    if (cli_connect) {
      cli_usage_error(NULL, "--connect is given twice");
      return false;
    }
    int taken = 1;
    if (arg[9] == '=') {
      cli_connect = arg + 10;
    } else if (i + 1 < *argc && argv[i + 1][0] != '-' && !is_command(argv[i + 1])) {
      cli_connect = argv[i + 1];
      taken = 2;
    } else {
      cli_connect = cli_default_socket();
    }
    if (!*cli_connect) {
      cli_usage_error(NULL, "--connect= needs a socket path");
      return false;
    }
    memmove(argv + i, argv + i + taken, (size_t)(*argc - i - taken + 1) * sizeof *argv);
    *argc -= taken;
    --i;
  }
  return true;
}

int main(int argc, char** argv) {
  if (!take_connect(&argc, argv)) return CLI_USAGE;
  if (argc < 2) {
    fputs(kHelp, stderr);
    return CLI_USAGE;
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
