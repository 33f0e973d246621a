/* cli/util.c — option parsing, error reporting and topology resolution for all
 * subcommands. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"

static const cli_opt_t *find_long(const cli_opt_t *opts, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(opts[i].long_name) == len && strncmp(opts[i].long_name, name, len) == 0)
      return &opts[i];
  return NULL;
}

static tn_status_t unknown_option(const cli_opt_t *opts, size_t n, const char *arg, tn_err_t *err) {
  const char *name = arg;
  while (*name == '-')
    name++;
  char buf[80];
  snprintf(buf, sizeof buf, "%s", name);
  char *eq = strchr(buf, '=');
  if (eq) *eq = '\0';
  const char *best = tn_suggest(buf, opts, n, sizeof *opts);
  if (best)
    return tn_err_set(err, TN_INVAL, "unknown option '%s' (did you mean '--%s'?)", arg, best);
  return tn_err_set(err, TN_INVAL, "unknown option '%s'", arg);
}

tn_status_t cli_parse(int argc, char **argv, const cli_opt_t *opts, size_t nopts, const char **pos,
                      size_t max_pos, size_t *npos, tn_err_t *err) {
  *npos = 0;
  bool only_pos = false;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (only_pos || arg[0] != '-' || arg[1] == '\0') {
      if (*npos == max_pos) return tn_err_set(err, TN_INVAL, "unexpected argument '%s'", arg);
      pos[(*npos)++] = arg;
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      only_pos = true;
      continue;
    }
    const cli_opt_t *o = NULL;
    const char *inline_val = NULL;
    if (arg[1] == '-') {
      const char *name = arg + 2, *eq = strchr(name, '=');
      o = find_long(opts, nopts, name, eq ? (size_t)(eq - name) : strlen(name));
      if (eq) inline_val = eq + 1;
    } else if (arg[2] == '\0') {
      for (size_t k = 0; k < nopts && !o; k++)
        if (opts[k].short_name == arg[1]) o = &opts[k];
    }
    if (o == NULL) return unknown_option(opts, nopts, arg, err);
    if (o->flag) {
      if (inline_val)
        return tn_err_set(err, TN_INVAL, "option '--%s' takes no value", o->long_name);
      *o->flag = true;
      continue;
    }
    if (inline_val == NULL) {
      if (i + 1 >= argc)
        return tn_err_set(err, TN_INVAL, "option '--%s' needs a value", o->long_name);
      inline_val = argv[++i];
    }
    *o->value = inline_val;
  }
  return TN_OK;
}

int cli_report(const char *cmd, const tn_err_t *err) {
  fprintf(stderr, "tenet %s: %s\n", cmd, err->msg[0] ? err->msg : tn_status_str(err->status));
  int code = tn_status_exit_code(err->status);
  return code == 0 ? 3 : code;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tenet %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'tenet %s --help')\n", cmd);
  return 1;
}

const char *cli_topology_dir(void) {
  const char *env = getenv("TENET_TOPOLOGIES");
  return env && *env ? env : TENET_TOPOLOGY_DIR;
}

tn_status_t cli_load_topo(const char *arg, topo_t **out, tn_err_t *err) {
  /* Every command takes the same TOPO forms: a file, a shipped name, or KIND-DIMS. */
  return cli_load_topo_spec(arg, out, err);
}

tn_status_t cli_read_set(const char *prefix, const topo_t *t, algo_t **out, tn_err_t *err) {
  tn_status_t st = emit_chakra_read(prefix, 0, out, err);
  if (st == TN_OK && (*out)->npus == t->npus && (*out)->fabric[0] &&
      strcmp((*out)->fabric, t->name) != 0)
    fprintf(stderr, "tenet: note: %s was made for the fabric '%s', not '%s'\n", prefix,
            (*out)->fabric, t->name);
  if (st != TN_OK || (*out)->npus == t->npus) return st;
  uint32_t n = (*out)->npus;
  algo_free(*out);
  *out = NULL;
  return tn_err_set(err, TN_PARSE,
                    "%s: a set of %u ranks (%s.0.et .. %s.%u.et), but the fabric "
                    "'%s' has %u NPUs: each NPU runs one rank file",
                    prefix, n, prefix, prefix, n - 1, t->name, t->npus);
}

typedef struct verify_ctx {
  const topo_t *t;
  algo_verify_report_t *rep;
} verify_ctx_t;

void cli_unlink_ranks(const char *prefix, uint32_t n) {
  if (n == 0) return;
  size_t len = strlen(prefix) + 16; /* "." rank ".et" */
  char *path = malloc(len);
  for (uint32_t r = 0; path && r < n; r++) {
    snprintf(path, len, "%s.%u.et", prefix, r);
    unlink(path);
  }
  free(path);
}

tn_status_t cli_verify_made(const topo_t *t, const algo_t *a, algo_verify_report_t *rep,
                            tn_err_t *err) {
  tn_err_t e = {0};
  if (algo_verify(a, t, rep, &e) != TN_OK)
    return tn_err_set(err, TN_INTERNAL, "synthesized algorithm failed verification: %s", e.msg);
  return TN_OK;
}

static tn_status_t verify_set(void *ctx, const algo_t *a, tn_err_t *err) {
  const verify_ctx_t *v = ctx;
  return cli_verify_made(v->t, a, v->rep, err);
}

tn_status_t cli_verify_write(const topo_t *t, const algo_t *a, const char *prefix,
                             algo_verify_report_t *rep, tn_err_t *err) {
  verify_ctx_t v = {t, rep};
  return emit_chakra_write_checked(a, prefix, verify_set, &v, err);
}

tn_status_t cli_synth_opts(const char *algo, const char *seed, const char *chunks, synth_opts_t *so,
                           tn_err_t *err) {
  so->method = SYNTH_AUTO;
  so->seed = CLI_DEFAULT_SEED;
  tn_status_t st = algo ? synth_method_parse(algo, "--algo", &so->method, err) : TN_OK;
  uint64_t v = 0;
  if (st == TN_OK && chunks && (st = tn_parse_u64(chunks, 1, 1024, "--chunks", &v, err)) == TN_OK)
    so->chunks_per_npu = (uint32_t)v;
  if (st == TN_OK && seed) st = tn_parse_u64(seed, 0, UINT64_MAX, "--seed", &so->seed, err);
  return st;
}
