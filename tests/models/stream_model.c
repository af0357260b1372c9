/* A streaming client of the public C ABI, as an application embedding
 * libhetero would write one: one infer request, fixed inputs bound once, a
 * new chunk bound per call, and each state output bound as the next call's
 * state input as it stands (no copy: the output handle keeps its memory).
 * check_streaming.js runs it in process, on a compiled blob, split by HETERO,
 * and through heterod (--connect), and compares every output of every call
 * with ONNX Runtime's.
 *
 *   stream_model MODEL OUT_DIR [options]
 *     MODEL               an ONNX file or a blob; with --connect, the name of
 *                         a model heterod serves
 *     --device D          compile for D (default CPU)
 *     --shape NAME=DIMS   compile with input NAME's shape DIMS (1x576): a GPU
 *                         device then builds it up front, not at the first
 *                         inference of that shape
 *     --config K=V        DRIVER.key to the core, other keys to compilation
 *     --connect SOCKET    run through the daemon at SOCKET
 *     --input NAME=FILE   an input bound once (initial states, constants)
 *     --chunk NAME=FMT    input NAME of call k is the file printf(FMT, k)
 *     --calls N           number of calls (default 1)
 *     --feed OUT=IN       output OUT of call k is input IN of call k + 1
 *     --sequence ID       with --connect: the calls are sequence ID's, whose
 *                         state heterod keeps (hetero_infer_request_set_sequence);
 *                         a state input given is the initial state, and the
 *                         state outputs, which heterod keeps, are not written
 *
 * Writes output NAME of every call as OUT_DIR/NAME.npy, shaped [calls, ...];
 * prints the device.
 * Exit status 0 on success, 1 on failure (with the reason), 2 on misuse. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetero/hetero.h"

#define MAX_ARGS 32

typedef struct {
  const char* key;
  const char* value;
} pair;

static int failed(const char* what) {
  fprintf(stderr, "stream_model: %s: %s\n", what, hetero_last_error());
  return 1;
}

static int usage(const char* why) {
  fprintf(stderr, "stream_model: %s\nusage: stream_model MODEL OUT_DIR [--device D] [--shape NAME=DIMS] [--config K=V] "
                  "[--connect SOCKET] [--input NAME=FILE] [--chunk NAME=FMT] [--calls N] [--feed OUT=IN] [--sequence ID]\n",
          why);
  return 2;
}

/* "K=V" split in place into a pair; false without '='. */
static int split(char* text, pair* out) {
  char* eq = strchr(text, '=');
  if (!eq || eq == text) return 0;
  *eq = '\0';
  out->key = text;
  out->value = eq + 1;
  return 1;
}

static int bind_file(hetero_infer_request_t* request, const char* name, const char* path) {
  hetero_tensor_t* t = NULL;
  char what[4200];
  snprintf(what, sizeof what, "input '%s' from %s", name, path);
  if (hetero_tensor_read_file(&t, path)) return failed(what);
  const hetero_status status = hetero_infer_request_set_input_by_name(request, name, t);
  hetero_tensor_release(t); /* the request keeps what it binds */
  return status ? failed(what) : 0;
}

/* One output over all calls: each call's tensor appended, then written once
 * as NAME.npy of shape [calls, ...] (one file, not one per call: writes are
 * synced to disk, and 100 of them cost more than the calls). */
typedef struct {
  hetero_dtype dtype;
  int64_t dims[9]; /* [calls, the output's dims...] */
  size_t rank, bytes;
  char* data;
} stacked;

static int append(stacked* st, hetero_tensor_t* t, long k, long calls) {
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  const int64_t* dims = NULL;
  size_t rank = 0, count = 0;
  void* data = NULL;
  if (hetero_tensor_get_dtype(t, &dtype) || hetero_tensor_get_shape(t, &dims, &rank) ||
      hetero_tensor_get_element_count(t, &count) || hetero_tensor_get_data(t, &data))
    return failed("cannot read an output");
  const size_t bytes = count * hetero_dtype_size(dtype);
  if (k == 0) {
    if (rank + 1 > sizeof st->dims / sizeof st->dims[0] || !(st->data = malloc(bytes * (size_t)calls + 1)))
      return failed("cannot keep an output");
    st->dtype = dtype, st->rank = rank + 1, st->bytes = bytes;
    st->dims[0] = calls;
    memcpy(st->dims + 1, dims, rank * sizeof *dims);
  } else if (dtype != st->dtype || rank + 1 != st->rank || memcmp(dims, st->dims + 1, rank * sizeof *dims) != 0) {
    fprintf(stderr, "stream_model: an output changed its type or shape at call %ld\n", k);
    return 1;
  }
  if (bytes) memcpy(st->data + st->bytes * (size_t)k, data, bytes);
  return 0;
}

static int write_stacked(const stacked* st, const char* out_dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", out_dir, name);
  hetero_tensor_t* t = NULL;
  int rc = hetero_tensor_wrap(&t, st->dtype, st->dims, st->rank, st->data, st->bytes * (size_t)st->dims[0]) ||
                   hetero_tensor_write_npy(t, path)
               ? failed("cannot write an output")
               : 0;
  hetero_tensor_release(t);
  return rc;
}

static int run(hetero_compiled_model_t* compiled, const char* out_dir, const pair* inputs, size_t input_count,
               const pair* chunk, long calls, const pair* feeds, size_t feed_count, uint64_t sequence) {
  hetero_infer_request_t* request = NULL;
  if (hetero_infer_request_create(&request, compiled)) return failed("cannot create an infer request");
  size_t outputs = 0;
  int rc = hetero_compiled_model_get_output_count(compiled, &outputs) ? failed("cannot list outputs") : 0;
  stacked* results = calloc(outputs ? outputs : 1, sizeof *results);
  if (!results) rc = failed("out of memory");
  for (size_t i = 0; rc == 0 && i < input_count; ++i) rc = bind_file(request, inputs[i].key, inputs[i].value);
  for (long k = 0; rc == 0 && k < calls; ++k) {
    if (chunk) {
      char path[4096];
      snprintf(path, sizeof path, chunk->value, k);
      rc = bind_file(request, chunk->key, path);
    }
    if (rc == 0 && sequence &&
        hetero_infer_request_set_sequence(request, sequence, k == 0 ? HETERO_SEQUENCE_START : 0))
      rc = failed("cannot set the sequence");
    if (rc == 0 && hetero_infer_request_infer(request)) {
      char what[64];
      snprintf(what, sizeof what, "call %ld failed", k);
      rc = failed(what);
    }
    for (size_t o = 0; rc == 0 && o < outputs; ++o) {
      const char* name = NULL;
      hetero_tensor_t* t = NULL;
      if (hetero_compiled_model_get_output_name(compiled, &name, o)) {
        rc = failed("cannot list outputs");
        break;
      }
      const hetero_status got = hetero_infer_request_get_output(request, &t, o);
      if (got == HETERO_INVALID_ARGUMENT && sequence) continue; /* a state output, kept by heterod */
      if (got) {
        rc = failed("cannot get an output");
        break;
      }
      rc = append(&results[o], t, k, calls);
      for (size_t f = 0; rc == 0 && f < feed_count; ++f)
        if (strcmp(feeds[f].key, name) == 0 && hetero_infer_request_set_input_by_name(request, feeds[f].value, t))
          rc = failed("cannot feed a state output back");
      hetero_tensor_release(t);
    }
  }
  for (size_t o = 0; rc == 0 && o < outputs; ++o) {
    const char* name = NULL;
    if (!results[o].data) continue; /* never returned: a sequence's state */
    rc = hetero_compiled_model_get_output_name(compiled, &name, o) ? failed("cannot list outputs")
                                                                    : write_stacked(&results[o], out_dir, name);
  }
  for (size_t o = 0; results && o < outputs; ++o) free(results[o].data);
  free(results);
  hetero_infer_request_release(request);
  return rc;
}

int main(int argc, char** argv) {
  if (argc < 3) return usage("MODEL and OUT_DIR are required");
  const char* model = argv[1];
  const char* out_dir = argv[2];
  const char* device = "CPU";
  const char* socket = NULL;
  long calls = 1;
  uint64_t sequence = 0;
  pair inputs[MAX_ARGS], feeds[MAX_ARGS], core_config[MAX_ARGS], compile_config[MAX_ARGS], chunk;
  size_t input_count = 0, feed_count = 0, core_count = 0, compile_count = 0, shape_count = 0;
  const char* shape_names[MAX_ARGS];
  int64_t shape_storage[MAX_ARGS][8];
  const int64_t* shape_dims[MAX_ARGS];
  size_t shape_ranks[MAX_ARGS];
  int have_chunk = 0;
  for (int i = 3; i < argc; ++i) {
    const char* opt = argv[i];
    if (i + 1 >= argc) return usage("every option takes a value");
    char* value = argv[++i];
    pair p;
    if (strcmp(opt, "--device") == 0) {
      device = value;
    } else if (strcmp(opt, "--connect") == 0) {
      socket = value;
    } else if (strcmp(opt, "--sequence") == 0) {
      sequence = strtoull(value, NULL, 10);
      if (sequence == 0) return usage("--sequence wants an id above 0");
    } else if (strcmp(opt, "--calls") == 0) {
      calls = strtol(value, NULL, 10);
      if (calls < 1) return usage("--calls must be at least 1");
    } else if (!split(value, &p)) {
      return usage("expected K=V");
    } else if (input_count == MAX_ARGS || feed_count == MAX_ARGS || core_count == MAX_ARGS ||
               compile_count == MAX_ARGS || shape_count == MAX_ARGS) {
      return usage("too many options");
    } else if (strcmp(opt, "--shape") == 0) {
      size_t rank = 0;
      for (char* d = (char*)p.value; *d && rank < 8; ++rank) {
        char* end;
        shape_storage[shape_count][rank] = strtoll(d, &end, 10);
        if (end == d || (*end && *end != 'x')) return usage("--shape wants NAME=AxBxC");
        d = *end ? end + 1 : end;
      }
      shape_names[shape_count] = p.key;
      shape_dims[shape_count] = shape_storage[shape_count];
      shape_ranks[shape_count++] = rank;
    } else if (strcmp(opt, "--input") == 0) {
      inputs[input_count++] = p;
    } else if (strcmp(opt, "--feed") == 0) {
      feeds[feed_count++] = p;
    } else if (strcmp(opt, "--chunk") == 0) {
      chunk = p;
      have_chunk = 1;
    } else if (strcmp(opt, "--config") == 0) {
      /* As the hetero CLI splits them: DRIVER.key goes to the core. */
      const int to_core = strchr(p.key, '.') != NULL && strchr(p.key, ':') == NULL;
      if (to_core) core_config[core_count++] = p;
      else compile_config[compile_count++] = p;
    } else {
      return usage("unknown option");
    }
  }
  const char* keys[MAX_ARGS] = {0};
  const char* values[MAX_ARGS] = {0};
  hetero_core_t* core = NULL;
  if (socket) {
    if (hetero_core_connect(&core, socket)) return failed("cannot connect to heterod");
  } else {
    for (size_t i = 0; i < core_count; ++i) keys[i] = core_config[i].key, values[i] = core_config[i].value;
    if (hetero_core_create(&core, keys, values, core_count)) return failed("cannot create a core");
  }
  for (size_t i = 0; i < compile_count; ++i) keys[i] = compile_config[i].key, values[i] = compile_config[i].value;

  /* A blob starts with "HETEROBL"; anything else is an ONNX file. */
  char magic[8] = {0};
  FILE* f = socket ? NULL : fopen(model, "rb");
  const int blob = f && fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, "HETEROBL", 8) == 0;
  if (f) fclose(f);
  hetero_compiled_model_t* compiled = NULL;
  hetero_status status;
  if (socket) status = hetero_compiled_model_open(&compiled, core, model);
  else if (blob) status = hetero_compiled_model_import_file(&compiled, core, model, keys, values, compile_count);
  else
    status = hetero_compile_file(&compiled, core, model, shape_names, shape_dims, shape_ranks, shape_count, device, keys,
                                 values, compile_count);
  int rc;
  if (status) {
    rc = failed("cannot load the model");
  } else {
    const char* on = "?";
    size_t submodels = 0;
    hetero_compiled_model_get_device(compiled, &on);
    if (strncmp(on, "HETERO:", 7) == 0) hetero_compiled_model_get_submodel_count(compiled, &submodels);
    printf("device %s, %zu submodels\n", on, submodels);
    rc = run(compiled, out_dir, inputs, input_count, have_chunk ? &chunk : NULL, calls, feeds, feed_count, sequence);
  }
  hetero_compiled_model_release(compiled);
  hetero_core_release(core);
  return rc;
}
