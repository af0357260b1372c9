/* hetero bench: latency and throughput with N infer requests in flight, of
 * one model or of several at once (a mixed load, `--and`).
 *
 * Each request is restarted as soon as it completes, or with --rate at its
 * next due time on a fixed schedule. One request is called synchronously
 * (hetero_infer_request_infer) on the measuring thread, as a client with one
 * request calls it, and its latency is that call's. Several are started
 * asynchronously: completion callbacks run on worker threads and may not
 * restart their own request (the C ABI forbids it), so they only queue the
 * request's index; the measuring thread takes it from the queue, collects the
 * status with hetero_infer_request_wait() and starts the request again.
 * Their latency is start_async to callback.
 *
 * A mixed load: every model is opened and warmed up first, then each runs
 * its own measure loop on its own thread, all let go together; with --alone,
 * each model is first measured alone (one after the other) for the same
 * time, for the ratios together/alone. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <time.h>

#include "cli.h"

enum {
  OPT_ITERATIONS = CLI_OPT_COMMAND,
  OPT_TIME,
  OPT_REQUESTS,
  OPT_RATE,
  OPT_WARMUP,
  OPT_JSON,
  OPT_AND,
  OPT_ALONE
};

static const cli_opt kOptions[] = {
    CLI_OPT_ENTRY_DEVICE,
    CLI_OPT_ENTRY_POLICY,
    {CLI_OPT_CONFIG, 0, "config", "K=V",
     "DRIVER.key to the driver, key to compilation,\nDEVICE:key (CPU.1:ops=Conv) to one HETERO device"},
    {CLI_OPT_SHAPE, 0, "shape", "NAME=DIMS", "the shape of an input with dynamic dims"},
    {CLI_OPT_INPUT, 0, "input", "[NAME=]FILE", "an input from a .npy or .pb file"},
    {OPT_ITERATIONS, 0, "iterations", "N", "measure N inferences (one model only)"},
    {OPT_TIME, 0, "time", "S", "measure for S seconds (default 5 unless --iterations)"},
    {OPT_REQUESTS, 0, "requests", "N",
     "infer requests in flight (default 1, called synchronously;\nmore are started asynchronously)"},
    {OPT_RATE, 0, "rate", "R",
     "start inferences at R per second (R may be decimal),\non a fixed schedule; without it, flat out: each\n"
     "request restarts as soon as it completes"},
    {OPT_WARMUP, 0, "warmup", "N", "inferences before measuring, per request (default 2)"},
    {OPT_JSON, 0, "json", NULL, "print one JSON object"},
    CLI_OPT_ENTRY_CACHE_DIR,
    CLI_OPT_ENTRY_DRIVER_PATH,
    CLI_OPT_ENTRY_QUIET,
    {OPT_AND, 0, "and", "MODEL", "one more model of a mixed load (below)"},
    {OPT_ALONE, 0, "alone",
     NULL,
     "measure each model alone first (one after the other,\nfor --time each), then all together, and print\n"
     "together/alone ratios of p99 latency and throughput"},
    {0},
};

static const cli_command kCommand = {
    "bench",
    "MODEL [options] [--and MODEL [options]]...",
    "Measures latency and throughput. MODEL is an ONNX file or a compiled blob;\n"
    "with --connect [SOCKET], the name of a model heterod serves. Inputs are\n"
    "seeded random values unless given with --input.\n",
    kOptions,
    "A mixed load: --and MODEL starts another model, measured at the same time as\n"
    "the others, each with its own infer requests on its own thread. --device,\n"
    "--policy, --config, --shape, --input, --requests, --rate, --warmup,\n"
    "--cache-dir and --driver-path belong to the model they follow; --time,\n"
    "--json and --alone to the whole run (--iterations is for one model only).\n"
    "In process, the models share one runtime (and so the CPU driver's priorities,\n"
    "--config priority=realtime|normal|background) when they have the same\n"
    "--driver-path, --cache-dir and DRIVER.key settings, else a model has its\n"
    "own; through --connect, they share the daemon's.\n"
    "\n"
    "  hetero bench det.onnx --requests 2 --and oww.onnx --rate 12.5 \\\n"
    "      --config priority=realtime --alone --time 10\n",
};

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
  (void)status; /* collected by hetero_infer_request_wait on the measuring thread */
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

/* What the whole run shares. */
typedef struct bench_options {
  long iterations; /* 0: time-bound */
  double seconds;
  bool json;
  bool alone; /* measure each model alone before all together */
} bench_options;

/* One model of the run, with its own options, session and requests. */
typedef struct bench_model {
  cli_model_options o;
  long requests, warmup;
  double rate; /* inferences per second; 0: flat out */
  bool share; /* in process: uses the first model's runtime (the same driver settings) */
  cli_session session;
  bool session_open;
  slot* slots;
  size_t slot_count; /* requests created */
  bench b;
  bool b_init;
  samples alone, together;
  double alone_wall, together_wall;
  /* The thread of a run together. */
  pthread_t thread;
  struct gate* gate;
  const bench_options* bo;
  int rc;
} bench_model;

static void sleep_until(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)floor(t);
  ts.tv_nsec = (long)((t - floor(t)) * 1e9);
  if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* Whether the run goes on to its next inference, `started` so far. */
static bool more_to_start(const bench_options* bo, size_t started, double period, double start) {
  return bo->iterations ? started < (size_t)bo->iterations
         : period > 0   ? (double)started * period < bo->seconds
                        : cli_now() - start < bo->seconds;
}

/* The wall time of a run from `start` to the last completion `last`. At a
 * rate, the run spans the schedule of the `started` inferences even when the
 * last one completed early in its slot. */
static double run_wall(double start, double last, size_t started, double period) {
  const double scheduled = (double)started * period;
  return period > 0 && scheduled > last - start ? scheduled : last - start;
}

/* measure() for one request: synchronous calls on this thread. */
static int measure_one(bench_model* m, const bench_options* bo, samples* lat, double* wall) {
  hetero_infer_request_t* request = m->slots[0].request;
  const double period = m->rate > 0 ? 1.0 / m->rate : 0;
  const double start = cli_now();
  double last = start;
  size_t started = 0;
  int rc = CLI_OK;
  while (rc == CLI_OK && more_to_start(bo, started, period, start)) {
    if (period > 0) sleep_until(start + (double)started * period);
    const double begun = cli_now();
    ++started;
    if (hetero_infer_request_infer(request)) {
      rc = cli_call_failed("inference failed");
    } else {
      last = cli_now();
      if (!add_sample(lat, (last - begun) * 1e3)) rc = CLI_FAILED, cli_error("out of memory");
    }
  }
  *wall = run_wall(start, last, started, period);
  return rc;
}

/* The measured loop of one model; fills `lat` and the wall time. Flat out,
 * every request is started at once and restarted as soon as it completes;
 * with a rate, the k-th start is due at start + k/rate (a request that
 * completes waits for the next due time, or starts at once when late). */
static int measure(bench_model* m, const bench_options* bo, samples* lat, double* wall) {
  if (m->requests == 1) return measure_one(m, bo, lat, wall);
  slot* slots = m->slots;
  const size_t n = (size_t)m->requests;
  bench* b = &m->b;
  const double period = m->rate > 0 ? 1.0 / m->rate : 0;
  const double start = cli_now();
  size_t started = 0, in_flight = 0;
  int rc = CLI_OK;
  for (size_t k = 0; k < n && (bo->iterations == 0 || started < (size_t)bo->iterations); ++k) {
    if (period > 0) {
      if (bo->iterations == 0 && (double)started * period >= bo->seconds) break;
      sleep_until(start + (double)started * period);
    }
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
    if (rc == CLI_OK && more_to_start(bo, started, period, start)) {
      if (period > 0) sleep_until(start + (double)started * period);
      s->started = cli_now();
      if (hetero_infer_request_start_async(s->request, on_complete, s) == HETERO_OK) {
        ++started;
        continue;
      }
      rc = cli_call_failed("cannot start an inference");
    }
    --in_flight;
  }
  *wall = run_wall(start, last, started, period);
  return rc;
}

/* CPU time the process has used, user and system, in seconds. In process it
 * counts the inferences' (the kernels', the streams' and their idle
 * spinning); through --connect only the client's, the daemon's being its own. */
static double process_cpu_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Milliseconds rounded to 0.1 us. */
static double round4(double ms) { return round(ms * 1e4) / 1e4; }

/* Latency figures of sorted samples, and the throughput. */
typedef struct stats {
  size_t count;
  double min, p50, p90, p99, max, mean, fps;
} stats;

static stats summarize(samples* lat, double wall) {
  qsort(lat->ms, lat->count, sizeof *lat->ms, compare_doubles);
  double sum = 0;
  for (size_t i = 0; i < lat->count; ++i) sum += lat->ms[i];
  stats st = {.count = lat->count};
  if (lat->count == 0) return st;
  st.min = lat->ms[0];
  st.p50 = percentile(lat, 50);
  st.p90 = percentile(lat, 90);
  st.p99 = percentile(lat, 99);
  st.max = lat->ms[lat->count - 1];
  st.mean = sum / (double)lat->count;
  st.fps = wall > 0 ? (double)lat->count / wall : 0;
  return st;
}

static json_t* latency_json(const stats* st) {
  return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "min", round4(st->min), "median", round4(st->p50), "p90",
                   round4(st->p90), "p99", round4(st->p99), "max", round4(st->max), "mean", round4(st->mean));
}

static const char* model_device(const bench_model* m) {
  const char* device = m->o.device;
  hetero_compiled_model_get_device(m->session.compiled, &device);
  return device;
}

/* One model measured on its own: the report bench has always printed. */
static int report(bench_model* m, const bench_options* bo, samples* lat, double wall, double cpu_seconds) {
  const stats st = summarize(lat, wall);
  const char* device = model_device(m);
  /* Everything the process burnt while measuring, idle threads' spinning
   * included, per inference: what running at a rate costs in energy. */
  const double cpu_ms = st.count ? cpu_seconds * 1e3 / (double)st.count : 0;
  if (bo->json) {
    json_t* document = json_pack("{s:o, s:o, s:I, s:I, s:o, s:f}", "model", cli_json_text(m->o.model), "device",
                                 cli_json_text(device), "iterations", (json_int_t)st.count, "requests",
                                 (json_int_t)m->requests, "latency_ms", latency_json(&st), "throughput_fps",
                                 round(st.fps * 1e3) / 1e3);
    if (document && m->rate > 0) json_object_set_new(document, "rate", json_real(m->rate));
    if (document && !cli_connect) json_object_set_new(document, "cpu_ms_per_inference", json_real(round4(cpu_ms)));
    return cli_json_print(document) ? CLI_OK : CLI_FAILED;
  }
  printf("model:      %s\n", m->o.model);
  char described[512];
  printf("device:     %s, %s in %.1f ms\n", cli_describe_device(m->session.compiled, described, sizeof described),
         cli_session_verb(&m->session), m->session.load_seconds * 1e3);
  if (m->rate > 0)
    printf("requests:   %ld in flight at %g/s, %zu inferences in %.2f s\n", m->requests, m->rate, st.count, wall);
  else
    printf("requests:   %ld in flight, %zu inferences in %.2f s\n", m->requests, st.count, wall);
  printf("latency ms: min %.3f  median %.3f  p90 %.3f  p99 %.3f  max %.3f  mean %.3f\n", st.min, st.p50, st.p90,
         st.p99, st.max, st.mean);
  if (!cli_connect) printf("cpu time:   %.3f ms per inference (the whole process)\n", cpu_ms);
  printf("throughput: %.2f inferences/s\n", st.fps);
  return CLI_OK;
}

static json_t* phase_json(const stats* st) {
  return json_pack("{s:I, s:o, s:f}", "inferences", (json_int_t)st->count, "latency_ms", latency_json(st),
                   "throughput_fps", round(st->fps * 1e3) / 1e3);
}

static double ratio(double together, double alone) { return alone > 0 ? together / alone : 0; }

/* The model's name in the tables: its file name without the directories. */
static const char* label(const bench_model* m) {
  const char* slash = strrchr(m->o.model, '/');
  return slash && slash[1] ? slash + 1 : m->o.model;
}

static int print_mixed(bench_model* models, size_t count, const bench_options* bo, stats* alone, stats* together);

/* Several models: one line per model, then a table of each model's figures
 * together (and alone, with ratios, with --alone). */
static int report_mixed(bench_model* models, size_t count, const bench_options* bo) {
  stats* alone = calloc(count, sizeof *alone);
  stats* together = calloc(count, sizeof *together);
  if (!alone || !together) {
    free(alone);
    free(together);
    return cli_error("out of memory"), CLI_FAILED;
  }
  const int rc = print_mixed(models, count, bo, alone, together);
  free(alone);
  free(together);
  return rc;
}

static int print_mixed(bench_model* models, size_t count, const bench_options* bo, stats* alone, stats* together) {
  for (size_t k = 0; k < count; ++k) {
    if (bo->alone) alone[k] = summarize(&models[k].alone, models[k].alone_wall);
    together[k] = summarize(&models[k].together, models[k].together_wall);
  }
  if (bo->json) {
    json_t* list = json_array();
    for (size_t k = 0; list && k < count; ++k) {
      const bench_model* m = &models[k];
      json_t* entry = json_pack("{s:o, s:o, s:I, s:o}", "model", cli_json_text(m->o.model), "device",
                                cli_json_text(model_device(m)), "requests", (json_int_t)m->requests, "rate",
                                m->rate > 0 ? json_real(m->rate) : json_null());
      if (entry && bo->alone) json_object_set_new(entry, "alone", phase_json(&alone[k]));
      if (entry) json_object_set_new(entry, "together", phase_json(&together[k]));
      if (entry && bo->alone)
        json_object_set_new(entry, "ratios",
                            json_pack("{s:f, s:f}", "p99", round(ratio(together[k].p99, alone[k].p99) * 1e3) / 1e3,
                                      "throughput", round(ratio(together[k].fps, alone[k].fps) * 1e3) / 1e3));
      if (!entry || json_array_append_new(list, entry)) {
        json_decref(list);
        list = NULL;
      }
    }
    json_t* document = list ? json_pack("{s:f, s:o}", "time_s", bo->seconds, "models", list) : NULL;
    return cli_json_print(document) ? CLI_OK : CLI_FAILED;
  }

  int width = 5;
  for (size_t k = 0; k < count; ++k) {
    const int n = (int)strlen(label(&models[k]));
    if (n > width) width = n;
  }
  for (size_t k = 0; k < count; ++k) {
    const bench_model* m = &models[k];
    char described[512], rate[64];
    if (m->rate > 0)
      snprintf(rate, sizeof rate, "at %g/s", m->rate);
    else
      snprintf(rate, sizeof rate, "flat out");
    printf("model %zu:    %s: %s, %s in %.1f ms; %ld request%s in flight, %s%s\n", k + 1, m->o.model,
           cli_describe_device(m->session.compiled, described, sizeof described), cli_session_verb(&m->session),
           m->session.load_seconds * 1e3, m->requests, m->requests == 1 ? "" : "s", rate,
           k > 0 && !cli_connect && !m->share ? "; a runtime of its own" : "");
  }
  if (!bo->alone) {
    printf("\n%zu models together for %.2f s:\n", count, bo->seconds);
    printf("%-*s  %10s  %9s  %9s  %9s  %9s  %9s  %12s\n", width, "model", "inferences", "p50 ms", "p90 ms",
           "p99 ms", "max ms", "mean ms", "inferences/s");
    for (size_t k = 0; k < count; ++k)
      printf("%-*s  %10zu  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %12.2f\n", width, label(&models[k]), together[k].count,
             together[k].p50, together[k].p90, together[k].p99, together[k].max, together[k].mean, together[k].fps);
    return CLI_OK;
  }
  printf("\neach model alone for %.2f s, then %zu together for %.2f s:\n", bo->seconds, count, bo->seconds);
  printf("%-*s  %-45s  %-45s  %s\n", width, "", "alone", "together", "together/alone");
  printf("%-*s  %10s %10s %10s %12s  %10s %10s %10s %12s  %6s %10s\n", width, "model", "p50 ms", "p99 ms", "max ms",
         "inferences/s", "p50 ms", "p99 ms", "max ms", "inferences/s", "p99", "throughput");
  for (size_t k = 0; k < count; ++k)
    printf("%-*s  %10.3f %10.3f %10.3f %12.2f  %10.3f %10.3f %10.3f %12.2f  %6.2f %10.2f\n", width, label(&models[k]),
           alone[k].p50, alone[k].p99, alone[k].max, alone[k].fps, together[k].p50, together[k].p99, together[k].max,
           together[k].fps, ratio(together[k].p99, alone[k].p99), ratio(together[k].fps, alone[k].fps));
  return CLI_OK;
}

/* Opens the model, creates its requests and warms them up. */
static int prepare(bench_model* m) {
  int rc = cli_session_open(&m->session, &m->o, "bench");
  if (rc != CLI_OK) return rc;
  m->session_open = true;
  const size_t n = (size_t)m->requests;
  m->slots = calloc(n, sizeof *m->slots);
  m->b = (bench){.queue = calloc(n, sizeof(size_t)), .capacity = n};
  pthread_mutex_init(&m->b.mutex, NULL);
  pthread_cond_init(&m->b.cond, NULL);
  m->b_init = true;
  if (!m->slots || !m->b.queue) return cli_error("out of memory"), CLI_FAILED;
  for (size_t k = 0; rc == CLI_OK && k < n; ++k) {
    m->slots[k] = (slot){.owner = &m->b, .index = k};
    if (hetero_infer_request_create(&m->slots[k].request, m->session.compiled))
      rc = cli_call_failed("cannot create an infer request");
    else
      m->slot_count = k + 1, rc = cli_session_bind(&m->session, m->slots[k].request);
  }
  /* Warm-up: first-run allocations and caches, on every request. */
  for (long w = 0; rc == CLI_OK && w < m->warmup; ++w)
    for (size_t k = 0; rc == CLI_OK && k < n; ++k)
      if (hetero_infer_request_infer(m->slots[k].request)) rc = cli_call_failed("warm-up inference failed");
  return rc;
}

static void release(bench_model* m) {
  for (size_t k = 0; k < m->slot_count; ++k) hetero_infer_request_release(m->slots[k].request);
  if (m->b_init) {
    pthread_cond_destroy(&m->b.cond);
    pthread_mutex_destroy(&m->b.mutex);
  }
  free(m->b.queue);
  free(m->slots);
  free(m->alone.ms);
  free(m->together.ms);
  if (m->session_open) cli_session_close(&m->session);
  cli_model_options_free(&m->o);
}

/* Holds the threads of a run together until every one has been created. */
typedef struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool open, cancelled;
} gate;

static void* measure_together(void* arg) {
  bench_model* m = arg;
  gate* g = m->gate;
  pthread_mutex_lock(&g->mutex);
  while (!g->open) pthread_cond_wait(&g->cond, &g->mutex);
  const bool cancelled = g->cancelled;
  pthread_mutex_unlock(&g->mutex);
  if (!cancelled) m->rc = measure(m, m->bo, &m->together, &m->together_wall);
  return NULL;
}

static int run_together(bench_model* models, size_t count, const bench_options* bo) {
  gate g = {.open = false, .cancelled = false};
  pthread_mutex_init(&g.mutex, NULL);
  pthread_cond_init(&g.cond, NULL);
  int rc = CLI_OK;
  size_t created = 0;
  for (; created < count; ++created) {
    bench_model* m = &models[created];
    m->gate = &g, m->bo = bo, m->rc = CLI_OK;
    if (pthread_create(&m->thread, NULL, measure_together, m) != 0) {
      rc = CLI_FAILED, cli_error("cannot start a thread");
      break;
    }
  }
  pthread_mutex_lock(&g.mutex);
  g.open = true;
  g.cancelled = rc != CLI_OK;
  pthread_cond_broadcast(&g.cond);
  pthread_mutex_unlock(&g.mutex);
  for (size_t k = 0; k < created; ++k) {
    pthread_join(models[k].thread, NULL);
    if (rc == CLI_OK) rc = models[k].rc;
  }
  pthread_cond_destroy(&g.cond);
  pthread_mutex_destroy(&g.mutex);
  return rc;
}

/* Whether `o` names a driver setting (DRIVER.key=V: a dot, no colon, in the
 * key), as cli_session sends those to the core rather than to compilation. */
static bool driver_setting(const char* kv) {
  const char* eq = strchr(kv, '=');
  const char* dot = strchr(kv, '.');
  const char* colon = strchr(kv, ':');
  return dot && dot < eq && !(colon && colon < eq);
}

static bool same_text(const char* a, const char* b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Whether two models' runtimes would be made the same: one can serve both. */
static bool same_runtime(const cli_model_options* a, const cli_model_options* b) {
  if (!same_text(a->driver_path, b->driver_path) || !same_text(a->cache_dir, b->cache_dir)) return false;
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a->config.count && !driver_setting(a->config.items[i])) ++i;
    while (j < b->config.count && !driver_setting(b->config.items[j])) ++j;
    if (i == a->config.count || j == b->config.count) return i == a->config.count && j == b->config.count;
    if (strcmp(a->config.items[i++], b->config.items[j++]) != 0) return false;
  }
}

static int bench_models(bench_model* models, size_t count, const bench_options* bo) {
  int rc = CLI_OK;
  /* In process, one runtime for every model that can share it: one CPU
   * driver, whose scheduler orders the models' work by priority. Decided
   * before any session splits its --config strings. */
  for (size_t k = 1; !cli_connect && k < count; ++k) models[k].share = same_runtime(&models[0].o, &models[k].o);
  for (size_t k = 0; rc == CLI_OK && k < count; ++k) {
    if (models[k].share) models[k].o.core = models[0].session.core;
    rc = prepare(&models[k]);
  }
  if (rc == CLI_OK && count == 1 && !bo->alone) {
    bench_model* m = &models[0];
    const double cpu_before = process_cpu_seconds();
    rc = measure(m, bo, &m->together, &m->together_wall);
    const double cpu_seconds = process_cpu_seconds() - cpu_before;
    if (rc == CLI_OK && m->together.count == 0) rc = CLI_FAILED, cli_error("no inference finished");
    if (rc == CLI_OK) rc = report(m, bo, &m->together, m->together_wall, cpu_seconds);
    return rc;
  }
  for (size_t k = 0; rc == CLI_OK && bo->alone && k < count; ++k)
    rc = measure(&models[k], bo, &models[k].alone, &models[k].alone_wall);
  if (rc == CLI_OK) rc = run_together(models, count, bo);
  for (size_t k = 0; rc == CLI_OK && k < count; ++k) {
    if (models[k].together.count == 0 || (bo->alone && models[k].alone.count == 0))
      rc = CLI_FAILED, cli_error("no inference of %s finished", models[k].o.model);
  }
  if (rc == CLI_OK) rc = report_mixed(models, count, bo);
  return rc;
}

static bool parse_rate(const char* text, double* out) {
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno || end == text || *end || !(v > 0) || v > 1e6) {
    cli_usage_error("bench", "--rate: '%s' is not a number of inferences per second above 0", text);
    return false;
  }
  *out = v;
  return true;
}

static bool add_model(bench_model** models, size_t* count, size_t* capacity) {
  if (*count == *capacity) {
    const size_t n = *capacity ? *capacity * 2 : 4;
    bench_model* p = realloc(*models, n * sizeof *p);
    if (!p) return cli_error("out of memory"), false;
    *models = p;
    *capacity = n;
  }
  bench_model* m = &(*models)[(*count)++];
  memset(m, 0, sizeof *m);
  m->o.device = "CPU";
  m->requests = 1;
  m->warmup = 2;
  return true;
}

typedef struct bench_args {
  bench_model* models;
  size_t count, capacity;
  bench_options bo;
} bench_args;

static int take(void* ctx, int id, const char* v) {
  bench_args* a = ctx;
  bench_model* m = &a->models[a->count - 1];
  switch (id) {
    case CLI_OPERAND:
      if (m->o.model)
        return cli_usage_error("bench", "unexpected argument '%s' (the model is %s; --and adds another)", v,
                               m->o.model);
      m->o.model = v;
      return CLI_OK;
    case OPT_AND:
      if (!m->o.model) return cli_usage_error("bench", "--and follows a MODEL and its options");
      if (!add_model(&a->models, &a->count, &a->capacity)) return CLI_FAILED;
      a->models[a->count - 1].o.model = v;
      return CLI_OK;
    case OPT_ALONE: a->bo.alone = true; return CLI_OK;
    case OPT_JSON: a->bo.json = true; return CLI_OK;
    case OPT_ITERATIONS:
      if (!cli_parse_count("bench", "--iterations", v, &a->bo.iterations)) return CLI_USAGE;
      if (a->bo.iterations == 0) return cli_usage_error("bench", "--iterations must be at least 1");
      return CLI_OK;
    case OPT_TIME: return cli_parse_seconds("bench", "--time", v, &a->bo.seconds) ? CLI_OK : CLI_USAGE;
    case OPT_REQUESTS:
      if (!cli_parse_count("bench", "--requests", v, &m->requests)) return CLI_USAGE;
      if (m->requests < 1 || m->requests > 1024) return cli_usage_error("bench", "--requests must be 1 to 1024");
      return CLI_OK;
    case OPT_RATE: return parse_rate(v, &m->rate) ? CLI_OK : CLI_USAGE;
    case OPT_WARMUP: return cli_parse_count("bench", "--warmup", v, &m->warmup) ? CLI_OK : CLI_USAGE;
    default: return cli_model_option_apply(&m->o, id, v, "bench");
  }
}

int cmd_bench(int argc, char** argv) {
  bench_args a = {NULL, 0, 0, {.iterations = 0, .seconds = 0, .json = false, .alone = false}};
  int rc = add_model(&a.models, &a.count, &a.capacity) ? CLI_OK : CLI_FAILED;
  if (rc == CLI_OK) rc = cli_parse(&kCommand, argc, argv, take, &a);
  bench_model* models = a.models;
  const size_t count = a.count;
  bench_options bo = a.bo;
  if (rc == CLI_OK && !models[count - 1].o.model)
    rc = cli_usage_error("bench", "no MODEL given");
  if (rc == CLI_OK && bo.iterations && bo.seconds > 0)
    rc = cli_usage_error("bench", "give --iterations or --time, not both");
  if (rc == CLI_OK && bo.iterations && count > 1)
    rc = cli_usage_error("bench", "--iterations is for one model: several (--and) run for --time");
  if (rc == CLI_OK && bo.iterations && bo.alone) rc = cli_usage_error("bench", "--alone runs for --time, not --iterations");
  if (rc == CLI_OK && !bo.iterations && bo.seconds == 0) bo.seconds = 5;
  if (rc == CLI_OK) rc = bench_models(models, count, &bo);
  /* The first model's session last: it holds the runtime the others share. */
  for (size_t k = count; k-- > 0;) release(&models[k]);
  free(models);
  return rc == CLI_HELP ? CLI_OK : rc;
}
