/* hetero run: one inference of a model on given or random inputs, with the
 * outputs summarised and optionally written as .npy files. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { OPT_OUTPUT_DIR = CLI_OPT_COMMAND, OPT_OUTPUT };

static const cli_opt kOptions[] = {
    CLI_OPT_ENTRY_DEVICE,
    CLI_OPT_ENTRY_POLICY,
    CLI_OPT_ENTRY_CONFIG,
    CLI_OPT_ENTRY_INPUT,
    CLI_OPT_ENTRY_SHAPE,
    {OPT_OUTPUT_DIR, 0, "output-dir", "DIR",
     "write each output as DIR/NAME.npy, NAME its name\n(characters other than A-Z a-z 0-9 . _ - as _)"},
    {OPT_OUTPUT, 0, "output", "NAME=FILE",
     "write output NAME as the .npy FILE (repeatable). The\nfile is replaced whole, after the inputs were read,\n"
     "so it may be the file an --input of this run names"},
    CLI_OPT_ENTRY_CACHE_DIR,
    CLI_OPT_ENTRY_DRIVER_PATH,
    CLI_OPT_ENTRY_QUIET,
    {0},
};

static const cli_command kCommand = {
    "run",
    "MODEL [options]",
    "Runs one inference. MODEL is an ONNX file, or a compiled blob (which is\n"
    "imported instead of compiled); with --connect [SOCKET], the name of a\n"
    "model heterod serves. Inputs without --input get seeded random values:\n"
    "floats in [0, 1), integers in [0, 8), bools 0/1.\n",
    kOptions,
    "A streaming model (a recurrent state output fed back as the next call's\n"
    "state input) runs chunk by chunk from a shell loop, its state carried in\n"
    ".npy files that start as zeros, as for Silero VAD (h, c -> hn, cn):\n"
    "\n"
    "  for chunk in chunks/*.npy; do\n"
    "    hetero run vad.onnx --input input=$chunk --input sr=sr.npy \\\n"
    "        --input h=h.npy --input c=c.npy --output hn=h.npy --output cn=c.npy \\\n"
    "        --output output=\"prob-${chunk##*/}\"\n"
    "  done\n"
    "\n"
    "With --cache-dir, only the first call compiles the model.\n",
};

/* The first few values, so that a run without --output-dir shows something. */
static void print_preview(hetero_tensor_t* t, hetero_dtype dtype) {
  void* data = NULL;
  size_t count = 0;
  if (hetero_tensor_get_data(t, &data) || hetero_tensor_get_element_count(t, &count) || !data) return;
  const size_t shown = count < 8 ? count : 8;
  fputs("    values:", stdout);
  for (size_t i = 0; i < shown; ++i) {
    switch (dtype) {
      case HETERO_DTYPE_FLOAT32: printf(" %.6g", (double)((const float*)data)[i]); break;
      case HETERO_DTYPE_FLOAT64: printf(" %.6g", ((const double*)data)[i]); break;
      case HETERO_DTYPE_INT64: printf(" %lld", (long long)((const int64_t*)data)[i]); break;
      case HETERO_DTYPE_INT32: printf(" %d", (int)((const int32_t*)data)[i]); break;
      case HETERO_DTYPE_INT8: printf(" %d", (int)((const int8_t*)data)[i]); break;
      case HETERO_DTYPE_UINT8:
      case HETERO_DTYPE_BOOL: printf(" %u", (unsigned)((const uint8_t*)data)[i]); break;
      default: fputs(" (not shown for this type)\n", stdout); return;
    }
  }
  puts(count > shown ? " ..." : "");
}

/* The files of --output NAME=FILE: NULL when output `name` has none. */
static const char* output_file(const cli_strings* outputs, const char* name) {
  const size_t len = strlen(name);
  for (size_t k = 0; k < outputs->count; ++k) {
    const char* eq = strchr(outputs->items[k], '=');
    if ((size_t)(eq - outputs->items[k]) == len && strncmp(outputs->items[k], name, len) == 0) return eq + 1;
  }
  return NULL;
}

/* Every --output names an output of the model, once. */
static int check_output_names(const cli_session* s, const cli_strings* outputs) {
  size_t count = 0;
  if (hetero_compiled_model_get_output_count(s->compiled, &count))
    return cli_call_failed("cannot list the model's outputs");
  for (size_t k = 0; k < outputs->count; ++k) {
    const char* arg = outputs->items[k];
    const char* eq = strchr(arg, '=');
    bool found = false;
    for (size_t j = 0; j < count && !found; ++j) {
      const char* name = NULL;
      if (hetero_compiled_model_get_output_name(s->compiled, &name, j)) return cli_call_failed("cannot list outputs");
      found = strlen(name) == (size_t)(eq - arg) && strncmp(name, arg, (size_t)(eq - arg)) == 0;
    }
    if (!found) {
      cli_error("--output '%s': the model has no output '%.*s'", arg, (int)(eq - arg), arg);
      fputs("the model's outputs are:", stderr);
      for (size_t j = 0; j < count; ++j) {
        const char* name = "?";
        hetero_compiled_model_get_output_name(s->compiled, &name, j);
        fprintf(stderr, " %s", name);
      }
      fputc('\n', stderr);
      return CLI_FAILED;
    }
    for (size_t j = 0; j < k; ++j) {
      const char* other = outputs->items[j];
      if (strchr(other, '=') - other == eq - arg && strncmp(other, arg, (size_t)(eq - arg)) == 0) {
        cli_error("--output '%s': output '%.*s' is given twice", arg, (int)(eq - arg), arg);
        return CLI_FAILED;
      }
    }
  }
  return CLI_OK;
}

/* Writes `t` (output `name`) to `path`, printing " -> path". */
static int write_output(hetero_tensor_t* t, const char* name, const char* path) {
  if (hetero_tensor_write_npy(t, path)) {
    putchar('\n');
    cli_error("cannot write output '%s' to %s: %s", name, path, hetero_last_error());
    return CLI_FAILED;
  }
  printf(" -> %s", path);
  return CLI_OK;
}

/* Output `name` as a file name: characters other than letters, digits, '.',
 * '_' and '-' become '_', and a leading '.' too (no hidden file, no ".."). */
static void file_stem(const char* name, char* out, size_t size) {
  size_t n = 0;
  for (const char* p = name; *p && n + 1 < size; ++p, ++n) {
    const unsigned char c = (unsigned char)*p;
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '-' || (c == '.' && n > 0);
    out[n] = plain ? (char)c : '_';
  }
  out[n] = '\0';
}

/* DIR/NAME.npy for output k (its name as a file stem); DIR/NAME_k.npy when
 * another output's name makes the same stem, DIR/output_k.npy for a name
 * with none. */
static void output_path(const cli_session* s, size_t count, size_t k, const char* dir, char* out, size_t size) {
  const char* name = "";
  hetero_compiled_model_get_output_name(s->compiled, &name, k);
  char stem[256], other[256];
  file_stem(name, stem, sizeof stem);
  bool clash = false;
  for (size_t j = 0; j < count && !clash; ++j) {
    const char* name_j = "";
    if (j == k || hetero_compiled_model_get_output_name(s->compiled, &name_j, j)) continue;
    file_stem(name_j, other, sizeof other);
    clash = strcmp(stem, other) == 0;
  }
  if (!*stem)
    snprintf(out, size, "%s/output_%zu.npy", dir, k);
  else if (clash)
    snprintf(out, size, "%s/%s_%zu.npy", dir, stem, k);
  else
    snprintf(out, size, "%s/%s.npy", dir, stem);
}

static int report_outputs(const cli_session* s, hetero_infer_request_t* request, const char* dir,
                          const cli_strings* outputs) {
  size_t count = 0;
  if (hetero_compiled_model_get_output_count(s->compiled, &count))
    return cli_call_failed("cannot list the model's outputs");
  for (size_t k = 0; k < count; ++k) {
    const char* name = NULL;
    hetero_tensor_t* t = NULL;
    if (hetero_compiled_model_get_output_name(s->compiled, &name, k) ||
        hetero_infer_request_get_output(request, &t, k))
      return cli_call_failed("cannot get an output");
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    const int64_t* dims = NULL;
    size_t rank = 0;
    char shape[256];
    if (hetero_tensor_get_dtype(t, &dtype) || hetero_tensor_get_shape(t, &dims, &rank)) {
      hetero_tensor_release(t);
      return cli_call_failed("cannot read an output");
    }
    printf("output %zu '%s': %s %s", k, name, hetero_dtype_name(dtype),
           cli_format_dims(dims, (int64_t)rank, shape, sizeof shape));
    int rc = CLI_OK;
    if (dir) {
      char path[4400];
      output_path(s, count, k, dir, path, sizeof path);
      rc = write_output(t, name, path);
    }
    const char* file = output_file(outputs, name);
    if (rc == CLI_OK && file) rc = write_output(t, name, file);
    if (rc != CLI_OK) {
      hetero_tensor_release(t);
      return rc;
    }
    putchar('\n');
    print_preview(t, dtype);
    hetero_tensor_release(t);
  }
  return CLI_OK;
}

static void print_inputs(const cli_session* s) {
  for (size_t k = 0; k < s->input_count; ++k) {
    const char* name = "?";
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    const int64_t* dims = NULL;
    size_t rank = 0;
    char shape[256];
    hetero_compiled_model_get_input_name(s->compiled, &name, k);
    hetero_tensor_get_dtype(s->inputs[k], &dtype);
    hetero_tensor_get_shape(s->inputs[k], &dims, &rank);
    printf("input %zu '%s': %s %s (%s)\n", k, name, hetero_dtype_name(dtype),
           cli_format_dims(dims, (int64_t)rank, shape, sizeof shape), s->input_random[k] ? "random" : "from file");
  }
}

static int run(const cli_model_options* o, const char* dir, const cli_strings* outputs) {
  if (dir && mkdir(dir, 0777) != 0 && errno != EEXIST) {
    cli_error("cannot create the output directory %s: %s", dir, strerror(errno));
    return CLI_FAILED;
  }
  cli_session s;
  int rc = cli_session_open(&s, o, "run");
  if (rc != CLI_OK) return rc;
  if ((rc = check_output_names(&s, outputs)) != CLI_OK) {
    cli_session_close(&s);
    return rc;
  }
  char device[512];
  printf("model %s: %s for %s in %.1f ms\n", o->model, cli_session_verb(&s),
         cli_describe_device(s.compiled, device, sizeof device), s.load_seconds * 1e3);
  print_inputs(&s);

  hetero_infer_request_t* request = NULL;
  if (hetero_infer_request_create(&request, s.compiled)) {
    rc = cli_call_failed("cannot create an infer request");
  } else if ((rc = cli_session_bind(&s, request)) == CLI_OK) {
    const double start = cli_now();
    if (hetero_infer_request_infer(request)) {
      rc = cli_call_failed("inference failed");
    } else {
      printf("inference: %.3f ms\n", (cli_now() - start) * 1e3);
      rc = report_outputs(&s, request, dir, outputs);
    }
  }
  hetero_infer_request_release(request);
  cli_session_close(&s);
  return rc;
}

typedef struct run_args {
  cli_model_options o;
  const char* dir;
  cli_strings outputs;
} run_args;

static int take(void* ctx, int id, const char* v) {
  run_args* a = ctx;
  if (id == OPT_OUTPUT_DIR) {
    a->dir = v;
  } else if (id == OPT_OUTPUT) {
    const char* eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return cli_usage_error("run", "--output '%s' is not NAME=FILE", v);
    if (!cli_strings_push(&a->outputs, v)) return CLI_FAILED;
  } else {
    return cli_model_option_apply(&a->o, id, v, "run");
  }
  return CLI_OK;
}

int cmd_run(int argc, char** argv) {
  run_args a;
  memset(&a, 0, sizeof a);
  a.o.device = "CPU";
  int rc = cli_parse(&kCommand, argc, argv, take, &a);
  if (rc == CLI_OK && !a.o.model) rc = cli_usage_error("run", "no MODEL given");
  if (rc == CLI_OK) rc = run(&a.o, a.dir, &a.outputs);
  cli_model_options_free(&a.o);
  cli_strings_free(&a.outputs);
  return rc == CLI_HELP ? CLI_OK : rc;
}
