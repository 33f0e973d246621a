/* greedy/plan.c — one pass of the greedy link–chunk matching at a fixed chunking: it drives
 * ten/'s engine and, whenever a link out of an NPU is idle, sends the earliest-arrived chunk
 * its far end still lacks. Called by greedy.c; its schedule_t is lowered by algo/.
 *
 * Why the simulator reproduces the plan exactly: a link only ever carries chunks in the
 * order they arrived at its sender (ties at one instant broken by the planner), and the
 * planner sends the moment both the chunk is there and the link is idle. The lowered DAG
 * makes each SEND depend on the RECV that brought its chunk and numbers SENDs by (ready
 * time, issue order), so the simulator's per-link FIFO sees the same messages in the same
 * order at the same times. Not so with greedy_opts_t.rarest: a link may then send a chunk
 * ahead of one that reached its sender earlier, and the set keeps the plan's times only
 * once lowered by planned start and order-proofed against the plan (greedy.h).
 *
 * Messages carry one chunk. Bundling the chunks that leave on one link at one decision
 * cannot help in this model: a link has no per-message cost and latency does not occupy
 * it, so a bundle only delays its first chunk by the others' serialisation at every hop.
 * The latency cost at small sizes is cut instead by finer chunks, which pipeline it
 * (greedy.c's search picks the chunking). */
#include "greedy/greedy_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What the planner does with a link leaving an NPU. */
enum {
  LK_UNUSED = 0, /* switch-to-anything links, or an NPU link its own route does not use */
  LK_DIRECT = 1, /* NPU -> NPU, and the route between them is this link */
  LK_SWITCH = 2, /* NPU -> switch: one routed message per chunk to a chosen NPU beyond */
};

/* How far into a group of equal-arrival candidates a decision looks for the best one. */
#define GROUP_SCAN 64u

/* A candidate on a link's queue: chunk, the transfer that brought it to the sender
 * (SCHED_NONE for the sender's own chunks) and the instant it arrived (a counter of the
 * planner's instants, 0 for own chunks: equal epochs mean equal arrival times). */
typedef struct cand {
  uint32_t chunk, xfer, epoch;
} cand_t;

/* Candidates in arrival order; entries before head are consumed. */
typedef struct queue {
  cand_t *e;
  uint32_t head, len, cap;
} queue_t;

/* A pending look at a link once it is idle again. */
typedef struct wake_ev {
  uint64_t time_ps;
  uint32_t link;
} wake_ev_t;

#define NO_LINK UINT32_MAX

/* Links due for a look at one time, in the order they were added (a list through
 * plan_t.wake_next); a free bucket's head links the free list. */
typedef struct bucket {
  uint64_t time_ps;
  uint32_t head, tail;
} bucket_t;

/* An NPU reachable through a switch link: the NPU and the last link into it. */
typedef struct dest {
  uint32_t npu, last_link;
} dest_t;

typedef struct plan {
  const topo_t *t;
  topo_routes_t *routes;
  ten_engine_t *eng;
  schedule_t *s;
  uint32_t n, k, nchunks;
  uint64_t size;
  uint64_t chunk_base, chunk_rem; /* chunk c has chunk_base + (c < chunk_rem) bytes */
  uint64_t now;          /* ten_now of the engine, kept here: it is read at every decision */
  size_t words;          /* 64-bit words per row of claimed */
  uint64_t *claimed;     /* n rows of nchunks bits: NPU holds the chunk or has it in flight */
  uint32_t *count;       /* per chunk: how many NPUs claimed it */
  uint64_t *prio;        /* per chunk: seeded tie-breaking key */
  uint8_t *kind;         /* per link: LK_* */
  queue_t *q;            /* per link */
  uint32_t *dbeg, *dend; /* per link: its range of dests (switch links) */
  dest_t *dests;
  uint32_t *dirty; /* links to look at this instant, in the order they got dirty */
  uint8_t *is_dirty;
  uint32_t ndirty;
  uint64_t *wake_at; /* per link: the time of its pending wake-up (its free time), 0: none */
  /* Wake-ups live in the planner's own queue; the engine holds one timer (the alarm) per
   * distinct wake time instead of one per busy link, which keeps its queue small. The
   * queue is a heap of buckets by time: a send's wake-up is due one transmission after
   * now, so the links sent on in one instant nearly always share a time and join the
   * bucket made last (else a new one, even if an older bucket has that time: on_alarm
   * gathers all that are due and sorts their links). One heap operation per distinct
   * time rather than two per wake-up (a third of the plan's instructions went to them).
   * At most one wake-up per link is pending, so nlinks buckets always suffice. */
  bucket_t *bk;
  uint32_t *bheap, nbheap; /* buckets in use, a min-heap by time */
  uint32_t bk_free;        /* first free bucket */
  uint32_t bk_last;        /* the bucket made last while it is in use, else NO_LINK */
  uint32_t *wake_next;     /* per link: the next link in its bucket */
  wake_ev_t *due;          /* on_alarm's scratch, nlinks long */
  uint64_t armed;          /* earliest alarm pending in the engine, UINT64_MAX if none */
  uint32_t epoch;          /* instants processed so far */
  uint64_t owed;           /* (NPU, chunk) deliveries still to plan */
  uint32_t *unclaimed;     /* per NPU: chunks it neither holds nor has in flight */
  double *ingress_Bps;     /* per NPU: bytes/s its in-links carry together (searches only) */
  uint64_t *lat_in;        /* per NPU: the smallest latency of its in-links (searches only) */
  const uint32_t *roots;   /* greedy_opts_t.roots (NULL: every chunk starts at its owner) */
  uint32_t nroots;
  bool rarest; /* greedy_opts_t.rarest */
} plan_t;

/* The NPU chunk c starts at: its owner, or the root greedy_opts_t.roots gives it. */
static uint32_t start_of(const plan_t *p, uint32_t c) {
  uint32_t u = c / p->k, j = c % p->k;
  return p->roots ? p->roots[((uint64_t)j * p->n + u) % p->nroots] : u;
}

static bool claimed(const plan_t *p, uint32_t v, uint32_t c) {
  return (p->claimed[(size_t)v * p->words + c / 64u] >> (c % 64u)) & 1u;
}

static void claim(plan_t *p, uint32_t v, uint32_t c) {
  p->claimed[(size_t)v * p->words + c / 64u] |= (uint64_t)1 << (c % 64u);
  p->count[c]++;
  p->unclaimed[v]--;
}

/* The documented priority among candidates that arrived at the same instant: the chunk
 * fewest NPUs hold or await (rarest first), then the seeded hash. */
static bool better(const plan_t *p, uint32_t a, uint32_t b) {
  if (p->count[a] != p->count[b]) return p->count[a] < p->count[b];
  return p->prio[a] < p->prio[b];
}

static tn_status_t push(queue_t *q, cand_t c, tn_err_t *err) {
  if (q->len == q->cap) {
    if (q->head > 0 && q->head >= q->len / 2) {
      memmove(q->e, q->e + q->head, (q->len - q->head) * sizeof *q->e);
      q->len -= q->head;
      q->head = 0;
    } else {
      uint32_t ncap = q->cap ? q->cap * 2 : 8;
      tn_status_t st = tn_realloc(&q->e, q->cap, ncap, sizeof *q->e, err);
      if (st != TN_OK) return st;
      q->cap = ncap;
    }
  }
  q->e[q->len++] = c;
  return TN_OK;
}

static void mark_dirty(plan_t *p, uint32_t l) {
  if (p->is_dirty[l]) return;
  p->is_dirty[l] = 1;
  p->dirty[p->ndirty++] = l;
}

static bool wake_less(const wake_ev_t *a, const wake_ev_t *b) {
  return a->time_ps != b->time_ps ? a->time_ps < b->time_ps : a->link < b->link;
}

/* Buckets have distinct times: the heap's order is strict. */
static bool bucket_less(const void *ctx, uint32_t a, uint32_t b) {
  const plan_t *p = ctx;
  return p->bk[a].time_ps < p->bk[b].time_ps;
}

static void bheap_push(plan_t *p, uint32_t b) {
  tn_heap_push(p->bheap, &p->nbheap, b, bucket_less, p);
}

static void bheap_pop(plan_t *p) {
  (void)tn_heap_pop(p->bheap, &p->nbheap, bucket_less, p);
}

/* Queues a look at link l at time_ps (l has none pending). */
static void wake_push(plan_t *p, uint64_t time_ps, uint32_t l) {
  uint32_t b = p->bk_last;
  if (b == NO_LINK || p->bk[b].time_ps != time_ps) {
    b = p->bk_free;
    p->bk_free = p->bk[b].head;
    p->bk[b] = (bucket_t){time_ps, NO_LINK, NO_LINK};
    bheap_push(p, b);
    p->bk_last = b;
  }
  bucket_t *k = &p->bk[b];
  if (k->head == NO_LINK)
    k->head = l;
  else
    p->wake_next[k->tail] = l;
  k->tail = l;
  p->wake_next[l] = NO_LINK;
}

static int wake_cmp(const void *a, const void *b) {
  return wake_less(a, b) ? -1 : wake_less(b, a) ? 1 : 0;
}

/* Sorts w[0..n) by (time, link), a total order (one wake-up per link). The links of a
 * bucket come in the order the planner decided on them, mostly by link id already, so an
 * insertion sort is nearly linear; past 8 moves per entry qsort takes over. */
static void sort_due(wake_ev_t *w, uint32_t n) {
  uint64_t budget = 8u * (uint64_t)n;
  for (uint32_t i = 1; i < n; i++) {
    if (!wake_less(&w[i], &w[i - 1])) continue;
    wake_ev_t x = w[i];
    uint32_t j = i;
    do {
      w[j] = w[j - 1];
      j--;
    } while (j > 0 && wake_less(&x, &w[j - 1]));
    w[j] = x;
    if (i - j > budget) {
      qsort(w, n, sizeof *w, wake_cmp);
      return;
    }
    budget -= i - j;
  }
}

/* Keeps an engine timer pending at the earliest wake-up. */
static tn_status_t arm(plan_t *p, tn_err_t *err) {
  if (p->nbheap == 0 || p->bk[p->bheap[0]].time_ps >= p->armed) return TN_OK;
  p->armed = p->bk[p->bheap[0]].time_ps;
  return ten_timer(p->eng, p->armed - p->now, 0, err);
}

/* An alarm fired: every link whose wake-up is due is looked at in this instant. */
static tn_status_t on_alarm(plan_t *p, uint64_t now, tn_err_t *err) {
  if (now >= p->armed) p->armed = UINT64_MAX;
  uint32_t n = 0;
  while (p->nbheap > 0 && p->bk[p->bheap[0]].time_ps <= now) {
    uint32_t b = p->bheap[0];
    bheap_pop(p);
    for (uint32_t l = p->bk[b].head; l != NO_LINK; l = p->wake_next[l])
      p->due[n++] = (wake_ev_t){p->bk[b].time_ps, l};
    if (b == p->bk_last) p->bk_last = NO_LINK;
    p->bk[b].head = p->bk_free;
    p->bk_free = b;
  }
  sort_due(p->due, n);
  for (uint32_t i = 0; i < n; i++) {
    p->wake_at[p->due[i].link] = 0;
    mark_dirty(p, p->due[i].link);
  }
  return arm(p, err);
}

/* Makes sure the planner looks at link l again when it is idle: at once if it is idle now,
 * else by a timer at its free time (one pending timer per link at most). */
static tn_status_t wake(plan_t *p, uint32_t l, tn_err_t *err) {
  /* A wake-up still ahead means l is busy until then (free times never decrease): the
   * common case, answered without asking the engine. */
  if (p->wake_at[l] > p->now) return TN_OK;
  uint64_t free_ps = ten_link_free_ps(p->eng, l);
  if (free_ps <= p->now) {
    mark_dirty(p, l);
    return TN_OK;
  }
  if (p->wake_at[l] != 0) return TN_OK; /* due now; the alarm of this instant takes it */
  p->wake_at[l] = free_ps;
  wake_push(p, free_ps, l);
  return arm(p, err);
}

/* Offers chunk c, just arrived at NPU v by transfer xfer, to every link out of v whose far
 * end may still lack it. */
static tn_status_t offer(plan_t *p, uint32_t v, uint32_t c, uint32_t xfer, tn_err_t *err) {
  const topo_t *t = p->t;
  for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
    uint32_t l = t->out_link[i];
    if (p->kind[l] == LK_UNUSED) continue;
    if (p->kind[l] == LK_DIRECT && claimed(p, t->links[l].dst, c)) continue;
    if (p->kind[l] == LK_SWITCH && p->count[c] == p->n) continue;
    tn_status_t st = push(&p->q[l], (cand_t){c, xfer, p->epoch}, err);
    if (st == TN_OK) st = wake(p, l, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* Sends chunk cand from u to NPU w over link l (the first hop) now, records the transfer
 * and wakes the planner when l is idle again. */
static tn_status_t send(plan_t *p, uint32_t u, uint32_t w, uint32_t l, const cand_t *cand,
                        tn_err_t *err) {
  uint64_t now = p->now;
  uint64_t bytes = p->chunk_base + (cand->chunk < p->chunk_rem ? 1u : 0u); /* ten_chunk_bytes */
  uint32_t index = schedule_len(p->s);
  sched_xfer_t x = {.src = u,
                    .dst = w,
                    .bytes = bytes,
                    .start_ps = now,
                    .end_ps = 0,
                    .nchunks = 1,
                    .ndeps = cand->xfer == SCHED_NONE ? 0u : 1u};
  tn_status_t st = schedule_add(p->s, &x, &cand->chunk, &cand->xfer, NULL, err);
  /* l is the route's first hop (setup and build_dests checked the routes) */
  if (st == TN_OK) st = ten_send_via(p->eng, u, w, l, bytes, index, err);
  if (st != TN_OK) return st;
  claim(p, w, cand->chunk);
  /* Wake at the free time only if something is already waiting; a later offer wakes it
   * otherwise. */
  const queue_t *q = &p->q[l];
  return q->head < q->len ? wake(p, l, err) : TN_OK;
}

/* greedy_opts_t.rarest's choice among the first GREEDY_RAREST_SCAN entries from the head
 * (unclaimed at the head, which decide_direct saw to): the fewest holders, then the
 * earliest arrival, then the priority. The queue is then no longer in arrival order, which
 * nothing in this mode needs. */
static uint32_t rarest_of(const plan_t *p, const queue_t *q, uint32_t v) {
  uint32_t best = q->head;
  for (uint32_t i = q->head + 1; i < q->len && i < q->head + GREEDY_RAREST_SCAN; i++) {
    const cand_t *a = &q->e[i], *b = &q->e[best];
    if (claimed(p, v, a->chunk)) continue;
    uint32_t ca = p->count[a->chunk], cb = p->count[b->chunk];
    bool first = ca != cb ? ca < cb : a->epoch < b->epoch;
    if (first || (ca == cb && a->epoch == b->epoch && better(p, a->chunk, b->chunk))) best = i;
  }
  return best;
}

/* An idle NPU -> NPU link: the earliest-arrived chunk the far end lacks; among those that
 * arrived at the same instant, the best by priority (greedy_opts_t.rarest: rarest_of).
 * Stale entries are dropped lazily. */
static tn_status_t decide_direct(plan_t *p, uint32_t l, tn_err_t *err) {
  queue_t *q = &p->q[l];
  uint32_t u = p->t->links[l].src, v = p->t->links[l].dst;
  while (q->head < q->len && claimed(p, v, q->e[q->head].chunk))
    q->head++;
  if (q->head == q->len) {
    q->head = q->len = 0;
    return TN_OK;
  }
  uint32_t a0 = q->e[q->head].epoch;
  uint32_t best = q->head;
  if (p->rarest) {
    best = rarest_of(p, q, v);
  } else {
    for (uint32_t i = q->head + 1; i < q->len && i < q->head + GROUP_SCAN; i++) {
      if (q->e[i].epoch != a0) break;
      if (!claimed(p, v, q->e[i].chunk) && better(p, q->e[i].chunk, q->e[best].chunk)) best = i;
    }
  }
  cand_t c = q->e[best];
  q->e[best] = q->e[q->head];
  q->head++;
  return send(p, u, v, l, &c, err);
}

/* An idle NPU -> switch link: the earliest-arrived chunk some NPU beyond the switch lacks
 * (it stays at the head until all have it), sent to the one among those whose last link
 * frees first (ties: the next NPU after u in id order, cyclically, which spreads a star's
 * traffic like Direct does). */
static tn_status_t decide_switch(plan_t *p, uint32_t l, tn_err_t *err) {
  queue_t *q = &p->q[l];
  uint32_t u = p->t->links[l].src;
  while (q->head < q->len) {
    /* The head stays while some NPU beyond still lacks it: one chunk, many messages. */
    cand_t c = q->e[q->head];
    if (p->count[c.chunk] == p->n) {
      q->head++;
      continue;
    }
    uint32_t best = UINT32_MAX;
    uint64_t best_free = 0, best_rot = 0;
    for (uint32_t i = p->dbeg[l]; i < p->dend[l]; i++) {
      const dest_t *d = &p->dests[i];
      if (claimed(p, d->npu, c.chunk)) continue;
      uint64_t f = ten_link_free_ps(p->eng, d->last_link);
      uint64_t rot = (d->npu + p->n - u) % p->n;
      if (best == UINT32_MAX || f < best_free || (f == best_free && rot < best_rot)) {
        best = d->npu;
        best_free = f;
        best_rot = rot;
      }
    }
    if (best != UINT32_MAX) return send(p, u, best, l, &c, err);
    q->head++;
  }
  q->head = q->len = 0;
  return TN_OK;
}

static tn_status_t decide_all(plan_t *p, tn_err_t *err) {
  uint64_t now = p->now;
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < p->ndirty && st == TN_OK; i++) {
    uint32_t l = p->dirty[i];
    p->is_dirty[l] = 0;
    if (ten_link_free_ps(p->eng, l) > now) continue; /* its timer will wake it */
    st = p->kind[l] == LK_DIRECT ? decide_direct(p, l, err) : decide_switch(p, l, err);
  }
  p->ndirty = 0;
  return st;
}

static tn_status_t release_own(plan_t *p, uint32_t j, tn_err_t *err);

static tn_status_t on_event(plan_t *p, const ten_event_t *ev, tn_err_t *err) {
  p->now = ev->time_ps; /* what ten_now(p->eng) returns until the next ten_next */
  if (ev->kind == TEN_EV_TIMER && ev->cookie != 0)
    return release_own(p, (uint32_t)ev->cookie - 1u, err);
  if (ev->kind == TEN_EV_TIMER) return on_alarm(p, ev->time_ps, err);
  uint32_t index = (uint32_t)ev->cookie;
  sched_xfer_t *x = &TN_VEC_AT(&p->s->xfers, sched_xfer_t, index);
  x->end_ps = ev->time_ps;
  if (ev->time_ps > p->s->time_ps) p->s->time_ps = ev->time_ps;
  const uint32_t *chunks = &TN_VEC_AT(&p->s->chunks, uint32_t, x->chunk_off);
  uint32_t dst = x->dst, nchunks = x->nchunks;
  p->owed -= nchunks;
  for (uint32_t i = 0; i < nchunks; i++) {
    tn_status_t st = offer(p, dst, chunks[i], index, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* Lists, for every NPU -> switch link, the NPUs whose route starts with it and then
 * crosses switches only: dests[dbeg[l] .. dend[l]). O(n * hops) per NPU that has a
 * switch link; nothing for fabrics without switches. */
static tn_status_t build_dests(plan_t *p, tn_err_t *err) {
  const topo_t *t = p->t;
  uint32_t n = p->n;
  tn_vec_t v;
  tn_vec_init(&v, sizeof(dest_t));
  tn_status_t st = tn_calloc(t->nlinks, sizeof *p->dbeg, &p->dbeg, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->dend, &p->dend, err);
  for (uint32_t i = 0; i < t->out_off[n] && st == TN_OK; i++) {
    uint32_t l0 = t->out_link[i], u = t->links[l0].src;
    if (t->links[l0].dst < n) continue;
    p->dbeg[l0] = (uint32_t)v.len;
    for (uint32_t w = 0; w < n && st == TN_OK; w++) {
      if (w == u || topo_route_next(p->routes, u, w) != l0) continue;
      uint32_t node = t->links[l0].dst, last = l0, hops = 0;
      while (node >= n && hops++ <= topo_nodes(t)) {
        last = topo_route_next(p->routes, node, w);
        if (last == TOPO_NO_LINK) break;
        node = t->links[last].dst;
      }
      if (node == w) st = tn_vec_push(&v, &(dest_t){w, last}, err);
    }
    p->dend[l0] = (uint32_t)v.len;
    if (p->dend[l0] > p->dbeg[l0]) p->kind[l0] = LK_SWITCH;
  }
  if (st == TN_OK) {
    p->dests = v.data; /* ownership moves to p */
    return TN_OK;
  }
  tn_vec_free(&v);
  return st;
}

static tn_status_t setup(plan_t *p, tn_err_t *err) {
  const topo_t *t = p->t;
  p->words = ((size_t)p->nchunks + 63u) / 64u;
  tn_status_t st = tn_calloc((size_t)p->n * p->words, sizeof *p->claimed, &p->claimed, err);
  if (st == TN_OK) st = tn_calloc(p->nchunks, sizeof *p->count, &p->count, err);
  if (st == TN_OK) st = tn_calloc(p->n, sizeof *p->unclaimed, &p->unclaimed, err);
  for (uint32_t v = 0; st == TN_OK && v < p->n; v++)
    p->unclaimed[v] = p->nchunks;
  if (st == TN_OK) st = tn_calloc(p->nchunks, sizeof *p->prio, &p->prio, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->kind, &p->kind, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->q, &p->q, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->dirty, &p->dirty, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->is_dirty, &p->is_dirty, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->wake_at, &p->wake_at, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->bk, &p->bk, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->bheap, &p->bheap, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->wake_next, &p->wake_next, err);
  if (st == TN_OK) st = tn_calloc(t->nlinks, sizeof *p->due, &p->due, err);
  if (st != TN_OK) return st;
  for (uint32_t b = 0; b < t->nlinks; b++) /* all buckets free */
    p->bk[b].head = b + 1 < t->nlinks ? b + 1 : NO_LINK;
  p->bk_free = 0;
  p->bk_last = NO_LINK;
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const topo_link_t *lk = &t->links[l];
    if (lk->src < p->n && lk->dst < p->n && topo_route_next(p->routes, lk->src, lk->dst) == l)
      p->kind[l] = LK_DIRECT;
  }
  st = build_dests(p, err);
  /* A route table that could not be allocated reads as "no route": the links' kinds and
   * destinations would be wrong, so this is out of memory, not a disconnected fabric. */
  if (st == TN_OK && topo_routes_out_of_memory(p->routes))
    st = tn_err_set(err, TN_NOMEM, "out of memory building the routes of '%s'", t->name);
  return st;
}

static void teardown(plan_t *p) {
  if (p->q)
    for (uint32_t l = 0; l < p->t->nlinks; l++)
      free(p->q[l].e);
  free(p->q);
  free(p->claimed);
  free(p->count);
  free(p->unclaimed);
  free(p->ingress_Bps);
  free(p->lat_in);
  free(p->prio);
  free(p->kind);
  free(p->dbeg);
  free(p->dend);
  free(p->dests);
  free(p->dirty);
  free(p->is_dirty);
  free(p->wake_at);
  free(p->bk);
  free(p->bheap);
  free(p->wake_next);
  free(p->due);
  ten_engine_free(p->eng);
}

/* Every NPU starts holding its own chunks, offered to all its links at time 0, or chunk j
 * at j * stagger_ps (a timer whose cookie is 1 + j; the planner's alarms use cookie 0). */
static tn_status_t seed_chunks(plan_t *p, uint64_t seed, uint64_t stagger_ps, tn_err_t *err) {
  for (uint32_t c = 0; c < p->nchunks; c++) {
    tn_rng_t r;
    tn_rng_seed(&r, seed ^ ((uint64_t)c * 0x9E3779B97F4A7C15ull));
    p->prio[c] = tn_rng_next(&r);
  }
  for (uint32_t c = 0; c < p->nchunks; c++)
    claim(p, start_of(p, c), c);
  uint32_t at_once = stagger_ps ? 1 : p->k; /* chunks 0 .. at_once - 1 go at time 0 */
  for (uint32_t j = 1; j < p->k && stagger_ps; j++) {
    uint64_t at = 0;
    if (!tn_mul_u64(stagger_ps, j, &at))
      return tn_time_overflow(err, "greedy: own chunk %u released at %u x %" PRIu64 " ps", j, j,
                              stagger_ps);
    tn_status_t st = ten_timer(p->eng, at, 1u + j, err);
    if (st != TN_OK) return st;
  }
  for (uint32_t u = 0; u < p->n; u++)
    for (uint32_t j = 0; j < at_once; j++) {
      tn_status_t st = offer(p, start_of(p, u * p->k + j), u * p->k + j, SCHED_NONE, err);
      if (st != TN_OK) return st;
    }
  return TN_OK;
}

/* Own chunk j of every NPU is released (seed_chunks' timer). */
static tn_status_t release_own(plan_t *p, uint32_t j, tn_err_t *err) {
  for (uint32_t u = 0; u < p->n; u++) {
    tn_status_t st = offer(p, start_of(p, u * p->k + j), u * p->k + j, SCHED_NONE, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* Names one (NPU, chunk) pair the plan never delivered. */
static tn_status_t report_unreached(const plan_t *p, tn_err_t *err) {
  for (uint32_t v = 0; v < p->n; v++)
    for (uint32_t c = 0; c < p->nchunks; c++)
      if (!claimed(p, v, c))
        return tn_err_set(err, TN_INFEASIBLE,
                          "greedy: NPU %u cannot receive chunk %u of NPU %u (no route that "
                          "avoids relaying through other NPUs)",
                          v, c, start_of(p, c));
  return tn_err_set(err, TN_INTERNAL, "greedy: %llu deliveries unaccounted for",
                    (unsigned long long)p->owed);
}

/* True when the pass should give up at time now (see greedy_i_stop_t). */
static bool give_up(const greedy_i_stop_t *stop, uint64_t now) {
  if (stop == NULL) return false;
  if (stop->limit_ps && now > atomic_load_explicit(stop->limit_ps, memory_order_relaxed))
    return true;
  return stop->cancel && atomic_load_explicit(stop->cancel, memory_order_relaxed);
}

/* True when the plan cannot end by limit. The U bytes of the chunks an NPU has not yet
 * claimed must still cross its in-links, which start none of them before now and carry
 * ingress_Bps together: the in-link that finishes last does so no earlier than
 * now + U / ingress_Bps, and its last message arrives at least lat_in later. So the plan
 * ends no earlier than that, for every NPU with U > 0 (1 ns plus 1 ps per chunk of slack
 * covers the rounding of transfer times). Checked every 32 instants, O(n). */
enum { BEHIND_EVERY = 32 };
static bool behind(const plan_t *p, uint64_t now, uint64_t limit) {
  if (limit <= now) return true;
  double chunk = (double)(p->size / p->nchunks), budget = (double)(limit - now);
  for (uint32_t v = 0; v < p->n; v++) {
    double u = p->unclaimed[v];
    if (u == 0 || p->ingress_Bps[v] <= 0) continue;
    double need = u * chunk / p->ingress_Bps[v] * 1e12 + (double)p->lat_in[v];
    if (need > budget + 1000.0 + u) return true;
  }
  return false;
}

/* give_up at the next event's time, or behind() at the engine's time, every BEHIND_EVERY
 * instants. */
static bool should_stop(const plan_t *p, const greedy_i_stop_t *stop, uint64_t next, uint64_t now) {
  if (give_up(stop, next)) return true;
  return p->ingress_Bps && p->epoch % BEHIND_EVERY == 0 &&
         behind(p, now, atomic_load_explicit(stop->limit_ps, memory_order_relaxed));
}

tn_status_t greedy_i_plan(const topo_t *t, topo_routes_t *routes, uint64_t size_bytes, uint32_t k,
                          const greedy_opts_t *o, const greedy_i_stop_t *stop, bool *gave_up,
                          schedule_t *out, tn_err_t *err) {
  if (gave_up) *gave_up = false;
  uint32_t n = t->npus;
  schedule_init(out, TN_ALLGATHER, n, k, size_bytes);
  plan_t p = {.t = t,
              .routes = routes,
              .s = out,
              .n = n,
              .k = k,
              .nchunks = n * k,
              .size = size_bytes,
              .chunk_base = size_bytes / ((uint64_t)n * k),
              .chunk_rem = size_bytes % ((uint64_t)n * k),
              .armed = UINT64_MAX,
              .roots = o->roots,
              .nroots = o->nroots,
              .rarest = o->rarest};
  p.owed = (uint64_t)n * (n - 1u) * k;
  /* One transfer, one chunk and at most one dependency per (NPU, foreign chunk): reserve
   * exactly, and without clearing: append writes every element, and untouched pages cost
   * nothing (a candidate the search drops early never touches most), while memory malloc
   * reuses would otherwise be cleared for nothing. */
  tn_vec_t *v[3] = {&out->xfers, &out->chunks, &out->deps};
  tn_status_t st = TN_OK;
  for (int i = 0; i < 3 && st == TN_OK; i++)
    st = tn_vec_reserve_exact_uninit(v[i], (size_t)p.owed + 1, err);
  if (st == TN_OK) st = setup(&p, err);
  if (st == TN_OK && stop && stop->limit_ps) {
    st = tn_calloc(n, sizeof *p.ingress_Bps, &p.ingress_Bps, err);
    if (st == TN_OK) st = tn_calloc(n, sizeof *p.lat_in, &p.lat_in, err);
    for (uint32_t u = 0; st == TN_OK && u < n; u++) {
      p.ingress_Bps[u] = topo_ingress_GBps(t, u) * TN_GIB;
      p.lat_in[u] = UINT64_MAX;
      for (uint32_t i = t->in_off[u]; i < t->in_off[u + 1]; i++)
        if (t->links[t->in_link[i]].latency_ps < p.lat_in[u])
          p.lat_in[u] = t->links[t->in_link[i]].latency_ps;
      if (p.lat_in[u] == UINT64_MAX) p.lat_in[u] = 0;
    }
  }
  if (st == TN_OK) st = ten_engine_create(t, routes, &p.eng, err);
  if (st == TN_OK) st = seed_chunks(&p, o->seed, o->stagger_ps, err);
  /* A candidate the search no longer needs stops before its first decisions too. */
  if (st == TN_OK && should_stop(&p, stop, 0, 0)) *gave_up = true;
  if (st == TN_OK && !(gave_up && *gave_up)) st = decide_all(&p, err);
  ten_event_t ev;
  while (st == TN_OK && !(gave_up && *gave_up) && ten_next(p.eng, &ev)) {
    if (should_stop(&p, stop, ev.time_ps, ev.time_ps)) {
      *gave_up = true;
      break;
    }
    p.epoch++;
    /* Drain the whole instant first: every delivery of this time is known before any
     * link decides, exactly as the simulator issues nodes only after draining. */
    st = on_event(&p, &ev, err);
    while (st == TN_OK && ten_peek_time(p.eng) == ev.time_ps && ten_next(p.eng, &ev))
      st = on_event(&p, &ev, err);
    if (st == TN_OK) st = decide_all(&p, err);
  }
  if (st == TN_OK) st = ten_engine_status(p.eng, err);
  bool quit = gave_up && *gave_up;
  if (st == TN_OK && !quit && p.owed != 0) st = report_unreached(&p, err);
  teardown(&p);
  if (quit) { /* an unfinished plan is of no use: leave *out empty */
    schedule_free(out);
    schedule_init(out, TN_ALLGATHER, n, k, size_bytes);
  }
  return st;
}

/* The share of n (n - 1) k planned transfers whose pieces cross a link within
 * GREEDY_PAIR_WINDOW_PS (piece <= bandwidth x window), by the fabric's links: order-proofing
 * then records nearly every message on such a link with the next. In thousandths. */
static uint64_t near_permille(const topo_t *t, uint64_t piece) {
  /* bytes a link of 1 GB/s (2^30 B/s) moves in the window */
  const double per_GBps = GREEDY_PAIR_WINDOW_PS / 1000.0 * 1.073741824;
  uint64_t near = 0;
  for (uint32_t l = 0; l < t->nlinks; l++)
    near += (double)piece <= t->links[l].bandwidth_GBps * per_GBps;
  return t->nlinks ? near * 1000u / t->nlinks : 0;
}

uint64_t greedy_mem_estimate(const topo_t *t, uint64_t size_bytes, uint32_t k, tn_coll_t coll,
                             bool searched, unsigned threads) {
  uint64_t n = t->npus, pairs = n * (n > 0 ? n - 1 : 0), xfers = pairs * k;
  /* The whole `tenet synth -a greedy` process, fitted on measured peaks (bench_mem, 32 to
   * 256 NPUs, 1 MiB, 64 MiB and 1 GiB, one and two threads): per planned transfer the plan,
   * its lowering (a SEND and a RECV; a reduce RECV and a COMP for a Reduce-Scatter; both
   * halves of an All-Reduce), the order-proof copy and its simulations, the verifier and
   * the writer. A fabric with switches costs more per transfer (its routes cross two links
   * or more: the simulator's events and pairs per link). Pieces small enough to cross a
   * link within the pairs' window cost GREEDY_MEM_NEAR more per message on such links
   * (GREEDY_MEM_NEAR_SWITCHED on a switched fabric, whose messages keep fewer pairs):
   * mesh-16x16, torus-16x8 and switch-128 at the same chunking peak 4 to 35% higher at
   * 1 MiB (1 KiB pieces) than at 64 MiB and 1 GiB. For a reduction at automatic chunking
   * (`searched`) synth/ also makes and simulates the set at every other chunking its
   * budget allows (1 to 8 chunks per NPU while n^2 times their sum stays within 2^20: 8 up
   * to 128 NPUs, 5 at 256), so the finest of those other than k beside the kept set; with
   * k given no search runs. A second thread holds a quarter more (the search's second
   * candidate, the verifier and writer beside the last simulation). At k 0, the process
   * alone. */
  uint64_t ks = 0;
  while (ks < 8 && n * n * (ks + 1) * (ks + 2) / 2 <= ((uint64_t)1 << 20))
    ks++;
  if (ks == 0) ks = 1;
  if (ks == k) ks--; /* the search's finest count other than k */
  uint64_t base = GREEDY_MEM_BASE - ((uint64_t)1 << 19), per = 590, search = 0, sw = 30,
           beside = 24;
  if (coll == TN_REDUCESCATTER)
    base = GREEDY_MEM_BASE, per = 594, search = 300, sw = 20, beside = 27;
  /* (an All-Reduce's process holds 9 MiB on 8 NPUs, 12 from 32: ring-8, mesh-2x4, mesh-4x4,
   * torus-4x4 and hypercube-16 at 1 MiB peak 2.5 to 3 MiB under the 12 fitted above; its
   * search costs 250 B per pair and count, where 300 read 1.20-1.21 on mesh-8x8 at 64 MiB
   * and 1 GiB, 7 chunks kept of the greedy's 2, on one thread) */
  if (coll == TN_ALLREDUCE)
    base = ((uint64_t)9 << 20) + ((uint64_t)3 << 20) * (n < 32 ? n : 32) / 32, per = 1074,
    search = 250, sw = 20, beside = 27;
  uint64_t work = xfers * per + (searched ? pairs * ks * search : 0);
  if (t->switches > 0) work += work / 100 * sw;
  if (n > 0 && k > 0) {
    uint64_t msgs = xfers * (coll == TN_ALLREDUCE ? 2u : 1u);
    work += msgs * near_permille(t, size_bytes / (n * k)) / 1000u *
            (t->switches > 0 ? GREEDY_MEM_NEAR_SWITCHED : GREEDY_MEM_NEAR);
  }
  return tn_mem_threads(base, work, (uint32_t)beside, threads);
}
