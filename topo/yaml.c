/* topo/yaml.c — import of ASTRA-sim network YAML files (the analytical backend's
 * `topology: [Ring, Switch]`, `npus_count`, `bandwidth` (GB/s), `latency` (ns) lists)
 * into a generated topo_t (dimension 0 fastest, as ASTRA-sim numbers NPUs). First stage of
 * the pipeline, beside json.c. Errors carry line:column from libyaml's marks. */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum { K_TOPOLOGY, K_NPUS, K_BANDWIDTH, K_LATENCY, K_COUNT };
static const char *const yaml_keys[K_COUNT] = {"topology", "npus_count", "bandwidth",
                                               "latency"};

/* The dimension kinds ASTRA-sim's analytical backend knows. It has no mesh: a user with a
 * mesh writes a topology JSON file instead. */
static const char *const astra_kinds[] = {"Ring", "FullyConnected", "Switch"};
static const topo_dim_kind_t astra_dim[] = {TOPO_DIM_RING, TOPO_DIM_FC, TOPO_DIM_SWITCH};

typedef struct yval {
  char text[64];
  unsigned line, col;
} yval_t;

typedef struct ylist {
  bool given;
  unsigned line, col; /* of the key */
  uint32_t n;
  yval_t v[TOPO_MAX_DIMS];
} ylist_t;

typedef struct yctx {
  const char *what;
  tn_err_t *err;
  yaml_parser_t parser;
  yaml_event_t ev;
  bool have_ev;
} yctx_t;

static tn_status_t yerr(yctx_t *c, unsigned line, unsigned col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static tn_status_t yerr(yctx_t *c, unsigned line, unsigned col, const char *fmt, ...) {
  char where[600];
  if (line == 0)
    snprintf(where, sizeof where, "%s", c->what);
  else
    snprintf(where, sizeof where, "%s:%u:%u", c->what, line, col);
  va_list ap;
  va_start(ap, fmt);
  tn_status_t st = tn_err_set_at(c->err, TN_PARSE, where, fmt, ap);
  va_end(ap);
  return st;
}

static unsigned mline(const yaml_mark_t *m) { return (unsigned)m->line + 1; }
static unsigned mcol(const yaml_mark_t *m) { return (unsigned)m->column + 1; }

/* Reads the next event into c->ev (the previous one is freed). */
static tn_status_t next(yctx_t *c) {
  if (c->have_ev) yaml_event_delete(&c->ev);
  c->have_ev = false;
  if (!yaml_parser_parse(&c->parser, &c->ev)) {
    const char *problem = c->parser.problem ? c->parser.problem : "malformed YAML";
    return yerr(c, mline(&c->parser.problem_mark), mcol(&c->parser.problem_mark),
                "malformed YAML: %s", problem);
  }
  c->have_ev = true;
  if (c->ev.type == YAML_ALIAS_EVENT)
    return yerr(c, mline(&c->ev.start_mark), mcol(&c->ev.start_mark),
                "YAML aliases are not supported here");
  return TN_OK;
}

static tn_status_t read_list(yctx_t *c, const char *key, ylist_t *l) {
  tn_status_t st = next(c);
  if (st != TN_OK) return st;
  unsigned line = mline(&c->ev.start_mark), col = mcol(&c->ev.start_mark);
  if (c->ev.type != YAML_SEQUENCE_START_EVENT)
    return yerr(c, line, col, "%s must be a list like [ 8, 16 ]", key);
  for (;;) {
    if ((st = next(c)) != TN_OK) return st;
    line = mline(&c->ev.start_mark), col = mcol(&c->ev.start_mark);
    if (c->ev.type == YAML_SEQUENCE_END_EVENT) break;
    if (c->ev.type != YAML_SCALAR_EVENT)
      return yerr(c, line, col, "%s[%u] must be a plain value, not a list or a mapping", key,
                  l->n);
    if (l->n == TOPO_MAX_DIMS)
      return yerr(c, line, col, "%s has more than %u entries (TOPO_MAX_DIMS)", key,
                  TOPO_MAX_DIMS);
    yval_t *v = &l->v[l->n++];
    snprintf(v->text, sizeof v->text, "%s", (const char *)c->ev.data.scalar.value);
    v->line = line;
    v->col = col;
  }
  if (l->n == 0) return yerr(c, l->line, l->col, "%s must not be empty", key);
  return TN_OK;
}

/* Parses the one mapping of the document into the four lists. */
static tn_status_t read_doc(yctx_t *c, ylist_t *lists) {
  tn_status_t st = next(c);
  if (st != TN_OK) return st;
  if (c->ev.type != YAML_STREAM_START_EVENT) return yerr(c, 0, 0, "malformed YAML stream");
  if ((st = next(c)) != TN_OK) return st;
  if (c->ev.type == YAML_STREAM_END_EVENT)
    return yerr(c, 0, 0, "empty file (expected topology, npus_count, bandwidth, latency)");
  if ((st = next(c)) != TN_OK) return st;
  if (c->ev.type != YAML_MAPPING_START_EVENT)
    return yerr(c, mline(&c->ev.start_mark), mcol(&c->ev.start_mark),
                "the top level must be a mapping (topology: [ ... ], npus_count: [ ... ], ...)");
  for (;;) {
    if ((st = next(c)) != TN_OK) return st;
    if (c->ev.type == YAML_MAPPING_END_EVENT) break;
    unsigned line = mline(&c->ev.start_mark), col = mcol(&c->ev.start_mark);
    if (c->ev.type != YAML_SCALAR_EVENT) return yerr(c, line, col, "keys must be plain words");
    char key[64];
    snprintf(key, sizeof key, "%s", (const char *)c->ev.data.scalar.value);
    int k = 0;
    while (k < K_COUNT && strcmp(key, yaml_keys[k]) != 0) k++;
    if (k == K_COUNT) {
      const char *hint = tn_suggest(key, yaml_keys, K_COUNT, sizeof(char *));
      if (hint) return yerr(c, line, col, "unknown key '%s' (did you mean '%s'?)", key, hint);
      return yerr(c, line, col, "unknown key '%s' (expected topology, npus_count, bandwidth, "
                  "latency)", key);
    }
    if (lists[k].given) return yerr(c, line, col, "key '%s' is given twice", key);
    lists[k].given = true;
    lists[k].line = line;
    lists[k].col = col;
    if ((st = read_list(c, key, &lists[k])) != TN_OK) return st;
  }
  if ((st = next(c)) != TN_OK) return st; /* document end */
  if ((st = next(c)) != TN_OK) return st;
  if (c->ev.type != YAML_STREAM_END_EVENT)
    return yerr(c, mline(&c->ev.start_mark), mcol(&c->ev.start_mark),
                "only one YAML document is allowed");
  return TN_OK;
}

static tn_status_t to_number(yctx_t *c, const char *key, uint32_t d, const yval_t *v,
                             double *out) {
  errno = 0;
  char *end = NULL;
  double x = strtod(v->text, &end);
  if (v->text[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(x))
    return yerr(c, v->line, v->col, "%s[%u] must be a number, not '%s'", key, d, v->text);
  *out = x;
  return TN_OK;
}

static tn_status_t to_dims(yctx_t *c, const ylist_t *lists, topo_dim_t *dims, uint32_t *nd) {
  for (int k = 0; k < K_COUNT; k++)
    if (!lists[k].given) return yerr(c, 0, 0, "missing key '%s'", yaml_keys[k]);
  uint32_t n = lists[K_TOPOLOGY].n;
  for (int k = 1; k < K_COUNT; k++)
    if (lists[k].n != n)
      return yerr(c, lists[k].line, lists[k].col,
                  "%s has %u entries but topology has %u", yaml_keys[k], lists[k].n, n);
  for (uint32_t d = 0; d < n; d++) {
    const yval_t *v = &lists[K_TOPOLOGY].v[d];
    size_t k = 0;
    while (k < 3 && strcmp(v->text, astra_kinds[k]) != 0) k++;
    if (k == 3) {
      const char *hint = tn_suggest(v->text, astra_kinds, 3, sizeof(char *));
      if (hint)
        return yerr(c, v->line, v->col, "topology[%u]: unknown kind '%s' (did you mean '%s'?)",
                    d, v->text, hint);
      return yerr(c, v->line, v->col, "topology[%u]: unknown kind '%s' (use Ring, "
                  "FullyConnected or Switch)", d, v->text);
    }
    dims[d] = (topo_dim_t){astra_dim[k], 0, 0, 0, false};
    double x = 0;
    tn_status_t st = to_number(c, "npus_count", d, &lists[K_NPUS].v[d], &x);
    v = &lists[K_NPUS].v[d];
    if (st != TN_OK) return st;
    if (floor(x) != x || x < 1 || x > TOPO_MAX_NPUS)
      return yerr(c, v->line, v->col, "npus_count[%u] must be an integer in [1, %u], not %s",
                  d, TOPO_MAX_NPUS, v->text);
    dims[d].size = (uint32_t)x;
    v = &lists[K_BANDWIDTH].v[d];
    if ((st = to_number(c, "bandwidth", d, v, &x)) != TN_OK) return st;
    char why[96];
    if (!topo_bandwidth_check(x, why, sizeof why))
      return yerr(c, v->line, v->col, "bandwidth[%u] %s", d, why);
    dims[d].bandwidth_GBps = x;
    v = &lists[K_LATENCY].v[d];
    if ((st = to_number(c, "latency", d, v, &x)) != TN_OK) return st;
    if (!(x >= 0) || x > TOPO_MAX_LATENCY_NS)
      return yerr(c, v->line, v->col, "latency[%u] must be >= 0 and at most %g ns, not %s", d,
                  TOPO_MAX_LATENCY_NS, v->text);
    dims[d].latency_ns = x;
  }
  *nd = n;
  uint64_t npus = 0, sw = 0, links = 0;
  topo_i_gen_counts(dims, n, &npus, &sw, &links);
  if (npus > TOPO_MAX_NPUS || sw > TOPO_MAX_SWITCHES || links > TOPO_MAX_LINKS)
    return yerr(c, lists[K_NPUS].line, lists[K_NPUS].col,
                "npus_count: the fabric would have %llu NPUs, %llu switches and %llu links, "
                "more than the caps (%u, %u, %u)", (unsigned long long)npus,
                (unsigned long long)sw, (unsigned long long)links, TOPO_MAX_NPUS,
                TOPO_MAX_SWITCHES, TOPO_MAX_LINKS);
  return TN_OK;
}

tn_status_t topo_load_yaml(const char *text, size_t len, const char *what, topo_t **out,
                           tn_err_t *err) {
  *out = NULL;
  yctx_t c;
  memset(&c, 0, sizeof c);
  c.what = what ? what : "<yaml>";
  c.err = err;
  if (!yaml_parser_initialize(&c.parser))
    return tn_err_set(err, TN_NOMEM, "%s: cannot initialise the YAML parser", c.what);
  yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
  ylist_t lists[K_COUNT];
  memset(lists, 0, sizeof lists);
  topo_dim_t dims[TOPO_MAX_DIMS];
  uint32_t nd = 0;
  tn_status_t st = read_doc(&c, lists);
  if (c.have_ev) yaml_event_delete(&c.ev);
  yaml_parser_delete(&c.parser);
  if (st == TN_OK) st = to_dims(&c, lists, dims, &nd);
  if (st != TN_OK) return st;
  /* The name: the file's base name without its extension. */
  char name[256];
  const char *b = strrchr(c.what, '/');
  snprintf(name, sizeof name, "%s", b ? b + 1 : c.what);
  char *dot = strrchr(name, '.');
  if (dot && dot != name) *dot = '\0';
  st = topo_gen(name, dims, nd, out, err);
  if (st != TN_OK) {
    tn_err_prefix(err, "%s", c.what);
    return st;
  }
  /* Say where the fabric came from: "ASTRA-sim network: Ring 8 x Switch 16". */
  char desc[256] = "ASTRA-sim network:";
  for (uint32_t d = 0; d < nd; d++) {
    size_t k = 0;
    while (astra_dim[k] != dims[d].kind) k++;
    size_t used = strlen(desc);
    snprintf(desc + used, sizeof desc - used, "%s %s %u", d ? " x" : "", astra_kinds[k],
             dims[d].size);
  }
  if ((st = topo_set_description(*out, desc, err)) != TN_OK) {
    topo_free(*out);
    *out = NULL;
  }
  return st;
}
