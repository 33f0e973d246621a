/* topo/gen.c — fabric generators: multi-dimensional compositions of ring, line (mesh),
 * fully connected and switch dimensions in ASTRA-sim's style (dimension 0 fastest). */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t stride_of(const topo_dim_t *dims, uint32_t d) {
  uint32_t s = 1;
  for (uint32_t e = 0; e < d; e++)
    s *= dims[e].size;
  return s;
}

/* A link of dimension d as the generator makes it: the dimension's figures. */
static topo_link_t dim_link(uint32_t a, uint32_t b, const topo_dim_t *dim, uint32_t d) {
  return (topo_link_t){a, b, dim->bandwidth_GBps, (uint64_t)llround(dim->latency_ns * 1000.0), d};
}

static tn_status_t add_link(tn_vec_t *v, uint32_t a, uint32_t b, const topo_dim_t *dim, uint32_t d,
                            tn_err_t *err) {
  topo_link_t l = dim_link(a, b, dim, d);
  return tn_vec_push(v, &l, err);
}

uint32_t topo_dim_stride(const topo_t *t, uint32_t d) {
  return stride_of(t->dims, d);
}

bool topo_dims_uniform(const topo_t *t) {
  if (t->ndims == 0) return false;
  for (uint32_t i = 0; i < t->nlinks; i++) {
    const topo_link_t *l = &t->links[i];
    if (l->dim >= t->ndims) return false;
    topo_link_t g = dim_link(l->src, l->dst, &t->dims[l->dim], l->dim);
    if (l->bandwidth_GBps != g.bandwidth_GBps || l->latency_ps != g.latency_ps) return false;
  }
  return true;
}

static tn_status_t add_pair(tn_vec_t *v, uint32_t a, uint32_t b, const topo_dim_t *dim, uint32_t d,
                            tn_err_t *err) {
  tn_status_t st = add_link(v, a, b, dim, d, err);
  return st == TN_OK ? add_link(v, b, a, dim, d, err) : st;
}

/* Adds the links of dimension d for the row whose coordinate d is 0 at NPU base. */
static tn_status_t add_row(tn_vec_t *v, const topo_dim_t *dim, uint32_t d, uint32_t base,
                           uint32_t stride, uint32_t sw, tn_err_t *err) {
  uint32_t s = dim->size;
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < s && st == TN_OK; i++) {
    uint32_t a = base + i * stride;
    switch (dim->kind) {
    case TOPO_DIM_RING:
      if (s < 2) break;
      if (s == 2) {
        if (i == 0)
          st = dim->unidirectional ? add_link(v, a, a + stride, dim, d, err)
                                   : add_pair(v, a, a + stride, dim, d, err);
        if (i == 1 && dim->unidirectional) st = add_link(v, a, base, dim, d, err);
        break;
      }
      st = add_link(v, a, base + ((i + 1) % s) * stride, dim, d, err);
      if (st == TN_OK && !dim->unidirectional)
        st = add_link(v, a, base + ((i + s - 1) % s) * stride, dim, d, err);
      break;
    case TOPO_DIM_LINE:
      if (i + 1 < s) st = add_pair(v, a, a + stride, dim, d, err);
      break;
    case TOPO_DIM_FC:
      for (uint32_t j = 0; j < s && st == TN_OK; j++)
        if (j != i) st = add_link(v, a, base + j * stride, dim, d, err);
      break;
    case TOPO_DIM_SWITCH: st = add_pair(v, a, sw, dim, d, err); break;
    }
  }
  return st;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return tn_mul_u64(a, b, &r) ? r : UINT64_MAX;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return tn_add_u64(a, b, &r) ? r : UINT64_MAX;
}

void topo_i_gen_counts(const topo_dim_t *dims, uint32_t ndims, uint64_t *npus, uint64_t *switches,
                       uint64_t *links) {
  uint64_t n = 1, sw = 0, l = 0;
  for (uint32_t d = 0; d < ndims; d++)
    n = sat_mul(n, dims[d].size);
  for (uint32_t d = 0; d < ndims && n > 0; d++) {
    uint64_t s = dims[d].size, rows = n == UINT64_MAX ? UINT64_MAX : n / s, per_row = 0;
    switch (dims[d].kind) {
    case TOPO_DIM_RING:
      per_row = s < 2 ? 0 : s == 2 ? 2 : dims[d].unidirectional ? s : 2 * s;
      break;
    case TOPO_DIM_LINE: per_row = 2 * (s - 1); break;
    case TOPO_DIM_FC: per_row = sat_mul(s, s - 1); break;
    case TOPO_DIM_SWITCH:
      per_row = 2 * s;
      sw = sat_add(sw, rows);
      break;
    }
    l = sat_add(l, sat_mul(rows, per_row));
  }
  *npus = n;
  *switches = sw;
  *links = l;
}

/* The one size rule of the generators: "the fabric would have N <what>, more than the cap
 * of C (NAME)" as TN_LIMIT; n is saturated (UINT64_MAX: beyond counting). */
static tn_status_t over_cap(tn_err_t *err, uint64_t n, const char *what, uint32_t cap,
                            const char *cap_name) {
  if (n == UINT64_MAX)
    return tn_err_set(err, TN_LIMIT, "the fabric would have more %s than the cap of %u (%s)", what,
                      cap, cap_name);
  return tn_err_set(err, TN_LIMIT, "the fabric would have %llu %s, more than the cap of %u (%s)",
                    (unsigned long long)n, what, cap, cap_name);
}

tn_status_t topo_i_gen_check(const topo_dim_t *dims, uint32_t ndims, tn_err_t *err) {
  if (ndims == 0 || ndims > TOPO_MAX_DIMS)
    return tn_err_set(err, TN_INVAL, "a generated fabric has 1 to %u dimensions, not %u",
                      TOPO_MAX_DIMS, ndims);
  for (uint32_t d = 0; d < ndims; d++) {
    if (dims[d].size == 0) return tn_err_set(err, TN_PARSE, "dims[%u]: size must be at least 1", d);
    if (dims[d].kind > TOPO_DIM_SWITCH)
      return tn_err_set(err, TN_PARSE, "dims[%u]: unknown kind", d);
    char why[96];
    if (!topo_bandwidth_check(dims[d].bandwidth_GBps, why, sizeof why))
      return tn_err_set(err, TN_PARSE, "dims[%u]: bandwidth %s", d, why);
    if (!(dims[d].latency_ns >= 0.0) || dims[d].latency_ns > TOPO_MAX_LATENCY_NS)
      return tn_err_set(err, TN_PARSE, "dims[%u]: latency must be in [0, %g] ns", d,
                        TOPO_MAX_LATENCY_NS);
  }
  uint64_t n = 0, sw = 0, nl = 0;
  topo_i_gen_counts(dims, ndims, &n, &sw, &nl);
  if (n > TOPO_MAX_NPUS) return over_cap(err, n, "NPUs", TOPO_MAX_NPUS, "TOPO_MAX_NPUS");
  if (sw > TOPO_MAX_SWITCHES)
    return over_cap(err, sw, "switches", TOPO_MAX_SWITCHES, "TOPO_MAX_SWITCHES");
  if (nl > TOPO_MAX_LINKS) return over_cap(err, nl, "links", TOPO_MAX_LINKS, "TOPO_MAX_LINKS");
  return TN_OK;
}

tn_status_t topo_gen(const char *name, const topo_dim_t *dims, uint32_t ndims, topo_t **out,
                     tn_err_t *err) {
  *out = NULL;
  tn_status_t st = topo_i_gen_check(dims, ndims, err);
  if (st != TN_OK) return st;
  uint64_t n64 = 0, sw64 = 0, nl64 = 0;
  topo_i_gen_counts(dims, ndims, &n64, &sw64, &nl64);
  uint32_t npus = (uint32_t)n64, switches = (uint32_t)sw64;
  tn_vec_t v;
  tn_vec_init(&v, sizeof(topo_link_t));
  uint32_t next_sw = npus;
  for (uint32_t d = 0; d < ndims && st == TN_OK; d++) {
    uint32_t stride = stride_of(dims, d), s = dims[d].size;
    /* Rows of dimension d: every NPU whose coordinate d is 0, in id order. */
    for (uint32_t base = 0; base < npus && st == TN_OK; base++) {
      if ((base / stride) % s != 0) continue;
      uint32_t sw = dims[d].kind == TOPO_DIM_SWITCH ? next_sw++ : 0;
      st = add_row(&v, &dims[d], d, base, stride, sw, err);
    }
  }
  assert(st != TN_OK || v.len == nl64); /* topo_i_gen_counts is exact */
  if (st == TN_OK) st = topo_create(name, npus, switches, v.data, (uint32_t)v.len, out, err);
  tn_vec_free(&v);
  if (st != TN_OK) return st;
  (*out)->ndims = ndims;
  memcpy((*out)->dims, dims, ndims * sizeof *dims);
  return TN_OK;
}

const char *topo_dim_kind_name(topo_dim_kind_t k) {
  switch (k) {
  case TOPO_DIM_RING: return "ring";
  case TOPO_DIM_LINE: return "line";
  case TOPO_DIM_FC: return "fc";
  case TOPO_DIM_SWITCH: return "switch";
  }
  return "?";
}

/* The one table of generator KINDs (docs/architecture.md §6): the dimension kind each
 * builds, how many sizes it takes, and whether its one size is an NPU count split into
 * lines of 2 (a hypercube). The name comes first, so tn_suggest reads the table as is. */
typedef struct gen_kind {
  const char *name;
  topo_dim_kind_t dk;
  uint32_t min_dims, max_dims;
  bool cube;
} gen_kind_t;

static const gen_kind_t gen_kinds[] = {
    {"ring", TOPO_DIM_RING, 1, 1, false},     {"fc", TOPO_DIM_FC, 1, 1, false},
    {"switch", TOPO_DIM_SWITCH, 1, 1, false}, {"mesh", TOPO_DIM_LINE, 2, 3, false},
    {"torus", TOPO_DIM_RING, 2, 3, false},    {"hypercube", TOPO_DIM_LINE, 1, 1, true}};
#define N_GEN_KINDS (sizeof gen_kinds / sizeof gen_kinds[0])

static const gen_kind_t *find_kind(const char *kind) {
  for (size_t k = 0; k < N_GEN_KINDS; k++)
    if (strcmp(gen_kinds[k].name, kind) == 0) return &gen_kinds[k];
  return NULL;
}

tn_status_t topo_i_gen_kind_check(const char *kind, const char *word, tn_err_t *err) {
  if (find_kind(kind) != NULL) return TN_OK;
  const char *hint = tn_suggest(kind, gen_kinds, N_GEN_KINDS, sizeof *gen_kinds);
  if (hint)
    return tn_err_set(err, TN_INVAL, "unknown %s '%s' (did you mean '%s'?)", word, kind, hint);
  return tn_err_set(err, TN_INVAL,
                    "unknown %s '%s' (use ring, fc, switch, mesh, torus or hypercube)", word, kind);
}

/* Whether g's rule (topo_i_kind_shape) rebuilds dims exactly from g's sizes. */
static bool kind_fits(const gen_kind_t *g, const topo_dim_t *dims, uint32_t ndims) {
  bool all2 = true, atleast2 = true;
  for (uint32_t d = 0; d < ndims; d++) {
    if (dims[d].kind != g->dk || dims[d].unidirectional != dims[0].unidirectional) return false;
    all2 = all2 && dims[d].size == 2;
    atleast2 = atleast2 && dims[d].size >= 2;
  }
  if (dims[0].unidirectional && g->dk != TOPO_DIM_RING) return false;
  if (g->cube) return all2 && ndims >= 1 && ndims <= TOPO_MAX_DIMS;
  return atleast2 && ndims >= g->min_dims && ndims <= g->max_dims;
}

const char *topo_i_gen_kind_of(const topo_dim_t *dims, uint32_t ndims) {
  if (ndims == 0) return NULL;
  const char *fit = NULL;
  for (size_t k = 0; k < N_GEN_KINDS && fit == NULL; k++)
    if (kind_fits(&gen_kinds[k], dims, ndims)) fit = gen_kinds[k].name;
  /* Lines of 2 in three or more dimensions are written as the hypercube they are (a 2x2
   * stays a mesh). */
  for (size_t k = 0; k < N_GEN_KINDS; k++)
    if (gen_kinds[k].cube && ndims >= 3 && kind_fits(&gen_kinds[k], dims, ndims))
      fit = gen_kinds[k].name;
  return fit;
}

/* Parses DIMS ("8", "8x8", "4x4x4") into sizes (TOPO_MAX_DIMS entries) and *n. A size is
 * any decimal number (0 and 1 included: the kind's rule judges them); one above
 * TOPO_MAX_NPUS fails by the size rule, since the fabric has at least that many NPUs. */
static tn_status_t parse_dims(const char *s, uint32_t *sizes, uint32_t *n, tn_err_t *err) {
  *n = 0;
  const char *p = s;
  if (s == NULL || *s == '\0') return tn_err_set(err, TN_INVAL, "empty DIMS");
  while (*p) {
    if (*n == TOPO_MAX_DIMS)
      return tn_err_set(err, TN_INVAL, "DIMS '%s' has more than %u dimensions", s, TOPO_MAX_DIMS);
    if (*p < '0' || *p > '9')
      return tn_err_set(err, TN_INVAL, "DIMS '%s' must look like 8, 8x8 or 4x4x4", s);
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
      v = v > TOPO_MAX_NPUS ? v : v * 10 + (uint64_t)(*p - '0');
    if (v > TOPO_MAX_NPUS) {
      tn_status_t st = over_cap(err, UINT64_MAX, "NPUs", TOPO_MAX_NPUS, "TOPO_MAX_NPUS");
      tn_err_prefix(err, "DIMS '%s'", s);
      return st;
    }
    sizes[(*n)++] = (uint32_t)v;
    if (*p == 'x') {
      p++;
      if (*p == '\0') return tn_err_set(err, TN_INVAL, "DIMS '%s' ends with 'x'", s);
    } else if (*p != '\0') {
      return tn_err_set(err, TN_INVAL, "DIMS '%s' must look like 8, 8x8 or 4x4x4", s);
    }
  }
  return TN_OK;
}

tn_status_t topo_i_cube_dims(uint32_t npus, uint32_t *sizes, uint32_t *n, tn_err_t *err) {
  if (npus < 2 || (npus & (npus - 1)) != 0)
    return tn_err_set(err, TN_INVAL, "a hypercube's NPU count must be a power of two >= 2, not %u",
                      npus);
  uint32_t d = 0;
  for (uint32_t v = npus; v > 1; v >>= 1)
    d++;
  if (d > TOPO_MAX_DIMS)
    return tn_err_set(err, TN_INVAL, "a hypercube has at most 2^%u = %u NPUs, not %u",
                      TOPO_MAX_DIMS, 1u << TOPO_MAX_DIMS, npus);
  for (uint32_t i = 0; i < d; i++)
    sizes[i] = 2;
  *n = d;
  return TN_OK;
}

tn_status_t topo_i_kind_shape(const char *kind, uint32_t *sizes, uint32_t *n, topo_dim_kind_t *dk,
                              tn_err_t *err) {
  const gen_kind_t *g = find_kind(kind);
  if (g == NULL) return topo_i_gen_kind_check(kind, "KIND", err);
  *dk = g->dk;
  if (g->max_dims > 1 && (*n < g->min_dims || *n > g->max_dims))
    return tn_err_set(err, TN_INVAL, "a %s takes %u or %u dimensions (like 8x8), not %u", kind,
                      g->min_dims, g->max_dims, *n);
  if (g->max_dims == 1 && *n != 1)
    return tn_err_set(err, TN_INVAL, "a %s takes one size (like 8), not %u", kind, *n);
  if (g->cube) return topo_i_cube_dims(sizes[0], sizes, n, err);
  for (uint32_t d = 0; d < *n; d++)
    if (sizes[d] < 2) return tn_err_set(err, TN_INVAL, "every size must be >= 2, not %u", sizes[d]);
  return TN_OK;
}

tn_status_t topo_gen_kind(const char *kind, const char *dims_s, double bw, double lat, topo_t **out,
                          tn_err_t *err) {
  *out = NULL;
  uint32_t sizes[TOPO_MAX_DIMS], n = 0;
  topo_dim_kind_t k = TOPO_DIM_RING;
  tn_err_t e = {0};
  tn_status_t st = parse_dims(dims_s, sizes, &n, &e);
  if (st == TN_OK) st = topo_i_kind_shape(kind, sizes, &n, &k, &e);
  topo_dim_t dims[TOPO_MAX_DIMS];
  for (uint32_t d = 0; d < n && st == TN_OK; d++)
    dims[d] = (topo_dim_t){k, sizes[d], bw, lat, false};
  /* Refused before anything is allocated; a KIND and DIMS the caps refuse are a bad
   * argument like any other (exit 1), not a valid request that cannot be done. */
  if (st == TN_OK) st = topo_i_gen_check(dims, n, &e);
  if (st != TN_OK) return tn_err_set(err, st == TN_LIMIT ? TN_INVAL : st, "%s", e.msg);
  char name[96];
  snprintf(name, sizeof name, "%s-%s", kind, dims_s);
  return topo_gen(name, dims, n, out, err);
}
