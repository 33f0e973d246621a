/* algo/lower.c — lowering a planned All-Gather schedule_t (greedy/, milp/) to per-NPU DAGs:
 * All-Gather directly, Reduce-Scatter as its time reversal on the transposed links,
 * All-Reduce as the two in sequence; and an explicit reduction schedule (trees/) as is.
 * Pipeline: greedy|milp|trees → algo (this) → emit|sim.
 *
 * Node ids. Every rank lists its RECVs first (they have no dependencies and are posted at
 * time 0), then its SENDs and COMPs in order of (ready time, planner issue order). For an
 * All-Gather the ready time of a SEND is the planned arrival of its chunks at the sender, so
 * the simulator, which issues nodes that become ready together in ascending id order,
 * injects every link's messages in the planner's order and reproduces the plan's times
 * exactly. For the reversed phase the key is the mirrored time (T - end of the transfer);
 * its simulated time is not predicted by the plan and must be measured by running the
 * lowered DAG (sim_run).
 *
 * Speed. Every id a rank's nodes refer to is the rank's own (a dependency is a delivery to
 * the sender), so ranks are lowered independently: big schedules on tn_thread_count()
 * threads (at most 4). One pass over the schedule numbers tags and RECVs and counts every
 * rank's nodes; then each thread takes a share of the ranks start to end (reserve exactly,
 * write RECVs, sort and write SENDs and COMPs straight into the reserved pools). The output
 * does not depend on the threads. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

/* Lowerings with fewer transfers than this run on one thread (starting a second costs more
 * than it saves). */
#define PAR_MIN_TRANSFERS 8192u
/* At most this many rank shares are lowered in parallel. */
#define MAX_SHARES 4u

/* One phase of the lowered algorithm: a schedule run forward (All-Gather) or reversed
 * (Reduce-Scatter). */
typedef struct phase {
  const schedule_t *s;
  bool reverse;
  uint32_t *tag;            /* per transfer: its tag, its sender's message count before it */
  uint64_t key_base;        /* added to every ordering key of the phase */
  bool by_start;            /* forward: keyed by planned start (an All-Reduce's second half) */
  uint32_t *recv_id;        /* per transfer: id of its RECV in the receiving rank */
  uint32_t *comp_id;        /* reverse: per transfer, id of its COMP in the receiving rank */
  uint32_t *kid_off, *kids; /* reverse: CSR of the transfers that depend on each one */
  uint32_t max_kids;        /* reverse: the most kids of any transfer */
} phase_t;

/* A SEND or COMP waiting for its id in its rank, with what it is sorted by: (key, ord,
 * idx), where ord is phase << 2 | (SEND ? 2 : 0) and idx is the item's index in its rank
 * among items of its ord. Items are collected in transfer order, last transfer first for a
 * reversed phase, so idx is the transfer's index x, or ~x for a reversed phase: tie holds
 * ord << 32 | idx, and the item is its transfer. So COMPs go before SENDs at one instant
 * and a reversed phase takes its transfers in reverse issue order. 16 bytes and nothing
 * besides: the items of a share are its biggest scratch, and fresh pages cost (a page
 * fault, ~3 us here, per 4 KiB). */
typedef struct sortrec {
  uint64_t key;
  uint64_t tie;
} sortrec_t;

static sortrec_t make_rec(uint64_t key, uint32_t ord, bool reverse, uint32_t x) {
  return (sortrec_t){key, (uint64_t)ord << 32 | (reverse ? ~x : x)};
}
static uint32_t rec_ord(const sortrec_t *r) {
  return (uint32_t)(r->tie >> 32);
}
static uint32_t ord_phase(uint32_t ord) {
  return ord >> 2;
}
static bool ord_is_comp(uint32_t ord) {
  return (ord & 2u) == 0;
}
/* The transfer of item r of phase p. */
static uint32_t rec_xfer(const sortrec_t *r, bool reverse) {
  uint32_t idx = (uint32_t)r->tie;
  return reverse ? ~idx : idx;
}

typedef struct lower {
  algo_t *a;
  phase_t ph[2];
  uint32_t nph;
  const phase_t *final;    /* All-Reduce: the reduce phase whose COMPs own sends wait for */
  uint32_t *own_off, *own; /* All-Reduce: per chunk, transfers of the reduce phase leaving
                              its owner with it (their COMPs complete the chunk there) */
  /* Per rank, from count(): messages sent (tags numbered so far), RECVs, SENDs and COMPs,
   * dependency ids and chunk ids. */
  uint32_t *sent, *nrecv, *nitem;
  uint64_t *ndep, *nchunk;
  uint32_t *send_id; /* an All-Gather's: per transfer, its SEND's id in its rank, or NULL */
} lower_t;

/* One thread's share of the lowering: ranks r0..r1-1, done start to end by that thread
 * alone (a rank's nodes depend only on ids within the rank), so the result does not depend
 * on how ranks are split. */
typedef struct worker {
  lower_t *L;
  uint32_t r0, r1;
  uint32_t *item_off; /* per rank of the share + 1: where its items start */
  uint32_t *fill;     /* per rank of the share: items collected so far */
  sortrec_t *recs, *tmp;
  uint32_t *last, *last_rank;                /* reverse: per chunk, the rank's last COMP on it */
  uint32_t *peer_off, *peer_cnt, *peer_rank; /* reverse: per peer, the deps of the rank's
                                                last SEND to it that had any */
  tn_status_t st;
  tn_err_t err;
} worker_t;

static const uint32_t *xchunks(const schedule_t *s, const sched_xfer_t *x) {
  return TN_VEC_SLICE(&s->chunks, uint32_t, x->chunk_off);
}
static const uint32_t *xdeps(const schedule_t *s, const sched_xfer_t *x) {
  return TN_VEC_SLICE(&s->deps, uint32_t, x->dep_off);
}

/* The rank that sends transfer x in phase p, and the one that receives it. */
static uint32_t sender(const phase_t *p, const sched_xfer_t *x) {
  return p->reverse ? x->dst : x->src;
}
static uint32_t receiver(const phase_t *p, const sched_xfer_t *x) {
  return p->reverse ? x->src : x->dst;
}

/* Reductions into one slot are serialised: COMP id of rank r (on chunks ch) also depends
 * on the previous COMP of r on each of them (last[c], valid when last_rank[c] == r + 1),
 * each once; then it becomes the last on them. Returns the new dependency count. */
static uint32_t after_last_comps(uint32_t *deps, uint32_t nd, const uint32_t *ch, uint32_t nch,
                                 uint32_t *last, uint32_t *last_rank, uint32_t r, uint32_t id) {
  for (uint32_t j = 0; j < nch; j++) {
    uint32_t c = ch[j];
    if (last_rank[c] == r + 1) {
      bool seen = false;
      for (uint32_t k = 0; k < nd; k++)
        seen = seen || deps[k] == last[c];
      if (!seen) deps[nd++] = last[c];
    }
    last[c] = id;
    last_rank[c] = r + 1;
  }
  return nd;
}

/* Transfer i's dependencies must be earlier transfers that deliver to its sender (its
 * data, or a gate): the node ids they become are the sender's, which also lets every rank
 * be lowered on its own. */
static tn_status_t check_deps(const schedule_t *s, const sched_xfer_t *x, uint32_t i,
                              tn_err_t *err) {
  for (uint32_t j = 0; j < x->ndeps; j++) {
    uint32_t d = xdeps(s, x)[j];
    if (d >= i)
      return tn_err_set(err, TN_INVAL, "lowering: transfer %u depends on later transfer %u", i, d);
    if (schedule_xfer(s, d)->dst != x->src)
      return tn_err_set(err, TN_INVAL,
                        "lowering: transfer %u (from NPU %u) depends on transfer %u, which "
                        "delivers to NPU %u",
                        i, x->src, d, schedule_xfer(s, d)->dst);
  }
  return TN_OK;
}

/* Transfer i's chunks exist and its bytes are theirs (chunk c is base bytes, one more
 * when c < rem: ten_chunk_bytes without its division) and not 0. */
static tn_status_t check_chunks(const schedule_t *s, const sched_xfer_t *x, uint32_t i,
                                uint64_t base, uint64_t rem, tn_err_t *err) {
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu, bytes = 0;
  for (uint32_t j = 0; j < x->nchunks; j++) {
    uint32_t c = xchunks(s, x)[j];
    if (c >= nchunks)
      return tn_err_set(err, TN_INVAL, "lowering: transfer %u carries chunk %u of %llu", i, c,
                        (unsigned long long)nchunks);
    bytes += base + (c < rem ? 1u : 0u);
  }
  if (bytes != x->bytes || bytes == 0)
    return tn_err_set(err, TN_INVAL, "lowering: transfer %u has %llu B, its chunks %llu B", i,
                      (unsigned long long)x->bytes, (unsigned long long)bytes);
  return TN_OK;
}

static tn_status_t check_schedule(const schedule_t *s, tn_err_t *err) {
  if (s->coll != TN_ALLGATHER)
    return tn_err_set(err, TN_INVAL, "lowering: the schedule must be an All-Gather plan");
  if (s->npus == 0 || s->chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL, "lowering: schedule has %u NPUs and %u chunks per NPU",
                      s->npus, s->chunks_per_npu);
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu;
  uint64_t base = s->size_bytes / nchunks, rem = s->size_bytes % nchunks;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    if (x->src >= s->npus || x->dst >= s->npus || x->src == x->dst || x->bytes == 0 ||
        x->nchunks == 0 || schedule_op(s, i) != SCHED_COPY)
      return tn_err_set(err, TN_INVAL,
                        "lowering: transfer %u (%u -> %u, %llu B, %u chunks) "
                        "is malformed",
                        i, x->src, x->dst, (unsigned long long)x->bytes, x->nchunks);
    tn_status_t st = check_chunks(s, x, i, base, rem, err);
    /* Without a dependency the sender starts with the data: its own chunks only. */
    for (uint32_t j = 0; st == TN_OK && x->ndeps == 0 && j < x->nchunks; j++) {
      uint32_t c = xchunks(s, x)[j];
      if (c / s->chunks_per_npu != x->src)
        return tn_err_set(err, TN_INVAL,
                          "lowering: transfer %u from NPU %u has no dependency but carries chunk "
                          "%u of NPU %u",
                          i, x->src, c, c / s->chunks_per_npu);
    }
    if (st == TN_OK) st = check_deps(s, x, i, err);
    if (st != TN_OK) return st;
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
  for (uint32_t i = 0; i < n; i++)
    if (p->kid_off[i + 1] - p->kid_off[i] > p->max_kids)
      p->max_kids = p->kid_off[i + 1] - p->kid_off[i];
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
  return a->key != b->key ? a->key < b->key : a->tie < b->tie;
}

/* A merge sort of a[0..n) by rec_less with tmp (n/2 + 1 long) as scratch: insertion sort
 * on short runs, and no merge where two halves are already in order. */
static void merge_sort(sortrec_t *a, uint32_t n, sortrec_t *tmp) {
  if (n <= 16) {
    for (uint32_t i = 1; i < n; i++) {
      sortrec_t x = a[i];
      uint32_t j = i;
      for (; j > 0 && rec_less(&x, &a[j - 1]); j--)
        a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  uint32_t h = n / 2;
  merge_sort(a, h, tmp);
  merge_sort(a + h, n - h, tmp);
  if (!rec_less(&a[h], &a[h - 1])) return;
  memcpy(tmp, a, h * sizeof *a);
  uint32_t i = 0, j = h, o = 0;
  while (i < h && j < n)
    a[o++] = rec_less(&a[j], &tmp[i]) ? a[j++] : tmp[i++];
  while (i < h)
    a[o++] = tmp[i++];
}

/* Moves per record the insertion sort of sort_recs may make before it hands over. */
#define INSERTION_BUDGET 8u

/* Sorts a[0..n) by rec_less with tmp (n/2 + 1 long) as scratch. A rank's items come nearly
 * in order (collected per transfer, and a link takes its chunks in arrival order): in the
 * 16x8 All-Reduce an item sits 2.5 places from its place on average and never more than
 * 20, so an insertion sort is close to linear, a third of the merge sort's cost. An input
 * far from sorted (another planner's schedule) exhausts the budget and the merge sort
 * finishes: O(n log n) at worst. rec_less is a total order (tie is unique in a rank), so
 * the result is the same whichever sort produced it. */
static void sort_recs(sortrec_t *a, uint32_t n, sortrec_t *tmp) {
  uint64_t budget = (uint64_t)INSERTION_BUDGET * n;
  for (uint32_t i = 1; i < n; i++) {
    if (!rec_less(&a[i], &a[i - 1])) continue;
    sortrec_t x = a[i];
    uint32_t j = i;
    do {
      a[j] = a[j - 1];
      j--;
    } while (j > 0 && rec_less(&x, &a[j - 1]));
    a[j] = x;
    if (i - j > budget) {
      merge_sort(a, n, tmp);
      return;
    }
    budget -= i - j;
  }
}

static bool mine(const worker_t *w, uint32_t r) {
  return r >= w->r0 && r < w->r1;
}

/* Dependencies a forward SEND gets beyond its schedule deps: with an All-Reduce, the
 * owner's first sends of its chunks wait for the reduce phase's last COMP of each (at
 * most one per chunk). */
static uint64_t own_deps(const lower_t *L, const phase_t *p, const sched_xfer_t *x) {
  uint64_t d = 0;
  if (x->ndeps == 0 && L->final)
    for (uint32_t j = 0; j < x->nchunks; j++) {
      uint32_t c = xchunks(p->s, x)[j];
      d += L->own_off[c + 1] > L->own_off[c];
    }
  return d;
}

/* Pass 1, over the whole schedule once (before the ranks are shared out): numbers each
 * transfer's message by the ones its sender sent before it, in this and earlier phases
 * (unique per sender, so per (sender, receiver) pair, which is all matching needs; small
 * and recurring across ranks, which keeps Chakra files short and their attribute caches
 * hitting), numbers the RECVs of every rank in transfer order and counts every rank's
 * nodes, deps and chunks, so that storage is reserved exactly (no doubling slack, up to 2x
 * the memory on a 4096-NPU All-Gather). */
static tn_status_t count(lower_t *L, tn_err_t *err) {
  for (uint32_t q = 0; q < L->nph; q++) {
    phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s); xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      uint32_t s = sender(p, x), d = receiver(p, x);
      if (L->sent[s] > ALGO_MAX_TAG)
        return tn_err_set(err, TN_LIMIT, "lowering: NPU %u sends more than %d messages", s,
                          ALGO_MAX_TAG + 1);
      p->tag[xi] = L->sent[s]++;
      p->recv_id[xi] = L->nrecv[d]++;
      L->nchunk[d] += x->nchunks;
      if (p->reverse) { /* the COMP: its RECV and the previous COMPs of its chunks */
        L->nitem[d]++;
        L->ndep[d] += 1u + x->nchunks;
        L->nchunk[d] += x->nchunks;
      }
      L->nitem[s]++;
      L->nchunk[s] += x->nchunks;
      uint32_t kids = p->reverse ? p->kid_off[xi + 1] - p->kid_off[xi] : 0;
      if (p->reverse && kids == 0 && !L->final) kids = p->max_kids; /* a leaf inherits */
      L->ndep[s] += p->reverse ? kids : x->ndeps + own_deps(L, p, x);
    }
  }
  return TN_OK;
}

/* Gives rank r's node, dep and chunk pools exactly the counted room (a new algo's ranks
 * are empty). */
static tn_status_t reserve_rank(worker_t *w, uint32_t r) {
  const lower_t *L = w->L;
  uint64_t nodes = (uint64_t)L->nrecv[r] + L->nitem[r];
  if (nodes >= UINT32_MAX - 1 || L->ndep[r] >= UINT32_MAX || L->nchunk[r] >= UINT32_MAX)
    return tn_err_set(&w->err, TN_LIMIT,
                      "lowering: rank %u needs %llu nodes, %llu dependency ids and %llu chunk "
                      "ids (the cap is %u each)",
                      r, (unsigned long long)nodes, (unsigned long long)L->ndep[r],
                      (unsigned long long)L->nchunk[r], UINT32_MAX - 2);
  return algo_reserve(L->a, r, (size_t)nodes, (size_t)L->ndep[r], (size_t)L->nchunk[r], &w->err);
}

/* Appends a node to R, whose pools were reserved to fit (no check, no growth). deps may
 * already sit where they go (built in place at the end of the pool). The lists are a few
 * ids long, so they are copied by plain loops rather than memcpy calls. */
static inline void put(algo_rank_t *R, algo_node_t n, const uint32_t *deps,
                       const uint32_t *chunks) {
  uint32_t *dp = (uint32_t *)R->deps.data + R->deps.len;
  uint32_t *cp = (uint32_t *)R->chunks.data + R->chunks.len;
  n.dep_off = (uint32_t)R->deps.len;
  n.chunk_off = (uint32_t)R->chunks.len;
  if (deps != dp)
    for (uint32_t j = 0; j < n.ndeps; j++)
      dp[j] = deps[j];
  if (n.nchunks == 1) /* the greedy's messages: one chunk each */
    cp[0] = chunks[0];
  else
    for (uint32_t j = 0; j < n.nchunks; j++)
      cp[j] = chunks[j];
  R->deps.len += n.ndeps;
  R->chunks.len += n.nchunks;
  TN_VEC_AT(&R->nodes, algo_node_t, R->nodes.len++) = n;
}

/* Ordering key of a phase's SEND or COMP of transfer x: forward, the arrival of its chunks
 * at the sender (an All-Reduce's All-Gather half: its planned start); reversed, the
 * mirrored start (COMP) or arrival (SEND). */
static uint64_t item_key(const phase_t *p, const sched_xfer_t *x, bool comp) {
  const schedule_t *s = p->s;
  if (p->reverse) return p->key_base + (comp ? s->time_ps - x->start_ps : s->time_ps - x->end_ps);
  if (p->by_start) return p->key_base + x->start_ps;
  uint64_t ready = 0;
  for (uint32_t j = 0; j < x->ndeps; j++) {
    uint64_t e = schedule_xfer(s, xdeps(s, x)[j])->end_ps;
    if (e > ready) ready = e;
  }
  return p->key_base + ready;
}

/* Pass 2: writes the share's RECVs (in transfer order, so their ids are recv_id) and
 * collects its SENDs and COMPs as sort records. */
static void collect(worker_t *w) {
  const lower_t *L = w->L;
  algo_t *a = L->a;
  for (uint32_t q = 0; q < L->nph; q++) {
    const phase_t *p = &L->ph[q];
    for (uint32_t xi = 0; xi < schedule_len(p->s); xi++) {
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      uint32_t d = receiver(p, x);
      if (!mine(w, d)) continue;
      algo_node_t n = {
          ALGO_RECV, p->reverse, (int32_t)sender(p, x), (int32_t)p->tag[xi], x->bytes, 0, 0, 0,
          0,         x->nchunks};
      put(&a->ranks[d], n, NULL, xchunks(p->s, x));
    }
  }
  for (uint32_t q = 0; q < L->nph; q++) {
    const phase_t *p = &L->ph[q];
    uint32_t ord = q << 2, len = schedule_len(p->s);
    /* A reversed phase is collected last transfer first: its items then come nearly in
     * key order (the sort has little to do), and ties go to the later transfer. */
    for (uint32_t j = 0; j < len; j++) {
      uint32_t xi = p->reverse ? len - 1 - j : j;
      const sched_xfer_t *x = schedule_xfer(p->s, xi);
      uint32_t s = sender(p, x), d = receiver(p, x);
      if (p->reverse && mine(w, d)) {
        uint32_t i = d - w->r0;
        w->recs[w->item_off[i] + w->fill[i]++] = make_rec(item_key(p, x, true), ord, true, xi);
      }
      if (mine(w, s)) {
        uint32_t i = s - w->r0;
        w->recs[w->item_off[i] + w->fill[i]++] =
            make_rec(item_key(p, x, false), ord | 2u, p->reverse, xi);
      }
    }
  }
}

/* Emits rank r's SENDs and COMPs after its RECVs, in sorted order. */
static void emit_rank(worker_t *w, uint32_t r) {
  lower_t *L = w->L;
  algo_t *a = L->a;
  algo_rank_t *R = &a->ranks[r];
  uint32_t i0 = r - w->r0, base = w->item_off[i0], m = w->item_off[i0 + 1] - base;
  sortrec_t *rec = w->recs + base;
  sort_recs(rec, m, w->tmp);
  uint32_t first = (uint32_t)R->nodes.len;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t ord = rec_ord(&rec[i]);
    if (ord_is_comp(ord)) L->ph[ord_phase(ord)].comp_id[rec_xfer(&rec[i], true)] = first + i;
  }
  for (uint32_t i = 0; i < m; i++) {
    uint32_t ord = rec_ord(&rec[i]);
    const phase_t *p = &L->ph[ord_phase(ord)];
    uint32_t xi = rec_xfer(&rec[i], p->reverse);
    const sched_xfer_t *x = schedule_xfer(p->s, xi);
    const uint32_t *ch = xchunks(p->s, x);
    uint32_t nch = x->nchunks;
    uint32_t *deps = (uint32_t *)R->deps.data + R->deps.len, nd = 0;
    if (ord_is_comp(ord)) {
      /* Its reduce RECV, and the previous COMP of the rank on each of its chunks
       * (reductions into one slot are serialised, in mirrored arrival order). */
      deps[nd++] = p->recv_id[xi];
      nd = after_last_comps(deps, nd, ch, nch, w->last, w->last_rank, r, first + i);
      put(R, (algo_node_t){ALGO_COMP, false, -1, 0, 0, 0, 0, nd, 0, nch}, deps, ch);
      continue;
    }
    uint32_t peer = receiver(p, x);
    if (p->reverse) {
      /* Everything the sender reduced for these chunks: the partials that flowed back from
       * every transfer that forwarded them in the All-Gather. */
      for (uint32_t j = p->kid_off[xi]; j < p->kid_off[xi + 1]; j++)
        deps[nd++] = p->comp_id[p->kids[j]];
      /* A leaf's partial (no kids) would be ready at time 0, and all of a rank's leaves
       * would queue on their links at once, ahead of the later sends the mirrored plan
       * interleaves with them (a Reduce-Scatter 25% slower than its All-Gather on a
       * 16x8 mesh at one chunk per NPU). So a leaf waits for what the rank's previous
       * send to the same peer waited for: the link takes them in the mirrored order. The
       * mirrored plan meets these extra dependencies, so they add no cycle. Not in an
       * All-Reduce: there the early partials let some chunks start their All-Gather half
       * sooner, which was worth more on the 64-NPU meshes (1.7-2.2%) than the order: the
       * reduce phase of an All-Reduce (L->final) keeps its eager leaves. */
      if (!L->final && nd > 0) {
        w->peer_off[peer] = (uint32_t)R->deps.len;
        w->peer_cnt[peer] = nd;
        w->peer_rank[peer] = r + 1;
      } else if (!L->final && w->peer_rank[peer] == r + 1) {
        nd = w->peer_cnt[peer];
        memcpy(deps, (uint32_t *)R->deps.data + w->peer_off[peer], nd * sizeof *deps);
      }
    } else {
      for (uint32_t j = 0; j < x->ndeps; j++)
        deps[nd++] = p->recv_id[xdeps(p->s, x)[j]];
      /* The owner sends once the reduce phase completed the chunks: after the last COMP
       * of each, which follows every other COMP of it there (reductions into one slot
       * are serialised), so one dependency per chunk says it (on switch-128 each owner
       * reduces a chunk from 127 NPUs, and listing every COMP doubled the set). */
      for (uint32_t j = 0; x->ndeps == 0 && L->final && j < nch; j++) {
        uint32_t last = UINT32_MAX;
        for (uint32_t k = L->own_off[ch[j]]; k < L->own_off[ch[j] + 1]; k++) {
          uint32_t id = L->final->comp_id[L->own[k]];
          if (last == UINT32_MAX || id > last) last = id;
        }
        bool seen = last == UINT32_MAX;
        for (uint32_t k = 0; !seen && k < nd; k++)
          seen = deps[k] == last;
        if (!seen) deps[nd++] = last;
      }
    }
    if (L->send_id != NULL && !p->reverse) L->send_id[xi] = first + i; /* (one writer) */
    put(R,
        (algo_node_t){ALGO_SEND, false, (int32_t)peer, (int32_t)p->tag[xi], x->bytes, 0, 0, nd, 0,
                      nch},
        deps, ch);
  }
}

static void worker_free(worker_t *w) {
  free(w->item_off);
  free(w->fill);
  free(w->recs);
  free(w->tmp);
  free(w->last);
  free(w->last_rank);
  free(w->peer_off);
  free(w->peer_cnt);
  free(w->peer_rank);
}

/* Lowers the share's ranks start to end; the outcome is in w->st / w->err. */
static void work(worker_t *w) {
  lower_t *L = w->L;
  uint32_t n = w->r1 - w->r0;
  tn_err_t *err = &w->err;
  tn_status_t st = tn_calloc((size_t)n + 1, sizeof *w->item_off, &w->item_off, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *w->fill, &w->fill, err);
  if (st != TN_OK) goto done;
  uint32_t most = 0;
  for (uint32_t i = 0; i < n; i++) {
    w->item_off[i + 1] = w->item_off[i] + L->nitem[w->r0 + i];
    if (L->nitem[w->r0 + i] > most) most = L->nitem[w->r0 + i];
  }
  for (uint32_t r = w->r0; r < w->r1 && st == TN_OK; r++)
    st = reserve_rank(w, r);
  /* collect() writes every item's record: no need to clear them first */
  if (st == TN_OK) st = tn_malloc((size_t)w->item_off[n] + 1, sizeof *w->recs, &w->recs, err);
  if (st == TN_OK) st = tn_malloc((size_t)most / 2 + 1, sizeof *w->tmp, &w->tmp, err);
  if (st == TN_OK && L->ph[0].reverse) {
    uint64_t nchunks = (uint64_t)L->a->npus * L->a->chunks_per_npu;
    st = tn_calloc(nchunks, sizeof *w->last, &w->last, err);
    if (st == TN_OK) st = tn_calloc(nchunks, sizeof *w->last_rank, &w->last_rank, err);
    if (st == TN_OK) st = tn_calloc(L->a->npus, sizeof *w->peer_off, &w->peer_off, err);
    if (st == TN_OK) st = tn_calloc(L->a->npus, sizeof *w->peer_cnt, &w->peer_cnt, err);
    if (st == TN_OK) st = tn_calloc(L->a->npus, sizeof *w->peer_rank, &w->peer_rank, err);
  }
  if (st != TN_OK) goto done;
  collect(w);
  for (uint32_t r = w->r0; r < w->r1; r++)
    emit_rank(w, r);
done:
  w->st = st;
}

static void work_item(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  work(&((worker_t *)ctx)[i]);
}

/* Splits the ranks into up to MAX_SHARES shares (one when the schedule is small or
 * tn_thread_count() is 1) and lowers them in parallel; the first failure in rank order
 * wins. Every share reads the whole schedule, hence the small cap. */
static tn_status_t run_workers(lower_t *L, tn_err_t *err) {
  uint32_t n = L->a->npus, nw = 1;
  uint64_t transfers = 0;
  for (uint32_t q = 0; q < L->nph; q++)
    transfers += schedule_len(L->ph[q].s);
  if (transfers >= PAR_MIN_TRANSFERS) {
    unsigned th = tn_thread_count();
    nw = th < MAX_SHARES ? th : MAX_SHARES;
    if (nw > n) nw = n;
  }
  worker_t w[MAX_SHARES];
  memset(w, 0, sizeof w);
  for (uint32_t i = 0; i < nw; i++)
    w[i] = (worker_t){.L = L,
                      .r0 = (uint32_t)((uint64_t)n * i / nw),
                      .r1 = (uint32_t)((uint64_t)n * (i + 1) / nw)};
  tn_parallel_for(nw, nw, work_item, w);
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < nw; i++) {
    if (st == TN_OK && w[i].st != TN_OK) st = tn_err_set(err, w[i].st, "%s", w[i].err.msg);
    worker_free(&w[i]);
  }
  return st;
}

static tn_status_t add_phase(lower_t *L, const schedule_t *s, bool reverse, uint64_t key_base,
                             tn_err_t *err) {
  phase_t *p = &L->ph[L->nph];
  *p = (phase_t){.s = s, .reverse = reverse, .key_base = key_base};
  L->nph++;
  /* Every transfer's tag and RECV id are set by count(), its COMP id (a reversed phase)
   * by emit_rank before any node of that rank reads it: no need to clear them first. */
  size_t m = (size_t)schedule_len(s) + 1;
  tn_status_t st = tn_malloc(m, sizeof *p->recv_id, &p->recv_id, err);
  if (st == TN_OK) st = tn_malloc(m, sizeof *p->tag, &p->tag, err);
  if (st == TN_OK && reverse) st = tn_malloc(m, sizeof *p->comp_id, &p->comp_id, err);
  if (st == TN_OK && reverse) st = build_kids(p, err);
  return st;
}

static void lower_free(lower_t *L) {
  free(L->sent);
  free(L->nrecv);
  free(L->nitem);
  free(L->ndep);
  free(L->nchunk);
  for (uint32_t q = 0; q < L->nph; q++) {
    free(L->ph[q].tag);
    free(L->ph[q].recv_id);
    free(L->ph[q].comp_id);
    free(L->ph[q].kid_off);
    free(L->ph[q].kids);
  }
  free(L->own_off);
  free(L->own);
}

/* ag_by_start: an All-Gather's ids by planned start rather than ready time (an
 * All-Reduce's All-Gather half always is). */
static tn_status_t lower(const schedule_t *rs, const schedule_t *ag, tn_coll_t coll,
                         const char *name, algo_t **out, uint32_t *send_id, bool ag_by_start,
                         tn_err_t *err) {
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
  lower_t L = {.send_id = send_id};
  st = algo_create(name, coll, s->npus, s->chunks_per_npu, s->size_bytes, &L.a, err);
  if (st == TN_OK) st = tn_calloc(s->npus, sizeof *L.sent, &L.sent, err);
  if (st == TN_OK) st = tn_calloc(s->npus, sizeof *L.nrecv, &L.nrecv, err);
  if (st == TN_OK) st = tn_calloc(s->npus, sizeof *L.nitem, &L.nitem, err);
  if (st == TN_OK) st = tn_calloc(s->npus, sizeof *L.ndep, &L.ndep, err);
  if (st == TN_OK) st = tn_calloc(s->npus, sizeof *L.nchunk, &L.nchunk, err);
  if (st == TN_OK && rs) st = add_phase(&L, rs, true, 0, err);
  if (st == TN_OK && ag) st = add_phase(&L, ag, false, rs ? rs->time_ps + 1 : 0, err);
  if (st == TN_OK && ag && (rs || ag_by_start))
    L.ph[L.nph - 1].by_start = true; /* its ids follow the plan */
  if (st == TN_OK && rs && ag) {
    L.final = &L.ph[0];
    st = build_own(&L, &L.ph[0], err);
  }
  if (st == TN_OK) st = count(&L, err);
  if (st == TN_OK) st = run_workers(&L, err);
  lower_free(&L);
  if (st != TN_OK) {
    algo_free(L.a);
    return st;
  }
  *out = L.a;
  return TN_OK;
}

/* ---- explicit reduction schedules (trees/): lowered as is ---------------------------------
 *
 * Every transfer x becomes a SEND at its sender and a RECV at its receiver; a reducing x
 * also a COMP at the receiver that adds it to the slots (after the receiver's previous COMP
 * on any of its chunks: reductions into one slot are serialised). A dependency on transfer
 * y is y's COMP when y reduces (the sender forwards the sum), else y's RECV. Node ids: the
 * RECVs in transfer order, then SENDs and COMPs by (planned time, COMPs first, transfer
 * order), the time of a SEND being its planned start and that of a COMP its transfer's
 * arrival, so a planner that issues every transfer when its dependencies are met (in
 * transfer order at one instant) sees the simulator issue them in its own order. */

static tn_status_t check_explicit(const schedule_t *s, tn_coll_t coll, tn_err_t *err) {
  if (coll != s->coll)
    return tn_err_set(err, TN_INVAL, "lowering: a %s schedule cannot be lowered to %s",
                      tn_coll_name(s->coll), tn_coll_name(coll));
  if (s->npus == 0 || s->chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL, "lowering: schedule has %u NPUs and %u chunks per NPU",
                      s->npus, s->chunks_per_npu);
  uint64_t nchunks = (uint64_t)s->npus * s->chunks_per_npu, space;
  if (!tn_coll_space(coll, s->npus, s->size_bytes, &space))
    return tn_err_set(err, TN_INVAL, "lowering: %u times %llu B overflows", s->npus,
                      (unsigned long long)s->size_bytes);
  uint64_t base = space / nchunks, rem = space % nchunks;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    if (x->src >= s->npus || x->dst >= s->npus || x->src == x->dst || x->nchunks == 0)
      return tn_err_set(err, TN_INVAL, "lowering: transfer %u (%u -> %u, %u chunks) is malformed",
                        i, x->src, x->dst, x->nchunks);
    tn_status_t cst = check_chunks(s, x, i, base, rem, err);
    if (cst != TN_OK) return cst;
    tn_status_t st = check_deps(s, x, i, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* State of one explicit lowering: per transfer its tag, RECV id and COMP id; per rank the
 * counts that size its pools and where its items start in recs. */
typedef struct xlower {
  const schedule_t *s;
  algo_t *a;
  uint32_t *tag, *recv_id, *comp_id;
  uint32_t *send_id; /* per transfer: its SEND's id, or NULL (the caller's) */
  uint32_t *nrecv, *item_off, *fill;
  uint64_t *ndep, *nchunk;
  sortrec_t *recs, *tmp;
  uint32_t *last, *last_rank; /* per chunk: the current rank's last COMP on it (rank + 1) */
} xlower_t;

static void xlower_free(xlower_t *X) {
  free(X->tag);
  free(X->recv_id);
  free(X->comp_id);
  free(X->nrecv);
  free(X->item_off);
  free(X->fill);
  free(X->ndep);
  free(X->nchunk);
  free(X->recs);
  free(X->tmp);
  free(X->last);
  free(X->last_rank);
}

/* Tags, RECV ids and every rank's counts, in one pass over the transfers. */
static tn_status_t xcount(xlower_t *X, uint32_t *sent, tn_err_t *err) {
  const schedule_t *s = X->s;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    if (sent[x->src] > ALGO_MAX_TAG)
      return tn_err_set(err, TN_LIMIT, "lowering: NPU %u sends more than %d messages", x->src,
                        ALGO_MAX_TAG + 1);
    X->tag[i] = sent[x->src]++;
    X->recv_id[i] = X->nrecv[x->dst]++;
    X->nchunk[x->dst] += x->nchunks;
    if (schedule_op(s, i) == SCHED_REDUCE) {
      X->item_off[x->dst + 1]++;
      X->ndep[x->dst] += 1u + x->nchunks;
      X->nchunk[x->dst] += x->nchunks;
    }
    X->item_off[x->src + 1]++;
    X->ndep[x->src] += x->ndeps;
    X->nchunk[x->src] += x->nchunks;
  }
  for (uint32_t r = 0; r < s->npus; r++) {
    uint64_t nodes = (uint64_t)X->nrecv[r] + X->item_off[r + 1];
    if (nodes >= UINT32_MAX - 1 || X->ndep[r] >= UINT32_MAX || X->nchunk[r] >= UINT32_MAX)
      return tn_err_set(err, TN_LIMIT, "lowering: rank %u needs more than %u nodes or ids", r,
                        UINT32_MAX - 2);
    tn_status_t st =
        algo_reserve(X->a, r, (size_t)nodes, (size_t)X->ndep[r], (size_t)X->nchunk[r], err);
    if (st != TN_OK) return st;
  }
  for (uint32_t r = 0; r < s->npus; r++)
    X->item_off[r + 1] += X->item_off[r];
  return TN_OK;
}

/* Writes every rank's RECVs and collects its SENDs and COMPs as sort records. */
static void xcollect(xlower_t *X) {
  const schedule_t *s = X->s;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    bool red = schedule_op(s, i) == SCHED_REDUCE;
    algo_node_t n = {.op = ALGO_RECV,
                     .reduce = red,
                     .peer = (int32_t)x->src,
                     .tag = (int32_t)X->tag[i],
                     .bytes = x->bytes,
                     .nchunks = x->nchunks};
    put(&X->a->ranks[x->dst], n, NULL, xchunks(s, x));
    if (red) X->recs[X->item_off[x->dst] + X->fill[x->dst]++] = make_rec(x->end_ps, 0, false, i);
    X->recs[X->item_off[x->src] + X->fill[x->src]++] = make_rec(x->start_ps, 2, false, i);
  }
}

/* Emits rank r's SENDs and COMPs after its RECVs, in sorted order. */
static void xemit_rank(xlower_t *X, uint32_t r) {
  const schedule_t *s = X->s;
  algo_rank_t *R = &X->a->ranks[r];
  uint32_t base = X->item_off[r], m = X->item_off[r + 1] - base;
  sortrec_t *rec = X->recs + base;
  sort_recs(rec, m, X->tmp);
  uint32_t first = (uint32_t)R->nodes.len;
  for (uint32_t i = 0; i < m; i++)
    if (ord_is_comp(rec_ord(&rec[i]))) X->comp_id[rec_xfer(&rec[i], false)] = first + i;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t xi = rec_xfer(&rec[i], false);
    const sched_xfer_t *x = schedule_xfer(s, xi);
    const uint32_t *ch = xchunks(s, x);
    uint32_t *deps = (uint32_t *)R->deps.data + R->deps.len, nd = 0;
    if (ord_is_comp(rec_ord(&rec[i]))) {
      deps[nd++] = X->recv_id[xi];
      nd = after_last_comps(deps, nd, ch, x->nchunks, X->last, X->last_rank, r, first + i);
      put(R, (algo_node_t){.op = ALGO_COMP, .peer = -1, .ndeps = nd, .nchunks = x->nchunks}, deps,
          ch);
      continue;
    }
    for (uint32_t j = 0; j < x->ndeps; j++) {
      uint32_t d = xdeps(s, x)[j];
      deps[nd++] = schedule_op(s, d) == SCHED_REDUCE ? X->comp_id[d] : X->recv_id[d];
    }
    if (X->send_id) X->send_id[xi] = first + i;
    put(R,
        (algo_node_t){.op = ALGO_SEND,
                      .peer = (int32_t)x->dst,
                      .tag = (int32_t)X->tag[xi],
                      .bytes = x->bytes,
                      .ndeps = nd,
                      .nchunks = x->nchunks},
        deps, ch);
  }
}

/* Lowers an explicit Reduce-Scatter or All-Reduce schedule as is. O(T log T). */
static tn_status_t lower_explicit(const schedule_t *s, tn_coll_t coll, const char *name,
                                  algo_t **out, uint32_t *send_id, tn_err_t *err) {
  *out = NULL;
  tn_status_t st = check_explicit(s, coll, err);
  if (st != TN_OK) return st;
  xlower_t X = {.s = s, .send_id = send_id};
  uint32_t *sent = NULL, n = s->npus, len = schedule_len(s);
  uint64_t nchunks = (uint64_t)n * s->chunks_per_npu;
  st = algo_create(name, coll, n, s->chunks_per_npu, s->size_bytes, &X.a, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *sent, &sent, err);
  if (st == TN_OK) st = tn_calloc((size_t)len + 1, sizeof *X.tag, &X.tag, err);
  if (st == TN_OK) st = tn_calloc((size_t)len + 1, sizeof *X.recv_id, &X.recv_id, err);
  if (st == TN_OK) st = tn_calloc((size_t)len + 1, sizeof *X.comp_id, &X.comp_id, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *X.nrecv, &X.nrecv, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 1, sizeof *X.item_off, &X.item_off, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *X.fill, &X.fill, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *X.ndep, &X.ndep, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *X.nchunk, &X.nchunk, err);
  if (st == TN_OK) st = tn_calloc(nchunks, sizeof *X.last, &X.last, err);
  if (st == TN_OK) st = tn_calloc(nchunks, sizeof *X.last_rank, &X.last_rank, err);
  if (st == TN_OK) st = xcount(&X, sent, err);
  uint32_t most = 0;
  for (uint32_t r = 0; st == TN_OK && r < n; r++)
    if (X.item_off[r + 1] - X.item_off[r] > most) most = X.item_off[r + 1] - X.item_off[r];
  if (st == TN_OK) st = tn_malloc((size_t)X.item_off[n] + 1, sizeof *X.recs, &X.recs, err);
  if (st == TN_OK) st = tn_malloc((size_t)most / 2 + 1, sizeof *X.tmp, &X.tmp, err);
  if (st == TN_OK) {
    xcollect(&X);
    for (uint32_t r = 0; r < n; r++)
      xemit_rank(&X, r);
  }
  free(sent);
  xlower_free(&X);
  if (st != TN_OK) {
    algo_free(X.a);
    return st;
  }
  *out = X.a;
  return TN_OK;
}

tn_status_t algo_from_schedule(const schedule_t *s, tn_coll_t coll, const char *name, algo_t **out,
                               tn_err_t *err) {
  if (s->coll != TN_ALLGATHER) return lower_explicit(s, coll, name, out, NULL, err);
  switch (coll) {
  case TN_ALLGATHER: return lower(NULL, s, coll, name, out, NULL, false, err);
  case TN_REDUCESCATTER: return lower(s, NULL, coll, name, out, NULL, false, err);
  case TN_ALLREDUCE: return lower(s, s, coll, name, out, NULL, false, err);
  case TN_ALLTOALL: break;
  }
  *out = NULL;
  return tn_err_set(err, TN_INVAL, "lowering: an All-Gather plan cannot be lowered to %s",
                    tn_coll_name(coll));
}

tn_status_t algo_from_schedule_ids(const schedule_t *s, tn_coll_t coll, const char *name,
                                   algo_t **out, uint32_t *send_id, tn_err_t *err) {
  if (s->coll != TN_ALLGATHER) return lower_explicit(s, coll, name, out, send_id, err);
  if (coll == TN_ALLGATHER) return lower(NULL, s, coll, name, out, send_id, false, err);
  *out = NULL;
  return tn_err_set(err, TN_INVAL,
                    "lowering: SEND ids are named for explicit schedules and All-Gathers only");
}

tn_status_t algo_allreduce_from_schedules(const schedule_t *rs_ag, const schedule_t *ag,
                                          const char *name, algo_t **out, tn_err_t *err) {
  return lower(rs_ag, ag, TN_ALLREDUCE, name, out, NULL, false, err);
}

tn_status_t algo_from_schedule_started(const schedule_t *s, const char *name, algo_t **out,
                                       tn_err_t *err) {
  if (s->coll != TN_ALLGATHER) {
    *out = NULL;
    return tn_err_set(err, TN_INVAL, "lowering: only an All-Gather plan is lowered by start");
  }
  return lower(NULL, s, TN_ALLGATHER, name, out, NULL, true, err);
}
