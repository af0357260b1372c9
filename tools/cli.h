/* The hetero command-line tool: what its commands share. Written against the
 * public C ABI only (hetero/hetero.h), as any other client of libhetero.
 *
 * Exit status: 0 on success, 1 when something failed, 2 for a usage error.
 */
#ifndef HETERO_TOOLS_CLI_H
#define HETERO_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "hetero/hetero.h"

#define CLI_OK 0
#define CLI_FAILED 1
#define CLI_USAGE 2

/* The daemon socket of `hetero COMMAND --connect SOCKET`, or NULL: commands
 * then run through heterod (hetero_core_connect) instead of in process. */
extern const char* cli_connect;

/* Where the installed heterod listens (systemd/heterod.socket). */
#define CLI_INSTALLED_SOCKET "/run/heterod/heterod.sock"
/* The socket of a bare --connect and of the daemon's own commands without
 * one: $HETEROD_SOCKET, else CLI_INSTALLED_SOCKET. */
const char* cli_default_socket(void);

/* "hetero: warning: <printf text>" on stderr: an option that has no effect. */
void cli_warning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* A core: connected to cli_connect when set, else local with --driver-path
 * `driver_path` (may be NULL). Prints why and returns CLI_FAILED on failure. */
int cli_core_open(hetero_core_t** core, const char* driver_path);

/* ---- Messages (cli_util.c) ----------------------------------------------- */

/* "hetero: error: <printf text>" on stderr. */
void cli_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hetero: error: <what>: <hetero_last_error()>" for a failed call; returns
 * CLI_FAILED so that callers can `return cli_call_failed(...)`. */
int cli_call_failed(const char* what);
/* A usage error for `command` (NULL: of hetero itself): the message, then
 * a pointer to --help; returns CLI_USAGE. */
int cli_usage_error(const char* command, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Options (cli_options.c) --------------------------------------------- */

/* One option of a command. `id` is what the command's handler switches on
 * (the model options below are shared: cli_model_option_apply); `arg` names
 * its value (NULL: a flag); `help` is its help, lines joined by '\n'. */
typedef struct cli_opt {
  int id;
  char short_name; /* 'o' for -o, or 0 */
  const char* name; /* "device" for --device */
  const char* arg;
  const char* help;
} cli_opt;

/* A command: its usage line, the text before its options, the options
 * (ending with an all-zero entry) and the text after them. Parsing and
 * --help both read it. */
typedef struct cli_command {
  const char* name;
  const char* usage; /* after "usage: hetero NAME " */
  const char* about;
  const cli_opt* options;
  const char* epilog;
} cli_command;

/* The handler's id for an operand (a MODEL, a NAME). */
#define CLI_OPERAND 0
/* cli_parse's result after printing --help: the command then exits 0. */
#define CLI_HELP 3

/* Called for each option (value NULL for a flag) and operand, in order;
 * returns CLI_OK to go on, else the command's exit status. */
typedef int (*cli_handler)(void* ctx, int id, const char* value);

/* Parses argv[1..] with getopt_long: options anywhere, --opt V or
 * --opt=V, unique abbreviations, "--" before operands that start with '-'.
 * Unknown or ambiguous options and missing values are usage errors naming
 * them; -h/--help prints the help and returns CLI_HELP. */
int cli_parse(const cli_command* command, int argc, char** argv, cli_handler handle, void* ctx);
void cli_print_help(const cli_command* command, FILE* out);

/* A growable list of strings; `items` is NULL-free. */
typedef struct cli_strings {
  const char** items;
  size_t count, capacity;
} cli_strings;
bool cli_strings_push(cli_strings* list, const char* item);
void cli_strings_free(cli_strings* list);

/* A non-negative integer or a positive number of seconds; false (after a
 * usage error naming `option`) when `text` is not one. */
bool cli_parse_count(const char* command, const char* option, const char* text, long* out);
bool cli_parse_seconds(const char* command, const char* option, const char* text, double* out);

/* "1x3x224x224" → dims (malloc'ed, caller frees) and rank; "scalar" is rank
 * 0. False when malformed. */
bool cli_parse_dims(const char* text, int64_t** out_dims, size_t* out_rank);
/* "1x3x224x224", "?" for a dynamic dim, "scalar" for rank 0, into buf. */
const char* cli_format_dims(const int64_t* dims, int64_t rank, char* buf, size_t size);

/* ---- JSON, written with jansson (cli_util.c) ------------------------------ */

/* `text` as a JSON string; bytes that are not UTF-8 (a path, a driver's
 * message) become U+FFFD. NULL only when out of memory. */
json_t* cli_json_text(const char* text);
/* Prints `document` on one line to stdout and releases it. A NULL document
 * (an allocation that failed on the way) prints why and returns false. */
bool cli_json_print(json_t* document);

/* Monotonic clock in seconds. */
double cli_now(void);

/* ---- Progress on a terminal (cli_progress.c) ----------------------------- */

/* Draws `core`'s compile progress as one updating line on stderr (stage,
 * done/total, percent, seconds; at most 10 redraws a second), when stderr is
 * a terminal and `quiet` is false; does nothing otherwise. */
void cli_progress_attach(hetero_core_t* core, bool quiet);
/* A stage of the CLI's own work (writing the blob), drawn the same way. */
void cli_progress_report(const char* stage, uint64_t done, uint64_t total);
/* Clears the line, if one is drawn, before other output (results, errors);
 * the next report draws it again. */
void cli_progress_clear(void);

/* ---- A loaded model (cli_session.c) --------------------------------------- */

/* Options shared by run and bench. */
typedef struct cli_model_options {
  const char* model;       /* an ONNX file or a blob; with --connect, a served model's name */
  const char* device;      /* default "CPU" */
  bool device_given;       /* --device was given (a blob otherwise keeps its own) */
  const char* driver_path; /* NULL: the default search path */
  const char* policy;      /* NULL, or a HETERO affinity policy (YAML) */
  const char* cache_dir;   /* NULL, or a directory of compiled blobs */
  cli_strings config;      /* K=V; DRIVER.key to the core, key and DEVICE:key to compile */
  cli_strings shapes;      /* NAME=1x3x224x224 */
  cli_strings inputs;      /* [NAME=]FILE */
  hetero_core_t* core;     /* NULL, or a core of another session to use rather than one of
                              the session's own (in process, with the same driver settings) */
  bool quiet;              /* --quiet: no progress line on a terminal */
  bool ports_only;         /* the session makes no input tensors (info reads the ports alone) */
} cli_model_options;

/* A compiled (or imported) model with one input tensor per model input,
 * read from files or filled with seeded random values. */
typedef struct cli_session {
  hetero_core_t* core;
  hetero_compiled_model_t* compiled;
  bool imported; /* the model file was a blob */
  bool served;   /* a model of the daemon (--connect), used by name */
  bool shared_core; /* `core` is options->core: not released with the session */
  double load_seconds; /* reading plus compiling, or importing */
  size_t input_count;
  hetero_tensor_t** inputs;
  bool* input_random; /* per input: random data rather than a file */
} cli_session;

/* Loads everything; on failure prints why, frees what it made and returns
 * CLI_FAILED (or CLI_USAGE for a malformed option). */
int cli_session_open(cli_session* session, const cli_model_options* options, const char* command);
void cli_session_close(cli_session* session);
/* "compiled", "imported" (a blob), "imported from the cache" (--cache-dir
 * had it), or "opened" (a daemon's model). */
const char* cli_session_verb(const cli_session* session);
/* Binds the session's inputs to `request`; prints why and returns CLI_FAILED
 * on failure. */
int cli_session_bind(const cli_session* session, hetero_infer_request_t* request);

/* "HETERO:CPU.1,CPU (3 submodels on CPU.1, CPU)" for a HETERO model, the
 * device alone otherwise; into buf. */
const char* cli_describe_device(const hetero_compiled_model_t* compiled, char* buf, size_t size);

/* A model read but not compiled, for commands that plan (partition): the
 * core, the model (dynamic dims fixed by --shape) and the compile config
 * (--config keys without a driver prefix, --policy). */
typedef struct cli_planning {
  hetero_core_t* core;
  hetero_model_t* model;
  cli_strings keys, values;
} cli_planning;
int cli_planning_open(cli_planning* planning, const cli_model_options* options, const char* command);
void cli_planning_close(cli_planning* planning);

/* Writes `size` bytes to `path` through a temporary file and a rename, so
 * that the file is complete or absent. False (after printing why) on error. */
bool cli_write_file(const char* path, const void* data, size_t size);

/* The options run, bench, info, partition and compile share: their ids,
 * their table entries (a command may write its own help for one), and
 * their effect on `options`. A command's own option ids start at
 * CLI_OPT_COMMAND. */
enum {
  CLI_OPT_DEVICE = 1,
  CLI_OPT_POLICY,
  CLI_OPT_CONFIG,
  CLI_OPT_SHAPE,
  CLI_OPT_INPUT,
  CLI_OPT_DRIVER_PATH,
  CLI_OPT_CACHE_DIR,
  CLI_OPT_QUIET,
  CLI_OPT_COMMAND = 32
};
#define CLI_OPT_ENTRY_DEVICE                                                                            \
  {CLI_OPT_DEVICE, 0, "device", "D",                                                                    \
   "device string (default CPU), or HETERO:A,B to split\nthe model across devices in that priority order"}
#define CLI_OPT_ENTRY_POLICY {CLI_OPT_POLICY, 0, "policy", "FILE", "a HETERO affinity policy (YAML)"}
#define CLI_OPT_ENTRY_CONFIG                                                                            \
  {CLI_OPT_CONFIG, 0, "config", "K=V",                                                                  \
   "a setting: DRIVER.key (CPU.num_threads) goes to the\ndriver, a plain key (num_threads) to compilation,\n" \
   "DEVICE:key (CPU.1:ops=Conv) to one HETERO device"}
#define CLI_OPT_ENTRY_SHAPE \
  {CLI_OPT_SHAPE, 0, "shape", "NAME=DIMS", "the shape of an input with dynamic dims, as in\ndata=1x3x224x224"}
#define CLI_OPT_ENTRY_INPUT                                                                                    \
  {CLI_OPT_INPUT, 0, "input", "[NAME=]FILE",                                                                   \
   "an input from a .npy or ONNX TensorProto .pb file;\nwithout NAME, the k-th --input is the k-th input.\n" \
   "Its shape fills the model's dynamic dims"}
#define CLI_OPT_ENTRY_DRIVER_PATH \
  {CLI_OPT_DRIVER_PATH, 0, "driver-path", "DIRS", "colon-separated directories searched for drivers"}
#define CLI_OPT_ENTRY_CACHE_DIR                                                                              \
  {CLI_OPT_CACHE_DIR, 0, "cache-dir", "DIR",                                                                 \
   "import the compiled model from DIR when it is there,\nelse compile it and keep it there for next time"}
#define CLI_OPT_ENTRY_QUIET \
  {CLI_OPT_QUIET, 0, "quiet", NULL, "no progress line while compiling (drawn on stderr\nwhen it is a terminal)"}

/* Applies model option `id` (below CLI_OPT_COMMAND) with `value`, or takes
 * an operand (CLI_OPERAND) as the MODEL: CLI_OK, or a usage error (printed)
 * for a malformed value or a second MODEL. */
int cli_model_option_apply(cli_model_options* options, int id, const char* value, const char* command);
void cli_model_options_free(cli_model_options* options);

/* ---- Commands ------------------------------------------------------------- */

int cmd_devices(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_stream(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_partition(int argc, char** argv);
int cmd_compile(int argc, char** argv);
int cmd_blob(int argc, char** argv);
/* Commands of a daemon connection only (cmd_daemon.c). */
int cmd_models(int argc, char** argv);
int cmd_stats(int argc, char** argv);
int cmd_load(int argc, char** argv);
int cmd_unload(int argc, char** argv);
int cmd_reload(int argc, char** argv);

#endif /* HETERO_TOOLS_CLI_H */
