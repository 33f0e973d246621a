/* synth/synth.c — the one entry point: method names, the checks every method shares, and
 * the dispatch to the baselines, the planned pipeline (synth/planned.c) and the portfolio
 * (synth/portfolio.c). */
#include "synth/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/synth_internal.h"
#include "forest/forest.h"
#include "greedy/greedy.h"
#include "trees/trees.h"
#include "dims/dims.h"
#ifdef TENET_HAVE_MILP
#include "milp/milp.h"
#endif

static const char *const method_names[SYNTH_NMETHODS] = {
    [SYNTH_AUTO] = "auto",     [SYNTH_GREEDY] = "greedy",   [SYNTH_MILP] = "milp",
    [SYNTH_RING] = "ring",     [SYNTH_DIRECT] = "direct",   [SYNTH_TREES] = "trees",
    [SYNTH_FOREST] = "forest", [SYNTH_TWOSTEP] = "twostep", [SYNTH_DIMS] = "dims",
};

const char *synth_method_name(synth_method_t m) {
  return (unsigned)m < SYNTH_NMETHODS ? method_names[m] : "?";
}

bool synth_method_available(synth_method_t m) {
#ifdef TENET_HAVE_MILP
  return (unsigned)m < SYNTH_NMETHODS;
#else
  return (unsigned)m < SYNTH_NMETHODS && m != SYNTH_MILP;
#endif
}

tn_status_t synth_method_parse(const char *s, const char *what, synth_method_t *out,
                               tn_err_t *err) {
  for (int m = 0; m < SYNTH_NMETHODS; m++) {
    if (strcmp(s, method_names[m]) == 0) {
      if (!synth_method_available((synth_method_t)m))
        return tn_err_set(err, TN_INVAL, "%s: this build of tenet has no %s (built without GLPK)",
                          what, s);
      *out = (synth_method_t)m;
      return TN_OK;
    }
  }
  const char *near = tn_suggest(s, method_names, SYNTH_NMETHODS, sizeof *method_names);
  if (near != NULL)
    return tn_err_set(err, TN_INVAL, "%s: unknown algorithm '%s' (did you mean '%s'?)", what, s,
                      near);
  return tn_err_set(
      err, TN_INVAL,
      "%s: unknown algorithm '%s' (use auto, greedy, milp, ring, direct, trees, forest, "
      "twostep or dims)",
      what, s);
}

void synth_result_free(synth_result_t *r) {
  if (r == NULL) return;
  algo_free(r->algo);
  r->algo = NULL;
  tn_vec_free(&r->first_ties);
  r->first_known = false;
}

static void rec_tie(void *ctx, const sim_tie_t *v) {
  synth_tie_rec_t *rec = ctx;
  tn_err_t e = {0};
  if (!rec->failed && tn_vec_push(&rec->ties, v, &e) != TN_OK) rec->failed = true;
}

void synth_i_tie_rec_start(synth_tie_rec_t *rec, sim_opts_t *so) {
  tn_vec_free(&rec->ties);
  tn_vec_init(&rec->ties, sizeof(sim_tie_t));
  rec->failed = false;
  so->on_tie = rec_tie;
  so->tie_ctx = rec;
  so->tie_window_ps = SIM_STRICT_FIRST_WINDOW_PS;
}

void synth_i_tie_rec_take(synth_tie_rec_t *rec, synth_result_t *out) {
  tn_vec_free(&out->first_ties);
  out->first_ties = rec->ties;
  out->first_known = !rec->failed;
  tn_vec_init(&rec->ties, sizeof(sim_tie_t));
}

tn_status_t synth_i_lower_with_first_run(const schedule_t *s, tn_coll_t coll, const char *name,
                                         synth_result_t *out, tn_err_t *err) {
  uint32_t *send_id = NULL;
  tn_status_t st = tn_malloc((size_t)schedule_len(s) + 1, sizeof *send_id, &send_id, err);
  if (st == TN_OK) st = algo_from_schedule_ids(s, coll, name, &out->algo, send_id, err);
  if (st == TN_OK) out->time_ps = s->time_ps;
  tn_vec_free(&out->first_ties);
  tn_vec_init(&out->first_ties, sizeof(sim_tie_t));
  if (st == TN_OK) st = tn_vec_reserve(&out->first_ties, s->ties.len, err);
  for (size_t i = 0; st == TN_OK && i < s->ties.len; i++) {
    const ten_tie_t *v = &TN_VEC_AT(&s->ties, ten_tie_t, i);
    const uint64_t x[4] = {v->first, v->second, v->cause1, v->cause2};
    uint32_t rank[4], id[4];
    for (int j = 0; j < 4; j++)
      rank[j] = schedule_xfer(s, (uint32_t)x[j])->src, id[j] = send_id[x[j]];
    sim_tie_t w = {.link = v->link,
                   .first_rank = rank[0],
                   .first_id = id[0],
                   .second_rank = rank[1],
                   .second_id = id[1],
                   .first_waited = v->waited1,
                   .second_waited = v->waited2,
                   .first_cause_rank = rank[2],
                   .first_cause_id = id[2],
                   .second_cause_rank = rank[3],
                   .second_cause_id = id[3],
                   .gap_ps = v->gap_ps};
    st = tn_vec_push(&out->first_ties, &w, err);
  }
  out->first_known = st == TN_OK && s->ties_kept;
  free(send_id);
  return st;
}

static tn_status_t strict_once(const topo_t *t, synth_result_t *r, sim_strict_fn fn, void *ctx,
                               sim_strict_report_t *rep, tn_err_t *err) {
  sim_first_run_t first = {r->time_ps, r->first_ties.data, r->first_ties.len};
  /* with a plan, a set that misses it is kept to its order (sim_make_strict_planned) */
  tn_status_t st = sim_make_strict_planned(t, &r->algo, r->first_known ? &first : NULL, r->plan_ps,
                                           fn, ctx, rep, err);
  if (st == TN_OK) r->unproofed_ps = rep->first_ps;
  tn_vec_free(&r->first_ties); /* of the set as it was */
  r->first_known = false;
  return st;
}

tn_status_t synth_i_make_strict(const topo_t *t, tn_coll_t coll, uint64_t size,
                                const synth_opts_t *o, synth_result_t *r, sim_strict_fn fn,
                                void *ctx, sim_strict_report_t *rep, tn_err_t *err) {
  tn_status_t st = strict_once(t, r, fn, ctx, rep, err);
  bool halve = r->method == SYNTH_FOREST && o->chunks_per_npu == 0;
  for (int h = 0; st == TN_OK && halve && h < FOREST_GATE_HALVINGS; h++) {
    uint32_t k = r->algo->chunks_per_npu;
    /* (gates that made the set faster cost nothing) */
    if (k < 2 || rep->time_ps <= rep->first_ps ||
        rep->time_ps - rep->first_ps <= rep->first_ps / 1000 * FOREST_GATE_PERMILLE)
      break;
    /* both sets are held at once: only when both fit under the cap (one-thread figures,
     * as every choice, so the outcome does not depend on the threads) */
    if (forest_mem_halving(t, coll, size, k, 1) > tn_mem_cap()) break;
    if (r->halved_from == 0) r->halved_from = k;
    synth_opts_t at = *o;
    at.chunks_per_npu = k / 2;
    synth_result_t h2 = {.method = SYNTH_FOREST};
    sim_strict_report_t rep2;
    st = synth_i_planned(t, coll, size, &at, SYNTH_FOREST, &h2, err);
    if (st == TN_OK && fn != NULL) st = synth_i_prepare(t, h2.algo, err);
    if (st == TN_OK) st = strict_once(t, &h2, NULL, NULL, &rep2, err);
    bool better = st == TN_OK && rep2.time_ps < rep->time_ps;
    if (better) {
      algo_free(r->algo);
      r->algo = h2.algo, h2.algo = NULL;
      r->unproofed_ps = h2.unproofed_ps, r->plan_ps = h2.plan_ps;
      *rep = rep2;
      if (fn != NULL) st = fn(ctx, r->algo, err); /* its last call is on the set returned */
    }
    synth_result_free(&h2);
    if (!better) break;
  }
  return st;
}

/* The baselines do not look at the fabric, so connectivity is checked here for them; the
 * planners refuse a disconnected fabric themselves. */
/* The servers of a switch fabric, for Two-Step: each NPU's server is the switch its
 * fastest link to a switch reaches (the lowest id among equals); member lists the NPUs
 * server by server. TN_INVAL unless every NPU has one and the servers (2 or more) hold
 * equally many NPUs (2 or more). */
static tn_status_t servers(const topo_t *t, uint32_t *member, uint32_t *groups, tn_err_t *err) {
  uint32_t n = t->npus, nodes = topo_nodes(t);
  uint32_t *server = NULL, *count = NULL;
  tn_status_t st = tn_calloc(n, sizeof *server, &server, err);
  if (st == TN_OK) st = tn_calloc(nodes + 1u, sizeof *count, &count, err);
  for (uint32_t v = 0; st == TN_OK && v < n; v++) {
    server[v] = UINT32_MAX;
    double best = 0;
    for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
      const topo_link_t *l = &t->links[t->out_link[i]];
      if (l->dst < n) continue;
      if (l->bandwidth_GBps > best || (l->bandwidth_GBps == best && l->dst < server[v]))
        best = l->bandwidth_GBps, server[v] = l->dst;
    }
    if (server[v] == UINT32_MAX)
      st = tn_err_set(err, TN_INVAL,
                      "twostep: NPU %u of '%s' is on no switch (Two-Step needs "
                      "servers: NPUs behind switches)",
                      v, t->name);
    else
      count[server[v]]++;
  }
  uint32_t g = 0, size = 0, fill = 0;
  for (uint32_t w = n; st == TN_OK && w < nodes; w++) {
    if (count[w] == 0) continue;
    if (size != 0 && count[w] != size)
      st = tn_err_set(err, TN_INVAL, "twostep: the servers of '%s' differ in size (%u and %u NPUs)",
                      t->name, size, count[w]);
    size = count[w], g++;
    for (uint32_t v = 0; v < n; v++)
      if (server[v] == w) member[fill++] = v;
  }
  if (st == TN_OK && (g < 2 || size < 2))
    st = tn_err_set(err, TN_INVAL, "twostep: '%s' has %u server(s) of %u NPU(s); it needs 2 of 2",
                    t->name, g, size);
  *groups = g;
  free(server);
  free(count);
  return st;
}

tn_status_t synth_i_sim_within(const topo_t *t, const algo_t *a, const sim_opts_t *opts,
                               sim_result_t *r, tn_err_t *err) {
  uint64_t bound = 0;
  if (opts->stop_after_ps != 0) {
    tn_status_t st = sim_link_bound_ps(t, a, &bound, err);
    if (st != TN_OK) return st;
  }
  if (opts->stop_after_ps == 0 || bound <= opts->stop_after_ps) return sim_run(t, a, opts, r, err);
  memset(r, 0, sizeof *r);
  r->stopped = true;
  r->time_ps = bound;
  return TN_OK;
}

/* One configuration of a baseline: Ring one way or both ways round, k pieces per block. */
typedef struct base_cfg {
  bool both;
  uint32_t k;
} base_cfg_t;

/* One configuration built and simulated, its simulation stopped past `stop` (nonzero). */
typedef struct base_try {
  const topo_t *t;
  tn_coll_t coll;
  uint64_t size;
  synth_method_t m;
  base_cfg_t cfg;
  uint64_t stop;
  algo_t *a;
  tn_status_t bs, st; /* the build's status (not TN_OK: the configuration does not fit) */
  tn_err_t be, e;
  sim_result_t r;
  synth_tie_rec_t ties; /* of the run: a whole run is order-proofing's first */
  bool keep_ties;       /* record them (synth_baseline's callers have no use for them) */
} base_try_t;

static void try_config(base_try_t *x) {
  sim_opts_t so = {.stop_after_ps = x->stop};
  if (x->keep_ties) synth_i_tie_rec_start(&x->ties, &so);
  x->bs = x->m == SYNTH_RING
              ? algo_ring_both(x->coll, x->t->npus, x->size, x->cfg.k, x->cfg.both, &x->a, &x->be)
              : algo_direct(x->coll, x->t->npus, x->size, x->cfg.k, &x->a, &x->be);
  if (x->bs != TN_OK) return;
  x->st = synth_i_sim_within(x->t, x->a, &so, &x->r, &x->e);
}

static void try_item(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  try_config(&((base_try_t *)ctx)[i]);
}

/* Configurations are simulated side by side (each stopped at limit_ps only) up to this many
 * NPUs, where two sets in memory at once cost little; above it one after another. */
#define SIDE_BY_SIDE_NPUS 256u

/* The largest configuration best_baseline tries: Ring both directions in 8 pieces, Direct
 * in 4 (the last of ring_cfg and direct_cfg), or the pieces asked for. */
#define RING_MOST_K 8u
#define DIRECT_MOST_K 4u

/* The MILP's run: the greedy's plan at k (its warm start; checked by the greedy's own
 * estimate), then the MILP's models from it (milp_mem_estimate, checked by milp_solve
 * before GLPK sees each); the larger figure. */
static uint64_t milp_estimate(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k,
                              bool searched, unsigned threads) {
  uint64_t g = greedy_mem_estimate(t, size, k ? k : 1, coll, searched, threads);
#ifdef TENET_HAVE_MILP
  if (coll == TN_ALLTOALL) return 0;
  greedy_opts_t go = {.chunks_per_npu = k};
  schedule_t warm;
  tn_err_t e = {0};
  uint64_t m = 0;
  if (greedy_run_for(t, coll, size, &go, &warm, &e) == TN_OK) {
    milp_opts_t mo;
    milp_opts_init(&mo);
    mo.chunks_per_npu = warm.chunks_per_npu;
    mo.warm = &warm;
    m = milp_mem_estimate(t, size, &mo);
  }
  schedule_free(&warm);
  return m > g ? m : g;
#else
  (void)size;
  return coll == TN_ALLTOALL ? 0 : g;
#endif
}

/* Order-proofing records every pair of messages that enter a link within
 * SIM_STRICT_FIRST_WINDOW_PS of each other; where a piece crosses a link in less than that
 * window (1 KiB at 50 GB/s, 8 KiB at 300), nearly every message on it pairs with the next.
 * A baseline's figure (algo/, which knows no fabric) is the same per message on every
 * fabric; this is what such links add: per message, the links of its route that short a
 * piece crosses in the window, for the Ring's neighbours (i to i + 1) or Direct's pairs
 * (every 16th source, all destinations: deterministic, and O(n^2 / 16) routes at most), at
 * BASE_PER_NEAR bytes each (measured: mesh-16x16, torus-16x8, switch-128 and
 * hierarchical-16x8 at 1 MiB against 64 MiB). The Ring's pieces reach every link at the
 * pace of its slowest: where some neighbour's route crosses a link too slow for the window,
 * its near links pair only what the two directions send at once, counted at half
 * (hierarchical-16x8, whose rails take 1 KiB in 41 ns: All-Gather at 1 MiB peaks 84.5 MB on
 * one thread, 20% over 64 MiB's, where all counted gave 1.22 times it). 0 when no link is
 * that fast for the piece or the routes cannot be built. */
#define BASE_PER_NEAR 130u
/* greedy/ (below sim/) counts its pieces' pairs in the same window */
_Static_assert(GREEDY_PAIR_WINDOW_PS == SIM_STRICT_FIRST_WINDOW_PS, "greedy's pair window");
static uint64_t near_mem(const topo_t *t, uint64_t piece, uint64_t msgs, bool ring) {
  double most = 0.0;
  for (uint32_t l = 0; l < t->nlinks; l++)
    if (t->links[l].bandwidth_GBps > most) most = t->links[l].bandwidth_GBps;
  /* bytes a link moves in the window (GB/s: 2^30 bytes per second) */
  const double window = SIM_STRICT_FIRST_WINDOW_PS / 1000.0 * 1.073741824;
  if (t->npus < 2 || (double)piece > most * window) return 0;
  topo_routes_t *r = NULL;
  tn_err_t e = {0};
  if (topo_routes_create(t, &r, &e) != TN_OK) return 0;
  uint64_t near = 0, routes = 0;
  bool slow = false; /* a Ring neighbour's route crosses a link the piece takes longer on */
  uint32_t n = t->npus, step = ring ? 1 : 16;
  for (uint32_t s = 0; s < n; s += step)
    for (uint32_t d = ring ? (s + 1) % n : 0; d < n; d = ring ? n : d + 1) {
      if (d == s) continue;
      routes++;
      for (uint32_t v = s, hops = 0, l;
           hops < n + t->switches && (l = topo_route_next(r, v, d)) != TOPO_NO_LINK;
           hops++, v = t->links[l].dst) {
        bool fast = (double)piece <= t->links[l].bandwidth_GBps * window;
        near += fast, slow = slow || !fast;
      }
    }
  topo_routes_free(r);
  if (ring && slow) near /= 2;
  return routes ? msgs * near / routes * BASE_PER_NEAR : 0; /* the same at any threads */
}

/* A baseline's figure: algo/'s for its largest configuration, and near_mem for its pieces. */
static uint64_t baseline_mem(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                             uint32_t k, unsigned threads) {
  uint64_t n = t->npus, msgs = n * (n > 0 ? n - 1 : 0) * k * (coll == TN_ALLREDUCE ? 2u : 1u);
  uint64_t a = m == SYNTH_RING ? algo_ring_mem_estimate(coll, t->npus, k, threads)
                               : algo_direct_mem_estimate(coll, t->npus, k, threads);
  if (coll == TN_ALLTOALL || n == 0) return a;
  uint64_t near = near_mem(t, size / (n * k), msgs, m == SYNTH_RING);
  return a + near < a ? UINT64_MAX : a + near;
}

uint64_t synth_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                            uint32_t chunks_per_npu, unsigned threads) {
  uint32_t k = chunks_per_npu;
  switch (m) {
  case SYNTH_RING: return baseline_mem(t, coll, size_bytes, m, k ? k : RING_MOST_K, threads);
  case SYNTH_DIRECT: return baseline_mem(t, coll, size_bytes, m, k ? k : DIRECT_MOST_K, threads);
  case SYNTH_TWOSTEP: return algo_two_step_mem_estimate(t->npus, k ? k : 1);
  case SYNTH_GREEDY:
    return coll == TN_ALLTOALL
               ? greedy_alltoall_mem_estimate(t, size_bytes, k, SIM_STRICT_FIRST_WINDOW_PS, threads)
               : greedy_mem_estimate(t, size_bytes, k ? k : 1, coll, k == 0, threads);
  case SYNTH_MILP: return milp_estimate(t, coll, size_bytes, k, k == 0, threads);
  case SYNTH_TREES: {
    trees_opts_t o = {.chunks_per_npu = k};
    return trees_mem_estimate(t->npus, size_bytes, &o, threads);
  }
  case SYNTH_FOREST:
    return coll == TN_ALLTOALL ? 0 : forest_mem_estimate(t, coll, size_bytes, k, threads);
  case SYNTH_DIMS: return coll == TN_ALLTOALL ? 0 : dims_mem_estimate(t, coll, threads);
  case SYNTH_AUTO:
  case SYNTH_NMETHODS: break;
  }
  return 0;
}

/* Direct's configurations (whole blocks, then DIRECT_MOST_K pieces) are each built and
 * simulated with their pairs recorded, but only the one kept is order-proofed, verified and
 * written: a configuration's trial alone was measured at half the whole run's figure above
 * the process (All-Reduce 1 MiB at 4 pieces: mesh-16x16 587 MB of 1,165, mesh-8x8 20.9 of
 * 35.9; one thread). Its All-Reduce on a mesh keeps whole blocks at small sizes. */
static uint64_t direct_trial(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k,
                             unsigned threads) {
  uint64_t whole = baseline_mem(t, coll, size, SYNTH_DIRECT, k, threads);
  return whole <= ALGO_MEM_PROCESS ? whole : ALGO_MEM_PROCESS + (whole - ALGO_MEM_PROCESS) / 2;
}

/* The figure a baseline is checked against before any configuration is built: with k
 * given, or for Ring (it keeps 8 pieces both ways on every fabric measured, so it is
 * refused at once rather than after building), the largest configuration's whole run;
 * Direct's, the larger of its largest trial and the whole run at whole blocks (no
 * configuration kept needs less), the kept one's checked once kept (best_baseline). */
static uint64_t baseline_before(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                                uint32_t k, unsigned threads) {
  if (k != 0 || m != SYNTH_DIRECT || coll == TN_ALLTOALL)
    return synth_mem_estimate(t, coll, size, m, k, threads);
  uint64_t trial = direct_trial(t, coll, size, DIRECT_MOST_K, threads);
  uint64_t whole = baseline_mem(t, coll, size, m, 1, threads);
  return trial > whole ? trial : whole;
}

/* While greedy_reduction searches, the greedy's own choice is held, built and simulated
 * with its pairs recorded (not order-proofed, verified or written), beside the search's
 * sets. Where the search then keeps a coarser count, that phase can peak above the kept
 * count's whole run: leaf-32 All-Reduce at 64 MiB keeps 5 chunks of the greedy's 16 and
 * peaks at 25.1-25.4 MB (26.3-29.4 on two threads) against the 5 chunks' figure of 20.4
 * (22.6). Counted here as Direct's trial is: half the own choice's whole figure above the
 * greedy's process, 22.9 (25.8) there. The own choice is planned again to know it (as
 * milp_estimate plans the warm start); 0 when it is not finer than kept. */
static uint64_t greedy_search_mem(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t kept,
                                  unsigned threads) {
  greedy_opts_t go = {.chunks_per_npu = 0};
  schedule_t own;
  tn_err_t e = {0};
  uint64_t held = 0;
  if (greedy_run_for(t, coll, size, &go, &own, &e) == TN_OK && own.chunks_per_npu > kept) {
    uint64_t whole = greedy_mem_estimate(t, size, own.chunks_per_npu, coll, true, threads);
    uint64_t base = greedy_mem_estimate(t, size, 0, coll, false, threads);
    held = whole <= base ? whole : base + (whole - base) / 2;
  }
  schedule_free(&own);
  return held;
}

uint64_t synth_mem_kept(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                        uint32_t asked, uint32_t kept, unsigned threads) {
  if (m == SYNTH_FOREST && coll != TN_ALLTOALL && kept != 0) {
    uint64_t plan = forest_plan_mem_estimate(t, coll, size_bytes, asked, threads);
    uint64_t run = forest_mem_estimate(t, coll, size_bytes, kept, threads);
    return plan > run ? plan : run;
  }
  if (m == SYNTH_DIRECT && coll != TN_ALLTOALL && asked == 0 && kept != 0) {
    uint64_t trial = direct_trial(t, coll, size_bytes, DIRECT_MOST_K, threads);
    uint64_t run = baseline_mem(t, coll, size_bytes, m, kept, threads);
    return trial > run ? trial : run;
  }
  bool chosen = (m == SYNTH_GREEDY || m == SYNTH_MILP) && coll != TN_ALLTOALL;
  if (!chosen || kept == 0 || asked != 0)
    return synth_mem_estimate(t, coll, size_bytes, m, asked, threads);
  bool searched = coll != TN_ALLGATHER; /* greedy_reduction made it */
  uint64_t run = m == SYNTH_MILP
                     ? milp_estimate(t, coll, size_bytes, kept, searched, threads)
                     : greedy_mem_estimate(t, size_bytes, kept, coll, searched, threads);
  uint64_t held = searched ? greedy_search_mem(t, coll, size_bytes, kept, threads) : 0;
  return held > run ? held : run;
}

/* A baseline at its best, as practitioners run it: Ring in one direction or as the two
 * counter-rotating rings, with whole blocks or pipelined pieces; Direct with whole blocks
 * or pipelined pieces. Each configuration is simulated and the fastest kept (the earlier
 * among equal times); variant says which. k (when given) fixes the pieces per block.
 * A configuration's simulation stops as soon as it can no longer be kept: past limit_ps
 * (nonzero: the portfolio wants nothing slower) and, one after another, past the fastest
 * time so far; side by side, a configuration that ends slower than an earlier one is not
 * kept either, so the outcome is the same. When every configuration passes limit_ps,
 * out->algo stays NULL and *pruned is set. */
static tn_status_t best_baseline(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                                 uint32_t k, uint64_t limit_ps, bool keep_ties, bool *pruned,
                                 synth_result_t *out, tn_err_t *err) {
  static const base_cfg_t ring_cfg[] = {{false, 1}, {true, 2}, {true, RING_MOST_K}};
  static const base_cfg_t direct_cfg[] = {{false, 1}, {false, DIRECT_MOST_K}};
  base_cfg_t given[2] = {{false, k}, {true, k}};
  const base_cfg_t *cfg = k ? given : m == SYNTH_RING ? ring_cfg : direct_cfg;
  size_t n = k                 ? (m == SYNTH_RING ? 2 : 1)
             : m == SYNTH_RING ? sizeof ring_cfg / sizeof *ring_cfg
                               : sizeof direct_cfg / sizeof *direct_cfg;
  /* Refused over the cap before any configuration is built (baseline_before), named by the
   * largest (the last). */
  char what[96];
  snprintf(what, sizeof what, "%s: %u NPUs x %u chunks", synth_method_name(m), t->npus,
           cfg[n - 1].k);
  tn_status_t cst = tn_mem_check(what, baseline_before(t, coll, size, m, k, 1), err);
  if (cst != TN_OK) return cst;
  base_try_t x[3];
  memset(x, 0, sizeof x);
  for (size_t i = 0; i < n; i++)
    x[i] = (base_try_t){.t = t,
                        .coll = coll,
                        .size = size,
                        .m = m,
                        .cfg = cfg[i],
                        .stop = limit_ps,
                        .keep_ties = keep_ties};
  unsigned threads = tn_thread_count();
  bool side = n > 1 && threads > 1 && t->npus <= SIDE_BY_SIDE_NPUS;
  if (side) tn_parallel_for(n, threads < n ? threads : (unsigned)n, try_item, x);
  uint64_t best_ps = UINT64_MAX;
  tn_status_t st = TN_OK, first = TN_OK;
  tn_err_t first_err = {0};
  for (size_t i = 0; i < n; i++) {
    if (!side && st == TN_OK) {
      /* Kept only when faster than the best so far (time < best_ps) and within limit_ps. */
      uint64_t stop = best_ps != UINT64_MAX ? best_ps - 1 : 0;
      if (limit_ps != 0 && (stop == 0 || limit_ps < stop)) stop = limit_ps;
      x[i].stop = stop;
      try_config(&x[i]);
    }
    if (st == TN_OK && x[i].bs != TN_OK) { /* does not fit (too few bytes, one direction) */
      if (first == TN_OK) first = x[i].bs, first_err = x[i].be;
    } else if (st == TN_OK && x[i].st != TN_OK) {
      st = x[i].st;
      *err = x[i].e;
    } else if (st == TN_OK && x[i].r.stopped) {
      *pruned = true;
    } else if (st == TN_OK && x[i].r.time_ps < best_ps) {
      best_ps = x[i].r.time_ps;
      algo_free(out->algo);
      out->algo = x[i].a;
      x[i].a = NULL;
      /* Its whole run, ties and all, is the first run order-proofing would make. */
      synth_i_tie_rec_take(&x[i].ties, out);
      uint32_t pieces = coll == TN_ALLTOALL ? cfg[i].k : out->algo->chunks_per_npu;
      snprintf(out->variant, sizeof out->variant, "%s%u chunk%s",
               m != SYNTH_RING ? ""
               : cfg[i].both   ? "both directions, "
                               : "one direction, ",
               pieces, pieces == 1 ? "" : "s");
    }
    sim_result_free(&x[i].r);
    algo_free(x[i].a);
    x[i].a = NULL;
    tn_vec_free(&x[i].ties.ties);
  }
  if (st == TN_OK && out->algo == NULL && !*pruned) {
    st = first;
    *err = first_err;
  }
  if (out->algo != NULL) *pruned = false;
  if (st == TN_OK) out->time_ps = best_ps; /* simulated here: the portfolio need not again */
  if (st == TN_OK && out->algo != NULL && m == SYNTH_DIRECT && k == 0 && coll != TN_ALLTOALL) {
    /* Direct's kept configuration's whole run (order-proofing, verifying, writing) */
    snprintf(what, sizeof what, "%s: %u NPUs x %u chunks", synth_method_name(m), t->npus,
             out->algo->chunks_per_npu);
    st =
        tn_mem_check(what, synth_mem_estimate(t, coll, size, m, out->algo->chunks_per_npu, 1), err);
  }
  if (st != TN_OK) {
    algo_free(out->algo);
    out->algo = NULL;
    tn_vec_free(&out->first_ties);
    out->first_known = false;
  }
  return st;
}

tn_status_t synth_baseline(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                           synth_result_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  const char *why = NULL;
  if (m != SYNTH_RING && m != SYNTH_DIRECT)
    return tn_err_set(err, TN_INVAL, "a baseline is ring or direct, not %s", synth_method_name(m));
  if (!synth_method_applies(m, coll, &why)) return tn_err_set(err, TN_INVAL, "%s", why);
  tn_status_t st = topo_check_connected(t, err);
  bool pruned = false; /* no limit: never set */
  /* No pairs recorded: order-proofing's business, inside synth_run only. */
  if (st == TN_OK) st = best_baseline(t, coll, size_bytes, m, 0, 0, false, &pruned, out, err);
  if (st == TN_OK) out->method = m;
  tn_vec_free(&out->first_ties); /* order-proofing's business, inside synth_run only */
  out->first_known = false;
  return st;
}

/* MSCCLang's Two-Step All-to-All over the fabric's servers. */
static tn_status_t two_step(const topo_t *t, uint64_t size, uint32_t k, algo_t **out,
                            tn_err_t *err) {
  tn_status_t st = topo_check_connected(t, err);
  if (st != TN_OK) return st;
  uint32_t *member = NULL, groups = 0;
  st = tn_malloc(t->npus, sizeof *member, &member, err);
  if (st == TN_OK) st = servers(t, member, &groups, err);
  char what[96];
  snprintf(what, sizeof what, "twostep: %u NPUs x %u pieces", t->npus, k ? k : 1);
  if (st == TN_OK) st = tn_mem_check(what, algo_two_step_mem_estimate(t->npus, k ? k : 1), err);
  if (st == TN_OK) st = algo_two_step(t->npus, member, groups, size, k ? k : 1, out, err);
  free(member);
  return st;
}

/* The tree All-Reduce; its plan's time is exact (timed on the simulator's engine). */
static tn_status_t trees(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                         synth_result_t *out, tn_err_t *err) {
  /* A disconnected fabric is refused as every method refuses it; trees' own TN_INVAL
   * means only that its trees do not fit this fabric. */
  tn_status_t st = topo_check_connected(t, err);
  if (st != TN_OK) return st;
  trees_opts_t to = {.chunks_per_npu = o->chunks_per_npu,
                     .keep_ties = true,
                     .tie_window_ps = SIM_STRICT_FIRST_WINDOW_PS};
  schedule_t s;
  st = trees_allreduce(t, size, &to, &s, err);
  if (st == TN_OK) st = synth_i_lower_with_first_run(&s, coll, "trees", out, err);
  schedule_free(&s);
  return st;
}

bool synth_method_applies(synth_method_t m, tn_coll_t coll, const char **why) {
  const char *no = NULL;
  switch (m) {
  case SYNTH_RING:
    if (coll == TN_ALLTOALL) no = "ring: no All-to-All baseline (Direct is the usual one)";
    break;
  case SYNTH_TREES:
    if (coll != TN_ALLREDUCE) no = "trees makes All-Reduce only";
    break;
  case SYNTH_TWOSTEP:
    if (coll != TN_ALLTOALL) no = "twostep makes All-to-All only";
    break;
  case SYNTH_FOREST:
    if (coll == TN_ALLTOALL) no = "forest makes no All-to-All (greedy and direct do)";
    break;
  case SYNTH_MILP:
    if (coll == TN_ALLTOALL) no = "milp makes no All-to-All (greedy and direct do)";
    break;
  case SYNTH_DIMS:
    if (coll == TN_ALLTOALL) no = "dims makes no All-to-All (greedy and direct do)";
    break;
  default: break;
  }
  if (why) *why = no;
  return no == NULL;
}

static tn_status_t produce(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                           synth_method_t m, uint64_t limit_ps, bool *pruned, synth_result_t *out,
                           tn_err_t *err) {
  const char *why = NULL;
  if (m != SYNTH_AUTO && !synth_method_applies(m, coll, &why))
    return tn_err_set(err, TN_INVAL, "%s", why);
  switch (m) {
  case SYNTH_RING:
  case SYNTH_DIRECT: {
    tn_status_t st = topo_check_connected(t, err);
    return st == TN_OK ? best_baseline(t, coll, size, m, o->chunks_per_npu, limit_ps, true, pruned,
                                       out, err)
                       : st;
  }
  case SYNTH_TWOSTEP: return two_step(t, size, o->chunks_per_npu, &out->algo, err);
  case SYNTH_FOREST: {
    /* Refused over the cap before packing (the forest's NPU cap first: its message) by the
     * planning's figure and the coarsest count's; the kept count's is checked once kept
     * (forest_mem_before). */
    char what[96];
    snprintf(what, sizeof what, "forest: %u NPUs", t->npus);
    tn_status_t st =
        t->npus > FOREST_MAX_NPUS
            ? TN_OK
            : tn_mem_check(what, forest_mem_before(t, coll, size, o->chunks_per_npu, 1), err);
    return st == TN_OK ? synth_i_planned(t, coll, size, o, m, out, err) : st;
  }
  case SYNTH_GREEDY:
  case SYNTH_MILP: return synth_i_planned(t, coll, size, o, m, out, err);
  case SYNTH_DIMS: {
    if (coll != TN_ALLGATHER && !topo_is_symmetric(t))
      return tn_err_set(err, TN_INVAL,
                        "dims makes Reduce-Scatter and All-Reduce on two-way fabrics only (%s "
                        "has one-way links)",
                        t->name);
    char what[96];
    snprintf(what, sizeof what, "dims: %u NPUs", t->npus);
    tn_status_t st = tn_mem_check(what, synth_mem_estimate(t, coll, size, m, 0, 1), err);
    return st == TN_OK ? synth_i_planned(t, coll, size, o, m, out, err) : st;
  }
  case SYNTH_TREES: return trees(t, coll, size, o, out, err);
  case SYNTH_AUTO:
  case SYNTH_NMETHODS: break;
  }
  return tn_err_set(err, TN_INVAL, "no such synthesis method (%d)", (int)m);
}

tn_status_t synth_i_one(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                        synth_method_t m, synth_result_t *out, tn_err_t *err) {
  bool pruned = false;
  return produce(t, coll, size, o, m, 0, &pruned, out, err);
}

tn_status_t synth_i_one_within(const topo_t *t, tn_coll_t coll, uint64_t size,
                               const synth_opts_t *o, synth_method_t m, uint64_t limit_ps,
                               bool *pruned, synth_result_t *out, tn_err_t *err) {
  *pruned = false;
  return produce(t, coll, size, o, m, limit_ps, pruned, out, err);
}

tn_status_t synth_i_prepare(const topo_t *t, algo_t *a, tn_err_t *err) {
  tn_status_t st = algo_fill_idle(a, err);
  if (st == TN_OK) snprintf(a->fabric, sizeof a->fabric, "%s", t->name);
  return st;
}

/* Every method's set leaves the order of some same-instant events open (a producer plans
 * in one order; a runtime may pick another), so the one kept is made order-proof here, the
 * one place every set passes; its time is then the strict set's. (The portfolio makes its
 * candidates strict before it chooses, in rounds, since gates may cost more than the
 * nanoseconds they usually do: see portfolio.c.)
 * o->on_set runs beside the order-proof set's simulation. */
static tn_status_t finish(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                          synth_result_t *out, tn_err_t *err) {
  tn_status_t st = synth_i_prepare(t, out->algo, err);
  if (st == TN_OK && !out->strict) {
    sim_strict_report_t rep;
    st = synth_i_make_strict(t, coll, size, o, out, o->on_set, o->on_set_ctx, &rep, err);
    if (st == TN_OK)
      out->time_ps = rep.time_ps, out->strict = true, out->on_set_done = o->on_set != NULL;
  }
  return st;
}

/* The MILP never loses to the greedy it starts from: the greedy's finished set (exactly
 * what SYNTH_GREEDY with the same opts returns) replaces the MILP's when it is faster, or
 * when the MILP's model was too large at the greedy's own chunk count (no --chunks given;
 * a count the caller chose stays an error). milp_st and e are the MILP's outcome. */
static tn_status_t milp_or_greedy(const topo_t *t, tn_coll_t coll, uint64_t size,
                                  const synth_opts_t *o, tn_status_t milp_st, const tn_err_t *e,
                                  synth_result_t *out, tn_err_t *err) {
  bool fallback = milp_st == TN_LIMIT && o->chunks_per_npu == 0 && synth_i_milp_too_large(out);
  if (milp_st != TN_OK && !fallback) return tn_err_set(err, milp_st, "%s", e->msg);
  synth_result_t g = {0};
  tn_status_t st = synth_i_one(t, coll, size, o, SYNTH_GREEDY, &g, err);
  if (st == TN_OK) st = finish(t, coll, size, o, &g, err);
  if (st == TN_OK && (fallback || g.time_ps < out->time_ps)) {
    algo_free(out->algo);
    out->algo = g.algo;
    out->time_ps = g.time_ps;
    out->milp_status = "greedy";
    g.algo = NULL;
  }
  synth_result_free(&g);
  return st;
}

/* The threads a synthesis with m at chunks_per_npu k may use: tn_thread_count() when m's
 * estimate at that count fits under the memory cap, else one (tn_mem_threads: a second
 * thread holds more). Producers refuse and choose by their one-thread figure, so what a
 * run makes (or refuses) is the same at any thread count; here the run is kept within the
 * cap at its own. The forest at its automatic chunking (forest_mem_before) and Direct
 * (baseline_before) are counted by their figures before a count is kept. The MILP's figure (which
 * plans the greedy) is counted alike at every thread count, and auto's candidates are counted
 * by the portfolio. The greedy All-to-All's figure routes its paths (as its own checks
 * do); a second thread makes it up to 45% larger. */
static unsigned run_threads(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                            uint32_t k) {
  unsigned th = tn_thread_count();
  if (th < 2 || m == SYNTH_AUTO || m == SYNTH_MILP) return th;
  uint64_t need = m == SYNTH_FOREST && coll != TN_ALLTOALL ? forest_mem_before(t, coll, size, k, th)
                  : m == SYNTH_RING || m == SYNTH_DIRECT
                      ? baseline_before(t, coll, size, m, k, th)
                      : synth_mem_estimate(t, coll, size, m, k, th);
  return need <= tn_mem_cap() ? th : 1;
}

static tn_status_t run_one(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const synth_opts_t *opts, synth_result_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  synth_method_t m = opts->method;
  if (!synth_method_available(m))
    return tn_err_set(err, TN_INVAL, "synthesis method '%s' is not in this build",
                      synth_method_name(m));
  uint32_t k = opts->chunks_per_npu ? opts->chunks_per_npu : 1;
  if (size_bytes < (uint64_t)t->npus * k)
    return tn_err_set(err, TN_INVAL,
                      "size %llu B is smaller than one byte per chunk (%u NPUs x %u chunks)",
                      (unsigned long long)size_bytes, t->npus, k);
  /* No schedule beats a lower bound: when one passes the longest time tenet computes with,
   * refuse the case up front, named by its own collective (not by a planner's part). */
  tn_status_t bst = topo_size_check(t, coll, size_bytes, err);
  if (bst != TN_OK) return bst;
  double t0 = tn_wall_seconds();
  out->method = m;
  out->chosen = m == SYNTH_AUTO;
  tn_err_t e = {0}; /* the MILP's failure may still end in the greedy's set */
  unsigned limit = tn_thread_limit(run_threads(t, coll, size_bytes, m, opts->chunks_per_npu));
  tn_status_t st = m == SYNTH_AUTO ? synth_i_portfolio(t, coll, size_bytes, opts, out, err)
                                   : synth_i_one(t, coll, size_bytes, opts, m, out, &e);
  /* The greedy's, the forest's and Direct's chunking is known now: the rest (order-proofing
   * beside verifying and writing) runs on the threads the kept set's figure allows. */
  if (st == TN_OK && (m == SYNTH_GREEDY || m == SYNTH_FOREST || m == SYNTH_DIRECT)) {
    uint32_t kept = out->algo->chunks_per_npu; /* an All-to-All's: n x pieces per block */
    tn_thread_limit(run_threads(t, coll, size_bytes, m,
                                coll == TN_ALLTOALL && t->npus ? kept / t->npus : kept));
  }
  if (st == TN_OK) st = finish(t, coll, size_bytes, opts, out, m == SYNTH_AUTO ? err : &e);
  tn_thread_limit(limit);
  if (m == SYNTH_MILP)
    st = milp_or_greedy(t, coll, size_bytes, opts, st, &e, out, err);
  else if (st != TN_OK && m != SYNTH_AUTO)
    tn_err_set(err, st, "%s", e.msg);
  out->chosen = m == SYNTH_AUTO;
  out->synth_ms = (tn_wall_seconds() - t0) * 1e3;
  if (st != TN_OK) synth_result_free(out);
  return st;
}

/* Whether method m's result depends on the greedy's seed (the greedy itself, the MILP it
 * warm-starts and the portfolio that holds it). */
static bool seeded(synth_method_t m) {
  return m == SYNTH_GREEDY || m == SYNTH_MILP || m == SYNTH_AUTO;
}

tn_status_t synth_run(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                      const synth_opts_t *opts, synth_result_t *out, tn_err_t *err) {
  uint32_t n = opts->seeds > 1 && seeded(opts->method) ? opts->seeds : 1;
  if (opts->seeds > SYNTH_MAX_SEEDS) {
    memset(out, 0, sizeof *out);
    return tn_err_set(err, TN_INVAL, "%u seeds asked for; at most %u", opts->seeds,
                      SYNTH_MAX_SEEDS);
  }
  if (opts->seeds > 1 && opts->seed > UINT64_MAX - (opts->seeds - 1)) {
    memset(out, 0, sizeof *out);
    return tn_err_set(err, TN_INVAL, "seeds %llu .. %llu + %u pass 2^64 - 1",
                      (unsigned long long)opts->seed, (unsigned long long)opts->seed,
                      opts->seeds - 1);
  }
  synth_opts_t o = *opts;
  o.seeds = 1;
  /* on_set only where the set it sees is the one returned. */
  if (n > 1 || opts->method == SYNTH_MILP) o.on_set = NULL, o.on_set_ctx = NULL;
  tn_status_t st = run_one(t, coll, size_bytes, &o, out, err);
  out->seed = opts->seed;
  out->seeds_tried = 1;
  /* Best of n: every seed's set is order-proof and simulated (finish), so their times
   * compare as the files will run; a strictly faster one replaces the kept one, so the
   * lowest seed wins a tie. */
  for (uint32_t k = 1; st == TN_OK && k < n; k++) {
    synth_result_t r;
    o.seed = opts->seed + k;
    st = run_one(t, coll, size_bytes, &o, &r, err);
    if (st != TN_OK) break;
    double ms = out->synth_ms + r.synth_ms;
    if (r.time_ps < out->time_ps) {
      synth_result_free(out);
      *out = r;
      out->seed = o.seed;
    } else {
      synth_result_free(&r);
    }
    out->synth_ms = ms;
    out->seeds_tried = k + 1;
  }
  if (st != TN_OK) synth_result_free(out);
  return st;
}
