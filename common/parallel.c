/* common/parallel.c — a parallel for over independent items on POSIX threads: the per-rank
 * stages (Chakra files written and read, lowering shares) and the CLI's job pools
 * (compare rows, batch cases). Each item writes only its own results, so the output does
 * not depend on which thread ran it or when. */
#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { TN_MAX_THREADS = 1024, TN_DEFAULT_MAX_THREADS = 8 };

/* TENET_THREADS as a count in 1..TN_MAX_THREADS; false when it is not one. */
static bool parse_threads(const char *env, unsigned *n) {
  char *end = NULL;
  errno = 0;
  long v = strtol(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || v < 1 || v > TN_MAX_THREADS) return false;
  *n = (unsigned)v;
  return true;
}

/* This thread's cap on the count (tn_thread_limit), 0 for none. */
static _Thread_local unsigned thread_limit;

static unsigned configured_threads(void) {
  const char *env = getenv("TENET_THREADS");
  unsigned n = 0;
  if (env && *env && parse_threads(env, &n)) return n;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) return 1;
  return cpus > TN_DEFAULT_MAX_THREADS ? TN_DEFAULT_MAX_THREADS : (unsigned)cpus;
}

unsigned tn_thread_count(void) {
  unsigned n = configured_threads();
  return thread_limit != 0 && thread_limit < n ? thread_limit : n;
}

unsigned tn_thread_limit(unsigned n) {
  unsigned prev = thread_limit;
  thread_limit = n;
  return prev;
}

tn_status_t tn_thread_env_check(tn_err_t *err) {
  const char *env = getenv("TENET_THREADS");
  unsigned n = 0;
  if (env == NULL || *env == '\0' || parse_threads(env, &n)) return TN_OK;
  return tn_err_set(err, TN_INVAL,
                    "TENET_THREADS='%.40s' is not a thread count (a whole number %d..%d)", env, 1,
                    TN_MAX_THREADS);
}

typedef struct job {
  size_t n;
  atomic_size_t next; /* the next item to claim */
  tn_parallel_fn fn;
  void *ctx;
} job_t;

typedef struct worker {
  job_t *job;
  unsigned id;
} worker_t;

static void run_items(job_t *j, unsigned id) {
  for (;;) {
    size_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (i >= j->n) return;
    j->fn(j->ctx, i, id);
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  run_items(w->job, w->id);
  return NULL;
}

unsigned tn_parallel_for(size_t n, unsigned threads, tn_parallel_fn fn, void *ctx) {
  if (threads > TN_MAX_THREADS) threads = TN_MAX_THREADS;
  if (threads > n) threads = (unsigned)n;
  if (threads == 0) threads = 1;
  job_t job = {.n = n, .fn = fn, .ctx = ctx};
  atomic_init(&job.next, 0);
  pthread_t *th = NULL;
  worker_t *ws = NULL;
  unsigned started = 0;
  if (threads > 1 && tn_calloc(threads, sizeof *th, &th, NULL) == TN_OK &&
      tn_calloc(threads, sizeof *ws, &ws, NULL) == TN_OK)
    for (unsigned t = 1; t < threads; t++) { /* worker 0 is the caller */
      ws[started] = (worker_t){&job, t};
      if (pthread_create(&th[started], NULL, worker_main, &ws[started]) != 0) break;
      started++;
    }
  run_items(&job, 0);
  for (unsigned t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  free(th);
  free(ws);
  return started + 1;
}
