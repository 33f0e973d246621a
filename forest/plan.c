/* forest/plan.c — the All-Gather planner: runs the chunks down the packed trees on
 * ten/'s engine, every NPU forwarding a chunk to its children in that chunk's tree as soon
 * as it arrives. The engine is the simulator's, so the plan's time is the simulated one. */
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

typedef struct plan {
  const topo_t *t;
  uint32_t n, k;    /* NPUs, chunks per NPU */
  forest_kids_t kd; /* children in the trees, the tree of each chunk */
  ten_engine_t *eng;
  schedule_t *s;
  uint64_t size;
  uint32_t ahead;     /* pacing: own chunks an NPU may send ahead of its deliveries'
                         rate (0: no pacing, every own chunk at once) */
  uint32_t *got;      /* per NPU: deliveries so far */
  uint32_t *released; /* per NPU: own chunks sent so far */
  uint32_t *last_in;  /* per NPU: index of its latest delivery */
} plan_t;

/* Sends chunk c from u to each of its children in c's tree; dep is the transfer that
 * brought c to u, or at the owner SCHED_NONE or the delivery that releases it (pacing). */
static tn_status_t forward(plan_t *p, uint32_t u, uint32_t c, uint32_t dep, tn_err_t *err) {
  uint32_t nkids;
  const uint32_t *kid = forest_i_children(&p->kd, forest_i_tree_of(&p->kd, c), u, &nkids);
  uint64_t bytes = ten_chunk_bytes(p->size, p->n, p->k, c);
  uint64_t now = ten_now(p->eng);
  for (uint32_t i = 0; i < nkids; i++) {
    uint32_t index = schedule_len(p->s);
    sched_xfer_t x = {.src = u,
                      .dst = kid[i],
                      .bytes = bytes,
                      .start_ps = now,
                      .nchunks = 1,
                      .ndeps = dep == SCHED_NONE ? 0u : 1u};
    tn_status_t st = schedule_add(p->s, &x, &c, &dep, NULL, err);
    if (st == TN_OK) st = ten_send(p->eng, u, kid[i], bytes, index, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* Deliveries NPU r must have had before it sends its own chunk j: in steady state an NPU
 * receives n - 1 chunks for every one of its own it sends, so own chunk j waits for
 * (j - ahead) (n - 1) of them. Sending every own chunk at once instead fills the shared
 * links' queues with owners' data ahead of the relays that others wait for. */
static uint32_t needed(const plan_t *p, uint32_t j) {
  return p->ahead == 0 || j < p->ahead ? 0 : (j - p->ahead) * (p->n - 1);
}

/* Sends NPU r's own chunks that its deliveries so far release. */
static tn_status_t release(plan_t *p, uint32_t r, tn_err_t *err) {
  tn_status_t st = TN_OK;
  while (st == TN_OK && p->released[r] < p->k && p->got[r] >= needed(p, p->released[r])) {
    uint32_t j = p->released[r]++;
    uint32_t gate = needed(p, j) > 0 ? p->last_in[r] : SCHED_NONE;
    st = forward(p, r, r * p->k + j, gate, err);
  }
  return st;
}

static tn_status_t run(plan_t *p, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; st == TN_OK && r < p->n; r++)
    st = release(p, r, err);
  ten_event_t ev;
  while (st == TN_OK && ten_next(p->eng, &ev)) {
    if (ev.kind != TEN_EV_DELIVER) continue;
    uint32_t index = (uint32_t)ev.cookie;
    sched_xfer_t *x = &TN_VEC_AT(&p->s->xfers, sched_xfer_t, index);
    x->end_ps = ev.time_ps;
    if (ev.time_ps > p->s->time_ps) p->s->time_ps = ev.time_ps;
    uint32_t c = TN_VEC_AT(&p->s->chunks, uint32_t, x->chunk_off), v = x->dst;
    st = forward(p, v, c, index, err);
    p->got[v]++;
    p->last_in[v] = index;
    if (st == TN_OK) st = release(p, v, err);
  }
  if (st == TN_OK) st = ten_engine_status(p->eng, err);
  return st;
}

/* One plan with the given pacing into *out (re-initialised), on p's trees. */
static tn_status_t plan_once(plan_t *p, const topo_t *t, topo_routes_t *routes, uint32_t ahead,
                             schedule_t *out, tn_err_t *err) {
  schedule_init(out, TN_ALLGATHER, p->n, p->k, p->size);
  p->s = out;
  p->ahead = ahead;
  memset(p->got, 0, p->n * sizeof *p->got);
  memset(p->released, 0, p->n * sizeof *p->released);
  tn_status_t st = tn_vec_reserve(&out->xfers, (size_t)p->n * (p->n - 1) * p->k, err);
  if (st == TN_OK) st = ten_engine_create(t, routes, &p->eng, err);
  if (st == TN_OK) st = run(p, err);
  ten_engine_free(p->eng);
  p->eng = NULL;
  if (st != TN_OK) schedule_free(out);
  return st;
}

/* Pacings tried for an All-Gather (chunks ahead); the fastest plan is kept, the first
 * among equals. Which is best depends on how deep the trees relay across shared links. The
 * two-level trees (FOREST_PACK_LEVELS) also try none, the last: their own chunks held back
 * only delay them (fattree-64-2to1, 1 MiB at 32 chunks:
 * 1.092 of the bound unpaced against 1.152 paced; leaf-32 1.144 against 3.704). */
static const uint32_t paces[] = {1, 2, 4, 0};
#define PACED_TRIES 3u /* the paces tried on the other packings */

/* One pacing planned on its own state: per-NPU counters, engine and routes (routes are not
 * thread-safe); the trees are shared, read only. */
typedef struct pace_job {
  plan_t p;
  topo_routes_t *routes; /* NULL: the caller's (job 0, which also uses the caller's plan_t
                            counters) */
  schedule_t s;
  tn_status_t st;
  tn_err_t e;
} pace_job_t;

static void plan_pace(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  pace_job_t *j = &((pace_job_t *)ctx)[i];
  j->st = plan_once(&j->p, j->p.t, j->routes, paces[i], &j->s, &j->e);
}

/* Plans every pacing (or none) and keeps the fastest in *out. With threads to spare the
 * pacings are planned side by side and then compared in their order, so the plan kept
 * (and the failure reported) is the one-thread loop's. */
static tn_status_t plan_best(plan_t *p, const topo_t *t, topo_routes_t *routes, bool pace,
                             bool levels, schedule_t *out, tn_err_t *err) {
  enum { TRIES = sizeof paces / sizeof paces[0] };
  size_t tries = !pace ? 1 : levels ? TRIES : PACED_TRIES;
  unsigned threads = tn_thread_count();
  if (tries > 1 && threads > 1) {
    pace_job_t jobs[TRIES];
    memset(jobs, 0, sizeof jobs);
    tn_status_t st = TN_OK;
    for (size_t i = 0; i < tries; i++) {
      jobs[i].p = *p;
      if (i == 0) {
        jobs[i].routes = routes;
        continue;
      }
      jobs[i].p.got = jobs[i].p.released = jobs[i].p.last_in = NULL;
      if (st == TN_OK) st = tn_calloc(p->n, sizeof *p->got, &jobs[i].p.got, err);
      if (st == TN_OK) st = tn_calloc(p->n, sizeof *p->released, &jobs[i].p.released, err);
      if (st == TN_OK) st = tn_calloc(p->n, sizeof *p->last_in, &jobs[i].p.last_in, err);
      if (st == TN_OK) st = topo_routes_create(t, &jobs[i].routes, err);
    }
    if (st == TN_OK)
      tn_parallel_for(tries, threads < tries ? threads : (unsigned)tries, plan_pace, jobs);
    size_t kept = tries;
    for (size_t i = 0; st == TN_OK && i < tries; i++) {
      if (jobs[i].st != TN_OK) {
        st = tn_err_set(err, jobs[i].st, "%s", jobs[i].e.msg);
      } else if (kept == tries || jobs[i].s.time_ps < jobs[kept].s.time_ps) {
        kept = i;
      }
    }
    for (size_t i = 0; i < tries; i++) {
      if (st == TN_OK && i == kept)
        *out = jobs[i].s;
      else if (jobs[i].st == TN_OK)
        schedule_free(&jobs[i].s);
      if (i == 0) continue;
      free(jobs[i].p.got);
      free(jobs[i].p.released);
      free(jobs[i].p.last_in);
      topo_routes_free(jobs[i].routes);
    }
    return st;
  }
  tn_status_t st = plan_once(p, t, routes, pace ? paces[0] : 0, out, err);
  for (size_t i = 1; st == TN_OK && i < tries; i++) {
    schedule_t s;
    st = plan_once(p, t, routes, paces[i], &s, err);
    if (st != TN_OK) break;
    if (s.time_ps < out->time_ps) {
      schedule_free(out);
      *out = s;
    } else {
      schedule_free(&s);
    }
  }
  return st;
}

tn_status_t forest_i_plan_gather(const topo_t *t, topo_routes_t *routes, const forest_pack_t *pk,
                                 uint64_t size_bytes, const forest_opts_t *opts, schedule_t *out,
                                 tn_err_t *err) {
  uint32_t k = opts && opts->chunks_per_npu
                   ? opts->chunks_per_npu
                   : forest_i_chunks(t->npus, size_bytes, FOREST_MAX_CHUNKS);
  schedule_init(out, TN_ALLGATHER, t->npus, k, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, k, err);
  if (st != TN_OK) return st;
  plan_t p = {.t = t, .n = t->npus, .k = k, .size = size_bytes};
  st = forest_i_kids(pk, k, &p.kd, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.got, &p.got, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.released, &p.released, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.last_in, &p.last_in, err);
  schedule_free(out);
  if (st == TN_OK)
    st = plan_best(&p, t, routes, opts && opts->pace, opts && opts->packing == FOREST_PACK_LEVELS,
                   out, err);
  forest_i_kids_free(&p.kd);
  free(p.got);
  free(p.released);
  free(p.last_in);
  if (st != TN_OK) schedule_init(out, TN_ALLGATHER, t->npus, k, size_bytes);
  return st;
}
