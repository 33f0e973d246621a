/* topo/bound.c — lower bounds on the time of All-Gather, Reduce-Scatter, All-Reduce and
 * All-to-All on a fabric (docs/bounds.md has the proofs): ForestColl's cut bound, found
 * exactly by Dinkelbach iteration over igraph max-flows; a family of NPU partitions for
 * All-Reduce, whose parties also give All-to-All's cuts; latency terms from
 * shortest-latency paths. Computed once per fabric (topo_bounds_compute)
 * and evaluated per size (topo_bound_ps); every reported result is scored against it. */
#include "topo/topo.h"
#include "topo/topo_internal.h"
#include <igraph/igraph.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ps per byte through 1 GB/s (2^30 B/s). */
#define PS_PER_BYTE_AT_1GBPS (1e12 / TN_GIB)
/* A max-flow short of n*x by less than this fraction is rounding, not a violated cut. */
#define FLOW_REL_EPS 1e-9
/* Dinkelbach rounds per sink: a handful suffice; this only guards the loop. */
#define MAX_ROUNDS 256u
/* Sources per Dijkstra call: bounds the distance matrix to BATCH x nodes. */
#define BATCH 64u
/* All-Reduce: at most this many bandwidth thresholds are tried (spread over the sorted
 * distinct bandwidths), so a fabric with many distinct figures stays O(L) per try. */
#define MAX_THRESHOLDS 32u
/* All-to-All: the link splits tried at most, and the largest distance matrix (entries)
 * they may build. */
#define MAX_SPLITS 4096u
#define MAX_SPLIT_DIST (1u << 24)
/* The eccentricity terms kept per side: the NPUs on the frontier of least egress and
 * farthest reach (ecc_frontier); a fabric with more keeps the two ends and the middle. */
#define ECC_TERMS 3u

/* Figures of a node set X: NPUs and nodes inside, the capacity of the links leaving and
 * entering it, and the smallest latency among each (0 when there is none). */
typedef struct setcut {
  uint32_t npus, nodes;
  double out_GBps, in_GBps;
  double out_lat_ps, in_lat_ps;
} setcut_t;

/* What the All-Gather bound needs from one fabric; the Reduce-Scatter's is the same on the
 * transposed fabric. */
typedef struct side {
  double ratio;       /* max |X & NPUs| / B_out(X) over the sets tried, per GB/s */
  setcut_t cut;       /* that set's figures */
  uint8_t *set;       /* that set, one flag per node (owned) */
  /* The eccentricity terms (S/n)/B_out(u) + R(u), R(u) the longest shortest-latency path
   * from u to an NPU: the NPUs u on their frontier (ecc_frontier), by egress ascending. */
  uint32_t ecc_npu[ECC_TERMS];
  double ecc_ps[ECC_TERMS];
  uint32_t necc;
  double diameter_ps; /* longest shortest-latency path between two NPUs (0 if not computed) */
  double *ready;      /* per node: the earliest a byte can be there (ready_times; owned) */
  bool connected;
} side_t;

static tn_status_t ig_status(igraph_error_t e, const char *what, tn_err_t *err) {
  return topo_i_igraph_status((int)e, what, err);
}

/* The earliest a byte can arrive across link l (ps): its latency, plus ready[src], the
 * shortest latency from any NPU to the link's source (0 at an NPU). A switch holds no data
 * of its own: nothing leaves it before something has reached it. */
static double arrive_ps(const double *ready, const topo_link_t *l) {
  return (double)l->latency_ps + ready[l->src];
}

static setcut_t set_cut(const topo_t *t, const double *ready, const uint8_t *in) {
  setcut_t c = {0};
  double lo = INFINITY, li = INFINITY;
  for (uint32_t v = 0; v < topo_nodes(t); v++) {
    c.nodes += in[v];
    if (v < t->npus) c.npus += in[v];
  }
  for (uint32_t i = 0; i < t->nlinks; i++) {
    const topo_link_t *l = &t->links[i];
    if (in[l->src] == in[l->dst]) continue;
    if (in[l->src]) {
      c.out_GBps += l->bandwidth_GBps;
      lo = fmin(lo, arrive_ps(ready, l));
    } else {
      c.in_GBps += l->bandwidth_GBps;
      li = fmin(li, arrive_ps(ready, l));
    }
  }
  c.out_lat_ps = isfinite(lo) ? lo : 0.0;
  c.in_lat_ps = isfinite(li) ? li : 0.0;
  return c;
}

/* set_cut of one node: its own links, O(degree). */
static setcut_t node_cut(const topo_t *t, const double *ready, uint32_t v) {
  setcut_t c = {v < t->npus ? 1u : 0u, 1, 0.0, 0.0, 0.0, 0.0};
  double lo = INFINITY, li = INFINITY;
  for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
    const topo_link_t *l = &t->links[t->out_link[i]];
    if (l->dst == v) continue;
    c.out_GBps += l->bandwidth_GBps;
    lo = fmin(lo, arrive_ps(ready, l));
  }
  for (uint32_t i = t->in_off[v]; i < t->in_off[v + 1]; i++) {
    const topo_link_t *l = &t->links[t->in_link[i]];
    c.in_GBps += l->bandwidth_GBps;
    li = fmin(li, arrive_ps(ready, l));
  }
  c.out_lat_ps = isfinite(lo) ? lo : 0.0;
  c.in_lat_ps = isfinite(li) ? li : 0.0;
  return c;
}

/* set_cut of every party g < k of a partition (grp[v]: v's party, UINT32_MAX for transit
 * nodes outside every party) in one pass over the links: cuts[g]. Sums run in link order,
 * as set_cut's do, so each is bit for bit set_cut's. */
static void group_cuts(const topo_t *t, const double *ready, const uint32_t *grp, uint32_t k,
                       setcut_t *cuts) {
  for (uint32_t g = 0; g < k; g++)
    cuts[g] = (setcut_t){0, 0, 0.0, 0.0, INFINITY, INFINITY};
  for (uint32_t v = 0; v < topo_nodes(t); v++) {
    if (grp[v] >= k) continue;
    cuts[grp[v]].nodes++;
    if (v < t->npus) cuts[grp[v]].npus++;
  }
  for (uint32_t i = 0; i < t->nlinks; i++) {
    const topo_link_t *l = &t->links[i];
    uint32_t a = grp[l->src] < k ? grp[l->src] : UINT32_MAX;
    uint32_t b = grp[l->dst] < k ? grp[l->dst] : UINT32_MAX;
    if (a == b) continue;
    if (a != UINT32_MAX) {
      cuts[a].out_GBps += l->bandwidth_GBps;
      cuts[a].out_lat_ps = fmin(cuts[a].out_lat_ps, arrive_ps(ready, l));
    }
    if (b != UINT32_MAX) {
      cuts[b].in_GBps += l->bandwidth_GBps;
      cuts[b].in_lat_ps = fmin(cuts[b].in_lat_ps, arrive_ps(ready, l));
    }
  }
  for (uint32_t g = 0; g < k; g++) {
    if (!isfinite(cuts[g].out_lat_ps)) cuts[g].out_lat_ps = 0.0;
    if (!isfinite(cuts[g].in_lat_ps)) cuts[g].in_lat_ps = 0.0;
  }
}

/* The earliest a byte can arrive across a node's incoming links (0 when it has none). */
static double min_in_lat(const topo_t *t, const double *ready, uint32_t v) {
  double m = INFINITY;
  for (uint32_t i = t->in_off[v]; i < t->in_off[v + 1]; i++)
    m = fmin(m, arrive_ps(ready, &t->links[t->in_link[i]]));
  return isfinite(m) ? m : 0.0;
}

static double min_out_lat(const topo_t *t, uint32_t v) {
  double m = INFINITY;
  for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++)
    m = fmin(m, (double)t->links[t->out_link[i]].latency_ps);
  return isfinite(m) ? m : 0.0;
}

/* The best single-NPU sets, the start of the cut search: X = {v} (1 / B_out(v)) and
 * X = all nodes but v ((n-1) / B_in(v)). */
static void seed_side(const topo_t *f, side_t *s) {
  uint32_t n = f->npus, nodes = topo_nodes(f), best = 0;
  bool complement = false;
  s->ratio = 0.0;
  for (uint32_t v = 0; v < n; v++) {
    double one = 1.0 / topo_egress_GBps(f, v), rest = (n - 1.0) / topo_ingress_GBps(f, v);
    if (one > s->ratio) s->ratio = one, best = v, complement = false;
    if (rest > s->ratio) s->ratio = rest, best = v, complement = true;
  }
  memset(s->set, complement ? 1 : 0, nodes);
  s->set[best] = complement ? 0 : 1;
  s->cut = set_cut(f, s->ready, s->set);
}

/* The fabric as igraph's directed graph, link i as edge i between the same node ids, with
 * *w one weight per edge: the link's bandwidth, or with latency its latency. With source,
 * one more node (id topo_nodes(f)) has an edge to every NPU (edges L..L+n-1, weight 0 for
 * the caller to set). On failure nothing is left to destroy. Called with the igraph lock
 * held. */
static igraph_error_t fabric_graph(const topo_t *f, bool source, bool latency, igraph_t *g,
                                   igraph_vector_t *w) {
  uint32_t n = source ? f->npus : 0, nodes = topo_nodes(f), L = f->nlinks;
  igraph_vector_int_t edges;
  igraph_error_t e = igraph_vector_int_init(&edges, 2 * (igraph_integer_t)(L + n));
  if (e != IGRAPH_SUCCESS) return e;
  if ((e = igraph_vector_init(w, (igraph_integer_t)(L + n))) != IGRAPH_SUCCESS) {
    igraph_vector_int_destroy(&edges);
    return e;
  }
  for (uint32_t i = 0; i < L + n; i++) {
    VECTOR(edges)[2 * i] = i < L ? f->links[i].src : nodes;
    VECTOR(edges)[2 * i + 1] = i < L ? f->links[i].dst : i - L;
    if (i < L)
      VECTOR(*w)[i] = latency ? (double)f->links[i].latency_ps : f->links[i].bandwidth_GBps;
  }
  e = igraph_create(g, &edges, (igraph_integer_t)nodes + (source ? 1 : 0), IGRAPH_DIRECTED);
  igraph_vector_int_destroy(&edges);
  if (e != IGRAPH_SUCCESS) igraph_vector_destroy(w);
  return e;
}

/* Whether u is the lowest-id NPU of its class under the symmetries every generated fabric
 * whose links all carry their dimension's figures has (uniform; without them every NPU is
 * its own class): translations along a ring, fully connected or switch dimension, and the
 * reflection of a line (c to L-1-c). Such a symmetry maps the fabric onto itself and
 * every NPU onto an NPU, so it keeps the cut search's max-flow to each sink: a class's
 * lowest id is settled first, and the others would then be settled at once. */
static bool sink_canonical(const topo_t *f, bool uniform, uint32_t u) {
  if (!uniform) return true;
  for (uint32_t d = 0; d < f->ndims; d++) {
    uint32_t L = f->dims[d].size, c = u / topo_dim_stride(f, d) % L;
    if (f->dims[d].kind == TOPO_DIM_LINE ? c > (L - 1) / 2 : c != 0) return false;
  }
  return true;
}

/* Dinkelbach over max-flows (ForestColl): with a source joined to every NPU by links of
 * capacity x = 1/ratio, the ratio is the best iff max-flow(source -> u) >= n x for every
 * NPU u; a smaller flow's min cut is a set X missing u with |X & NPUs| / B_out(X) above the
 * ratio, which becomes the new ratio. A feasible x stays feasible for every smaller x, so
 * each sink is settled once. Called with the igraph lock held; tmp has one byte per node. */
static tn_status_t cut_search(const topo_t *f, side_t *s, uint8_t *tmp, tn_err_t *err) {
  uint32_t n = f->npus, nodes = topo_nodes(f), L = f->nlinks;
  igraph_vector_int_t part;
  igraph_vector_t cap;
  igraph_t g;
  igraph_error_t e = igraph_vector_int_init(&part, 0);
  if (e != IGRAPH_SUCCESS) return ig_status(e, "vector", err);
  if ((e = fabric_graph(f, true, false, &g, &cap)) != IGRAPH_SUCCESS) {
    igraph_vector_int_destroy(&part);
    return ig_status(e, "max-flow", err);
  }
  bool uniform = topo_dims_uniform(f);
  for (uint32_t u = 0; u < n && e == IGRAPH_SUCCESS; u++) {
    if (!sink_canonical(f, uniform, u)) continue;
    for (uint32_t round = 0; round < MAX_ROUNDS; round++) {
      double x = 1.0 / s->ratio;
      igraph_real_t flow = 0.0;
      for (uint32_t v = 0; v < n; v++)
        VECTOR(cap)[L + v] = x;
      e = igraph_maxflow(&g, &flow, NULL, NULL, &part, NULL, (igraph_integer_t)nodes,
                         (igraph_integer_t)u, &cap, NULL);
      if (e != IGRAPH_SUCCESS || flow >= n * x * (1.0 - FLOW_REL_EPS)) break;
      memset(tmp, 0, nodes);
      for (igraph_integer_t i = 0; i < igraph_vector_int_size(&part); i++)
        if (VECTOR(part)[i] < (igraph_integer_t)nodes) tmp[VECTOR(part)[i]] = 1;
      setcut_t c = set_cut(f, s->ready, tmp);
      /* The set's own figures decide: the reported ratio is always that of a real set. */
      if (c.npus == 0 || !(c.out_GBps > 0.0)) break;
      double r = c.npus / c.out_GBps;
      if (!(r > s->ratio * (1.0 + 1e-12))) break;
      s->ratio = r;
      s->cut = c;
      memcpy(s->set, tmp, nodes);
    }
  }
  igraph_destroy(&g);
  igraph_vector_destroy(&cap);
  igraph_vector_int_destroy(&part);
  return ig_status(e, "max-flow", err);
}

/* Per node w, the largest shortest-latency distance from w to an NPU, folded over batches
 * of Dijkstra rows (row i: distances to NPU v0 + i). */
typedef struct far {
  double d1;
} far_t;

static bool fold_batch(const topo_t *f, const igraph_matrix_t *m, uint32_t v0, uint32_t v1,
                       far_t *far) {
  bool connected = true;
  for (uint32_t v = v0; v < v1; v++)
    for (uint32_t w = 0; w < topo_nodes(f); w++) {
      double d = MATRIX(*m, v - v0, w);
      if (!isfinite(d)) {
        if (w < f->npus) connected = false;
        continue;
      }
      if (d > far[w].d1) far[w].d1 = d;
    }
  return connected;
}

/* Shortest-latency paths (igraph Dijkstra toward each NPU, BATCH at a time): whether every
 * NPU reaches every NPU and, per node, its distance to the farthest NPU. Called with the
 * lock held.
 * O(n (L + V log V)). */
static tn_status_t latencies(const topo_t *f, side_t *s, far_t *far, tn_err_t *err) {
  uint32_t n = f->npus, nodes = topo_nodes(f);
  igraph_vector_t w;
  igraph_matrix_t m;
  igraph_t g;
  for (uint32_t v = 0; v < nodes; v++)
    far[v] = (far_t){0.0};
  s->connected = true;
  igraph_error_t e = fabric_graph(f, false, true, &g, &w);
  if (e != IGRAPH_SUCCESS) return ig_status(e, "shortest paths", err);
  if ((e = igraph_matrix_init(&m, 0, 0)) == IGRAPH_SUCCESS) {
    for (uint32_t v0 = 0; v0 < n && e == IGRAPH_SUCCESS; v0 += BATCH) {
      uint32_t v1 = v0 + BATCH < n ? v0 + BATCH : n;
      e = igraph_distances_dijkstra(&g, &m, igraph_vss_range(v0, v1), igraph_vss_all(), &w,
                                    IGRAPH_IN);
      if (e == IGRAPH_SUCCESS && !fold_batch(f, &m, v0, v1, far)) s->connected = false;
    }
    igraph_matrix_destroy(&m);
  }
  igraph_destroy(&g);
  igraph_vector_destroy(&w);
  return ig_status(e, "shortest paths", err);
}

/* The eccentricity terms (docs/bounds.md §1 and §3, "Latency"): every NPU u gives one,
 * (S/n)/B_out(u) + reach[u] (S/B_out(u) for All-Reduce), reach[u] the longest shortest
 * latency from u to an NPU (above the caps, its smallest link latency out). Their maximum
 * over u is the bound; they differ in slope and offset, so which u gives it depends on the
 * size. Kept: the two ends of their upper envelope, the least egress (the largest reach
 * among those) and the largest reach (the least egress among those), and the NPU highest
 * where those two lines cross, when it lies above both there (on a mesh the corner is both
 * ends; on a torus with a dead link the NPUs beside it, 150 GB/s out, and the farthest-
 * reaching NPU, 200 GB/s, are the ends). Any subset of the terms is a valid bound. */
static void ecc_frontier(const topo_t *f, const double *reach, side_t *s) {
  uint32_t lo = 0, hi = 0;
  for (uint32_t u = 1; u < f->npus; u++) {
    double e = topo_egress_GBps(f, u), el = topo_egress_GBps(f, lo);
    if (e < el || (e == el && reach[u] > reach[lo])) lo = u;
    double eh = topo_egress_GBps(f, hi);
    if (reach[u] > reach[hi] || (reach[u] == reach[hi] && e < eh)) hi = u;
  }
  s->necc = 0;
  s->ecc_npu[s->necc] = lo, s->ecc_ps[s->necc++] = reach[lo];
  if (lo == hi || reach[lo] >= reach[hi]) return; /* lo's line is the higher at every size */
  /* lo slopes up more, hi starts higher: their lines cross at x (S per GB/s, in ps) */
  double klo = 1.0 / topo_egress_GBps(f, lo), khi = 1.0 / topo_egress_GBps(f, hi);
  double x = (reach[hi] - reach[lo]) / (klo - khi),
         top = fmax(klo * x + reach[lo], khi * x + reach[hi]);
  uint32_t mid = UINT32_MAX;
  for (uint32_t u = 0; u < f->npus; u++) {
    double y = x / topo_egress_GBps(f, u) + reach[u];
    if (y > top) top = y, mid = u;
  }
  if (mid != UINT32_MAX) s->ecc_npu[s->necc] = mid, s->ecc_ps[s->necc++] = reach[mid];
  s->ecc_npu[s->necc] = hi, s->ecc_ps[s->necc++] = reach[hi];
}

/* The eccentricity terms of side s, per / B_out(u) + R(u) for each kept u, appended to b. */
static void add_ecc_terms(const topo_t *f, const side_t *s, double per, topo_coll_bound_t *b) {
  for (uint32_t i = 0; i < s->necc; i++)
    b->terms[b->nterms++] =
        (topo_bound_term_t){per / topo_egress_GBps(f, s->ecc_npu[i]), s->ecc_ps[i]};
}

/* Above the caps, a latency term in O(V + L): data of NPU 0 must reach every NPU, so the
 * collective takes at least (hops from NPU 0 to the farthest NPU) x (the smallest link
 * latency). A lower bound on the exact term, never above it. */
static tn_status_t hop_latency(const topo_t *f, side_t *s, tn_err_t *err) {
  uint32_t nodes = topo_nodes(f), *dist = NULL, *queue = NULL;
  tn_status_t st = tn_malloc(nodes, sizeof *dist, &dist, err);
  if (st == TN_OK) st = tn_malloc(nodes, sizeof *queue, &queue, err);
  if (st == TN_OK && nodes > 0) {
    double lo = INFINITY;
    for (uint32_t l = 0; l < f->nlinks; l++)
      lo = fmin(lo, (double)f->links[l].latency_ps);
    for (uint32_t v = 0; v < nodes; v++)
      dist[v] = UINT32_MAX;
    uint32_t head = 0, tail = 0, far = 0;
    dist[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
      uint32_t v = queue[head++];
      if (v < f->npus && dist[v] > far) far = dist[v];
      for (uint32_t i = f->out_off[v]; i < f->out_off[v + 1]; i++) {
        uint32_t u = f->links[f->out_link[i]].dst;
        if (dist[u] == UINT32_MAX) dist[u] = dist[v] + 1, queue[tail++] = u;
      }
    }
    s->diameter_ps = f->nlinks ? far * lo : 0.0;
  }
  free(dist);
  free(queue);
  return st;
}

/* ready[w]: the shortest latency from any NPU to node w (0 at the NPUs; INFINITY where no
 * NPU reaches), one igraph Dijkstra from a source joined to every NPU by links of
 * latency 0. O(L + V log V). */
static tn_status_t ready_times(const topo_t *f, double *ready, tn_err_t *err) {
  uint32_t nodes = topo_nodes(f);
  igraph_vector_t w;
  igraph_matrix_t m;
  igraph_t g;
  topo_igraph_lock();
  igraph_error_t e = fabric_graph(f, true, true, &g, &w); /* the source's links weigh 0 */
  if (e == IGRAPH_SUCCESS) {
    if ((e = igraph_matrix_init(&m, 0, 0)) == IGRAPH_SUCCESS) {
      e = igraph_distances_dijkstra(&g, &m, igraph_vss_1((igraph_integer_t)nodes),
                                    igraph_vss_range(0, (igraph_integer_t)nodes), &w, IGRAPH_OUT);
      for (uint32_t v = 0; e == IGRAPH_SUCCESS && v < nodes; v++)
        ready[v] = v < f->npus ? 0.0 : MATRIX(m, 0, v);
      igraph_matrix_destroy(&m);
    }
    igraph_destroy(&g);
    igraph_vector_destroy(&w);
  }
  topo_igraph_unlock();
  return ig_status(e, "shortest paths", err);
}

/* One fabric's side: the seed, then (when tight) shortest latencies and the cut search.
 * Above the caps, connectivity comes from topo_check_connected. */
static tn_status_t side_compute(const topo_t *f, bool tight, side_t *s, tn_err_t *err) {
  uint32_t nodes = topo_nodes(f);
  uint8_t *tmp = NULL;
  far_t *far = NULL;
  double *reach = NULL; /* per NPU: R(u), or above the caps its lower bound */
  tn_status_t st = tn_calloc(nodes, 1, &s->set, err);
  if (st == TN_OK) st = tn_calloc(nodes, sizeof *s->ready, &s->ready, err);
  if (st == TN_OK) st = ready_times(f, s->ready, err);
  if (st == TN_OK) st = tn_calloc(nodes, 1, &tmp, err);
  if (st == TN_OK) st = tn_malloc(f->npus, sizeof *reach, &reach, err);
  if (st == TN_OK && tight) st = tn_calloc(nodes, sizeof *far, &far, err);
  if (st != TN_OK) goto out;
  if (!tight) {
    tn_err_t e2 = {0};
    s->connected = topo_check_connected(f, &e2) == TN_OK;
    if (s->connected) st = hop_latency(f, s, err);
    if (!s->connected || st != TN_OK) goto out;
    seed_side(f, s);
    for (uint32_t u = 0; u < f->npus; u++)
      reach[u] = min_out_lat(f, u); /* the first hop out of u: a lower bound on R(u) */
    ecc_frontier(f, reach, s);
    goto out;
  }
  topo_igraph_lock();
  st = latencies(f, s, far, err);
  if (st == TN_OK && s->connected) {
    seed_side(f, s);
    s->diameter_ps = 0.0;
    for (uint32_t u = 0; u < f->npus; u++)
      reach[u] = far[u].d1, s->diameter_ps = fmax(s->diameter_ps, far[u].d1);
    ecc_frontier(f, reach, s);
    st = cut_search(f, s, tmp, err);
  }
  topo_igraph_unlock();
out:
  free(tmp);
  free(far);
  free(reach);
  return st;
}

/* What NPU v can take in early (docs/bounds.md §1, "own blocks first"): *own, the NPUs
 * with a link into v, whose own blocks may cross it from the start; *tau, the least over
 * v's incoming links of the time the link can first carry data its source did not start
 * with: its latency plus, from an NPU w, the earliest anything reaches w, and from a
 * switch, the earliest anything reaches the switch (INFINITY if never). */
static void own_first(const topo_t *f, const double *ready, uint32_t v, uint32_t *own,
                      double *tau) {
  *own = 0;
  *tau = INFINITY;
  for (uint32_t i = f->in_off[v]; i < f->in_off[v + 1]; i++) {
    const topo_link_t *l = &f->links[f->in_link[i]];
    uint32_t w = l->src;
    double later = ready[w];
    if (w < f->npus) {
      later = min_in_lat(f, ready, w);
      if (f->in_off[w] == f->in_off[w + 1]) later = INFINITY; /* nothing ever reaches w */
      bool seen = false;
      for (uint32_t j = f->in_off[v]; j < i; j++)
        seen = seen || f->links[f->in_link[j]].src == w;
      *own += !seen;
    }
    *tau = fmin(*tau, (double)l->latency_ps + later);
  }
}

/* The All-Gather (or, on the transposed fabric, Reduce-Scatter) terms from a side. */
static void fill_gather(const topo_t *f, const side_t *s, bool tight, topo_coll_bound_t *b) {
  double n = f->npus, conv = PS_PER_BYTE_AT_1GBPS;
  uint32_t weak = 0;
  for (uint32_t v = 1; v < f->npus; v++) {
    double a = topo_ingress_GBps(f, v), bw = topo_ingress_GBps(f, weak);
    if (a < bw || (a == bw && min_in_lat(f, s->ready, v) > min_in_lat(f, s->ready, weak))) weak = v;
  }
  b->terms[0] = (topo_bound_term_t){s->ratio / n * conv, s->cut.out_lat_ps};
  b->terms[1] = (topo_bound_term_t){(n - 1.0) / n * conv / topo_ingress_GBps(f, weak),
                                    min_in_lat(f, s->ready, weak)};
  b->nterms = 2;
  add_ecc_terms(f, s, conv / n, b);
  uint32_t own;
  double tau;
  own_first(f, s->ready, weak, &own, &tau);
  if (own + 1u < f->npus && isfinite(tau))
    b->terms[b->nterms++] =
        (topo_bound_term_t){(n - 1.0 - own) / n * conv / topo_ingress_GBps(f, weak), tau};
  b->kind = tight ? TOPO_BOUND_CUT : TOPO_BOUND_NPU;
  b->cut_npus = s->cut.npus;
  b->cut_nodes = s->cut.nodes;
  b->cut_GBps = s->cut.out_GBps;
  b->crossings = s->cut.npus / n;
}

static uint32_t uf_find(uint32_t *p, uint32_t x) {
  while (p[x] != x)
    x = p[x] = p[p[x]];
  return x;
}

/* Evaluates the All-Reduce partition whose parties are the classes of grp (a party id per
 * node, UINT32_MAX for a transit switch): 2(k-1) element crossings over the capacity
 * leaving the parties (and, separately, entering them); keeps the best in b. */
static void gossip_eval(const topo_t *t, const double *ready, const uint32_t *grp, uint32_t k,
                        const char *family, topo_coll_bound_t *b, topo_bound_term_t *term) {
  if (k < 2) return;
  double out = 0.0, in = 0.0, lo = INFINITY, li = INFINITY;
  for (uint32_t i = 0; i < t->nlinks; i++) {
    const topo_link_t *l = &t->links[i];
    if (grp[l->src] == grp[l->dst]) continue;
    if (grp[l->src] != UINT32_MAX) out += l->bandwidth_GBps, lo = fmin(lo, arrive_ps(ready, l));
    if (grp[l->dst] != UINT32_MAX) in += l->bandwidth_GBps, li = fmin(li, arrive_ps(ready, l));
  }
  bool use_in = in < out;
  double capacity = use_in ? in : out, lat = in == out ? fmax(li, lo) : use_in ? li : lo;
  double coef = 2.0 * (k - 1.0) / capacity * PS_PER_BYTE_AT_1GBPS;
  if (!(capacity > 0.0) || !(coef > term->ps_per_byte)) return;
  *term = (topo_bound_term_t){coef, isfinite(lat) ? lat : 0.0};
  b->kind = TOPO_BOUND_GOSSIP;
  b->cut_npus = k;
  b->cut_nodes = 0;
  b->cut_GBps = capacity;
  b->crossings = 2.0 * (k - 1.0);
  snprintf(b->family, sizeof b->family, "%s", family);
}

/* What the partition family is shown to: a partition into k parties (grp: a party id per
 * node, UINT32_MAX for a transit switch) named by family. */
typedef struct visitor {
  void (*fn)(const topo_t *t, const uint32_t *grp, uint32_t k, const char *family, void *ctx);
  void *ctx;
} visitor_t;

/* Parties = the components (links kept where keep[i]) that hold an NPU; components of
 * switches only are transit. grp and p have one entry per node. */
static void gossip_components(const topo_t *t, const uint8_t *keep, uint32_t *grp, uint32_t *p,
                              const char *family, const visitor_t *vis) {
  uint32_t nodes = topo_nodes(t), k = 0;
  for (uint32_t v = 0; v < nodes; v++)
    p[v] = v, grp[v] = UINT32_MAX;
  for (uint32_t i = 0; i < t->nlinks; i++)
    if (keep[i]) {
      uint32_t a = uf_find(p, t->links[i].src), c = uf_find(p, t->links[i].dst);
      if (a != c) p[a > c ? a : c] = a < c ? a : c;
    }
  /* Roots are the smallest node of each component, so a component with an NPU has an NPU
   * root; number the parties by it. */
  for (uint32_t v = 0; v < t->npus; v++)
    if (uf_find(p, v) == v) grp[v] = k++;
  for (uint32_t v = 0; v < nodes; v++) {
    uint32_t r = uf_find(p, v);
    grp[v] = r < t->npus ? grp[r] : UINT32_MAX;
  }
  vis->fn(t, grp, k, family, vis->ctx);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Switch levels: hops from the nearest NPU along links in either direction (NPUs 0). */
static void switch_levels(const topo_t *t, uint32_t *level, uint32_t *queue) {
  uint32_t nodes = topo_nodes(t), head = 0, tail = 0;
  for (uint32_t v = 0; v < nodes; v++)
    level[v] = v < t->npus ? 0 : UINT32_MAX;
  for (uint32_t v = 0; v < t->npus; v++)
    queue[tail++] = v;
  while (head < tail) {
    uint32_t v = queue[head++];
    for (int dir = 0; dir < 2; dir++) {
      const uint32_t *off = dir ? t->in_off : t->out_off, *ids = dir ? t->in_link : t->out_link;
      for (uint32_t i = off[v]; i < off[v + 1]; i++) {
        const topo_link_t *l = &t->links[ids[i]];
        uint32_t w = dir ? l->src : l->dst;
        if (level[w] == UINT32_MAX) level[w] = level[v] + 1, queue[tail++] = w;
      }
    }
  }
}

/* The partition family of docs/bounds.md: singletons; the components left by the links
 * above each bandwidth threshold; the components below each switch level. */
static void gossip_family(const topo_t *t, uint32_t *grp, uint32_t *p, uint32_t *level,
                          uint8_t *keep, double *bws, const visitor_t *vis) {
  char name[48];
  memset(keep, 0, t->nlinks);
  gossip_components(t, keep, grp, p, "singletons", vis);
  for (uint32_t i = 0; i < t->nlinks; i++)
    bws[i] = t->links[i].bandwidth_GBps;
  qsort(bws, t->nlinks, sizeof *bws, cmp_double);
  uint32_t nd = 0;
  for (uint32_t i = 0; i < t->nlinks; i++)
    if (nd == 0 || bws[i] != bws[nd - 1]) bws[nd++] = bws[i];
  uint32_t tries = nd - 1 < MAX_THRESHOLDS ? nd - 1 : MAX_THRESHOLDS;
  for (uint32_t j = 0; j < tries; j++) {
    double th = bws[(uint64_t)j * (nd - 1) / tries];
    for (uint32_t i = 0; i < t->nlinks; i++)
      keep[i] = t->links[i].bandwidth_GBps > th;
    snprintf(name, sizeof name, "groups joined by links > %g GB/s", th);
    gossip_components(t, keep, grp, p, name, vis);
  }
  switch_levels(t, level, p);
  uint32_t top = 0;
  for (uint32_t v = t->npus; v < topo_nodes(t); v++)
    if (level[v] != UINT32_MAX && level[v] > top) top = level[v];
  for (uint32_t d = 1; d <= top; d++) {
    for (uint32_t i = 0; i < t->nlinks; i++)
      keep[i] = level[t->links[i].src] < d && level[t->links[i].dst] < d;
    snprintf(name, sizeof name, "groups below switch level %u", d);
    gossip_components(t, keep, grp, p, name, vis);
  }
}

typedef struct gossip_ctx {
  topo_coll_bound_t *b;
  topo_bound_term_t *term;
  const double *ready;
} gossip_ctx_t;

static void gossip_visit(const topo_t *t, const uint32_t *grp, uint32_t k, const char *family,
                         void *ctx) {
  gossip_ctx_t *g = ctx;
  gossip_eval(t, g->ready, grp, k, family, g->b, g->term);
}

/* The partition {X} plus every NPU outside X alone (switches outside are transit). */
static void gossip_set(const topo_t *t, const double *ready, const uint8_t *set, uint32_t *grp,
                       topo_coll_bound_t *b, topo_bound_term_t *term) {
  uint32_t k = 1;
  for (uint32_t v = 0; v < topo_nodes(t); v++)
    grp[v] = set[v] ? 0 : v < t->npus ? k++ : UINT32_MAX;
  gossip_eval(t, ready, grp, k, "an All-Gather cut and singletons", b, term);
}

/* A 2-sided cut: each element crosses it at least once each way. */
static void bisect_eval(const setcut_t *c, topo_coll_bound_t *b, topo_bound_term_t *term) {
  bool use_in = c->in_GBps < c->out_GBps;
  double capacity = use_in ? c->in_GBps : c->out_GBps;
  double coef = PS_PER_BYTE_AT_1GBPS / capacity;
  if (!(capacity > 0.0) || !(coef > term->ps_per_byte)) return;
  double lat = c->in_GBps == c->out_GBps ? fmax(c->in_lat_ps, c->out_lat_ps)
               : use_in                  ? c->in_lat_ps
                                         : c->out_lat_ps;
  *term = (topo_bound_term_t){coef, lat};
  if (coef <= b->terms[0].ps_per_byte) return;
  b->kind = TOPO_BOUND_BISECT;
  b->cut_npus = c->npus;
  b->cut_nodes = c->nodes;
  b->cut_GBps = capacity;
  b->crossings = 1.0;
  b->family[0] = '\0';
}

/* The least capacity leaving a node set that holds some NPUs and misses some: every such
 * set holds NPU 0 and misses some NPU u, or holds some u and misses 0, so it is the least
 * of the max-flows 0 -> u and u -> 0 over the NPUs u (2(n - 1) max-flows, igraph's
 * push-relabel, on the fabric itself). Fills set (one flag per node) with the source side
 * of the least; *found is false on a fabric of fewer than 2 NPUs. */
static tn_status_t twosided_search(const topo_t *t, uint8_t *set, bool *found, tn_err_t *err) {
  uint32_t n = t->npus, nodes = topo_nodes(t);
  *found = false;
  igraph_vector_int_t part;
  igraph_vector_t cap;
  igraph_t g;
  topo_igraph_lock();
  igraph_error_t e = igraph_vector_int_init(&part, 0);
  bool have_part = e == IGRAPH_SUCCESS;
  bool have_g = have_part && (e = fabric_graph(t, false, false, &g, &cap)) == IGRAPH_SUCCESS;
  double best = INFINITY;
  uint32_t best_src = 0, best_dst = 0;
  for (uint32_t i = 1; have_g && i < 2 * n - 1 && e == IGRAPH_SUCCESS; i++) {
    uint32_t u = (i + 1) / 2, src = i % 2 ? 0 : u, dst = i % 2 ? u : 0;
    igraph_real_t flow = 0.0;
    e = igraph_maxflow_value(&g, &flow, (igraph_integer_t)src, (igraph_integer_t)dst, &cap, NULL);
    if (e == IGRAPH_SUCCESS && flow < best) best = flow, best_src = src, best_dst = dst;
  }
  if (have_g && e == IGRAPH_SUCCESS && isfinite(best)) {
    igraph_real_t flow = 0.0;
    e = igraph_maxflow(&g, &flow, NULL, NULL, &part, NULL, (igraph_integer_t)best_src,
                       (igraph_integer_t)best_dst, &cap, NULL);
    if (e == IGRAPH_SUCCESS) {
      memset(set, 0, nodes);
      for (igraph_integer_t i = 0; i < igraph_vector_int_size(&part); i++)
        set[VECTOR(part)[i]] = 1;
      *found = true;
    }
  }
  if (have_g) {
    igraph_destroy(&g);
    igraph_vector_destroy(&cap);
  }
  if (have_part) igraph_vector_int_destroy(&part);
  topo_igraph_unlock();
  return ig_status(e, "max-flow", err);
}

/* Scratch of the partition family (gossip_family) and of a node set. */
typedef struct scratch {
  uint32_t *grp, *p, *level;
  uint8_t *keep, *set;
  double *bws;
} scratch_t;

static void scratch_free(scratch_t *s) {
  free(s->grp);
  free(s->p);
  free(s->level);
  free(s->keep);
  free(s->set);
  free(s->bws);
}

static tn_status_t scratch_alloc(const topo_t *t, scratch_t *s, tn_err_t *err) {
  uint32_t nodes = topo_nodes(t);
  memset(s, 0, sizeof *s);
  tn_status_t st = tn_malloc(nodes, sizeof *s->grp, &s->grp, err);
  if (st == TN_OK) st = tn_malloc(nodes, sizeof *s->p, &s->p, err);
  if (st == TN_OK) st = tn_malloc(nodes, sizeof *s->level, &s->level, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1u, 1, &s->keep, err);
  if (st == TN_OK) st = tn_calloc(nodes, 1, &s->set, err);
  if (st == TN_OK) st = tn_malloc(t->nlinks + 1u, sizeof *s->bws, &s->bws, err);
  if (st != TN_OK) scratch_free(s);
  return st;
}

/* All-Reduce: the partition family, 2-sided cuts (single NPUs and the two gather cuts) and
 * the latency terms of both directions (an All-Reduce reversed in time is one on the
 * transposed fabric). */
static tn_status_t fill_allreduce(const topo_t *t, const topo_t *tt, const side_t *ag,
                                  const side_t *rs, bool tight, topo_coll_bound_t *b,
                                  tn_err_t *err) {
  scratch_t sc;
  tn_status_t st = scratch_alloc(t, &sc, err);
  if (st != TN_OK) return st;
  uint32_t *grp = sc.grp;
  topo_bound_term_t gossip = {0}, bisect = {0};
  const double *ready = ag->ready; /* of t: ag is t's side */
  gossip_ctx_t gc = {b, &gossip, ready};
  visitor_t vis = {gossip_visit, &gc};
  gossip_family(t, grp, sc.p, sc.level, sc.keep, sc.bws, &vis);
  gossip_set(t, ready, ag->set, grp, b, &gossip);
  gossip_set(t, ready, rs->set, grp, b, &gossip);
  b->terms[0] = gossip;
  for (uint32_t v = 0; v < t->npus; v++) {
    setcut_t c = node_cut(t, ready, v);
    bisect_eval(&c, b, &bisect);
  }
  setcut_t ca = set_cut(t, ready, ag->set), cr = set_cut(t, ready, rs->set);
  bisect_eval(&ca, b, &bisect);
  bisect_eval(&cr, b, &bisect);
  bool found = false;
  if (tight) st = twosided_search(t, sc.set, &found, err);
  if (found) {
    setcut_t c2 = set_cut(t, ready, sc.set);
    if (c2.npus > 0 && c2.npus < t->npus) bisect_eval(&c2, b, &bisect);
  }
  b->terms[1] = bisect;
  double conv = PS_PER_BYTE_AT_1GBPS;
  b->nterms = 2;
  add_ecc_terms(t, ag, conv, b);
  add_ecc_terms(tt, rs, conv, b);
  scratch_free(&sc);
  return st;
}

/* ---- All-to-All ---------------------------------------------------------------------- */

/* A node set X with a NPUs of n: its NPUs address a(n - a)/n of S to the NPUs outside, and
 * receive as much from them, through the links leaving and entering X. Keeps the best in
 * b and *term. */
static void exchange_eval_cut(const topo_t *t, setcut_t c, const char *family, topo_coll_bound_t *b,
                              topo_bound_term_t *term) {
  double n = t->npus, a = c.npus;
  if (c.npus == 0 || c.npus == t->npus) return;
  double cross = a * (n - a) / n;
  for (int dir = 0; dir < 2; dir++) {
    double cap = dir ? c.in_GBps : c.out_GBps, lat = dir ? c.in_lat_ps : c.out_lat_ps;
    if (!(cap > 0.0)) continue;
    double coef = cross * PS_PER_BYTE_AT_1GBPS / cap;
    /* as steep as the best so far: kept if its crossings arrive later */
    if (!(coef > term->ps_per_byte) && !(coef == term->ps_per_byte && lat > term->ps)) continue;
    *term = (topo_bound_term_t){coef, lat};
    b->kind = TOPO_BOUND_EXCHANGE;
    b->cut_npus = c.npus;
    b->cut_nodes = c.nodes;
    b->cut_GBps = cap;
    b->crossings = cross;
    snprintf(b->family, sizeof b->family, "%s", family);
  }
}

static void exchange_eval(const topo_t *t, const double *ready, const uint8_t *in,
                          const char *family, topo_coll_bound_t *b, topo_bound_term_t *term) {
  exchange_eval_cut(t, set_cut(t, ready, in), family, b, term);
}

typedef struct exchange_ctx {
  topo_coll_bound_t *b;
  topo_bound_term_t *term, *volume;
  uint8_t *in;
  setcut_t *cuts; /* one per node: a partition's parties */
  const double *ready;
} exchange_ctx_t;

/* Every party of a partition, as a set X (its transit switches outside). */
static void exchange_visit(const topo_t *t, const uint32_t *grp, uint32_t k, const char *family,
                           void *ctx) {
  exchange_ctx_t *x = ctx;
  if (k < 2) return;
  group_cuts(t, x->ready, grp, k, x->cuts);
  for (uint32_t g = 0; g < k; g++)
    exchange_eval_cut(t, x->cuts[g], family, x->b, x->term);
}

/* Hops between nodes along links either way, from every node (BFS): d[u * nodes + v]. */
static void hop_distances(const topo_t *t, uint16_t *d, uint32_t *queue) {
  uint32_t nodes = topo_nodes(t);
  for (uint32_t u = 0; u < nodes; u++) {
    uint16_t *du = &d[(size_t)u * nodes];
    for (uint32_t v = 0; v < nodes; v++)
      du[v] = UINT16_MAX;
    uint32_t head = 0, tail = 0;
    du[u] = 0;
    queue[tail++] = u;
    while (head < tail) {
      uint32_t v = queue[head++];
      for (int dir = 0; dir < 2; dir++) {
        const uint32_t *off = dir ? t->in_off : t->out_off, *ids = dir ? t->in_link : t->out_link;
        for (uint32_t i = off[v]; i < off[v + 1]; i++) {
          const topo_link_t *l = &t->links[ids[i]];
          uint32_t w = dir ? l->src : l->dst;
          if (du[w] == UINT16_MAX) du[w] = (uint16_t)(du[v] + 1), queue[tail++] = w;
        }
      }
    }
  }
}

/* The splits of the fabric between the two ends of a link: X = the nodes nearer (in hops)
 * to its source than to its destination. On a mesh or torus the links of one dimension
 * give its half-spaces (the bisections among them), on a hypercube the halves of each bit,
 * on a switch tree the subtree below a link; on any fabric they are cheap, valid cuts.
 * At most MAX_SPLITS links, spread over the link ids. */
static tn_status_t exchange_splits(const topo_t *t, exchange_ctx_t *x, tn_err_t *err) {
  uint32_t nodes = topo_nodes(t);
  if ((uint64_t)nodes * nodes > MAX_SPLIT_DIST) return TN_OK;
  uint16_t *d = NULL;
  uint32_t *queue = NULL;
  tn_status_t st = tn_malloc((size_t)nodes * nodes, sizeof *d, &d, err);
  if (st == TN_OK) st = tn_malloc(nodes, sizeof *queue, &queue, err);
  if (st == TN_OK) {
    hop_distances(t, d, queue);
    /* The volume: every piece crosses at least as many links as its hops, and the links
     * carry at most their total bandwidth. */
    double hops = 0.0, cap = 0.0, n = t->npus;
    for (uint32_t u = 0; u < t->npus; u++)
      for (uint32_t v = 0; v < t->npus; v++)
        hops += d[(size_t)u * nodes + v];
    for (uint32_t i = 0; i < t->nlinks; i++)
      cap += t->links[i].bandwidth_GBps;
    double coef = hops / n * PS_PER_BYTE_AT_1GBPS / cap;
    if (cap > 0.0 && coef > x->volume->ps_per_byte) {
      *x->volume = (topo_bound_term_t){coef, 0.0};
      if (coef > x->term->ps_per_byte) {
        x->b->kind = TOPO_BOUND_VOLUME;
        x->b->cut_npus = t->npus;
        x->b->cut_nodes = nodes;
        x->b->cut_GBps = cap;
        x->b->crossings = hops / n;
        x->b->family[0] = '\0';
      }
    }
    uint32_t tries = t->nlinks < MAX_SPLITS ? t->nlinks : MAX_SPLITS;
    for (uint32_t j = 0; j < tries; j++) {
      const topo_link_t *l = &t->links[(uint64_t)j * t->nlinks / tries];
      const uint16_t *du = &d[(size_t)l->src * nodes], *dw = &d[(size_t)l->dst * nodes];
      for (uint32_t v = 0; v < nodes; v++)
        x->in[v] = du[v] < dw[v];
      exchange_eval(t, x->ready, x->in, "the nodes nearer one end of a link", x->b, x->term);
    }
  }
  free(d);
  free(queue);
  return st;
}

/* All-to-All: the cuts of the All-Reduce family's parties (single NPUs are parties of the
 * singletons), of the two gather cuts and of the link splits, and the latency terms of
 * the gathers (a piece crosses from its NPU to the farthest one). */
static tn_status_t fill_alltoall(const topo_t *t, const topo_t *tt, const side_t *ag,
                                 const side_t *rs, topo_coll_bound_t *b, tn_err_t *err) {
  scratch_t sc;
  tn_status_t st = scratch_alloc(t, &sc, err);
  if (st != TN_OK) return st;
  topo_bound_term_t cut = {0}, volume = {0};
  setcut_t *cuts = NULL;
  if ((st = tn_malloc(topo_nodes(t) + 1u, sizeof *cuts, &cuts, err)) != TN_OK) {
    scratch_free(&sc);
    return st;
  }
  exchange_ctx_t x = {b, &cut, &volume, sc.set, cuts, ag->ready};
  visitor_t vis = {exchange_visit, &x};
  gossip_family(t, sc.grp, sc.p, sc.level, sc.keep, sc.bws, &vis);
  exchange_eval(t, ag->ready, ag->set, "an All-Gather cut", b, &cut);
  exchange_eval(t, ag->ready, rs->set, "a Reduce-Scatter cut", b, &cut);
  st = exchange_splits(t, &x, err);
  if (st != TN_OK) goto out;
  double conv = PS_PER_BYTE_AT_1GBPS, n = t->npus, lambda;
  bool exact = false;
  /* The flow limit over the fixed routes, where it is computed: (S/n) / lambda for every
   * pair; exact when the program's optimum was proved. */
  double known = fmax(cut.ps_per_byte, volume.ps_per_byte);
  bool flow = known > 0.0 && topo_i_mcf_rate(t, conv / (n * known), &lambda, &exact);
  if (flow && conv / (n * lambda) > known) {
    cut = (topo_bound_term_t){conv / (n * lambda), 0.0};
    b->kind = TOPO_BOUND_FLOW;
    b->cut_npus = t->npus;
    b->cut_nodes = topo_nodes(t);
    b->cut_GBps = lambda;
    b->crossings = 0.0;
    b->family[0] = '\0';
  }
  b->exact = flow && exact;
  b->terms[0] = cut;
  b->terms[1] = volume;
  b->nterms = 2;
  add_ecc_terms(t, ag, conv / n, b);
  add_ecc_terms(tt, rs, conv / n, b);
out:
  free(cuts);
  scratch_free(&sc);
  return st;
}

/* topo_bounds_compute for the collectives in colls (a bit per tn_coll_t) only: both
 * gather sides are always computed (connectivity and the latency term come from them);
 * the All-Reduce and All-to-All searches, which cost most on a small fabric, only when
 * asked for. The entries asked for are exactly topo_bounds_compute's. */
static tn_status_t bounds_compute(const topo_t *t, unsigned colls, topo_bounds_t *out,
                                  tn_err_t *err) {
  memset(out, 0, sizeof *out);
  out->npus = t->npus;
  out->connected = out->tight = true;
  if (t->npus < 2) return TN_OK;
  bool tight = t->npus <= TOPO_BOUND_TIGHT_MAX_NPUS && t->nlinks <= TOPO_BOUND_TIGHT_MAX_LINKS;
  bool sym = topo_is_symmetric(t);
  topo_t *tt = NULL;
  side_t ag = {0}, rs = {0};
  tn_status_t st = sym ? TN_OK : topo_transpose(t, &tt, err);
  const topo_t *rev = sym ? t : tt;
  if (st == TN_OK) st = side_compute(t, tight, &ag, err);
  if (st == TN_OK && !sym) st = side_compute(rev, tight, &rs, err);
  if (st == TN_OK && sym) { /* the transposed fabric is t: the same side */
    rs = ag;
    rs.set = NULL;
    rs.ready = NULL;
    st = tn_malloc(topo_nodes(t), 1, &rs.set, err);
    if (st == TN_OK) memcpy(rs.set, ag.set, topo_nodes(t));
    if (st == TN_OK) st = tn_malloc(topo_nodes(t), sizeof *rs.ready, &rs.ready, err);
    if (st == TN_OK) memcpy(rs.ready, ag.ready, topo_nodes(t) * sizeof *rs.ready);
  }
  if (st != TN_OK) goto out;
  out->tight = tight;
  out->connected = ag.connected && rs.connected;
  if (!out->connected) goto out;
  out->latency_ps = (uint64_t)ag.diameter_ps;
  fill_gather(t, &ag, tight, &out->coll[TN_ALLGATHER]);
  fill_gather(rev, &rs, tight, &out->coll[TN_REDUCESCATTER]);
  if (colls & (1u << TN_ALLREDUCE))
    st = fill_allreduce(t, rev, &ag, &rs, tight, &out->coll[TN_ALLREDUCE], err);
  if (st == TN_OK && (colls & (1u << TN_ALLTOALL)))
    st = fill_alltoall(t, rev, &ag, &rs, &out->coll[TN_ALLTOALL], err);
out:
  free(ag.set);
  free(rs.set);
  free(ag.ready);
  free(rs.ready);
  topo_free(tt);
  return st;
}

tn_status_t topo_bounds_compute(const topo_t *t, topo_bounds_t *out, tn_err_t *err) {
  return bounds_compute(t, (1u << TN_NCOLLS) - 1u, out, err);
}

/* The one refusal of a bound past TN_TIME_MAX_PS. */
static tn_status_t bound_time(double best, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                              tn_err_t *err) {
  if (tn_time_from_double(best, ps)) return TN_OK;
  return tn_time_overflow(err, "the %s lower bound for %" PRIu64 " bytes (%.3g s)",
                          tn_coll_name(coll), size_bytes, best / 1e12);
}

tn_status_t topo_bound_ps(const topo_bounds_t *b, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                          tn_err_t *err) {
  if (!b->connected) {
    *ps = UINT64_MAX;
    return TN_OK;
  }
  const topo_coll_bound_t *c = &b->coll[coll];
  /* All-Gather and Reduce-Scatter count whole blocks of floor(S/n) bytes: a size that is
   * not a multiple of n leaves some NPUs a byte less to send. */
  uint64_t s = coll == TN_ALLREDUCE || b->npus < 2 ? size_bytes : size_bytes - size_bytes % b->npus;
  double best = 0.0;
  for (uint32_t i = 0; i < c->nterms; i++)
    best = fmax(best, c->terms[i].ps_per_byte * (double)s + c->terms[i].ps);
  return bound_time(best, coll, size_bytes, ps, err);
}

double topo_bound_ps_per_byte(const topo_bounds_t *b, tn_coll_t coll) {
  const topo_coll_bound_t *c = &b->coll[coll];
  double best = 0.0;
  for (uint32_t i = 0; i < c->nterms; i++)
    best = fmax(best, c->terms[i].ps_per_byte);
  return b->connected ? best : INFINITY;
}

const char *topo_bound_explain(const topo_bounds_t *b, tn_coll_t coll, char *buf, size_t len) {
  const topo_coll_bound_t *c = &b->coll[coll];
  const char *dir = coll == TN_REDUCESCATTER ? "enter" : "leave";
  if (len == 0) return buf;
  if (!b->connected) {
    snprintf(buf, len, "none: some NPU cannot reach another");
    return buf;
  }
  switch (c->kind) {
  case TOPO_BOUND_NONE: snprintf(buf, len, "nothing to move"); break;
  case TOPO_BOUND_CUT:
  case TOPO_BOUND_NPU:
    snprintf(buf, len, "%u NPUs' blocks must %s a set of %u nodes through %g GB/s%s", c->cut_npus,
             dir, c->cut_nodes, c->cut_GBps, b->tight ? "" : " (per-NPU cuts only: not tight)");
    break;
  case TOPO_BOUND_GOSSIP:
    snprintf(buf, len, "%g crossings of every byte between %u groups (%s) over %g GB/s",
             c->crossings, c->cut_npus, c->family, c->cut_GBps);
    break;
  case TOPO_BOUND_BISECT:
    snprintf(buf, len,
             "every byte crosses both ways between a set of %u NPUs (%u nodes) and the "
             "rest, %g GB/s the narrower way",
             c->cut_npus, c->cut_nodes, c->cut_GBps);
    break;
  case TOPO_BOUND_FLOW:
    snprintf(buf, len,
             "at most %g GB/s from every NPU to every other at once over the routes "
             "(maximum concurrent flow%s)",
             c->cut_GBps, c->exact ? ", exact" : ": its dual, the optimum not proved");
    break;
  case TOPO_BOUND_VOLUME:
    snprintf(buf, len,
             "%g buffers' worth of piece-hops (every piece crosses at least its hop "
             "distance) over all %g GB/s of links%s",
             c->crossings, c->cut_GBps, c->exact ? "; exact: a flow over the routes meets it" : "");
    break;
  case TOPO_BOUND_EXCHANGE:
    snprintf(buf, len,
             "%g buffers' worth must cross between a set of %u NPUs (%u nodes; %s) "
             "and the rest through %g GB/s%s",
             c->crossings, c->cut_npus, c->cut_nodes, c->family, c->cut_GBps,
             c->exact ? "; exact: a flow over the routes meets it" : "");
    break;
  }
  return buf;
}

/* The per-NPU bound (docs/bounds.md §1), for when the full computation cannot run. */
static tn_status_t npu_bound_ps(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                                tn_err_t *err) {
  double n = t->npus, s = (double)size_bytes, worst = 0.0;
  for (uint32_t v = 0; v < t->npus; v++) {
    double in = topo_ingress_GBps(t, v), o = topo_egress_GBps(t, v);
    double need = coll == TN_ALLGATHER       ? (n - 1.0) / n * s / in
                  : coll == TN_REDUCESCATTER ? (n - 1.0) / n * s / o
                  : coll == TN_ALLTOALL      ? (n - 1.0) / n * s / fmin(in, o)
                                             : s / fmin(in, o);
    worst = fmax(worst, need * PS_PER_BYTE_AT_1GBPS);
  }
  return bound_time(worst, coll, size_bytes, ps, err);
}

tn_status_t topo_npu_bound_ps(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                              tn_err_t *err) {
  *ps = 0;
  return t->npus < 2 ? TN_OK : npu_bound_ps(t, coll, size_bytes, ps, err);
}

tn_status_t topo_size_check(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, tn_err_t *err) {
  uint64_t ps = 0;
  return topo_npu_bound_ps(t, coll, size_bytes, &ps, err);
}

tn_status_t topo_lower_bound_ps(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, uint64_t *ps,
                                tn_err_t *err) {
  *ps = 0;
  if (t->npus < 2) return TN_OK;
  topo_bounds_t b;
  tn_err_t e = {0};
  /* Only coll's bound is asked for: the other collectives' searches are skipped. */
  if ((unsigned)coll >= TN_NCOLLS || bounds_compute(t, 1u << coll, &b, &e) != TN_OK)
    return npu_bound_ps(t, coll, size_bytes, ps, err);
  return topo_bound_ps(&b, coll, size_bytes, ps, err);
}

uint64_t topo_bounds_cost_us(const topo_t *t) {
  /* Fitted on this module's own runs over 16..256 NPU fabrics (one core): the cut
   * searches cost about 0.2 us per (NPU, node + link) pair. The All-to-All flow (up to
   * MCF_MAX_NPUS NPUs) walks every route, about 0.05 us per NPU pair on a generated fabric,
   * where the routes or the symmetric program settle it; an explicit fabric may need
   * column generation, about 2 us per (NPU, link) pair on the shipped ones (random4reg-32
   * and torus-8x8-degraded 30 ms), at most its work limit (2 s). Within a factor of about
   * 4. */
  double n = t->npus, v = topo_nodes(t), l = t->nlinks;
  bool tight = t->npus <= TOPO_BOUND_TIGHT_MAX_NPUS && t->nlinks <= TOPO_BOUND_TIGHT_MAX_LINKS;
  double us = tight ? 0.2 * n * (v + l) : 0.05 * n * l;
  if (t->npus >= 2 && t->npus <= MCF_MAX_NPUS)
    us += t->ndims ? 0.05 * n * n : fmin(2.0 * n * l, 2e6);
  return (uint64_t)llround(us) + 1;
}
