/* forest/pack.c — the broadcast trees: logical NPU-to-NPU edges (routes that cross
 * switches only) and a multiplicative-weights packing of one cheapest spanning tree per
 * NPU per round (Prim's rule on directed route lengths). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

/* How much a link lengthens per use, scaled by the slowest link over its bandwidth. */
#define GROWTH 0.08
/* The LP's trees times NPUs at most (its simplex slows about quadratically: hypercube-64
 * took 0.65 s with 512 trees, 1.6 s with 1024), and the NPUs at most for an LP at all
 * (above, the rounds' own weights at depth penalty 0: they packed the shipped 128-NPU
 * fabrics within 0.4% of the bound). */
#define LP_MAX_TREE_NPUS 32768u
#define LP_MAX_NPUS FOREST_LP_MAX_NPUS
/* Prim's rule with a depth penalty grows shallower trees: bandwidth-optimal mixes exist
 * among them on most fabrics, and at small sizes (where a chain pays a latency per hop)
 * they are much faster: measured with the LP over all four against penalty 0 alone, at
 * 1 MiB spine-4x8 All-Gather 2.57 -> 1.75 of the bound, leaf-32 3.99 -> 1.99; at 1 GiB
 * hypercube-64 1.018 -> 1.006, rail-4x8 1.026 -> 1.012. */
static const double depth_penalties[] = {0.0, 0.05, 0.2, 0.5};
/* Lengths are divided down when one passes this (only ratios matter). */
#define RESCALE_AT 1e150

/* The logical edges (topo_logical_edges) with the packing's link lengths. */
typedef struct edges {
  uint32_t n;
  topo_logical_t lg;
  double *len;    /* per link of the fabric: current length */
  double *inv_bw; /* per link: slowest bandwidth / this bandwidth */
  uint32_t *use;  /* per link: uses by the tree being built */
} edges_t;

static void edges_free(edges_t *e) {
  topo_logical_free(&e->lg);
  free(e->len);
  free(e->inv_bw);
  free(e->use);
}

static tn_status_t edges_build(const topo_t *t, topo_routes_t *routes, edges_t *e, tn_err_t *err) {
  memset(e, 0, sizeof *e);
  e->n = t->npus;
  tn_status_t st = topo_logical_edges(t, routes, &e->lg, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->len, &e->len, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->inv_bw, &e->inv_bw, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1, sizeof *e->use, &e->use, err);
  if (st != TN_OK) return st;
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
  if (e->lg.lo[p] == e->lg.lo[p + 1]) return INFINITY;
  double c = 0;
  for (uint32_t i = e->lg.lo[p]; i < e->lg.lo[p + 1]; i++)
    c += e->len[e->lg.links[i]];
  return c;
}

/* Scratch of Prim's rule. */
typedef struct prim {
  double depth_penalty; /* an edge from an NPU at depth d costs (1 + d * this) times more */
  uint32_t *depth;
  double *best;
  uint32_t *from;
  uint8_t *in;
} prim_t;

/* The cheapest spanning tree rooted at r by Prim's rule into parent[n]. */
static tn_status_t grow(const topo_t *t, const edges_t *e, prim_t *p, uint32_t r, uint32_t *parent,
                        tn_err_t *err) {
  uint32_t n = e->n;
  for (uint32_t v = 0; v < n; v++) {
    p->in[v] = v == r;
    p->depth[v] = 0;
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
    p->depth[x] = p->depth[p->from[x]] + 1;
    for (uint32_t v = 0; v < n; v++) {
      if (p->in[v]) continue;
      double c = cost(e, x, v) * (1.0 + p->depth_penalty * p->depth[x]);
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
    for (uint32_t i = e->lg.lo[p]; i < e->lg.lo[p + 1]; i++)
      e->use[e->lg.links[i]]++;
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
  free(p->tree_off);
  free(p->parent);
  free(p->weight);
  memset(p, 0, sizeof *p);
}

/* The trees the rounds grew, each kept once per root with how many rounds grew it. */
typedef struct cands {
  uint32_t n;
  tn_vec_t parent; /* uint32_t, n per candidate */
  tn_vec_t root;   /* uint32_t per candidate */
  tn_vec_t count;  /* uint32_t per candidate */
  tn_vec_t hash;   /* uint64_t per candidate */
} cands_t;

static void cands_free(cands_t *c) {
  tn_vec_free(&c->parent);
  tn_vec_free(&c->root);
  tn_vec_free(&c->count);
  tn_vec_free(&c->hash);
}

/* Adds the tree in parent (of root r) or counts it again; first is r's first candidate
 * (they are added root by root within a round, so r's are found by scanning back). */
static tn_status_t cands_add(cands_t *c, uint32_t r, const uint32_t *parent, tn_err_t *err) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v = 0; v < c->n; v++)
    h = (h ^ parent[v]) * 1099511628211ull;
  for (size_t i = 0; i < c->root.len; i++)
    if (TN_VEC_AT(&c->root, uint32_t, i) == r && TN_VEC_AT(&c->hash, uint64_t, i) == h &&
        memcmp(&TN_VEC_AT(&c->parent, uint32_t, i * c->n), parent, c->n * sizeof *parent) == 0) {
      TN_VEC_AT(&c->count, uint32_t, i)++;
      return TN_OK;
    }
  uint32_t one = 1;
  tn_status_t st = tn_vec_reserve(&c->parent, c->parent.len + c->n, err);
  if (st == TN_OK) st = tn_vec_push(&c->root, &r, err);
  if (st == TN_OK) st = tn_vec_push(&c->count, &one, err);
  if (st == TN_OK) st = tn_vec_push(&c->hash, &h, err);
  if (st != TN_OK) return st;
  memcpy(&TN_VEC_AT(&c->parent, uint32_t, c->parent.len), parent, c->n * sizeof *parent);
  c->parent.len += c->n;
  return TN_OK;
}

/* Every candidate's load on the links as LP columns: candidate i's entries at col_off[i]
 * .. col_off[i + 1] of col_link (a link) and col_val (its uses over its bandwidth, in
 * units of the slowest link). */
static tn_status_t columns(const edges_t *e, const cands_t *c, uint32_t nlinks, tn_vec_t *off,
                           tn_vec_t *link, tn_vec_t *val, tn_err_t *err) {
  uint32_t n = e->n, ncand = (uint32_t)c->root.len, zero = 0;
  uint32_t *use = calloc(nlinks + 1u, sizeof *use), *touched = calloc(nlinks + 1u, sizeof *touched);
  tn_status_t st = use && touched ? tn_vec_push(off, &zero, err)
                                  : tn_err_set(err, TN_NOMEM, "forest: out of memory");
  for (uint32_t i = 0; st == TN_OK && i < ncand; i++) {
    const uint32_t *parent = &TN_VEC_AT(&c->parent, uint32_t, (size_t)i * n);
    uint32_t nt = 0;
    for (uint32_t v = 0; v < n; v++) {
      if (parent[v] == FOREST_NO_PARENT) continue;
      size_t p = (size_t)parent[v] * n + v;
      for (uint32_t j = e->lg.lo[p]; j < e->lg.lo[p + 1]; j++)
        if (use[e->lg.links[j]]++ == 0) touched[nt++] = e->lg.links[j];
    }
    for (uint32_t j = 0; st == TN_OK && j < nt; j++) {
      uint32_t l = touched[j];
      double v = use[l] * e->inv_bw[l];
      use[l] = 0;
      st = tn_vec_push(link, &l, err);
      if (st == TN_OK) st = tn_vec_push(val, &v, err);
    }
    uint32_t end = (uint32_t)link->len;
    if (st == TN_OK) st = tn_vec_push(off, &end, err);
  }
  free(use);
  free(touched);
  return st;
}

/* Hops from the root to the deepest NPU of the tree in parent. */
static double height(const uint32_t *parent, uint32_t n) {
  uint32_t most = 0;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t d = 0;
    for (uint32_t u = v; parent[u] != FOREST_NO_PARENT && d <= n; u = parent[u])
      d++;
    if (d > most) most = d;
  }
  return most;
}

/* The packing's weights: with lp the LP's where it solves, else each candidate's share of the
 * rounds that grew its root's trees. */
static tn_status_t weigh(const edges_t *e, const cands_t *c, uint32_t nlinks, uint32_t rounds,
                         bool lp, double slack, double *w, tn_err_t *err) {
  uint32_t ncand = (uint32_t)c->root.len;
  for (uint32_t i = 0; i < ncand; i++)
    w[i] = (double)TN_VEC_AT(&c->count, uint32_t, i) / rounds;
  tn_vec_t off, link, val;
  tn_vec_init(&off, sizeof(uint32_t));
  tn_vec_init(&link, sizeof(uint32_t));
  tn_vec_init(&val, sizeof(double));
  double *cost = NULL;
  tn_status_t st = TN_OK;
  if (lp) {
    st = columns(e, c, nlinks, &off, &link, &val, err);
    if (st == TN_OK) st = tn_malloc(ncand + 1u, sizeof *cost, &cost, err);
    for (uint32_t i = 0; st == TN_OK && i < ncand; i++)
      cost[i] = height(&TN_VEC_AT(&c->parent, uint32_t, (size_t)i * e->n), e->n);
    if (st == TN_OK)
      (void)forest_i_lp_weights(e->n, nlinks, ncand, c->root.data, off.data, link.data, val.data,
                                cost, slack, w);
  }
  free(cost);
  tn_vec_free(&off);
  tn_vec_free(&link);
  tn_vec_free(&val);
  return st;
}

/* The candidates with weight into out, root by root (in the order they were grown). */
static tn_status_t collect(const cands_t *c, const double *w, forest_pack_t *out, tn_err_t *err) {
  uint32_t n = c->n, ncand = (uint32_t)c->root.len, kept = 0;
  for (uint32_t i = 0; i < ncand; i++)
    kept += w[i] > 0;
  tn_status_t st = tn_calloc((size_t)n + 1, sizeof *out->tree_off, &out->tree_off, err);
  if (st == TN_OK) st = tn_malloc((size_t)kept * n, sizeof *out->parent, &out->parent, err);
  if (st == TN_OK) st = tn_malloc(kept, sizeof *out->weight, &out->weight, err);
  if (st != TN_OK) return st;
  uint32_t fill = 0;
  for (uint32_t r = 0; r < n; r++) {
    out->tree_off[r] = fill;
    double sum = 0;
    for (uint32_t i = 0; i < ncand; i++)
      if (TN_VEC_AT(&c->root, uint32_t, i) == r && w[i] > 0) sum += w[i];
    for (uint32_t i = 0; i < ncand; i++) {
      if (TN_VEC_AT(&c->root, uint32_t, i) != r || !(w[i] > 0)) continue;
      memcpy(&out->parent[(size_t)fill * n], &TN_VEC_AT(&c->parent, uint32_t, (size_t)i * n),
             n * sizeof *out->parent);
      out->weight[fill++] = w[i] / sum;
    }
  }
  out->tree_off[n] = fill;
  out->ntrees = fill;
  return TN_OK;
}

/* rounds rounds of the packing, every root in turn within a round (so that the roots
 * share the links alike), each tree added to the candidates. */
static tn_status_t grow_rounds(const topo_t *t, edges_t *e, prim_t *p, cands_t *c, uint32_t rounds,
                               uint32_t *parent, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; st == TN_OK && i < rounds; i++)
    for (uint32_t r = 0; st == TN_OK && r < e->n; r++) {
      st = grow(t, e, p, r, parent, err);
      if (st == TN_OK) charge(e, t->nlinks, parent);
      if (st == TN_OK) st = cands_add(c, r, parent, err);
    }
  return st;
}

tn_status_t forest_i_pack(const topo_t *t, topo_routes_t *routes, uint32_t trees, double slack,
                          forest_pack_t *out, tn_err_t *err) {
  uint32_t n = t->npus;
  memset(out, 0, sizeof *out);
  out->n = n;
  edges_t e;
  prim_t p = {0};
  cands_t c = {.n = n};
  tn_vec_init(&c.parent, sizeof(uint32_t));
  tn_vec_init(&c.root, sizeof(uint32_t));
  tn_vec_init(&c.count, sizeof(uint32_t));
  tn_vec_init(&c.hash, sizeof(uint64_t));
  uint32_t *parent = NULL;
  double *w = NULL;
  tn_status_t st = edges_build(t, routes, &e, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *parent, &parent, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.best, &p.best, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.from, &p.from, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.in, &p.in, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p.depth, &p.depth, err);
  /* Without an LP: the rounds asked for, at depth penalty 0. With one: as many rounds at
   * each penalty of depth_penalties as LP_MAX_TREE_NPUS allows (at most those asked for), the
   * lengths carried from one to the next, and the LP picks the mix. */
  bool lp = forest_i_lp_available() && n <= LP_MAX_NPUS;
  uint32_t npen = sizeof depth_penalties / sizeof depth_penalties[0], rounds = 0;
  uint32_t per = lp ? LP_MAX_TREE_NPUS / (n * n * npen) : trees;
  if (per > trees) per = trees;
  if (per == 0) per = 1;
  for (uint32_t i = 0; st == TN_OK && i < (lp ? npen : 1u); i++) {
    p.depth_penalty = depth_penalties[i];
    st = grow_rounds(t, &e, &p, &c, per, parent, err);
    rounds += per;
  }
  if (st == TN_OK) st = tn_malloc(c.root.len + 1, sizeof *w, &w, err);
  if (st == TN_OK) st = weigh(&e, &c, t->nlinks, rounds, lp, slack, w, err);
  if (st == TN_OK) st = collect(&c, w, out, err);
  free(parent);
  free(w);
  free(p.best);
  free(p.from);
  free(p.in);
  free(p.depth);
  cands_free(&c);
  edges_free(&e);
  if (st != TN_OK) forest_i_pack_free(out);
  return st;
}
