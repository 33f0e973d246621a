/* milp/milp.c — milp_solve: validates the request, discretises the fabric, builds the
 * starting plan (own list scheduler, or the caller's warm start re-timed, whichever is
 * shorter), lets GLPK improve and prove it, and replays the answer through ten's engine
 * into a schedule_t. */
#include "milp/milp_internal.h"

#include <math.h>
#include <string.h>

void milp_opts_init(milp_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->time_limit_s = 60.0;
  o->chunks_per_npu = 1;
}

static tn_status_t validate(const topo_t *t, uint64_t size_bytes, const milp_opts_t *o,
                            tn_err_t *err) {
  if (t == NULL || o == NULL) return tn_err_set(err, TN_INVAL, "no fabric or options");
  if (o->chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL, "chunks per NPU must be at least 1, not 0");
  if (o->chunks_per_npu > MILP_MAX_CHUNKS_PER_NPU)
    return tn_err_set(err, TN_LIMIT, "%u chunks per NPU exceeds the MILP's cap of %u",
                      o->chunks_per_npu, MILP_MAX_CHUNKS_PER_NPU);
  if (!(o->time_limit_s > 0.0) || !isfinite(o->time_limit_s))
    return tn_err_set(err, TN_INVAL, "the time limit must be > 0 s, not %g",
                      o->time_limit_s);
  if (o->steps_per_xfer > 16)
    return tn_err_set(err, TN_INVAL, "steps per transfer must be in 1..16, not %u",
                      o->steps_per_xfer);
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "fabric '%s' has %u NPU; an All-Gather needs 2",
                      t->name, t->npus);
  if (t->npus > MILP_MAX_NPUS)
    return tn_err_set(err, TN_LIMIT, "fabric '%s' has %u NPUs, above the MILP's cap "
                      "of %u (use the greedy)", t->name, t->npus, MILP_MAX_NPUS);
  uint64_t chunks = (uint64_t)t->npus * o->chunks_per_npu;
  if (size_bytes < chunks)
    return tn_err_set(err, TN_INVAL, "size %llu B is less than one byte for each of "
                      "the %llu chunks", (unsigned long long)size_bytes,
                      (unsigned long long)chunks);
  const schedule_t *w = o->warm;
  if (w && w->size_bytes != size_bytes)
    return tn_err_set(err, TN_INVAL, "warm start is for %llu B, not %llu B",
                      (unsigned long long)w->size_bytes, (unsigned long long)size_bytes);
  return TN_OK;
}

/* The starting plan: the shorter of the list scheduler's and the re-timed warm start. */
static tn_status_t starting_plan(const milp_fab_t *f, const milp_opts_t *o, milp_plan_t *p,
                                 milp_result_t *res, tn_err_t *err) {
  tn_status_t st = milp_i_heuristic(f, p, err);
  if (st != TN_OK || o->warm == NULL) return st;
  milp_plan_t w = {0};
  bool fits = false;
  if ((st = milp_i_plan_init(f, &w, err)) == TN_OK &&
      (st = milp_i_retime(f, o->warm, &w, &fits, err)) == TN_OK && fits &&
      w.makespan <= p->makespan) {
    milp_plan_t tmp = *p;
    *p = w;
    w = tmp;
    res->warm_used = true;
  }
  milp_i_plan_free(&w);
  return st;
}

tn_status_t milp_solve(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                       schedule_t *out, milp_result_t *res, tn_err_t *err) {
  double t0 = tn_wall_seconds();
  memset(res, 0, sizeof *res);
  res->status = MILP_TIMEOUT;
  schedule_init(out, TN_ALLGATHER, t ? t->npus : 0, opts ? opts->chunks_per_npu : 0,
                size_bytes);
  tn_status_t st = validate(t, size_bytes, opts, err);
  if (st != TN_OK) {
    tn_err_prefix(err, "milp");
    return st;
  }
  milp_fab_t f = {0};
  milp_plan_t start = {0}, best = {0};
  st = milp_i_fab_build(t, size_bytes, opts->chunks_per_npu, opts->steps_per_xfer, &f, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &start, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &best, err);
  if (st == TN_OK) st = starting_plan(&f, opts, &start, res, err);
  if (st != TN_OK) goto fail;
  res->step_ps = f.step_ps;
  res->horizon = start.makespan;
  res->start_ps = start.makespan * f.step_ps;
  st = milp_i_glpk(&f, &start, opts, t0 + opts->time_limit_s, &best, res, err);
  if (st == TN_OK) st = milp_i_replay(&f, &best, out, err);
  if (st == TN_OK) res->objective_ps = best.makespan * f.step_ps;
fail:
  res->solve_s = tn_wall_seconds() - t0;
  milp_i_plan_free(&start);
  milp_i_plan_free(&best);
  milp_i_fab_free(&f);
  if (st != TN_OK) tn_err_prefix(err, "milp");
  return st;
}
