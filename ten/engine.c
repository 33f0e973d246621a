/* ten/engine.c — the event queue and per-link FIFOs of the network model
 * (docs/architecture.md §3), shared by the planners and the simulator. */
#include "ten/ten.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { CLS_HOP = 0, CLS_DELIVER = 1, CLS_TIMER = 2 };

/* Heap entries order by (time, cls, a, b): hops at an instant are forwarded before any
 * delivery or timer of that instant is shown to the caller, and ties are broken by
 * (link id, position in the link's FIFO) so the order never depends on when the caller
 * happened to inject. Arrivals on one link come out in FIFO order (each starts after the
 * previous one ends and the latency is the link's), so the heap holds only the oldest
 * message in flight on each link: it stays as small as the number of busy links, not the
 * number of messages, and the order is the same as with one entry per message.
 *
 * Because a link has at most one entry in the heap, b (the FIFO position) never decides
 * between two link entries, so the order packs into two words: time, then key = cls in
 * the top 2 bits and the link id (hops, deliveries) or the creation number (timers) below.
 * Keys are unique, so the pop order does not depend on the heap's internal layout.
 * 24-byte entries keep the heap small in cache (it is the engine's hot loop). */
#define KEY_CLS_SHIFT 62
typedef struct ev {
  uint64_t time;
  uint64_t key;
  uint64_t val; /* hop, deliver: message slot; timer: the caller's cookie */
} ev_t;

static inline uint32_t ev_cls(const ev_t *v) {
  return (uint32_t)(v->key >> KEY_CLS_SHIFT);
}
static inline uint32_t ev_link(const ev_t *v) {
  return (uint32_t)v->key;
}

typedef struct msg {
  uint32_t src, dst, at; /* at: node the message currently sits on (or is heading to) */
  uint64_t bytes, cookie;
  uint64_t arrive_ps; /* arrival at `at` */
  uint64_t cause;     /* the cookie whose injection time sets this message's time (ten_tie_t) */
  uint32_t next;      /* free list, or the next message in flight on the same link */
  bool waited;        /* it queued behind another message on some link so far */
} msg_t;

typedef struct link_state {
  uint64_t free_ps;
  uint64_t last_enq_ps;              /* when a message last entered the FIFO (UINT64_MAX: never) */
  uint64_t last_cookie;              /* and its cookie */
  bool last_waited;                  /* and whether that message had waited on a busy link before */
  uint64_t last_in_cause;            /* and its cause on entering (of its time here) */
  uint64_t last_cause;               /* and its cause on leaving: of what ends at free_ps */
  uint64_t memo_bytes, memo_busy_ps; /* the last message size seen and its busy time */
  uint64_t memo_flight_ps;           /* and the time from its start to its arrival */
  uint32_t head, tail; /* messages in flight on this link, oldest first (UINT32_MAX: none) */
  ten_link_stats_t stats;
} link_state_t;

struct ten_engine {
  const topo_t *t;
  topo_routes_t *routes;
  uint64_t now;
  uint64_t timer_seq;
  ev_t *heap;
  size_t heap_len, heap_cap;
  ev_t *run; /* events in ascending order beside the heap (see q_push): a ring buffer */
  size_t run_head, run_len, run_cap; /* run_cap: 0 or a power of two */
  msg_t *msgs;
  size_t msgs_len, msgs_cap;
  uint32_t free_msg; /* head of the free list, UINT32_MAX when empty */
  link_state_t *links;
  ten_xmit_fn observer;
  void *observer_ctx;
  ten_tie_fn tie_fn;
  uint64_t tie_window_ps;
  void *tie_ctx;
  const uint32_t *hop_rank; /* per link: its place among same-instant arrivals, or NULL */
  uint64_t quantum_ps;      /* delays counted in whole multiples of it, rounded down (0: exact) */
  tn_err_t sticky;          /* first failure while forwarding inside ten_next */
  uint64_t *reached;        /* npus^2 bits: the route src -> dst was walked to its end; NULL
                               until a multi-hop message is sent (not kept above REACH_MAX) */
};

/* Up to this many NPUs the engine remembers which multi-hop routes it has walked (2 MB). */
#define REACH_MAX 4096u

/* Written without branches: which of two children is smaller is a coin toss the branch
 * predictor loses, at every level of every sift. */
static inline bool ev_less(const ev_t *x, const ev_t *y) {
  return (x->time < y->time) | ((x->time == y->time) & (x->key < y->key));
}

/* Room in the heap for want events. */
static tn_status_t heap_reserve(ten_engine_t *e, size_t want, tn_err_t *err) {
  if (want <= e->heap_cap) return TN_OK;
  size_t ncap = e->heap_cap ? e->heap_cap * 2 : 1024;
  while (ncap < want)
    ncap *= 2;
  tn_status_t st = tn_realloc(&e->heap, e->heap_cap, ncap, sizeof *e->heap, err);
  if (st == TN_OK) e->heap_cap = ncap;
  return st;
}

/* Puts v in the heap, which has room for it. */
static void heap_push(ten_engine_t *e, const ev_t *v) {
  size_t i = e->heap_len++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!ev_less(v, &e->heap[p])) break;
    e->heap[i] = e->heap[p];
    i = p;
  }
  e->heap[i] = *v;
}

/* Puts v at the root in place of the current top and restores the heap. The replacement
 * is nearly always the next arrival on the link just served, about one transmission time
 * later, so it belongs near the bottom: the hole left at the root is moved down along the
 * smaller children to a leaf without comparing against v (one comparison per level instead
 * of two), and v then rises from there the level or two it must (Floyd's bottom-up
 * sift). */
static void heap_replace_top(ten_engine_t *e, const ev_t *v) {
  ev_t *h = e->heap;
  size_t i = 0, n = e->heap_len;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c + 1 < n) {
      c += ev_less(&h[c + 1], &h[c]);
    } else if (c >= n) {
      break;
    }
    h[i] = h[c];
    i = c;
  }
  while (i > 0 && ev_less(v, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = *v;
}

/* Removes the top (the heap is not empty). */
static void heap_pop(ten_engine_t *e) {
  ev_t last = e->heap[--e->heap_len];
  if (e->heap_len > 0) heap_replace_top(e, &last);
}

/* The queue of events is the heap and, beside it, a run: events that arrived in ascending
 * order, kept in a FIFO. An event no smaller than the run's last one joins the run (no
 * sift); any other goes to the heap; the next event is the smaller of the two heads.
 * Keys are unique, so the order events come out in is the same as with the heap alone.
 * Links that carry messages of one size back to back (a ring or a switch under a Direct
 * or ring collective) have their arrivals served in key order at each instant, and each
 * one's next arrival comes one transmission time later in the same order: they stay in
 * the run, served and replaced without touching the heap. */
static inline size_t q_len(const ten_engine_t *e) {
  return e->heap_len + e->run_len;
}

static inline const ev_t *run_last(const ten_engine_t *e) {
  return &e->run[(e->run_head + e->run_len - 1) & (e->run_cap - 1)];
}

/* Whether v may join the run now (it is not smaller than the run's last event, and there
 * is room). */
static inline bool run_takes(const ten_engine_t *e, const ev_t *v) {
  return e->run_len < e->run_cap && (e->run_len == 0 || !ev_less(v, run_last(e)));
}

static inline void run_append(ten_engine_t *e, const ev_t *v) {
  e->run[(e->run_head + e->run_len++) & (e->run_cap - 1)] = *v;
}

/* Doubles the run's room (the events keep their order). */
static tn_status_t run_grow(ten_engine_t *e, tn_err_t *err) {
  size_t ncap = e->run_cap ? e->run_cap * 2 : 1024;
  ev_t *r = NULL;
  tn_status_t st = tn_malloc(ncap, sizeof *r, &r, err);
  if (st != TN_OK) return st;
  for (size_t i = 0; i < e->run_len; i++)
    r[i] = e->run[(e->run_head + i) & (e->run_cap - 1)];
  free(e->run);
  e->run = r;
  e->run_head = 0;
  e->run_cap = ncap;
  return TN_OK;
}

/* Puts v in the queue. The heap always has room for every event queued (so that
 * q_replace_top never allocates when an event leaves the run for the heap). */
static tn_status_t q_push(ten_engine_t *e, const ev_t *v, tn_err_t *err) {
  tn_status_t st = heap_reserve(e, q_len(e) + 1, err);
  if (st != TN_OK) return st;
  if (e->run_len == e->run_cap && (e->run_len == 0 || !ev_less(v, run_last(e))) &&
      (st = run_grow(e, err)) != TN_OK)
    return st;
  if (run_takes(e, v))
    run_append(e, v);
  else
    heap_push(e, v);
  return TN_OK;
}

/* Whether the next event is the run's head (else the heap's top). */
static inline bool q_top_in_run(const ten_engine_t *e) {
  return e->run_len > 0 && (e->heap_len == 0 || ev_less(&e->run[e->run_head], &e->heap[0]));
}

static inline const ev_t *q_top(const ten_engine_t *e) {
  return q_top_in_run(e) ? &e->run[e->run_head] : &e->heap[0];
}

/* Removes the next event (the queue is not empty). */
static void q_pop(ten_engine_t *e) {
  if (q_top_in_run(e)) {
    e->run_head = (e->run_head + 1) & (e->run_cap - 1);
    e->run_len--;
  } else {
    heap_pop(e);
  }
}

/* Removes the next event and puts v in; never allocates. From the run, its room is
 * enough for v; from the heap, v takes the top's place in one sift unless it can join
 * the run. */
static void q_replace_top(ten_engine_t *e, const ev_t *v) {
  if (q_top_in_run(e)) {
    e->run_head = (e->run_head + 1) & (e->run_cap - 1);
    e->run_len--;
    if (run_takes(e, v))
      run_append(e, v);
    else
      heap_push(e, v); /* the heap has room for every queued event (q_push) */
    return;
  }
  if (run_takes(e, v)) {
    heap_pop(e);
    run_append(e, v);
  } else {
    heap_replace_top(e, v);
  }
}

tn_status_t ten_engine_create(const topo_t *t, topo_routes_t *routes, ten_engine_t **out,
                              tn_err_t *err) {
  *out = NULL;
  ten_engine_t *e = NULL;
  tn_status_t st = tn_calloc(1, sizeof *e, &e, err);
  if (st != TN_OK) return st;
  e->t = t;
  e->routes = routes;
  e->free_msg = UINT32_MAX;
  if ((st = tn_calloc(t->nlinks, sizeof *e->links, &e->links, err)) != TN_OK) {
    free(e);
    return st;
  }
  for (uint32_t l = 0; l < t->nlinks; l++) {
    e->links[l].head = e->links[l].tail = UINT32_MAX;
    e->links[l].last_enq_ps = UINT64_MAX;
  }
  *out = e;
  return TN_OK;
}

void ten_engine_free(ten_engine_t *e) {
  if (e == NULL) return;
  free(e->heap);
  free(e->run);
  free(e->msgs);
  free(e->links);
  free(e->reached);
  free(e);
}

void ten_engine_set_observer(ten_engine_t *e, ten_xmit_fn fn, void *ctx) {
  e->observer = fn;
  e->observer_ctx = ctx;
}

void ten_engine_set_tie_observer(ten_engine_t *e, ten_tie_fn fn, void *ctx, uint64_t window_ps) {
  e->tie_fn = fn;
  e->tie_window_ps = window_ps;
  e->tie_ctx = ctx;
}

void ten_engine_set_quantum(ten_engine_t *e, uint64_t quantum_ps) {
  e->quantum_ps = quantum_ps;
  for (uint32_t l = 0; l < e->t->nlinks; l++)
    e->links[l].memo_bytes = 0; /* busy and flight times are worked out again */
}

void ten_engine_set_hop_order(ten_engine_t *e, const uint32_t *rank) {
  e->hop_rank = rank;
}

uint64_t ten_now(const ten_engine_t *e) {
  return e->now;
}

uint64_t ten_link_free_ps(const ten_engine_t *e, uint32_t link) {
  return e->links[link].free_ps;
}

const ten_link_stats_t *ten_link_stats(const ten_engine_t *e, uint32_t link) {
  return &e->links[link].stats;
}

/* The heap entry for message m arriving over link l. */
static ev_t arrival(const ten_engine_t *e, uint32_t l, uint32_t m) {
  const msg_t *msg = &e->msgs[m];
  uint64_t cls = msg->at == msg->dst ? CLS_DELIVER : CLS_HOP;
  uint64_t rank = e->hop_rank ? e->hop_rank[l] : 0;
  ev_t v = {msg->arrive_ps, cls << KEY_CLS_SHIFT | rank << 32 | l, m};
  return v;
}

static tn_status_t put_on_link(ten_engine_t *e, uint32_t m, uint32_t l, uint64_t start,
                               bool observe, tn_err_t *err);

/* Puts message m (sitting at its current node) on link l, the next link of its route
 * (TOPO_NO_LINK: look it up), at time now and schedules its arrival at the link's far end. */
static tn_status_t enqueue_hop(ten_engine_t *e, uint32_t m, uint32_t l, tn_err_t *err) {
  msg_t *msg = &e->msgs[m];
  if (l == TOPO_NO_LINK) l = topo_route_next(e->routes, msg->at, msg->dst);
  if (l == TOPO_NO_LINK && topo_routes_out_of_memory(e->routes))
    return tn_err_set(err, TN_NOMEM, "out of memory building the routes to NPU %u", msg->dst);
  if (l == TOPO_NO_LINK)
    return tn_err_set(err, TN_INFEASIBLE, "no route from node %u to NPU %u", msg->at, msg->dst);
  uint64_t start = e->now > e->links[l].free_ps ? e->now : e->links[l].free_ps;
  return put_on_link(e, m, l, start, true, err);
}

/* Puts message m on link l with its transmission starting at start (>= the link's
 * free time) and schedules its arrival at the far end. observe: tell the observers
 * (ten_place's messages entered the link earlier, in another engine). */
static tn_status_t put_on_link(ten_engine_t *e, uint32_t m, uint32_t l, uint64_t start,
                               bool observe, tn_err_t *err) {
  msg_t *msg = &e->msgs[m];
  const topo_link_t *lk = &e->t->links[l];
  link_state_t *ls = &e->links[l];
  /* A collective's messages have one or two sizes: remember the last one's busy time
   * rather than divide and round again (bytes > 0, so the zeroed memo never matches).
   * Every message takes time (at least 1 ps): no zero-time event loops. */
  if (msg->bytes != ls->memo_bytes) {
    uint64_t ps = 0;
    if (!tn_xfer_ps(msg->bytes, lk->bandwidth_GBps, &ps))
      return tn_time_overflow(err, "sending %" PRIu64 " bytes over link %u (%u -> %u, %g GB/s)",
                              msg->bytes, l, lk->src, lk->dst, lk->bandwidth_GBps);
    uint64_t flight = 0;
    if (!tn_time_add(ps, lk->latency_ps, &flight))
      return tn_time_overflow(err, "the flight of %" PRIu64 " bytes over link %u (%u -> %u)",
                              msg->bytes, l, lk->src, lk->dst);
    if (e->quantum_ps != 0) { /* as ASTRA-sim: each delay in whole units, rounded down */
      ps -= ps % e->quantum_ps;
      flight -= flight % e->quantum_ps;
    }
    ls->memo_bytes = msg->bytes;
    ls->memo_busy_ps = ps ? ps : 1;
    ls->memo_flight_ps = e->quantum_ps != 0 ? flight : ls->memo_busy_ps + lk->latency_ps;
    if (ls->memo_flight_ps < ls->memo_busy_ps) ls->memo_flight_ps = ls->memo_busy_ps;
  }
  uint64_t busy = ls->memo_busy_ps;
  uint64_t end = 0, arrive = 0;
  /* Times and the link's byte count are checked, never wrapped or capped. */
  if (!tn_time_add(start, busy, &end) || !tn_time_add(start, ls->memo_flight_ps, &arrive))
    return tn_time_overflow(err,
                            "the arrival of %" PRIu64 " bytes over link %u (%u -> %u), queued "
                            "at %" PRIu64 " ps,",
                            msg->bytes, l, lk->src, lk->dst, start);
  if (!tn_add_u64(ls->stats.bytes, msg->bytes, &ls->stats.bytes))
    return tn_err_set(err, TN_INVAL, "link %u (%u -> %u) carries more than 2^64 - 1 bytes", l,
                      lk->src, lk->dst);
  ls->free_ps = end;
  ls->stats.busy_ps += busy;
  ls->stats.messages++;
  if (observe && e->tie_fn && ls->last_enq_ps != UINT64_MAX &&
      e->now - ls->last_enq_ps <= e->tie_window_ps) {
    ten_tie_t v = {l,           ls->last_cookie,   msg->cookie, ls->last_waited,
                   msg->waited, ls->last_in_cause, msg->cause,  e->now - ls->last_enq_ps};
    e->tie_fn(e->tie_ctx, &v);
  }
  /* A message that starts when the link frees (not when it got here) takes its time, and
   * so its cause, from the message before it. */
  ls->last_in_cause = msg->cause;
  if (start > e->now) msg->cause = ls->last_cause;
  ls->last_enq_ps = e->now;
  ls->last_cookie = msg->cookie;
  msg->waited = msg->waited || start > e->now;
  ls->last_waited = msg->waited;
  ls->last_cause = msg->cause;
  if (observe && e->observer)
    e->observer(e->observer_ctx, l, start, start + busy, msg->bytes, msg->cookie);
  msg->at = lk->dst;
  msg->arrive_ps = arrive;
  msg->next = UINT32_MAX;
  if (ls->tail != UINT32_MAX) {
    e->msgs[ls->tail].next = m; /* its arrival is scheduled when the ones before it are done */
    ls->tail = m;
    return TN_OK;
  }
  ev_t v = arrival(e, l, m);
  tn_status_t st = q_push(e, &v, err);
  if (st == TN_OK) ls->head = ls->tail = m;
  return st;
}

/* The next event is message m, the oldest in flight on link l, which has arrived: it
 * leaves the queue and the next one on l (if any) takes its place. */
static void link_pop(ten_engine_t *e, uint32_t l, uint32_t m) {
  link_state_t *ls = &e->links[l];
  ls->head = e->msgs[m].next;
  if (ls->head == UINT32_MAX) {
    ls->tail = UINT32_MAX;
    q_pop(e);
    return;
  }
  ev_t v = arrival(e, l, ls->head);
  q_replace_top(e, &v);
}

/* Whether dst is reachable from src along the routes; *first is the route's first link.
 * A route of one hop (every message a planner sends over a direct link) is checked by
 * that one lookup, which enqueue_hop then reuses; a longer one is walked to the end,
 * which costs no more than the hops the message will make anyway. */
/* Whether src's route reaches dst, its first link in *first. A multi-hop route is walked
 * to its end once (planners and the simulator send along the same pairs again and again;
 * the walk was a tenth of an All-to-All's replays on a two-level switch fabric). */
static bool route_ok(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t *first) {
  *first = topo_route_next(e->routes, src, dst);
  if (*first == TOPO_NO_LINK) return false;
  if (e->t->links[*first].dst == dst) return true;
  uint32_t n = e->t->npus;
  size_t bit = (size_t)src * n + dst;
  if (e->reached == NULL && n <= REACH_MAX && /* out of memory: no memo, only slower */
      tn_calloc(((size_t)n * n + 63) / 64, sizeof *e->reached, &e->reached, NULL) != TN_OK)
    e->reached = NULL;
  if (e->reached && (e->reached[bit / 64] >> (bit % 64) & 1)) return true;
  bool ok = topo_route_hops(e->routes, src, dst) != UINT32_MAX;
  if (ok && e->reached) e->reached[bit / 64] |= (uint64_t)1 << (bit % 64);
  return ok;
}

static tn_status_t check_message(const ten_engine_t *e, uint32_t src, uint32_t dst, uint64_t bytes,
                                 tn_err_t *err) {
  if (src >= e->t->npus || dst >= e->t->npus || src == dst || bytes == 0)
    return tn_err_set(err, TN_INVAL, "bad message %u -> %u of %llu bytes", src, dst,
                      (unsigned long long)bytes);
  return TN_OK;
}

/* Puts a new message from src to dst on link first, the first hop of its route. */
/* A free message slot in *m. */
static tn_status_t msg_slot(ten_engine_t *e, uint32_t *m, tn_err_t *err) {
  if (e->free_msg != UINT32_MAX) {
    *m = e->free_msg;
    e->free_msg = e->msgs[*m].next;
    return TN_OK;
  }
  if (e->msgs_len == e->msgs_cap) {
    size_t ncap = e->msgs_cap ? e->msgs_cap * 2 : 1024;
    tn_status_t st = tn_realloc(&e->msgs, e->msgs_cap, ncap, sizeof *e->msgs, err);
    if (st != TN_OK) return st;
    e->msgs_cap = ncap;
  }
  *m = (uint32_t)e->msgs_len++;
  return TN_OK;
}

static tn_status_t inject(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t first,
                          uint64_t bytes, uint64_t cookie, tn_err_t *err) {
  uint32_t m;
  tn_status_t st = msg_slot(e, &m, err);
  if (st != TN_OK) return st;
  e->msgs[m] = (msg_t){.src = src,
                       .dst = dst,
                       .at = src,
                       .bytes = bytes,
                       .cookie = cookie,
                       .cause = cookie,
                       .next = UINT32_MAX};
  st = enqueue_hop(e, m, first, err);
  if (st != TN_OK) {
    e->msgs[m].next = e->free_msg;
    e->free_msg = m;
  }
  return st;
}

tn_status_t ten_send(ten_engine_t *e, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t cookie,
                     tn_err_t *err) {
  tn_status_t st = check_message(e, src, dst, bytes, err);
  if (st != TN_OK) return st;
  uint32_t first;
  if (!route_ok(e, src, dst, &first))
    return topo_routes_out_of_memory(e->routes)
               ? tn_err_set(err, TN_NOMEM, "out of memory building the routes to NPU %u", dst)
               : tn_err_set(err, TN_INFEASIBLE, "NPU %u cannot reach NPU %u", src, dst);
  return inject(e, src, dst, first, bytes, cookie, err);
}

tn_status_t ten_send_via(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t first,
                         uint64_t bytes, uint64_t cookie, tn_err_t *err) {
  tn_status_t st = check_message(e, src, dst, bytes, err);
  if (st != TN_OK) return st;
  assert(first == topo_route_next(e->routes, src, dst));
  return inject(e, src, dst, first, bytes, cookie, err);
}

tn_status_t ten_place(ten_engine_t *e, uint32_t src, uint32_t dst, uint32_t link, uint64_t bytes,
                      uint64_t cookie, uint64_t start_ps, tn_err_t *err) {
  tn_status_t st = check_message(e, src, dst, bytes, err);
  if (st != TN_OK) return st;
  if (link >= e->t->nlinks || start_ps < e->links[link].free_ps)
    return tn_err_set(err, TN_INVAL,
                      "placing a message on link %u at %" PRIu64 " ps: the link is busy or unknown",
                      link, start_ps);
  uint32_t m;
  if ((st = msg_slot(e, &m, err)) != TN_OK) return st;
  e->msgs[m] = (msg_t){.src = src,
                       .dst = dst,
                       .at = e->t->links[link].src,
                       .bytes = bytes,
                       .cookie = cookie,
                       .cause = cookie,
                       .next = UINT32_MAX};
  st = put_on_link(e, m, link, start_ps, false, err);
  if (st != TN_OK) {
    e->msgs[m].next = e->free_msg;
    e->free_msg = m;
  }
  return st;
}

tn_status_t ten_timer(ten_engine_t *e, uint64_t delay_ps, uint64_t cookie, tn_err_t *err) {
  uint64_t at = 0;
  if (!tn_time_add(e->now, delay_ps, &at))
    return tn_time_overflow(err, "a wait of %" PRIu64 " ps from %" PRIu64 " ps", delay_ps, e->now);
  ev_t v = {at, (uint64_t)CLS_TIMER << KEY_CLS_SHIFT | e->timer_seq++, cookie};
  return q_push(e, &v, err);
}

uint64_t ten_peek_time(const ten_engine_t *e) {
  return q_len(e) ? q_top(e)->time : UINT64_MAX;
}

bool ten_next(ten_engine_t *e, ten_event_t *out) {
  while (q_len(e) > 0) {
    ev_t v = *q_top(e);
    e->now = v.time;
    uint32_t cls = ev_cls(&v);
    if (cls == CLS_TIMER) {
      q_pop(e);
      *out = (ten_event_t){TEN_EV_TIMER, v.time, v.val, 0, 0, 0};
      return true;
    }
    uint32_t m = (uint32_t)v.val;
    link_pop(e, ev_link(&v), m);
    msg_t *msg = &e->msgs[m];
    if (cls == CLS_HOP) {
      /* The whole route was checked when the message entered the network, so only
       * memory can fail here; the failure is kept for ten_engine_status. */
      (void)enqueue_hop(e, m, TOPO_NO_LINK, &e->sticky);
      continue;
    }
    *out = (ten_event_t){TEN_EV_DELIVER, v.time, msg->cookie, msg->src, msg->dst, msg->bytes};
    msg->next = e->free_msg;
    e->free_msg = m;
    return true;
  }
  return false;
}

tn_status_t ten_engine_status(const ten_engine_t *e, tn_err_t *err) {
  if (e->sticky.status == TN_OK) return TN_OK;
  return tn_err_set(err, e->sticky.status, "%s", e->sticky.msg);
}
