/* ten/replay.c — schedule_replay: an explicit reduction schedule timed on the engine as the
 * simulator runs its lowering (algo/): every transfer issued when its dependencies are
 * met, the ready ones of an instant in transfer order; a reduction's COMP 1 ns after its
 * arrival, serialised per NPU and chunk, the arrivals of one instant taking their turns in
 * transfer order (the lowering's node order). */
#include <stdlib.h>

#include "ten/ten.h"

#define TIMER_BIT (1ull << 63)

typedef struct replay {
  schedule_t *s;
  ten_engine_t *e;
  uint32_t *pending, *kid_off, *kids;
  uint64_t *comp_free; /* per (NPU, chunk): when its last reduction there is done */
  tn_vec_t ready;      /* uint32_t transfers ready at this instant */
  tn_vec_t arrivals;   /* uint32_t reducing transfers delivered at this instant */
} replay_t;

/* Dependents of every transfer (CSR), and how many dependencies each waits for. */
static tn_status_t build_kids(replay_t *R, tn_err_t *err) {
  schedule_t *s = R->s;
  uint32_t len = schedule_len(s);
  tn_status_t st = tn_calloc((size_t)len + 1, sizeof *R->pending, &R->pending, err);
  if (st == TN_OK) st = tn_calloc((size_t)len + 2, sizeof *R->kid_off, &R->kid_off, err);
  if (st == TN_OK) st = tn_malloc(s->deps.len + 1, sizeof *R->kids, &R->kids, err);
  if (st != TN_OK) return st;
  const uint32_t *d = s->deps.data;
  for (uint32_t y = 0; y < len; y++) {
    const sched_xfer_t *x = schedule_xfer(s, y);
    R->pending[y] = x->ndeps;
    for (uint32_t j = 0; j < x->ndeps; j++) {
      if (d[x->dep_off + j] >= len)
        return tn_err_set(err, TN_INVAL, "replay: transfer %u depends on transfer %u of %u", y,
                          d[x->dep_off + j], len);
      R->kid_off[d[x->dep_off + j] + 2]++;
    }
  }
  for (uint32_t i = 0; i < len; i++)
    R->kid_off[i + 2] += R->kid_off[i + 1];
  for (uint32_t y = 0; y < len; y++) {
    const sched_xfer_t *x = schedule_xfer(s, y);
    for (uint32_t j = 0; j < x->ndeps; j++)
      R->kids[R->kid_off[d[x->dep_off + j] + 1]++] = y;
  }
  return TN_OK;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static tn_status_t release(replay_t *R, uint32_t x, tn_err_t *err) {
  for (uint32_t k = R->kid_off[x]; k < R->kid_off[x + 1]; k++)
    if (--R->pending[R->kids[k]] == 0) {
      tn_status_t st = tn_vec_push(&R->ready, &R->kids[k], err);
      if (st != TN_OK) return st;
    }
  return TN_OK;
}

/* A reducing transfer's COMP: done SCHED_COMP_PS after the later of now and the last
 * reduction on each of its chunks at its receiver. */
static tn_status_t start_comp(replay_t *R, uint32_t xi, uint64_t now, tn_err_t *err) {
  schedule_t *s = R->s;
  const sched_xfer_t *x = schedule_xfer(s, xi);
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu, done = now;
  const uint32_t *ch = &TN_VEC_AT(&s->chunks, uint32_t, x->chunk_off);
  for (uint32_t j = 0; j < x->nchunks; j++)
    if (R->comp_free[x->dst * nchunks + ch[j]] > done)
      done = R->comp_free[x->dst * nchunks + ch[j]];
  done += SCHED_COMP_PS;
  for (uint32_t j = 0; j < x->nchunks; j++)
    R->comp_free[x->dst * nchunks + ch[j]] = done;
  if (done > s->time_ps) s->time_ps = done;
  return ten_timer(R->e, done - now, TIMER_BIT | xi, err);
}

/* The end of an instant: the COMPs of its arrivals start, then the transfers that became
 * ready are issued, both in transfer order. */
static tn_status_t end_instant(replay_t *R, tn_err_t *err) {
  uint64_t now = ten_now(R->e);
  uint32_t *a = R->arrivals.data;
  if (R->arrivals.len > 1) qsort(a, R->arrivals.len, sizeof *a, cmp_u32);
  for (size_t i = 0; i < R->arrivals.len; i++) {
    tn_status_t st = start_comp(R, a[i], now, err);
    if (st != TN_OK) return st;
  }
  R->arrivals.len = 0;
  uint32_t *r = R->ready.data;
  if (R->ready.len > 1) qsort(r, R->ready.len, sizeof *r, cmp_u32);
  for (size_t i = 0; i < R->ready.len; i++) {
    sched_xfer_t *x = &TN_VEC_AT(&R->s->xfers, sched_xfer_t, r[i]);
    x->start_ps = now;
    tn_status_t st = ten_send(R->e, x->src, x->dst, x->bytes, r[i], err);
    if (st != TN_OK) return st;
  }
  R->ready.len = 0;
  return TN_OK;
}

/* A delivery: a copy releases its dependents now, a reduction once its COMP is done. */
static tn_status_t delivered(replay_t *R, uint32_t xi, uint64_t now, tn_err_t *err) {
  schedule_t *s = R->s;
  TN_VEC_AT(&s->xfers, sched_xfer_t, xi).end_ps = now;
  if (now > s->time_ps) s->time_ps = now;
  if (schedule_op(s, xi) != SCHED_REDUCE) return release(R, xi, err);
  return tn_vec_push(&R->arrivals, &xi, err);
}

tn_status_t schedule_replay(const topo_t *t, schedule_t *s, tn_err_t *err) {
  return schedule_replay_ties(t, s, UINT64_MAX, err);
}

/* window_ps UINT64_MAX: no pair is kept (schedule_replay). */
tn_status_t schedule_replay_ties(const topo_t *t, schedule_t *s, uint64_t window_ps,
                                 tn_err_t *err) {
  replay_t R = {.s = s};
  tn_vec_free(&s->ties);
  tn_vec_init(&s->ties, sizeof(ten_tie_t));
  s->ties_kept = false;
  topo_routes_t *routes = NULL;
  tn_vec_init(&R.ready, sizeof(uint32_t));
  tn_vec_init(&R.arrivals, sizeof(uint32_t));
  uint64_t slots = (uint64_t)s->npus * s->npus * s->chunks_per_npu;
  tn_status_t st = build_kids(&R, err);
  /* Only reductions serialise per (NPU, chunk): a plan of copies needs no such table
   * (npus^2 x chunks entries: 268 MB for an All-Gather of two chunks on 4096 NPUs). */
  if (st == TN_OK && s->ops.len > 0)
    st = tn_calloc(slots, sizeof *R.comp_free, &R.comp_free, err);
  if (st == TN_OK) st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = ten_engine_create(t, routes, &R.e, err);
  if (st == TN_OK && window_ps != UINT64_MAX) schedule_keep_ties(s, R.e, window_ps);
  s->time_ps = 0;
  for (uint32_t i = 0; st == TN_OK && i < schedule_len(s); i++)
    if (R.pending[i] == 0) st = tn_vec_push(&R.ready, &i, err);
  if (st == TN_OK) st = end_instant(&R, err);
  ten_event_t ev;
  while (st == TN_OK && ten_next(R.e, &ev)) {
    if (ev.kind == TEN_EV_DELIVER)
      st = delivered(&R, (uint32_t)ev.cookie, ev.time_ps, err);
    else
      st = release(&R, (uint32_t)(ev.cookie & ~TIMER_BIT), err);
    if (st == TN_OK && ten_peek_time(R.e) != ev.time_ps) st = end_instant(&R, err);
  }
  if (st == TN_OK) st = ten_engine_status(R.e, err);
  for (uint32_t i = 0; st == TN_OK && i < schedule_len(s); i++)
    if (R.pending[i] != 0)
      st = tn_err_set(err, TN_INVAL,
                      "replay: transfer %u waits for a dependency that never "
                      "completes (a cycle)",
                      i);
  ten_engine_free(R.e);
  topo_routes_free(routes);
  free(R.pending);
  free(R.kid_off);
  free(R.kids);
  free(R.comp_free);
  tn_vec_free(&R.ready);
  tn_vec_free(&R.arrivals);
  return st;
}
