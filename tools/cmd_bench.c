/* hetero bench: latency and throughput with N infer requests in flight.
 *
 * Each request is restarted as soon as it completes. Completion callbacks run
 * on worker threads and may not restart their own request (the C ABI forbids
 * it), so they only queue the request's index; the main thread takes it from
 * the queue, collects the status with hetero_infer_request_wait() and starts
 * the request again. Latency is start_async to callback. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char kHelp[] =
    "usage: hetero bench MODEL [options]\n"
    "\n"
    "Measures latency and throughput. MODEL is an ONNX file or a compiled blob;\n"
    "with hetero --connect SOCKET, the name of a model heterod serves. Inputs are\n"
    "seeded random values unless given with --input.\n"
    "\n"
    "  --device D             device string (default CPU), or HETERO:A,B to split\n"
    "                         the model across devices in that priority order\n"
    "  --policy FILE          a HETERO affinity policy (YAML)\n"
    "  --config K=V           DRIVER.key to the driver, key to compilation,\n"
    "                         DEVICE:key (CPU.1:ops=Conv) to one HETERO device\n"
    "  --shape NAME=DIMS      the shape of an input with dynamic dims\n"
    "  --input [NAME=]FILE    an input from a .npy or .pb file\n"
    "  --iterations N         measure N inferences\n"
    "  --time S               measure for S seconds (default 5 unless --iterations)\n"
    "  --requests N           infer requests in flight (default 1)\n"
    "  --warmup N             inferences before measuring, per request (default 2)\n"
    "  --json                 print one JSON object\n"
    "  --cache-dir DIR        import the compiled model from DIR when it is there,\n"
    "                         else compile it and keep it there for next time\n"
    "  --driver-path DIRS     colon-separated directories searched for drivers\n"
    "  --quiet                no progress line while compiling (drawn on stderr\n"
    "                         when it is a terminal)\n";

typedef struct bench bench;

typedef struct slot {
  bench* owner;
  size_t index;
  hetero_infer_request_t* request;
  double started, finished;
} slot;

/* The completion queue: indices of requests whose callback has run. Each
 * request is in flight at most once, so `capacity` = requests suffices. */
struct bench {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  size_t* queue;
  size_t head, count, capacity;
};

static void on_complete(void* user_data, hetero_status status) {
  (void)status; /* collected by hetero_infer_request_wait on the main thread */
  slot* s = user_data;
  s->finished = cli_now();
  bench* b = s->owner;
  pthread_mutex_lock(&b->mutex);
  b->queue[(b->head + b->count++) % b->capacity] = s->index;
  pthread_cond_signal(&b->cond);
  pthread_mutex_unlock(&b->mutex);
}

static size_t next_completed(bench* b) {
  pthread_mutex_lock(&b->mutex);
  while (b->count == 0) pthread_cond_wait(&b->cond, &b->mutex);
  const size_t index = b->queue[b->head];
  b->head = (b->head + 1) % b->capacity;
  --b->count;
  pthread_mutex_unlock(&b->mutex);
  return index;
}

typedef struct samples {
  double* ms;
  size_t count, capacity;
} samples;

static bool add_sample(samples* s, double ms) {
  if (s->count == s->capacity) {
    const size_t capacity = s->capacity ? s->capacity * 2 : 1024;
    double* p = realloc(s->ms, capacity * sizeof *p);
    if (!p) return false;
    s->ms = p;
    s->capacity = capacity;
  }
  s->ms[s->count++] = ms;
  return true;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const samples* s, double p) {
  size_t rank = (size_t)ceil(p / 100.0 * (double)s->count);
  if (rank < 1) rank = 1;
  return s->ms[rank - 1];
}

typedef struct bench_options {
  long iterations; /* 0: time-bound */
  double seconds;
  long requests, warmup;
  bool json;
} bench_options;

/* The measured loop; fills `lat` and the wall time. */
static int measure(slot* slots, size_t n, bench* b, const bench_options* bo, samples* lat, double* wall) {
  const double start = cli_now();
  size_t started = 0, in_flight = 0;
  int rc = CLI_OK;
  for (size_t k = 0; k < n && (bo->iterations == 0 || started < (size_t)bo->iterations); ++k) {
    slots[k].started = cli_now();
    if (hetero_infer_request_start_async(slots[k].request, on_complete, &slots[k])) {
      rc = cli_call_failed("cannot start an inference");
      break;
    }
    ++started, ++in_flight;
  }
  double last = start;
  while (in_flight > 0) {
    slot* s = &slots[next_completed(b)];
    if (hetero_infer_request_wait(s->request)) {
      if (rc == CLI_OK) rc = cli_call_failed("inference failed");
    } else if (!add_sample(lat, (s->finished - s->started) * 1e3)) {
      if (rc == CLI_OK) rc = CLI_FAILED, cli_error("out of memory");
    }
    if (s->finished > last) last = s->finished;
    const bool more = bo->iterations ? started < (size_t)bo->iterations : cli_now() - start < bo->seconds;
    if (rc == CLI_OK && more) {
      s->started = cli_now();
      if (hetero_infer_request_start_async(s->request, on_complete, s) == HETERO_OK) {
        ++started;
        continue;
      }
      rc = cli_call_failed("cannot start an inference");
    }
    --in_flight;
  }
  *wall = last - start;
  return rc;
}

/* Milliseconds rounded to 0.1 us. */
static double round4(double ms) { return round(ms * 1e4) / 1e4; }

static int report(const cli_model_options* o, const cli_session* session, const bench_options* bo, samples* lat,
                  double wall) {
  qsort(lat->ms, lat->count, sizeof *lat->ms, compare_doubles);
  double sum = 0;
  for (size_t i = 0; i < lat->count; ++i) sum += lat->ms[i];
  const double mean = sum / (double)lat->count;
  const double fps = wall > 0 ? (double)lat->count / wall : 0;
  const char* device = o->device;
  hetero_compiled_model_get_device(session->compiled, &device);
  if (bo->json) {
    json_t* latency = json_pack("{s:f, s:f, s:f, s:f, s:f}", "min", round4(lat->ms[0]), "median",
                                round4(percentile(lat, 50)), "p90", round4(percentile(lat, 90)), "p99",
                                round4(percentile(lat, 99)), "mean", round4(mean));
    return cli_json_print(json_pack("{s:o, s:o, s:I, s:I, s:o, s:f}", "model", cli_json_text(o->model), "device",
                             cli_json_text(device), "iterations", (json_int_t)lat->count, "requests",
                             (json_int_t)bo->requests, "latency_ms", latency, "throughput_fps",
                             round(fps * 1e3) / 1e3))
               ? CLI_OK
               : CLI_FAILED;
  }
  printf("model:      %s\n", o->model);
  char described[512];
  printf("device:     %s, %s in %.1f ms\n", cli_describe_device(session->compiled, described, sizeof described),
         cli_session_verb(session), session->load_seconds * 1e3);
  printf("requests:   %ld in flight, %zu inferences in %.2f s\n", bo->requests, lat->count, wall);
  printf("latency ms: min %.3f  median %.3f  p90 %.3f  p99 %.3f  mean %.3f\n", lat->ms[0], percentile(lat, 50),
         percentile(lat, 90), percentile(lat, 99), mean);
  printf("throughput: %.2f inferences/s\n", fps);
  return CLI_OK;
}

static int bench_model(const cli_model_options* o, const bench_options* bo) {
  cli_session session;
  int rc = cli_session_open(&session, o, "bench");
  if (rc != CLI_OK) return rc;
  const size_t n = (size_t)bo->requests;
  slot* slots = calloc(n, sizeof *slots);
  bench b = {.queue = calloc(n, sizeof(size_t)), .capacity = n};
  samples lat = {0};
  pthread_mutex_init(&b.mutex, NULL);
  pthread_cond_init(&b.cond, NULL);
  if (!slots || !b.queue) rc = CLI_FAILED, cli_error("out of memory");
  for (size_t k = 0; rc == CLI_OK && k < n; ++k) {
    slots[k] = (slot){.owner = &b, .index = k};
    if (hetero_infer_request_create(&slots[k].request, session.compiled))
      rc = cli_call_failed("cannot create an infer request");
    else
      rc = cli_session_bind(&session, slots[k].request);
  }
  /* Warm-up: first-run allocations and caches, on every request. */
  for (long w = 0; rc == CLI_OK && w < bo->warmup; ++w)
    for (size_t k = 0; rc == CLI_OK && k < n; ++k)
      if (hetero_infer_request_infer(slots[k].request)) rc = cli_call_failed("warm-up inference failed");

  double wall = 0;
  if (rc == CLI_OK) rc = measure(slots, n, &b, bo, &lat, &wall);
  if (rc == CLI_OK && lat.count == 0) rc = CLI_FAILED, cli_error("no inference finished");
  if (rc == CLI_OK) rc = report(o, &session, bo, &lat, wall);

  for (size_t k = 0; slots && k < n; ++k) hetero_infer_request_release(slots[k].request);
  pthread_cond_destroy(&b.cond);
  pthread_mutex_destroy(&b.mutex);
  free(b.queue);
  free(slots);
  free(lat.ms);
  cli_session_close(&session);
  return rc;
}

int cmd_bench(int argc, char** argv) {
  cli_model_options o;
  memset(&o, 0, sizeof o);
  o.device = "CPU";
  bench_options bo = {.iterations = 0, .seconds = 0, .requests = 1, .warmup = 2, .json = false};
  int rc = CLI_OK;
  for (int i = 1; i < argc && rc == CLI_OK; ++i) {
    const char* v = NULL;
    int r;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(kHelp, stdout);
      cli_model_options_free(&o);
      return CLI_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      bo.json = true;
    } else if ((r = cli_model_option(argc, argv, &i, "bench", &o)) != 0) {
      if (r < 0) rc = CLI_USAGE;
    } else if ((r = cli_option(argc, argv, &i, "bench", "--iterations", &v)) != 0) {
      if (r < 0 || !cli_parse_count("bench", "--iterations", v, &bo.iterations)) rc = CLI_USAGE;
      else if (bo.iterations == 0) rc = cli_usage_error("bench", "--iterations must be at least 1");
    } else if ((r = cli_option(argc, argv, &i, "bench", "--time", &v)) != 0) {
      if (r < 0 || !cli_parse_seconds("bench", "--time", v, &bo.seconds)) rc = CLI_USAGE;
    } else if ((r = cli_option(argc, argv, &i, "bench", "--requests", &v)) != 0) {
      if (r < 0 || !cli_parse_count("bench", "--requests", v, &bo.requests)) rc = CLI_USAGE;
      else if (bo.requests < 1 || bo.requests > 1024) rc = cli_usage_error("bench", "--requests must be 1 to 1024");
    } else if ((r = cli_option(argc, argv, &i, "bench", "--warmup", &v)) != 0) {
      if (r < 0 || !cli_parse_count("bench", "--warmup", v, &bo.warmup)) rc = CLI_USAGE;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      rc = cli_usage_error("bench", "unknown option '%s'", argv[i]);
    } else if (o.model) {
      rc = cli_usage_error("bench", "unexpected argument '%s' (the model is %s)", argv[i], o.model);
    } else {
      o.model = argv[i];
    }
  }
  if (rc == CLI_OK && !o.model) rc = cli_usage_error("bench", "no MODEL given");
  if (rc == CLI_OK && bo.iterations && bo.seconds > 0)
    rc = cli_usage_error("bench", "give --iterations or --time, not both");
  if (rc == CLI_OK && !bo.iterations && bo.seconds == 0) bo.seconds = 5;
  if (rc == CLI_OK) rc = bench_model(&o, &bo);
  cli_model_options_free(&o);
  return rc;
}
