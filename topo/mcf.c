/* topo/mcf.c — the exact All-to-All throughput of a fabric (docs/bounds.md §4): the
 * maximum concurrent multicommodity flow of tenet's model, where every message follows
 * its fixed route. Flows run over route segments (the stretches of routes between two
 * NPUs, through switches only) and the linear program is solved by column generation with
 * GLPK (lp/): a column sends one unit from a source to every other NPU along a tree of
 * segments, and the dual link lengths price the next trees by Dijkstra. Every round's
 * lengths give a valid bound (weak duality), so the answer is a bound even when the rounds
 * run out before the program's optimum is proved. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lp/lp.h"
#include "topo/topo_internal.h"

#ifdef TENET_HAVE_GLPK

/* A segment: the links pool[off .. off + len) from NPU from to NPU to, switches between. */
typedef struct seg {
  uint32_t from, to, off, len;
} seg_t;

typedef struct segs {
  uint32_t nseg;
  seg_t *seg;
  uint32_t *pool;
  uint32_t *adj_off, *adj; /* CSR by NPU: the segments leaving it, in id order */
} segs_t;

static void segs_free(segs_t *g) {
  free(g->seg);
  free(g->pool);
  free(g->adj_off);
  free(g->adj);
  memset(g, 0, sizeof *g);
}

typedef struct seg_build {
  segs_t *g;
  uint32_t n;
  uint32_t *head, *next; /* head[u * n + w]: the segments from u to w, chained by next */
  size_t cap;
  tn_vec_t pool;
} seg_build_t;

/* Adds the segment walk[0 .. len) from u to w unless it is there already. */
static tn_status_t seg_add(seg_build_t *b, uint32_t u, uint32_t w, const uint32_t *walk,
                           uint32_t len, tn_err_t *err) {
  segs_t *g = b->g;
  size_t h = (size_t)u * b->n + w;
  for (uint32_t e = b->head[h]; e != UINT32_MAX; e = b->next[e]) {
    const seg_t *s = &g->seg[e];
    if (s->len == len &&
        memcmp(&TN_VEC_AT(&b->pool, uint32_t, s->off), walk, len * sizeof *walk) == 0)
      return TN_OK;
  }
  tn_status_t st = TN_OK;
  if (g->nseg == b->cap) {
    size_t grow = b->cap ? 2 * b->cap : 256;
    st = tn_realloc(&g->seg, b->cap, grow, sizeof *g->seg, err);
    if (st == TN_OK) st = tn_realloc(&b->next, b->cap, grow, sizeof *b->next, err);
    if (st != TN_OK) return st;
    b->cap = grow;
  }
  st = tn_vec_reserve(&b->pool, b->pool.len + len, err);
  if (st != TN_OK) return st;
  g->seg[g->nseg] = (seg_t){u, w, (uint32_t)b->pool.len, len};
  memcpy(&TN_VEC_AT(&b->pool, uint32_t, b->pool.len), walk, len * sizeof *walk);
  b->pool.len += len;
  b->next[g->nseg] = b->head[h];
  b->head[h] = g->nseg++;
  return TN_OK;
}

/* Every route from NPU to NPU, cut at the NPUs it passes: the distinct segments. A
 * schedule's messages follow routes, so every byte's way from its source to its
 * destination is a chain of these. *head and *next (caller frees) chain the segments from
 * u to w from (*head)[u * n + w]. O(n^2 hops). */
static tn_status_t segs_build(const topo_t *t, segs_t *g, uint32_t **head, uint32_t **next,
                              tn_err_t *err) {
  uint32_t n = t->npus, nodes = topo_nodes(t);
  memset(g, 0, sizeof *g);
  seg_build_t b = {.g = g, .n = n};
  tn_vec_init(&b.pool, sizeof(uint32_t));
  topo_routes_t *r = NULL;
  uint32_t *walk = NULL;
  tn_status_t st = topo_routes_create(t, &r, err);
  if (st == TN_OK) st = tn_malloc((size_t)n * n, sizeof *b.head, &b.head, err);
  if (st == TN_OK) st = tn_malloc(nodes + 1u, sizeof *walk, &walk, err);
  if (st == TN_OK)
    for (size_t i = 0; i < (size_t)n * n; i++)
      b.head[i] = UINT32_MAX;
  for (uint32_t u = 0; st == TN_OK && u < n; u++)
    for (uint32_t v = 0; st == TN_OK && v < n; v++) {
      uint32_t from = u, len = 0;
      for (uint32_t node = u; st == TN_OK && node != v;) {
        uint32_t l = topo_route_next(r, node, v);
        if (l == TOPO_NO_LINK || len >= nodes) {
          st =
              tn_err_set(err, TN_INFEASIBLE, "'%s': no route from NPU %u to NPU %u", t->name, u, v);
          break;
        }
        walk[len++] = l;
        node = t->links[l].dst;
        if (node < n) st = seg_add(&b, from, node, walk, len, err), from = node, len = 0;
      }
    }
  uint32_t *pos = NULL;
  if (st == TN_OK) st = tn_calloc(n + 1u, sizeof *g->adj_off, &g->adj_off, err);
  if (st == TN_OK) st = tn_malloc(g->nseg + 1u, sizeof *g->adj, &g->adj, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *pos, &pos, err);
  if (st == TN_OK) {
    for (uint32_t e = 0; e < g->nseg; e++)
      g->adj_off[g->seg[e].from + 1]++;
    for (uint32_t v = 0; v < n; v++)
      g->adj_off[v + 1] += g->adj_off[v], pos[v] = g->adj_off[v];
    for (uint32_t e = 0; e < g->nseg; e++)
      g->adj[pos[g->seg[e].from]++] = e;
  }
  g->pool = b.pool.data;
  free(pos);
  free(walk);
  topo_routes_free(r);
  if (st != TN_OK) {
    segs_free(g);
    free(b.head), free(b.next);
    b.head = b.next = NULL;
  }
  *head = b.head, *next = b.next;
  return st;
}

#include <glpk.h>

/* Rounds of column generation at most (each adds up to one tree per source), and work
 * limits, so that the answer does not depend on the machine: simplex iterations times the
 * square of the master's rows (2e9: 1.4 s of one core on a 256-NPU torus written link by
 * link, 2.3 s on a random 128-NPU graph, the worst seen; a master's degeneracy, not its
 * size, decides the rest), and Dijkstra work over the rounds, n (n + segments) per round
 * (2e9, about 2 s). */
#define MCF_MAX_ROUNDS 400u
#define MCF_MAX_WORK 2e9
#define MCF_MAX_PRICING 2e9
#define MCF_SEED_TREES 4u
/* A feasible flow within this (relative) of the best dual bound proves that bound exact. */
#define MCF_GAP 1e-7

typedef struct mcf {
  const topo_t *t;
  const segs_t *g;
  topo_routes_t *routes;
  uint32_t n, L;
  double cap_rate;   /* the best rate limit known before (the cuts'), GB/s */
  double *y;         /* per link: its length (the master's capacity dual) */
  double *cost;      /* per segment: its length */
  double *dist;      /* per NPU: Dijkstra's distance from the source */
  uint32_t *hops;    /* per NPU: segments on that shortest way (ties: fewer) */
  uint32_t *pred;    /* per NPU: the segment it is reached by */
  uint32_t *order;   /* NPUs in the order Dijkstra settles them */
  uint32_t *cnt;     /* per NPU: destinations at or below it in the tree */
  uint8_t *done;     /* per NPU */
  double *load;      /* per link: a column's load, zero outside touched */
  uint32_t *touched; /* links with a load, in first-touch order */
  int *ind;          /* a GLPK row or column: indices from slot 1 */
  double *val;
  uint32_t *orbit; /* symmetric fabrics: per link, its orbit under the translations */
  uint32_t norbits;
  double lambda_lo, lambda_hi; /* a feasible rate; the best dual bound */
  uint32_t rounds;
} mcf_t;

/* Shortest-path tree from s under the current segment costs (dense Dijkstra; ties to
 * fewer segments, then the lower NPU id). Returns the summed distance to every NPU. */
static double tree(mcf_t *M, uint32_t s) {
  uint32_t n = M->n;
  const segs_t *g = M->g;
  for (uint32_t v = 0; v < n; v++)
    M->dist[v] = INFINITY, M->hops[v] = UINT32_MAX, M->pred[v] = UINT32_MAX, M->done[v] = 0;
  M->dist[s] = 0.0, M->hops[s] = 0;
  double sum = 0.0;
  for (uint32_t it = 0; it < n; it++) {
    uint32_t x = UINT32_MAX;
    for (uint32_t v = 0; v < n; v++)
      if (!M->done[v] && isfinite(M->dist[v]) &&
          (x == UINT32_MAX || M->dist[v] < M->dist[x] ||
           (M->dist[v] == M->dist[x] && M->hops[v] < M->hops[x])))
        x = v;
    if (x == UINT32_MAX) return INFINITY; /* unreachable: segs_build refuses that first */
    M->done[x] = 1;
    M->order[it] = x;
    sum += M->dist[x];
    for (uint32_t i = g->adj_off[x]; i < g->adj_off[x + 1]; i++) {
      uint32_t e = g->adj[i], w = g->seg[e].to;
      double c = M->dist[x] + M->cost[e];
      if (!M->done[w] && (c < M->dist[w] || (c == M->dist[w] && M->hops[x] + 1 < M->hops[w])))
        M->dist[w] = c, M->hops[w] = M->hops[x] + 1, M->pred[w] = e;
    }
  }
  return sum;
}

static void segment_costs(mcf_t *M) {
  const segs_t *g = M->g;
  for (uint32_t e = 0; e < g->nseg; e++) {
    double c = 0.0;
    for (uint32_t k = 0; k < g->seg[e].len; k++)
      c += M->y[g->pool[g->seg[e].off + k]];
    M->cost[e] = c;
  }
}

/* The best dual bound of lengths y: every concurrent flow of rate lambda puts
 * lambda * (the summed shortest distances) <= sum of B_l y_l on the links. */
static void dual_bound(mcf_t *M) {
  double cap = 0.0, sum = 0.0;
  for (uint32_t l = 0; l < M->L; l++)
    cap += M->y[l] * M->t->links[l].bandwidth_GBps;
  segment_costs(M);
  for (uint32_t s = 0; s < M->n; s++)
    sum += tree(M, s);
  if (sum > 0.0) M->lambda_hi = fmin(M->lambda_hi, cap / sum);
}

static void load_add(mcf_t *M, uint32_t l, double x, uint32_t *ntouch) {
  if (M->load[l] == 0.0) M->touched[(*ntouch)++] = l;
  M->load[l] += x;
}

/* The column of source s (row s + 1: -1; row n + l + 1: the load of link l) from the
 * loads; returns its number of entries and leaves load zeroed. */
static int column(mcf_t *M, uint32_t s, uint32_t ntouch) {
  int len = 0;
  M->ind[++len] = (int)s + 1, M->val[len] = -1.0;
  for (uint32_t k = 0; k < ntouch; k++) {
    uint32_t l = M->touched[k];
    M->ind[++len] = (int)(M->n + l + 1), M->val[len] = M->load[l];
    M->load[l] = 0.0;
  }
  return len;
}

/* The last tree's column. */
static int tree_column(mcf_t *M, uint32_t s) {
  uint32_t n = M->n, ntouch = 0;
  const segs_t *g = M->g;
  for (uint32_t v = 0; v < n; v++)
    M->cnt[v] = 0;
  for (uint32_t i = n; i-- > 1;) { /* order[0] is s */
    uint32_t w = M->order[i];
    const seg_t *e = &g->seg[M->pred[w]];
    M->cnt[w]++;
    M->cnt[e->from] += M->cnt[w];
    for (uint32_t k = 0; k < e->len; k++)
      load_add(M, g->pool[e->off + k], M->cnt[w], &ntouch);
  }
  return column(M, s, ntouch);
}

/* Adds to the loads one unit along s's route to every NPU: a Direct All-to-All's flow. */
static void route_loads(mcf_t *M, uint32_t s, uint32_t *ntouch) {
  for (uint32_t d = 0; d < M->n; d++)
    for (uint32_t v = s; v != d;) {
      uint32_t l = topo_route_next(M->routes, v, d);
      load_add(M, l, 1.0, ntouch);
      v = M->t->links[l].dst;
    }
}

static int route_column(mcf_t *M, uint32_t s) {
  uint32_t ntouch = 0;
  route_loads(M, s, &ntouch);
  return column(M, s, ntouch);
}

static void add_column(glp_prob *P, int len, const int *ind, const double *val) {
  int col = glp_add_cols(P, 1);
  glp_set_col_bnds(P, col, GLP_LO, 0.0, 0.0);
  glp_set_mat_col(P, col, len, ind, val);
}

static bool proved(const mcf_t *M) {
  return M->lambda_lo >= fmin(M->lambda_hi, M->cap_rate) * (1.0 - MCF_GAP);
}

/* Column generation. Rows: 1..n one per source (lambda - its columns' weights <= 0), then
 * one capacity row per link. Columns: lambda first, then every source's routes (the
 * Direct flow), then trees priced by the capacity duals. */
static bool mcf_body(void *ctx) {
  mcf_t *M = ctx;
  const topo_t *t = M->t;
  uint32_t n = M->n, L = M->L;
  glp_prob *P = glp_create_prob();
  glp_set_obj_dir(P, GLP_MAX);
  glp_add_rows(P, (int)(n + L));
  for (uint32_t s = 0; s < n; s++)
    glp_set_row_bnds(P, (int)s + 1, GLP_UP, 0.0, 0.0);
  for (uint32_t l = 0; l < L; l++)
    glp_set_row_bnds(P, (int)(n + l + 1), GLP_UP, 0.0, t->links[l].bandwidth_GBps);
  for (uint32_t s = 0; s < n; s++)
    M->ind[s + 1] = (int)s + 1, M->val[s + 1] = 1.0;
  add_column(P, (int)n, M->ind, M->val);
  glp_set_obj_coef(P, 1, 1.0);
  for (uint32_t s = 0; s < n; s++)
    add_column(P, route_column(M, s), M->ind, M->val);
  /* Then MCF_SEED_TREES trees per source priced by multiplicative weights (Garg and
   * Koenemann's way to a near-optimal concurrent flow): each tree lengthens its links by
   * their load over their bandwidth, so the next ones spread. The master starts near the
   * optimum and column generation only finishes it (torus-8x8-degraded: 25 rounds and
   * 1.7 s without these, none with them). */
  for (uint32_t l = 0; l < L; l++)
    M->y[l] = 1.0 / t->links[l].bandwidth_GBps;
  for (uint32_t k = 0; k < MCF_SEED_TREES; k++)
    for (uint32_t s = 0; s < n; s++) {
      segment_costs(M);
      tree(M, s);
      int len = tree_column(M, s);
      add_column(P, len, M->ind, M->val);
      for (int i = 2; i <= len; i++) {
        uint32_t l = (uint32_t)(M->ind[i] - (int)n - 1);
        M->y[l] *= exp(M->val[i] / (t->links[l].bandwidth_GBps * n));
      }
    }
  dual_bound(M); /* the weights are lengths too, and often good ones */
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.presolve = GLP_OFF; /* keep the basis from round to round */
  bool ok = true;
  double work = 0.0, size = (double)(n + L) * (double)(n + L);
  double pricing = (double)n * (n + M->g->nseg);
  for (M->rounds = 0; ok && M->rounds < MCF_MAX_ROUNDS; M->rounds++) {
    double before = glp_get_it_cnt(P);
    if ((MCF_MAX_WORK - work) / size < 1.0 || (M->rounds + 1) * pricing > MCF_MAX_PRICING) break;
    sp.it_lim = (int)fmin((MCF_MAX_WORK - work) / size, 1e9);
    int rc = glp_simplex(P, &sp);
    work += (glp_get_it_cnt(P) - before) * size;
    if (rc == GLP_EITLIM) break; /* the work is spent: the best dual bound stands */
    ok = rc == 0 && glp_get_status(P) == GLP_OPT;
    if (!ok) break;
    M->lambda_lo = fmax(M->lambda_lo, glp_get_obj_val(P));
    if (proved(M)) break;
    double cap = 0.0, sum = 0.0;
    for (uint32_t l = 0; l < L; l++) {
      M->y[l] = fmax(0.0, glp_get_row_dual(P, (int)(n + l + 1)));
      cap += M->y[l] * t->links[l].bandwidth_GBps;
    }
    segment_costs(M);
    uint32_t added = 0;
    for (uint32_t s = 0; s < n; s++) {
      double d = tree(M, s), pi = fmax(0.0, glp_get_row_dual(P, (int)s + 1));
      sum += d;
      if (d < pi * (1.0 - 1e-9)) add_column(P, tree_column(M, s), M->ind, M->val), added++;
    }
    if (sum > 0.0) M->lambda_hi = fmin(M->lambda_hi, cap / sum);
    if (added == 0) break; /* no column prices out: the master's optimum is the program's */
  }
  glp_delete_prob(P);
  return ok;
}

/* ---- translation symmetry ------------------------------------------------ */

/* The node a unit shift along dimension d moves node x to, on a generated fabric: NPU
 * coordinate d plus one (mod its size), a switch to the switch of the shifted row. */
static uint32_t shift_node(const topo_t *t, const uint32_t *stride, const uint32_t *sw_first,
                           uint32_t d, uint32_t x) {
  uint32_t st = stride[d], s = t->dims[d].size;
  if (x < t->npus) {
    uint32_t c = (x / st) % s;
    return x - c * st + ((c + 1) % s) * st;
  }
  for (uint32_t e = t->ndims; e-- > 0;) {
    if (t->dims[e].kind != TOPO_DIM_SWITCH || x < sw_first[e]) continue;
    uint32_t r = x - sw_first[e], se = stride[e], ze = t->dims[e].size;
    uint32_t p = shift_node(t, stride, sw_first, d, r % se + (r / se) * se * ze);
    return sw_first[e] + p % se + (p / (se * ze)) * se;
  }
  return UINT32_MAX;
}

/* Whether every unit shift of a generated fabric maps links to links of the same
 * bandwidth and segments to segments; if so, the orbits of the links under the
 * translations they generate (which act regularly on the NPUs). */
static bool translations(mcf_t *M, uint32_t *link_map, uint32_t *walk, const uint32_t *head,
                         const uint32_t *next) {
  const topo_t *t = M->t;
  const segs_t *g = M->g;
  if (t->ndims == 0) return false;
  uint32_t stride[TOPO_MAX_DIMS], sw_first[TOPO_MAX_DIMS], s = 1, sw = t->npus;
  for (uint32_t d = 0; d < t->ndims; d++) {
    stride[d] = s, sw_first[d] = sw;
    if (t->dims[d].kind == TOPO_DIM_SWITCH) sw += t->npus / t->dims[d].size;
    s *= t->dims[d].size;
  }
  for (uint32_t l = 0; l < M->L; l++)
    M->orbit[l] = l;
  for (uint32_t d = 0; d < t->ndims; d++) {
    if (t->dims[d].size < 2) continue;
    for (uint32_t l = 0; l < M->L; l++) {
      const topo_link_t *k = &t->links[l];
      uint32_t a = shift_node(t, stride, sw_first, d, k->src);
      uint32_t b = shift_node(t, stride, sw_first, d, k->dst);
      uint32_t m = a == UINT32_MAX || b == UINT32_MAX ? TOPO_NO_LINK : topo_find_link(t, a, b);
      if (m == TOPO_NO_LINK || t->links[m].bandwidth_GBps != k->bandwidth_GBps) return false;
      link_map[l] = m;
    }
    for (uint32_t e = 0; e < g->nseg; e++) {
      const seg_t *x = &g->seg[e];
      for (uint32_t i = 0; i < x->len; i++)
        walk[i] = link_map[g->pool[x->off + i]];
      uint32_t u = t->links[walk[0]].src, w = t->links[walk[x->len - 1]].dst, f = UINT32_MAX;
      for (uint32_t y = head[(size_t)u * M->n + w]; y != UINT32_MAX && f == UINT32_MAX; y = next[y])
        if (g->seg[y].len == x->len &&
            memcmp(&g->pool[g->seg[y].off], walk, x->len * sizeof *walk) == 0)
          f = y;
      if (f == UINT32_MAX) return false;
    }
    for (uint32_t l = 0; l < M->L; l++) { /* union by the smaller root */
      uint32_t a = l, b = link_map[l];
      while (M->orbit[a] != a)
        a = M->orbit[a];
      while (M->orbit[b] != b)
        b = M->orbit[b];
      if (a < b)
        M->orbit[b] = a;
      else if (b < a)
        M->orbit[a] = b;
    }
  }
  M->norbits = 0;
  for (uint32_t l = 0; l < M->L; l++) { /* roots numbered in link order */
    uint32_t a = l;
    while (M->orbit[a] != a)
      a = M->orbit[a];
    M->orbit[l] = a == l ? M->norbits++ : M->orbit[a];
  }
  return true;
}

/* The program of a fabric whose translations act regularly on the NPUs and keep links,
 * bandwidths and segments: averaging any optimal flow over the translations gives one in
 * which every source's flow is NPU 0's shifted, so NPU 0's flow over the segments alone,
 * with one capacity row per link orbit (a link carries the flow of NPU 0 on every link of
 * its orbit), has the same optimum. Rows: 1..n conservation at each NPU, then the orbits;
 * columns: lambda, then the segments. The orbits' duals, as link lengths, give the bound. */
static bool sym_body(void *ctx) {
  mcf_t *M = ctx;
  const topo_t *t = M->t;
  const segs_t *g = M->g;
  uint32_t n = M->n;
  glp_prob *P = glp_create_prob();
  glp_set_obj_dir(P, GLP_MAX);
  glp_add_rows(P, (int)(n + M->norbits));
  for (uint32_t v = 0; v < n; v++)
    glp_set_row_bnds(P, (int)v + 1, GLP_FX, 0.0, 0.0);
  for (uint32_t o = 0; o < M->norbits; o++)
    glp_set_row_bnds(P, (int)(n + o + 1), GLP_UP, 0.0, 0.0);
  for (uint32_t l = 0; l < M->L; l++) /* every link of an orbit has the same bandwidth */
    glp_set_row_bnds(P, (int)(n + M->orbit[l] + 1), GLP_UP, 0.0, t->links[l].bandwidth_GBps);
  for (uint32_t v = 0; v < n; v++) /* out - in = (n - 1) lambda at NPU 0, -lambda elsewhere */
    M->ind[v + 1] = (int)v + 1, M->val[v + 1] = v == 0 ? -(double)(n - 1) : 1.0;
  add_column(P, (int)n, M->ind, M->val);
  glp_set_obj_coef(P, 1, 1.0);
  for (uint32_t e = 0; e < g->nseg; e++) {
    const seg_t *x = &g->seg[e];
    uint32_t ntouch = 0;
    for (uint32_t k = 0; k < x->len; k++)
      load_add(M, M->orbit[g->pool[x->off + k]], 1.0, &ntouch);
    int len = 0;
    M->ind[++len] = (int)x->from + 1, M->val[len] = 1.0;
    M->ind[++len] = (int)x->to + 1, M->val[len] = -1.0;
    for (uint32_t k = 0; k < ntouch; k++) {
      uint32_t o = M->touched[k];
      M->ind[++len] = (int)(n + o + 1), M->val[len] = M->load[o];
      M->load[o] = 0.0;
    }
    add_column(P, len, M->ind, M->val);
  }
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.presolve = GLP_ON;
  bool ok = glp_simplex(P, &sp) == 0 && glp_get_status(P) == GLP_OPT;
  if (ok) {
    M->lambda_lo = glp_get_obj_val(P);
    for (uint32_t l = 0; l < M->L; l++)
      M->y[l] = fmax(0.0, glp_get_row_dual(P, (int)(n + M->orbit[l] + 1)));
  }
  glp_delete_prob(P);
  return ok;
}

/* ---- entry --------------------------------------------------------------- */

/* The rate of the routes' own flow (Direct's): a feasible rate, so the cuts' limit is
 * exact when it reaches it. */
static bool route_certificate(mcf_t *M) {
  uint32_t ntouch = 0;
  for (uint32_t s = 0; s < M->n; s++)
    route_loads(M, s, &ntouch);
  double rate = INFINITY;
  for (uint32_t k = 0; k < ntouch; k++) {
    uint32_t l = M->touched[k];
    rate = fmin(rate, M->t->links[l].bandwidth_GBps / M->load[l]);
    M->load[l] = 0.0;
  }
  M->lambda_lo = rate;
  return proved(M);
}

static bool mcf_alloc(mcf_t *M) {
  uint32_t n = M->n, L = M->L, rows = n + L + 2u;
  return (M->y = malloc(L * sizeof *M->y)) &&
         (M->cost = malloc((M->g->nseg + 1u) * sizeof *M->cost)) &&
         (M->dist = malloc(n * sizeof *M->dist)) && (M->hops = malloc(n * sizeof *M->hops)) &&
         (M->pred = malloc(n * sizeof *M->pred)) && (M->order = malloc(n * sizeof *M->order)) &&
         (M->cnt = malloc(n * sizeof *M->cnt)) && (M->done = malloc(n)) &&
         (M->load = calloc(L, sizeof *M->load)) && (M->touched = malloc(L * sizeof *M->touched)) &&
         (M->orbit = malloc(L * sizeof *M->orbit)) && (M->ind = malloc(rows * sizeof *M->ind)) &&
         (M->val = malloc(rows * sizeof *M->val));
}

static void mcf_release(mcf_t *M) {
  free(M->y), free(M->cost), free(M->dist), free(M->hops), free(M->pred), free(M->order);
  free(M->cnt), free(M->done), free(M->load), free(M->touched), free(M->orbit);
  free(M->ind), free(M->val);
}

bool topo_i_mcf_rate(const topo_t *t, double cap_rate, double *lambda, bool *exact) {
  *exact = false;
  if (t->npus < 2 || t->npus > MCF_MAX_NPUS) return false;
  segs_t g;
  tn_err_t e = {0};
  uint32_t *head = NULL, *next = NULL;
  if (segs_build(t, &g, &head, &next, &e) != TN_OK) return false;
  mcf_t M = {
      .t = t, .g = &g, .n = t->npus, .L = t->nlinks, .cap_rate = cap_rate, .lambda_hi = INFINITY};
  uint32_t *link_map = NULL, *walk = NULL;
  bool ok = topo_routes_create(t, &M.routes, &e) == TN_OK && mcf_alloc(&M) &&
            (link_map = malloc(t->nlinks * sizeof *link_map)) &&
            (walk = malloc((topo_nodes(t) + 1u) * sizeof *walk));
  /* 1. The routes themselves (Direct's flow) may reach the cuts' limit: then it is exact.
   * 2. A fabric symmetric under translations: one source's program, then its duals'
   *    bound. 3. Anything else (or a failed 2): column generation. */
  bool done = ok && route_certificate(&M);
  if (ok && !done && translations(&M, link_map, walk, head, next) && lp_guarded(sym_body, &M)) {
    dual_bound(&M);
    done = true;
  }
  if (ok && !done) ok = lp_guarded(mcf_body, &M);
  if (ok) {
    /* Rounding in the lengths' sums may put the bound a hair above the true one: shade. */
    *lambda = fmin(cap_rate, M.lambda_hi * (1.0 + 1e-9));
    *exact = proved(&M);
  }
  free(link_map);
  free(walk);
  free(head);
  free(next);
  mcf_release(&M);
  topo_routes_free(M.routes);
  segs_free(&g);
  return ok;
}

#else

bool topo_i_mcf_rate(const topo_t *t, double cap_rate, double *lambda, bool *exact) {
  (void)t, (void)cap_rate, (void)lambda;
  *exact = false;
  return false;
}

#endif
