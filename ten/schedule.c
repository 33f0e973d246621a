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
}

void schedule_free(schedule_t *s) {
  if (s == NULL) return;
  tn_vec_free(&s->xfers);
  tn_vec_free(&s->chunks);
  tn_vec_free(&s->deps);
}

tn_status_t schedule_add(schedule_t *s, const sched_xfer_t *x, const uint32_t *chunks,
                         const uint32_t *deps, uint32_t *index, tn_err_t *err) {
  sched_xfer_t y = *x;
  y.chunk_off = (uint32_t)s->chunks.len;
  y.dep_off = (uint32_t)s->deps.len;
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < x->nchunks && st == TN_OK; i++)
    st = tn_vec_push(&s->chunks, &chunks[i], err);
  for (uint32_t i = 0; i < x->ndeps && st == TN_OK; i++) st = tn_vec_push(&s->deps, &deps[i], err);
  if (st == TN_OK) st = tn_vec_push(&s->xfers, &y, err);
  if (st == TN_OK && index) *index = (uint32_t)(s->xfers.len - 1);
  if (st == TN_OK && y.end_ps > s->time_ps) s->time_ps = y.end_ps;
  return st;
}

uint64_t ten_chunk_bytes(uint64_t size_bytes, uint32_t npus, uint32_t chunks_per_npu,
                         uint32_t chunk) {
  uint64_t total = (uint64_t)npus * chunks_per_npu;
  if (total == 0) return 0;
  return size_bytes / total + (chunk < size_bytes % total ? 1 : 0);
}
