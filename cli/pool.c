/* cli/pool.c — runs independent jobs (compare rows, batch cases) through tn_parallel_for,
 * adding the stop flag of an interrupted batch; results never depend on the number of
 * threads. */
#include "cli/cli.h"

#include <unistd.h>

typedef struct pool {
  cli_job_fn fn;
  void *ctx;
  volatile sig_atomic_t *stop;
} pool_t;

/* One index: skipped once *stop is set (indices are claimed in increasing order, so the
 * ones run are a prefix plus those already started). */
static void run_job(void *ctx, size_t i, unsigned worker) {
  pool_t *p = ctx;
  if (p->stop == NULL || *p->stop == 0) p->fn(p->ctx, i, worker);
}

tn_status_t cli_parallel(size_t n, unsigned jobs, cli_job_fn fn, void *ctx,
                         volatile sig_atomic_t *stop, tn_err_t *err) {
  (void)err; /* tn_parallel_for runs what it cannot hand to threads on the caller */
  pool_t p = {fn, ctx, stop};
  tn_parallel_for(n, jobs ? jobs : 1, run_job, &p);
  return TN_OK;
}

unsigned cli_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : (n > 1024 ? 1024u : (unsigned)n);
}

tn_status_t cli_parse_jobs(const char *s, unsigned *jobs, tn_err_t *err) {
  uint64_t v = 0;
  tn_status_t st = tn_parse_u64(s, 1, 1024, "--jobs", &v, err);
  if (st == TN_OK) *jobs = (unsigned)v;
  return st;
}
