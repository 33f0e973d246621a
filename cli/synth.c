/* cli/synth.c — the synthesis pipeline shared by synth, compare, batch and demo:
 * connectivity check, then baseline construction or planning (greedy, MILP) and lowering
 * to an algo_t. */
#include "cli/cli.h"

#include <string.h>

#include "greedy/greedy.h"
#ifdef TENET_HAVE_MILP
#include "milp/milp.h"
#endif

/* Plans an All-Gather schedule on t (the fabric itself, or its transpose for the
 * Reduce-Scatter half on an asymmetric fabric) with the greedy, or with the MILP warm
 * started by the greedy. coll is what the schedule will be lowered to. */
static tn_status_t plan(const topo_t *t, tn_coll_t coll, uint64_t size, const cli_synth_opts_t *o,
                        schedule_t *s, cli_synth_out_t *out, tn_err_t *err) {
  bool milp = strcmp(o->algo, "milp") == 0;
  /* The MILP solves one chunk per NPU unless told otherwise; its warm start is the
   * greedy's plan with the same chunking. */
  greedy_opts_t g = {.seed = o->seed,
                     .chunks_per_npu = milp && o->chunks_per_npu == 0 ? 1 : o->chunks_per_npu};
  if (!milp) return greedy_run_for(t, coll, size, &g, s, err);
#ifdef TENET_HAVE_MILP
  schedule_t warm;
  tn_status_t st = greedy_run_for(t, coll, size, &g, &warm, err);
  if (st != TN_OK) return st;
  milp_opts_t m;
  milp_opts_init(&m);
  if (o->time_limit_s > 0) m.time_limit_s = o->time_limit_s;
  m.chunks_per_npu = g.chunks_per_npu;
  m.warm = &warm;
  m.verbose = o->verbose;
  /* Timing-only dependencies keep the replay at the MILP's objective; the Reduce-Scatter
   * reversal reads every dependency as data, so they are for All-Gather only. */
  m.gate_sends = coll == TN_ALLGATHER;
  milp_result_t res;
  st = milp_solve(t, size, &m, s, &res, err);
  schedule_free(&warm);
  /* An All-Reduce on an asymmetric fabric solves twice: report the weaker outcome (the
   * status names run optimal < feasible < timeout). */
  if (st == TN_OK &&
      (out->milp_status == NULL || strcmp(out->milp_status, milp_status_name(MILP_OPTIMAL)) == 0 ||
       res.status == MILP_TIMEOUT))
    out->milp_status = milp_status_name(res.status);
  return st;
#else
  (void)coll, (void)size, (void)s, (void)out;
  return tn_err_set(err, TN_INVAL, "this build of tenet has no MILP (TENET_WITH_MILP=OFF)");
#endif
}

/* Greedy and MILP: plan All-Gather schedules and lower them. A reversed schedule runs on
 * the transposed links, so on an asymmetric fabric the Reduce-Scatter half is planned on
 * the transposed fabric; an All-Reduce then joins that half with an All-Gather planned on
 * the fabric itself, with the same chunking. */
static tn_status_t synth_planned(const topo_t *t, tn_coll_t coll, uint64_t size,
                                 const cli_synth_opts_t *o, cli_synth_out_t *out, tn_err_t *err) {
  schedule_t rs, ag;
  schedule_init(&rs, TN_ALLGATHER, 0, 1, 0);
  schedule_init(&ag, TN_ALLGATHER, 0, 1, 0);
  topo_t *tt = NULL;
  tn_status_t st;
  if (coll == TN_ALLGATHER || topo_is_symmetric(t)) {
    schedule_free(&ag);
    st = plan(t, coll, size, o, &ag, out, err);
    if (st == TN_OK) st = algo_from_schedule(&ag, coll, o->algo, &out->algo, err);
    /* The plan's time is the All-Gather's; the other two are timed by simulation. */
    if (st == TN_OK && coll == TN_ALLGATHER) out->predicted_ps = ag.time_ps;
    goto done;
  }
  schedule_free(&rs);
  if ((st = topo_transpose(t, &tt, err)) != TN_OK) goto done;
  if ((st = plan(tt, coll, size, o, &rs, out, err)) != TN_OK) goto done;
  if (coll == TN_REDUCESCATTER) {
    st = algo_from_schedule(&rs, coll, o->algo, &out->algo, err);
    goto done;
  }
  cli_synth_opts_t same = *o;
  same.chunks_per_npu = rs.chunks_per_npu;
  schedule_free(&ag);
  if ((st = plan(t, TN_ALLGATHER, size, &same, &ag, out, err)) != TN_OK) goto done;
  st = algo_allreduce_from_schedules(&rs, &ag, o->algo, &out->algo, err);
done:
  schedule_free(&rs);
  schedule_free(&ag);
  topo_free(tt);
  return st;
}

tn_status_t cli_synthesize(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const cli_synth_opts_t *opts, cli_synth_out_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  const char *algo = opts->algo ? opts->algo : "greedy";
  bool baseline = strcmp(algo, "ring") == 0 || strcmp(algo, "direct") == 0;
  /* The greedy (and the MILP's warm start) refuses a disconnected fabric itself; the
   * baselines do not look at the fabric, so the check is made here for them. */
  tn_status_t st = baseline ? topo_check_connected(t, err) : TN_OK;
  if (st != TN_OK) return st;
  uint32_t k = opts->chunks_per_npu;
  if (size_bytes < (uint64_t)t->npus * (k ? k : 1))
    return tn_err_set(err, TN_INVAL,
                      "size %llu B is smaller than one byte per chunk (%u NPUs x %u chunks)",
                      (unsigned long long)size_bytes, t->npus, k ? k : 1);
  double t0 = tn_wall_seconds();
  if (strcmp(algo, "ring") == 0) {
    st = algo_ring(coll, t->npus, size_bytes, k ? k : 1, &out->algo, err);
  } else if (strcmp(algo, "direct") == 0) {
    st = algo_direct(coll, t->npus, size_bytes, k ? k : 1, &out->algo, err);
  } else if (strcmp(algo, "greedy") == 0 || strcmp(algo, "milp") == 0) {
    cli_synth_opts_t o = *opts;
    o.algo = algo;
    st = synth_planned(t, coll, size_bytes, &o, out, err);
  } else {
    return tn_err_set(err, TN_INVAL, "unknown algorithm '%s' (use greedy, milp, ring or direct)",
                      algo);
  }
  if (st == TN_OK) st = algo_fill_idle(out->algo, err);
  out->synth_ms = (tn_wall_seconds() - t0) * 1e3;
  if (st != TN_OK) {
    algo_free(out->algo);
    out->algo = NULL;
  }
  return st;
}
