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

static const char kCompileHelp[] =
    "usage: hetero compile MODEL --device D -o BLOB [options]\n"
    "\n"
    "Compiles MODEL (ONNX) for device D and writes the compiled blob to BLOB\n"
    "(complete or not at all). `hetero run BLOB`, `hetero bench BLOB` and the C\n"
    "ABI import it instead of compiling; the blob names its device, driver and\n"
    "library versions, config and source model, and is refused elsewhere.\n"
    "\n"
    "  --device D             device string (default CPU)\n"
    "  -o, --output BLOB      where to write the blob\n"
    "  --config K=V           DRIVER.key to the driver, key to compilation\n"
    "  --shape NAME=DIMS      the shape of an input with dynamic dims\n"
    "  --driver-path DIRS     colon-separated directories searched for drivers\n"
    "  --quiet                no progress line (drawn on stderr when it is a terminal)\n";

static const char kBlobHelp[] =
    "usage: hetero blob info [--json] BLOB\n"
    "\n"
    "Prints what a compiled blob says of itself: format, library and driver\n"
    "versions, device, compile config, source model hash and sections.\n"
    "\n"
    "  --json                 print one JSON object instead of text\n";

/* The blob written to `path`, shown as a stage of the progress line (the
 * library reports compiling; writing is the CLI's own step). */
static bool export_blob(const hetero_compiled_model_t* compiled, const char* path) {
  cli_progress_report("writing blob", 0, 1);
  const bool ok = hetero_compiled_model_export_file(compiled, path) == HETERO_OK;
  if (ok) cli_progress_report("writing blob", 1, 1);
  cli_progress_clear();
  return ok;
}

int cmd_compile(int argc, char** argv) {
  cli_model_options o;
  memset(&o, 0, sizeof o);
  o.device = "CPU";
  const char* output = NULL;
  int rc = CLI_OK;
  for (int i = 1; i < argc && rc == CLI_OK; ++i) {
    const char* a = argv[i];
    const char* v = NULL;
    int r;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kCompileHelp, stdout);
      cli_model_options_free(&o);
      return CLI_OK;
    } else if ((r = cli_option(argc, argv, &i, "compile", "-o", &v)) != 0 ||
               (r = cli_option(argc, argv, &i, "compile", "--output", &v)) != 0) {
      if (r < 0) rc = CLI_USAGE;
      else output = v;
    } else if ((r = cli_model_option(argc, argv, &i, "compile", &o)) != 0) {
      if (r < 0) rc = CLI_USAGE;
      else if (o.inputs.count) rc = cli_usage_error("compile", "--input is for run and bench");
    } else if (a[0] == '-') {
      rc = cli_usage_error("compile", "unknown option '%s'", a);
    } else if (o.model) {
      rc = cli_usage_error("compile", "more than one MODEL ('%s' and '%s')", o.model, a);
    } else {
      o.model = a;
    }
  }
  if (rc == CLI_OK && !o.model) rc = cli_usage_error("compile", "no MODEL given");
  if (rc == CLI_OK && !output) rc = cli_usage_error("compile", "no output given (-o BLOB)");

  cli_planning p;
  if (rc == CLI_OK) rc = cli_planning_open(&p, &o, "compile");
  if (rc == CLI_OK) {
    hetero_compiled_model_t* compiled = NULL;
    const double start = cli_now();
    if (hetero_compile(&compiled, p.core, p.model, o.device, p.keys.items, p.values.items, p.keys.count)) {
      char what[512];
      snprintf(what, sizeof what, "cannot compile the model for %s", o.device);
      rc = cli_call_failed(what);
    } else if (!export_blob(compiled, output)) {
      rc = cli_call_failed("cannot write the blob");
    } else {
      char device[512];
      printf("compiled %s for %s in %.1f ms: %s\n", o.model, cli_describe_device(compiled, device, sizeof device),
             (cli_now() - start) * 1e3, output);
    }
    hetero_compiled_model_release(compiled);
    cli_planning_close(&p);
  }
  cli_model_options_free(&o);
  return rc;
}

int cmd_blob(int argc, char** argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(kBlobHelp, stdout);
    return CLI_OK;
  }
  bool json = false;
  const char* path = NULL;
  for (int i = 2; argc >= 2 && strcmp(argv[1], "info") == 0 && i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (path)
      return cli_usage_error("blob", "unexpected argument '%s' (the blob is %s)", argv[i], path);
    else
      path = argv[i];
  }
  if (!path) return cli_usage_error("blob", "expected: hetero blob info [--json] BLOB");
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
