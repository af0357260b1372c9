/* hetero partition: the HETERO plan of a model, without compiling it. */
#include <string.h>

#include "cli.h"

enum { OPT_JSON = CLI_OPT_COMMAND, OPT_DOT };

static const cli_opt kOptions[] = {
    {CLI_OPT_DEVICE, 0, "device", "HETERO:A,B", "the devices, in priority order"},
    {CLI_OPT_POLICY, 0, "policy", "FILE", "an affinity policy (YAML; conf/policy-example.yaml)"},
    {OPT_JSON, 0, "json", NULL, "print the plan as one JSON object"},
    {OPT_DOT, 0, "dot", "FILE", "also write it as a Graphviz graph (dot -Tpng FILE)"},
    {CLI_OPT_CONFIG, 0, "config", "K=V",
     "DEVICE:key (CPU.1:ops=Conv) to one device or driver,\nDRIVER.key (CPU.device_count=2) to the core"},
    {CLI_OPT_SHAPE, 0, "shape", "NAME=DIMS", "the shape of an input with dynamic dims"},
    CLI_OPT_ENTRY_DRIVER_PATH,
    {CLI_OPT_QUIET, 0, "quiet", NULL, "no progress line (drawn on stderr when it is a terminal)"},
    {0},
};

static const cli_command kCommand = {
    "partition",
    "MODEL --device HETERO:A,B [options]",
    "Prints how a HETERO device splits MODEL: the subgraphs in execution order,\n"
    "the device and nodes of each, and the tensors passed between them. Devices\n"
    "that are not on this machine are planned for from the policy's pins alone,\n"
    "so a plan for another box can be made here.\n",
    kOptions,
    NULL,
};

static int print_plan(const cli_planning* p, const cli_model_options* o, hetero_plan_format format, FILE* out) {
  char* text = NULL;
  if (hetero_partition(p->core, &text, p->model, o->device, format, p->keys.items, p->values.items, p->keys.count))
    return cli_call_failed("cannot plan the model");
  cli_progress_clear();
  fputs(text, out);
  hetero_free(text);
  return CLI_OK;
}

static int write_dot(const cli_planning* p, const cli_model_options* o, const char* path) {
  char* text = NULL;
  if (hetero_partition(p->core, &text, p->model, o->device, HETERO_PLAN_DOT, p->keys.items, p->values.items,
                       p->keys.count))
    return cli_call_failed("cannot plan the model");
  cli_progress_clear();
  const bool ok = cli_write_file(path, text, strlen(text));
  hetero_free(text);
  return ok ? CLI_OK : CLI_FAILED;
}

typedef struct partition_args {
  cli_model_options o;
  bool json;
  const char* dot;
} partition_args;

static int take(void* ctx, int id, const char* v) {
  partition_args* a = ctx;
  if (id == OPT_JSON) {
    a->json = true;
  } else if (id == OPT_DOT) {
    a->dot = v;
  } else {
    return cli_model_option_apply(&a->o, id, v, "partition");
  }
  return CLI_OK;
}

int cmd_partition(int argc, char** argv) {
  partition_args a;
  memset(&a, 0, sizeof a);
  int rc = cli_parse(&kCommand, argc, argv, take, &a);
  if (rc == CLI_OK && !a.o.model) rc = cli_usage_error("partition", "no MODEL given");
  if (rc == CLI_OK && (!a.o.device || strncmp(a.o.device, "HETERO:", 7) != 0))
    rc = cli_usage_error("partition", "--device must be a HETERO device, as in --device HETERO:OPENCL,CPU");

  cli_planning p;
  if (rc == CLI_OK) rc = cli_planning_open(&p, &a.o, "partition");
  if (rc == CLI_OK) {
    rc = print_plan(&p, &a.o, a.json ? HETERO_PLAN_JSON : HETERO_PLAN_TEXT, stdout);
    if (rc == CLI_OK && a.dot) rc = write_dot(&p, &a.o, a.dot);
    cli_planning_close(&p);
  }
  cli_model_options_free(&a.o);
  return rc == CLI_HELP ? CLI_OK : rc;
}
