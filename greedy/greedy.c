/* greedy/greedy.c — greedy_run: checks the fabric and the memory the plan will need, then
 * plans the All-Gather at the requested chunking or, when asked to choose, at a few
 * candidate chunkings (two at a time on two threads, the choice as a sequential search
 * makes it), keeping the coarsest that finer ones do not beat by 0.2% (doublings past 8
 * chunks: 1%) (plan.c does one pass). */
#include "greedy/greedy_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Candidate chunkings tried when chunks_per_npu is 0, finest last: every one up to
 * GREEDY_FINE_K (a plateau, as 2 and 4 equal and 8 faster, must not end the search), then
 * doublings. */
static const uint32_t k_candidates[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 32};
#define GREEDY_FINE_K 8u
#define NCAND (sizeof k_candidates / sizeof *k_candidates)
/* Work budget of the automatic search, in planned (NPU, chunk) deliveries summed over the
 * candidates tried: a deterministic stand-in for a time budget (about 0.5 us each). */
#define GREEDY_SEARCH_BUDGET ((uint64_t)1 << 21)
/* A finer chunking is kept only when its predicted time is at least this many thousandths
 * shorter than the best so far. Up to GREEDY_FINE_K chunks the gain asked is small, so the
 * choice is within 0.2% of the best of them; beyond, each doubling doubles the nodes that
 * lowering, the Chakra files, verification and simulation pay for, so a gain below 1% is
 * not worth it, and the search ends at the first doubling that does not bring it. */
#define GREEDY_MIN_GAIN_PERMILLE 2u
#define GREEDY_DOUBLING_GAIN_PERMILLE 10u
/* A chunking is only tried when its chunks are at least this big (finer cuts only add
 * events once latency is pipelined away). */
#define GREEDY_MIN_CHUNK_BYTES 1024u

/* searched: at automatic chunking, where synth/ also makes a reduction at its other
 * chunkings (greedy_mem_estimate). */
static tn_status_t check_memory(const topo_t *t, uint64_t size, uint32_t k, tn_coll_t coll,
                                bool searched, tn_err_t *err) {
  char what[96];
  snprintf(what, sizeof what, "greedy: %u NPUs x %u chunks", t->npus, k);
  return tn_mem_check(what, greedy_mem_estimate(t, size, k, coll, searched, 1), err);
}

/* One candidate chunking of the search and its outcome. */
typedef struct attempt {
  uint32_t k;
  bool done, gave_up;
  tn_status_t st;
  tn_err_t err;
  schedule_t s;
} attempt_t;

/* The search, shared by its (at most two) threads under mu. Candidates are planned in
 * order, up to two at once, and their outcomes are applied strictly in order, so the
 * choice is the one a sequential search makes; a candidate started on speculation is
 * cancelled, its work thrown away, when an earlier outcome ends the search. */
typedef struct search {
  const topo_t *t;
  uint64_t size, seed;
  bool rarest; /* greedy_opts_t.rarest */
  attempt_t tries[NCAND];
  uint32_t ntries;
  pthread_mutex_t mu;
  uint32_t next;             /* next candidate to start */
  uint32_t applied;          /* outcomes applied so far */
  int best;                  /* index of the kept plan, -1 before the first */
  uint64_t bound_ps;         /* the All-Gather bandwidth bound: no plan is faster */
  _Atomic uint64_t limit_ps; /* a candidate slower than this cannot be kept */
  atomic_bool over;          /* the search has ended */
  tn_status_t st;
  tn_err_t err;
} search_t;

/* The largest time at most (1000 - permille) thousandths of time_ps (integers). */
static uint64_t less_by(uint64_t time_ps, uint64_t permille) {
  return time_ps / 1000u * (1000u - permille) + time_ps % 1000u * (1000u - permille) / 1000u;
}

/* Applies finished outcomes in candidate order (under mu): the first plan is kept; a
 * later one replaces it only when faster by GREEDY_MIN_GAIN_PERMILLE (a doubling past
 * GREEDY_FINE_K: by GREEDY_DOUBLING_GAIN_PERMILLE, else the search ends); the search also
 * ends at the first failure or once the best is so close to the bandwidth bound that no
 * plan could beat it by that much. */
static void apply(search_t *S) {
  while (!atomic_load(&S->over) && S->applied < S->ntries && S->tries[S->applied].done) {
    attempt_t *c = &S->tries[S->applied];
    bool doubling = c->k > GREEDY_FINE_K;
    uint64_t limit = atomic_load(&S->limit_ps);
    if (doubling && S->best >= 0)
      limit = less_by(S->tries[S->best].s.time_ps, GREEDY_DOUBLING_GAIN_PERMILLE);
    if (c->st != TN_OK) {
      S->st = tn_err_set(&S->err, c->st, "%s", c->err.msg);
      atomic_store(&S->over, true);
    } else if (c->gave_up || c->s.time_ps > limit) {
      if (doubling) atomic_store(&S->over, true);
      schedule_free(&c->s); /* never kept: its memory goes at once */
    } else {
      if (S->best >= 0) schedule_free(&S->tries[S->best].s);
      S->best = (int)S->applied;
      atomic_store(&S->limit_ps, less_by(c->s.time_ps, GREEDY_MIN_GAIN_PERMILLE));
      /* Once even a plan at the bound would not be kept, no finer chunking can be. */
      if (atomic_load(&S->limit_ps) < S->bound_ps) atomic_store(&S->over, true);
    }
    S->applied++;
  }
  if (S->applied == S->ntries) atomic_store(&S->over, true);
}

/* A search thread: takes the next candidate, plans it, applies what finished. */
static void *search_worker(void *arg) {
  search_t *S = arg;
  topo_routes_t *routes = NULL; /* per thread: routes cache lazily */
  tn_err_t rerr = {0};
  tn_status_t rst = topo_routes_create(S->t, &routes, &rerr);
  greedy_i_stop_t stop = {&S->limit_ps, &S->over};
  for (;;) {
    pthread_mutex_lock(&S->mu);
    if (atomic_load(&S->over) || S->next == S->ntries) {
      pthread_mutex_unlock(&S->mu);
      break;
    }
    attempt_t *c = &S->tries[S->next++];
    pthread_mutex_unlock(&S->mu);
    if (rst != TN_OK) {
      c->st = rst;
      c->err = rerr;
    } else {
      /* The first candidate is kept whatever its time: no limit, no cancel. */
      greedy_opts_t o = {.seed = S->seed, .rarest = S->rarest};
      c->st = greedy_i_plan(S->t, routes, S->size, c->k, &o, c == S->tries ? NULL : &stop,
                            &c->gave_up, &c->s, &c->err);
    }
    pthread_mutex_lock(&S->mu);
    c->done = true;
    apply(S);
    pthread_mutex_unlock(&S->mu);
  }
  topo_routes_free(routes);
  return NULL;
}

/* Chooses the chunking among k_candidates by predicted time. Which candidates may be tried
 * depends on the inputs only: in order, while their summed work stays within the budget
 * (the first is always tried), their chunks are at least GREEDY_MIN_CHUNK_BYTES and their
 * memory within the cap; a Reduce-Scatter or All-Reduce skips one chunk per NPU when 2
 * are possible. The first is kept; each next one replaces it only when faster by the gain
 * apply() asks (0.2% up to 8 chunks, 1% for a doubling past them, the first doubling
 * that falls short ending the search), and the search ends once the best is that close to
 * the bandwidth bound (nothing could then be kept). Planned two at a time on two threads
 * with the outcomes applied in order, so the choice is exactly the sequential one (a
 * candidate that can no longer be kept gives up early). */
static tn_status_t search(const topo_t *t, tn_coll_t coll, uint64_t size, uint64_t seed,
                          bool rarest, schedule_t *out, tn_err_t *err) {
  bool reduces = coll != TN_ALLGATHER;
  uint64_t n = t->npus, spent = 0;
  search_t S;
  memset(&S, 0, sizeof S);
  S.t = t;
  S.size = size;
  S.seed = seed;
  S.rarest = rarest;
  S.best = -1;
  tn_status_t bst = topo_lower_bound_ps(t, TN_ALLGATHER, size, &S.bound_ps, err);
  if (bst != TN_OK) return bst;
  atomic_init(&S.limit_ps, UINT64_MAX);
  atomic_init(&S.over, false);
  for (size_t i = 0; i < NCAND; i++) {
    uint32_t k = k_candidates[i];
    uint64_t work = n * (n - 1) * k;
    /* Reduce-Scatter and All-Reduce skip one chunk per NPU if 2 are possible. */
    if (reduces && k == 1 && size / (n * 2) >= GREEDY_MIN_CHUNK_BYTES &&
        greedy_mem_estimate(t, size, 2, coll, reduces, 1) <= tn_mem_cap())
      continue;
    if (S.ntries > 0 &&
        (spent + work > GREEDY_SEARCH_BUDGET || size / (n * k) < GREEDY_MIN_CHUNK_BYTES ||
         size < n * k || greedy_mem_estimate(t, size, k, coll, reduces, 1) > tn_mem_cap()))
      break;
    if (S.ntries == 0) {
      tn_status_t st = check_memory(t, size, k, coll, reduces, err);
      if (st != TN_OK) return st;
    }
    attempt_t *c = &S.tries[S.ntries++];
    c->k = k;
    schedule_init(&c->s, TN_ALLGATHER, t->npus, k, size);
    spent += work;
  }
  if (pthread_mutex_init(&S.mu, NULL) != 0)
    return tn_err_set(err, TN_INTERNAL, "greedy: cannot create the search's mutex");
  pthread_t th;
  /* A second thread only pays off with a second processor (tn_thread_count: the online
   * CPUs or TENET_THREADS); the choice is the same either way. */
  bool threaded =
      S.ntries > 1 && tn_thread_count() > 1 && pthread_create(&th, NULL, search_worker, &S) == 0;
  search_worker(&S);
  if (threaded) pthread_join(th, NULL);
  pthread_mutex_destroy(&S.mu);
  for (uint32_t i = 0; i < S.ntries; i++) {
    if ((int)i == S.best && S.st == TN_OK) {
      schedule_free(out);
      *out = S.tries[i].s;
    } else {
      schedule_free(&S.tries[i].s);
    }
  }
  if (S.st != TN_OK) return tn_err_set(err, S.st, "%s", S.err.msg);
  return S.best >= 0 ? TN_OK : tn_err_set(err, TN_INTERNAL, "greedy: the search kept no plan");
}

tn_status_t greedy_run(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                       schedule_t *out, tn_err_t *err) {
  return greedy_run_for(t, TN_ALLGATHER, size_bytes, opts, out, err);
}

tn_status_t greedy_run_for(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const greedy_opts_t *opts, schedule_t *out, tn_err_t *err) {
  uint32_t k = opts ? opts->chunks_per_npu : 0;
  schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  uint64_t seed = opts ? opts->seed : 0, stagger = opts ? opts->stagger_ps : 0;
  if (t->npus == 0) return tn_err_set(err, TN_INVAL, "greedy: fabric '%s' has no NPU", t->name);
  if (stagger != 0 && k == 0)
    return tn_err_set(err, TN_INVAL, "greedy: a staggered plan needs its chunks per NPU given");
  const uint32_t *roots = opts ? opts->roots : NULL;
  uint32_t nroots = opts ? opts->nroots : 0;
  if (roots != NULL && (k == 0 || nroots == 0))
    return tn_err_set(err, TN_INVAL,
                      "greedy: a plan from roots needs its chunks per NPU and at least one root");
  for (uint32_t i = 0; roots != NULL && i < nroots; i++)
    if (roots[i] >= t->npus)
      return tn_err_set(err, TN_INVAL, "greedy: root %u is NPU %u of %u", i, roots[i], t->npus);
  tn_status_t st = topo_check_connected(t, err);
  if (st != TN_OK) return st;
  if (size_bytes < (uint64_t)t->npus * (k ? k : 1))
    return tn_err_set(err, TN_INVAL,
                      "greedy: size %llu B is smaller than one byte per chunk (%u NPUs x %u "
                      "chunks)",
                      (unsigned long long)size_bytes, t->npus, k ? k : 1);
  if ((uint64_t)t->npus * (k ? k : 1) > UINT32_MAX / 2)
    return tn_err_set(err, TN_LIMIT, "greedy: %u NPUs x %u chunks is too many chunks", t->npus, k);
  if (t->npus == 1) return TN_OK; /* nothing to move */
  if (k != 0 && (st = check_memory(t, size_bytes, k, coll, false, err)) != TN_OK) return st;
  schedule_free(out);
  if (k != 0) {
    topo_routes_t *routes = NULL;
    if ((st = topo_routes_create(t, &routes, err)) == TN_OK)
      st = greedy_i_plan(t, routes, size_bytes, k, opts, NULL, NULL, out, err);
    topo_routes_free(routes);
  } else {
    schedule_init(out, TN_ALLGATHER, t->npus, 1, size_bytes);
    st = search(t, coll, size_bytes, seed, opts && opts->rarest, out, err);
  }
  if (st != TN_OK) { /* leave *out empty so a caller that frees or not is right */
    schedule_free(out);
    schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  }
  return st;
}
