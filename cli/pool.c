/* cli/pool.c — runs independent jobs (compare rows, batch cases) on POSIX threads, handing
 * out indices in order so that results never depend on the number of threads. */
#include "cli/cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct pool {
  pthread_mutex_t mu;
  size_t next, n;
  cli_job_fn fn;
  void *ctx;
  volatile sig_atomic_t *stop;
} pool_t;

typedef struct worker {
  pool_t *pool;
  unsigned id;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pool_t *p = w->pool;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next;
    bool go = i < p->n && (p->stop == NULL || *p->stop == 0);
    if (go) p->next++;
    pthread_mutex_unlock(&p->mu);
    if (!go) break;
    p->fn(p->ctx, i, w->id);
  }
  return NULL;
}

tn_status_t cli_parallel(size_t n, unsigned jobs, cli_job_fn fn, void *ctx,
                         volatile sig_atomic_t *stop, tn_err_t *err) {
  if (jobs == 0) jobs = 1;
  if (jobs > n) jobs = n == 0 ? 1 : (unsigned)n;
  pool_t p = {.next = 0, .n = n, .fn = fn, .ctx = ctx, .stop = stop};
  if (jobs == 1) { /* no thread needed: run inline (simpler to debug, same order) */
    worker_t w = {&p, 0};
    pthread_mutex_init(&p.mu, NULL);
    worker_main(&w);
    pthread_mutex_destroy(&p.mu);
    return TN_OK;
  }
  worker_t *ws = NULL;
  pthread_t *th = NULL;
  tn_status_t st = tn_calloc(jobs, sizeof *ws, &ws, err);
  if (st == TN_OK) st = tn_calloc(jobs, sizeof *th, &th, err);
  if (st != TN_OK) goto done;
  pthread_mutex_init(&p.mu, NULL);
  unsigned started = 0;
  for (; started < jobs; started++) {
    ws[started] = (worker_t){&p, started};
    if (pthread_create(&th[started], NULL, worker_main, &ws[started]) != 0) break;
  }
  if (started == 0) {
    st = tn_err_set(err, TN_INTERNAL, "cannot start worker threads");
  }
  /* With fewer threads than asked the started ones still take every index. */
  for (unsigned i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.mu);
done:
  free(ws);
  free(th);
  return st;
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
