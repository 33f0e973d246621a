/* synth/planned.c — collectives from planned schedules. The greedy's and the MILP's are
 * All-Gather plans: an All-Gather is lowered as planned; a Reduce-Scatter is an
 * All-Gather planned on the transposed fabric and run backwards; an All-Reduce joins the
 * two halves chunk by chunk (on a symmetric fabric the transposed fabric is the fabric
 * itself, so one plan serves). The forest plans its Reduce-Scatter forward, and its
 * All-Reduce joins that to its All-Gather (see forest_reduce). */
#include <string.h>

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
    forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu, .pace = true};
    st = forest_run(t, size, &f, s, err);
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

/* One planned collective. */
static tn_status_t planned(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                           synth_method_t m, synth_result_t *out, tn_err_t *err) {
  if (coll != TN_ALLGATHER && !topo_is_symmetric(t))
    return planned_asymmetric(t, coll, size, o, m, out, err);
  schedule_t s;
  tn_status_t st = plan(t, coll, size, o, m, &s, out, err);
  if (st == TN_OK) st = algo_from_schedule(&s, coll, synth_method_name(m), &out->algo, err);
  /* An All-Gather plan's time is exact; the other two are timed by simulation. */
  if (st == TN_OK && coll == TN_ALLGATHER) out->time_ps = s.time_ps;
  schedule_free(&s);
  return st;
}

/* The forest's Reduce-Scatter is planned forward up its trees (forest_run_reduce); its
 * All-Reduce joins that to the forest's paced All-Gather with the same chunking, chunk by
 * chunk, and times the whole on the engine (both exactly as the simulator runs them). */
static tn_status_t forest_reduce(const topo_t *t, tn_coll_t coll, uint64_t size,
                                 const synth_opts_t *o, synth_result_t *out, tn_err_t *err) {
  forest_opts_t f = {.chunks_per_npu = o->chunks_per_npu, .pace = true};
  schedule_t rs, ag, ar;
  schedule_init(&ag, TN_ALLGATHER, 0, 1, 0);
  schedule_init(&ar, TN_ALLREDUCE, 0, 1, 0);
  tn_status_t st = coll == TN_ALLREDUCE ? forest_run_halves(t, size, &f, &rs, &ag, err)
                                        : forest_run_reduce(t, size, &f, &rs, err);
  const schedule_t *done = &rs;
  if (st == TN_OK && coll == TN_ALLREDUCE) {
    st = schedule_join_allreduce(&rs, &ag, &ar, err);
    if (st == TN_OK) st = schedule_replay(t, &ar, err);
    done = &ar;
  }
  if (st == TN_OK)
    st = algo_from_schedule(done, coll, synth_method_name(SYNTH_FOREST), &out->algo, err);
  if (st == TN_OK) out->time_ps = done->time_ps;
  schedule_free(&rs);
  schedule_free(&ag);
  schedule_free(&ar);
  return st;
}

/* All-to-All: the greedy's routed pieces (the other planners make none). */
static tn_status_t alltoall(const topo_t *t, uint64_t size, const synth_opts_t *o, synth_method_t m,
                            synth_result_t *out, tn_err_t *err) {
  if (m != SYNTH_GREEDY) /* synth_method_applies let only the greedy through */
    return tn_err_set(err, TN_INTERNAL, "%s: no All-to-All planner", synth_method_name(m));
  greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = o->chunks_per_npu};
  schedule_t s;
  tn_status_t st = greedy_alltoall(t, size, &g, &s, err);
  if (st == TN_OK) st = algo_from_schedule(&s, TN_ALLTOALL, synth_method_name(m), &out->algo, err);
  if (st == TN_OK) out->time_ps = s.time_ps;
  schedule_free(&s);
  return st;
}

tn_status_t synth_i_planned(const topo_t *t, tn_coll_t coll, uint64_t size, const synth_opts_t *o,
                            synth_method_t m, synth_result_t *out, tn_err_t *err) {
  if (coll == TN_ALLTOALL) return alltoall(t, size, o, m, out, err);
  if (m == SYNTH_FOREST && coll != TN_ALLGATHER) return forest_reduce(t, coll, size, o, out, err);
  return planned(t, coll, size, o, m, out, err);
}
