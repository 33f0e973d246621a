/* milp/fabric.c — discretises a fabric for the MILP: the NPU pairs one transfer can
 * join (direct links and switch-only routes), the step length, each hop's offset and
 * duration in steps, earliest arrivals and a lower bound on the makespan. */
#include "milp/milp_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

/* Follows the route a -> b; true when every intermediate node is a switch. */
static bool switch_route(const topo_t *t, topo_routes_t *r, uint32_t a, uint32_t b,
                         milp_vlink_t *e) {
  memset(e, 0, sizeof *e);
  e->src = a;
  e->dst = b;
  uint32_t node = a;
  while (node != b) {
    uint32_t l = topo_route_next(r, node, b);
    if (l == TOPO_NO_LINK || e->nhops == MILP_MAX_HOPS) return false;
    node = t->links[l].dst;
    if (node != b && node < t->npus) return false;
    e->link[e->nhops++] = l;
  }
  return true;
}

static tn_status_t collect_vlinks(const topo_t *t, milp_fab_t *f, tn_err_t *err) {
  topo_routes_t *r = NULL;
  tn_vec_t v;
  tn_vec_init(&v, sizeof(milp_vlink_t));
  tn_status_t st = topo_routes_create(t, &r, err);
  for (uint32_t a = 0; a < f->npus && st == TN_OK; a++)
    for (uint32_t b = 0; b < f->npus && st == TN_OK; b++) {
      milp_vlink_t e;
      if (a != b && switch_route(t, r, a, b, &e)) st = tn_vec_push(&v, &e, err);
    }
  /* A route table that could not be allocated reads as "no route": say so, rather than
   * let the fabric look disconnected. */
  if (st == TN_OK && topo_routes_out_of_memory(r))
    st = tn_err_set(err, TN_NOMEM, "out of memory building the routes of '%s'", t->name);
  topo_routes_free(r);
  if (st != TN_OK) {
    tn_vec_free(&v);
    return st;
  }
  f->vl = v.data;
  f->nvl = (uint32_t)v.len;
  return TN_OK;
}

/* One chunk's time on link l, at least 1 ps; discretise has checked that it fits. */
static uint64_t busy_ps(uint64_t chunk, const topo_link_t *l) {
  uint64_t busy = 0;
  bool ok = tn_xfer_ps(chunk, l->bandwidth_GBps, &busy);
  assert(ok);
  (void)ok;
  return busy ? busy : 1;
}

/* Worst relative overestimate, over every hop the model uses, of the hop's occupancy and
 * of its arrival when time is counted in whole steps of step_ps. */
static double rounding_error(const topo_t *t, const milp_fab_t *f, uint64_t chunk,
                             uint64_t step_ps) {
  double worst = 0.0;
  for (uint32_t i = 0; i < f->nvl; i++)
    for (uint32_t h = 0; h < f->vl[i].nhops; h++) {
      const topo_link_t *l = &t->links[f->vl[i].link[h]];
      uint64_t busy = busy_ps(chunk, l);
      double a = (double)(ceil_div(busy, step_ps) * step_ps) / (double)busy;
      double b = (double)(ceil_div(busy + l->latency_ps, step_ps) * step_ps) /
                 (double)(busy + l->latency_ps);
      if (a - 1.0 > worst) worst = a - 1.0;
      if (b - 1.0 > worst) worst = b - 1.0;
    }
  return worst;
}

/* Step length: one chunk on the fastest link used, divided by the resolution (0: the
 * smallest of 1..4 whose rounding overestimates no hop by more than 5%, else the most
 * accurate of them). Then each hop's duration and start offset in whole steps, rounded
 * up (see milp.h). A transfer longer than MILP_MAX_STEPS / 4 steps is refused (TN_LIMIT)
 * before anything is narrowed to 32 bits: a long latency against a short chunk time would
 * otherwise wrap to a small step count and a wrong model. */
static tn_status_t discretise(const topo_t *t, milp_fab_t *f, uint32_t res, tn_err_t *err) {
  uint64_t chunk = ten_chunk_bytes(f->size_bytes, f->npus, f->k, 0); /* the largest */
  uint64_t fastest = UINT64_MAX;
  for (uint32_t i = 0; i < f->nvl; i++)
    for (uint32_t h = 0; h < f->vl[i].nhops; h++) {
      const topo_link_t *l = &t->links[f->vl[i].link[h]];
      uint64_t busy = 0;
      if (!tn_xfer_ps(chunk, l->bandwidth_GBps, &busy))
        return tn_time_overflow(err, "one chunk of %" PRIu64 " bytes over link %u -> %u (%g GB/s)",
                                chunk, l->src, l->dst, l->bandwidth_GBps);
      if (busy == 0) busy = 1;
      if (busy < fastest) fastest = busy;
    }
  if (res == 0) {
    double best = HUGE_VAL;
    for (uint32_t r = 1; r <= 4 && fastest / r > 0; r++) {
      double e = rounding_error(t, f, chunk, fastest / r);
      if (e < best - 1e-9) best = e, res = r;
      if (e <= 0.05) break;
    }
    if (res == 0) res = 1;
  }
  f->step_ps = fastest / res ? fastest / res : 1;
  for (uint32_t i = 0; i < f->nvl; i++) {
    milp_vlink_t *e = &f->vl[i];
    uint64_t off = 0;
    for (uint32_t h = 0; h < e->nhops; h++) {
      const topo_link_t *l = &t->links[e->link[h]];
      uint64_t busy = busy_ps(chunk, l);
      e->off[h] = (uint32_t)off;
      e->dur[h] = (uint32_t)ceil_div(busy, f->step_ps);
      off += ceil_div(busy + l->latency_ps, f->step_ps);
      if (off > MILP_MAX_STEPS / 4)
        return tn_err_set(err, TN_LIMIT,
                          "one transfer %u -> %u takes %llu time steps of %llu ps (one chunk "
                          "of %llu B on the fastest link; the time-indexed model's cap is %u): "
                          "use a larger size or fewer chunks",
                          e->src, e->dst, (unsigned long long)off, (unsigned long long)f->step_ps,
                          (unsigned long long)chunk, MILP_MAX_STEPS / 4);
    }
    e->arrive = (uint32_t)off;
  }
  return TN_OK;
}

static tn_status_t build_index(milp_fab_t *f, tn_err_t *err) {
  size_t n = f->npus;
  tn_status_t st = tn_calloc(n * n, sizeof *f->vl_index, &f->vl_index, err);
  if (st == TN_OK) st = tn_calloc(n + 1, sizeof *f->in_off, &f->in_off, err);
  if (st == TN_OK) st = tn_calloc(f->nvl ? f->nvl : 1, sizeof *f->in_vl, &f->in_vl, err);
  if (st != TN_OK) return st;
  for (size_t i = 0; i < n * n; i++)
    f->vl_index[i] = MILP_NONE;
  for (uint32_t i = 0; i < f->nvl; i++) {
    f->vl_index[(size_t)f->vl[i].src * n + f->vl[i].dst] = i;
    f->in_off[f->vl[i].dst + 1]++;
  }
  for (size_t v = 0; v < n; v++)
    f->in_off[v + 1] += f->in_off[v];
  uint32_t *fill = NULL;
  if ((st = tn_calloc(n, sizeof *fill, &fill, err)) != TN_OK) return st;
  for (uint32_t i = 0; i < f->nvl; i++) {
    uint32_t d = f->vl[i].dst;
    f->in_vl[f->in_off[d] + fill[d]++] = i;
  }
  free(fill);
  return TN_OK;
}

/* Earliest arrival (in steps) from every owner: Dijkstra over vlinks, O(n^2 + V) each. */
static tn_status_t distances(milp_fab_t *f, tn_err_t *err) {
  size_t n = f->npus;
  bool *done = NULL;
  tn_status_t st = tn_calloc(n * n, sizeof *f->dist, &f->dist, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *done, &done, err);
  if (st != TN_OK) {
    free(done);
    return st;
  }
  for (uint32_t o = 0; o < n; o++) {
    uint32_t *d = &f->dist[o * n];
    for (size_t v = 0; v < n; v++)
      d[v] = MILP_NONE, done[v] = false;
    d[o] = 0;
    for (;;) {
      uint32_t u = MILP_NONE;
      for (uint32_t v = 0; v < n; v++)
        if (!done[v] && d[v] != MILP_NONE && (u == MILP_NONE || d[v] < d[u])) u = v;
      if (u == MILP_NONE) break;
      done[u] = true;
      for (uint32_t b = 0; b < n; b++) {
        uint32_t i = f->vl_index[(size_t)u * n + b];
        if (i != MILP_NONE && d[u] + f->vl[i].arrive < d[b]) d[b] = d[u] + f->vl[i].arrive;
      }
    }
    for (uint32_t v = 0; v < n; v++)
      if (d[v] == MILP_NONE) {
        free(done);
        return tn_err_set(err, TN_INFEASIBLE,
                          "fabric '%s' is disconnected: NPU %u cannot "
                          "reach NPU %u",
                          f->t->name, o, v);
      }
  }
  free(done);
  return TN_OK;
}

/* Lower bound in steps: the farthest chunk's earliest arrival, and per NPU the ingress
 * bound — (n-1)k chunks must come in over the last hops of its incoming vlinks; the last
 * hop p delivers its first chunk no sooner than the smallest arrive over it and then at
 * most one every dur steps (arrival minus the hop's start is fixed per link). */
static void lower_bound(milp_fab_t *f) {
  uint32_t lb = 0;
  size_t n = f->npus;
  for (size_t i = 0; i < n * n; i++)
    if (f->dist[i] > lb) lb = f->dist[i];
  uint64_t need = (uint64_t)(n - 1) * f->k;
  for (uint32_t v = 0; v < n; v++) {
    for (uint32_t m = lb;; m++) {
      uint64_t got = 0;
      for (uint32_t j = f->in_off[v]; j < f->in_off[v + 1]; j++) {
        const milp_vlink_t *e = &f->vl[f->in_vl[j]];
        uint32_t p = e->link[e->nhops - 1], first = e->arrive, dur = e->dur[e->nhops - 1];
        bool seen = false; /* count each physical last hop once, at its smallest arrive */
        for (uint32_t q = f->in_off[v]; q < j && !seen; q++) {
          const milp_vlink_t *g = &f->vl[f->in_vl[q]];
          seen = g->link[g->nhops - 1] == p;
        }
        if (seen) continue;
        for (uint32_t q = j + 1; q < f->in_off[v + 1]; q++) {
          const milp_vlink_t *g = &f->vl[f->in_vl[q]];
          if (g->link[g->nhops - 1] == p && g->arrive < first) first = g->arrive;
        }
        if (m >= first) got += (m - first) / dur + 1;
      }
      if (got >= need || m >= MILP_MAX_STEPS) {
        if (m > lb) lb = m;
        break;
      }
    }
  }
  f->lb_steps = lb;
}

/* Image of switch s under the NPU permutation p: the switch adjacent (both ways) to the
 * images of all of s's neighbours, which must all be NPUs. MILP_NONE when there is none. */
static uint32_t switch_image(const topo_t *t, const uint32_t *p, uint32_t s) {
  for (uint32_t s2 = t->npus; s2 < topo_nodes(t); s2++) {
    bool ok = true;
    for (uint32_t j = t->out_off[s]; j < t->out_off[s + 1] && ok; j++) {
      uint32_t a = t->links[t->out_link[j]].dst;
      ok = a < t->npus && topo_find_link(t, p[a], s2) != TOPO_NO_LINK &&
           topo_find_link(t, s2, p[a]) != TOPO_NO_LINK;
    }
    if (ok) return s2;
  }
  return MILP_NONE;
}

/* True when translation r maps every vlink onto a vlink over the images of its links
 * with the same timing (so one variable can stand for all its translates). */
static bool vlinks_map(const milp_fab_t *f, uint32_t r) {
  for (uint32_t e = 0; e < f->nvl; e++) {
    uint32_t g = milp_i_sym_vlink(f, r, e);
    if (g == MILP_NONE || f->vl[g].nhops != f->vl[e].nhops) return false;
    for (uint32_t h = 0; h < f->vl[e].nhops; h++)
      if (f->vl[g].link[h] != f->lperm[(size_t)r * f->t->nlinks + f->vl[e].link[h]] ||
          f->vl[g].off[h] != f->vl[e].off[h] || f->vl[g].dur[h] != f->vl[e].dur[h])
        return false;
  }
  return true;
}

/* Translation symmetry of a generated fabric: NPU v has mixed-radix coordinates over the
 * dimensions; translation by r adds r's coordinates modulo each size, and a switch goes
 * to the switch serving the images of its NPUs. It is kept only if, for every r, every
 * link maps onto a link with the same bandwidth and latency and every vlink onto a vlink
 * over the mapped links (true for rings, tori, fully connected and switch dimensions
 * and hypercubes; false for meshes). */
static tn_status_t symmetry(const topo_t *t, milp_fab_t *f, tn_err_t *err) {
  if (t->ndims == 0) return TN_OK;
  size_t n = f->npus, nodes = topo_nodes(t);
  uint32_t *perm = NULL, *lperm = NULL, *node = NULL;
  tn_status_t st = tn_calloc(n * n, sizeof *perm, &perm, err);
  if (st == TN_OK) st = tn_calloc(n * t->nlinks, sizeof *lperm, &lperm, err);
  if (st == TN_OK) st = tn_calloc(nodes, sizeof *node, &node, err);
  bool ok = st == TN_OK;
  for (uint32_t r = 0; r < n && ok; r++)
    for (uint32_t v = 0; v < n; v++) {
      uint32_t img = 0, stride = 1, a = r, b = v;
      for (uint32_t d = 0; d < t->ndims; d++) {
        uint32_t s = t->dims[d].size;
        img += ((a % s + b % s) % s) * stride;
        a /= s, b /= s, stride *= s;
      }
      perm[r * n + v] = img;
    }
  for (uint32_t r = 0; r < n && ok; r++) {
    for (uint32_t v = 0; v < nodes && ok; v++) {
      node[v] = v < n ? perm[r * n + v] : switch_image(t, &perm[r * n], v);
      ok = node[v] != MILP_NONE;
    }
    for (uint32_t l = 0; l < t->nlinks && ok; l++) {
      const topo_link_t *x = &t->links[l];
      uint32_t m = topo_find_link(t, node[x->src], node[x->dst]);
      ok = m != TOPO_NO_LINK && t->links[m].bandwidth_GBps == x->bandwidth_GBps &&
           t->links[m].latency_ps == x->latency_ps;
      if (ok) lperm[(size_t)r * t->nlinks + l] = m;
    }
  }
  free(node);
  f->perm = perm;
  f->lperm = lperm;
  for (uint32_t r = 0; r < n && ok; r++)
    ok = vlinks_map(f, r);
  if (!ok) {
    free(perm);
    free(lperm);
    f->perm = f->lperm = NULL;
  }
  return st;
}

tn_status_t milp_i_fab_build(const topo_t *t, uint64_t size_bytes, uint32_t k,
                             uint32_t steps_per_xfer, milp_fab_t *f, tn_err_t *err) {
  memset(f, 0, sizeof *f);
  f->t = t;
  f->npus = t->npus;
  f->k = k;
  f->nchunks = t->npus * k;
  f->size_bytes = size_bytes;
  tn_status_t st = collect_vlinks(t, f, err);
  if (st == TN_OK) st = discretise(t, f, steps_per_xfer, err);
  if (st == TN_OK) st = build_index(f, err);
  if (st == TN_OK) st = distances(f, err);
  if (st == TN_OK) st = symmetry(t, f, err);
  if (st != TN_OK) {
    milp_i_fab_free(f);
    return st;
  }
  lower_bound(f);
  return TN_OK;
}

void milp_i_fab_free(milp_fab_t *f) {
  if (f == NULL) return;
  free(f->vl);
  free(f->vl_index);
  free(f->in_off);
  free(f->in_vl);
  free(f->dist);
  free(f->perm);
  free(f->lperm);
  memset(f, 0, sizeof *f);
}
