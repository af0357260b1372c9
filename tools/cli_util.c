/* Messages, argument parsing and small formatting helpers of the hetero CLI. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void cli_error(const char* fmt, ...) {
  cli_progress_clear(); /* an error never lands on the progress line */
  va_list ap;
  va_start(ap, fmt);
  fputs("hetero: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_warning(const char* fmt, ...) {
  cli_progress_clear();
  va_list ap;
  va_start(ap, fmt);
  fputs("hetero: warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int cli_call_failed(const char* what) {
  const char* why = hetero_last_error();
  cli_error("%s: %s", what, why && *why ? why : "(no message)");
  return CLI_FAILED;
}

int cli_usage_error(const char* command, const char* fmt, ...) {
  cli_progress_clear();
  va_list ap;
  va_start(ap, fmt);
  fputs("hetero: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'hetero %s%s--help'.\n", command ? command : "", command ? " " : "");
  va_end(ap);
  return CLI_USAGE;
}

bool cli_strings_push(cli_strings* list, const char* item) {
  if (list->count == list->capacity) {
    const size_t capacity = list->capacity ? list->capacity * 2 : 8;
    const char** items = realloc((void*)list->items, capacity * sizeof *items);
    if (!items) {
      cli_error("out of memory");
      return false;
    }
    list->items = items;
    list->capacity = capacity;
  }
  list->items[list->count++] = item;
  return true;
}

void cli_strings_free(cli_strings* list) {
  free((void*)list->items);
  list->items = NULL;
  list->count = list->capacity = 0;
}

bool cli_parse_count(const char* command, const char* option, const char* text, long* out) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < 0) {
    cli_usage_error(command, "%s: '%s' is not a non-negative integer", option, text);
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_seconds(const char* command, const char* option, const char* text, double* out) {
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno || end == text || *end || !(v > 0) || v > 1e7) {
    cli_usage_error(command, "%s: '%s' is not a positive number of seconds", option, text);
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_dims(const char* text, int64_t** out_dims, size_t* out_rank) {
  if (strcmp(text, "scalar") == 0) {
    *out_dims = NULL;
    *out_rank = 0;
    return true;
  }
  size_t rank = 1;
  for (const char* p = text; *p; ++p) rank += *p == 'x';
  int64_t* dims = malloc(rank * sizeof *dims);
  if (!dims) return false;
  const char* p = text;
  for (size_t k = 0; k < rank; ++k) {
    if (*p < '0' || *p > '9') goto bad;
    char* end = NULL;
    errno = 0;
    const long long v = strtoll(p, &end, 10);
    if (errno || v < 0) goto bad;
    dims[k] = v;
    p = end;
    if (k + 1 < rank ? *p != 'x' : *p != '\0') goto bad;
    ++p;
  }
  *out_dims = dims;
  *out_rank = rank;
  return true;
bad:
  free(dims);
  return false;
}

const char* cli_format_dims(const int64_t* dims, int64_t rank, char* buf, size_t size) {
  if (rank < 0) {
    snprintf(buf, size, "unknown");
    return buf;
  }
  if (rank == 0) {
    snprintf(buf, size, "scalar");
    return buf;
  }
  size_t used = 0;
  buf[0] = '\0';
  for (int64_t k = 0; k < rank && used < size; ++k) {
    int n = dims[k] < 0 ? snprintf(buf + used, size - used, "%s?", k ? "x" : "")
                        : snprintf(buf + used, size - used, "%s%lld", k ? "x" : "", (long long)dims[k]);
    if (n < 0) break;
    used += (size_t)n;
  }
  return buf;
}

/* The length of the UTF-8 sequence `p` starts with, as jansson judges UTF-8
 * (its shortest valid prefix), or 0 when `p` starts none. */
static size_t utf8_sequence(const char* p, size_t left) {
  for (size_t n = 1; n <= 4 && n <= left; ++n) {
    json_t* probe = json_stringn(p, n);
    if (probe) {
      json_decref(probe);
      return n;
    }
  }
  return 0;
}

json_t* cli_json_text(const char* text) {
  json_t* valid = json_string(text);
  if (valid) return valid;
  const size_t size = strlen(text);
  char* repaired = malloc(3 * size + 1); /* each byte at worst becomes U+FFFD's three */
  if (!repaired) return NULL;
  size_t used = 0;
  for (size_t at = 0; at < size;) {
    const size_t n = utf8_sequence(text + at, size - at);
    if (n) {
      memcpy(repaired + used, text + at, n);
      used += n, at += n;
    } else {
      memcpy(repaired + used, "\xEF\xBF\xBD", 3);
      used += 3, at += 1;
    }
  }
  json_t* out = json_stringn(repaired, used);
  free(repaired);
  return out;
}

bool cli_json_print(json_t* document) {
  /* Reals with 15 significant digits: rounded figures print as rounded. */
  char* text = document ? json_dumps(document, JSON_REAL_PRECISION(15)) : NULL;
  json_decref(document);
  if (!text) {
    cli_error("out of memory while writing JSON");
    return false;
  }
  puts(text);
  free(text);
  return true;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool cli_write_file(const char* path, const void* data, size_t size) {
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
    cli_error("cannot write %s: the path is too long", path);
    return false;
  }
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    cli_error("cannot write %s: %s", path, strerror(errno));
    return false;
  }
  const char* p = data;
  size_t left = size;
  int err = 0;
  while (left > 0 && !err) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
    } else {
      p += n;
      left -= (size_t)n;
    }
  }
  if (!err && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) {
    cli_error("cannot write %s: %s", path, strerror(err));
    unlink(tmp);
  }
  return !err;
}
