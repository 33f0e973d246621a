/* ten/schedule.c — the schedule_t container that planners fill and algo/ lowers. */
#include "ten/ten.h"

void schedule_init(schedule_t *s, tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                   uint64_t size_bytes) {
  s->coll = coll;
  s->npus = npus;
  s->chunks_per_npu = chunks_per_npu;
  s->size_bytes = size_bytes;
  s->time_ps = 0;
  tn_vec_init(&s->xfers, sizeof(sched_xfer_t));
  tn_vec_init(&s->chunks, sizeof(uint32_t));
  tn_vec_init(&s->deps, sizeof(uint32_t));
  tn_vec_init(&s->ops, sizeof(uint8_t));
}

void schedule_free(schedule_t *s) {
  if (s == NULL) return;
  tn_vec_free(&s->xfers);
  tn_vec_free(&s->chunks);
  tn_vec_free(&s->deps);
  tn_vec_free(&s->ops);
}

tn_status_t schedule_add(schedule_t *s, const sched_xfer_t *x, const uint32_t *chunks,
                         const uint32_t *deps, uint32_t *index, tn_err_t *err) {
  /* Room first (only when it ran out), then plain stores: a planner that reserved its
   * schedule (the greedy reserves one slot per transfer it can make) appends with no
   * growth at all. */
  if (s->chunks.cap - s->chunks.len < x->nchunks || s->deps.cap - s->deps.len < x->ndeps ||
      s->xfers.len == s->xfers.cap) {
    tn_status_t st = tn_vec_reserve(&s->chunks, s->chunks.len + x->nchunks, err);
    if (st == TN_OK) st = tn_vec_reserve(&s->deps, s->deps.len + x->ndeps, err);
    if (st == TN_OK) st = tn_vec_reserve(&s->xfers, s->xfers.len + 1, err);
    if (st != TN_OK) return st;
  }
  sched_xfer_t y = *x;
  y.chunk_off = (uint32_t)s->chunks.len;
  y.dep_off = (uint32_t)s->deps.len;
  for (uint32_t i = 0; i < x->nchunks; i++)
    TN_VEC_AT(&s->chunks, uint32_t, s->chunks.len++) = chunks[i];
  for (uint32_t i = 0; i < x->ndeps; i++)
    TN_VEC_AT(&s->deps, uint32_t, s->deps.len++) = deps[i];
  if (index) *index = (uint32_t)s->xfers.len;
  TN_VEC_AT(&s->xfers, sched_xfer_t, s->xfers.len++) = y;
  if (y.end_ps > s->time_ps) s->time_ps = y.end_ps;
  return TN_OK;
}

uint64_t ten_chunk_bytes(uint64_t size_bytes, uint32_t npus, uint32_t chunks_per_npu,
                         uint32_t chunk) {
  uint64_t total = (uint64_t)npus * chunks_per_npu;
  if (total == 0) return 0;
  return size_bytes / total + (chunk < size_bytes % total ? 1 : 0);
}

tn_status_t schedule_add_op(schedule_t *s, const sched_xfer_t *x, sched_op_t op,
                            const uint32_t *chunks, const uint32_t *deps, uint32_t *index,
                            tn_err_t *err) {
  /* ops stays empty until the first reduction; from then on it has one entry per
   * transfer (earlier ones copied: zeros). */
  bool keep = op != SCHED_COPY || s->ops.len > 0;
  if (keep) {
    size_t need = s->xfers.len + 1;
    tn_status_t st = tn_vec_reserve(&s->ops, need, err);
    if (st != TN_OK) return st;
    while (s->ops.len < s->xfers.len)
      TN_VEC_AT(&s->ops, uint8_t, s->ops.len++) = SCHED_COPY;
  }
  size_t at = s->xfers.len;
  tn_status_t st = schedule_add(s, x, chunks, deps, index, err);
  if (st != TN_OK || !keep) return st;
  TN_VEC_AT(&s->ops, uint8_t, at) = (uint8_t)op;
  s->ops.len = at + 1;
  return TN_OK;
}
