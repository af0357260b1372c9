/* Progress of long work on a terminal: the core's compile progress
 * (hetero_core_set_progress) drawn as one line on stderr that redraws in
 * place, "hetero: building CPU kernels 120/212 (56%) 3.4 s". Only on a
 * terminal: when stderr is a file or a pipe (scripts, the tests that parse
 * the CLI's output) or with --quiet, nothing is drawn and no callback is set.
 *
 * The callback runs on the thread doing the compile (the CPU driver's
 * executor while the CLI's thread waits), never at once with the CLI's own
 * calls here, so the state needs no lock. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

/* At most this many redraws per second: a CPU compile reports every node. */
#define REDRAW_INTERVAL_S 0.1

static struct {
  bool enabled;
  double start;     /* when the line was attached: elapsed time counts from it */
  double last_draw; /* when it was last drawn, < 0 for never */
  size_t width;     /* characters on the line now; 0 when none is drawn */
} g_progress = {false, 0, -1, 0};

/* Columns of the terminal, less one so that the line never wraps (a wrapped
 * line cannot be redrawn with a carriage return). */
static size_t line_columns(void) {
  struct winsize ws;
  const size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  return cols > 1 ? cols - 1 : 1;
}

/* Draws `text` over the current line: spaces cover what a longer previous
 * line left, so no terminal escape sequence is needed. */
static void draw(const char* text) {
  const size_t max = line_columns();
  size_t len = strlen(text);
  if (len > max) len = max;
  fputc('\r', stderr);
  fwrite(text, 1, len, stderr);
  for (size_t k = len; k < g_progress.width; ++k) fputc(' ', stderr);
  if (g_progress.width > len) fputc('\r', stderr), fwrite(text, 1, len, stderr);
  fflush(stderr);
  g_progress.width = len;
}

void cli_progress_report(const char* stage, uint64_t done, uint64_t total) {
  if (!g_progress.enabled) return;
  const double now = cli_now();
  if (g_progress.last_draw >= 0 && now - g_progress.last_draw < REDRAW_INTERVAL_S) return;
  g_progress.last_draw = now;
  char line[512];
  if (total > 0)
    snprintf(line, sizeof line, "hetero: %s %llu/%llu (%d%%) %.1f s", stage, (unsigned long long)done,
             (unsigned long long)total, (int)(done >= total ? 100 : done * 100 / total), now - g_progress.start);
  else
    snprintf(line, sizeof line, "hetero: %s %.1f s", stage, now - g_progress.start);
  draw(line);
}

static void on_progress(void* user_data, const char* stage, uint64_t done, uint64_t total) {
  (void)user_data;
  cli_progress_report(stage, done, total);
}

void cli_progress_attach(hetero_core_t* core, bool quiet) {
  if (quiet || !isatty(STDERR_FILENO)) return;
  /* A daemon connection accepts the callback and never calls it. */
  if (hetero_core_set_progress(core, on_progress, NULL)) return;
  g_progress.enabled = true;
  g_progress.start = cli_now();
  g_progress.last_draw = -1;
}

void cli_progress_clear(void) {
  if (!g_progress.width) return;
  fputc('\r', stderr);
  for (size_t k = 0; k < g_progress.width; ++k) fputc(' ', stderr);
  fputc('\r', stderr);
  fflush(stderr);
  g_progress.width = 0;
  /* The next report, of the next piece of work, draws at once. */
  g_progress.last_draw = -1;
}
