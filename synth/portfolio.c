/* synth/portfolio.c — `auto`: builds every applicable method's algorithm, times each with
 * the simulator (the same model ASTRA-sim runs), and keeps the fastest; among equal times
 * the earlier method in synth_method_t wins. The MILP is not a candidate (its time limit
 * would make the portfolio's wall time and result depend on the machine). */
#include <string.h>

#include "sim/sim.h"
#include "synth/synth_internal.h"

/* Candidates in order of preference among equal times. */
static const synth_method_t candidates[] = {SYNTH_GREEDY, SYNTH_RING, SYNTH_DIRECT};

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

tn_status_t synth_i_portfolio(const topo_t *t, tn_coll_t coll, uint64_t size,
                              const synth_opts_t *o, synth_result_t *out, tn_err_t *err) {
  tn_err_t first = {0};
  tn_status_t first_st = TN_OK;
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    synth_result_t c = {.method = candidates[i]};
    tn_err_t e = {0};
    tn_status_t st = synth_i_one(t, coll, size, o, candidates[i], &c, &e);
    if (st == TN_OK) st = time_candidate(t, &c, &e);
    if (st != TN_OK) {
      synth_result_free(&c);
      if (!skippable(st)) return tn_err_set(err, st, "%s: %s", synth_method_name(c.method), e.msg);
      if (first_st == TN_OK) first_st = st, first = e;
      continue;
    }
    if (out->algo == NULL || c.time_ps < out->time_ps) {
      synth_result_free(out);
      *out = c;
    } else {
      synth_result_free(&c);
    }
  }
  if (out->algo != NULL) return TN_OK;
  return tn_err_set(err, first_st, "%s", first.msg);
}
