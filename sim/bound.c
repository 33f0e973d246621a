/* sim/bound.c — a lower bound on what sim_run would report for a set, without running it:
 * every link sends its messages one at a time, so the busiest link's transmission time
 * (plus its latency) is a floor under the collective's time. The portfolio uses it to skip
 * simulating a baseline that cannot be chosen (synth/portfolio.c). */
#include <stdlib.h>

#include "sim/sim.h"

/* Adds the bytes and message counts of rank src's SENDs to the links of their routes,
 * summed per destination first (so each route is walked once per destination). */
static tn_status_t add_rank(const topo_t *t, const algo_t *a, uint32_t src, topo_routes_t *routes,
                            uint64_t *acc, uint32_t *cnt, uint32_t *touched, uint64_t *load,
                            uint64_t *msgs, bool *unroutable) {
  uint32_t ntouched = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, src); i++) {
    const algo_node_t *n = algo_node(a, src, i);
    if (n->op != ALGO_SEND || n->peer < 0 || (uint32_t)n->peer >= t->npus) continue;
    uint32_t d = (uint32_t)n->peer;
    if (cnt[d] == 0) touched[ntouched++] = d;
    acc[d] += n->bytes;
    cnt[d]++;
  }
  for (uint32_t k = 0; k < ntouched; k++) {
    uint32_t d = touched[k], at = src;
    for (uint32_t hops = 0; at != d && hops <= topo_nodes(t); hops++) {
      uint32_t l = topo_route_next(routes, at, d);
      if (l == TOPO_NO_LINK) {
        *unroutable = true;
        break;
      }
      load[l] += acc[d];
      msgs[l] += cnt[d];
      at = t->links[l].dst;
    }
    acc[d] = 0;
    cnt[d] = 0;
  }
  return topo_routes_out_of_memory(routes) ? TN_NOMEM : TN_OK;
}

tn_status_t sim_link_bound_ps(const topo_t *t, const algo_t *a, uint64_t *bound_ps, tn_err_t *err) {
  *bound_ps = 0;
  uint64_t *acc = NULL, *load = NULL, *msgs = NULL;
  uint32_t *cnt = NULL, *touched = NULL;
  topo_routes_t *routes = NULL;
  bool unroutable = false;
  tn_status_t st = tn_calloc(t->npus, sizeof *acc, &acc, err);
  if (st == TN_OK) st = tn_calloc(t->npus, sizeof *cnt, &cnt, err);
  if (st == TN_OK) st = tn_calloc(t->npus, sizeof *touched, &touched, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1u, sizeof *load, &load, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks + 1u, sizeof *msgs, &msgs, err);
  if (st == TN_OK) st = topo_routes_create(t, &routes, err);
  for (uint32_t r = 0; st == TN_OK && r < a->npus && r < t->npus && !unroutable; r++)
    if (add_rank(t, a, r, routes, acc, cnt, touched, load, msgs, &unroutable) != TN_OK)
      st = tn_err_set(err, TN_NOMEM, "out of memory building the routes");
  /* Each message holds its link for its size over the bandwidth, rounded to the nearest
   * picosecond (tn_xfer_ps): a message's busy time is at least its exact share less half
   * a picosecond, so one picosecond per message (and one more for the double's rounding)
   * keeps the figure below the simulator's. A set the simulator would refuse (a route
   * missing) gets no bound. */
  for (uint32_t l = 0; st == TN_OK && !unroutable && l < t->nlinks; l++) {
    if (load[l] == 0) continue;
    const topo_link_t *lk = &t->links[l];
    double busy = (double)load[l] * 1e12 / (lk->bandwidth_GBps * TN_GIB);
    double slack = (double)msgs[l] + 1.0;
    if (!(busy > slack)) continue;
    double b = busy - slack + (double)lk->latency_ps;
    if (b >= (double)TN_TIME_MAX_PS) b = (double)TN_TIME_MAX_PS;
    if ((uint64_t)b > *bound_ps) *bound_ps = (uint64_t)b;
  }
  topo_routes_free(routes);
  free(acc);
  free(cnt);
  free(touched);
  free(load);
  free(msgs);
  return st;
}
