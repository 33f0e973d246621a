/* cli/synth.c — the synthesis pipeline shared by synth, compare, batch and demo:
 * connectivity check, then baseline construction or planning (greedy, MILP) and lowering
 * to an algo_t. */
#include "cli/cli.h"

#include <string.h>

#include "greedy/greedy.h"
#ifdef TENET_HAVE_MILP
#include "milp/milp.h"
#endif

static tn_status_t plan_greedy(const topo_t *t, uint64_t size, const cli_synth_opts_t *o,
                               schedule_t *s, tn_err_t *err) {
  greedy_opts_t g = {.seed = o->seed, .chunks_per_npu = o->chunks_per_npu};
  return greedy_run(t, size, &g, s, err);
}

static tn_status_t synth_planned(const topo_t *t, tn_coll_t coll, uint64_t size,
                                 const cli_synth_opts_t *o, cli_synth_out_t *out,
                                 tn_err_t *err) {
  schedule_t warm;
  cli_synth_opts_t g = *o;
  /* The MILP solves one chunk per NPU unless told otherwise; its warm start is the
   * greedy's plan with the same chunking. */
  if (strcmp(o->algo, "milp") == 0 && g.chunks_per_npu == 0) g.chunks_per_npu = 1;
  tn_status_t st = plan_greedy(t, size, &g, &warm, err);
  if (st != TN_OK) return st;
  if (strcmp(o->algo, "greedy") == 0) {
    out->predicted_ps = warm.time_ps;
    st = algo_from_schedule(&warm, coll, "greedy", &out->algo, err);
    schedule_free(&warm);
    return st;
  }
#ifdef TENET_HAVE_MILP
  schedule_t best;
  milp_result_t res;
  milp_opts_t m = {.time_limit_s = o->time_limit_s > 0 ? o->time_limit_s : 60.0,
                   .chunks_per_npu = g.chunks_per_npu,
                   .warm = &warm,
                   .verbose = o->verbose};
  st = milp_solve(t, size, &m, &best, &res, err);
  schedule_free(&warm);
  if (st != TN_OK) return st;
  out->milp_status = milp_status_name(res.status);
  out->predicted_ps = best.time_ps;
  st = algo_from_schedule(&best, coll, "milp", &out->algo, err);
  schedule_free(&best);
  return st;
#else
  schedule_free(&warm);
  return tn_err_set(err, TN_INVAL, "this build of tenet has no MILP (TENET_WITH_MILP=OFF)");
#endif
}

tn_status_t cli_synthesize(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const cli_synth_opts_t *opts, cli_synth_out_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  const char *algo = opts->algo ? opts->algo : "greedy";
  tn_status_t st = topo_check_connected(t, err);
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
