/* hetero compile: precompile a model into a blob, offline (for a fleet of
 * identical boxes), and hetero blob info: what a blob says of itself. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

enum { OPT_OUTPUT = CLI_OPT_COMMAND, OPT_JSON };

static const cli_opt kCompileOptions[] = {
    {CLI_OPT_DEVICE, 0, "device", "D", "device string (default CPU)"},
    {OPT_OUTPUT, 'o', "output", "BLOB", "where to write the blob"},
    {CLI_OPT_CONFIG, 0, "config", "K=V", "DRIVER.key to the driver, key to compilation"},
    {CLI_OPT_POLICY, 0, "policy", "FILE", "a HETERO affinity policy (YAML)"},
    CLI_OPT_ENTRY_SHAPE,
    CLI_OPT_ENTRY_DRIVER_PATH,
    {CLI_OPT_QUIET, 0, "quiet", NULL, "no progress line (drawn on stderr when it is a terminal)"},
    {0},
};

static const cli_command kCompile = {
    "compile",
    "MODEL --device D -o BLOB [options]",
    "Compiles MODEL (ONNX) for device D and writes the compiled blob to BLOB\n"
    "(complete or not at all). `hetero run BLOB`, `hetero bench BLOB` and the C\n"
    "ABI import it instead of compiling; the blob names its device, driver and\n"
    "library versions, config and source model, and is refused elsewhere.\n",
    kCompileOptions,
    NULL,
};

static const cli_opt kBlobOptions[] = {
    {OPT_JSON, 0, "json", NULL, "print one JSON object instead of text"},
    {0},
};

static const cli_command kBlob = {
    "blob",
    "info [--json] BLOB",
    "Prints what a compiled blob says of itself: format, library and driver\n"
    "versions, device, compile config, source model hash and sections.\n",
    kBlobOptions,
    NULL,
};

/* The blob written to `path`, shown as a stage of the progress line (the
 * library reports compiling; writing is the CLI's own step). */
static bool export_blob(const hetero_compiled_model_t* compiled, const char* path) {
  cli_progress_report("writing blob", 0, 1);
  const bool ok = hetero_compiled_model_export_file(compiled, path) == HETERO_OK;
  if (ok) cli_progress_report("writing blob", 1, 1);
  cli_progress_clear();
  return ok;
}

typedef struct compile_args {
  cli_model_options o;
  const char* output;
} compile_args;

static int take_compile(void* ctx, int id, const char* v) {
  compile_args* a = ctx;
  if (id == OPT_OUTPUT) {
    a->output = v;
  } else {
    return cli_model_option_apply(&a->o, id, v, "compile");
  }
  return CLI_OK;
}

int cmd_compile(int argc, char** argv) {
  compile_args a;
  memset(&a, 0, sizeof a);
  a.o.device = "CPU";
  int rc = cli_parse(&kCompile, argc, argv, take_compile, &a);
  if (rc == CLI_OK && !a.o.model) rc = cli_usage_error("compile", "no MODEL given");
  if (rc == CLI_OK && !a.output) rc = cli_usage_error("compile", "no output given (-o BLOB)");
  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  if (rc == CLI_OK && hetero_model_file_format(&format, a.o.model) == HETERO_OK &&
      format == HETERO_MODEL_FORMAT_PIPELINE) {
    cli_error("%s is a pipeline, which is not exported as a blob: compile each of its models, or give heterod a "
              "cache_dir, which keeps their blobs (docs/streams.md)", a.o.model);
    rc = CLI_FAILED;
  }
  cli_planning p;
  if (rc == CLI_OK) rc = cli_planning_open(&p, &a.o, "compile");
  if (rc == CLI_OK) {
    hetero_compiled_model_t* compiled = NULL;
    const double start = cli_now();
    if (hetero_compile(&compiled, p.core, p.model, a.o.device, p.keys.items, p.values.items, p.keys.count)) {
      char what[512];
      snprintf(what, sizeof what, "cannot compile the model for %s", a.o.device);
      rc = cli_call_failed(what);
    } else if (!export_blob(compiled, a.output)) {
      rc = cli_call_failed("cannot write the blob");
    } else {
      char device[512];
      printf("compiled %s for %s in %.1f ms: %s\n", a.o.model, cli_describe_device(compiled, device, sizeof device),
             (cli_now() - start) * 1e3, a.output);
    }
    hetero_compiled_model_release(compiled);
    cli_planning_close(&p);
  }
  cli_model_options_free(&a.o);
  return rc == CLI_HELP ? CLI_OK : rc;
}

typedef struct blob_args {
  int operands;
  const char* path;
  bool json;
} blob_args;

static int take_blob(void* ctx, int id, const char* v) {
  blob_args* a = ctx;
  if (id == OPT_JSON) {
    a->json = true;
  } else if (a->operands++ == 0) {
    if (strcmp(v, "info") != 0) return cli_usage_error("blob", "unknown subcommand '%s' (expected: blob info BLOB)", v);
  } else if (a->path) {
    return cli_usage_error("blob", "unexpected argument '%s' (the blob is %s)", v, a->path);
  } else {
    a->path = v;
  }
  return CLI_OK;
}

int cmd_blob(int argc, char** argv) {
  blob_args args = {0, NULL, false};
  const int parsed = cli_parse(&kBlob, argc, argv, take_blob, &args);
  if (parsed != CLI_OK) return parsed == CLI_HELP ? CLI_OK : parsed;
  if (!args.path) return cli_usage_error("blob", "expected: hetero blob info [--json] BLOB");
  const char* path = args.path;
  const bool json = args.json;
  /* Mapped, not read: the blob's checksums cover all of it, and a mapping
   * costs no memory for a large one. */
  /* O_NONBLOCK and the S_ISREG check: a FIFO given here is refused at once
   * rather than waited on (as core/regular_file.h does for the library). */
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    cli_error("cannot open %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return CLI_FAILED;
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "a socket";
    cli_error("%s is %s, not a regular file", path, kind);
    close(fd);
    return CLI_FAILED;
  }
  const size_t size = (size_t)st.st_size;
  void* data = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (data == MAP_FAILED) {
    cli_error("cannot read %s: %s", path, strerror(errno));
    return CLI_FAILED;
  }
  char* text = NULL;
  int rc = CLI_OK;
  if (json ? hetero_blob_describe_json(&text, data, size) : hetero_blob_describe(&text, data, size)) {
    char what[512];
    snprintf(what, sizeof what, "%s is not a valid blob", path);
    rc = cli_call_failed(what);
  } else {
    fputs(text, stdout);
  }
  hetero_free(text);
  if (data) munmap(data, size);
  return rc;
}
