/* topo/json.c — the topology file (docs/architecture.md §4): loading the explicit form, the
 * generator form (kind + dims, or a composition of dimension objects, with optional
 * per-link overrides) and saving either form. First stage of the pipeline: everything
 * downstream starts from the topo_t built here. Every error names the file and the place
 * (line:column for malformed JSON, else the JSON path such as links[3].bandwidth). */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Files larger than this are refused before parsing (4M links fit comfortably). */
#define TOPO_MAX_FILE_BYTES (512u << 20)

typedef struct jctx {
  const char *what; /* names the source in messages */
  tn_err_t *err;
} jctx_t;

/* Records "what: <formatted>" as a TN_PARSE error. */
static tn_status_t jerr(const jctx_t *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static tn_status_t jerr(const jctx_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tn_status_t st = tn_err_set_at(c->err, TN_PARSE, c->what, fmt, ap);
  va_end(ap);
  return st;
}

static const char *type_name(const cJSON *it) {
  if (cJSON_IsNumber(it)) return "a number";
  if (cJSON_IsString(it)) return "a string";
  if (cJSON_IsBool(it)) return "a boolean";
  if (cJSON_IsNull(it)) return "null";
  if (cJSON_IsArray(it)) return "an array";
  if (cJSON_IsObject(it)) return "an object";
  return "invalid";
}

/* "links[3]" + "bandwidth" -> "links[3].bandwidth"; the top level has an empty path. */
static void join(char *buf, size_t len, const char *path, const char *key) {
  if (path[0]) snprintf(buf, len, "%s.%s", path, key);
  else snprintf(buf, len, "%s", key);
}

/* Every key of obj must be one of keys[]; a key given twice is an error too. */
static tn_status_t check_keys(const jctx_t *c, const cJSON *obj, const char *path,
                              const char *const *keys, size_t nkeys) {
  for (const cJSON *it = obj->child; it; it = it->next) {
    bool known = false;
    for (size_t k = 0; k < nkeys && !known; k++) known = strcmp(it->string, keys[k]) == 0;
    const char *at = path[0] ? path : "top level";
    if (!known) {
      const char *hint = tn_suggest(it->string, keys, nkeys, sizeof(char *));
      if (hint)
        return jerr(c, "%s: unknown key '%s' (did you mean '%s'?)", at, it->string, hint);
      return jerr(c, "%s: unknown key '%s'", at, it->string);
    }
    for (const cJSON *p = obj->child; p != it; p = p->next)
      if (strcmp(p->string, it->string) == 0)
        return jerr(c, "%s: key '%s' is given twice", at, it->string);
  }
  return TN_OK;
}

static tn_status_t get_number(const jctx_t *c, const cJSON *it, const char *path,
                              double *out) {
  if (!cJSON_IsNumber(it)) return jerr(c, "%s must be a number, not %s", path, type_name(it));
  if (!isfinite(it->valuedouble)) return jerr(c, "%s must be a finite number", path);
  *out = it->valuedouble;
  return TN_OK;
}

static tn_status_t get_u32(const jctx_t *c, const cJSON *it, const char *path, uint32_t min,
                           uint32_t max, const char *cap_name, uint32_t *out) {
  double v = 0;
  tn_status_t st = get_number(c, it, path, &v);
  if (st != TN_OK) return st;
  if (floor(v) != v) return jerr(c, "%s must be an integer, not %g", path, v);
  if (v < (double)min) return jerr(c, "%s must be at least %u, not %.0f", path, min, v);
  if (v > (double)max) {
    if (cap_name)
      return jerr(c, "%s = %.0f exceeds the cap of %u (%s)", path, v, max, cap_name);
    return jerr(c, "%s = %.0f is out of range (at most %u)", path, v, max);
  }
  *out = (uint32_t)v;
  return TN_OK;
}

static tn_status_t get_bandwidth(const jctx_t *c, const cJSON *it, const char *path,
                                 double *out) {
  if (cJSON_IsNumber(it) && isnan(it->valuedouble))
    return jerr(c, "%s must be > 0, not NaN", path);
  tn_status_t st = get_number(c, it, path, out);
  if (st != TN_OK) return st;
  char why[96];
  if (!topo_bandwidth_check(*out, why, sizeof why)) return jerr(c, "%s %s", path, why);
  return TN_OK;
}

static tn_status_t get_latency(const jctx_t *c, const cJSON *it, const char *path,
                               double *out) {
  tn_status_t st = get_number(c, it, path, out);
  if (st != TN_OK) return st;
  if (!(*out >= 0.0)) return jerr(c, "%s must be >= 0 (ns), not %g", path, *out);
  if (*out > TOPO_MAX_LATENCY_NS)
    return jerr(c, "%s = %g exceeds the cap of %g ns", path, *out, TOPO_MAX_LATENCY_NS);
  return TN_OK;
}

static uint64_t ns_to_ps(double ns) { return (uint64_t)llround(ns * 1000.0); }

static tn_status_t get_bool(const jctx_t *c, const cJSON *it, const char *path, bool *out) {
  if (!cJSON_IsBool(it)) return jerr(c, "%s must be true or false, not %s", path, type_name(it));
  *out = cJSON_IsTrue(it);
  return TN_OK;
}

static tn_status_t require(const jctx_t *c, const cJSON *obj, const char *path,
                           const char *key, const cJSON **out) {
  *out = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (*out == NULL) {
    if (path[0]) return jerr(c, "%s: missing key '%s'", path, key);
    return jerr(c, "missing key '%s'", key);
  }
  return TN_OK;
}

/* ---- explicit form ------------------------------------------------------- */

typedef struct src_link {
  topo_link_t l;
  uint32_t origin; /* index in the file's links[] */
} src_link_t;

static int src_link_cmp(const void *a, const void *b) {
  const src_link_t *x = a, *y = b;
  if (x->l.src != y->l.src) return x->l.src < y->l.src ? -1 : 1;
  if (x->l.dst != y->l.dst) return x->l.dst < y->l.dst ? -1 : 1;
  return x->origin < y->origin ? -1 : x->origin > y->origin;
}

static const char *const link_keys[] = {"src", "dst", "bandwidth", "latency", "bidirectional"};

static tn_status_t parse_link(const jctx_t *c, const cJSON *it, uint32_t i, uint32_t nodes,
                              topo_link_t *l, bool *bidir) {
  char path[48], p[80];
  snprintf(path, sizeof path, "links[%u]", i);
  if (!cJSON_IsObject(it)) return jerr(c, "%s must be an object, not %s", path, type_name(it));
  tn_status_t st = check_keys(c, it, path, link_keys, 5);
  const cJSON *v = NULL;
  double bw = 0, lat = 0;
  *bidir = true;
  if (st != TN_OK) return st;
  if ((st = require(c, it, path, "src", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "src");
  if ((st = get_u32(c, v, p, 0, UINT32_MAX - 1, NULL, &l->src)) != TN_OK) return st;
  if (l->src >= nodes) return jerr(c, "%s = %u is out of range (nodes 0..%u)", p, l->src, nodes - 1);
  if ((st = require(c, it, path, "dst", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "dst");
  if ((st = get_u32(c, v, p, 0, UINT32_MAX - 1, NULL, &l->dst)) != TN_OK) return st;
  if (l->dst >= nodes) return jerr(c, "%s = %u is out of range (nodes 0..%u)", p, l->dst, nodes - 1);
  if (l->src == l->dst) return jerr(c, "%s is a self-loop on node %u", path, l->src);
  if ((st = require(c, it, path, "bandwidth", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "bandwidth");
  if ((st = get_bandwidth(c, v, p, &bw)) != TN_OK) return st;
  if ((st = require(c, it, path, "latency", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "latency");
  if ((st = get_latency(c, v, p, &lat)) != TN_OK) return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(it, "bidirectional")) != NULL) {
    join(p, sizeof p, path, "bidirectional");
    if ((st = get_bool(c, v, p, bidir)) != TN_OK) return st;
  }
  l->bandwidth_GBps = bw;
  l->latency_ps = ns_to_ps(lat);
  l->dim = 0;
  return TN_OK;
}

static tn_status_t load_explicit(const jctx_t *c, const cJSON *root, const char *name,
                                 topo_t **out) {
  const cJSON *v = NULL, *links = NULL;
  uint32_t npus = 0, switches = 0;
  tn_status_t st = require(c, root, "", "npus", &v);
  if (st != TN_OK) return st;
  if ((st = get_u32(c, v, "npus", 1, TOPO_MAX_NPUS, "TOPO_MAX_NPUS", &npus)) != TN_OK)
    return st;
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "switches")) != NULL &&
      (st = get_u32(c, v, "switches", 0, TOPO_MAX_SWITCHES, "TOPO_MAX_SWITCHES", &switches)) !=
          TN_OK)
    return st;
  if ((st = require(c, root, "", "links", &links)) != TN_OK) return st;
  if (!cJSON_IsArray(links)) return jerr(c, "links must be an array, not %s", type_name(links));
  /* Count before allocating: each entry is at most two directed links. */
  uint64_t n = 0;
  for (const cJSON *it = links->child; it; it = it->next) n++;
  if (n > TOPO_MAX_LINKS)
    return jerr(c, "links has %llu entries, more than the cap of %u (TOPO_MAX_LINKS)",
                (unsigned long long)n, TOPO_MAX_LINKS);
  src_link_t *sl = NULL;
  if ((st = tn_calloc((size_t)(2 * n), sizeof *sl, &sl, c->err)) != TN_OK) return st;
  uint32_t nodes = npus + switches, m = 0, i = 0;
  for (const cJSON *it = links->child; it; it = it->next, i++) {
    topo_link_t l;
    bool bidir = true;
    if ((st = parse_link(c, it, i, nodes, &l, &bidir)) != TN_OK) goto fail;
    sl[m++] = (src_link_t){l, i};
    if (bidir) sl[m++] = (src_link_t){{l.dst, l.src, l.bandwidth_GBps, l.latency_ps, 0}, i};
  }
  if (m > TOPO_MAX_LINKS) {
    st = jerr(c, "links: %u directed links exceed the cap of %u (TOPO_MAX_LINKS)", m,
              TOPO_MAX_LINKS);
    goto fail;
  }
  qsort(sl, m, sizeof *sl, src_link_cmp);
  for (uint32_t k = 1; k < m; k++) {
    if (sl[k].l.src == sl[k - 1].l.src && sl[k].l.dst == sl[k - 1].l.dst) {
      uint32_t a = sl[k - 1].origin, b = sl[k].origin;
      st = a == b ? jerr(c, "links[%u] gives the link %u -> %u twice", a, sl[k].l.src,
                         sl[k].l.dst)
                  : jerr(c, "links[%u] duplicates links[%u] (link %u -> %u)",
                         a > b ? a : b, a < b ? a : b, sl[k].l.src, sl[k].l.dst);
      goto fail;
    }
  }
  topo_link_t *flat = NULL;
  if ((st = tn_calloc(m, sizeof *flat, &flat, c->err)) != TN_OK) goto fail;
  for (uint32_t k = 0; k < m; k++) flat[k] = sl[k].l;
  st = topo_create(name, npus, switches, flat, m, out, c->err);
  free(flat);
  if (st != TN_OK) tn_err_prefix(c->err, "%s", c->what);
fail:
  free(sl);
  return st;
}

/* ---- generator form ------------------------------------------------------ */

typedef struct kind_name {
  const char *name;
  topo_dim_kind_t kind;
} kind_name_t;

static const kind_name_t dim_kinds[] = {
    {"ring", TOPO_DIM_RING}, {"line", TOPO_DIM_LINE}, {"mesh", TOPO_DIM_LINE},
    {"fc", TOPO_DIM_FC},     {"switch", TOPO_DIM_SWITCH}};
static const char *const dim_kind_names[] = {"ring", "line", "mesh", "fc", "switch"};
static const char *const dim_keys[] = {"kind", "size", "bandwidth", "latency", "bidirectional"};

static tn_status_t unknown_kind(const jctx_t *c, const char *path, const char *k,
                                const char *const *names, size_t n) {
  const char *hint = tn_suggest(k, names, n, sizeof(char *));
  char list[128] = "";
  for (size_t i = 0; i < n; i++) {
    strncat(list, names[i], sizeof list - strlen(list) - 1);
    if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
  }
  if (hint) return jerr(c, "%s: unknown kind '%s' (did you mean '%s'?)", path, k, hint);
  return jerr(c, "%s: unknown kind '%s' (use %s)", path, k, list);
}

/* A number applies to every dimension; a list gives one figure per dimension. */
static tn_status_t per_dim(const jctx_t *c, const cJSON *it, const char *key, uint32_t d,
                           uint32_t ndims, bool bw, double *out) {
  char p[64];
  if (cJSON_IsArray(it)) {
    int n = cJSON_GetArraySize(it);
    if (n != (int)ndims)
      return jerr(c, "%s has %d entries but the fabric has %u dimensions", key, n, ndims);
    snprintf(p, sizeof p, "%s[%u]", key, d);
    it = cJSON_GetArrayItem(it, (int)d);
  } else if (!cJSON_IsNumber(it)) {
    return jerr(c, "%s must be a number or a list of numbers, not %s", key, type_name(it));
  } else {
    snprintf(p, sizeof p, "%s", key);
  }
  return bw ? get_bandwidth(c, it, p, out) : get_latency(c, it, p, out);
}

static tn_status_t parse_dim_object(const jctx_t *c, const cJSON *root, const cJSON *it,
                                    uint32_t d, uint32_t ndims, topo_dim_t *dim) {
  char path[32], p[64];
  snprintf(path, sizeof path, "dims[%u]", d);
  if (!cJSON_IsObject(it))
    return jerr(c, "%s must be an object like dims[0], not %s", path, type_name(it));
  tn_status_t st = check_keys(c, it, path, dim_keys, 5);
  const cJSON *v = NULL;
  if (st != TN_OK) return st;
  if ((st = require(c, it, path, "kind", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "kind");
  if (!cJSON_IsString(v)) return jerr(c, "%s must be a string, not %s", p, type_name(v));
  size_t k = 0;
  while (k < 5 && strcmp(dim_kinds[k].name, v->valuestring) != 0) k++;
  if (k == 5) return unknown_kind(c, p, v->valuestring, dim_kind_names, 5);
  dim->kind = dim_kinds[k].kind;
  if ((st = require(c, it, path, "size", &v)) != TN_OK) return st;
  join(p, sizeof p, path, "size");
  if ((st = get_u32(c, v, p, 1, TOPO_MAX_NPUS, "TOPO_MAX_NPUS", &dim->size)) != TN_OK) return st;
  /* Figures: the object's own, else the top level's (a number or a per-dim list). */
  const char *fig[2] = {"bandwidth", "latency"};
  for (int f = 0; f < 2; f++) {
    double x = 0;
    if ((v = cJSON_GetObjectItemCaseSensitive(it, fig[f])) != NULL) {
      join(p, sizeof p, path, fig[f]);
      st = f == 0 ? get_bandwidth(c, v, p, &x) : get_latency(c, v, p, &x);
    } else if ((v = cJSON_GetObjectItemCaseSensitive(root, fig[f])) != NULL) {
      st = per_dim(c, v, fig[f], d, ndims, f == 0, &x);
    } else {
      st = jerr(c, "%s: missing key '%s' (give it here or at the top level)", path, fig[f]);
    }
    if (st != TN_OK) return st;
    if (f == 0) dim->bandwidth_GBps = x;
    else dim->latency_ns = x;
  }
  bool bidir = true;
  if ((v = cJSON_GetObjectItemCaseSensitive(it, "bidirectional")) != NULL) {
    join(p, sizeof p, path, "bidirectional");
    if ((st = get_bool(c, v, p, &bidir)) != TN_OK) return st;
    if (!bidir && dim->kind != TOPO_DIM_RING)
      return jerr(c, "%s: only a ring can be unidirectional", p);
  }
  dim->unidirectional = !bidir;
  return TN_OK;
}

/* The kind form: "kind" with a list of sizes ("hypercube" takes its NPU count). */
static tn_status_t parse_kind_form(const jctx_t *c, const cJSON *root, const cJSON *dims,
                                   topo_dim_t *out, uint32_t *ndims) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "kind");
  tn_status_t st = TN_OK;
  if (v == NULL)
    return jerr(c, "missing key 'kind' (dims given as sizes need a kind; or give dims as "
                   "objects with their own kinds)");
  if (!cJSON_IsString(v)) return jerr(c, "kind must be a string, not %s", type_name(v));
  const char *kind = v->valuestring;
  tn_err_t e = {0};
  if (topo_i_gen_kind_check(kind, "kind", &e) != TN_OK) return jerr(c, "kind: %s", e.msg);
  uint32_t sizes[TOPO_MAX_DIMS], n = 0;
  int count = cJSON_GetArraySize(dims);
  if (count > (int)TOPO_MAX_DIMS)
    return jerr(c, "dims has %d entries, more than the cap of %u (TOPO_MAX_DIMS)", count,
                TOPO_MAX_DIMS);
  for (const cJSON *it = dims->child; it; it = it->next, n++) {
    char p[32];
    snprintf(p, sizeof p, "dims[%u]", n);
    if (!cJSON_IsNumber(it))
      return jerr(c, "%s must be a size like dims[0], not %s", p, type_name(it));
    if ((st = get_u32(c, it, p, 1, TOPO_MAX_NPUS, "TOPO_MAX_NPUS", &sizes[n])) != TN_OK)
      return st;
  }
  topo_dim_kind_t dk;
  if (topo_i_kind_shape(kind, sizes, &n, &dk, &e) != TN_OK)
    return jerr(c, "%s: %s", strcmp(kind, "hypercube") == 0 ? "dims[0]" : "dims", e.msg);
  bool bidir = true;
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "bidirectional")) != NULL) {
    if ((st = get_bool(c, v, "bidirectional", &bidir)) != TN_OK) return st;
    if (!bidir && dk != TOPO_DIM_RING)
      return jerr(c, "bidirectional: only a ring or a torus can be unidirectional");
  }
  const cJSON *bw = NULL, *lat = NULL;
  if ((st = require(c, root, "", "bandwidth", &bw)) != TN_OK ||
      (st = require(c, root, "", "latency", &lat)) != TN_OK)
    return st;
  for (uint32_t d = 0; d < n; d++) {
    out[d] = (topo_dim_t){dk, sizes[d], 0, 0, !bidir};
    if ((st = per_dim(c, bw, "bandwidth", d, n, true, &out[d].bandwidth_GBps)) != TN_OK ||
        (st = per_dim(c, lat, "latency", d, n, false, &out[d].latency_ns)) != TN_OK)
      return st;
  }
  *ndims = n;
  return TN_OK;
}

static const char *const override_keys[] = {"src", "dst", "bandwidth", "latency",
                                             "bidirectional"};

/* Changes existing links' figures; each override names links of the generated shape. */
static tn_status_t apply_overrides(const jctx_t *c, const cJSON *ov, topo_t *t) {
  if (!cJSON_IsArray(ov)) return jerr(c, "overrides must be an array, not %s", type_name(ov));
  uint32_t *seen = NULL; /* per link: 1 + index of the override that changed it */
  tn_status_t st = tn_calloc(t->nlinks, sizeof *seen, &seen, c->err);
  if (st != TN_OK) return st;
  uint32_t i = 0, nodes = topo_nodes(t);
  for (const cJSON *it = ov->child; it; it = it->next, i++) {
    char path[48], p[80];
    const cJSON *v = NULL;
    uint32_t s = 0, d = 0;
    bool bidir = true;
    snprintf(path, sizeof path, "overrides[%u]", i);
    if (!cJSON_IsObject(it)) {
      st = jerr(c, "%s must be an object, not %s", path, type_name(it));
      goto fail;
    }
    if ((st = check_keys(c, it, path, override_keys, 5)) != TN_OK) goto fail;
    join(p, sizeof p, path, "src");
    if ((st = require(c, it, path, "src", &v)) != TN_OK ||
        (st = get_u32(c, v, p, 0, nodes - 1, NULL, &s)) != TN_OK)
      goto fail;
    join(p, sizeof p, path, "dst");
    if ((st = require(c, it, path, "dst", &v)) != TN_OK ||
        (st = get_u32(c, v, p, 0, nodes - 1, NULL, &d)) != TN_OK)
      goto fail;
    if ((v = cJSON_GetObjectItemCaseSensitive(it, "bidirectional")) != NULL) {
      join(p, sizeof p, path, "bidirectional");
      if ((st = get_bool(c, v, p, &bidir)) != TN_OK) goto fail;
    }
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(it, "bandwidth");
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(it, "latency");
    if (bw == NULL && lat == NULL) {
      st = jerr(c, "%s: give 'bandwidth' or 'latency' (or both) to change", path);
      goto fail;
    }
    double bwv = 0, latv = 0;
    join(p, sizeof p, path, "bandwidth");
    if (bw && (st = get_bandwidth(c, bw, p, &bwv)) != TN_OK) goto fail;
    join(p, sizeof p, path, "latency");
    if (lat && (st = get_latency(c, lat, p, &latv)) != TN_OK) goto fail;
    for (int dir = 0; dir < (bidir ? 2 : 1); dir++) {
      uint32_t a = dir ? d : s, b = dir ? s : d;
      uint32_t l = topo_find_link(t, a, b);
      if (l == TOPO_NO_LINK) {
        st = jerr(c, "%s: the fabric has no link %u -> %u to change", path, a, b);
        goto fail;
      }
      if (seen[l]) {
        st = jerr(c, "%s changes link %u -> %u again (overrides[%u] did)", path, a, b,
                  seen[l] - 1);
        goto fail;
      }
      seen[l] = i + 1;
      double nb = bw ? bwv : t->links[l].bandwidth_GBps;
      uint64_t np = lat ? ns_to_ps(latv) : t->links[l].latency_ps;
      if ((st = topo_set_link(t, a, b, nb, np, c->err)) != TN_OK) goto fail;
    }
  }
fail:
  free(seen);
  return st;
}

static tn_status_t load_generator(const jctx_t *c, const cJSON *root, const char *name,
                                  topo_t **out) {
  const cJSON *dims = NULL, *v = NULL;
  tn_status_t st = require(c, root, "", "dims", &dims);
  if (st != TN_OK) return st;
  if (!cJSON_IsArray(dims) || dims->child == NULL)
    return jerr(c, "dims must be a non-empty list, not %s",
                cJSON_IsArray(dims) ? "an empty one" : type_name(dims));
  topo_dim_t dd[TOPO_MAX_DIMS];
  uint32_t nd = 0;
  memset(dd, 0, sizeof dd);
  if (cJSON_IsObject(dims->child)) {
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "kind")) != NULL)
      return jerr(c, "kind: with dims given as objects each dimension names its own kind");
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "bidirectional")) != NULL)
      return jerr(c, "bidirectional: with dims given as objects say it per dimension");
    int count = cJSON_GetArraySize(dims);
    if (count > (int)TOPO_MAX_DIMS)
      return jerr(c, "dims has %d entries, more than the cap of %u (TOPO_MAX_DIMS)", count,
                  TOPO_MAX_DIMS);
    for (const cJSON *it = dims->child; it; it = it->next, nd++)
      if ((st = parse_dim_object(c, root, it, nd, (uint32_t)count, &dd[nd])) != TN_OK)
        return st;
  } else if ((st = parse_kind_form(c, root, dims, dd, &nd)) != TN_OK) {
    return st;
  }
  /* Refuse absurd shapes before topo_gen allocates anything (the generators' one rule). */
  tn_err_t e = {0};
  if (topo_i_gen_check(dd, nd, &e) != TN_OK) return jerr(c, "dims: %s", e.msg);
  if ((st = topo_gen(name, dd, nd, out, c->err)) != TN_OK) {
    tn_err_prefix(c->err, "%s", c->what);
    return st;
  }
  if ((v = cJSON_GetObjectItemCaseSensitive(root, "overrides")) != NULL &&
      (st = apply_overrides(c, v, *out)) != TN_OK) {
    topo_free(*out);
    *out = NULL;
  }
  return st;
}

/* ---- loading ----------------------------------------------------------------- */

static const char *const top_keys[] = {"name",     "description", "npus",      "switches",
                                       "links",    "kind",        "dims",      "bandwidth",
                                       "latency",  "bidirectional", "overrides"};
static const char *const gen_only[] = {"kind", "bandwidth", "latency", "bidirectional",
                                       "overrides"};
static const char *const explicit_only[] = {"npus", "switches", "links"};

/* line:column (1-based) of byte offset off in text. */
static void line_col(const char *text, size_t off, unsigned *line, unsigned *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') (*line)++, *col = 1;
    else (*col)++;
  }
}

/* The default name: the file's base name without its extension. */
static void default_name(const char *what, char *buf, size_t len) {
  const char *b = strrchr(what, '/');
  b = b ? b + 1 : what;
  snprintf(buf, len, "%s", b);
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = '\0';
}

static tn_status_t load_root(const jctx_t *c, const cJSON *root, topo_t **out) {
  if (!cJSON_IsObject(root))
    return jerr(c, "the top level must be an object, not %s", type_name(root));
  tn_status_t st = check_keys(c, root, "", top_keys, sizeof top_keys / sizeof *top_keys);
  if (st != TN_OK) return st;
  char name[256];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "name");
  if (v && !cJSON_IsString(v)) return jerr(c, "name must be a string, not %s", type_name(v));
  if (v && v->valuestring[0] == '\0') return jerr(c, "name must not be empty");
  if (v && strlen(v->valuestring) >= sizeof name)
    return jerr(c, "name is longer than %zu characters", sizeof name - 1);
  if (v) snprintf(name, sizeof name, "%s", v->valuestring);
  else default_name(c->what, name, sizeof name);
  const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
  if (desc && !cJSON_IsString(desc))
    return jerr(c, "description must be a string, not %s", type_name(desc));
  bool gen = cJSON_GetObjectItemCaseSensitive(root, "dims") != NULL ||
             cJSON_GetObjectItemCaseSensitive(root, "kind") != NULL;
  const char *const *other = gen ? explicit_only : gen_only;
  size_t nother = gen ? 3 : 5;
  for (size_t i = 0; i < nother; i++)
    if (cJSON_GetObjectItemCaseSensitive(root, other[i]) != NULL)
      return jerr(c, "%s: belongs to the %s form, but this file uses the %s form (%s)",
                  other[i], gen ? "explicit" : "generator", gen ? "generator" : "explicit",
                  gen ? "it has 'dims'" : "it has no 'dims'");
  st = gen ? load_generator(c, root, name, out) : load_explicit(c, root, name, out);
  if (st != TN_OK) return st;
  if (desc) {
    if ((st = topo_set_description(*out, desc->valuestring, c->err)) != TN_OK) {
      tn_err_prefix(c->err, "%s", c->what);
      topo_free(*out);
      *out = NULL;
    }
  }
  return st;
}

/* Offset of the first \u0000 escape in text, len when none. cJSON decodes it into a NUL
 * that ends the C string early, so a name "a\u0000b" would silently read as "a". */
static size_t find_nul_escape(const char *text, size_t len) {
  for (size_t i = 0; i + 5 < len; i++) {
    if (text[i] != '\\') continue;
    if (text[i + 1] == 'u' && memcmp(text + i + 2, "0000", 4) == 0) return i;
    i++; /* the escaped character: "\\u0000" is a backslash and the text u0000 */
  }
  return len;
}

/* How many arrays and objects are open at text[off] (outside strings): cJSON refuses a
 * value nested CJSON_NESTING_LIMIT deep, which is no syntax error to report as one. */
static unsigned json_depth(const char *text, size_t off) {
  unsigned depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < off; i++) {
    char ch = text[i];
    if (in_str) {
      if (ch == '\\')
        i++;
      else if (ch == '"')
        in_str = false;
    } else if (ch == '"') {
      in_str = true;
    } else if (ch == '[' || ch == '{') {
      depth++;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
    }
  }
  return depth;
}

tn_status_t topo_load_json(const char *text, size_t len, const char *what, topo_t **out,
                           tn_err_t *err) {
  *out = NULL;
  jctx_t c = {what ? what : "<json>", err};
  size_t start = 0;
  while (start < len && strchr(" \t\r\n", text[start]) && text[start] != '\0') start++;
  if (start == len) return jerr(&c, "empty file (expected a JSON object)");
  size_t nul = find_nul_escape(text, len);
  if (nul < len) {
    unsigned line, col;
    line_col(text, nul, &line, &col);
    return tn_err_set(err, TN_PARSE, "%s:%u:%u: \\u0000 (a NUL character) is not allowed in "
                      "a string", c.what, line, col);
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  size_t off = end && end >= text ? (size_t)(end - text) : len;
  if (root != NULL) {
    /* Only whitespace may follow the value. */
    while (off < len && text[off] != '\0' && strchr(" \t\r\n", text[off])) off++;
    if (off < len) {
      cJSON_Delete(root);
      root = NULL;
      unsigned line, col;
      line_col(text, off, &line, &col);
      return tn_err_set(err, TN_PARSE, "%s:%u:%u: unexpected text after the JSON value",
                        c.what, line, col);
    }
  }
  if (root == NULL) {
    unsigned line, col;
    if (off > len) off = len;
    if (json_depth(text, off) >= CJSON_NESTING_LIMIT) {
      line_col(text, off, &line, &col);
      return tn_err_set(err, TN_PARSE, "%s:%u:%u: JSON nested deeper than %d levels", c.what,
                        line, col, CJSON_NESTING_LIMIT);
    }
    line_col(text, off, &line, &col);
    /* cJSON points at the last byte when the input ends early. */
    if (off + 1 >= len && off < len && strchr("[{,:\" \t\r\n", text[off]) != NULL) off = len;
    line_col(text, off, &line, &col);
    if (off >= len)
      return tn_err_set(err, TN_PARSE, "%s:%u:%u: malformed JSON: unexpected end of input "
                        "(truncated file?)", c.what, line, col);
    char ch = text[off];
    if (ch >= 0x20 && ch < 0x7f)
      return tn_err_set(err, TN_PARSE, "%s:%u:%u: malformed JSON near '%c'", c.what, line,
                        col, ch);
    return tn_err_set(err, TN_PARSE, "%s:%u:%u: malformed JSON (byte 0x%02x)", c.what, line,
                      col, (unsigned)(unsigned char)ch);
  }
  tn_status_t st = load_root(&c, root, out);
  cJSON_Delete(root);
  return st;
}

static bool has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcmp(path + n - e, ext) == 0;
}

tn_status_t topo_load(const char *path, topo_t **out, tn_err_t *err) {
  *out = NULL;
  char *data = NULL;
  size_t len = 0;
  tn_status_t st = tn_read_file(path, TOPO_MAX_FILE_BYTES, &data, &len, err);
  if (st != TN_OK) return st;
  if (has_ext(path, ".yml") || has_ext(path, ".yaml"))
    st = topo_load_yaml(data, len, path, out, err);
  else
    st = topo_load_json(data, len, path, out, err);
  free(data);
  return st;
}

/* ---- saving ---------------------------------------------------------------- */

/* A JSON string literal (escaped by cJSON). */
static void put_str(tn_sb_t *b, const char *s) {
  cJSON *item = cJSON_CreateString(s);
  char *lit = item ? cJSON_PrintUnformatted(item) : NULL;
  if (lit == NULL && b->st == TN_OK) b->st = tn_err_set(b->err, TN_NOMEM, "out of memory");
  else tn_sb_printf(b, "%s", lit);
  free(lit);
  cJSON_Delete(item);
}

/* The shortest decimal that reads back as exactly x. */
static void put_num(tn_sb_t *b, double x) {
  char buf[40];
  snprintf(buf, sizeof buf, "%.15g", x);
  if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
  tn_sb_printf(b, "%s", buf);
}

static double ps_to_ns(uint64_t ps) { return (double)ps / 1000.0; }

static void put_link(tn_sb_t *b, const topo_link_t *l, bool bidir, bool last) {
  tn_sb_printf(b, "    {\"src\": %u, \"dst\": %u, \"bandwidth\": ", l->src, l->dst);
  put_num(b, l->bandwidth_GBps);
  tn_sb_printf(b, ", \"latency\": ");
  put_num(b, ps_to_ns(l->latency_ps));
  tn_sb_printf(b, "%s}%s\n", bidir ? "" : ", \"bidirectional\": false", last ? "" : ",");
}

static bool same_figures(const topo_link_t *a, const topo_link_t *b) {
  return a->bandwidth_GBps == b->bandwidth_GBps && a->latency_ps == b->latency_ps;
}

/* Whether put_links writes link i (selected by only[], when non-NULL, and not the second
 * half of a pair); *pair: a<->b with equal figures, written once as bidirectional. */
static bool link_written(const topo_t *t, const bool *only, uint32_t i, bool *pair) {
  const topo_link_t *l = &t->links[i];
  *pair = false;
  if (only && !only[i]) return false;
  uint32_t r = topo_find_link(t, l->dst, l->src);
  *pair = r != TOPO_NO_LINK && (!only || only[r]) && same_figures(l, &t->links[r]);
  return !(*pair && l->src > l->dst);
}

/* Writes links (or overrides): a pair a<->b with equal figures once, as bidirectional.
 * only[] (when non-NULL) selects the links to write. */
static void put_links(tn_sb_t *b, const topo_t *t, const bool *only) {
  uint32_t last = UINT32_MAX;
  bool pair;
  for (uint32_t i = 0; i < t->nlinks; i++)
    if (link_written(t, only, i, &pair)) last = i;
  for (uint32_t i = 0; i < t->nlinks; i++)
    if (link_written(t, only, i, &pair)) put_link(b, &t->links[i], pair, i == last);
}

static void put_figure_list(tn_sb_t *b, const topo_t *t, bool bw) {
  bool same = true;
  for (uint32_t d = 1; d < t->ndims; d++)
    same = same && (bw ? t->dims[d].bandwidth_GBps == t->dims[0].bandwidth_GBps
                       : t->dims[d].latency_ns == t->dims[0].latency_ns);
  tn_sb_printf(b, "  \"%s\": %s", bw ? "bandwidth" : "latency", same ? "" : "[");
  for (uint32_t d = 0; d < (same ? 1 : t->ndims); d++) {
    put_num(b, bw ? t->dims[d].bandwidth_GBps : t->dims[d].latency_ns);
    if (!same && d + 1 < t->ndims) tn_sb_printf(b, ", ");
  }
  tn_sb_printf(b, "%s", same ? "" : "]");
}

static void put_shape(tn_sb_t *b, const topo_t *t) {
  const char *kind = topo_i_gen_kind_of(t->dims, t->ndims);
  if (kind) {
    tn_sb_printf(b, "  \"kind\": \"%s\",\n  \"dims\": [", kind);
    if (strcmp(kind, "hypercube") == 0) tn_sb_printf(b, "%u", t->npus);
    else
      for (uint32_t d = 0; d < t->ndims; d++) tn_sb_printf(b, "%s%u", d ? ", " : "", t->dims[d].size);
    tn_sb_printf(b, "],\n");
    put_figure_list(b, t, true);
    tn_sb_printf(b, ",\n");
    put_figure_list(b, t, false);
    if (t->dims[0].unidirectional) tn_sb_printf(b, ",\n  \"bidirectional\": false");
    return;
  }
  tn_sb_printf(b, "  \"dims\": [\n");
  for (uint32_t d = 0; d < t->ndims; d++) {
    const topo_dim_t *dm = &t->dims[d];
    tn_sb_printf(b, "    {\"kind\": \"%s\", \"size\": %u, \"bandwidth\": ", topo_dim_kind_name(dm->kind),
        dm->size);
    put_num(b, dm->bandwidth_GBps);
    tn_sb_printf(b, ", \"latency\": ");
    put_num(b, dm->latency_ns);
    tn_sb_printf(b, "%s}%s\n", dm->unidirectional ? ", \"bidirectional\": false" : "",
        d + 1 < t->ndims ? "," : "");
  }
  tn_sb_printf(b, "  ]");
}

/* Generator form: the shape plus overrides for links whose figures differ from what the
 * shape generates. Returns false (nothing written) if the links do not match the shape. */
static tn_status_t put_generator(tn_sb_t *b, const topo_t *t, bool *ok) {
  topo_t *base = NULL;
  bool *diff = NULL;
  *ok = false;
  tn_err_t scratch = {0};
  if (topo_gen(t->name, t->dims, t->ndims, &base, &scratch) != TN_OK) return TN_OK;
  tn_status_t st = TN_OK;
  if (base->nlinks != t->nlinks) goto done;
  for (uint32_t i = 0; i < t->nlinks; i++)
    if (base->links[i].src != t->links[i].src || base->links[i].dst != t->links[i].dst)
      goto done;
  if ((st = tn_calloc(t->nlinks, sizeof *diff, &diff, b->err)) != TN_OK) goto done;
  bool any = false;
  for (uint32_t i = 0; i < t->nlinks; i++)
  {
    diff[i] = !same_figures(&base->links[i], &t->links[i]);
    if (diff[i]) any = true;
  }
  *ok = true;
  put_shape(b, t);
  if (any) {
    tn_sb_printf(b, ",\n  \"overrides\": [\n");
    put_links(b, t, diff);
    tn_sb_printf(b, "  ]");
  }
done:
  free(diff);
  topo_free(base);
  return st;
}

tn_status_t topo_to_json(const topo_t *t, bool explicit_links, char **out, tn_err_t *err) {
  *out = NULL;
  tn_sb_t b;
  tn_sb_init(&b, err);
  tn_sb_printf(&b, "{\n  \"name\": ");
  put_str(&b, t->name);
  tn_sb_printf(&b, ",\n  \"description\": ");
  put_str(&b, t->description ? t->description : "");
  tn_sb_printf(&b, ",\n");
  bool done = false;
  if (!explicit_links && t->ndims > 0 && b.st == TN_OK) {
    tn_status_t st = put_generator(&b, t, &done);
    if (st != TN_OK && b.st == TN_OK) b.st = st;
  }
  if (!done) {
    tn_sb_printf(&b, "  \"npus\": %u,\n  \"switches\": %u,\n  \"links\": [\n", t->npus, t->switches);
    put_links(&b, t, NULL);
    tn_sb_printf(&b, "  ]");
  }
  tn_sb_printf(&b, "\n}\n");
  if (b.st != TN_OK) {
    tn_vec_free(&b.v);
    return b.st;
  }
  *out = b.v.data;
  return TN_OK;
}

tn_status_t topo_save(const topo_t *t, const char *path, bool explicit_links, tn_err_t *err) {
  char *text = NULL;
  tn_status_t st = topo_to_json(t, explicit_links, &text, err);
  if (st != TN_OK) return st;
  tn_outfile_t o;
  if ((st = tn_outfile_open(&o, path, err)) != TN_OK) {
    free(text);
    return st;
  }
  size_t n = strlen(text);
  if (fwrite(text, 1, n, o.f) != n) {
    tn_outfile_abort(&o);
    free(text);
    return tn_err_set(err, TN_IO, "%s: write failed", path);
  }
  free(text);
  return tn_outfile_commit(&o, err);
}
