/* bench/bench_algo_verify.c — time to build and verify the Ring and Direct baselines as n
 * and K grow (and Direct All-to-All up to 1024 NPUs); the verifier should scale with
 * nodes + dependencies + semantic state.
 *
 * Usage: bench_algo_verify                  the table above
 *        bench_algo_verify NPUS PREFIX [REPS] verifies the Chakra set PREFIX.<rank>.et (as
 *                                          `tenet synth -o PREFIX` wrote it) REPS times
 *                                          (default 3) and prints each run's CPU time */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "algo/algo.h"
#include "emit/emit.h"

/* CPU seconds of this process: the machine may be shared, so wall time overstates. */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Verifies a, its CPU seconds in *secs and its nodes in *nodes; 1 (said on stderr) when it
 * does not verify. */
static int timed_verify(const algo_t *a, double *secs, uint64_t *nodes) {
  tn_err_t err = {0};
  algo_verify_report_t rep;
  double t0 = cpu_seconds();
  tn_status_t st = algo_verify(a, NULL, &rep, &err);
  *secs = cpu_seconds() - t0;
  *nodes = rep.nodes;
  if (st != TN_OK) fprintf(stderr, "verify: %s\n", err.msg);
  return st != TN_OK;
}

static int run(const char *name,
               tn_status_t (*build)(tn_coll_t, uint32_t, uint64_t, uint32_t, algo_t **, tn_err_t *),
               tn_coll_t coll, uint32_t n, uint32_t k) {
  tn_err_t err = {0};
  algo_t *a = NULL;
  double t0 = cpu_seconds();
  if (build(coll, n, (uint64_t)1 << 30, k, &a, &err) != TN_OK) {
    fprintf(stderr, "build: %s\n", err.msg);
    return 1;
  }
  double t1 = cpu_seconds(), v = 0;
  uint64_t nodes = 0;
  int bad = timed_verify(a, &v, &nodes);
  if (!bad)
    printf("%-6s %-13s n=%4u K=%2u  nodes=%9llu  build %7.1f ms  verify %7.1f ms (CPU)  "
           "(%.0f ns/node)\n",
           name, tn_coll_name(coll), n, k, (unsigned long long)nodes, (t1 - t0) * 1e3, v * 1e3,
           v * 1e9 / (double)nodes);
  algo_free(a);
  return bad;
}

/* Verifies a set read from disk reps times: the producers' sets (trees, forest) have
 * other shapes than the baselines above. */
static int run_set(const char *npus_s, const char *prefix, const char *reps_s) {
  tn_err_t err = {0};
  algo_t *a = NULL;
  unsigned long npus = strtoul(npus_s, NULL, 10), reps = reps_s ? strtoul(reps_s, NULL, 10) : 3;
  if (npus == 0 || npus > UINT32_MAX || reps == 0) {
    fprintf(stderr, "usage: bench_algo_verify [NPUS PREFIX [REPS]]\n");
    return 2;
  }
  if (emit_chakra_read(prefix, (uint32_t)npus, &a, &err) != TN_OK) {
    fprintf(stderr, "read: %s\n", err.msg);
    return 1;
  }
  int bad = 0;
  for (unsigned long i = 0; i < reps && !bad; i++) {
    double v = 0;
    uint64_t nodes = 0;
    if (!(bad = timed_verify(a, &v, &nodes)))
      printf("%s: nodes=%llu  verify %7.1f ms (CPU)  (%.0f ns/node)\n", prefix,
             (unsigned long long)nodes, v * 1e3, v * 1e9 / (double)nodes);
  }
  algo_free(a);
  return bad;
}

int main(int argc, char **argv) {
  if (argc >= 3) return run_set(argv[1], argv[2], argc > 3 ? argv[3] : NULL);
  int bad = 0;
  uint32_t ns[] = {32, 64, 128, 256};
  for (size_t i = 0; i < 4; i++)
    bad |= run("ring", algo_ring, TN_ALLREDUCE, ns[i], 8);
  for (size_t i = 0; i < 4; i++)
    bad |= run("direct", algo_direct, TN_ALLREDUCE, ns[i], 8);
  bad |= run("ring", algo_ring, TN_ALLGATHER, 128, 8);
  bad |= run("ring", algo_ring, TN_REDUCESCATTER, 128, 8);
  bad |= run("ring", algo_ring, TN_ALLREDUCE, 512, 1);
  bad |= run("ring", algo_ring, TN_REDUCESCATTER, 1024, 1);
  /* All-to-All, K pieces per block: n * n * n * K (rank, chunk) pairs, of which a rank's
   * nodes touch 2 n K; 1024 NPUs at 4 was refused as too many slots before the verifier
   * kept only the touched ones. */
  bad |= run("direct", algo_direct, TN_ALLTOALL, 128, 4);
  bad |= run("direct", algo_direct, TN_ALLTOALL, 1024, 4);
  return bad;
}
