/* ten/schedule.c — the schedule_t container that planners fill and algo/ lowers. */
#include <stdlib.h>

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
  tn_vec_init(&s->ties, sizeof(ten_tie_t));
  s->ties_kept = false;
}

static void keep_tie(void *ctx, const ten_tie_t *v) {
  schedule_t *s = ctx;
  tn_err_t e = {0};
  if (s->ties_kept && tn_vec_push(&s->ties, v, &e) != TN_OK) {
    s->ties_kept = false;
    tn_vec_free(&s->ties);
    tn_vec_init(&s->ties, sizeof(ten_tie_t));
  }
}

void schedule_keep_ties(schedule_t *s, ten_engine_t *e, uint64_t window_ps) {
  tn_vec_free(&s->ties);
  tn_vec_init(&s->ties, sizeof(ten_tie_t));
  s->ties_kept = true;
  ten_engine_set_tie_observer(e, keep_tie, s, window_ps);
}

void schedule_free(schedule_t *s) {
  if (s == NULL) return;
  tn_vec_free(&s->xfers);
  tn_vec_free(&s->chunks);
  tn_vec_free(&s->deps);
  tn_vec_free(&s->ops);
  tn_vec_free(&s->ties);
  s->ties_kept = false;
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

/* Per chunk c, the transfers of rs that reduce c into its owner: CSR in *off (nchunks + 1)
 * and *list. */
static tn_status_t owner_reductions(const schedule_t *rs, uint32_t **off, uint32_t **list,
                                    tn_err_t *err) {
  uint64_t nchunks = (uint64_t)rs->npus * rs->chunks_per_npu;
  uint32_t k = rs->chunks_per_npu;
  tn_status_t st = tn_calloc(nchunks + 2, sizeof **off, off, err);
  if (st == TN_OK) st = tn_malloc(rs->chunks.len + 1, sizeof **list, list, err);
  if (st != TN_OK) return st;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < schedule_len(rs); i++) {
      const sched_xfer_t *x = schedule_xfer(rs, i);
      for (uint32_t j = 0; j < x->nchunks; j++) {
        uint32_t c = TN_VEC_AT(&rs->chunks, uint32_t, x->chunk_off + j);
        if (c / k != x->dst) continue;
        if (pass == 0)
          (*off)[c + 2]++;
        else
          (*list)[(*off)[c + 1]++] = i;
      }
      if (pass == 0 && i + 1 == schedule_len(rs))
        for (uint64_t c = 0; c < nchunks; c++)
          (*off)[c + 2] += (*off)[c + 1];
    }
  return TN_OK;
}

tn_status_t schedule_join_allreduce(const schedule_t *rs, const schedule_t *ag, schedule_t *out,
                                    tn_err_t *err) {
  schedule_init(out, TN_ALLREDUCE, rs->npus, rs->chunks_per_npu, rs->size_bytes);
  if (rs->coll != TN_REDUCESCATTER || ag->coll != TN_ALLGATHER || rs->npus != ag->npus ||
      rs->chunks_per_npu != ag->chunks_per_npu || rs->size_bytes != ag->size_bytes ||
      rs->chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL,
                      "join: needs a Reduce-Scatter and an All-Gather of one "
                      "shape (NPUs, chunks per NPU, size)");
  uint32_t *off = NULL, *list = NULL, k = rs->chunks_per_npu, base = schedule_len(rs);
  tn_vec_t deps;
  tn_vec_init(&deps, sizeof(uint32_t));
  tn_status_t st = owner_reductions(rs, &off, &list, err);
  if (st == TN_OK) st = tn_vec_reserve(&out->xfers, (size_t)base + schedule_len(ag), err);
  for (uint32_t i = 0; st == TN_OK && i < base; i++) {
    const sched_xfer_t *x = schedule_xfer(rs, i);
    st =
        schedule_add_op(out, x, schedule_op(rs, i), &TN_VEC_AT(&rs->chunks, uint32_t, x->chunk_off),
                        &TN_VEC_AT(&rs->deps, uint32_t, x->dep_off), NULL, err);
  }
  for (uint32_t i = 0; st == TN_OK && i < schedule_len(ag); i++) {
    sched_xfer_t x = *schedule_xfer(ag, i);
    const uint32_t *ch = &TN_VEC_AT(&ag->chunks, uint32_t, x.chunk_off);
    deps.len = 0;
    for (uint32_t j = 0; st == TN_OK && j < x.ndeps; j++) {
      uint32_t d = TN_VEC_AT(&ag->deps, uint32_t, x.dep_off + j) + base;
      st = tn_vec_push(&deps, &d, err);
    }
    for (uint32_t j = 0; st == TN_OK && j < x.nchunks; j++)
      if (ch[j] / k == x.src)
        for (uint32_t m = off[ch[j]]; st == TN_OK && m < off[ch[j] + 1]; m++)
          st = tn_vec_push(&deps, &list[m], err);
    x.ndeps = (uint32_t)deps.len;
    x.start_ps += rs->time_ps;
    x.end_ps += rs->time_ps;
    if (st == TN_OK) st = schedule_add_op(out, &x, SCHED_COPY, ch, deps.data, NULL, err);
  }
  free(off);
  free(list);
  tn_vec_free(&deps);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, rs->npus, rs->chunks_per_npu, rs->size_bytes);
  }
  return st;
}

/* Transfers by descending end, the later index first among equals: ag run backwards. */
typedef struct rev_key {
  uint64_t end;
  uint32_t i;
} rev_key_t;

static int rev_cmp(const void *x, const void *y) {
  const rev_key_t *a = x, *b = y;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  return a->i > b->i ? -1 : a->i < b->i;
}

tn_status_t schedule_reverse(const schedule_t *ag, schedule_t *rs, tn_err_t *err) {
  uint32_t m = schedule_len(ag);
  schedule_init(rs, TN_REDUCESCATTER, ag->npus, ag->chunks_per_npu, ag->size_bytes);
  rev_key_t *key = NULL;
  uint32_t *at = NULL, *koff = NULL, *kids = NULL;
  tn_vec_t deps;
  tn_vec_init(&deps, sizeof(uint32_t));
  tn_status_t st = tn_calloc(m + 1u, sizeof *key, &key, err);
  if (st == TN_OK) st = tn_calloc(m + 1u, sizeof *at, &at, err);
  if (st == TN_OK) st = tn_calloc(m + 2u, sizeof *koff, &koff, err);
  if (st == TN_OK) st = tn_calloc(m + 1u, sizeof *kids, &kids, err);
  if (st == TN_OK) st = tn_vec_reserve(&rs->xfers, m, err);
  /* the transfers that forward what transfer i brought (CSR by the one dependency) */
  for (uint32_t i = 0; st == TN_OK && i < m; i++) {
    const sched_xfer_t *x = schedule_xfer(ag, i);
    if (x->nchunks != 1 || x->ndeps > 1)
      st = tn_err_set(err, TN_INVAL, "reverse: transfer %u is not one chunk after at most one", i);
    else if (x->ndeps)
      koff[TN_VEC_AT(&ag->deps, uint32_t, x->dep_off) + 2]++;
    key[i] = (rev_key_t){x->end_ps, i};
  }
  for (uint32_t i = 0; st == TN_OK && i < m; i++)
    koff[i + 2] += koff[i + 1];
  for (uint32_t i = 0; st == TN_OK && i < m; i++) {
    const sched_xfer_t *x = schedule_xfer(ag, i);
    if (x->ndeps) kids[koff[TN_VEC_AT(&ag->deps, uint32_t, x->dep_off) + 1]++] = i;
  }
  if (st == TN_OK) qsort(key, m, sizeof *key, rev_cmp);
  for (uint32_t j = 0; st == TN_OK && j < m; j++)
    at[key[j].i] = j;
  /* y_x sends x's chunk from x's receiver back to its sender, reduced, once the
   * reductions that came back over the transfers forwarding it have arrived */
  for (uint32_t j = 0; st == TN_OK && j < m; j++) {
    const sched_xfer_t *x = schedule_xfer(ag, key[j].i);
    deps.len = 0;
    for (uint32_t q = koff[key[j].i]; st == TN_OK && q < koff[key[j].i + 1]; q++)
      st = tn_vec_push(&deps, &at[kids[q]], err);
    sched_xfer_t y = {.src = x->dst,
                      .dst = x->src,
                      .bytes = x->bytes,
                      .start_ps = ag->time_ps - x->end_ps,
                      .end_ps = ag->time_ps - x->start_ps,
                      .nchunks = 1,
                      .ndeps = (uint32_t)deps.len};
    if (st == TN_OK)
      st = schedule_add_op(rs, &y, SCHED_REDUCE, &TN_VEC_AT(&ag->chunks, uint32_t, x->chunk_off),
                           deps.data, NULL, err);
  }
  if (st == TN_OK) rs->time_ps = ag->time_ps;
  free(key);
  free(at);
  free(koff);
  free(kids);
  tn_vec_free(&deps);
  if (st != TN_OK) {
    schedule_free(rs);
    schedule_init(rs, TN_REDUCESCATTER, ag->npus, ag->chunks_per_npu, ag->size_bytes);
  }
  return st;
}
