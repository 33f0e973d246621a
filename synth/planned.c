/* synth/planned.c — collectives from planned schedules. The greedy's and the MILP's are
 * All-Gather plans: an All-Gather is lowered as planned; a Reduce-Scatter is an
 * All-Gather planned on the transposed fabric and run backwards; an All-Reduce joins the
 * two halves chunk by chunk (on a symmetric fabric the transposed fabric is the fabric
 * itself, so one plan serves). The forest plans its Reduce-Scatter forward, and its
 * All-Reduce joins that to its All-Gather (see forest_reduce). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims/dims.h"
#include "forest/forest.h"
#include "sim/sim.h"
#include "greedy/greedy.h"
#include "synth/synth_internal.h"
#ifdef TENET_HAVE_MILP
#include "milp/milp.h"
#endif

#ifdef TENET_HAVE_MILP
/* Keeps the weaker MILP outcome of the (at most two) solves of one collective: feasible
 * over optimal, with its stop, and the larger gap. */
static void note_milp(synth_result_t *out, const milp_result_t *res) {
  bool first = out->milp_status == NULL;
  if (first || res->status != MILP_OPTIMAL) {
    if (first || strcmp(out->milp_status, milp_status_name(MILP_OPTIMAL)) == 0)
      out->milp_stop = milp_stop_name(res->stop);
    out->milp_status = milp_status_name(res->status);
  }
  if (first || res->gap > out->milp_gap) out->milp_gap = res->gap;
  if (res->mem_bytes > out->milp_mem) out->milp_mem = res->mem_bytes;
}

/* The MILP, warm-started by the greedy's plan with the same chunking: the greedy's own
 * choice unless told otherwise, so that the MILP starts where the greedy ends. */
static tn_status_t plan_milp(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                             schedule_t *s, synth_result_t *out, tn_err_t *err) {
  greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = o->chunks_per_npu};
  schedule_t warm;
  tn_status_t st = greedy_run_for(t, coll, size, &g, &warm, err);
  if (st != TN_OK) return st;
  milp_opts_t m;
  milp_opts_init(&m);
  if (o->time_limit_s > 0) m.time_limit_s = o->time_limit_s;
  if (o->node_limit > 0) m.node_limit = o->node_limit;
  if (o->iter_limit > 0) m.iter_limit = o->iter_limit;
  m.chunks_per_npu = warm.chunks_per_npu;
  m.warm = &warm;
  m.verbose = o->verbose;
  /* Timing-only dependencies keep the replay at the MILP's objective; the Reduce-Scatter
   * reversal reads every dependency as data, so they are for All-Gather only. */
  m.gate_sends = coll == TN_ALLGATHER;
  milp_result_t res;
  st = milp_solve(t, size, &m, s, &res, err);
  schedule_free(&warm);
  if (st == TN_OK) note_milp(out, &res);
  if (st == TN_LIMIT && res.model_too_large) out->milp_stop = milp_stop_name(MILP_STOP_SIZE);
  return st;
}
#endif

bool synth_i_milp_too_large(const synth_result_t *r) {
#ifdef TENET_HAVE_MILP
  return r->milp_stop != NULL && strcmp(r->milp_stop, milp_stop_name(MILP_STOP_SIZE)) == 0;
#else
  (void)r;
  return false;
#endif
}

/* The forest has kept a count (its automatic chunking plans several; synth/ checked the
 * planning's figure before packing): the rest of the run (lowering, order-proofing,
 * verifying, writing) is checked by that count's figure, one thread's as every refusal. */
static tn_status_t forest_kept(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k,
                               tn_err_t *err) {
  char what[96];
  snprintf(what, sizeof what, "forest: %u NPUs x %u chunks", t->npus, k);
  return tn_mem_check(what, forest_mem_estimate(t, coll, size, k, 1), err);
}

/* The threads the kept forest set is lowered on: those of the run, or one where the kept
 * count's figure at them is over the cap (tn_mem_threads; the output is the same). */
static unsigned forest_threads(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k) {
  unsigned th = tn_thread_count();
  return th < 2 || forest_mem_estimate(t, coll, size, k, th) <= tn_mem_cap() ? th : 1;
}

/* Plans an All-Gather schedule on t (the fabric, or its transpose for a reversed half)
 * that will be lowered to coll. On failure *s is left empty (initialised), whichever
 * planner ran. */
static tn_status_t plan(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                        synth_method_t m, schedule_t *s, synth_result_t *out, tn_err_t *err) {
  tn_status_t st = TN_INVAL;
  if (m == SYNTH_GREEDY) {
    greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = o->chunks_per_npu};
    st = greedy_run_for(t, coll, size, &g, s, err);
  } else if (m == SYNTH_FOREST) {
    /* Its All-Gather plans three pacings, each meeting about 1.6 pairs per transfer
     * (hierarchical-16x8 1 GiB: 847,680 for 520,192 transfers): keeping them cost more
     * (0.25 s there) than the simulation they spare when the forest is kept. */
    forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu, .pace = true};
    st = forest_run(t, size, &f, s, err);
    if (st == TN_OK) st = forest_kept(t, coll, size, s->chunks_per_npu, err);
  } else if (m == SYNTH_DIMS) {
    /* Its replay times it; for an All-Gather it also keeps the pairs (see planned). */
    uint64_t window = coll == TN_ALLGATHER ? SIM_STRICT_FIRST_WINDOW_PS : UINT64_MAX;
    st = dims_allgather(t, size, o->chunks_per_npu, window, s, err);
  } else {
#ifdef TENET_HAVE_MILP
    st = plan_milp(t, coll, size, o, s, out, err);
#else
    (void)coll, (void)size, (void)o, (void)out;
    schedule_init(s, TN_ALLGATHER, 0, 1, 0);
    return tn_err_set(err, TN_INVAL, "this build of tenet has no MILP (built without GLPK)");
#endif
  }
  if (st != TN_OK) {
    schedule_free(s);
    schedule_init(s, TN_ALLGATHER, 0, 1, 0);
  }
  return st;
}

/* Reduce-Scatter or All-Reduce on an asymmetric fabric: the reversed half is planned on the
 * transposed fabric; an All-Reduce adds an All-Gather planned on t with the same chunking. */
static tn_status_t planned_asymmetric(const topo_t *t, tn_coll_t coll, uint64_t size,
                                      const synth_opts_t *o, synth_method_t m, synth_result_t *out,
                                      tn_err_t *err) {
  schedule_t rs, ag;
  schedule_init(&rs, TN_ALLGATHER, 0, 1, 0);
  schedule_init(&ag, TN_ALLGATHER, 0, 1, 0);
  topo_t *tt = NULL;
  const char *name = synth_method_name(m);
  tn_status_t st = topo_transpose(t, &tt, err);
  if (st == TN_OK) st = plan(tt, coll, size, o, m, &rs, out, err);
  if (st == TN_OK && coll == TN_REDUCESCATTER) {
    st = algo_from_schedule(&rs, coll, name, &out->algo, err);
  } else if (st == TN_OK) {
    synth_opts_t same = *o;
    same.chunks_per_npu = rs.chunks_per_npu;
    st = plan(t, TN_ALLGATHER, size, &same, m, &ag, out, err);
    if (st == TN_OK) st = algo_allreduce_from_schedules(&rs, &ag, name, &out->algo, err);
  }
  schedule_free(&rs);
  schedule_free(&ag);
  topo_free(tt);
  return st;
}

/* Whether the greedy's All-Reduce on t may be listed (listed()): its messages cross no
 * switch, and at most LISTED_MAX_NPUS NPUs, above which the list and the order-proofing of
 * a listed set grow with the transfers (torus-32x32 All-Reduce 1 GiB: 48.4 s to synthesize
 * when the listed set was kept, 12.5 s for dims'). */
#define LISTED_MAX_NPUS 256u
static bool listable(const topo_t *t) {
  return t->switches == 0 && t->npus <= LISTED_MAX_NPUS && topo_is_symmetric(t);
}

/* The staggered Reduce-Scatter plans the greedy's listed All-Reduce also tries: own chunk j
 * of every NPU released at j * f / (k - 1) of the plan's time, f in tenths. Measured at
 * 1 MiB, 16 chunks, f = 0.2 .. 0.5: mesh-8x8 and torus-8x8 gain most near 0.3-0.4 (1.213 ->
 * 1.143 and 1.122 -> 1.085 of the bound), mesh3d-4x4x4 at 0.5 (1.260 -> 1.177),
 * hypercube-64 at 0.2-0.4 (1.172 -> 1.125); mesh-16x8 and torus-16x8 lose at every f (0 is
 * kept there). Each costs a planning and a listing, so two are tried; none where the
 * plan's own listed halves are within STAGGER_ROOM of the bound already. */
static const uint32_t stagger_tenths[] = {3, 5};
#define STAGGER_ROOM_PERMILLE 10u
/* Where staggered plans are tried, every plan (the own one too) is listed twice: with the
 * sequence's keys, and with keys half the sequence's, half the critical path
 * (greedy_allreduce_listed's path_permille). Measured at 1 MiB (time/bound, the best
 * of all lists): torus-8x8 1.109 -> 1.096, hypercube-64 1.129 -> 1.093; mesh-8x8 (1.162),
 * mesh3d-4x4x4 (1.198) and mesh-16x8 (1.121) gain nothing. 350 and 650 per mille did no
 * better on those five. */
#define LISTED_PATH_PERMILLE 500u

/* Plans from roots (greedy_opts_t.roots): the listed All-Reduce also tries plans of the
 * kept chunking whose chunks start at the NPUs nearest the fabric's centre (latency
 * eccentricity within a half, and within a third, of the range from the least), the
 * Reduce-Scatter half staggered by half the plan's time (stagger_tenths' rule). A chunk
 * rooted at v needs about 2 ecc(v) of latency to gather and spread, so where latency counts
 * a corner is the slowest root. Tried only where twice the eccentricities' range is at least
 * ROOTED_ROOM of the bound (mesh-8x8: 6 us against 16.8 at 1 MiB, 11,250 at 1 GiB; never on
 * tori and hypercubes, whose range is 0: there the roots are the NPUs with all the bandwidth,
 * where some have less, list_rooted). Measured at 1 MiB over spreads 1/3 and 1/2,
 * staggers 0 to 1.2 and both keys (time/bound; before: 1.162, 1.121, 1.198): mesh-8x8 1.124
 * at the kept 8 chunks (1.103 at 16, 1.097 at 32), mesh-16x8 1.093, mesh3d-4x4x4 1.180; a
 * stagger of 0.5 and the sequence's keys gave the best of each. Finer chunks than the kept
 * count are not tried: `--chunks K` must give the set auto keeps at K, and a set of 4x the
 * chunks has 4x the messages to write, check and simulate. */
static const uint32_t rooted_spread_permille[] = {500, 333};
#define ROOTED_STAGGER_TENTHS 5u
#define ROOTED_ROOM_PERMILLE 10u

/* Each NPU's latency eccentricity along the fabric's routes (the largest route latency to
 * another NPU, topo_route_latency_ps; t is connected) into ecc (n entries). */
static tn_status_t route_ecc(const topo_t *t, uint64_t *ecc, tn_err_t *err) {
  topo_routes_t *r = NULL;
  tn_status_t st = topo_routes_create(t, &r, err);
  for (uint32_t u = 0; st == TN_OK && u < t->npus; u++) {
    ecc[u] = 0;
    for (uint32_t v = 0; v < t->npus; v++) {
      uint64_t lat = topo_route_latency_ps(r, u, v);
      if (lat != UINT64_MAX && lat > ecc[u]) ecc[u] = lat;
    }
  }
  if (st == TN_OK && topo_routes_out_of_memory(r))
    st = tn_err_set(err, TN_NOMEM, "out of memory building the routes of '%s'", t->name);
  topo_routes_free(r);
  return st;
}

/* x := the listed All-Reduce of rs and s, its keys blended with the critical path by
 * path_permille (greedy_allreduce_listed), when it ends before x (or x is empty); false
 * with *st set on out of memory or an internal error, true otherwise. */
static bool list_better(const topo_t *t, const schedule_t *rs, const schedule_t *s,
                        uint32_t path_permille, schedule_t *x, tn_status_t *st, tn_err_t *err) {
  schedule_t y;
  tn_err_t e = {0};
  tn_status_t ls = greedy_allreduce_listed(t, rs, s, path_permille, &y, &e);
  if (ls == TN_NOMEM || ls == TN_INTERNAL) {
    schedule_free(&y);
    *st = tn_err_set(err, ls, "%s", e.msg);
    return false;
  }
  if (ls == TN_OK && (schedule_len(x) == 0 || y.time_ps < x->time_ps)) {
    schedule_free(x);
    *x = y;
  } else {
    schedule_free(&y);
  }
  return true;
}

/* x := the best of x and the list of a plan from roots at s's chunking (roots[0..nroots)),
 * its Reduce-Scatter half staggered by ROOTED_STAGGER_TENTHS of the plan's time; as
 * list_better. A plan that cannot be made (say, over the memory cap) is passed over. */
static bool list_roots(const topo_t *t, uint64_t size, const synth_opts_t *o, uint32_t k,
                       const uint32_t *roots, uint32_t nroots, schedule_t *x, tn_status_t *st,
                       tn_err_t *err) {
  greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = k, .roots = roots, .nroots = nroots};
  schedule_t ag, rs;
  schedule_init(&rs, TN_ALLGATHER, 0, 1, 0);
  tn_err_t pe = {0};
  bool ok = true;
  tn_status_t ps = greedy_run_for(t, TN_ALLREDUCE, size, &g, &ag, &pe);
  if (ps == TN_OK) {
    g.stagger_ps = ag.time_ps / 10 * ROOTED_STAGGER_TENTHS / (k - 1);
    ps = greedy_run_for(t, TN_ALLREDUCE, size, &g, &rs, &pe);
  }
  if (ps == TN_OK) {
    ok = list_better(t, &rs, &ag, 0, x, st, err);
  } else if (ps == TN_NOMEM || ps == TN_INTERNAL) {
    *st = tn_err_set(err, ps, "%s", pe.msg), ok = false;
  }
  schedule_free(&rs);
  schedule_free(&ag);
  return ok;
}

/* The NPUs with the fabric's most egress and most ingress into roots (*nroots of them);
 * none when every NPU has both, or none has. */
static void strong_roots(const topo_t *t, uint32_t *roots, uint32_t *nroots) {
  double out = 0.0, in = 0.0;
  for (uint32_t u = 0; u < t->npus; u++) {
    if (topo_egress_GBps(t, u) > out) out = topo_egress_GBps(t, u);
    if (topo_ingress_GBps(t, u) > in) in = topo_ingress_GBps(t, u);
  }
  *nroots = 0;
  for (uint32_t u = 0; u < t->npus; u++)
    if (topo_egress_GBps(t, u) == out && topo_ingress_GBps(t, u) == in) roots[(*nroots)++] = u;
  if (*nroots == t->npus) *nroots = 0;
}

/* x := the best of x and the lists of the plans from roots at s's chunking (list_roots):
 * where the NPUs' eccentricities range over at least ROOTED_ROOM of the bound, the NPUs
 * nearest the centre (rooted_spread_permille); elsewhere, where some NPUs have less
 * bandwidth than the others (a dead or slow link beside them), the NPUs with all of it
 * (strong_roots): a chunk rooted at a weak NPU is gathered and spread through its fewer
 * links. Measured at 1 MiB, 8 chunks: torus-8x8-degraded 13.105 -> 12.860 us (1.247 ->
 * 1.224 of the bound); on the meshes the NPUs with four links root worse than the central
 * ones (mesh-8x8 1.170 against 1.124), which is why they are not tried there. As
 * list_better otherwise. */
static bool list_rooted(const topo_t *t, uint64_t size, const synth_opts_t *o, const schedule_t *s,
                        uint64_t bound, schedule_t *x, tn_status_t *st, tn_err_t *err) {
  uint32_t n = t->npus, k = s->chunks_per_npu, *roots = NULL, nroots = 0;
  uint64_t *ecc = NULL, lo = UINT64_MAX, hi = 0;
  *st = TN_OK;
  if (bound == 0 || k < 2) return true;
  *st = tn_malloc(n, sizeof *ecc, &ecc, err);
  if (*st == TN_OK) *st = tn_malloc(n, sizeof *roots, &roots, err);
  if (*st == TN_OK) *st = route_ecc(t, ecc, err);
  for (uint32_t u = 0; *st == TN_OK && u < n; u++) {
    if (ecc[u] < lo) lo = ecc[u];
    if (ecc[u] > hi) hi = ecc[u];
  }
  bool ok = *st == TN_OK;
  if (ok && (hi - lo) * 2 >= bound / 1000 * ROOTED_ROOM_PERMILLE) {
    for (size_t i = 0; ok && i < sizeof rooted_spread_permille / sizeof *rooted_spread_permille;
         i++) {
      uint64_t cut = lo + (hi - lo) * rooted_spread_permille[i] / 1000;
      nroots = 0;
      for (uint32_t u = 0; u < n; u++)
        if (ecc[u] <= cut) roots[nroots++] = u;
      ok = list_roots(t, size, o, k, roots, nroots, x, st, err);
    }
  } else if (ok) {
    strong_roots(t, roots, &nroots);
    if (nroots > 0) ok = list_roots(t, size, o, k, roots, nroots, x, st, err);
  }
  free(ecc);
  free(roots);
  return ok;
}

/* The greedy's All-Reduce on a listable fabric, its halves overlapped by list scheduling
 * (greedy_allreduce_listed): of plan s's own Reduce-Scatter and the staggered ones
 * (stagger_tenths), each listed with s's All-Gather and with alt's, the rarest-first plan,
 * when there is one (rarest_plan), each also with the critical path in the keys
 * (LISTED_PATH_PERMILLE), of the plans from roots (list_rooted), and of alt's own halves,
 * the one that
 * ends first, when it ends
 * before s run backwards and then forwards (2 s->time_ps + 1 ps, what the lowering of s
 * itself is kept to): lowers it into out (plan_ps its time, listed; s is freed first, to
 * hold less) and returns true with *st its status. False when none applies or is faster
 * (the caller lowers s); out of memory or an internal error ends the synthesis (returns
 * true with *st set). */
static bool listed(const topo_t *t, uint64_t size, const synth_opts_t *o, schedule_t *s,
                   const schedule_t *alt, synth_result_t *out, tn_status_t *st, tn_err_t *err) {
  if (!listable(t)) return false;
  schedule_t x;
  schedule_init(&x, TN_ALLREDUCE, 0, 1, 0);
  *st = TN_OK;
  bool ok = list_better(t, s, s, 0, &x, st, err);
  uint32_t k = s->chunks_per_npu;
  uint64_t bound = 0;
  tn_err_t e = {0};
  /* nothing more when the own halves' list is within STAGGER_ROOM of the bound */
  bool more = ok && schedule_len(&x) > 0 &&
              !(topo_lower_bound_ps(t, TN_ALLREDUCE, size, &bound, &e) == TN_OK &&
                synth_i_near_bound(x.time_ps, bound, STAGGER_ROOM_PERMILLE));
  if (more) ok = list_better(t, s, s, LISTED_PATH_PERMILLE, &x, st, err);
  for (size_t i = 0; ok && more && k >= 2 && i < sizeof stagger_tenths / sizeof *stagger_tenths;
       i++) {
    greedy_opts_t g = {.seed = o->seed,
                       .chunks_per_npu = k,
                       .stagger_ps = s->time_ps / 10 * stagger_tenths[i] / (k - 1)};
    schedule_t rs;
    tn_err_t pe = {0};
    tn_status_t ps = greedy_run_for(t, TN_ALLREDUCE, size, &g, &rs, &pe);
    /* with either All-Gather half: the own plan's or alt's (hypercube-64 1 MiB lists best
     * with the own half, 1.093 of the bound against 1.095; torus-8x8 with alt's, 1.089
     * against 1.096) */
    for (int h = 0; ps == TN_OK && ok && h < (alt ? 2 : 1); h++) {
      const schedule_t *ag = h ? alt : s;
      ok = list_better(t, &rs, ag, 0, &x, st, err) &&
           list_better(t, &rs, ag, LISTED_PATH_PERMILLE, &x, st, err);
    }
    if (ps == TN_NOMEM || ps == TN_INTERNAL) { /* others: that plan is passed over */
      *st = tn_err_set(err, ps, "%s", pe.msg), ok = false;
    }
    schedule_free(&rs);
  }
  if (ok && more) ok = list_rooted(t, size, o, s, bound, &x, st, err);
  if (ok && alt) /* the rarest-first plan's own halves (rarest_plan) */
    ok = list_better(t, alt, alt, 0, &x, st, err) &&
         (!more || list_better(t, alt, alt, LISTED_PATH_PERMILLE, &x, st, err));
  if (!ok) {
    schedule_free(&x);
    return true;
  }
  bool faster = schedule_len(&x) > 0 && x.time_ps < 2 * s->time_ps + 1;
  if (faster) {
    schedule_free(s);
    *st = algo_from_schedule(&x, TN_ALLREDUCE, synth_method_name(SYNTH_GREEDY), &out->algo, err);
    if (*st == TN_OK) out->plan_ps = x.time_ps, out->listed = true;
  }
  schedule_free(&x);
  return faster;
}

/* Whether some link joins two NPUs: the only links greedy_opts_t.rarest chooses for. */
static bool has_direct_links(const topo_t *t) {
  for (uint32_t l = 0; l < t->nlinks; l++)
    if (t->links[l].src < t->npus && t->links[l].dst < t->npus) return true;
  return false;
}

/* The greedy's plan s made again at its chunking with greedy_opts_t.rarest, into *alt
 * (*made) when it ends sooner; else *alt stays empty. The greedy's own order stays the
 * first choice (its plans are TACOS's and their own replays); the rarest-first one ends
 * sooner on most direct-connect fabrics at small sizes (1 MiB, the chunking kept:
 * hypercube-64 4.19 us against 4.32, mesh-16x8 11.54 against 11.98). A plan that cannot
 * be made is passed over (out of memory and internal errors end the run). */
#define RAREST_ROOM_PERMILLE 5u
static tn_status_t rarest_plan(const topo_t *t, tn_coll_t coll, uint64_t size,
                               const synth_opts_t *o, const schedule_t *s, schedule_t *alt,
                               bool *made, tn_err_t *err) {
  *made = false;
  schedule_init(alt, TN_ALLGATHER, 0, 1, 0);
  if (!has_direct_links(t) || schedule_len(s) == 0) return TN_OK;
  /* little to gain where the plan is within RAREST_ROOM of the All-Gather bound (the large
   * sizes on meshes and tori: torus-16x8 1 GiB, 1.0016, no faster rarest-first): a planning
   * spared (90 ms there). The per-NPU bound, never above the tight one, costs O(L) where
   * the tight one costs a cut search per call (1 s on torus-32x32), and this runs at every
   * count the reduction search tries. */
  uint64_t bound = 0;
  tn_err_t be = {0};
  if (topo_npu_bound_ps(t, TN_ALLGATHER, size, &bound, &be) == TN_OK &&
      synth_i_near_bound(s->time_ps, bound, RAREST_ROOM_PERMILLE))
    return TN_OK;
  greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = s->chunks_per_npu, .rarest = true};
  tn_err_t e = {0};
  schedule_free(alt);
  tn_status_t st = greedy_run_for(t, coll, size, &g, alt, &e);
  if (st == TN_OK && alt->time_ps < s->time_ps) {
    *made = true;
    return TN_OK;
  }
  schedule_free(alt);
  schedule_init(alt, TN_ALLGATHER, 0, 1, 0);
  return st == TN_NOMEM || st == TN_INTERNAL ? tn_err_set(err, st, "%s", e.msg) : TN_OK;
}

/* One planned collective on a symmetric fabric (or an All-Gather on any). */
static tn_status_t planned(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                           synth_method_t m, bool list, synth_result_t *out, tn_err_t *err) {
  schedule_t s, alt;
  tn_status_t st = plan(t, coll, size, o, m, &s, out, err);
  bool fifo = true; /* s is the greedy's own order: its replay (or another planner's plan) */
  bool have_alt = false;
  schedule_init(&alt, TN_ALLGATHER, 0, 1, 0);
  if (st == TN_OK && m == SYNTH_GREEDY)
    st = rarest_plan(t, coll, size, o, &s, &alt, &have_alt, err);
  /* A listed All-Reduce lists both plans (a faster All-Gather plan need not list
   * faster: hypercube-64 1 MiB, 1.093 of the bound from the own plan, 1.107 from the
   * rarest-first one alone); elsewhere the faster plan is s. */
  bool list_both = coll == TN_ALLREDUCE && list && listable(t);
  if (have_alt && !list_both) {
    schedule_t keep = s;
    s = alt, alt = keep;
    have_alt = false, fifo = false;
    schedule_free(&alt);
  }
  bool forest = st == TN_OK && m == SYNTH_FOREST;
  unsigned prev = forest ? tn_thread_limit(forest_threads(t, coll, size, s.chunks_per_npu)) : 0;
  if (st == TN_OK && coll == TN_ALLGATHER && (m == SYNTH_GREEDY || m == SYNTH_DIMS) && fifo) {
    /* The greedy's and dims' plans are what the simulator runs on their lowering, so their
     * replay (about half a simulation) gives the pairs order-proofing would first simulate
     * for: that run is spared. dims' plan comes replayed with its pairs already. */
    uint64_t plan_ps = s.time_ps;
    if (m == SYNTH_GREEDY) st = schedule_replay_ties(t, &s, SIM_STRICT_FIRST_WINDOW_PS, err);
    if (st == TN_OK && s.time_ps != plan_ps)
      st = tn_err_set(err, TN_INTERNAL, "%s: the plan's replay takes %llu ps, not its %llu",
                      synth_method_name(m), (unsigned long long)s.time_ps,
                      (unsigned long long)plan_ps);
    if (st == TN_OK) st = synth_i_lower_with_first_run(&s, coll, synth_method_name(m), out, err);
  } else if (st == TN_OK && m == SYNTH_GREEDY && coll == TN_ALLREDUCE && list &&
             listed(t, size, o, &s, have_alt ? &alt : NULL, out, &st, err)) {
    /* (lowered from the list schedule: out->plan_ps is its time) */
  } else if (st == TN_OK && !fifo && coll == TN_ALLGATHER) {
    st = algo_from_schedule_started(&s, synth_method_name(m), &out->algo, err);
    /* not its replay: order-proofing keeps the set to the plan's order */
    if (st == TN_OK) out->time_ps = s.time_ps, out->plan_ps = s.time_ps;
  } else if (st == TN_OK) {
    st = algo_from_schedule(&s, coll, synth_method_name(m), &out->algo, err);
    /* An All-Gather plan's time is exact; the other two are timed by simulation. A
     * Reduce-Scatter is the plan run backwards: it takes as long where its links keep
     * the plan's order, which order-proofing then sees to. */
    if (st == TN_OK && coll == TN_ALLGATHER) out->time_ps = s.time_ps;
    /* Its SEND ids follow the plan's order on every link (mirrored starts), so keeping
     * that order cannot make a cycle. An All-Reduce's follow the plan run backwards, then
     * forwards by planned start from 1 ps after its end (algo_from_schedule): that
     * sequence is a plan of 2T + 1 ps too, if not the fastest. Only the greedy's and dims'
     * plans are their replays (the MILP's times are its model's). */
    bool replayed = m == SYNTH_GREEDY || m == SYNTH_DIMS;
    if (st == TN_OK && replayed && coll == TN_REDUCESCATTER) out->plan_ps = s.time_ps;
    if (st == TN_OK && replayed && coll == TN_ALLREDUCE) out->plan_ps = 2 * s.time_ps + 1;
  }
  if (forest) tn_thread_limit(prev);
  schedule_free(&s);
  schedule_free(&alt);
  return st;
}

/* A forest All-Gather planned unpaced (every NPU forwards a chunk as it arrives, so the plan
 * is its own replay) run backwards is a Reduce-Scatter as long as the plan where its links
 * keep the plan's order, which order-proofing sees to (plan_ps), as the greedy's. Up the
 * same trees the forward planner waits at every relay for the slowest of its children.
 * On a symmetric fabric two such plans are made:
 * - the two-level trees' (forest_levels_apply), at the sizes the forest tries them (leaf-32
 *   at 1 MiB: 1.144 of the bound against forward's 1.321), and at larger ones up to
 *   REVERSED_LARGE_MAX_NPUS NPUs (spine-4x8 64 MiB 1.021 -> 1.004, 1 GiB 1.010 -> 1.002,
 *   about 0.3 s more; hierarchical-16x8, 128 NPUs, nothing for a second more);
 * - at the sizes the forest tries no two-level trees, the usual packing's, on a fabric
 *   with switches of up to PACKED_BACKWARDS_MAX_NPUS NPUs (unpaced, the packed trees of
 *   leaf-32 plan 1.027 at 64 MiB where forward's set is 1.055, and on rail-4x8-degraded
 *   without GPU 22's slow rail link 1.010 at 1 GiB against 1.038; on spine-4x8 and the
 *   fat-trees they need their pacing: 1.22).
 * The one whose plan ends first is kept (into *out, whose set it replaces) when it ends
 * before forward's time; trees that turn out not to apply are passed over. */
#define REVERSED_LARGE_MAX_NPUS 32u
#define PACKED_BACKWARDS_MAX_NPUS 64u
static bool levels_tried(const topo_t *t, uint64_t size) {
  forest_try_t tries[FOREST_TRIES];
  uint32_t m = forest_tries(t, size, tries);
  for (uint32_t i = 0; i < m; i++)
    if (tries[i].packing == FOREST_PACK_LEVELS) return true;
  return false;
}

/* *best := the forest's All-Gather with f when it ends before *best (or *have is false). */
static tn_status_t gather_better(const topo_t *t, uint64_t size, const forest_opts_t *f,
                                 schedule_t *best, bool *have, tn_err_t *err) {
  schedule_t ag;
  tn_err_t e = {0};
  tn_status_t st = forest_run(t, size, f, &ag, &e);
  if (st == TN_OK && (!*have || ag.time_ps < best->time_ps)) {
    if (*have) schedule_free(best);
    *best = ag, *have = true;
    return TN_OK;
  }
  schedule_free(&ag);
  if (st == TN_INFEASIBLE && f->packing == FOREST_PACK_LEVELS) return TN_OK;
  return st == TN_OK ? TN_OK : tn_err_set(err, st, "%s", e.msg);
}

static tn_status_t reversed_gathers(const topo_t *t, uint64_t size, const synth_opts_t *o,
                                    uint64_t forward_ps, synth_result_t *out, tn_err_t *err) {
  if (!topo_is_symmetric(t)) return TN_OK;
  bool small = levels_tried(t, size), have = false;
  schedule_t ag;
  tn_status_t st = TN_OK;
  if (forest_levels_apply(t) && (small || t->npus <= REVERSED_LARGE_MAX_NPUS)) {
    forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu, .packing = FOREST_PACK_LEVELS};
    st = gather_better(t, size, &f, &ag, &have, err);
  }
  if (st == TN_OK && !small && t->switches > 0 && t->npus <= PACKED_BACKWARDS_MAX_NPUS) {
    forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu};
    st = gather_better(t, size, &f, &ag, &have, err);
  }
  if (st == TN_OK && have && ag.time_ps < forward_ps) {
    algo_t *a = NULL;
    st = forest_kept(t, TN_REDUCESCATTER, size, ag.chunks_per_npu, err);
    if (st == TN_OK) {
      unsigned prev = tn_thread_limit(forest_threads(t, TN_REDUCESCATTER, size, ag.chunks_per_npu));
      st = algo_from_schedule(&ag, TN_REDUCESCATTER, synth_method_name(SYNTH_FOREST), &a, err);
      tn_thread_limit(prev);
    }
    if (st == TN_OK) {
      algo_free(out->algo);
      out->algo = a;
      /* what it takes is known once it is order-proof (its own run may miss the plan) */
      out->time_ps = 0, out->plan_ps = ag.time_ps;
      tn_vec_free(&out->first_ties);
      tn_vec_init(&out->first_ties, sizeof(sim_tie_t));
      out->first_known = false;
    }
  }
  if (have) schedule_free(&ag);
  return st;
}

/* The forest's Reduce-Scatter is planned forward up its trees (forest_run_reduce), or is
 * an unpaced All-Gather of the forest run backwards where that is faster (reversed_gathers); its
 * All-Reduce joins that to its paced All-Gather chunk by chunk and times the whole on the
 * engine (forest_allreduce), both exactly as the simulator runs them. */
static tn_status_t forest_reduce(const topo_t *t, tn_coll_t coll, uint64_t size,
                                 const synth_opts_t *o, synth_result_t *out, tn_err_t *err) {
  forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu,
                     .pace = true,
                     .keep_ties = true,
                     .tie_window_ps = SIM_STRICT_FIRST_WINDOW_PS};
  schedule_t done;
  tn_status_t st = coll == TN_ALLREDUCE ? forest_allreduce(t, size, &f, &done, err)
                                        : forest_run_reduce(t, size, &f, &done, err);
  if (st == TN_OK) st = forest_kept(t, coll, size, done.chunks_per_npu, err);
  /* The run that timed the set also gives the pairs order-proofing would first simulate
   * for: the All-Reduce's replay, the Reduce-Scatter's plan. */
  if (st == TN_OK) {
    unsigned prev = tn_thread_limit(forest_threads(t, coll, size, done.chunks_per_npu));
    st = synth_i_lower_with_first_run(&done, coll, synth_method_name(SYNTH_FOREST), out, err);
    tn_thread_limit(prev);
  }
  if (st == TN_OK) out->time_ps = done.time_ps;
  if (st == TN_OK && coll == TN_REDUCESCATTER)
    st = reversed_gathers(t, size, o, done.time_ps, out, err);
  schedule_free(&done);
  return st;
}

/* All-to-All: the greedy's routed pieces (the other planners make none). */
static tn_status_t alltoall(const topo_t *t, uint64_t size, const synth_opts_t *o, synth_method_t m,
                            synth_result_t *out, tn_err_t *err) {
  if (m != SYNTH_GREEDY) /* synth_method_applies let only the greedy through */
    return tn_err_set(err, TN_INTERNAL, "%s: no All-to-All planner", synth_method_name(m));
  greedy_opts_t g = {.seed = o->seed,
                     .chunks_per_npu = o->chunks_per_npu,
                     .keep_ties = true,
                     .tie_window_ps = SIM_STRICT_FIRST_WINDOW_PS};
  schedule_t s;
  tn_status_t st = greedy_alltoall(t, size, &g, &s, err);
  /* The replay's pairs, named as the simulator names them: order-proofing need not run the
   * set once more to find them. */
  if (st == TN_OK)
    st = synth_i_lower_with_first_run(&s, TN_ALLTOALL, synth_method_name(m), out, err);
  schedule_free(&s);
  return st;
}

/* A planned collective at the chunking o asks for, on either kind of fabric. */
static tn_status_t planned_any(const topo_t *t, tn_coll_t coll, uint64_t size,
                               const synth_opts_t *o, synth_method_t m, bool list,
                               synth_result_t *out, tn_err_t *err) {
  if (coll != TN_ALLGATHER && !topo_is_symmetric(t))
    return planned_asymmetric(t, coll, size, o, m, out, err);
  return planned(t, coll, size, o, m, list, out, err);
}

/* Chunkings the greedy's Reduce-Scatter and All-Reduce also try, after its own choice. */
#define RED_K_MIN 1u
#define RED_K_MAX 8u
#define RED_NK (RED_K_MAX - RED_K_MIN + 1u)
/* Work budget of that search, in planned (NPU, chunk) deliveries (npus^2 x chunks) summed
 * over the extra chunkings tried: 128 NPUs try every one of RED_K_MIN..RED_K_MAX. */
#define RED_K_BUDGET ((uint64_t)1 << 20)
#define RED_WORKERS 8u /* threads the search uses at most */
/* The search lists every count it tries (listed()) up to this many planned deliveries per
 * count, npus^2 x 64: fabrics of up to 32 NPUs. */
#define STAGGER_SEARCH_MAX ((uint64_t)1 << 16)

/* One worker's part of the search: the fastest set it made that beat the greedy's own
 * choice (its time, and its index in ks, which orders equal times), or its failure. */
typedef struct red_best {
  algo_t *algo;
  uint64_t time_ps; /* what it is expected to take once order-proof (red_expect) */
  uint64_t run_ps;  /* its run's time */
  uint64_t plan_ps; /* its plan_ps */
  bool listed;      /* its listed */
  bool stopped;     /* its run stopped at the limit: not a first run to hand over */
  size_t i;
  tn_status_t st;
  tn_err_t err;
  synth_tie_rec_t ties;  /* of algo's run (order-proofing's first) */
  synth_tie_rec_t trial; /* of the run in progress */
} red_best_t;

/* The search: the chunkings to try and each worker's part. */
typedef struct red_search {
  const topo_t *t;
  bool list; /* each count's All-Reduce is listed where it can be (planned) */
  tn_coll_t coll;
  uint64_t size;
  const synth_opts_t *o;
  uint64_t own_ps;  /* the greedy's own choice's run: runs stop past it */
  uint64_t own_exp; /* and what it is expected to take (red_expect) */
  uint32_t ks[RED_NK];
  red_best_t w[RED_WORKERS];
} red_search_t;

/* What a set is expected to take once order-proof: one whose run misses its plan by more
 * than sim_strict_plan_missed allows is kept to the plan's order and takes the plan's time
 * (sim_make_strict_planned); else its run's, a run stopped at the limit counting as too
 * slow. */
static uint64_t red_expect(uint64_t run_ps, bool stopped, uint64_t plan_ps) {
  /* a stopped run's time is a lower bound on the whole run's */
  if (sim_strict_plan_missed(run_ps, plan_ps)) return plan_ps;
  return stopped ? UINT64_MAX : run_ps;
}

static void red_try(void *ctx, size_t i, unsigned worker) {
  red_search_t *S = ctx;
  red_best_t *w = &S->w[worker];
  if (w->st != TN_OK) return;
  synth_opts_t ok = *S->o;
  ok.chunks_per_npu = S->ks[i];
  synth_result_t c = {0};
  sim_opts_t so = {.stop_after_ps = S->own_ps};
  synth_i_tie_rec_start(&w->trial, &so);
  sim_result_t r = {0};
  w->st = planned_any(S->t, S->coll, S->size, &ok, SYNTH_GREEDY, S->list, &c, &w->err);
  if (w->st == TN_OK) w->st = synth_i_sim_within(S->t, c.algo, &so, &r, &w->err);
  uint64_t exp = red_expect(r.time_ps, r.stopped, c.plan_ps);
  bool better = w->st == TN_OK && exp < S->own_exp &&
                (w->algo == NULL || exp < w->time_ps || (exp == w->time_ps && i < w->i));
  if (better) {
    algo_free(w->algo);
    w->algo = c.algo, w->time_ps = exp, w->i = i;
    w->run_ps = r.time_ps, w->plan_ps = c.plan_ps, w->stopped = r.stopped, w->listed = c.listed;
    c.algo = NULL;
    synth_tie_rec_t keep = w->ties;
    w->ties = w->trial, w->trial = keep;
  }
  sim_result_free(&r);
  synth_result_free(&c);
}

/* The greedy's All-Reduce at the count its search kept (out, made in plain sequence) made
 * again as `--chunks` of that count makes it, listed where that ends first, so that the
 * two give one set: kept instead when it is listed (its list then ends before the
 * sequence kept). */
static tn_status_t listed_at_kept(const topo_t *t, uint64_t size, const synth_opts_t *o,
                                  synth_result_t *out, tn_err_t *err) {
  synth_opts_t at = *o;
  at.chunks_per_npu = out->algo->chunks_per_npu;
  synth_result_t c = {0};
  tn_status_t st = planned(t, TN_ALLREDUCE, size, &at, SYNTH_GREEDY, true, &c, err);
  if (st == TN_OK && c.listed) {
    algo_free(out->algo);
    out->algo = c.algo, c.algo = NULL;
    out->plan_ps = c.plan_ps, out->listed = true;
  }
  synth_result_free(&c);
  return st;
}

/* The greedy chooses its chunking by the time of its All-Gather plan (greedy_run_for), but
 * a Reduce-Scatter adds a reduction per chunk received, and an All-Reduce joins its two
 * halves chunk by chunk, so finer chunks overlap them better than the All-Gather alone
 * shows: on mesh-4x4 at 1 GiB an All-Reduce in 8 chunks per NPU is 6.4% faster than in the
 * greedy's 2; on torus-4x4 a Reduce-Scatter of 1 MiB in 7 is 1.3% faster than in its 16.
 * With automatic chunking these two are therefore made at the greedy's choice and at every
 * chunking of RED_K_MIN..RED_K_MAX the budget and the memory cap allow (each by its
 * one-thread greedy_mem_estimate, as the greedy checks its own; side by side, the finest
 * first and alone), each simulated (a run stops once it passes the greedy's own choice), and
 * the fastest is kept: the greedy's own choice, else the coarsest among equal times. When
 * the greedy's own choice is settled (within SYNTH_I_SETTLED_PERMILLE of the bound) no
 * other count is tried, and when the finest count's set is, no count after it. The outcome
 * does not depend on the threads. out->time_ps is its simulated time. */
static tn_status_t greedy_reduction(const topo_t *t, tn_coll_t coll, uint64_t size,
                                    const synth_opts_t *o, synth_result_t *out, tn_err_t *err) {
  /* Small fabrics list every count the search makes (each list costs three listings and
   * two plannings); larger ones choose the count by its sets in plain sequence and list
   * only the one kept (mixed 64-rank step of bench_workload, every count listed: 17.1 s of
   * synthesis CPU against 12.4-13.3 without the list). */
  bool list = (uint64_t)t->npus * t->npus * 64 <= STAGGER_SEARCH_MAX;
  tn_status_t st = planned_any(t, coll, size, o, SYNTH_GREEDY, list, out, err);
  sim_result_t r = {0};
  sim_opts_t so = {0};
  synth_tie_rec_t own_ties = {0};
  synth_i_tie_rec_start(&own_ties, &so);
  if (st == TN_OK) st = sim_run(t, out->algo, &so, &r, err);
  if (st != TN_OK) {
    tn_vec_free(&own_ties.ties);
    return st;
  }
  red_search_t S = {.t = t,
                    .list = list,
                    .coll = coll,
                    .size = size,
                    .o = o,
                    .own_ps = r.time_ps,
                    .own_exp = red_expect(r.time_ps, false, out->plan_ps)};
  sim_result_free(&r);
  out->time_ps = S.own_ps;
  synth_i_tie_rec_take(&own_ties, out); /* the run of the set kept unless one below wins */
  tn_vec_free(&own_ties.ties);
  uint32_t own = out->algo->chunks_per_npu, n = 0;
  uint64_t n2 = (uint64_t)t->npus * t->npus, spent = 0, bound = 0;
  tn_err_t be = {0};
  if (topo_lower_bound_ps(t, coll, size, &bound, &be) != TN_OK) bound = 0;
  /* no other count when the greedy's own set is settled */
  for (uint32_t k = RED_K_MIN; k <= RED_K_MAX && !synth_i_settled(S.own_exp, bound); k++) {
    if (k == own || size < (uint64_t)t->npus * k) continue;
    if ((spent += n2 * k) > RED_K_BUDGET) break;
    /* a count it could keep is one whose whole run fits the cap (its one-thread figure,
     * as the greedy's own counts; finer counts need more) */
    if (greedy_mem_estimate(t, size, k, coll, true, 1) > tn_mem_cap()) break;
    S.ks[n++] = k;
  }
  /* The finest count first, alone: finer chunks overlap the halves best, and when its set
   * is settled (synth_i_settled) the other counts are not tried (torus-16x8 All-Reduce of
   * 1 GiB: 8 chunks per NPU, at the bound). Else the rest side by side. The counts tried
   * depend on that set alone, not on the threads. */
  unsigned threads = tn_thread_count();
  if (threads > RED_WORKERS) threads = RED_WORKERS;
  if (n > 0) {
    red_try(&S, n - 1, 0);
    if (S.w[0].st == TN_OK && S.w[0].algo && synth_i_settled(S.w[0].time_ps, bound)) n = 1;
  }
  if (n > 1) tn_parallel_for(n - 1, threads < n - 1 ? threads : n - 1, red_try, &S);
  unsigned best = RED_WORKERS;
  for (unsigned w = 0; w < RED_WORKERS; w++) {
    if (S.w[w].st != TN_OK && st == TN_OK) st = tn_err_set(err, S.w[w].st, "%s", S.w[w].err.msg);
    if (S.w[w].algo && (best == RED_WORKERS || S.w[w].time_ps < S.w[best].time_ps ||
                        (S.w[w].time_ps == S.w[best].time_ps && S.w[w].i < S.w[best].i)))
      best = w;
  }
  if (st == TN_OK && best != RED_WORKERS) {
    algo_free(out->algo);
    out->algo = S.w[best].algo, out->time_ps = S.w[best].run_ps;
    out->plan_ps = S.w[best].plan_ps, out->listed = S.w[best].listed;
    S.w[best].algo = NULL;
    if (S.w[best].stopped) { /* chosen for its plan: order-proofing runs it whole */
      tn_vec_free(&out->first_ties);
      tn_vec_init(&out->first_ties, sizeof(sim_tie_t));
      out->first_known = false;
    } else {
      synth_i_tie_rec_take(&S.w[best].ties, out);
    }
  }
  for (unsigned w = 0; w < RED_WORKERS; w++) {
    algo_free(S.w[w].algo);
    tn_vec_free(&S.w[w].ties.ties);
    tn_vec_free(&S.w[w].trial.ties);
  }
  if (st == TN_OK && !list && coll == TN_ALLREDUCE && listable(t))
    st = listed_at_kept(t, size, o, out, err);
  /* A listed set's own run (which issues ready SENDs in id order) misses its list by far
   * (mesh-8x8 1 MiB, the set kept: 23.5 us against 19.5), and so may a set from a
   * rarest-first plan (random4reg-32 Reduce-Scatter 1 MiB: 6.88 us against 5.38): what it
   * takes is known once it is order-proof, not from that run (auto must not compare it by
   * that run: it kept the forest's 1.244 of the bound over the greedy's 1.029), and
   * order-proofing runs it whole, as for `--chunks` of its count. */
  if (st == TN_OK && (out->listed || sim_strict_plan_missed(out->time_ps, out->plan_ps))) {
    out->time_ps = 0;
    tn_vec_free(&out->first_ties);
    tn_vec_init(&out->first_ties, sizeof(sim_tie_t));
    out->first_known = false;
  }
  return st;
}

tn_status_t synth_i_planned(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                            synth_method_t m, synth_result_t *out, tn_err_t *err) {
  if (coll == TN_ALLTOALL) return alltoall(t, size, o, m, out, err);
  if (m == SYNTH_FOREST && coll != TN_ALLGATHER) return forest_reduce(t, coll, size, o, out, err);
  if (coll != TN_ALLGATHER && o->chunks_per_npu == 0 && m == SYNTH_GREEDY)
    return greedy_reduction(t, coll, size, o, out, err);
  if (coll != TN_ALLGATHER && o->chunks_per_npu == 0 && m == SYNTH_MILP) {
    /* The MILP plans at the greedy's chunking, which for a reduction is its search's. */
    synth_result_t g = {0};
    tn_status_t st = greedy_reduction(t, coll, size, o, &g, err);
    synth_opts_t at = *o;
    if (st == TN_OK) at.chunks_per_npu = g.algo->chunks_per_npu;
    synth_result_free(&g);
    return st == TN_OK ? planned_any(t, coll, size, &at, m, false, out, err) : st;
  }
  return planned_any(t, coll, size, o, m, true, out, err);
}
