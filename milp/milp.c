/* milp/milp.c — milp_solve: validates the request, discretises the fabric, builds the
 * starting plan (own list scheduler, or the caller's warm start re-timed, whichever is
 * shorter), lets GLPK improve and prove it, and replays the answer through ten's engine
 * into a schedule_t. */
#include "milp/milp_internal.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

void milp_opts_init(milp_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->time_limit_s = 60.0;
  o->node_limit = MILP_DEFAULT_NODE_LIMIT;
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
  if (o->node_limit == 0)
    return tn_err_set(err, TN_INVAL, "the node limit must be at least 1, not 0");
  if (o->iter_limit > INT_MAX)
    return tn_err_set(err, TN_INVAL, "the iteration limit must be at most %d, not %llu", INT_MAX,
                      (unsigned long long)o->iter_limit);
  if (o->steps_per_xfer > 16)
    return tn_err_set(err, TN_INVAL, "steps per transfer must be in 1..16, not %u",
                      o->steps_per_xfer);
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "fabric '%s' has %u NPU; it needs 2", t->name, t->npus);
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

/* The symmetric model first (fabrics with translation symmetry, up to half the work and
 * half the time): small, so GLPK usually solves it at once. If it reaches the lower bound
 * the answer is optimal outright (*done, in sym); otherwise it becomes the full model's
 * start when shorter (*improved). A stop without a solution is no error. */
static tn_status_t solve_symmetric(const milp_fab_t *f, const milp_opts_t *o, double t0,
                                   milp_plan_t *start, milp_plan_t *sym, bool *improved, bool *done,
                                   milp_budget_t *used, uint64_t *held, milp_result_t *res,
                                   tn_err_t *err) {
  milp_plan_t s0 = {0};
  milp_result_t sres = {0};
  /* iters 0: milp_i_glpk scales the limit to the model's size */
  milp_budget_t half = {.iters = (o->iter_limit + 1) / 2, .nodes = (o->node_limit + 1) / 2};
  bool found = false;
  uint32_t bound = 0;
  *improved = *done = false;
  tn_status_t st = milp_i_plan_init(f, &s0, err);
  if (st == TN_OK) st = milp_i_heuristic(f, true, &s0, err);
  if (st == TN_OK)
    st = milp_i_glpk(f, true, &s0, o, &half, t0 + o->time_limit_s / 2, sym, &found, &bound, used,
                     held, &sres, err);
  res->over_mem_cap = sres.over_mem_cap;
  if (st != TN_OK || !found) goto out;
  if (sym->makespan == f->lb_steps) {
    *done = true;
    *res = (milp_result_t){.status = MILP_OPTIMAL,
                           .stop = MILP_STOP_PROVEN,
                           .cols = sres.cols,
                           .rows = sres.rows,
                           .symmetric = true};
  } else if (sym->makespan < start->makespan) {
    plan_copy(f, sym, start);
    *improved = true;
  }
out:
  milp_i_plan_free(&s0);
  return st;
}

static uint64_t less_used(uint64_t have, uint64_t used) {
  return used < have ? have - used : 0;
}

/* The full model with the work the symmetric one left. Without a solution from GLPK the
 * starting plan is the answer (best). */
static tn_status_t solve_full(const milp_fab_t *f, const milp_opts_t *o, double t0,
                              const milp_plan_t *start, const milp_budget_t *sym_used,
                              milp_plan_t *best, uint32_t *bound, milp_budget_t *used,
                              uint64_t *held, milp_result_t *r, tn_err_t *err) {
  bool auto_iters = o->iter_limit == 0;
  milp_budget_t left = {.iters = auto_iters ? 0 : less_used(o->iter_limit, sym_used->iters),
                        .nodes = (uint32_t)less_used(o->node_limit, sym_used->nodes)};
  bool found = false;
  tn_status_t st = TN_OK;
  *bound = f->lb_steps;
  r->status = MILP_FEASIBLE;
  r->incumbent_is_start = true;
  if (start->makespan == f->lb_steps)
    r->stop = MILP_STOP_PROVEN; /* the start meets the lower bound: nothing to search */
  else if ((!auto_iters && left.iters == 0) || left.nodes == 0)
    r->stop = left.iters == 0 ? MILP_STOP_ITERS : MILP_STOP_NODES;
  else
    st = milp_i_glpk(f, false, start, o, &left, t0 + o->time_limit_s, best, &found, bound, used,
                     held, r, err);
  if (st == TN_OK && !found) plan_copy(f, start, best);
  return st;
}

static tn_status_t solve_unlocked(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                                  schedule_t *out, milp_result_t *res, tn_err_t *err) {
  double t0 = tn_wall_seconds();
  memset(res, 0, sizeof *res);
  res->status = MILP_FEASIBLE;
  schedule_init(out, TN_ALLGATHER, t ? t->npus : 0, opts ? opts->chunks_per_npu : 0, size_bytes);
  tn_status_t st = validate(t, size_bytes, opts, err);
  if (st == TN_OK) st = open_log(opts, err);
  if (st != TN_OK) {
    tn_err_prefix(err, "milp");
    return st;
  }
  milp_fab_t f = {0};
  milp_plan_t start = {0}, best = {0}, sym = {0};
  milp_result_t r = {.status = MILP_FEASIBLE};
  milp_budget_t sym_used = {0}, full_used = {0};
  bool improved = false, done = false, warm_used = false;
  uint32_t bound = 0;
  uint64_t held = 0; /* the largest model given to GLPK so far (milp_i_model_bytes) */
  st = milp_i_fab_build(t, size_bytes, opts->chunks_per_npu, opts->steps_per_xfer, &f, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &start, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &best, err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &sym, err);
  if (st == TN_OK) st = starting_plan(&f, opts, &start, &warm_used, err);
  if (st != TN_OK) goto fail;
  uint32_t horizon = start.makespan;
  if (f.perm)
    st = solve_symmetric(&f, opts, t0, &start, &sym, &improved, &done, &sym_used, &held, &r, err);
  if (st == TN_OK && done) {
    plan_copy(&f, &sym, &best);
    bound = sym.makespan;
  } else if (st == TN_OK) {
    st = solve_full(&f, opts, t0, &start, &sym_used, &best, &bound, &full_used, &held, &r, err);
    /* the answer is the symmetric model's when it became the full model's start */
    if (improved && r.incumbent_is_start) r.symmetric = true, r.incumbent_is_start = false;
  }
  if (st != TN_OK) goto fail;
  if (best.makespan == bound) /* the lower bound proves it, whatever stopped the search */
    r.status = MILP_OPTIMAL, r.stop = MILP_STOP_PROVEN;
  *res = r;
  res->steps = best.makespan;
  res->step_ps = f.step_ps;
  res->horizon = horizon;
  res->start_ps = horizon * f.step_ps;
  res->warm_used = warm_used;
  res->objective_ps = best.makespan * f.step_ps;
  res->bound_ps = (uint64_t)bound * f.step_ps;
  res->gap = best.makespan ? (double)(best.makespan - bound) / best.makespan : 0.0;
  res->iters = sym_used.iters + full_used.iters;
  res->nodes = sym_used.nodes + full_used.nodes;
  st = milp_i_replay(&f, &best, opts->gate_sends, out, &res->gated, err);
fail:
  if (st != TN_OK) {
    res->status = r.status;
    res->cols = r.cols, res->rows = r.rows;
    /* past validation, a cap can only be the model's (steps of the discrete model) */
    res->over_mem_cap = r.over_mem_cap;
    res->model_too_large = st == TN_LIMIT && !r.over_mem_cap;
  }
  res->solve_s = tn_wall_seconds() - t0;
  res->mem_bytes = MILP_MEM_BASE + held;
  milp_i_plan_free(&start);
  milp_i_plan_free(&best);
  milp_i_plan_free(&sym);
  milp_i_fab_free(&f);
  if (st != TN_OK) tn_err_prefix(err, "milp");
  return st;
}

uint64_t milp_mem_estimate(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts) {
  tn_err_t err = {0};
  milp_fab_t f = {0};
  milp_plan_t start = {0}, s0 = {0};
  bool warm_used = false;
  uint64_t held = 0, bytes = 0;
  tn_status_t st = validate(t, size_bytes, opts, &err);
  if (st == TN_OK)
    st = milp_i_fab_build(t, size_bytes, opts->chunks_per_npu, opts->steps_per_xfer, &f, &err);
  if (st == TN_OK) st = milp_i_plan_init(&f, &start, &err);
  if (st == TN_OK) st = starting_plan(&f, opts, &start, &warm_used, &err);
  if (st == TN_OK && f.perm) { /* the symmetric model, from its own heuristic */
    st = milp_i_plan_init(&f, &s0, &err);
    if (st == TN_OK) st = milp_i_heuristic(&f, true, &s0, &err);
    uint64_t half = opts->iter_limit ? (opts->iter_limit + 1) / 2 : 0; /* as solve_symmetric */
    if (st == TN_OK) st = milp_i_model_bytes(&f, true, &s0, half, &bytes, &err);
    held = bytes;
  }
  if (st == TN_OK && start.makespan != f.lb_steps) {
    /* the full model's limit is what the symmetric one leaves: at most the whole */
    st = milp_i_model_bytes(&f, false, &start, opts->iter_limit, &bytes, &err);
    if (bytes > held) held = bytes;
  }
  milp_i_plan_free(&start);
  milp_i_plan_free(&s0);
  milp_i_fab_free(&f);
  return st == TN_OK ? MILP_MEM_BASE + held : 0;
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
