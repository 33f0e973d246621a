/* topo/analyze.c — fabric analysis with igraph: strong connectivity over the NPUs, the
 * diameter in hops over NPU pairs, degrees and per-NPU ingress/egress bandwidth. Used by
 * `tenet topo info` and, through topo_check_connected, by every stage that must refuse a
 * disconnected fabric. igraph stays behind this file: its types never leave it. */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <igraph/igraph.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

/* Sources per igraph_distances call: bounds the distance matrix to BATCH x npus. */
#define BATCH 64

/* Debian's igraph is built without thread safety (its error "finally" stack is global),
 * so every use of igraph in this file holds this lock: tenet batch and compare analyse
 * fabrics from several threads. */
static pthread_mutex_t igraph_mu = PTHREAD_MUTEX_INITIALIZER;

/* igraph must never abort the process or print: install its "ignore" handlers once
 * (they free igraph's own temporaries and return the error code to us). Called with
 * igraph_mu held. */
static void igraph_setup(void) {
  static bool done = false;
  if (done) return;
  igraph_set_error_handler(igraph_error_handler_ignore);
  igraph_set_warning_handler(igraph_warning_handler_ignore);
  done = true;
}

static tn_status_t map_igraph(igraph_error_t e, const char *what, tn_err_t *err) {
  if (e == IGRAPH_SUCCESS) return TN_OK;
  if (e == IGRAPH_ENOMEM) return tn_err_set(err, TN_NOMEM, "igraph %s: out of memory", what);
  return tn_err_set(err, TN_INTERNAL, "igraph %s failed: %s", what, igraph_strerror(e));
}

/* The fabric as a directed igraph graph: vertex = node id, edge = link id. */
static tn_status_t build_graph(const topo_t *t, igraph_t *g, tn_err_t *err) {
  igraph_vector_int_t edges;
  igraph_error_t e = igraph_vector_int_init(&edges, 2 * (igraph_integer_t)t->nlinks);
  if (e != IGRAPH_SUCCESS) return map_igraph(e, "vector", err);
  for (uint32_t i = 0; i < t->nlinks; i++) {
    VECTOR(edges)[2 * i] = t->links[i].src;
    VECTOR(edges)[2 * i + 1] = t->links[i].dst;
  }
  e = igraph_create(g, &edges, (igraph_integer_t)topo_nodes(t), IGRAPH_DIRECTED);
  igraph_vector_int_destroy(&edges);
  return map_igraph(e, "create", err);
}

/* Hop distances from every NPU to every NPU, BATCH sources at a time: the diameter over
 * NPU pairs (UINT32_MAX if some pair is unreachable) and the first unreachable pair. */
static tn_status_t npu_distances(const topo_t *t, const igraph_t *g, uint32_t *diameter,
                                 uint32_t *bad_src, uint32_t *bad_dst, tn_err_t *err) {
  igraph_matrix_t m;
  igraph_error_t e = igraph_matrix_init(&m, 0, 0);
  if (e != IGRAPH_SUCCESS) return map_igraph(e, "matrix", err);
  uint32_t diam = 0;
  *bad_src = *bad_dst = UINT32_MAX;
  for (uint32_t s0 = 0; s0 < t->npus && e == IGRAPH_SUCCESS; s0 += BATCH) {
    uint32_t s1 = s0 + BATCH < t->npus ? s0 + BATCH : t->npus;
    e = igraph_distances(g, &m, igraph_vss_range(s0, s1), igraph_vss_range(0, t->npus), IGRAPH_OUT);
    for (uint32_t s = s0; s < s1 && e == IGRAPH_SUCCESS; s++) {
      for (uint32_t d = 0; d < t->npus; d++) {
        igraph_real_t h = MATRIX(m, s - s0, d);
        if (!isfinite(h)) {
          if (*bad_src == UINT32_MAX) *bad_src = s, *bad_dst = d;
          diam = UINT32_MAX;
        } else if (diam != UINT32_MAX && (uint32_t)h > diam) {
          diam = (uint32_t)h;
        }
      }
    }
  }
  igraph_matrix_destroy(&m);
  *diameter = diam;
  return map_igraph(e, "distances", err);
}

/* npus x (nodes + links) above which the diameter is not taken from a BFS per NPU (65536
 * NPUs on a ring would take minutes). */
#define ALL_PAIRS_WORK 200000000ull

static tn_status_t check_connected_locked(const topo_t *t, tn_err_t *err);

/* The diameter of a generated fabric that is still exactly what its shape generates (no
 * link removed or added): the sum of its dimensions' diameters (the fabric is their
 * Cartesian product). False when t is not such a fabric. */
static bool shape_diameter(const topo_t *t, uint32_t *diameter) {
  if (t->ndims == 0) return false;
  topo_t *u = NULL;
  tn_err_t e = {0};
  if (topo_gen(t->name, t->dims, t->ndims, &u, &e) != TN_OK) return false;
  bool same = u->nlinks == t->nlinks && u->npus == t->npus && u->switches == t->switches;
  for (uint32_t l = 0; same && l < t->nlinks; l++)
    same = u->links[l].src == t->links[l].src && u->links[l].dst == t->links[l].dst;
  topo_free(u);
  if (!same) return false;
  uint32_t d = 0;
  for (uint32_t i = 0; i < t->ndims; i++) {
    const topo_dim_t *dim = &t->dims[i];
    uint32_t n = dim->size;
    if (n <= 1) continue;
    switch (dim->kind) {
    case TOPO_DIM_RING: d += dim->unidirectional ? n - 1 : n / 2; break;
    case TOPO_DIM_LINE: d += n - 1; break;
    case TOPO_DIM_FC: d += 1; break;
    case TOPO_DIM_SWITCH: d += 2; break;
    }
  }
  *diameter = d;
  return true;
}

/* The largest hop distance from NPU src to an NPU (*far: that NPU), by BFS on the CSR
 * arrays. dist and queue hold topo_nodes(t) entries. */
static uint32_t npu_eccentricity(const topo_t *t, uint32_t src, uint32_t *dist, uint32_t *queue,
                                 uint32_t *far) {
  uint32_t nodes = topo_nodes(t), head = 0, tail = 0, best = 0;
  for (uint32_t v = 0; v < nodes; v++)
    dist[v] = UINT32_MAX;
  dist[src] = 0;
  queue[tail++] = src;
  *far = src;
  while (head < tail) {
    uint32_t v = queue[head++];
    if (v < t->npus && dist[v] > best) best = dist[v], *far = v;
    for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
      uint32_t w = t->links[t->out_link[i]].dst;
      if (dist[w] == UINT32_MAX) dist[w] = dist[v] + 1, queue[tail++] = w;
    }
  }
  return best;
}

/* Above ALL_PAIRS_WORK: connectivity from strongly connected components, the diameter
 * exact from the shape when there is one, else a lower bound from two BFS sweeps (NPU 0,
 * then the NPU farthest from it). */
static tn_status_t large_diameter(const topo_t *t, topo_info_t *info, tn_err_t *err) {
  tn_err_t ce = {0};
  tn_status_t cs = check_connected_locked(t, &ce);
  if (cs == TN_INFEASIBLE) {
    info->connected = false;
    info->diameter = UINT32_MAX;
    return TN_OK;
  }
  if (cs != TN_OK) return tn_err_set(err, cs, "%s", ce.msg);
  info->connected = true;
  if (shape_diameter(t, &info->diameter)) {
    info->diameter_exact = true;
    return TN_OK;
  }
  uint32_t *dist = NULL, *queue = NULL, far = 0, far2 = 0;
  tn_status_t st = tn_malloc(topo_nodes(t), sizeof *dist, &dist, err);
  if (st == TN_OK) st = tn_malloc(topo_nodes(t), sizeof *queue, &queue, err);
  if (st == TN_OK) {
    uint32_t a = npu_eccentricity(t, 0, dist, queue, &far);
    uint32_t b = npu_eccentricity(t, far, dist, queue, &far2);
    info->diameter = a > b ? a : b;
  }
  free(dist);
  free(queue);
  return st;
}

static tn_status_t analyze_locked(const topo_t *t, topo_info_t *info, tn_err_t *err) {
  igraph_setup();
  *info = (topo_info_t){0};
  info->npus = t->npus;
  info->switches = t->switches;
  info->links = t->nlinks;
  info->min_in_degree = info->min_out_degree = UINT32_MAX;
  info->min_ingress_GBps = info->min_egress_GBps = INFINITY;
  for (uint32_t v = 0; v < t->npus; v++) {
    uint32_t in = t->in_off[v + 1] - t->in_off[v], out = t->out_off[v + 1] - t->out_off[v];
    double ig = topo_ingress_GBps(t, v), eg = topo_egress_GBps(t, v);
    if (in < info->min_in_degree) info->min_in_degree = in;
    if (in > info->max_in_degree) info->max_in_degree = in;
    if (out < info->min_out_degree) info->min_out_degree = out;
    if (out > info->max_out_degree) info->max_out_degree = out;
    if (ig < info->min_ingress_GBps) info->min_ingress_GBps = ig;
    if (ig > info->max_ingress_GBps) info->max_ingress_GBps = ig;
    if (eg < info->min_egress_GBps) info->min_egress_GBps = eg;
    if (eg > info->max_egress_GBps) info->max_egress_GBps = eg;
  }
  if ((uint64_t)t->npus * ((uint64_t)topo_nodes(t) + t->nlinks) > ALL_PAIRS_WORK)
    return large_diameter(t, info, err);
  igraph_t g;
  tn_status_t st = build_graph(t, &g, err);
  if (st != TN_OK) return st;
  uint32_t a = 0, b = 0;
  st = npu_distances(t, &g, &info->diameter, &a, &b, err);
  igraph_destroy(&g);
  info->connected = st == TN_OK && info->diameter != UINT32_MAX;
  info->diameter_exact = true;
  return st;
}

static tn_status_t check_connected_locked(const topo_t *t, tn_err_t *err) {
  igraph_setup();
  igraph_t g;
  tn_status_t st = build_graph(t, &g, err);
  if (st != TN_OK) return st;
  igraph_vector_int_t memb;
  igraph_integer_t ncomp = 0;
  igraph_error_t e = igraph_vector_int_init(&memb, 0);
  if (e == IGRAPH_SUCCESS) {
    /* Strongly connected components: O(V + E). All NPUs in one component means every
     * NPU reaches every other (switches may sit outside it, e.g. an unused one). */
    e = igraph_connected_components(&g, &memb, NULL, &ncomp, IGRAPH_STRONG);
    uint32_t other = UINT32_MAX;
    for (uint32_t v = 1; e == IGRAPH_SUCCESS && v < t->npus && other == UINT32_MAX; v++)
      if (VECTOR(memb)[v] != VECTOR(memb)[0]) other = v;
    if (e == IGRAPH_SUCCESS && other != UINT32_MAX) {
      /* Name one pair that cannot talk: 0 -> other, else other -> 0. */
      igraph_matrix_t m;
      e = igraph_matrix_init(&m, 0, 0);
      if (e == IGRAPH_SUCCESS) {
        e = igraph_distances(&g, &m, igraph_vss_1(0), igraph_vss_1(other), IGRAPH_OUT);
        if (e == IGRAPH_SUCCESS) {
          bool fwd = !isfinite(MATRIX(m, 0, 0));
          st = tn_err_set(err, TN_INFEASIBLE,
                          "fabric '%s' is disconnected: NPU %u cannot "
                          "reach NPU %u",
                          t->name, fwd ? 0u : other, fwd ? other : 0u);
        }
        igraph_matrix_destroy(&m);
      }
    }
    igraph_vector_int_destroy(&memb);
  }
  igraph_destroy(&g);
  if (st == TN_OK) st = map_igraph(e, "components", err);
  return st;
}

void topo_igraph_lock(void) {
  pthread_mutex_lock(&igraph_mu);
  igraph_setup();
}

void topo_igraph_unlock(void) {
  pthread_mutex_unlock(&igraph_mu);
}

tn_status_t topo_i_igraph_status(int igraph_error, const char *what, tn_err_t *err) {
  return map_igraph((igraph_error_t)igraph_error, what, err);
}

tn_status_t topo_analyze(const topo_t *t, topo_info_t *info, tn_err_t *err) {
  pthread_mutex_lock(&igraph_mu);
  tn_status_t st = analyze_locked(t, info, err);
  pthread_mutex_unlock(&igraph_mu);
  return st;
}

tn_status_t topo_check_connected(const topo_t *t, tn_err_t *err) {
  pthread_mutex_lock(&igraph_mu);
  tn_status_t st = check_connected_locked(t, err);
  pthread_mutex_unlock(&igraph_mu);
  return st;
}
