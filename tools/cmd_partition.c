/* hetero partition: the HETERO plan of a model, without compiling it. */
#include <string.h>

#include "cli.h"

static const char kHelp[] =
    "usage: hetero partition MODEL --device HETERO:A,B [options]\n"
    "\n"
    "Prints how a HETERO device splits MODEL: the subgraphs in execution order,\n"
    "the device and nodes of each, and the tensors passed between them. Devices\n"
    "that are not on this machine are planned for from the policy's pins alone,\n"
    "so a plan for another box can be made here.\n"
    "\n"
    "  --device HETERO:A,B    the devices, in priority order\n"
    "  --policy FILE          an affinity policy (YAML; conf/policy-example.yaml)\n"
    "  --json                 print the plan as one JSON object\n"
    "  --dot FILE             also write it as a Graphviz graph (dot -Tpng FILE)\n"
    "  --config K=V           DEVICE:key (CPU.1:ops=Conv) to one device or driver,\n"
    "                         DRIVER.key (CPU.device_count=2) to the core\n"
    "  --shape NAME=DIMS      the shape of an input with dynamic dims\n"
    "  --driver-path DIRS     colon-separated directories searched for drivers\n"
    "  --quiet                no progress line (drawn on stderr when it is a terminal)\n";

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

int cmd_partition(int argc, char** argv) {
  cli_model_options o;
  memset(&o, 0, sizeof o);
  bool json = false;
  const char* dot = NULL;
  int rc = CLI_OK;
  for (int i = 1; i < argc && rc == CLI_OK; ++i) {
    const char* a = argv[i];
    const char* v = NULL;
    int r;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(kHelp, stdout);
      cli_model_options_free(&o);
      return CLI_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if ((r = cli_option(argc, argv, &i, "partition", "--dot", &v)) != 0) {
      if (r < 0) rc = CLI_USAGE;
      else dot = v;
    } else if ((r = cli_model_option(argc, argv, &i, "partition", &o)) != 0) {
      if (r < 0) rc = CLI_USAGE;
      else if (o.inputs.count) rc = cli_usage_error("partition", "--input is for run and bench");
    } else if (a[0] == '-') {
      rc = cli_usage_error("partition", "unknown option '%s'", a);
    } else if (o.model) {
      rc = cli_usage_error("partition", "more than one MODEL ('%s' and '%s')", o.model, a);
    } else {
      o.model = a;
    }
  }
  if (rc == CLI_OK && !o.model) rc = cli_usage_error("partition", "no MODEL given");
  if (rc == CLI_OK && (!o.device || strncmp(o.device, "HETERO:", 7) != 0))
    rc = cli_usage_error("partition", "--device must be a HETERO device, as in --device HETERO:OPENCL,CPU");

  cli_planning p;
  if (rc == CLI_OK) rc = cli_planning_open(&p, &o, "partition");
  if (rc == CLI_OK) {
    rc = print_plan(&p, &o, json ? HETERO_PLAN_JSON : HETERO_PLAN_TEXT, stdout);
    if (rc == CLI_OK && dot) rc = write_dot(&p, &o, dot);
    cli_planning_close(&p);
  }
  cli_model_options_free(&o);
  return rc;
}
