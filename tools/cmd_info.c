/* hetero info: what a model is, before running it: its inputs and outputs,
 * what its file says of itself, and which nodes each device here runs. With
 * --connect, the same of a model heterod serves. Nothing is compiled. */
#include <string.h>

#include "cli.h"

static const cli_opt kOptions[] = {
    {CLI_OPT_DEVICE, 0, "device", "D", "ask only device D (repeatable; default: every\ndevice here)"},
    {CLI_OPT_SHAPE, 0, "shape", "NAME=DIMS", "the shape of an input with dynamic dims"},
    {CLI_OPT_CONFIG, 0, "config", "K=V", "DRIVER.key to the core, key to the devices' query"},
    CLI_OPT_ENTRY_DRIVER_PATH,
    {0},
};

static const cli_command kCommand = {
    "info",
    "MODEL [options]",
    "Describes MODEL without compiling it: its inputs and outputs (type and\n"
    "shape, ? for a dynamic dim), what the ONNX file says of itself (IR\n"
    "version, producer, opsets, nodes) and, for each device, how many of its\n"
    "nodes the device runs and why not the others. MODEL is an ONNX file or a\n"
    "compiled blob; with --connect [SOCKET], the name of a model heterod serves\n"
    "(its state, device and ports).\n",
    kOptions,
    NULL,
};

/* The most unsupported nodes listed per device; the rest are counted. */
#define SHOWN_UNSUPPORTED 5

/* One input or output, read through the model's or the compiled model's
 * getters; false past the last. */
typedef struct port {
  const char* name;
  hetero_dtype dtype;
  const int64_t* dims;
  int64_t rank;
} port;
typedef bool (*port_reader)(const void* handle, bool output, size_t index, port* out);

static bool model_port(const void* handle, bool output, size_t k, port* p) {
  const hetero_model_t* m = handle;
  size_t count = 0;
  if ((output ? hetero_model_get_output_count : hetero_model_get_input_count)(m, &count) || k >= count) return false;
  return !(output ? hetero_model_get_output_name : hetero_model_get_input_name)(m, &p->name, k) &&
         !(output ? hetero_model_get_output_dtype : hetero_model_get_input_dtype)(m, &p->dtype, k) &&
         !(output ? hetero_model_get_output_shape : hetero_model_get_input_shape)(m, &p->dims, &p->rank, k);
}

static bool compiled_port(const void* handle, bool output, size_t k, port* p) {
  const hetero_compiled_model_t* c = handle;
  size_t count = 0;
  if ((output ? hetero_compiled_model_get_output_count : hetero_compiled_model_get_input_count)(c, &count) ||
      k >= count)
    return false;
  return !(output ? hetero_compiled_model_get_output_name : hetero_compiled_model_get_input_name)(c, &p->name, k) &&
         !(output ? hetero_compiled_model_get_output_dtype : hetero_compiled_model_get_input_dtype)(c, &p->dtype, k) &&
         !(output ? hetero_compiled_model_get_output_shape
                  : hetero_compiled_model_get_input_shape)(c, &p->dims, &p->rank, k);
}

static void print_ports(const void* handle, port_reader read) {
  for (int output = 0; output < 2; ++output) {
    puts(output ? "outputs:" : "inputs:");
    port p;
    for (size_t k = 0; read(handle, output, k, &p); ++k) {
      char shape[256];
      printf("  %s: %s %s\n", p.name, hetero_dtype_name(p.dtype),
             p.rank < 0 ? "(rank unknown)" : cli_format_dims(p.dims, p.rank, shape, sizeof shape));
    }
  }
}

/* "ONNX IR 8, producer pytorch, opsets ai.onnx 17, 212 nodes". */
static void print_facts(const hetero_model_t* model) {
  char* text = NULL;
  if (hetero_model_describe_json(model, &text)) return;
  json_error_t error;
  json_t* doc = json_loads(text, 0, &error);
  hetero_free(text);
  if (!doc) return;
  const char* producer = json_string_value(json_object_get(doc, "producer"));
  printf("format: ONNX IR %lld, producer %s, opsets", (long long)json_integer_value(json_object_get(doc, "ir_version")),
         producer && *producer ? producer : "(not named)");
  const char* domain;
  json_t* version;
  json_object_foreach(json_object_get(doc, "opsets"), domain, version) {
    printf(" %s %lld", domain, (long long)json_integer_value(version));
  }
  printf(", %lld nodes\n", (long long)json_integer_value(json_object_get(doc, "nodes")));
  json_decref(doc);
}

/* "CPU: runs all 212 nodes", or how many and which not, with why. */
static void print_support(hetero_core_t* core, const hetero_model_t* model, const char* device,
                          const cli_strings* keys, const cli_strings* values) {
  hetero_query_result_t* result = NULL;
  if (hetero_query(&result, core, model, device, keys->items, values->items, keys->count)) {
    printf("  %s: cannot say: %s\n", device, hetero_last_error());
    return;
  }
  size_t count = 0, supported = 0;
  hetero_query_result_get_node_count(result, &count);
  for (size_t k = 0; k < count; ++k) {
    const char *name, *op, *reason;
    int ok = 0;
    if (!hetero_query_result_get_node(result, &name, &op, &ok, &reason, k) && ok) ++supported;
  }
  if (supported == count) {
    printf("  %s: runs all %zu nodes\n", device, count);
  } else {
    printf("  %s: runs %zu of %zu nodes; not:\n", device, supported, count);
    size_t shown = 0;
    for (size_t k = 0; k < count; ++k) {
      const char *name = "?", *op = "?", *reason = "";
      int ok = 1;
      if (hetero_query_result_get_node(result, &name, &op, &ok, &reason, k) || ok) continue;
      if (shown++ < SHOWN_UNSUPPORTED) printf("    %s (%s)%s%s\n", name, op, *reason ? ": " : "", reason);
    }
    if (shown > SHOWN_UNSUPPORTED) printf("    ... and %zu more\n", shown - SHOWN_UNSUPPORTED);
  }
  hetero_query_result_release(result);
}

static int describe_onnx(const cli_model_options* o, const cli_strings* devices) {
  cli_planning p;
  int rc = cli_planning_open(&p, o, "info");
  if (rc != CLI_OK) return rc;
  printf("model %s\n", o->model);
  print_facts(p.model);
  print_ports(p.model, model_port);
  puts("devices:");
  if (devices->count) {
    for (size_t k = 0; k < devices->count; ++k) print_support(p.core, p.model, devices->items[k], &p.keys, &p.values);
  } else {
    size_t count = 0;
    hetero_core_get_device_count(p.core, &count);
    for (size_t k = 0; k < count; ++k) {
      const char* name = "?";
      hetero_core_get_device_name(p.core, &name, k);
      print_support(p.core, p.model, name, &p.keys, &p.values);
    }
  }
  cli_planning_close(&p);
  return CLI_OK;
}

/* A blob: its device and ports once imported (hetero blob info says the
 * rest: versions, config, sections); or a pipeline, compiled, as its ports
 * come from its models. */
static int describe_compiled(const cli_model_options* o, hetero_model_format format) {
  cli_session s;
  int rc = cli_session_open(&s, o, "info");
  if (rc != CLI_OK) return rc;
  char device[512];
  if (format == HETERO_MODEL_FORMAT_BLOB)
    printf("model %s: a compiled blob for %s (hetero blob info %s describes it)\n", o->model,
           cli_describe_device(s.compiled, device, sizeof device), o->model);
  else
    printf("model %s: a pipeline, its models compiled for %s\n", o->model,
           cli_describe_device(s.compiled, device, sizeof device));
  print_ports(s.compiled, compiled_port);
  cli_session_close(&s);
  return CLI_OK;
}

/* A model heterod serves: its row of `models`, then its ports. */
static int describe_served(const cli_model_options* o) {
  hetero_core_t* core = NULL;
  int rc = cli_core_open(&core, NULL);
  if (rc != CLI_OK) return rc;
  hetero_model_list_t* list = NULL;
  size_t count = 0;
  bool found = false;
  if (hetero_core_list_models(&list, core) || hetero_model_list_get_count(list, &count)) {
    rc = cli_call_failed("cannot list the models");
  } else {
    for (size_t k = 0; k < count && !found; ++k) {
      const char *name = "", *device = "", *state = "", *error = "";
      hetero_model_list_get(list, &name, &device, &state, &error, k);
      if (strcmp(name, o->model) != 0) continue;
      found = true;
      printf("model %s: %s on %s%s%s\n", name, state, device, *error ? ": " : "", error);
    }
    if (!found) {
      cli_error("heterod serves no model '%s' (hetero models lists them)", o->model);
      rc = CLI_FAILED;
    }
  }
  hetero_model_list_release(list);
  hetero_compiled_model_t* compiled = NULL;
  if (rc == CLI_OK && hetero_compiled_model_open(&compiled, core, o->model) == HETERO_OK) {
    char device[512];
    printf("runs on: %s\n", cli_describe_device(compiled, device, sizeof device));
    print_ports(compiled, compiled_port);
    /* What a sequence of it carries (docs/streams.md). */
    size_t pairs = 0;
    hetero_compiled_model_get_state_pair_count(compiled, &pairs);
    if (pairs) puts("state (a sequence feeds each output back as the input):");
    for (size_t k = 0; k < pairs; ++k) {
      const char *output = "?", *input = "?";
      hetero_compiled_model_get_state_pair(compiled, &output, &input, k);
      printf("  %s -> %s\n", output, input);
    }
    hetero_compiled_model_release(compiled);
  }
  hetero_core_release(core);
  return rc;
}

typedef struct info_args {
  cli_model_options o;
  cli_strings devices;
} info_args;

static int take(void* ctx, int id, const char* v) {
  info_args* a = ctx;
  if (id == CLI_OPT_DEVICE) {
    if (!cli_strings_push(&a->devices, v)) return CLI_FAILED;
  } else {
    return cli_model_option_apply(&a->o, id, v, "info");
  }
  return CLI_OK;
}

int cmd_info(int argc, char** argv) {
  info_args a;
  memset(&a, 0, sizeof a);
  a.o.device = "CPU";
  int rc = cli_parse(&kCommand, argc, argv, take, &a);
  if (rc == CLI_OK && !a.o.model) rc = cli_usage_error("info", "no MODEL given");
  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  if (rc == CLI_OK && cli_connect) {
    if (a.devices.count) cli_warning("--device is ignored with --connect: heterod runs its model where it serves it");
    rc = describe_served(&a.o);
  } else if (rc == CLI_OK && hetero_model_file_format(&format, a.o.model)) {
    rc = cli_call_failed("cannot open the model");
  } else if (rc == CLI_OK) {
    a.o.ports_only = true;
    rc = format == HETERO_MODEL_FORMAT_ONNX ? describe_onnx(&a.o, &a.devices) : describe_compiled(&a.o, format);
  }
  cli_model_options_free(&a.o);
  cli_strings_free(&a.devices);
  return rc == CLI_HELP ? CLI_OK : rc;
}
