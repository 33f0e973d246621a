/* algo/lower.c — lowering a planned All-Gather schedule_t (greedy/, milp/) to per-NPU DAGs:
 * All-Gather directly, Reduce-Scatter as its time reversal on the transposed links,
 * All-Reduce as the two in sequence. Pipeline: greedy|milp → algo (this) → emit|sim.
 *
 * Node ids. Every rank lists its RECVs first (they have no dependencies and are posted at
 * time 0), then its SENDs and COMPs in order of (ready time, planner issue order). For an
 * All-Gather the ready time of a SEND is the planned arrival of its chunks at the sender, so
 * the simulator, which issues nodes that become ready together in ascending id order,
 * injects every link's messages in the planner's order and reproduces the plan's times
 * exactly. For the reversed phase the key is the mirrored time (T - end of the transfer);
 * its simulated time is not predicted by the plan and must be measured by running the
 * lowered DAG (sim_run). */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

enum { K_SEND = 0, K_COMP = 1 };

/* One phase of the lowered algorithm: a schedule run forward (All-Gather) or reversed
 * (Reduce-Scatter). */
typedef struct phase {
  const schedule_t *s;
  bool reverse;
  uint32_t tag_base;        /* tag of transfer x is tag_base + x */
  uint64_t key_base;        /* added to every ordering key of the phase */
  uint32_t *recv_id;        /* per transfer: id of its RECV in the receiving rank */
  uint32_t *comp_id;        /* reverse: per transfer, id of its COMP in the receiving rank */
  uint32_t *kid_off, *kids; /* reverse: CSR of the transfers that depend on each one */
} phase_t;

/* A SEND or COMP waiting for its id in its rank. ord is phase << 2 | (SEND ? 2 : 0) |
 * (reversed phase ? 1 : 0). The fast path serves a forward SEND of one chunk with at most
 * one dependency (every greedy transfer): what emitting it needs is copied while the
 * schedule is read in order, so the per-rank pass never reads the schedule at random;
 * chunk is NO_ITEM otherwise. */
typedef struct item {
  uint32_t x, ord;
  uint32_t peer, chunk, dep;
} item_t;

/* What a rank's items are sorted by: (key, ord, transfer order), where transfer order is
 * the item's index in its rank (items are appended in transfer order), reversed for a
 * reversed phase. So COMPs go before SENDs at one instant and a reversed phase takes its
 * transfers in reverse issue order. Kept apart from the items to sort 16-byte records. */
typedef struct sortrec {
  uint64_t key;
  uint32_t ord, idx;
} sortrec_t;

#define NO_ITEM UINT32_MAX

static uint32_t item_phase(const item_t *it) {
  return it->ord >> 2;
}
static bool item_is_comp(const item_t *it) {
  return (it->ord & 2u) == 0;
}

typedef struct lower {
  algo_t *a;
  phase_t ph[2];
  uint32_t nph;
  const phase_t *final;    /* All-Reduce: the reduce phase whose COMPs own sends wait for */
  uint32_t *own_off, *own; /* All-Reduce: per chunk, transfers of the reduce phase leaving
                              its owner with it (their COMPs complete the chunk there) */
  item_t *items;
  sortrec_t *recs;    /* parallel to items until sorted, then each rank's order */
  uint32_t *item_off; /* per rank + 1 */
  tn_vec_t deps;      /* scratch */
} lower_t;

static const uint32_t *xchunks(const schedule_t *s, const sched_xfer_t *x) {
  return &TN_VEC_AT(&s->chunks, uint32_t, x->chunk_off);
}
static const uint32_t *xdeps(const schedule_t *s, const sched_xfer_t *x) {
  return &TN_VEC_AT(&s->deps, uint32_t, x->dep_off);
}

/* The rank that sends transfer x in phase p, and the one that receives it. */
static uint32_t sender(const phase_t *p, const sched_xfer_t *x) {
  return p->reverse ? x->dst : x->src;
}
static uint32_t receiver(const phase_t *p, const sched_xfer_t *x) {
  return p->reverse ? x->src : x->dst;
}

static tn_status_t check_schedule(const schedule_t *s, tn_err_t *err) {
  if (s->coll != TN_ALLGATHER)
    return tn_err_set(err, TN_INVAL, "lowering: the schedule must be an All-Gather plan");
  if (s->npus == 0 || s->chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL, "lowering: schedule has %u NPUs and %u chunks per NPU",
                      s->npus, s->chunks_per_npu);
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    if (x->src >= s->npus || x->dst >= s->npus || x->src == x->dst || x->bytes == 0 ||
        x->nchunks == 0)
      return tn_err_set(err, TN_INVAL,
                        "lowering: transfer %u (%u -> %u, %llu B, %u chunks) "
                        "is malformed",
                        i, x->src, x->dst, (unsigned long long)x->bytes, x->nchunks);
    uint64_t bytes = 0;
    for (uint32_t j = 0; j < x->nchunks; j++) {
      uint32_t c = xchunks(s, x)[j];
      if (c >= nchunks)
        return tn_err_set(err, TN_INVAL, "lowering: transfer %u carries chunk %u of %llu", i, c,
                          (unsigned long long)nchunks);
      bytes += ten_chunk_bytes(s->size_bytes, s->npus, s->chunks_per_npu, c);
    }
    if (bytes != x->bytes)
      return tn_err_set(err, TN_INVAL, "lowering: transfer %u has %llu B, its chunks %llu B", i,
                        (unsigned long long)x->bytes, (unsigned long long)bytes);
    for (uint32_t j = 0; j < x->ndeps; j++)
      if (xdeps(s, x)[j] >= i)
        return tn_err_set(err, TN_INVAL, "lowering: transfer %u depends on later transfer %u", i,
                          xdeps(s, x)[j]);
  }
  return TN_OK;
}

/* Reverse phase: for each transfer, the later transfers that forwarded its chunks. */
static tn_status_t build_kids(phase_t *p, tn_err_t *err) {
  const schedule_t *s = p->s;
  uint32_t n = schedule_len(s);
  tn_status_t st = tn_calloc((size_t)n + 1, sizeof *p->kid_off, &p->kid_off, err);
  if (st == TN_OK) st = tn_calloc(s->deps.len + 1, sizeof *p->kids, &p->kids, err);
  if (st != TN_OK) return st;
  for (uint32_t y = 0; y < n; y++) {
    const sched_xfer_t *x = schedule_xfer(s, y);
    for (uint32_t j = 0; j < x->ndeps; j++)
      p->kid_off[xdeps(s, x)[j] + 1]++;
  }
  for (uint32_t i = 0; i < n; i++)
    p->kid_off[i + 1] += p->kid_off[i];
  for (uint32_t y = 0; y < n; y++) {
    const sched_xfer_t *x = schedule_xfer(s, y);
    for (uint32_t j = 0; j < x->ndeps; j++)
      p->kids[p->kid_off[xdeps(s, x)[j]]++] = y;
  }
  for (uint32_t i = n; i > 0; i--)
    p->kid_off[i] = p->kid_off[i - 1];
  p->kid_off[0] = 0;
  return TN_OK;
}

/* All-Reduce: per chunk, the reduce-phase transfers that leave its owner with it. */
static tn_status_t build_own(lower_t *L, const phase_t *p, tn_err_t *err) {
  const schedule_t *s = p->s;
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu;
  tn_status_t st = tn_calloc(nchunks + 1, sizeof *L->own_off, &L->own_off, err);
  if (st == TN_OK) st = tn_calloc(s->chunks.len + 1, sizeof *L->own, &L->own, err);
  if (st != TN_OK) return st;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t y = 0; y < schedule_len(s); y++) {
      const sched_xfer_t *x = schedule_xfer(s, y);
      for (uint32_t j = 0; j < x->nchunks; j++) {
        uint32_t c = xchunks(s, x)[j];
        if (c / s->chunks_per_npu != x->src) continue;
        if (pass == 0)
          L->own_off[c + 1]++;
        else
          L->own[L->own_off[c]++] = y;
      }
    }
    if (pass == 0)
      for (uint64_t c = 0; c < nchunks; c++)
        L->own_off[c + 1] += L->own_off[c];
  }
  for (uint64_t c = nchunks; c > 0; c--)
    L->own_off[c] = L->own_off[c - 1];
  L->own_off[0] = 0;
  return TN_OK;
}

static inline bool rec_less(const sortrec_t *a, const sortrec_t *b) {
  if (a->key != b->key) return a->key < b->key;
  if (a->ord != b->ord) return a->ord < b->ord;
  return (a->idx < b->idx) != ((a->ord & 1u) != 0);
}

/* Sorts a[0..n) by rec_less (a total order: idx is unique in a rank) with tmp (n long)
 * as scratch: a merge sort with the comparison inlined, insertion sort on short runs, and
 * no merge where two halves are already in order (a rank's items mostly are, so this is
 * close to linear). Any correct sort gives the same result, as the order is total. */
static void sort_recs(sortrec_t *a, uint32_t n, sortrec_t *tmp) {
  if (n <= 16) {
    for (uint32_t i = 1; i < n; i++) {
      sortrec_t x = a[i];
      uint32_t j = i;
      for (; j > 0 && rec_less(&x, &a[j - 1]); j--) a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  uint32_t h = n / 2;
  sort_recs(a, h, tmp);
  sort_recs(a + h, n - h, tmp);
  if (!rec_less(&a[h], &a[h - 1])) return;
  memcpy(tmp, a, h * sizeof *a);
  uint32_t i = 0, j = h, o = 0;
  while (i < h && j < n) a[o++] = rec_less(&a[j], &tmp[i]) ? a[j++] : tmp[i++];
  while (i < h) a[o++] = tmp[i++];
}

/* Ordering key of a phase's SEND (and COMP) of transfer x: forward, the arrival of its
 * chunks at the sender; reversed, the mirrored start and arrival. */
static uint64_t item_key(const phase_t *p, uint32_t xi, int kind) {
  const schedule_t *s = p->s;
  const sched_xfer_t *x = schedule_xfer(s, xi);
  if (p->reverse) {
    uint64_t t = s->time_ps;
    return p->key_base + (kind == K_COMP ? t - x->start_ps : t - x->end_ps);
  }
  uint64_t ready = 0;
  for (uint32_t j = 0; j < x->ndeps; j++) {
    uint64_t e = schedule_xfer(s, xdeps(s, x)[j])->end_ps;
    if (e > ready) ready = e;
  }
  return p->key_base + ready;
}

/* Numbers every rank's RECVs, then collects, sorts and numbers its SENDs and COMPs. */
static tn_status_t assign_ids(lower_t *L, tn_err_t *err) {
  uint32_t n = L->a->npus;
  uint32_t *next = NULL, *fill = NULL;
  sortrec_t *tmp = NULL;
  tn_status_t st = tn_calloc(n, sizeof *next, &next, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *fill, &fill, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 1, sizeof *L->item_off, &L->item_off, err);
  if (st != TN_OK) goto fail;
  for (uint32_t q = 0; q < L->nph; q++) {
    phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s); xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      p->recv_id[xi] = next[receiver(p, x)]++;
      L->item_off[sender(p, x) + 1]++;
      if (p->reverse) L->item_off[receiver(p, x) + 1]++;
    }
  }
  for (uint32_t r = 0; r < n; r++)
    L->item_off[r + 1] += L->item_off[r];
  if ((st = tn_calloc(L->item_off[n] + 1, sizeof *L->items, &L->items, err)) != TN_OK ||
      (st = tn_calloc(L->item_off[n] + 1, sizeof *L->recs, &L->recs, err)) != TN_OK)
    goto fail;
  for (uint32_t q = 0; q < L->nph; q++) {
    const phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s); xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      uint32_t r = sender(p, x), ord = q << 2 | (p->reverse ? 1u : 0u);
      item_t it = {xi, ord | 2u, receiver(p, x), NO_ITEM, NO_ITEM};
      if (!p->reverse && x->nchunks == 1 && x->ndeps <= 1 && !(x->ndeps == 0 && L->final)) {
        it.chunk = xchunks(p->s, x)[0];
        if (x->ndeps) it.dep = p->recv_id[xdeps(p->s, x)[0]];
      }
      L->items[L->item_off[r] + fill[r]] = it;
      L->recs[L->item_off[r] + fill[r]] = (sortrec_t){item_key(p, xi, K_SEND), it.ord, fill[r]};
      fill[r]++;
      if (!p->reverse) continue;
      r = receiver(p, x);
      L->items[L->item_off[r] + fill[r]] = (item_t){xi, ord, 0, NO_ITEM, NO_ITEM};
      L->recs[L->item_off[r] + fill[r]] = (sortrec_t){item_key(p, xi, K_COMP), ord, fill[r]};
      fill[r]++;
    }
  }
  uint32_t most = 0;
  for (uint32_t r = 0; r < n; r++)
    if (L->item_off[r + 1] - L->item_off[r] > most) most = L->item_off[r + 1] - L->item_off[r];
  if ((st = tn_calloc((size_t)most / 2 + 1, sizeof *tmp, &tmp, err)) != TN_OK) goto fail;
  for (uint32_t r = 0; r < n; r++) {
    sortrec_t *rec = L->recs + L->item_off[r];
    const item_t *it = L->items + L->item_off[r];
    uint32_t m = L->item_off[r + 1] - L->item_off[r];
    sort_recs(rec, m, tmp);
    for (uint32_t i = 0; i < m; i++) {
      const item_t *t = &it[rec[i].idx];
      if (item_is_comp(t)) L->ph[item_phase(t)].comp_id[t->x] = next[r] + i;
    }
  }
fail:
  free(next);
  free(fill);
  free(tmp);
  return st;
}

static tn_status_t dep(lower_t *L, uint32_t id, tn_err_t *err) {
  return tn_vec_push(&L->deps, &id, err);
}

/* Dependencies of the SEND of transfer xi in phase q. */
static tn_status_t send_deps(lower_t *L, uint32_t q, uint32_t xi, tn_err_t *err) {
  const phase_t *p = &L->ph[q];
  const sched_xfer_t *x = schedule_xfer(p->s, xi);
  tn_status_t st = TN_OK;
  L->deps.len = 0;
  if (p->reverse) {
    /* Everything the sender reduced for these chunks: the partials that flowed back from
     * every transfer that forwarded them in the All-Gather. */
    for (uint32_t j = p->kid_off[xi]; j < p->kid_off[xi + 1] && st == TN_OK; j++)
      st = dep(L, p->comp_id[p->kids[j]], err);
    return st;
  }
  for (uint32_t j = 0; j < x->ndeps && st == TN_OK; j++)
    st = dep(L, p->recv_id[xdeps(p->s, x)[j]], err);
  if (x->ndeps == 0 && L->final) {
    /* All-Reduce: the owner sends its chunks once the reduce phase completed them. */
    for (uint32_t j = 0; j < x->nchunks && st == TN_OK; j++) {
      uint32_t c = xchunks(p->s, x)[j];
      for (uint32_t i = L->own_off[c]; i < L->own_off[c + 1] && st == TN_OK; i++)
        st = dep(L, L->final->comp_id[L->own[i]], err);
    }
  }
  return st;
}

/* Dependencies of the COMP of transfer xi in reverse phase q, numbered id in rank r: its
 * reduce RECV, and the previous COMP of the rank on each of its chunks (reductions into one
 * slot are serialised, in mirrored arrival order). last/last_rank track those per chunk. */
static tn_status_t comp_deps(lower_t *L, uint32_t q, uint32_t xi, uint32_t r, uint32_t id,
                             uint32_t *last, uint32_t *last_rank, tn_err_t *err) {
  const phase_t *p = &L->ph[q];
  const sched_xfer_t *x = schedule_xfer(p->s, xi);
  L->deps.len = 0;
  tn_status_t st = dep(L, p->recv_id[xi], err);
  for (uint32_t j = 0; j < x->nchunks && st == TN_OK; j++) {
    uint32_t c = xchunks(p->s, x)[j];
    if (last_rank[c] == r + 1) {
      bool seen = false;
      for (size_t i = 0; i < L->deps.len; i++)
        if (TN_VEC_AT(&L->deps, uint32_t, i) == last[c]) seen = true;
      if (!seen) st = dep(L, last[c], err);
    }
    last[c] = id;
    last_rank[c] = r + 1;
  }
  return st;
}

static tn_status_t emit_nodes(lower_t *L, tn_err_t *err) {
  algo_t *a = L->a;
  uint32_t *last = NULL, *last_rank = NULL;
  uint64_t nchunks = (uint64_t)a->npus * a->chunks_per_npu;
  tn_status_t st = TN_OK;
  bool any_reverse = L->ph[0].reverse;
  if (any_reverse) {
    st = tn_calloc(nchunks, sizeof *last, &last, err);
    if (st == TN_OK) st = tn_calloc(nchunks, sizeof *last_rank, &last_rank, err);
  }
  for (uint32_t q = 0; q < L->nph && st == TN_OK; q++) {
    const phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s) && st == TN_OK; xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      st = algo_add_recv(a, receiver(p, x), sender(p, x), (int32_t)(p->tag_base + xi), x->bytes,
                         p->reverse, NULL, 0, xchunks(p->s, x), x->nchunks, NULL, err);
    }
  }
  for (uint32_t r = 0; r < a->npus && st == TN_OK; r++) {
    for (uint32_t i = L->item_off[r]; i < L->item_off[r + 1] && st == TN_OK; i++) {
      const item_t *it = &L->items[L->item_off[r] + L->recs[i].idx];
      uint32_t q = item_phase(it);
      const phase_t *p = &L->ph[q];
      if (it->chunk != NO_ITEM) {
        uint64_t bytes = ten_chunk_bytes(a->size_bytes, a->npus, a->chunks_per_npu, it->chunk);
        st = algo_add_send(a, r, it->peer, (int32_t)(p->tag_base + it->x), bytes, &it->dep,
                           it->dep == NO_ITEM ? 0u : 1u, &it->chunk, 1, NULL, err);
        continue;
      }
      const sched_xfer_t *x = schedule_xfer(p->s, it->x);
      if (item_is_comp(it)) {
        st = comp_deps(L, q, it->x, r, algo_rank_len(a, r), last, last_rank, err);
        if (st == TN_OK)
          st = algo_add_comp(a, r, 0, L->deps.data, (uint32_t)L->deps.len, xchunks(p->s, x),
                             x->nchunks, NULL, err);
        continue;
      }
      st = send_deps(L, q, it->x, err);
      if (st == TN_OK)
        st = algo_add_send(a, r, receiver(p, x), (int32_t)(p->tag_base + it->x), x->bytes,
                           L->deps.data, (uint32_t)L->deps.len, xchunks(p->s, x), x->nchunks, NULL,
                           err);
    }
  }
  free(last);
  free(last_rank);
  return st;
}

/* Grows v to exactly cap elements (tn_vec_reserve would round up to a power of two). */
static tn_status_t reserve_exact(tn_vec_t *v, uint64_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  tn_status_t st = tn_realloc(&v->data, v->cap, (size_t)cap, v->elem_size, err);
  if (st == TN_OK) v->cap = (size_t)cap;
  return st;
}

/* Reserves every rank's node, dep and chunk storage exactly, so big algorithms do not pay
 * for doubling slack (up to 2x the memory on a 4096-NPU All-Gather). */
static tn_status_t reserve(lower_t *L, tn_err_t *err) {
  algo_t *a = L->a;
  tn_status_t st = TN_OK;
  uint64_t *cnt = NULL;
  if ((st = tn_calloc((size_t)a->npus * 3, sizeof *cnt, &cnt, err)) != TN_OK) return st;
  for (uint32_t q = 0; q < L->nph; q++) {
    const phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s); xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      uint32_t s = sender(p, x), d = receiver(p, x), m = p->reverse ? 2u : 1u;
      cnt[3 * s]++;
      cnt[3 * d] += m;
      cnt[3 * s + 2] += x->nchunks;
      cnt[3 * d + 2] += (uint64_t)m * x->nchunks;
      if (p->reverse) {
        cnt[3 * s + 1] += p->kid_off[xi + 1] - p->kid_off[xi];
        cnt[3 * d + 1] += 1u + x->nchunks; /* COMP: its RECV and the previous COMPs */
      } else {
        cnt[3 * s + 1] += x->ndeps;
        if (x->ndeps == 0 && L->final)
          for (uint32_t j = 0; j < x->nchunks; j++) {
            uint32_t c = xchunks(p->s, x)[j];
            cnt[3 * s + 1] += L->own_off[c + 1] - L->own_off[c];
          }
      }
    }
  }
  for (uint32_t r = 0; r < a->npus && st == TN_OK; r++) {
    st = reserve_exact(&a->ranks[r].nodes, cnt[3 * r], err);
    if (st == TN_OK) st = reserve_exact(&a->ranks[r].deps, cnt[3 * r + 1], err);
    if (st == TN_OK) st = reserve_exact(&a->ranks[r].chunks, cnt[3 * r + 2], err);
  }
  free(cnt);
  return st;
}

static tn_status_t add_phase(lower_t *L, const schedule_t *s, bool reverse, uint64_t key_base,
                             tn_err_t *err) {
  phase_t *p = &L->ph[L->nph];
  uint32_t tag_base = L->nph ? L->ph[0].tag_base + schedule_len(L->ph[0].s) : 0;
  *p = (phase_t){.s = s, .reverse = reverse, .tag_base = tag_base, .key_base = key_base};
  if ((uint64_t)tag_base + schedule_len(s) > (uint64_t)ALGO_MAX_TAG + 1)
    return tn_err_set(err, TN_LIMIT, "lowering: %llu messages exceed the tag range",
                      (unsigned long long)tag_base + schedule_len(s));
  L->nph++;
  size_t m = (size_t)schedule_len(s) + 1;
  tn_status_t st = tn_calloc(m, sizeof *p->recv_id, &p->recv_id, err);
  if (st == TN_OK && reverse) st = tn_calloc(m, sizeof *p->comp_id, &p->comp_id, err);
  if (st == TN_OK && reverse) st = build_kids(p, err);
  return st;
}

static void lower_free(lower_t *L) {
  for (uint32_t q = 0; q < L->nph; q++) {
    free(L->ph[q].recv_id);
    free(L->ph[q].comp_id);
    free(L->ph[q].kid_off);
    free(L->ph[q].kids);
  }
  free(L->own_off);
  free(L->own);
  free(L->items);
  free(L->recs);
  free(L->item_off);
  tn_vec_free(&L->deps);
}

static tn_status_t lower(const schedule_t *rs, const schedule_t *ag, tn_coll_t coll,
                         const char *name, algo_t **out, tn_err_t *err) {
  *out = NULL;
  const schedule_t *s = rs ? rs : ag;
  tn_status_t st = check_schedule(s, err);
  if (st == TN_OK && rs && ag && rs != ag) {
    st = check_schedule(ag, err);
    if (st == TN_OK && (rs->npus != ag->npus || rs->chunks_per_npu != ag->chunks_per_npu ||
                        rs->size_bytes != ag->size_bytes))
      st = tn_err_set(err, TN_INVAL,
                      "lowering: the two All-Reduce halves differ in NPUs, "
                      "chunks or size");
  }
  if (st != TN_OK) return st;
  lower_t L = {0};
  tn_vec_init(&L.deps, sizeof(uint32_t));
  st = algo_create(name, coll, s->npus, s->chunks_per_npu, s->size_bytes, &L.a, err);
  if (st == TN_OK && rs) st = add_phase(&L, rs, true, 0, err);
  if (st == TN_OK && ag) st = add_phase(&L, ag, false, rs ? rs->time_ps + 1 : 0, err);
  if (st == TN_OK && rs && ag) {
    L.final = &L.ph[0];
    st = build_own(&L, &L.ph[0], err);
  }
  if (st == TN_OK) st = assign_ids(&L, err);
  if (st == TN_OK) st = reserve(&L, err);
  if (st == TN_OK) st = emit_nodes(&L, err);
  lower_free(&L);
  if (st != TN_OK) {
    algo_free(L.a);
    return st;
  }
  *out = L.a;
  return TN_OK;
}

tn_status_t algo_from_schedule(const schedule_t *s, tn_coll_t coll, const char *name, algo_t **out,
                               tn_err_t *err) {
  switch (coll) {
  case TN_ALLGATHER: return lower(NULL, s, coll, name, out, err);
  case TN_REDUCESCATTER: return lower(s, NULL, coll, name, out, err);
  case TN_ALLREDUCE: return lower(s, s, coll, name, out, err);
  }
  *out = NULL;
  return tn_err_set(err, TN_INVAL, "lowering: unknown collective %d", (int)coll);
}

tn_status_t algo_allreduce_from_schedules(const schedule_t *rs_ag, const schedule_t *ag,
                                          const char *name, algo_t **out, tn_err_t *err) {
  return lower(rs_ag, ag, TN_ALLREDUCE, name, out, err);
}
