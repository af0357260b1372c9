/* Loading a model for run and bench: the core, an ONNX model compiled (or a
 * blob imported) for the device, and one input tensor per model input.
 *
 * Input shapes: a model with dynamic dims cannot be compiled to static shapes
 * unless it is told them, so the shapes of --input files (and any --shape)
 * are passed when the model is read. The model is therefore read once to learn
 * its inputs, and a second time with those shapes when some are needed.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_model_option_apply(cli_model_options* o, int id, const char* v, const char* command) {
  switch (id) {
    case CLI_OPERAND:
      if (o->model) return cli_usage_error(command, "unexpected argument '%s' (the model is %s)", v, o->model);
      o->model = v;
      break;
    case CLI_OPT_DEVICE: o->device = v, o->device_given = true; break;
    case CLI_OPT_POLICY: o->policy = v; break;
    case CLI_OPT_DRIVER_PATH: o->driver_path = v; break;
    case CLI_OPT_CACHE_DIR: o->cache_dir = v; break;
    case CLI_OPT_QUIET: o->quiet = true; break;
    case CLI_OPT_CONFIG:
      if (!strchr(v, '=')) return cli_usage_error(command, "--config '%s' is not KEY=VALUE", v);
      if (!cli_strings_push(&o->config, v)) return CLI_FAILED;
      break;
    case CLI_OPT_SHAPE:
      if (!cli_strings_push(&o->shapes, v)) return CLI_FAILED;
      break;
    case CLI_OPT_INPUT:
      if (!cli_strings_push(&o->inputs, v)) return CLI_FAILED;
      break;
  }
  return CLI_OK;
}

void cli_model_options_free(cli_model_options* o) {
  cli_strings_free(&o->config);
  cli_strings_free(&o->shapes);
  cli_strings_free(&o->inputs);
}

/* Everything cli_session_open builds on the way, freed in one place. */
typedef struct loader {
  const cli_model_options* o;
  const char* command;
  /* --config split in two: DRIVER.key for the core, key for compile/import. */
  cli_strings core_keys, core_values, keys, values;
  /* --shape, parsed. */
  size_t shape_count;
  char** shape_names;
  int64_t** shape_dims;
  size_t* shape_ranks;
  /* Model input names (copies) and the tensor bound to each, if any. */
  size_t name_count;
  char** names;
  hetero_tensor_t** files;
  hetero_model_t* model;
} loader;

static void loader_free(loader* l) {
  cli_strings_free(&l->core_keys);
  cli_strings_free(&l->core_values);
  cli_strings_free(&l->keys);
  cli_strings_free(&l->values);
  for (size_t k = 0; k < l->shape_count; ++k) {
    free(l->shape_names[k]);
    free(l->shape_dims[k]);
  }
  free(l->shape_names);
  free(l->shape_dims);
  free(l->shape_ranks);
  for (size_t k = 0; k < l->name_count; ++k) {
    free(l->names[k]);
    hetero_tensor_release(l->files ? l->files[k] : NULL);
  }
  free(l->names);
  free(l->files);
  hetero_model_release(l->model);
}

/* Splits --config KEY=VALUE in place into the two key/value lists:
 * DRIVER.key to the core; key, and a HETERO device's DEVICE:key
 * (CPU.1:ops), to compilation. --policy is a compile key too. The strings
 * stay owned by argv. */
static int split_config(loader* l) {
  for (size_t k = 0; k < l->o->config.count; ++k) {
    char* kv = (char*)l->o->config.items[k];
    char* eq = strchr(kv, '=');
    *eq = '\0';
    const bool core = strchr(kv, '.') != NULL && strchr(kv, ':') == NULL;
    if (!cli_strings_push(core ? &l->core_keys : &l->keys, kv) ||
        !cli_strings_push(core ? &l->core_values : &l->values, eq + 1))
      return CLI_FAILED;
  }
  if (l->o->policy && (!cli_strings_push(&l->keys, "policy") || !cli_strings_push(&l->values, l->o->policy)))
    return CLI_FAILED;
  return CLI_OK;
}

int cli_core_open(hetero_core_t** core, const char* driver_path) {
  if (cli_connect) {
    if (hetero_core_connect(core, cli_connect)) {
      cli_error("%s", hetero_last_error()); /* it names the socket */
      if (strcmp(cli_connect, CLI_INSTALLED_SOCKET) == 0)
        fputs("Is heterod running (systemctl status heterod)? Another daemon's socket is given with --connect "
              "SOCKET or $HETEROD_SOCKET.\n",
              stderr);
      return CLI_FAILED;
    }
    return CLI_OK;
  }
  const char* keys[] = {"driver_path"};
  const char* values[] = {driver_path};
  if (hetero_core_create(core, keys, values, driver_path ? 1 : 0)) return cli_call_failed("cannot start the runtime");
  return CLI_OK;
}

/* The core, with --driver-path and the DRIVER.key settings; or the core
 * the options name, shared with another session. */
static int create_core(loader* l, hetero_core_t** core) {
  if (l->o->core) {
    *core = l->o->core;
    return CLI_OK;
  }
  if (cli_connect) return cli_core_open(core, NULL);
  if (l->o->driver_path && !cli_strings_push(&l->core_keys, "driver_path")) return CLI_FAILED;
  if (l->o->driver_path && !cli_strings_push(&l->core_values, l->o->driver_path)) return CLI_FAILED;
  if (l->o->cache_dir && (!cli_strings_push(&l->core_keys, "cache_dir") ||
                          !cli_strings_push(&l->core_values, l->o->cache_dir)))
    return CLI_FAILED;
  if (hetero_core_create(core, l->core_keys.items, l->core_values.items, l->core_keys.count))
    return cli_call_failed("cannot start the runtime");
  cli_progress_attach(*core, l->o->quiet);
  return CLI_OK;
}

static int parse_shapes(loader* l) {
  const size_t n = l->o->shapes.count;
  l->shape_names = calloc(n ? n : 1, sizeof *l->shape_names);
  l->shape_dims = calloc(n ? n : 1, sizeof *l->shape_dims);
  l->shape_ranks = calloc(n ? n : 1, sizeof *l->shape_ranks);
  if (!l->shape_names || !l->shape_dims || !l->shape_ranks) return cli_error("out of memory"), CLI_FAILED;
  for (size_t k = 0; k < n; ++k) {
    const char* text = l->o->shapes.items[k];
    const char* eq = strrchr(text, '=');
    if (!eq || eq == text || !cli_parse_dims(eq + 1, &l->shape_dims[k], &l->shape_ranks[k]))
      return cli_usage_error(l->command, "--shape '%s' is not NAME=DIMS, as in data=1x3x224x224", text);
    l->shape_names[k] = strndup(text, (size_t)(eq - text));
    l->shape_count = k + 1;
    if (!l->shape_names[k]) return cli_error("out of memory"), CLI_FAILED;
  }
  return CLI_OK;
}

static ptrdiff_t shape_index(const loader* l, const char* name) {
  for (size_t k = 0; k < l->shape_count; ++k)
    if (strcmp(l->shape_names[k], name) == 0) return (ptrdiff_t)k;
  return -1;
}

static ptrdiff_t name_index(const loader* l, const char* name, size_t len) {
  for (size_t k = 0; k < l->name_count; ++k)
    if (strlen(l->names[k]) == len && strncmp(l->names[k], name, len) == 0) return (ptrdiff_t)k;
  return -1;
}

static void print_names(const loader* l) {
  fputs("the model's inputs are:", stderr);
  for (size_t k = 0; k < l->name_count; ++k) fprintf(stderr, " %s", l->names[k]);
  fputc('\n', stderr);
}

/* Takes copies of the model's (or blob's) input names. */
static int take_names(loader* l, hetero_model_t* model, hetero_compiled_model_t* compiled) {
  size_t n = 0;
  if (model ? hetero_model_get_input_count(model, &n) : hetero_compiled_model_get_input_count(compiled, &n))
    return cli_call_failed("cannot list the model's inputs");
  l->names = calloc(n ? n : 1, sizeof *l->names);
  l->files = calloc(n ? n : 1, sizeof *l->files);
  if (!l->names || !l->files) return cli_error("out of memory"), CLI_FAILED;
  for (size_t k = 0; k < n; ++k) {
    const char* name = NULL;
    if (model ? hetero_model_get_input_name(model, &name, k) : hetero_compiled_model_get_input_name(compiled, &name, k))
      return cli_call_failed("cannot list the model's inputs");
    l->names[k] = strdup(name);
    l->name_count = k + 1;
    if (!l->names[k]) return cli_error("out of memory"), CLI_FAILED;
  }
  for (size_t k = 0; k < l->shape_count; ++k) {
    if (name_index(l, l->shape_names[k], strlen(l->shape_names[k])) < 0) {
      cli_error("--shape names input '%s', which the model does not have", l->shape_names[k]);
      print_names(l);
      return CLI_FAILED;
    }
  }
  return CLI_OK;
}

/* Reads the --input files: NAME=FILE binds by name (when NAME is an input),
 * a plain FILE binds to the next input in order. */
static int read_input_files(loader* l) {
  size_t positional = 0;
  for (size_t k = 0; k < l->o->inputs.count; ++k) {
    const char* arg = l->o->inputs.items[k];
    const char* eq = strchr(arg, '=');
    ptrdiff_t index = eq ? name_index(l, arg, (size_t)(eq - arg)) : -1;
    const char* path = index >= 0 ? eq + 1 : arg;
    if (index < 0) {
      if (eq && access(arg, F_OK) != 0) {
        cli_error("--input '%s': the model has no input '%.*s', and no file of that name exists", arg,
                  (int)(eq - arg), arg);
        print_names(l);
        return CLI_FAILED;
      }
      if (positional >= l->name_count) {
        cli_error("--input '%s': the model has only %zu input(s)", arg, l->name_count);
        return CLI_FAILED;
      }
      index = (ptrdiff_t)positional++;
    }
    if (l->files[index]) {
      cli_error("--input '%s': input '%s' is given twice", arg, l->names[index]);
      return CLI_FAILED;
    }
    if (hetero_tensor_read_file(&l->files[index], path)) {
      char what[512];
      snprintf(what, sizeof what, "cannot read input '%s'", l->names[index]);
      return cli_call_failed(what);
    }
  }
  return CLI_OK;
}

static bool has_dynamic_dims(hetero_model_t* model, size_t index) {
  const int64_t* dims = NULL;
  int64_t rank = -1;
  if (hetero_model_get_input_shape(model, &dims, &rank, index)) return true;
  for (int64_t d = 0; d < rank; ++d)
    if (dims[d] < 0) return true;
  return rank < 0;
}

/* Reads and compiles an ONNX model, passing --shape and the shapes of input
 * files that fill dynamic dims: the model is read first to match the files
 * to its inputs. */
static int compile_onnx(loader* l, cli_session* s) {
  if (hetero_model_read_file(&l->model, s->core, l->o->model, NULL, NULL, NULL, 0))
    return cli_call_failed("cannot read the model");
  int rc = take_names(l, l->model, NULL);
  if (rc == CLI_OK) rc = read_input_files(l);
  if (rc != CLI_OK) return rc;

  /* Shapes to pass: every --shape, then the file shapes of dynamic inputs. */
  const size_t max = l->shape_count + l->name_count;
  const char** names = calloc(max ? max : 1, sizeof *names);
  const int64_t** dims = calloc(max ? max : 1, sizeof *dims);
  size_t* ranks = calloc(max ? max : 1, sizeof *ranks);
  size_t n = 0;
  if (!names || !dims || !ranks) {
    rc = CLI_FAILED;
    cli_error("out of memory");
  }
  for (size_t k = 0; rc == CLI_OK && k < l->shape_count; ++k, ++n) {
    names[n] = l->shape_names[k];
    dims[n] = l->shape_dims[k];
    ranks[n] = l->shape_ranks[k];
  }
  for (size_t k = 0; rc == CLI_OK && k < l->name_count; ++k) {
    if (!l->files[k] || shape_index(l, l->names[k]) >= 0 || !has_dynamic_dims(l->model, k)) continue;
    if (hetero_tensor_get_shape(l->files[k], &dims[n], &ranks[n])) rc = cli_call_failed("cannot read a tensor shape");
    names[n++] = l->names[k];
  }
  if (rc == CLI_OK && n > 0) {
    hetero_model_release(l->model);
    l->model = NULL;
    if (hetero_model_read_file(&l->model, s->core, l->o->model, names, dims, ranks, n))
      rc = cli_call_failed("cannot read the model with the given input shapes");
  }
  free((void*)names);
  free((void*)dims);
  free(ranks);
  if (rc != CLI_OK) return rc;

  if (hetero_compile(&s->compiled, s->core, l->model, l->o->device, l->keys.items, l->values.items, l->keys.count)) {
    char what[512];
    snprintf(what, sizeof what, "cannot compile the model for %s", l->o->device);
    return cli_call_failed(what);
  }
  return CLI_OK;
}

/* A blob imported or an ONNX model compiled, in one call. A blob keeps its
 * own device unless --device names one. */
static int open_model_file(loader* l, cli_session* s) {
  const char* device = s->imported && !l->o->device_given ? NULL : l->o->device;
  if (hetero_compiled_model_open_file(&s->compiled, s->core, l->o->model, (const char* const*)l->shape_names,
                                      (const int64_t* const*)l->shape_dims, l->shape_ranks, l->shape_count, device,
                                      l->keys.items, l->values.items, l->keys.count)) {
    char what[512];
    if (s->imported)
      snprintf(what, sizeof what, "cannot import the compiled blob");
    else
      snprintf(what, sizeof what, "cannot compile the model for %s", l->o->device);
    return cli_call_failed(what);
  }
  int rc = take_names(l, NULL, s->compiled);
  return rc == CLI_OK ? read_input_files(l) : rc;
}

/* xorshift64*: fixed seeds, so that runs are repeatable. */
static uint64_t next_random(uint64_t* state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1Dull;
}

/* A value in [0, 1) with a 10-bit fraction, as IEEE half bits (exact). */
static uint16_t random_half(uint64_t r) {
  const double v = (double)(r >> 54) / 1024.0;
  if (v == 0) return 0;
  int e = 0;
  const double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
  return (uint16_t)((unsigned)(e - 1 + 15) << 10 | (unsigned)((2 * m - 1) * 1024));
}

/* Floats uniform in [0, 1), integers in [0, 8), bools 0 or 1. */
static void fill_random(void* data, hetero_dtype dtype, size_t count, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = next_random(&state);
    const uint64_t small = r >> 61;
    switch (dtype) {
      case HETERO_DTYPE_FLOAT32: ((float*)data)[i] = (float)(r >> 40) * 0x1p-24f; break;
      case HETERO_DTYPE_FLOAT64: ((double*)data)[i] = (double)(r >> 11) * 0x1p-53; break;
      case HETERO_DTYPE_FLOAT16: ((uint16_t*)data)[i] = random_half(r); break;
      case HETERO_DTYPE_BFLOAT16: {
        const float f = (float)(r >> 40) * 0x1p-24f;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        ((uint16_t*)data)[i] = (uint16_t)(bits >> 16);
        break;
      }
      case HETERO_DTYPE_BOOL: ((uint8_t*)data)[i] = (uint8_t)(small & 1); break;
      case HETERO_DTYPE_INT8:
      case HETERO_DTYPE_UINT8: ((uint8_t*)data)[i] = (uint8_t)small; break;
      case HETERO_DTYPE_INT16:
      case HETERO_DTYPE_UINT16: ((uint16_t*)data)[i] = (uint16_t)small; break;
      case HETERO_DTYPE_INT32:
      case HETERO_DTYPE_UINT32: ((uint32_t*)data)[i] = (uint32_t)small; break;
      case HETERO_DTYPE_INT64:
      case HETERO_DTYPE_UINT64: ((uint64_t*)data)[i] = small; break;
      default: break;
    }
  }
}

/* A random tensor for compiled input `k`, shaped by --shape or the model. */
static int random_input(loader* l, cli_session* s, size_t k, const char* name, hetero_tensor_t** out) {
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  const int64_t* dims = NULL;
  int64_t rank = -1;
  if (hetero_compiled_model_get_input_dtype(s->compiled, &dtype, k) ||
      hetero_compiled_model_get_input_shape(s->compiled, &dims, &rank, k))
    return cli_call_failed("cannot read the model's inputs");
  const ptrdiff_t given = shape_index(l, name);
  if (given >= 0) {
    dims = l->shape_dims[given];
    rank = (int64_t)l->shape_ranks[given];
  }
  bool dynamic = rank < 0;
  for (int64_t d = 0; d < rank; ++d) dynamic = dynamic || dims[d] < 0;
  if (dynamic) {
    char shape[256];
    cli_error("input '%s' has a dynamic shape (%s): give it with --shape %s=DIMS (as in 1x3x224x224) or "
              "--input %s=FILE", name, cli_format_dims(dims, rank, shape, sizeof shape), name, name);
    return CLI_FAILED;
  }
  if (hetero_tensor_create(out, dtype, dims, (size_t)rank)) {
    char what[512];
    snprintf(what, sizeof what, "cannot create random input '%s'", name);
    return cli_call_failed(what);
  }
  void* data = NULL;
  size_t count = 0;
  if (hetero_tensor_get_data(*out, &data) || hetero_tensor_get_element_count(*out, &count))
    return cli_call_failed("cannot fill a random input");
  fill_random(data, dtype, count, k + 1);
  return CLI_OK;
}

/* One tensor per compiled input: the file given for its name, else random. */
static int prepare_inputs(loader* l, cli_session* s) {
  if (hetero_compiled_model_get_input_count(s->compiled, &s->input_count))
    return cli_call_failed("cannot list the model's inputs");
  const size_t n = s->input_count ? s->input_count : 1;
  s->inputs = calloc(n, sizeof *s->inputs);
  s->input_random = calloc(n, sizeof *s->input_random);
  if (!s->inputs || !s->input_random) return cli_error("out of memory"), CLI_FAILED;
  for (size_t k = 0; k < s->input_count; ++k) {
    const char* name = NULL;
    if (hetero_compiled_model_get_input_name(s->compiled, &name, k))
      return cli_call_failed("cannot list the model's inputs");
    const ptrdiff_t f = name_index(l, name, strlen(name));
    if (f >= 0 && l->files[f]) {
      s->inputs[k] = l->files[f]; /* moved into the session */
      l->files[f] = NULL;
      continue;
    }
    s->input_random[k] = true;
    const int rc = random_input(l, s, k, name, &s->inputs[k]);
    if (rc != CLI_OK) return rc;
  }
  return CLI_OK;
}

/* Verb for how the session's model became ready: "compiled", "imported"
 * (a blob), "imported from the cache", or "opened" for a daemon's model. */
const char* cli_session_verb(const cli_session* s) {
  int cached = 0;
  if (!s->served && !s->imported) hetero_compiled_model_is_cached(s->compiled, &cached);
  return s->served ? "opened" : s->imported ? "imported" : cached ? "imported from the cache" : "compiled";
}

/* A model the daemon serves, by name. */
static int open_served(loader* l, cli_session* s) {
  if (hetero_compiled_model_open(&s->compiled, s->core, l->o->model)) {
    char what[512];
    snprintf(what, sizeof what, "cannot use model '%s' of heterod", l->o->model);
    return cli_call_failed(what);
  }
  int rc = take_names(l, NULL, s->compiled);
  return rc == CLI_OK ? read_input_files(l) : rc;
}

static int open_session(loader* l, cli_session* s) {
  int rc = split_config(l);
  if (rc == CLI_OK) rc = parse_shapes(l);
  if (rc != CLI_OK) return rc;

  if (cli_connect) {
    if (l->keys.count || l->core_keys.count || l->o->cache_dir || l->o->driver_path)
      return cli_usage_error(l->command, "--config, --policy, --cache-dir and --driver-path are the daemon's to set "
                                         "with --connect");
    rc = create_core(l, &s->core);
    const double start = cli_now();
    s->served = true;
    if (rc == CLI_OK) rc = open_served(l, s);
    s->load_seconds = cli_now() - start;
    const char* served_on = NULL;
    if (rc == CLI_OK && l->o->device_given && !hetero_compiled_model_get_device(s->compiled, &served_on) &&
        strcmp(served_on, l->o->device) != 0)
      cli_warning("--device %s is ignored: heterod serves '%s' on %s (hetero load serves a model on another device)",
                  l->o->device, l->o->model, served_on);
    return rc == CLI_OK && !l->o->ports_only ? prepare_inputs(l, s) : rc;
  }

  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  if (hetero_model_file_format(&format, l->o->model)) return cli_call_failed("cannot open the model");
  s->imported = format == HETERO_MODEL_FORMAT_BLOB;
  rc = create_core(l, &s->core);
  if (rc != CLI_OK) return rc;

  const double start = cli_now();
  /* Only input files that may size an ONNX model's dynamic dims need the
   * model read before it is compiled; with a cache and none, the model is
   * not even read when its blob is there (hetero_compile_file). */
  rc = format == HETERO_MODEL_FORMAT_ONNX && l->o->inputs.count ? compile_onnx(l, s) : open_model_file(l, s);
  s->load_seconds = cli_now() - start;
  cli_progress_clear();
  return rc == CLI_OK && !l->o->ports_only ? prepare_inputs(l, s) : rc;
}

int cli_session_open(cli_session* s, const cli_model_options* o, const char* command) {
  memset(s, 0, sizeof *s);
  s->shared_core = o->core != NULL;
  loader l;
  memset(&l, 0, sizeof l);
  l.o = o;
  l.command = command;
  const int rc = open_session(&l, s);
  loader_free(&l);
  if (rc != CLI_OK) cli_session_close(s);
  return rc;
}

int cli_planning_open(cli_planning* p, const cli_model_options* o, const char* command) {
  memset(p, 0, sizeof *p);
  loader l;
  memset(&l, 0, sizeof l);
  l.o = o;
  l.command = command;
  int rc = split_config(&l);
  if (rc == CLI_OK) rc = parse_shapes(&l);
  if (rc == CLI_OK) rc = create_core(&l, &p->core);
  if (rc == CLI_OK && hetero_model_read_file(&p->model, p->core, o->model, (const char* const*)l.shape_names,
                                             (const int64_t* const*)l.shape_dims, l.shape_ranks, l.shape_count))
    rc = cli_call_failed("cannot read the model");
  cli_progress_clear();
  /* The compile config moves into the result. */
  p->keys = l.keys;
  p->values = l.values;
  memset(&l.keys, 0, sizeof l.keys);
  memset(&l.values, 0, sizeof l.values);
  loader_free(&l);
  if (rc != CLI_OK) cli_planning_close(p);
  return rc;
}

void cli_planning_close(cli_planning* p) {
  cli_strings_free(&p->keys);
  cli_strings_free(&p->values);
  hetero_model_release(p->model);
  hetero_core_release(p->core);
  memset(p, 0, sizeof *p);
}

const char* cli_describe_device(const hetero_compiled_model_t* compiled, char* buf, size_t size) {
  const char* device = "?";
  size_t count = 0;
  hetero_compiled_model_get_device(compiled, &device);
  if (strncmp(device, "HETERO:", 7) != 0 || hetero_compiled_model_get_submodel_count(compiled, &count)) {
    snprintf(buf, size, "%s", device);
    return buf;
  }
  /* The distinct devices, in order of first use: a plan may alternate. */
  size_t used = (size_t)snprintf(buf, size, "%s (%zu submodel%s on", device, count, count == 1 ? "" : "s");
  const char* listed[16];
  size_t listed_count = 0;
  for (size_t k = 0; k < count && used < size; ++k) {
    const char* d = "?";
    hetero_compiled_model_get_submodel_device(compiled, &d, k);
    bool seen = false;
    for (size_t j = 0; j < listed_count && !seen; ++j) seen = strcmp(listed[j], d) == 0;
    if (seen || listed_count == sizeof listed / sizeof listed[0]) continue;
    used += (size_t)snprintf(buf + used, size - used, "%s %s", listed_count ? "," : "", d);
    listed[listed_count++] = d;
  }
  if (used < size) snprintf(buf + used, size - used, ")");
  return buf;
}

void cli_session_close(cli_session* s) {
  for (size_t k = 0; s->inputs && k < s->input_count; ++k) hetero_tensor_release(s->inputs[k]);
  free(s->inputs);
  free(s->input_random);
  hetero_compiled_model_release(s->compiled);
  if (!s->shared_core) hetero_core_release(s->core);
  memset(s, 0, sizeof *s);
}

int cli_session_bind(const cli_session* s, hetero_infer_request_t* request) {
  for (size_t k = 0; k < s->input_count; ++k) {
    if (hetero_infer_request_set_input(request, k, s->inputs[k])) {
      const char* name = "?";
      hetero_compiled_model_get_input_name(s->compiled, &name, k);
      char what[512];
      snprintf(what, sizeof what, "cannot bind input '%s'", name);
      return cli_call_failed(what);
    }
  }
  return CLI_OK;
}
