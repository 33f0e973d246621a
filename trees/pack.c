/* trees/pack.c — fractional packing of spanning trees over the NPU graph (Garg and
 * Koenemann's multiplicative weights), cut to a few heavy trees weighed again (exactly, by
 * a linear program, when the build has GLPK), each rooted at a centre. The oracle is the
 * lightest layered tree (shallow: depth the root's eccentricity), or igraph's minimum
 * spanning tree where layered trees pack poorly. First step of trees/ (pack → plan).
 * igraph stays behind this file. */
#include "trees/trees.h"

#include "trees/trees_internal.h"

#include <igraph/igraph.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Accuracy of the multiplicative weights: the packing is within about 2 * EPS of the
 * optimum in theory, much closer in practice (mesh-8x8: 99.6%); the oracle is called
 * O(L log L / EPS^2) times. */
#define EPS 0.1
/* Layered trees are kept unless their packing is below this share of the partition bound
 * and all spanning trees pack more than SPANNING_GAIN times as much (their depth costs more
 * than a percent or two of bandwidth: see trees_pack). */
#define LAYERED_ENOUGH 0.97
#define SPANNING_GAIN 1.03
/* Safety cap on oracle calls (the loop ends well before on any fabric within the caps). */
#define MAX_ROUNDS 200000u

/* At most this many NPU pairs through switches (one edge of the NPU graph each): the
 * packing's oracle is O(n m) a call, and a fabric that joins every pair through switches
 * (hierarchical-16x8: 1408 of its 128 NPUs' pairs) would take minutes to pack, plan and
 * order-proof (160 s at 1 GiB; leaf-32, 496 pairs: 4.6 s). */
#define MAX_SWITCHED_PAIRS 512u

/* The NPU graph and what its edges load. On a direct-connect fabric the edges are the NPU
 * pairs u < v linked both ways, and each is its own resource, of the smaller bandwidth.
 * On a fabric with switches the edges are the pairs whose routes both ways cross switches
 * only (topo_logical_edges), and the resources are the links: a tree edge loads every link
 * of both routes (the data goes up one and down the other), so several tree edges through
 * one switch share the links into and out of it. */
typedef struct pairs {
  uint32_t n, m;
  uint32_t *u, *v;
  uint32_t nres;        /* resources: m (each pair its own) or the fabric's links */
  double *cap;          /* per resource, GB/s */
  uint32_t *roff, *res; /* NULL: pair j is resource j; else its resources res[roff[j] ..) */
} pairs_t;

/* Resource i of pair j. */
static uint32_t res_of(const pairs_t *p, uint32_t j, uint32_t i) {
  return p->roff ? p->res[p->roff[j] + i] : j;
}
static uint32_t res_count(const pairs_t *p, uint32_t j) {
  return p->roff ? p->roff[j + 1] - p->roff[j] : 1;
}

/* Every pair's length under the resources' lengths len: len itself when each pair is its
 * own resource, else the sums, in plen. */
static const double *pair_lengths(const pairs_t *p, const double *len, double *plen) {
  if (p->roff == NULL) return len;
  for (uint32_t j = 0; j < p->m; j++) {
    double sum = 0;
    for (uint32_t i = p->roff[j]; i < p->roff[j + 1]; i++)
      sum += len[p->res[i]];
    plen[j] = sum;
  }
  return plen;
}

/* Distinct trees found so far, each as its n - 1 sorted edge (pair) ids. */
typedef struct treeset {
  uint32_t n1;    /* edges per tree */
  tn_vec_t edges; /* uint32_t, n1 per tree */
  tn_vec_t hash;  /* uint64_t per tree */
  tn_vec_t x;     /* double per tree: amount packed */
} treeset_t;

static void pairs_free(pairs_t *p) {
  free(p->u);
  free(p->v);
  free(p->cap);
  free(p->roff);
  free(p->res);
}

/* The pairs of a fabric with switches: those whose routes both ways cross switches only,
 * each loading the links of both routes. */
static tn_status_t switched_pairs(const topo_t *t, pairs_t *p, tn_err_t *err) {
  uint32_t n = t->npus;
  topo_routes_t *routes = NULL;
  topo_logical_t lg = {0};
  tn_status_t st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = topo_logical_edges(t, routes, &lg, err);
  uint64_t m = 0, nres = 0;
  for (uint32_t u = 0; st == TN_OK && u < n; u++)
    for (uint32_t v = u + 1; v < n; v++) {
      size_t a = (size_t)u * n + v, b = (size_t)v * n + u;
      if (lg.lo[a] == lg.lo[a + 1] || lg.lo[b] == lg.lo[b + 1]) continue;
      m++;
      nres += (uint64_t)(lg.lo[a + 1] - lg.lo[a]) + (lg.lo[b + 1] - lg.lo[b]);
    }
  if (st == TN_OK && m > MAX_SWITCHED_PAIRS)
    st = tn_err_set(err, TN_INVAL,
                    "trees: fabric '%s' joins %llu NPU pairs through switches (at most %u for "
                    "the tree packing)",
                    t->name, (unsigned long long)m, MAX_SWITCHED_PAIRS);
  if (st == TN_OK) st = tn_malloc(m + 1, sizeof *p->u, &p->u, err);
  if (st == TN_OK) st = tn_malloc(m + 1, sizeof *p->v, &p->v, err);
  if (st == TN_OK) st = tn_malloc(m + 2, sizeof *p->roff, &p->roff, err);
  if (st == TN_OK) st = tn_malloc(nres + 1, sizeof *p->res, &p->res, err);
  if (st == TN_OK) st = tn_malloc(t->nlinks + 1u, sizeof *p->cap, &p->cap, err);
  if (st == TN_OK) {
    p->n = n;
    p->nres = t->nlinks;
    for (uint32_t l = 0; l < t->nlinks; l++)
      p->cap[l] = t->links[l].bandwidth_GBps;
    uint32_t fill = 0;
    p->roff[0] = 0;
    for (uint32_t u = 0; u < n; u++)
      for (uint32_t v = u + 1; v < n; v++) {
        size_t a = (size_t)u * n + v, b = (size_t)v * n + u;
        if (lg.lo[a] == lg.lo[a + 1] || lg.lo[b] == lg.lo[b + 1]) continue;
        for (uint32_t i = lg.lo[a]; i < lg.lo[a + 1]; i++)
          p->res[fill++] = lg.links[i];
        for (uint32_t i = lg.lo[b]; i < lg.lo[b + 1]; i++)
          p->res[fill++] = lg.links[i];
        p->u[p->m] = u;
        p->v[p->m] = v;
        p->roff[++p->m] = fill;
      }
  }
  topo_logical_free(&lg);
  topo_routes_free(routes);
  return st;
}

static tn_status_t build_pairs(const topo_t *t, pairs_t *p, tn_err_t *err) {
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "trees: fabric '%s' has %u NPUs (at least 2 needed)", t->name,
                      t->npus);
  tn_status_t st = TN_OK;
  if (t->switches > 0) {
    if ((st = switched_pairs(t, p, err)) != TN_OK) return st;
    goto connected;
  }
  p->n = t->npus;
  st = tn_malloc(t->nlinks + 1u, sizeof *p->u, &p->u, err);
  if (st == TN_OK) st = tn_malloc(t->nlinks + 1u, sizeof *p->v, &p->v, err);
  if (st == TN_OK) st = tn_malloc(t->nlinks + 1u, sizeof *p->cap, &p->cap, err);
  if (st != TN_OK) return st;
  for (uint32_t l = 0; l < t->nlinks; l++) { /* links are sorted by (src, dst) */
    const topo_link_t *a = &t->links[l];
    if (a->src >= a->dst) continue;
    uint32_t r = topo_find_link(t, a->dst, a->src);
    if (r == TOPO_NO_LINK) continue;
    double c = fmin(a->bandwidth_GBps, t->links[r].bandwidth_GBps);
    p->u[p->m] = a->src;
    p->v[p->m] = a->dst;
    p->cap[p->m++] = c;
  }
  p->nres = p->m;
connected:; /* Connected? Union-find over the pairs. */
  uint32_t *uf = NULL;
  st = tn_malloc(p->n, sizeof *uf, &uf, err);
  if (st != TN_OK) return st;
  for (uint32_t i = 0; i < p->n; i++)
    uf[i] = i;
  uint32_t parts = p->n;
  for (uint32_t e = 0; e < p->m; e++) {
    uint32_t a = p->u[e], b = p->v[e];
    while (uf[a] != a)
      a = uf[a] = uf[uf[a]];
    while (uf[b] != b)
      b = uf[b] = uf[uf[b]];
    if (a != b) {
      uf[a < b ? b : a] = a < b ? a : b;
      parts--;
    }
  }
  free(uf);
  if (parts > 1)
    return tn_err_set(err, TN_INVAL,
                      "trees: the NPUs of fabric '%s' %s form %u separate groups (a tree edge "
                      "needs a link each way, or routes both ways through switches only)",
                      t->name, t->switches ? "joined through switches only" : "linked both ways",
                      parts);
  return TN_OK;
}

static tn_status_t map_igraph(igraph_error_t e, const char *what, tn_err_t *err) {
  if (e == IGRAPH_SUCCESS) return TN_OK;
  if (e == IGRAPH_ENOMEM) return tn_err_set(err, TN_NOMEM, "igraph %s: out of memory", what);
  return tn_err_set(err, TN_INTERNAL, "igraph %s failed: %s", what, igraph_strerror(e));
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static uint64_t tree_hash(const uint32_t *e, uint32_t n1) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < n1; i++)
    h = (h ^ e[i]) * 1099511628211ull;
  return h;
}

/* Adds amount x to the tree with sorted edges e, a new entry when it is not known yet. */
static tn_status_t treeset_add(treeset_t *ts, const uint32_t *e, double x, tn_err_t *err) {
  uint64_t h = tree_hash(e, ts->n1);
  for (size_t i = 0; i < ts->hash.len; i++)
    if (TN_VEC_AT(&ts->hash, uint64_t, i) == h &&
        memcmp(&TN_VEC_AT(&ts->edges, uint32_t, i * ts->n1), e, ts->n1 * sizeof *e) == 0) {
      TN_VEC_AT(&ts->x, double, i) += x;
      return TN_OK;
    }
  tn_status_t st = tn_vec_push(&ts->hash, &h, err);
  if (st == TN_OK) st = tn_vec_push(&ts->x, &x, err);
  for (uint32_t i = 0; st == TN_OK && i < ts->n1; i++)
    st = tn_vec_push(&ts->edges, &e[i], err);
  return st;
}

/* Garg-Koenemann lengths: l_e = delta / c_e at the start, the loop ends when
 * sum c_e l_e reaches 1, and the packed amounts are divided by log_{1+EPS}((1+EPS)/delta). */
static double gk_delta(uint32_t m) {
  return (1.0 + EPS) * pow((1.0 + EPS) * (double)m, -1.0 / EPS);
}
static double gk_scale(uint32_t m) {
  return log((1.0 + EPS) / gk_delta(m)) / log(1.0 + EPS);
}

/* Counts in use[] (zeroed, nres) how many edges of tree e (n1 pair ids) load each
 * resource. */
static void tree_use(const pairs_t *p, const uint32_t *e, uint32_t n1, uint32_t *use) {
  for (uint32_t j = 0; j < n1; j++)
    for (uint32_t i = 0; i < res_count(p, e[j]); i++)
      use[res_of(p, e[j], i)]++;
}

/* One round: tree e (n1 edge ids) takes its bottleneck capacity (a resource its edges load
 * u times gives cap / u); lengths grow. use is scratch of nres, zero, and left so. Returns
 * the amount. */
static double gk_step(const pairs_t *p, const uint32_t *e, uint32_t n1, double *len, double *dsum,
                      uint32_t *use) {
  tree_use(p, e, n1, use);
  double c = INFINITY;
  for (uint32_t j = 0; j < n1; j++)
    for (uint32_t i = 0; i < res_count(p, e[j]); i++) {
      uint32_t r = res_of(p, e[j], i);
      c = fmin(c, p->cap[r] / use[r]);
    }
  for (uint32_t j = 0; j < n1; j++)
    for (uint32_t i = 0; i < res_count(p, e[j]); i++) {
      uint32_t r = res_of(p, e[j], i);
      if (use[r] == 0) continue; /* grown already (a resource two edges load) */
      double grow = len[r] * EPS * c * use[r] / p->cap[r];
      len[r] += grow;
      *dsum += grow * p->cap[r];
      use[r] = 0;
    }
  return c;
}

/* Layered trees. For a root r, order the NPUs by (hops from r, id); a layered tree gives
 * every NPU but r a parent that comes before it in that order and is linked to it: one hop
 * nearer r, or (where the graph has links within a layer) as near and of a lower id. Any
 * such choice is a spanning tree (parents strictly precede), and on a bipartite graph
 * (meshes, even tori, hypercubes: no link within a layer) every NPU's depth is its hops
 * from r, so the tree is as shallow as r allows and its pipeline fills and drains in few
 * hops (mesh-16x8: mean depth of the deepest NPU, weighted by tree, 15 against 24 for
 * minimum spanning trees). Links within a layer let fully connected groups (dgx1-8) use
 * all their links.
 * Every NPU picks its parent on its own, so the lightest layered tree of r takes each
 * NPU's lightest candidate, and the oracle the lightest over all roots. cand lists, root by
 * root and NPU by NPU, the candidate pair ids (at most m per root). */
typedef struct layered {
  uint32_t *off;  /* n * (n + 1): root r's candidates of v are cand[off[r(n+1)+v] ..) */
  uint32_t *cand; /* n * m at most */
} layered_t;

static void layered_free(layered_t *f) {
  free(f->off);
  free(f->cand);
}

/* The pairs at each NPU (pair ids), as offsets and a list. */
static tn_status_t incidence(const pairs_t *p, uint32_t **off_out, uint32_t **adj_out,
                             tn_err_t *err) {
  uint32_t n = p->n, m = p->m, *off = NULL, *adj = NULL;
  tn_status_t st = tn_calloc((size_t)n + 1, sizeof *off, &off, err);
  if (st == TN_OK) st = tn_malloc(2 * (size_t)m + 1, sizeof *adj, &adj, err);
  if (st != TN_OK) {
    free(off);
    return st;
  }
  for (uint32_t e = 0; e < m; e++) {
    off[p->u[e] + 1]++;
    off[p->v[e] + 1]++;
  }
  for (uint32_t v = 0; v < n; v++)
    off[v + 1] += off[v];
  for (uint32_t e = 0; e < m; e++) { /* fill, then restore the offsets */
    adj[off[p->u[e]]++] = e;
    adj[off[p->v[e]]++] = e;
  }
  for (uint32_t v = n; v > 0; v--)
    off[v] = off[v - 1];
  off[0] = 0;
  *off_out = off;
  *adj_out = adj;
  return TN_OK;
}

/* Candidates of every root. O(n (n + m)) time, O(n m) space. */
static tn_status_t layered_build(const pairs_t *p, layered_t *f, tn_err_t *err) {
  uint32_t n = p->n, m = p->m, *off = NULL, *adj = NULL, *dist = NULL, *q = NULL;
  tn_status_t st = incidence(p, &off, &adj, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *dist, &dist, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *q, &q, err);
  if (st == TN_OK) st = tn_malloc((size_t)n * (n + 1), sizeof *f->off, &f->off, err);
  if (st == TN_OK) st = tn_malloc((size_t)n * m + 1, sizeof *f->cand, &f->cand, err);
  uint32_t fill = 0;
  for (uint32_t r = 0; st == TN_OK && r < n; r++) {
    for (uint32_t v = 0; v < n; v++)
      dist[v] = UINT32_MAX;
    uint32_t head = 0, tail = 0;
    q[tail++] = r;
    dist[r] = 0;
    while (head < tail) {
      uint32_t v = q[head++];
      for (uint32_t a = off[v]; a < off[v + 1]; a++) {
        uint32_t e = adj[a], w = p->u[e] == v ? p->v[e] : p->u[e];
        if (dist[w] == UINT32_MAX) dist[w] = dist[v] + 1, q[tail++] = w;
      }
    }
    uint32_t *o = f->off + (size_t)r * (n + 1);
    for (uint32_t v = 0; v < n; v++) {
      o[v] = fill;
      for (uint32_t a = off[v]; a < off[v + 1]; a++) {
        uint32_t e = adj[a], w = p->u[e] == v ? p->v[e] : p->u[e];
        if (dist[w] + 1 == dist[v] || (dist[w] == dist[v] && w < v)) f->cand[fill++] = e;
      }
    }
    o[n] = fill;
  }
  free(off);
  free(adj);
  free(dist);
  free(q);
  return st;
}

/* The lightest layered tree under lengths len (the lowest root among equals): its n - 1
 * pair ids, sorted, in e; tmp is scratch of n - 1. O(n m). */
static void layered_oracle(const pairs_t *p, const layered_t *f, const double *len, uint32_t *e,
                           uint32_t *tmp) {
  uint32_t n = p->n;
  double best = INFINITY;
  for (uint32_t r = 0; r < n; r++) {
    const uint32_t *o = f->off + (size_t)r * (n + 1);
    double sum = 0;
    uint32_t c = 0;
    for (uint32_t v = 0; v < n && sum < best; v++) {
      if (o[v] == o[v + 1]) continue; /* the root: no candidate */
      uint32_t b = f->cand[o[v]];
      for (uint32_t a = o[v] + 1; a < o[v + 1]; a++)
        if (len[f->cand[a]] < len[b]) b = f->cand[a];
      sum += len[b];
      tmp[c++] = b;
    }
    if (sum < best) {
      best = sum;
      memcpy(e, tmp, (n - 1) * sizeof *e);
    }
  }
  qsort(e, n - 1, sizeof *e, cmp_u32);
}

/* The initial Garg-Koenemann lengths; returns their weighted sum. */
static double gk_init(const pairs_t *p, double *len) {
  double delta = gk_delta(p->nres), dsum = 0;
  for (uint32_t j = 0; j < p->nres; j++) {
    len[j] = delta / p->cap[j];
    dsum += delta;
  }
  return dsum;
}

/* The fractional packing over the layered trees: distinct trees with their amounts. */
static tn_status_t pack_layered(const pairs_t *p, treeset_t *ts, tn_err_t *err) {
  uint32_t n1 = p->n - 1;
  double *len = NULL, *plen = NULL;
  uint32_t *e = NULL, *tmp = NULL, *use = NULL;
  layered_t f = {0};
  tn_status_t st = tn_malloc(p->nres, sizeof *len, &len, err);
  if (st == TN_OK) st = tn_malloc(p->m, sizeof *plen, &plen, err);
  if (st == TN_OK) st = tn_calloc(p->nres, sizeof *use, &use, err);
  if (st == TN_OK) st = tn_malloc(n1, sizeof *e, &e, err);
  if (st == TN_OK) st = tn_malloc(n1, sizeof *tmp, &tmp, err);
  if (st == TN_OK) st = layered_build(p, &f, err);
  double dsum = st == TN_OK ? gk_init(p, len) : 1.0;
  for (uint32_t round = 0; st == TN_OK && dsum < 1.0 && round < MAX_ROUNDS; round++) {
    layered_oracle(p, &f, pair_lengths(p, len, plen), e, tmp);
    double c = gk_step(p, e, n1, len, &dsum, use);
    st = treeset_add(ts, e, c, err);
  }
  free(len);
  free(plen);
  free(use);
  free(e);
  free(tmp);
  layered_free(&f);
  return st;
}

/* The fractional packing over all spanning trees: distinct trees with their amounts. */
static tn_status_t pack_all(const pairs_t *p, treeset_t *ts, tn_err_t *err) {
  uint32_t n1 = p->n - 1;
  double *len = NULL, *plen = NULL;
  uint32_t *e = NULL, *use = NULL;
  tn_status_t st = tn_malloc(p->nres, sizeof *len, &len, err);
  if (st == TN_OK) st = tn_malloc(p->m, sizeof *plen, &plen, err);
  if (st == TN_OK) st = tn_calloc(p->nres, sizeof *use, &use, err);
  if (st == TN_OK) st = tn_malloc(n1, sizeof *e, &e, err);
  if (st != TN_OK) goto out;
  double dsum = gk_init(p, len);
  topo_igraph_lock(); /* igraph is not thread-safe; this also quiets its handlers */
  igraph_t g;
  igraph_vector_int_t ev, res;
  igraph_vector_t w;
  bool have_g = false, have_ev = false, have_res = false, have_w = false;
  igraph_error_t ie = igraph_vector_int_init(&ev, 2 * (igraph_integer_t)p->m);
  have_ev = ie == IGRAPH_SUCCESS;
  for (uint32_t j = 0; have_ev && j < p->m; j++) {
    VECTOR(ev)[2 * j] = p->u[j];
    VECTOR(ev)[2 * j + 1] = p->v[j];
  }
  if (ie == IGRAPH_SUCCESS) ie = igraph_create(&g, &ev, (igraph_integer_t)p->n, IGRAPH_UNDIRECTED);
  have_g = ie == IGRAPH_SUCCESS;
  if (ie == IGRAPH_SUCCESS) ie = igraph_vector_int_init(&res, 0);
  have_res = have_g && ie == IGRAPH_SUCCESS;
  if (ie == IGRAPH_SUCCESS) ie = igraph_vector_init(&w, (igraph_integer_t)p->m);
  have_w = have_res && ie == IGRAPH_SUCCESS;
  for (uint32_t round = 0; ie == IGRAPH_SUCCESS && st == TN_OK && dsum < 1.0 && round < MAX_ROUNDS;
       round++) {
    const double *pl = pair_lengths(p, len, plen);
    for (uint32_t j = 0; j < p->m; j++)
      VECTOR(w)[j] = pl[j];
    ie = igraph_minimum_spanning_tree(&g, &res, &w);
    if (ie != IGRAPH_SUCCESS) break;
    if (igraph_vector_int_size(&res) != (igraph_integer_t)n1) {
      st = tn_err_set(err, TN_INTERNAL, "trees: spanning tree of %ld edges, %u expected",
                      (long)igraph_vector_int_size(&res), n1);
      break;
    }
    for (uint32_t j = 0; j < n1; j++)
      e[j] = (uint32_t)VECTOR(res)[j];
    qsort(e, n1, sizeof *e, cmp_u32);
    double c = gk_step(p, e, n1, len, &dsum, use);
    st = treeset_add(ts, e, c, err);
  }
  if (have_w) igraph_vector_destroy(&w);
  if (have_res) igraph_vector_int_destroy(&res);
  if (have_g) igraph_destroy(&g);
  if (have_ev) igraph_vector_int_destroy(&ev);
  topo_igraph_unlock();
  if (st == TN_OK) st = map_igraph(ie, "minimum spanning tree", err);
out:
  free(len);
  free(plen);
  free(use);
  free(e);
  return st;
}

/* Scales amounts x[0..k) of trees (edge lists) down so that every resource is within its
 * capacity; returns their sum. load is scratch of nres. */
static double make_feasible(const pairs_t *p, const uint32_t *edges, uint32_t k, double *x,
                            double *load) {
  uint32_t n1 = p->n - 1;
  memset(load, 0, p->nres * sizeof *load);
  for (uint32_t i = 0; i < k; i++)
    for (uint32_t j = 0; j < n1; j++) {
      uint32_t e = edges[(size_t)i * n1 + j];
      for (uint32_t r = 0; r < res_count(p, e); r++)
        load[res_of(p, e, r)] += x[i];
    }
  double over = 0, sum = 0;
  for (uint32_t j = 0; j < p->nres; j++)
    over = fmax(over, load[j] / p->cap[j]);
  for (uint32_t i = 0; i < k; i++) {
    if (over > 0) x[i] /= over;
    sum += x[i];
  }
  return sum;
}

/* Packs again over the k given trees only (the oracle: the one of least length, lowest
 * index on ties), for their weights x. */
static tn_status_t pack_kept(const pairs_t *p, const uint32_t *edges, uint32_t k, double *x,
                             tn_err_t *err) {
  uint32_t n1 = p->n - 1;
  double *len = NULL, *plen = NULL;
  uint32_t *use = NULL;
  tn_status_t st = tn_malloc(p->nres, sizeof *len, &len, err);
  if (st == TN_OK) st = tn_malloc(p->m, sizeof *plen, &plen, err);
  if (st == TN_OK) st = tn_calloc(p->nres, sizeof *use, &use, err);
  double dsum = st == TN_OK ? gk_init(p, len) : 1.0;
  memset(x, 0, k * sizeof *x);
  for (uint32_t round = 0; st == TN_OK && dsum < 1.0 && round < MAX_ROUNDS; round++) {
    const double *pl = pair_lengths(p, len, plen);
    uint32_t best = 0;
    double best_len = INFINITY;
    for (uint32_t i = 0; i < k; i++) {
      double l = 0;
      for (uint32_t j = 0; j < n1; j++)
        l += pl[edges[(size_t)i * n1 + j]];
      if (l < best_len) {
        best_len = l;
        best = i;
      }
    }
    x[best] += gk_step(p, edges + (size_t)best * n1, n1, len, &dsum, use);
  }
  double s = gk_scale(p->nres);
  for (uint32_t i = 0; i < k; i++)
    x[i] /= s;
  free(len);
  free(plen);
  free(use);
  return st;
}

/* Roots tree i (edges e) at a centre and fills parent[0..n). adj/off/q are scratch. */
static void root_tree(const pairs_t *p, const uint32_t *e, uint32_t *parent, uint32_t *root,
                      uint32_t *off, uint32_t *adj, uint32_t *q, uint32_t *dist) {
  uint32_t n = p->n, n1 = n - 1;
  memset(off, 0, (n + 1) * sizeof *off);
  for (uint32_t j = 0; j < n1; j++) {
    off[p->u[e[j]] + 1]++;
    off[p->v[e[j]] + 1]++;
  }
  for (uint32_t v = 0; v < n; v++)
    off[v + 1] += off[v];
  for (uint32_t j = 0; j < n1; j++) { /* fill, then restore the offsets */
    adj[off[p->u[e[j]]]++] = p->v[e[j]];
    adj[off[p->v[e[j]]]++] = p->u[e[j]];
  }
  for (uint32_t v = n; v > 0; v--)
    off[v] = off[v - 1];
  off[0] = 0;
  uint32_t best = 0, best_ecc = UINT32_MAX;
  for (uint32_t s = 0; s <= n; s++) {
    uint32_t src = s < n ? s : best; /* the last BFS, from the centre, leaves parents */
    for (uint32_t v = 0; v < n; v++)
      dist[v] = UINT32_MAX;
    uint32_t head = 0, tail = 0, ecc = 0;
    q[tail++] = src;
    dist[src] = 0;
    parent[src] = UINT32_MAX;
    while (head < tail) {
      uint32_t v = q[head++];
      ecc = dist[v];
      for (uint32_t a = off[v]; a < off[v + 1]; a++)
        if (dist[adj[a]] == UINT32_MAX) {
          dist[adj[a]] = dist[v] + 1;
          parent[adj[a]] = v;
          q[tail++] = adj[a];
        }
    }
    if (s < n && ecc < best_ecc) {
      best_ecc = ecc;
      best = s;
    }
  }
  *root = best;
}

/* The k trees' weights by linear program (trees_i_lp_weights): one row per resource, a
 * tree's coefficient there the number of its edges that load it. False when it could not
 * be solved (no GLPK, or no memory: then the caller's multiplicative weights run). */
static bool lp_weights(const pairs_t *p, const uint32_t *edges, uint32_t k, double *x,
                       tn_err_t *err) {
  uint32_t n1 = p->n - 1, *row = NULL, *col = NULL, *use = NULL;
  double *coef = NULL;
  size_t most = 0, nz = 0;
  for (uint32_t i = 0; i < k; i++)
    for (uint32_t j = 0; j < n1; j++)
      most += res_count(p, edges[(size_t)i * n1 + j]);
  bool ok = tn_malloc(most + 1, sizeof *row, &row, err) == TN_OK &&
            tn_malloc(most + 1, sizeof *col, &col, err) == TN_OK &&
            tn_malloc(most + 1, sizeof *coef, &coef, err) == TN_OK &&
            tn_calloc(p->nres, sizeof *use, &use, err) == TN_OK;
  for (uint32_t i = 0; ok && i < k; i++) {
    const uint32_t *e = edges + (size_t)i * n1;
    tree_use(p, e, n1, use);
    for (uint32_t j = 0; j < n1; j++)
      for (uint32_t a = 0; a < res_count(p, e[j]); a++) {
        uint32_t r = res_of(p, e[j], a);
        if (use[r] == 0) continue; /* counted already */
        row[nz] = r, col[nz] = i, coef[nz++] = use[r];
        use[r] = 0;
      }
  }
  ok = ok && trees_i_lp_weights(p->nres, p->cap, k, nz, row, col, coef, x);
  free(row);
  free(col);
  free(coef);
  free(use);
  return ok;
}

/* Through switches the multiplicative weights spread over many star-like trees, and their
 * k heaviest pack well below the fractional value (rail-4x8 with a dead and a degraded
 * NIC: 166 GB/s from 64 of them, where all pack 178): the linear program first weighs the
 * SWITCHED_LP_TREES heaviest, and order[] is put in the order of those weights (the trees
 * it leaves out after them, then the rest), so that the k kept are the ones it uses (there:
 * 56 trees, 178.6 GB/s). Without GLPK order[] stays as it is. */
#define SWITCHED_LP_TREES 1024u
static tn_status_t lp_preselect(const pairs_t *p, const treeset_t *ts, uint32_t *order,
                                uint32_t total, tn_err_t *err) {
  uint32_t n1 = p->n - 1, c = total < SWITCHED_LP_TREES ? total : SWITCHED_LP_TREES;
  uint32_t *edges = NULL, *by = NULL;
  double *w = NULL;
  tn_status_t st = tn_malloc((size_t)c * n1 + 1, sizeof *edges, &edges, err);
  if (st == TN_OK) st = tn_malloc(c, sizeof *w, &w, err);
  if (st == TN_OK) st = tn_malloc(c, sizeof *by, &by, err);
  for (uint32_t i = 0; st == TN_OK && i < c; i++)
    memcpy(edges + (size_t)i * n1, &TN_VEC_AT(&ts->edges, uint32_t, (size_t)order[i] * n1),
           n1 * sizeof *edges);
  if (st == TN_OK && lp_weights(p, edges, c, w, err)) {
    for (uint32_t i = 0; i < c; i++) { /* by weight, descending, stable */
      uint32_t j = i;
      for (; j > 0 && w[by[j - 1]] < w[i]; j--)
        by[j] = by[j - 1];
      by[j] = i;
    }
    for (uint32_t i = 0; i < c; i++)
      by[i] = order[by[i]];
    memcpy(order, by, c * sizeof *order);
  }
  free(edges);
  free(w);
  free(by);
  return st;
}

/* Keeps the heaviest k trees of ts (ties: found first), weighs them again (exactly by
 * linear program with GLPK, else by multiplicative weights) and roots them. */
static tn_status_t keep(const pairs_t *p, const treeset_t *ts, uint32_t k, trees_packing_t *out,
                        tn_err_t *err) {
  uint32_t n = p->n, n1 = n - 1, total = (uint32_t)ts->x.len;
  uint32_t *order = NULL, *edges = NULL, *scratch = NULL;
  double *load = NULL;
  tn_status_t st = tn_malloc(total, sizeof *order, &order, err);
  if (st == TN_OK) st = tn_malloc((size_t)k * n1 + 1, sizeof *edges, &edges, err);
  if (st == TN_OK) st = tn_malloc(5 * (size_t)n + 2, sizeof *scratch, &scratch, err);
  if (st == TN_OK) st = tn_malloc(p->nres, sizeof *load, &load, err);
  if (st == TN_OK) st = tn_calloc(k, sizeof *out->root, &out->root, err);
  if (st == TN_OK) st = tn_calloc((size_t)k * n, sizeof *out->parent, &out->parent, err);
  if (st == TN_OK) st = tn_calloc(k, sizeof *out->weight_GBps, &out->weight_GBps, err);
  if (st != TN_OK) goto out;
  const double *x = ts->x.data;
  for (uint32_t i = 0; i < total; i++) { /* insertion sort by amount, descending, stable */
    uint32_t j = i;
    for (; j > 0 && x[order[j - 1]] < x[i]; j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
  if (p->roff != NULL && total > k) st = lp_preselect(p, ts, order, total, err);
  if (st != TN_OK) goto out;
  for (uint32_t i = 0; i < k; i++)
    memcpy(edges + (size_t)i * n1, &TN_VEC_AT(&ts->edges, uint32_t, (size_t)order[i] * n1),
           n1 * sizeof *edges);
  if (!lp_weights(p, edges, k, out->weight_GBps, err))
    st = pack_kept(p, edges, k, out->weight_GBps, err);
  if (st != TN_OK) goto out;
  out->value_GBps = make_feasible(p, edges, k, out->weight_GBps, load);
  /* Trees the second packing left out are dropped. */
  uint32_t kept = 0;
  for (uint32_t i = 0; i < k; i++) {
    if (!(out->weight_GBps[i] > 0)) continue;
    out->weight_GBps[kept] = out->weight_GBps[i];
    uint32_t *off = scratch, *adj = off + n + 1, *q = adj + 2 * (size_t)n, *dist = q + n;
    root_tree(p, edges + (size_t)i * n1, out->parent + (size_t)kept * n, &out->root[kept], off, adj,
              q, dist);
    kept++;
  }
  out->ntrees = kept;
out:
  free(order);
  free(edges);
  free(scratch);
  free(load);
  return st;
}

/* One family's packing (layered trees, or all spanning trees by minimum spanning tree), cut
 * to k trees, into *out. */
static tn_status_t pack_family(const pairs_t *p, bool layered, uint32_t k, trees_packing_t *out,
                               tn_err_t *err) {
  memset(out, 0, sizeof *out);
  treeset_t ts = {.n1 = p->n - 1};
  tn_vec_init(&ts.edges, sizeof(uint32_t));
  tn_vec_init(&ts.hash, sizeof(uint64_t));
  tn_vec_init(&ts.x, sizeof(double));
  tn_status_t st = layered ? pack_layered(p, &ts, err) : pack_all(p, &ts, err);
  if (st == TN_OK) {
    double s = gk_scale(p->nres);
    for (size_t i = 0; i < ts.x.len; i++)
      TN_VEC_AT(&ts.x, double, i) /= s;
    out->npus = p->n;
    if (k > ts.x.len) k = (uint32_t)ts.x.len;
    double *load = NULL;
    st = tn_malloc(p->nres, sizeof *load, &load, err);
    if (st == TN_OK)
      out->fractional_GBps = make_feasible(p, ts.edges.data, (uint32_t)ts.x.len, ts.x.data, load);
    free(load);
    if (st == TN_OK) st = keep(p, &ts, k, out, err);
  }
  tn_vec_free(&ts.edges);
  tn_vec_free(&ts.hash);
  tn_vec_free(&ts.x);
  if (st != TN_OK) trees_packing_free(out);
  return st;
}

tn_status_t trees_pack(const topo_t *t, uint32_t max_trees, trees_packing_t *out, tn_err_t *err) {
  return trees_i_pack(t, max_trees, false, out, err);
}

tn_status_t trees_i_pack(const topo_t *t, uint32_t max_trees, bool layered_only,
                         trees_packing_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  pairs_t p = {0};
  uint32_t k = max_trees ? max_trees : TREES_MAX_TREES;
  tn_status_t st = build_pairs(t, &p, err);
  if (st == TN_OK) st = pack_family(&p, true, k, out, err);
  /* Layered trees pack as well as any spanning trees on meshes, tori, hypercubes and
   * random regular graphs; where they fall short of the partition bound (the capacity of
   * all pairs over n - 1), all spanning trees are packed too, and kept when clearly more. */
  double ideal = 0;
  for (uint32_t e = 0; p.roff == NULL && e < p.m; e++)
    ideal += p.cap[e];
  ideal /= p.n - 1.0;
  /* (Through switches the pairs share links: no such sum; both families are packed.) */
  if (st == TN_OK && !layered_only &&
      (p.roff != NULL || out->value_GBps < LAYERED_ENOUGH * ideal)) {
    trees_packing_t any;
    st = pack_family(&p, false, k, &any, err);
    if (st == TN_OK && any.value_GBps > SPANNING_GAIN * out->value_GBps) {
      trees_packing_free(out);
      *out = any;
    } else {
      trees_packing_free(&any);
    }
  }
  pairs_free(&p);
  if (st != TN_OK) trees_packing_free(out);
  return st;
}

void trees_packing_free(trees_packing_t *p) {
  if (p == NULL) return;
  free(p->root);
  free(p->parent);
  free(p->weight_GBps);
  memset(p, 0, sizeof *p);
}
