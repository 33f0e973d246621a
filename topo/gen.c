/* topo/gen.c — fabric generators: multi-dimensional compositions of ring, line (mesh),
 * fully connected and switch dimensions in ASTRA-sim's style (dimension 0 fastest). */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t stride_of(const topo_dim_t *dims, uint32_t d) {
  uint32_t s = 1;
  for (uint32_t e = 0; e < d; e++) s *= dims[e].size;
  return s;
}

static tn_status_t add_link(tn_vec_t *v, uint32_t a, uint32_t b, const topo_dim_t *dim,
                            uint32_t d, tn_err_t *err) {
  topo_link_t l = {a, b, dim->bandwidth_GBps, (uint64_t)llround(dim->latency_ns * 1000.0), d};
  return tn_vec_push(v, &l, err);
}

static tn_status_t add_pair(tn_vec_t *v, uint32_t a, uint32_t b, const topo_dim_t *dim,
                            uint32_t d, tn_err_t *err) {
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
        if (i == 0) st = dim->unidirectional ? add_link(v, a, a + stride, dim, d, err)
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
    case TOPO_DIM_SWITCH:
      st = add_pair(v, a, sw, dim, d, err);
      break;
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

void topo_i_gen_counts(const topo_dim_t *dims, uint32_t ndims, uint64_t *npus,
                       uint64_t *switches, uint64_t *links) {
  uint64_t n = 1, sw = 0, l = 0;
  for (uint32_t d = 0; d < ndims; d++) n = sat_mul(n, dims[d].size);
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

static tn_status_t check_dims(const topo_dim_t *dims, uint32_t ndims, uint32_t *npus,
                              uint32_t *switches, tn_err_t *err) {
  if (ndims == 0 || ndims > TOPO_MAX_DIMS)
    return tn_err_set(err, TN_INVAL, "a generated fabric has 1 to %u dimensions, not %u",
                      TOPO_MAX_DIMS, ndims);
  uint64_t n = 1, sw = 0;
  for (uint32_t d = 0; d < ndims; d++) {
    if (dims[d].size == 0)
      return tn_err_set(err, TN_PARSE, "dims[%u]: size must be at least 1", d);
    if (dims[d].kind > TOPO_DIM_SWITCH)
      return tn_err_set(err, TN_PARSE, "dims[%u]: unknown kind", d);
    if (!(dims[d].bandwidth_GBps > 0.0) || !isfinite(dims[d].bandwidth_GBps) ||
        dims[d].bandwidth_GBps > TOPO_MAX_BANDWIDTH_GBPS)
      return tn_err_set(err, TN_PARSE, "dims[%u]: bandwidth must be > 0 and at most %g GB/s",
                        d, TOPO_MAX_BANDWIDTH_GBPS);
    if (!(dims[d].latency_ns >= 0.0) || dims[d].latency_ns > TOPO_MAX_LATENCY_NS)
      return tn_err_set(err, TN_PARSE, "dims[%u]: latency must be in [0, %g] ns", d,
                        TOPO_MAX_LATENCY_NS);
    n *= dims[d].size;
    if (n > TOPO_MAX_NPUS)
      return tn_err_set(err, TN_LIMIT, "the fabric would have more than %u NPUs",
                        TOPO_MAX_NPUS);
  }
  for (uint32_t d = 0; d < ndims; d++)
    if (dims[d].kind == TOPO_DIM_SWITCH) sw += n / dims[d].size;
  if (sw > TOPO_MAX_SWITCHES)
    return tn_err_set(err, TN_LIMIT, "the fabric would have more than %u switches",
                      TOPO_MAX_SWITCHES);
  uint64_t cn = 0, csw = 0, cl = 0;
  topo_i_gen_counts(dims, ndims, &cn, &csw, &cl);
  if (cl > TOPO_MAX_LINKS)
    return tn_err_set(err, TN_LIMIT, "the fabric would have more than %u links",
                      TOPO_MAX_LINKS);
  *npus = (uint32_t)n;
  *switches = (uint32_t)sw;
  return TN_OK;
}

tn_status_t topo_gen(const char *name, const topo_dim_t *dims, uint32_t ndims, topo_t **out,
                     tn_err_t *err) {
  *out = NULL;
  uint32_t npus = 0, switches = 0;
  tn_status_t st = check_dims(dims, ndims, &npus, &switches, err);
  if (st != TN_OK) return st;
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
  if (st == TN_OK && v.len > TOPO_MAX_LINKS)
    st = tn_err_set(err, TN_LIMIT, "the fabric would have more than %u links", TOPO_MAX_LINKS);
  if (st == TN_OK)
    st = topo_create(name, npus, switches, v.data, (uint32_t)v.len, out, err);
  tn_vec_free(&v);
  if (st != TN_OK) return st;
  (*out)->ndims = ndims;
  memcpy((*out)->dims, dims, ndims * sizeof *dims);
  return TN_OK;
}

/* Parses "8", "8x8", "4x4x4" into sizes; returns the count. */
static tn_status_t parse_dims(const char *s, uint32_t *sizes, uint32_t *n, tn_err_t *err) {
  *n = 0;
  const char *p = s;
  if (s == NULL || *s == '\0') return tn_err_set(err, TN_INVAL, "empty DIMS");
  while (*p) {
    if (*n == TOPO_MAX_DIMS)
      return tn_err_set(err, TN_INVAL, "DIMS '%s' has more than %u dimensions", s,
                        TOPO_MAX_DIMS);
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
      return tn_err_set(err, TN_INVAL, "DIMS '%s' must look like 8, 8x8 or 4x4x4", s);
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + (uint64_t)(*p - '0');
      if (v > TOPO_MAX_NPUS)
        return tn_err_set(err, TN_LIMIT, "DIMS '%s' exceeds the limit of %u NPUs", s,
                          TOPO_MAX_NPUS);
      p++;
    }
    if (v < 1) return tn_err_set(err, TN_INVAL, "DIMS '%s': every size must be >= 1", s);
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

tn_status_t topo_i_kind_shape(const char *kind, uint32_t *sizes, uint32_t *n,
                              topo_dim_kind_t *dk, tn_err_t *err) {
  bool multi = false;
  if (strcmp(kind, "ring") == 0) *dk = TOPO_DIM_RING;
  else if (strcmp(kind, "fc") == 0) *dk = TOPO_DIM_FC;
  else if (strcmp(kind, "switch") == 0) *dk = TOPO_DIM_SWITCH;
  else if (strcmp(kind, "mesh") == 0) *dk = TOPO_DIM_LINE, multi = true;
  else if (strcmp(kind, "torus") == 0) *dk = TOPO_DIM_RING, multi = true;
  else if (strcmp(kind, "hypercube") == 0) *dk = TOPO_DIM_LINE;
  else
    return tn_err_set(err, TN_INVAL,
                      "unknown KIND '%s' (use ring, fc, switch, mesh, torus or hypercube)", kind);
  if (multi && (*n < 2 || *n > 3))
    return tn_err_set(err, TN_INVAL, "a %s takes 2 or 3 dimensions (like 8x8), not %u", kind, *n);
  if (!multi && *n != 1)
    return tn_err_set(err, TN_INVAL, "a %s takes one size (like 8), not %u", kind, *n);
  if (strcmp(kind, "hypercube") == 0) return topo_i_cube_dims(sizes[0], sizes, n, err);
  for (uint32_t d = 0; d < *n; d++)
    if (sizes[d] < 2)
      return tn_err_set(err, TN_INVAL, "every size must be >= 2, not %u", sizes[d]);
  return TN_OK;
}

tn_status_t topo_gen_kind(const char *kind, const char *dims_s, double bw, double lat,
                          topo_t **out, tn_err_t *err) {
  *out = NULL;
  uint32_t sizes[TOPO_MAX_DIMS], n = 0;
  tn_status_t st = parse_dims(dims_s, sizes, &n, err);
  if (st != TN_OK) return st;
  topo_dim_kind_t k;
  if ((st = topo_i_kind_shape(kind, sizes, &n, &k, err)) != TN_OK) return st;
  topo_dim_t dims[TOPO_MAX_DIMS];
  for (uint32_t d = 0; d < n; d++)
    dims[d] = (topo_dim_t){k, sizes[d], bw, lat, false};
  char name[96];
  snprintf(name, sizeof name, "%s-%s", kind, dims_s);
  return topo_gen(name, dims, n, out, err);
}
