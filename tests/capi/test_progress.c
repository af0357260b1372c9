/* hetero_core_set_progress() from plain C: a compile of a real model reports
 * its stages, each one's `done` increasing to a final done == total, and a
 * core without a callback reports nothing.
 *
 *   test_progress MODEL DEVICE [shape:INPUT=D0,D1,...] [KEY=VALUE ...] [--expect STAGE ...]
 *
 * Compiles MODEL (with one input's shape fixed, a GPU needs static shapes)
 * for DEVICE with the compile config KEY=VALUE and checks
 * that every STAGE named was reported (the CPU's "building CPU kernels", an
 * OPENCL compile's "timing tuning candidates"). Prints "N passed, N failed";
 * exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetero/hetero.h"
#include "check.h"

/* Every report, in order. Calls for one compile never overlap (the header's
 * promise), so no lock. */
#define MAX_REPORTS 100000
typedef struct report {
  char stage[64];
  uint64_t done, total;
} report;
static report reports[MAX_REPORTS];
static size_t report_count;
static int bad_user_data;

static void on_progress(void* user_data, const char* stage, uint64_t done, uint64_t total) {
  if (user_data != (void*)reports) bad_user_data = 1;
  if (report_count == MAX_REPORTS) return;
  report* r = &reports[report_count++];
  snprintf(r->stage, sizeof r->stage, "%s", stage);
  r->done = done;
  r->total = total;
}

/* Within each run of reports of one stage, `done` increases and stays within
 * a constant `total`; a stage's last report has done == total. */
static void check_reports(void) {
  for (size_t i = 0; i < report_count; ++i) {
    const report* r = &reports[i];
    CHECK(r->done <= r->total);
    if (i > 0 && strcmp(reports[i - 1].stage, r->stage) == 0) {
      CHECK(r->done > reports[i - 1].done);
      CHECK(r->total == reports[i - 1].total);
    }
    int last_of_stage = 1;
    for (size_t k = i + 1; k < report_count; ++k)
      if (strcmp(reports[k].stage, r->stage) == 0) last_of_stage = 0;
    if (last_of_stage && r->done != r->total)
      fprintf(stderr, "stage '%s' ends at %llu of %llu\n", r->stage, (unsigned long long)r->done,
              (unsigned long long)r->total);
    if (last_of_stage) CHECK(r->done == r->total);
  }
}

static int reported(const char* stage) {
  for (size_t i = 0; i < report_count; ++i)
    if (strcmp(reports[i].stage, stage) == 0 && reports[i].total > 0) return 1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_progress MODEL DEVICE [KEY=VALUE ...] [--expect STAGE ...]\n");
    return 2;
  }
  const char* model_path = argv[1];
  const char* device = argv[2];
  const char* keys[16];
  const char* values[16];
  size_t config_count = 0;
  const char* shape_name[1];
  int64_t dims[8];
  const int64_t* shape_dims[1] = {dims};
  size_t rank = 0, shape_count = 0;
  int a = 3;
  for (; a < argc && strcmp(argv[a], "--expect") != 0 && config_count < 16; ++a) {
    char* eq = strchr(argv[a], '=');
    if (!eq) continue;
    *eq = '\0';
    if (strncmp(argv[a], "shape:", 6) == 0) {
      shape_name[0] = argv[a] + 6;
      shape_count = 1;
      for (char* d = eq + 1; *d && rank < 8; d += strcspn(d, ","), d += *d == ',') dims[rank++] = atoll(d);
      continue;
    }
    keys[config_count] = argv[a];
    values[config_count++] = eq + 1;
  }

  hetero_core_t* core = NULL;
  CHECK_OK(hetero_core_create(&core, NULL, NULL, 0));
  CHECK(hetero_core_set_progress(NULL, on_progress, reports) == HETERO_INVALID_ARGUMENT);
  CHECK_OK(hetero_core_set_progress(core, on_progress, reports));

  /* Reading and compiling apart, then both at once (hetero_compile_file). */
  hetero_model_t* model = NULL;
  hetero_compiled_model_t* compiled = NULL;
  CHECK_OK(hetero_model_read_file(&model, core, model_path, shape_name, shape_dims, &rank, shape_count));
  CHECK(reported("reading model"));
  CHECK_OK(hetero_compile(&compiled, core, model, device, keys, values, config_count));
  check_reports();
  CHECK(!bad_user_data);
  if (a < argc) ++a; /* --expect */
  for (; a < argc; ++a) {
    if (!reported(argv[a])) fprintf(stderr, "stage '%s' was not reported\n", argv[a]);
    CHECK(reported(argv[a]));
  }
  hetero_compiled_model_release(compiled);
  compiled = NULL;

  report_count = 0;
  CHECK_OK(hetero_compile_file(&compiled, core, model_path, shape_name, shape_dims, &rank, shape_count, device, keys, values, config_count));
  CHECK(reported("reading model"));
  check_reports();
  hetero_compiled_model_release(compiled);
  compiled = NULL;

  /* No callback: nothing reported. */
  CHECK_OK(hetero_core_set_progress(core, NULL, NULL));
  report_count = 0;
  CHECK_OK(hetero_compile(&compiled, core, model, device, keys, values, config_count));
  CHECK(report_count == 0);
  hetero_compiled_model_release(compiled);
  hetero_model_release(model);
  hetero_core_release(core);

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
