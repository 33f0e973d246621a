/* synth/portfolio.c — `auto`: builds every applicable method's algorithm, times each with
 * the simulator (the same model ASTRA-sim runs), and keeps the fastest; among equal times
 * the earlier method in synth_method_t wins. The MILP is not a candidate: its work limit
 * makes it deterministic, but it takes seconds where the others take milliseconds.
 * The planners go first; the baselines, which only simulate, then stop every simulation
 * that passes what the planners' best makes choosable (on 1024 NPUs Direct and Ring
 * simulate a thousand times more events than the planners' sets, and lose). A set within
 * 0.1% of the lower bound ends the search (settled). */
#include <string.h>

#include "sim/sim.h"
#include "synth/synth_internal.h"

#define NEAR_PS 64000u /* 64 ns: what gates usually add to a time, beyond 0.01% */

/* Candidates in order of preference among equal times; the first PLANNERS are built
 * first, then the baselines with the limit their best sets, and last (SLOWLESS of them,
 * with that limit too) the greedy and the forest again, planned on the fabric without its
 * slow links (topo_without_slow_links) where it has some, and timed on the fabric itself:
 * the greedy sends over a slow link whatever its far end lacks, however late it arrives
 * (rail-4x8-degraded, All-Gather of 1 MiB: the greedy 2.86 times the bound, the forest
 * 1.94; planned without GPU 22's 12.5 GB/s rail link, 1.375). */
static const synth_method_t candidates[] = {SYNTH_GREEDY, SYNTH_TREES,   SYNTH_FOREST,
                                            SYNTH_DIMS,   SYNTH_RING,    SYNTH_DIRECT,
                                            SYNTH_TWOSTEP, SYNTH_GREEDY, SYNTH_FOREST};
enum {
  NCAND = sizeof candidates / sizeof candidates[0],
  PLANNERS = 4,
  SLOWLESS = 2,
  BASELINES_END = NCAND - SLOWLESS
};

/* The first round's reach beside a fastest original time of best_ps: the kept set is made
 * order-proof, which mostly moves its time by nanoseconds, so every candidate this close
 * to the fastest is made so at once (later rounds take any other that may still win). */
static uint64_t near_of(uint64_t best_ps) {
  return best_ps + best_ps / 10000 + NEAR_PS;
}

/* Whether a failed candidate only means "not applicable here": the portfolio then goes
 * on with the others. Anything else (out of memory, an internal error, a disconnected
 * fabric) ends the whole run. */
static bool skippable(tn_status_t st) {
  return st == TN_INVAL || st == TN_LIMIT;
}

/* Simulates c->algo unless its time is already known exactly; a simulation that passes
 * limit_ps (nonzero) stops there and sets *pruned. Without a limit (a planner's
 * Reduce-Scatter or All-Reduce) the set is made order-proof at once: the first of
 * sim_make_strict's runs times the set as given, which is all a plain simulation would
 * tell, and if the set is kept (on 1024 NPUs the greedy's nearly always is) that run is
 * not made twice; *strict_ps is then the order-proof set's time. A whole run under a limit
 * keeps its pairs, so that making the set order-proof later need not run it again. */
static tn_status_t time_candidate(const topo_t *t, tn_coll_t coll, uint64_t size,
                                  const synth_opts_t *o, synth_result_t *c, uint64_t limit_ps,
                                  bool *pruned, uint64_t *strict_ps, tn_err_t *err) {
  if (c->time_ps != 0) return TN_OK;
  /* a set kept to its plan's order is timed order-proof: its own run may miss the plan */
  if (limit_ps == 0 || c->plan_ps != 0) {
    sim_strict_report_t rep;
    tn_status_t st = synth_i_make_strict(t, coll, size, o, c, NULL, NULL, &rep, err);
    /* the faster of the two: a set kept to its plan's order may beat its first run */
    if (st == TN_OK)
      c->time_ps = rep.time_ps < rep.first_ps ? rep.time_ps : rep.first_ps, c->strict = true,
      *strict_ps = rep.time_ps;
    return st;
  }
  sim_opts_t so = {.stop_after_ps = limit_ps};
  synth_tie_rec_t ties = {0};
  synth_i_tie_rec_start(&ties, &so); /* a whole run is order-proofing's first */
  sim_result_t r = {0};
  tn_status_t st = synth_i_sim_within(t, c->algo, &so, &r, err);
  if (st == TN_OK) c->time_ps = r.time_ps, *pruned = r.stopped;
  if (st == TN_OK && !r.stopped) synth_i_tie_rec_take(&ties, c);
  tn_vec_free(&ties.ties);
  sim_result_free(&r);
  return st;
}

/* One candidate's outcome, written only by the worker that builds it. */
typedef struct cand {
  synth_result_t r;
  tn_status_t st;
  tn_err_t e;
  bool pruned;        /* slower than the limit it was built under: never chosen */
  uint64_t strict_ps; /* r.strict: the order-proof set's time (r.time_ps is the original's) */
  bool final;         /* r.time_ps is the order-proof set's time */
  bool skipped;       /* not built: one before it was settled */
} cand_t;

typedef struct job {
  const topo_t *t;
  tn_coll_t coll;
  uint64_t size;
  const synth_opts_t *o;
  cand_t *c;
  size_t first;           /* item i builds candidate first + i */
  uint64_t limit_ps;      /* 0: none */
  const topo_t *slowless; /* t without its slow links (the last SLOWLESS candidates' fabric) */
} job_t;

static void build_one(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  const job_t *j = ctx;
  size_t k = j->first + i;
  cand_t *c = &j->c[k];
  c->r.method = candidates[k];
  bool slowless = k >= BASELINES_END;
  /* Planned on the other fabric with no limit (its times are not t's), then timed on t as
   * a set never simulated: what the producer knew of its runs was of the other fabric. Its
   * plan order (plan_ps) holds on t too: its SEND ids order every link as the plan's starts
   * do, an order dependencies agree with on any fabric (a Reduce-Scatter run backwards from
   * the forest's All-Gather on rail-4x8-degraded without GPU 22's rail link, 1 GiB: its own
   * run 1.274 of the bound against its plan's 1.010; kept to its plan's order, 1.005). */
  c->st = synth_i_one_within(slowless ? j->slowless : j->t, j->coll, j->size, j->o, candidates[k],
                             slowless ? 0 : j->limit_ps, &c->pruned, &c->r, &c->e);
  if (c->st == TN_OK && slowless) {
    tn_vec_free(&c->r.first_ties);
    c->r.first_known = c->r.strict = c->r.listed = false;
    c->r.time_ps = c->r.unproofed_ps = 0;
    snprintf(c->r.variant, sizeof c->r.variant, "planned without the slow links");
  }
  if (c->st == TN_OK && !c->pruned)
    c->st = time_candidate(j->t, j->coll, j->size, j->o, &c->r, j->limit_ps, &c->pruned,
                           &c->strict_ps, &c->e);
  if (c->st != TN_OK || c->pruned) synth_result_free(&c->r);
}

unsigned synth_i_side_by_side(const uint64_t *need, size_t n, unsigned threads, uint64_t cap) {
  uint64_t s[NCAND];
  size_t m = n < NCAND ? n : NCAND;
  for (size_t i = 0; i < m; i++) { /* the estimates, largest first */
    size_t k = i;
    for (; k > 0 && s[k - 1] < need[i]; k--)
      s[k] = s[k - 1];
    s[k] = need[i];
  }
  unsigned w = threads < m ? threads : (unsigned)m;
  for (; w > 1; w--) {
    uint64_t sum = 0;
    for (unsigned i = 0; i < w; i++)
      sum = sum + s[i] < sum ? UINT64_MAX : sum + s[i];
    if (sum <= cap) break;
  }
  return w > 0 ? w : 1;
}

/* Builds candidates [first, first + n) side by side (they are independent: each plans
 * with its own routes and engine); the choice reads them in a fixed order afterwards.
 * Each candidate refuses itself over the memory cap, but those built at once are
 * resident at once: as many side by side as the largest estimates' sum allows
 * (synth_i_side_by_side; a candidate that does not apply or refuses itself counts 0).
 * Fewer side by side changes no outcome, only the time. */
static void build_range(job_t *j, size_t first, size_t n, uint64_t limit_ps) {
  j->first = first;
  j->limit_ps = limit_ps;
  unsigned threads = tn_thread_count(), w = threads < n ? threads : (unsigned)n;
  size_t applies = 0;
  for (size_t i = 0; i < n; i++)
    applies += synth_method_applies(candidates[first + i], j->coll, NULL);
  /* One that applies alone (the greedy's All-to-All among the planners) needs no figure:
   * the others refuse at once. */
  if (w > 1 && applies > 1) {
    uint64_t need[NCAND] = {0}, cap = tn_mem_cap();
    for (size_t i = 0; i < n; i++) {
      synth_method_t m = candidates[first + i];
      if (!synth_method_applies(m, j->coll, NULL)) continue;
      uint64_t x = synth_mem_estimate(j->t, j->coll, j->size, m, j->o->chunks_per_npu, threads);
      need[i] = x <= cap ? x : 0;
    }
    w = synth_i_side_by_side(need, n, w, cap);
  }
  tn_parallel_for(n, w, build_one, j);
}

/* The fastest candidate among [0, n) that was built and not pruned, or NCAND. */
static size_t fastest(const cand_t *c, size_t n) {
  size_t best = NCAND;
  for (size_t i = 0; i < n; i++)
    if (c[i].st == TN_OK && !c[i].pruned && (best == NCAND || c[i].r.time_ps < c[best].r.time_ps))
      best = i;
  return best;
}

/* Whether the fastest of candidates [0, n) is settled (synth_i_settled). */
static bool settled(const cand_t *c, size_t n, uint64_t bound_ps) {
  size_t best = fastest(c, n);
  return best != NCAND && synth_i_settled(c[best].r.time_ps, bound_ps);
}

/* Candidates [first, end) are not built: one before them is within
 * SYNTH_I_SETTLED_PERMILLE of the bound. */
static void skip_rest(cand_t *c, size_t first, size_t end) {
  for (size_t i = first; i < end; i++) {
    c[i].st = TN_LIMIT, c[i].skipped = true;
    tn_err_set(&c[i].e, TN_LIMIT, "not built: a set within %u per mille of the bound came first",
               SYNTH_I_SETTLED_PERMILLE);
  }
}

static tn_status_t portfolio(const topo_t *t, const topo_t *slowless, tn_coll_t coll,
                             uint64_t size, const synth_opts_t *o, synth_result_t *out,
                             tn_err_t *err) {
  enum { N = NCAND };
  cand_t c[N];
  memset(c, 0, sizeof c);
  job_t j = {.t = t, .coll = coll, .size = size, .o = o, .c = c, .slowless = slowless};
  /* Without slow links the last candidates do not apply (nor count as skipped). */
  size_t end = slowless != NULL ? N : BASELINES_END;
  for (size_t i = end; i < N; i++) {
    c[i].st = TN_INVAL;
    tn_err_set(&c[i].e, TN_INVAL, "the fabric has no slow links to plan without");
  }
  /* The greedy first (it plans on both threads itself): a set of its within
   * SYNTH_I_SETTLED_PERMILLE of the bound is kept without building the others, here and
   * under `exhaustive` alike (a rule of the choice, not a pruning), so the outcome depends
   * on the sets alone, not on the threads. Then the other planners, and the baselines unless
   * a planner's set is that near. */
  uint64_t bound = 0;
  tn_err_t be = {0};
  if (topo_lower_bound_ps(t, coll, size, &bound, &be) != TN_OK) bound = 0;
  build_range(&j, 0, 1, 0);
  bool done = settled(c, 1, bound);
  if (done)
    skip_rest(c, 1, end);
  else
    build_range(&j, 1, PLANNERS - 1, 0);
  size_t best = fastest(c, PLANNERS);
  /* A baseline slower than near_of(the planners' best) is never chosen below, whatever
   * the others do: the limit only saves the rest of its simulation. The limit depends on
   * the planners' sets alone, so the outcome does not depend on the threads. */
  uint64_t limit = best != N && !o->exhaustive ? near_of(c[best].r.time_ps) : 0;
  if (!done && settled(c, PLANNERS, bound)) done = true, skip_rest(c, PLANNERS, end);
  if (!done) build_range(&j, PLANNERS, BASELINES_END - PLANNERS, limit);
  if (!done && slowless != NULL) build_range(&j, BASELINES_END, SLOWLESS, limit);
  size_t first_failed = N;
  for (size_t i = 0; i < N; i++) {
    if (c[i].st != TN_OK && !skippable(c[i].st)) {
      for (size_t k = 0; k < N; k++)
        synth_result_free(&c[k].r);
      return tn_err_set(err, c[i].st, "%s: %s", synth_method_name(candidates[i]), c[i].e.msg);
    }
    if (c[i].st != TN_OK && first_failed == N) first_failed = i;
  }
  best = fastest(c, N);
  if (best == N) return tn_err_set(err, c[first_failed].st, "%s", c[first_failed].e.msg);
  /* Every candidate that may still be the fastest once order-proof is made so, and the
   * fastest strict one is kept. Gates mostly cost nanoseconds, but not always (All-to-All of
   * 8 KiB on hierarchical-16x8: +133 ns on the greedy's 2,790 ns, +197 on Direct's 2,752,
   * +2 on Two-Step's 2,831), so candidates are taken in rounds: first those near the fastest
   * original time, then any whose original time is below the kept strict time (gates do not
   * make a set faster), and a baseline whose run stopped at the limit, once the kept time
   * passes that limit, is built again without it. */
  uint64_t near = near_of(c[best].r.time_ps);
  size_t kept = N, nnear = 0;
  for (size_t i = 0; i < N; i++)
    nnear += c[i].st == TN_OK && !c[i].pruned && c[i].r.time_ps <= near;
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < N; i++) {
      uint64_t bar = kept == N ? near : c[kept].r.time_ps;
      if (c[i].st != TN_OK || c[i].final) continue;
      if (c[i].pruned) {
        if (kept == N || c[kept].r.time_ps <= limit) continue;
        c[i].pruned = false;
        build_range(&j, i, 1, 0);
        if (c[i].st != TN_OK && !skippable(c[i].st)) {
          for (size_t k = 0; k < N; k++)
            synth_result_free(&c[k].r);
          return tn_err_set(err, c[i].st, "%s: %s", synth_method_name(candidates[i]), c[i].e.msg);
        }
        if (c[i].st != TN_OK) continue;
      }
      if (c[i].r.time_ps > bar) continue;
      if (c[i].r.strict) { /* made order-proof when it was timed */
        c[i].r.time_ps = c[i].strict_ps;
      } else {
        /* The only one near, taken first, is most likely the one returned: it is made ready
         * to return (what finish does first), and o->on_set runs beside its last
         * simulation. Should another win in a later round, on_set_done stays false on that
         * one and the caller runs on_set on it. */
        bool sole = kept == N && nnear == 1 && o->on_set != NULL;
        sim_strict_report_t rep;
        tn_status_t st = sole ? synth_i_prepare(t, c[i].r.algo, err) : TN_OK;
        if (st == TN_OK)
          st = synth_i_make_strict(t, coll, size, o, &c[i].r, sole ? o->on_set : NULL,
                                   o->on_set_ctx, &rep, err);
        c[i].r.on_set_done = sole;
        if (st != TN_OK) {
          for (size_t k = 0; k < N; k++)
            synth_result_free(&c[k].r);
          return st;
        }
        c[i].r.time_ps = rep.time_ps;
        c[i].r.strict = true;
      }
      c[i].final = again = true;
      if (kept == N || c[i].r.time_ps < c[kept].r.time_ps ||
          (c[i].r.time_ps == c[kept].r.time_ps && i < kept))
        kept = i;
    }
  }
  best = kept;
  for (size_t i = 0; i < N; i++)
    if (i != best) synth_result_free(&c[i].r);
  *out = c[best].r;
  for (size_t i = 0; i < N; i++)
    out->pruned += c[i].pruned, out->settled += c[i].skipped;
  return TN_OK;
}

tn_status_t synth_i_portfolio(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                              synth_result_t *out, tn_err_t *err) {
  topo_t *slowless = NULL; /* held to the end: a candidate may be built again on it */
  tn_status_t st = topo_without_slow_links(t, &slowless, err);
  if (st == TN_OK) st = portfolio(t, slowless, coll, size, o, out, err);
  topo_free(slowless);
  return st;
}
