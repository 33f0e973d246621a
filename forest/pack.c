/* forest/pack.c — the broadcast trees: logical NPU-to-NPU edges (routes that cross
 * switches only) and a multiplicative-weights packing of one cheapest spanning tree per
 * NPU per round (Prim's rule on directed route lengths). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

/* How much a link lengthens per use, scaled by the slowest link over its bandwidth. */
#define GROWTH 0.08
/* Lengths are divided down when one passes this (only ratios matter). */
#define RESCALE_AT 1e150

/* The logical edges: the links of the route from u to v at lo[u * n + v] .. lo[u * n + v
 * + 1) of links, empty when the route passes through another NPU. */
typedef struct edges {
  uint32_t n;
  uint32_t *lo;    /* n * n + 1 */
  uint32_t *links; /* route links, concatenated */
  double *len;     /* per link of the fabric: current length */
  double *inv_bw;  /* per link: slowest bandwidth / this bandwidth */
  uint32_t *use;   /* per link: uses by the tree being built */
} edges_t;

static void edges_free(edges_t *e) {
  free(e->lo);
  free(e->links);
  free(e->len);
  free(e->inv_bw);
  free(e->use);
}

/* Appends the route from u to v when it reaches v crossing switches only. */
static tn_status_t add_route(const topo_t *t, topo_routes_t *routes, uint32_t u, uint32_t v,
                             tn_vec_t *links, tn_err_t *err) {
  size_t start = links->len;
  for (uint32_t node = u, hops = 0; node != v; hops++) {
    uint32_t l = topo_route_next(routes, node, v);
    if (l == TOPO_NO_LINK || hops > topo_nodes(t) || (node != u && node < t->npus)) {
      links->len = start; /* not a logical edge */
      return TN_OK;
    }
    tn_status_t st = tn_vec_push(links, &l, err);
    if (st != TN_OK) return st;
    node = t->links[l].dst;
  }
  return TN_OK;
}

static tn_status_t edges_build(const topo_t *t, topo_routes_t *routes, edges_t *e,
                               tn_err_t *err) {
  uint32_t n = t->npus;
  memset(e, 0, sizeof *e);
  e->n = n;
  tn_vec_t links;
  tn_vec_init(&links, sizeof(uint32_t));
  tn_status_t st = tn_calloc((size_t)n * n + 1, sizeof *e->lo, &e->lo, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->len, &e->len, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->inv_bw, &e->inv_bw, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->use, &e->use, err);
  for (uint32_t u = 0; st == TN_OK && u < n; u++)
    for (uint32_t v = 0; st == TN_OK && v < n; v++) {
      e->lo[(size_t)u * n + v] = (uint32_t)links.len;
      if (u != v) st = add_route(t, routes, u, v, &links, err);
    }
  if (st == TN_OK && links.len >= UINT32_MAX)
    st = tn_err_set(err, TN_LIMIT, "forest: too many route links (%zu)", links.len);
  if (st != TN_OK) {
    tn_vec_free(&links);
    return st;
  }
  e->lo[(size_t)n * n] = (uint32_t)links.len;
  e->links = links.data;
  double slowest = INFINITY;
  for (uint32_t l = 0; l < t->nlinks; l++)
    if (t->links[l].bandwidth_GBps < slowest) slowest = t->links[l].bandwidth_GBps;
  for (uint32_t l = 0; l < t->nlinks; l++) {
    e->inv_bw[l] = slowest / t->links[l].bandwidth_GBps;
    e->len[l] = e->inv_bw[l];
  }
  return TN_OK;
}

/* Route length from u to v, or INFINITY when (u, v) is no logical edge. */
static double cost(const edges_t *e, uint32_t u, uint32_t v) {
  size_t p = (size_t)u * e->n + v;
  if (e->lo[p] == e->lo[p + 1]) return INFINITY;
  double c = 0;
  for (uint32_t i = e->lo[p]; i < e->lo[p + 1]; i++)
    c += e->len[e->links[i]];
  return c;
}

/* Scratch of Prim's rule. */
typedef struct prim {
  double *best;
  uint32_t *from;
  uint8_t *in;
} prim_t;

/* The cheapest spanning tree rooted at r by Prim's rule into parent[n]. */
static tn_status_t grow(const topo_t *t, const edges_t *e, prim_t *p, uint32_t r,
                        uint32_t *parent, tn_err_t *err) {
  uint32_t n = e->n;
  for (uint32_t v = 0; v < n; v++) {
    p->in[v] = v == r;
    p->best[v] = v == r ? INFINITY : cost(e, r, v);
    p->from[v] = r;
    parent[v] = FOREST_NO_PARENT;
  }
  for (uint32_t added = 1; added < n; added++) {
    uint32_t x = UINT32_MAX;
    for (uint32_t v = 0; v < n; v++)
      if (!p->in[v] && (x == UINT32_MAX || p->best[v] < p->best[x])) x = v;
    if (!isfinite(p->best[x]))
      return tn_err_set(err, TN_INFEASIBLE,
                        "fabric '%s': NPU %u cannot reach NPU %u without passing through "
                        "another NPU's route",
                        t->name, r, x);
    p->in[x] = 1;
    parent[x] = p->from[x];
    for (uint32_t v = 0; v < n; v++) {
      if (p->in[v]) continue;
      double c = cost(e, x, v);
      if (c < p->best[v]) p->best[v] = c, p->from[v] = x;
    }
  }
  return TN_OK;
}

/* Lengthens every link the tree's routes cross, by its uses over its bandwidth. */
static void charge(edges_t *e, uint32_t nlinks, const uint32_t *parent) {
  uint32_t n = e->n;
  for (uint32_t v = 0; v < n; v++) {
    if (parent[v] == FOREST_NO_PARENT) continue;
    size_t p = (size_t)parent[v] * n + v;
    for (uint32_t i = e->lo[p]; i < e->lo[p + 1]; i++)
      e->use[e->links[i]]++;
  }
  double most = 0;
  for (uint32_t l = 0; l < nlinks; l++) {
    if (e->use[l]) e->len[l] *= exp(GROWTH * e->use[l] * e->inv_bw[l]);
    e->use[l] = 0;
    if (e->len[l] > most) most = e->len[l];
  }
  if (most > RESCALE_AT)
    for (uint32_t l = 0; l < nlinks; l++)
      e->len[l] /= most;
}

void forest_i_pack_free(forest_pack_t *p) {
  if (p == NULL) return;
  free(p->parent);
  memset(p, 0, sizeof *p);
}

tn_status_t forest_i_pack(const topo_t *t, topo_routes_t *routes, uint32_t trees,
                          forest_pack_t *out, tn_err_t *err) {
  uint32_t n = t->npus;
  memset(out, 0, sizeof *out);
  edges_t e;
  prim_t p = {0};
  tn_status_t st = edges_build(t, routes, &e, err);
  if (st == TN_OK) st = tn_calloc((size_t)n * trees * n, sizeof *out->parent, &out->parent, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.best, &p.best, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.from, &p.from, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.in, &p.in, err);
  out->n = n;
  out->trees = trees;
  /* Round by round, every root in turn, so that the roots share the links alike. */
  for (uint32_t i = 0; st == TN_OK && i < trees; i++)
    for (uint32_t r = 0; st == TN_OK && r < n; r++) {
      uint32_t *parent = &out->parent[((size_t)r * trees + i) * n];
      st = grow(t, &e, &p, r, parent, err);
      if (st == TN_OK) charge(&e, t->nlinks, parent);
    }
  free(p.best);
  free(p.from);
  free(p.in);
  edges_free(&e);
  if (st != TN_OK) forest_i_pack_free(out);
  return st;
}
