/* synth/portfolio.c — `auto`: builds every applicable method's algorithm, times each with
 * the simulator (the same model ASTRA-sim runs), and keeps the fastest; among equal times
 * the earlier method in synth_method_t wins. The MILP is not a candidate: its work limit
 * makes it deterministic, but it takes seconds where the others take milliseconds. */
#include <string.h>

#include "sim/sim.h"
#include "synth/synth_internal.h"

#define NEAR_PS 64000u /* 64 ns: what gates may add to a time, beyond 0.01% */

/* Candidates in order of preference among equal times. */
static const synth_method_t candidates[] = {SYNTH_GREEDY, SYNTH_TREES,  SYNTH_FOREST,
                                            SYNTH_RING,   SYNTH_DIRECT, SYNTH_TWOSTEP};

/* Whether a failed candidate only means "not applicable here": the portfolio then goes
 * on with the others. Anything else (out of memory, an internal error, a disconnected
 * fabric) ends the whole run. */
static bool skippable(tn_status_t st) {
  return st == TN_INVAL || st == TN_LIMIT;
}

/* Simulates c->algo unless its time is already known exactly. */
static tn_status_t time_candidate(const topo_t *t, synth_result_t *c, tn_err_t *err) {
  if (c->time_ps != 0) return TN_OK;
  sim_result_t r = {0};
  tn_status_t st = sim_run(t, c->algo, NULL, &r, err);
  if (st == TN_OK) c->time_ps = r.time_ps;
  sim_result_free(&r);
  return st;
}

/* One candidate's outcome, written only by the worker that builds it. */
typedef struct cand {
  synth_result_t r;
  tn_status_t st;
  tn_err_t e;
} cand_t;

typedef struct job {
  const topo_t *t;
  tn_coll_t coll;
  uint64_t size;
  const synth_opts_t *o;
  cand_t *c;
} job_t;

static void build_one(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  const job_t *j = ctx;
  cand_t *c = &j->c[i];
  c->r.method = candidates[i];
  c->st = synth_i_one(j->t, j->coll, j->size, j->o, candidates[i], &c->r, &c->e);
  if (c->st == TN_OK) c->st = time_candidate(j->t, &c->r, &c->e);
  if (c->st != TN_OK) synth_result_free(&c->r);
}

tn_status_t synth_i_portfolio(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                              synth_result_t *out, tn_err_t *err) {
  enum { N = sizeof candidates / sizeof candidates[0] };
  cand_t c[N];
  memset(c, 0, sizeof c);
  job_t j = {.t = t, .coll = coll, .size = size, .o = o, .c = c};
  /* Candidates are independent (each plans with its own routes and engine), so they are
   * built and timed side by side; the choice below reads them in a fixed order. */
  unsigned threads = tn_thread_count();
  tn_parallel_for(N, threads < N ? threads : N, build_one, &j);
  size_t best = N, first_failed = N;
  for (size_t i = 0; i < N; i++) {
    if (c[i].st != TN_OK && !skippable(c[i].st)) {
      for (size_t k = 0; k < N; k++)
        synth_result_free(&c[k].r);
      return tn_err_set(err, c[i].st, "%s: %s", synth_method_name(candidates[i]), c[i].e.msg);
    }
    if (c[i].st != TN_OK && first_failed == N) first_failed = i;
    if (c[i].st == TN_OK && (best == N || c[i].r.time_ps < c[best].r.time_ps)) best = i;
  }
  if (best == N) return tn_err_set(err, c[first_failed].st, "%s", c[first_failed].e.msg);
  /* The kept set is made order-proof, which moves its time by nanoseconds: every candidate
   * that close to the fastest is made so too, and the fastest strict one is kept. */
  uint64_t near = c[best].r.time_ps + c[best].r.time_ps / 10000 + NEAR_PS;
  size_t kept = N;
  for (size_t i = 0; i < N; i++) {
    if (c[i].st != TN_OK || c[i].r.time_ps > near) continue;
    sim_strict_report_t rep;
    tn_status_t st = sim_make_strict(t, &c[i].r.algo, &rep, err);
    if (st != TN_OK) {
      for (size_t k = 0; k < N; k++)
        synth_result_free(&c[k].r);
      return st;
    }
    c[i].r.time_ps = rep.time_ps;
    c[i].r.strict = true;
    if (kept == N || c[i].r.time_ps < c[kept].r.time_ps) kept = i;
  }
  best = kept;
  for (size_t i = 0; i < N; i++)
    if (i != best) synth_result_free(&c[i].r);
  *out = c[best].r;
  return TN_OK;
}
