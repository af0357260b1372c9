/* Each command's options from one table: parsed with getopt_long (long
 * options, unique abbreviations, --opt=V and --opt V, "--" ending them) and
 * written into its --help, so that the two cannot drift apart. */
#define _GNU_SOURCE

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Help text starts at this column, as in every command's help. */
#define HELP_COLUMN 25

static size_t option_count(const cli_command* c) {
  size_t n = 0;
  while (c->options && c->options[n].name) ++n;
  return n;
}

void cli_print_help(const cli_command* c, FILE* out) {
  fprintf(out, "usage: hetero %s %s\n", c->name, c->usage);
  if (c->about) fprintf(out, "\n%s", c->about);
  const size_t n = option_count(c);
  if (n) fputc('\n', out);
  for (size_t k = 0; k < n; ++k) {
    const cli_opt* o = &c->options[k];
    char label[96];
    int used = o->short_name ? snprintf(label, sizeof label, "  -%c, --%s", o->short_name, o->name)
                             : snprintf(label, sizeof label, "  --%s", o->name);
    if (o->arg) snprintf(label + used, sizeof label - (size_t)used, " %s", o->arg);
    fputs(label, out);
    /* The help's lines, the first beside the label (or under it when the
     * label is too long), the others under the first. */
    size_t column = strlen(label);
    const char* line = o->help;
    if (column + 2 > HELP_COLUMN) {
      fputc('\n', out);
      column = 0;
    }
    while (line) {
      const char* end = strchr(line, '\n');
      fprintf(out, "%*s%.*s\n", (int)(HELP_COLUMN - column), "", (int)(end ? end - line : (long)strlen(line)), line);
      column = 0;
      line = end ? end + 1 : NULL;
    }
  }
  if (c->epilog) fprintf(out, "\n%s", c->epilog);
}

/* "ambiguous option '--a' (--alone, --and)", or "unknown option '--x'". */
static int unknown_option(const cli_command* c, const char* token) {
  const char* name = token + 2;
  const size_t len = strcspn(name, "=");
  char matches[256] = "";
  size_t found = 0, used = 0;
  for (size_t k = 0; token[0] == '-' && token[1] == '-' && c->options && c->options[k].name; ++k) {
    if (strncmp(c->options[k].name, name, len) != 0) continue;
    ++found;
    used += (size_t)snprintf(matches + used, used < sizeof matches ? sizeof matches - used : 0, "%s--%s",
                             found > 1 ? ", " : "", c->options[k].name);
    if (used >= sizeof matches) used = sizeof matches - 1;
  }
  if (found > 1) return cli_usage_error(c->name, "ambiguous option '%s' (%s)", token, matches);
  if (found == 1 && token[2 + len] == '=')
    return cli_usage_error(c->name, "option '%.*s' takes no value", (int)(len + 2), token);
  return cli_usage_error(c->name, "unknown option '%s'", token);
}

int cli_parse(const cli_command* c, int argc, char** argv, cli_handler handle, void* ctx) {
  const size_t n = option_count(c);
  struct option* longopts = calloc(n + 2, sizeof *longopts);
  char* shorts = malloc(2 * n + 8);
  if (!longopts || !shorts) {
    free(longopts);
    free(shorts);
    cli_error("out of memory");
    return CLI_FAILED;
  }
  /* "-": operands come back in order, as option 1 (bench's --and needs the
   * order); ":": a missing value is told apart from an unknown option. */
  size_t s = 0;
  shorts[s++] = '-';
  shorts[s++] = ':';
  shorts[s++] = 'h';
  for (size_t k = 0; k < n; ++k) {
    longopts[k] = (struct option){c->options[k].name, c->options[k].arg ? required_argument : no_argument, NULL,
                                  256 + (int)k};
    if (c->options[k].short_name) {
      shorts[s++] = c->options[k].short_name;
      if (c->options[k].arg) shorts[s++] = ':';
    }
  }
  shorts[s] = '\0';
  longopts[n] = (struct option){"help", no_argument, NULL, 'h'};

  int rc = CLI_OK;
  opterr = 0;
  optind = 0; /* glibc: start afresh (a command may parse twice) */
  for (int opt; rc == CLI_OK && (opt = getopt_long(argc, argv, shorts, longopts, NULL)) != -1;) {
    if (opt == 1) {
      rc = handle(ctx, CLI_OPERAND, optarg);
    } else if (opt == 'h') {
      cli_print_help(c, stdout);
      rc = CLI_HELP;
    } else if (opt >= 256) {
      rc = handle(ctx, c->options[opt - 256].id, optarg);
    } else if (opt == ':') {
      rc = cli_usage_error(c->name, "option %s needs a value", argv[optind - 1]);
    } else if (opt == '?') {
      /* A long option is the last token; a short one is optopt. */
      const char* last = argv[optind - 1];
      char token[3] = {'-', (char)optopt, '\0'};
      rc = unknown_option(c, strncmp(last, "--", 2) == 0 ? last : token);
    } else {
      for (size_t k = 0; k < n; ++k)
        if (c->options[k].short_name == opt) rc = handle(ctx, c->options[k].id, optarg);
    }
  }
  /* After "--", the rest are operands, even those that start with '-'. */
  for (int k = optind; rc == CLI_OK && k < argc; ++k) rc = handle(ctx, CLI_OPERAND, argv[k]);
  free(longopts);
  free(shorts);
  return rc;
}
