/* milp/milp.c — milp_solve: validates the request, discretises the fabric, builds the
 * starting plan (own list scheduler, or the caller's warm start re-timed, whichever is
 * shorter), lets GLPK improve and prove it, and replays the answer through ten's engine
 * into a schedule_t. */
#include "milp/milp_internal.h"

#include <math.h>
#include <pthread.h>
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
    return tn_err_set(err, TN_INVAL, "the time limit must be > 0 s, not %g", o->time_limit_s);
  if (o->steps_per_xfer > 16)
    return tn_err_set(err, TN_INVAL, "steps per transfer must be in 1..16, not %u",
                      o->steps_per_xfer);
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "fabric '%s' has %u NPU; an All-Gather needs 2", t->name,
                      t->npus);
  if (t->npus > MILP_MAX_NPUS)
    return tn_err_set(err, TN_LIMIT,
                      "fabric '%s' has %u NPUs, above the MILP's cap "
                      "of %u (use the greedy)",
                      t->name, t->npus, MILP_MAX_NPUS);
  uint64_t chunks = (uint64_t)t->npus * o->chunks_per_npu;
  if (size_bytes < chunks)
    return tn_err_set(err, TN_INVAL,
                      "size %llu B is less than one byte for each of "
                      "the %llu chunks",
                      (unsigned long long)size_bytes, (unsigned long long)chunks);
  const schedule_t *w = o->warm;
  if (w && w->size_bytes != size_bytes)
    return tn_err_set(err, TN_INVAL, "warm start is for %llu B, not %llu B",
                      (unsigned long long)w->size_bytes, (unsigned long long)size_bytes);
  return TN_OK;
}

/* The starting plan: the shorter of the list scheduler's and the re-timed warm start. */
static tn_status_t starting_plan(const milp_fab_t *f, const milp_opts_t *o, milp_plan_t *p,
                                 bool *warm_used, tn_err_t *err) {
  tn_status_t st = milp_i_heuristic(f, false, p, err);
  if (st != TN_OK || o->warm == NULL) return st;
  milp_plan_t w = {0};
  bool fits = false;
  if ((st = milp_i_plan_init(f, &w, err)) == TN_OK &&
      (st = milp_i_retime(f, o->warm, &w, &fits, err)) == TN_OK && fits &&
      w.makespan <= p->makespan) {
    milp_plan_t tmp = *p;
    *p = w;
    w = tmp;
    *warm_used = true;
  }
  milp_i_plan_free(&w);
  return st;
}

/* Truncates the log (and finds out early that it cannot be written). */
static tn_status_t open_log(const milp_opts_t *o, tn_err_t *err) {
  if (o->log_path == NULL || o->verbose) return TN_OK;
  FILE *f = fopen(o->log_path, "w");
  if (f == NULL) return tn_err_set(err, TN_IO, "cannot write the MILP log '%s'", o->log_path);
  fclose(f);
  return TN_OK;
}

static void plan_copy(const milp_fab_t *f, const milp_plan_t *from, milp_plan_t *to) {
  size_t n = (size_t)f->nchunks * f->npus;
  memcpy(to->vl, from->vl, n * sizeof *to->vl);
  memcpy(to->step, from->step, n * sizeof *to->step);
  to->makespan = from->makespan;
}

/* The symmetric model first (fabrics with translation symmetry, up to half the time):
 * small, so GLPK usually solves it at once. If it reaches the lower bound the answer is
 * optimal outright (*done); otherwise it becomes the full model's start when shorter, and
 * the fallback answer should the full model time out. A symmetric timeout is no error. */
static tn_status_t solve_symmetric(const milp_fab_t *f, const milp_opts_t *o, double t0,
                                   milp_plan_t *start, milp_plan_t *sym, bool *have, bool *done,
                                   milp_result_t *res, tn_err_t *err) {
  milp_plan_t s0 = {0};
  milp_result_t sres = {0};
  tn_err_t e2 = {0};
  *have = *done = false;
  tn_status_t st = milp_i_plan_init(f, &s0, err);
  if (st == TN_OK) st = milp_i_heuristic(f, true, &s0, err);
  if (st != TN_OK) goto out;
  st = milp_i_glpk(f, true, &s0, o, t0 + o->time_limit_s / 2, sym, &sres, &e2);
  if (st == TN_LIMIT && sres.status == MILP_TIMEOUT) {
    st = TN_OK;
    goto out;
  }
  if (st != TN_OK) {
    tn_err_set(err, st, "%s", e2.msg);
    goto out;
  }
  *have = true;
  if (sym->makespan == f->lb_steps) {
    *done = true;
    *res = (milp_result_t){.status = MILP_OPTIMAL,
                           .steps = sym->makespan,
                           .bound_ps = sym->makespan * f->step_ps,
                           .cols = sres.cols,
                           .rows = sres.rows,
                           .symmetric = true};
  } else if (sym->makespan < start->makespan) {
    plan_copy(f, sym, start);
  }
out:
  milp_i_plan_free(&s0);
  return st;
}

static tn_status_t solve_unlocked(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                                  schedule_t *out, milp_result_t *res, tn_err_t *err) {
  double t0 = tn_wall_seconds();
  memset(res, 0, sizeof *res);
  res->status = MILP_TIMEOUT;
  schedule_init(out, TN_ALLGATHER, t ? t->npus : 0, opts ? opts->chunks_per_npu : 0, size_bytes);
  tn_status_t st = validate(t, size_bytes, opts, err);
  if (st == TN_OK) st = open_log(opts, err);
  if (st != TN_OK) {
    tn_err_prefix(err, "milp");
    return st;
  }
  milp_fab_t f = {0};
  milp_plan_t start = {0}, best = {0}, sym = {0};
  milp_result_t r = {.status = MILP_TIMEOUT};
  bool have_sym = false, done = false, warm_used = false;
  st = milp_i_fab_build(t, size_bytes, opts->chunks_per_npu, opts->steps_per_xfer, &f, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &start, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &best, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &sym, err);
  if (st == TN_OK) st = starting_plan(&f, opts, &start, &warm_used, err);
  if (st != TN_OK) goto fail;
  uint32_t horizon = start.makespan;
  if (f.perm) st = solve_symmetric(&f, opts, t0, &start, &sym, &have_sym, &done, &r, err);
  if (st == TN_OK && done) {
    plan_copy(&f, &sym, &best);
  } else if (st == TN_OK) {
    tn_err_t e2 = {0};
    st = milp_i_glpk(&f, false, &start, opts, t0 + opts->time_limit_s, &best, &r, &e2);
    if (st == TN_LIMIT && r.status == MILP_TIMEOUT && have_sym) {
      /* GLPK's answer to the symmetric model stands, with the gap to the bound. */
      st = TN_OK;
      plan_copy(&f, &sym, &best);
      r.status = MILP_FEASIBLE;
      r.symmetric = true;
      r.incumbent_is_start = false;
      r.bound_ps = f.lb_steps * f.step_ps;
      r.gap = (double)(sym.makespan - f.lb_steps) / sym.makespan;
    } else if (st != TN_OK) {
      tn_err_set(err, st, "%s", e2.msg);
    }
  }
  if (st != TN_OK) goto fail;
  *res = r;
  res->steps = best.makespan;
  res->step_ps = f.step_ps;
  res->horizon = horizon;
  res->start_ps = horizon * f.step_ps;
  res->warm_used = warm_used;
  res->objective_ps = best.makespan * f.step_ps;
  st = milp_i_replay(&f, &best, opts->gate_sends, out, &res->gated, err);
fail:
  if (st != TN_OK) {
    res->status = r.status;
    res->cols = r.cols, res->rows = r.rows;
  }
  res->solve_s = tn_wall_seconds() - t0;
  milp_i_plan_free(&start);
  milp_i_plan_free(&best);
  milp_i_plan_free(&sym);
  milp_i_fab_free(&f);
  if (st != TN_OK) tn_err_prefix(err, "milp");
  return st;
}

/* GLPK's environment (hooks, memory accounting) is process-wide unless GLPK was built
 * with thread-local storage, so one solve runs at a time (tenet batch runs cases on
 * several threads). */
static pthread_mutex_t glpk_mu = PTHREAD_MUTEX_INITIALIZER;

tn_status_t milp_solve(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                       schedule_t *out, milp_result_t *res, tn_err_t *err) {
  pthread_mutex_lock(&glpk_mu);
  tn_status_t st = solve_unlocked(t, size_bytes, opts, out, res, err);
  pthread_mutex_unlock(&glpk_mu);
  if (st != TN_OK) { /* as greedy_run: a failure leaves *out empty, nothing to free */
    schedule_free(out);
    schedule_init(out, TN_ALLGATHER, t ? t->npus : 0, opts ? opts->chunks_per_npu : 0, size_bytes);
  }
  return st;
}
