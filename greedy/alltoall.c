/* greedy/alltoall.c — greedy_alltoall: All-to-All as pieces routed over load-balanced paths
 * of logical edges (topo_logical_edges: NPU-to-NPU routes through switches only), relayed
 * store-and-forward by the NPUs on the way, and timed on ten/'s engine as the simulator
 * runs it.
 *
 * Paths: every (source, destination) block is cut into m pieces; round by round, each
 * source takes a cheapest-path tree (Dijkstra on the logical edges, an edge costing the
 * lengths of its route's links) and sends one piece to every destination along it, then
 * every link it used gets longer by its use over its bandwidth (multiplicative weights, as
 * in Garg and Koenemann's concurrent-flow algorithm). So the pieces spread over the
 * fabric's shortest and near-shortest paths in proportion to what the links can carry:
 * both ways round a torus ring at half its circumference, every equal-cost way across a
 * hypercube or a hybrid cube-mesh, where fixed routes pile them on the lowest-id one.
 *
 * Schedule: a list schedule of the pieces on their paths (see "relays by priority"):
 * every piece is ready at its source at once and at each relay when it arrives, and a
 * link, when free, sends the ready piece with the longest flight still ahead of it.
 * Pieces per block 1, 2, 4, 8 (as the size and the transfer cap allow) are planned at the
 * first growth rate, then at the second. Above 32 NPUs, where each plan's replay on the
 * engine is the bulk of the time, the first sweep stops at a count slower than a smaller
 * one, and the second rate (for irregular fabrics) plans only the best count, and not at
 * all when every NPU has the same ingress and egress (tori, hypercubes, two-level switch
 * fabrics: it never won there). The fastest is kept, the first among equals.
 *
 * Memory: each count's set is checked as if kept, on the paths routed for it, before it is
 * built (a2a_mem: its transfers, the links they cross, its pieces): the first count over
 * the cap (TENET_MEM_CAP) is refused, a finer one is not planned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "greedy/greedy.h"
#include "greedy/greedy_internal.h"

/* How much a link lengthens per use, scaled by the slowest link over its bandwidth: both
 * are planned, the faster kept. Measured at 1 GiB: 0.005 suits meshes and tori (torus-8x8
 * 1.051 of the bound against 1.242 at 0.1), 0.2 the irregular (dgx1-8 1.055 against 1.125). */
static const double growths[] = {0.005, 0.2};
/* No piece below this (once a block is split at all), and no more transfers than this. At
 * 1 MiB on 64 NPUs (blocks of 16 KiB) small pieces pipeline a block's hops: the sweep's
 * best, time/bound, with 8 KiB, 2 KiB and 1 KiB here: torus-8x8 1.292, 1.145, 1.120;
 * hypercube-64 1.281, 1.191, 1.170; torus-8x8-degraded 1.258, 1.102, 1.076. */
#define MIN_PIECE_BYTES (1u << 10)
#define MAX_TRANSFERS (1u << 19)
/* Up to this many NPUs every piece count is planned at both growth rates. */
#define SMALL 32u
/* Pieces per block tried; 16 only up to MAX16_NPUS NPUs and when 8 left more than
 * MAX16_GAP to the lower bound (hypercube-64 1 GiB: 1.041 of the bound at 16 against 1.094
 * at 8; mesh-8x8 1.025 at 8 gains 0.6% at 16 for a set 2x the size, which the portfolio's
 * checks and the files then pay for). */
static const uint32_t counts[] = {1, 2, 4, 8, 16};
#define NCOUNTS 5u
#define MAX16_NPUS 64u
#define MAX16_GAP 1.03

typedef struct qent {
  double d;
  uint32_t v;
} qent_t;

typedef struct a2a {
  const topo_t *t;
  topo_logical_t lg;
  uint32_t n;
  double growth;
  double *len, *inv_bw; /* per link */
  double *dist;         /* Dijkstra scratch, per NPU */
  uint32_t *from;       /* per NPU: predecessor on the cheapest path */
  uint8_t *done;
  uint32_t *adj_off, *adj; /* CSR by NPU: its logical edges' far ends, ascending */
  double *cost;            /* per adj entry: the edge's length (its route's links) */
  qent_t *q;               /* Dijkstra's heap: at most one entry per edge and the source */
  uint32_t qlen;
  uint64_t tie_window; /* schedule_replay_ties' window (UINT64_MAX: no pairs kept) */
  uint64_t size;       /* each NPU's send buffer */
  uint32_t *path;      /* per (source, destination, piece): offset into hops */
  tn_vec_t hops;       /* uint32_t NPUs of every path, source first */
} a2a_t;

static void a2a_free(a2a_t *A) {
  topo_logical_free(&A->lg);
  free(A->len);
  free(A->inv_bw);
  free(A->dist);
  free(A->from);
  free(A->done);
  free(A->adj_off);
  free(A->adj);
  free(A->cost);
  free(A->q);
  free(A->path);
  tn_vec_free(&A->hops);
}

/* The logical edges as adjacency lists (far ends ascending, as the dense scan met them). */
static tn_status_t adjacency(a2a_t *A, tn_err_t *err) {
  uint32_t n = A->n, m = 0;
  tn_status_t st = tn_malloc(n + 1u, sizeof *A->adj_off, &A->adj_off, err);
  for (uint32_t u = 0; st == TN_OK && u < n; u++) {
    A->adj_off[u] = m;
    for (uint32_t v = 0; v < n; v++)
      m += A->lg.lo[(size_t)u * n + v] < A->lg.lo[(size_t)u * n + v + 1];
  }
  if (st == TN_OK) A->adj_off[n] = m;
  if (st == TN_OK) st = tn_malloc(m + 1u, sizeof *A->adj, &A->adj, err);
  for (uint32_t u = 0, k = 0; st == TN_OK && u < n; u++)
    for (uint32_t v = 0; v < n; v++)
      if (A->lg.lo[(size_t)u * n + v] < A->lg.lo[(size_t)u * n + v + 1]) A->adj[k++] = v;
  return st;
}

/* Every logical edge's length under the current link lengths. */
static void edge_costs(a2a_t *A) {
  for (uint32_t u = 0; u < A->n; u++)
    for (uint32_t k = A->adj_off[u]; k < A->adj_off[u + 1]; k++) {
      size_t p = (size_t)u * A->n + A->adj[k];
      double c = 0;
      for (uint32_t i = A->lg.lo[p]; i < A->lg.lo[p + 1]; i++)
        c += A->len[A->lg.links[i]];
      A->cost[k] = c;
    }
}

/* Dijkstra's queue: (distance, NPU), the least first, ties to the lower NPU. */
static bool qless(const qent_t *a, const qent_t *b) {
  return a->d < b->d || (a->d == b->d && a->v < b->v);
}

static void qpush(a2a_t *A, double d, uint32_t v) {
  uint32_t i = A->qlen++;
  qent_t x = {d, v};
  while (i > 0 && qless(&x, &A->q[(i - 1) / 2])) {
    A->q[i] = A->q[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  A->q[i] = x;
}

static qent_t qpop(a2a_t *A) {
  qent_t top = A->q[0], last = A->q[--A->qlen];
  uint32_t i = 0, m = A->qlen;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && qless(&A->q[c + 1], &A->q[c])) c++;
    if (!qless(&A->q[c], &last)) break;
    A->q[i] = A->q[c];
    i = c;
  }
  if (m > 0) A->q[i] = last;
  return top;
}

/* Cheapest paths from s to every NPU (Dijkstra with a binary heap, stale entries skipped;
 * the NPUs settle in (distance, id) order, ties to the lowest id). */
static void dijkstra(a2a_t *A, uint32_t s) {
  uint32_t n = A->n;
  for (uint32_t v = 0; v < n; v++)
    A->dist[v] = INFINITY, A->from[v] = UINT32_MAX, A->done[v] = 0;
  A->dist[s] = 0;
  A->qlen = 0;
  qpush(A, 0.0, s);
  while (A->qlen > 0) {
    qent_t e = qpop(A);
    uint32_t x = e.v;
    if (A->done[x] || e.d != A->dist[x]) continue;
    A->done[x] = 1;
    for (uint32_t k = A->adj_off[x]; k < A->adj_off[x + 1]; k++) {
      uint32_t v = A->adj[k];
      double c = A->dist[x] + A->cost[k];
      if (!A->done[v] && c < A->dist[v]) {
        A->dist[v] = c, A->from[v] = x;
        qpush(A, c, v);
      }
    }
  }
}

/* Whether finer pieces than the best plan so far (best) may pay: few enough NPUs, and best
 * more than MAX16_GAP over the lower bound (*lb, computed on first use; 0: unknown). */
static bool finer_pays(const topo_t *t, uint64_t size, const schedule_t *best, uint64_t *lb) {
  tn_err_t e = {0};
  if (t->npus > MAX16_NPUS || best->time_ps == 0) return false;
  if (*lb == 0 && topo_lower_bound_ps(t, TN_ALLTOALL, size, lb, &e) != TN_OK) *lb = 0;
  return *lb == 0 || (double)best->time_ps > MAX16_GAP * (double)*lb;
}

/* The fewest transfers one piece per block can take: every (source, destination) pair's
 * hop distance over the logical edges (BFS from every NPU), summed. */
static tn_status_t least_transfers(a2a_t *A, uint64_t *out, tn_err_t *err) {
  uint32_t n = A->n, *hop = A->from, *queue = NULL; /* from: scratch of n entries */
  uint64_t sum = 0;
  tn_status_t st = tn_malloc(n, sizeof *queue, &queue, err);
  for (uint32_t s = 0; st == TN_OK && s < n; s++) {
    for (uint32_t v = 0; v < n; v++)
      hop[v] = UINT32_MAX;
    uint32_t head = 0, tail = 0;
    hop[s] = 0, queue[tail++] = s;
    while (head < tail) {
      uint32_t x = queue[head++];
      sum += hop[x];
      for (uint32_t k = A->adj_off[x]; k < A->adj_off[x + 1]; k++)
        if (hop[A->adj[k]] == UINT32_MAX) hop[A->adj[k]] = hop[x] + 1, queue[tail++] = A->adj[k];
    }
  }
  free(queue);
  *out = sum;
  return st;
}

/* Round j of the paths: every source's piece j to every destination. */
static tn_status_t route_round(a2a_t *A, uint32_t j, uint32_t m, tn_err_t *err) {
  uint32_t n = A->n;
  for (uint32_t s = 0; s < n; s++) {
    edge_costs(A);
    dijkstra(A, s);
    for (uint32_t d = 0; d < n; d++) {
      if (d == s) continue;
      if (A->from[d] == UINT32_MAX)
        return tn_err_set(err, TN_INFEASIBLE,
                          "fabric '%s': NPU %u cannot reach NPU %u through switches and NPUs",
                          A->t->name, s, d);
      A->path[((size_t)s * n + d) * m + j] = (uint32_t)A->hops.len;
      uint32_t len = 0;
      for (uint32_t v = d; v != s; v = A->from[v])
        len++;
      tn_status_t st = tn_vec_reserve(&A->hops, A->hops.len + len + 2, err);
      if (st != TN_OK) return st;
      uint32_t *h = &TN_VEC_AT(&A->hops, uint32_t, A->hops.len);
      h[0] = len;
      for (uint32_t v = d, i = len; v != s; v = A->from[v], i--)
        h[1 + i] = v;
      h[1] = s;
      A->hops.len += len + 2;
      for (uint32_t i = 0; i < len; i++) { /* charge the links of the path's edges */
        size_t p = (size_t)h[1 + i] * n + h[2 + i];
        for (uint32_t e = A->lg.lo[p]; e < A->lg.lo[p + 1]; e++)
          A->len[A->lg.links[e]] *= exp(A->growth * A->inv_bw[A->lg.links[e]]);
      }
    }
    double most = 0; /* only ratios matter: keep the lengths finite */
    for (uint32_t l = 0; l < A->t->nlinks; l++)
      most = fmax(most, A->len[l]);
    if (most > 1e100)
      for (uint32_t l = 0; l < A->t->nlinks; l++)
        A->len[l] /= most;
  }
  return TN_OK;
}

/* The transfers, link crossings and pieces of the paths routed (hops: every path's length,
 * source, relays and destination, one after another). */
static void path_counts(const a2a_t *A, uint64_t *transfers, uint64_t *links, uint64_t *pieces) {
  const uint32_t *h = A->hops.data;
  uint64_t x = 0, l = 0, p = 0;
  for (size_t i = 0; i < A->hops.len; i += (size_t)h[i] + 2, p++) {
    x += h[i];
    for (uint32_t e = 0; e < h[i]; e++) {
      size_t q = (size_t)h[i + 1 + e] * A->n + h[i + 2 + e];
      l += A->lg.lo[q + 1] - A->lg.lo[q];
    }
  }
  *transfers = x, *links = l, *pieces = p;
}

/* ---- relays by priority -------------------------------------------------------------
 * Relayed in order of arrival (as a runtime's queues do), a piece that still has far to go
 * waits behind pieces about to be delivered, and the last pieces over a fabric's busiest
 * cut then still cross its width: on mesh-8x8 at 1 MiB in 8 pieces per block the cut's
 * links were busy until 40.1 us and the set ended at 44.1 (1.114 of the bound). So a link,
 * when free, sends the ready piece with the longest flight still ahead of it (its hops'
 * serialization and latency after this one; then the one ready first, then the first piece
 * in source-rotation order, destinations from the next NPU up as NCCL and MSCCLang rotate
 * peers): 40.55 us there (1.025). The set keeps that order on every link through its
 * dependencies alone: a transfer that the plan sends after one that became ready later
 * also waits for the delivery that released that one, so both are issued in the plan's
 * order and the link's queue serves them so. The plan's model is the engine's on the first
 * link of an edge (through switches the later links are counted as free); the engine's
 * replay of the set (schedule_replay_ties) gives the time. Over the shipped fabrics at
 * 1 KiB..1 GiB this was never slower than arrival order at a count's best, and up to 20%
 * faster at 64 KiB (measured on 28 fabrics; rail-4x8 at 8 pieces was 0.3% slower at that
 * one count, not at its best). */
/* Heap entries carry their keys (no lookups while sifting): an event (a transfer's
 * arrival, or a link's end of sending: id T + link) by time then id; a transfer ready for
 * a link by flight ahead (the longest first), then ready time, then id. */
typedef struct ev {
  uint64_t t;
  uint32_t id;
} ev_t;

typedef struct rq {
  uint64_t ahead, ready;
  uint32_t id;
} rq_t;

static bool ev_less(const ev_t *a, const ev_t *b) {
  return a->t < b->t || (a->t == b->t && a->id < b->id);
}

static bool rq_less(const rq_t *a, const rq_t *b) {
  if (a->ahead != b->ahead) return a->ahead > b->ahead;
  if (a->ready != b->ready) return a->ready < b->ready;
  return a->id < b->id;
}

/* Binary min-heaps over the two entry types (h[0] the least). */
GREEDY_I_HEAP_FNS(evh, ev_t, ev_less)
GREEDY_I_HEAP_FNS(rqh, rq_t, rq_less)

/* One transfer of the list schedule (one struct: the run visits transfers out of order). */
typedef struct rx {
  uint64_t busy, fly; /* its first link's occupancy; start to arrival */
  uint64_t ahead;     /* the flight still ahead of its piece after it */
  uint64_t ready;     /* ready in the plan */
  uint64_t at;        /* its start in the plan; then when the set releases it (see build) */
  uint32_t res;       /* the first link of its edge: what it queues for (from its sender) */
  uint32_t dst, chunk;
  uint32_t idx, rel; /* its index in the set; the transfer whose arrival releases it */
  bool last;         /* the last hop of its piece */
} rx_t;

typedef struct relay {
  uint32_t T; /* transfers */
  rx_t *x;
  ev_t *heap; /* events: at most one per transfer and one per link */
  uint32_t nheap;
  rq_t *q; /* per link: a heap of the transfers ready for it, at q + qoff */
  uint32_t *qoff, *qlen;
  uint8_t *busy_link, *touched;
  uint32_t *touch, ntouch; /* links to look at once the instant's events are in */
} relay_t;

static void relay_free(relay_t *R) {
  free(R->x), free(R->heap), free(R->qoff), free(R->qlen), free(R->q);
  free(R->busy_link), free(R->touched), free(R->touch);
}

static void relay_ready(relay_t *R, uint32_t x, uint64_t now) {
  rx_t *X = &R->x[x];
  uint32_t r = X->res;
  X->ready = now;
  rqh_push(R->q + R->qoff[r], &R->qlen[r], (rq_t){X->ahead, now, x});
  if (!R->touched[r]) R->touched[r] = 1, R->touch[R->ntouch++] = r;
}

/* The list schedule: fills every transfer's at (and ready). */
static void relay_run(relay_t *R) {
  for (uint32_t x = 0; x < R->T; x++)
    if (x == 0 || R->x[x - 1].last) relay_ready(R, x, 0);
  uint64_t now = 0;
  for (;;) {
    for (uint32_t i = 0; i < R->ntouch; i++) {
      uint32_t r = R->touch[i];
      R->touched[r] = 0;
      if (R->busy_link[r] || R->qlen[r] == 0) continue;
      uint32_t x = rqh_pop(R->q + R->qoff[r], &R->qlen[r]).id;
      rx_t *X = &R->x[x];
      X->at = now;
      R->busy_link[r] = 1;
      evh_push(R->heap, &R->nheap, (ev_t){now + X->busy, R->T + r});
      if (!X->last) evh_push(R->heap, &R->nheap, (ev_t){now + X->fly, x});
    }
    R->ntouch = 0;
    if (R->nheap == 0) break;
    now = R->heap[0].t;
    while (R->nheap > 0 && R->heap[0].t == now) {
      uint32_t e = evh_pop(R->heap, &R->nheap).id;
      if (e < R->T) {
        relay_ready(R, e + 1, now);
      } else {
        uint32_t r = e - R->T;
        R->busy_link[r] = 0;
        if (!R->touched[r]) R->touched[r] = 1, R->touch[R->ntouch++] = r;
      }
    }
  }
}

/* The schedule for m pieces per block on the paths, in the list schedule's order on every
 * link; timed by schedule_replay_ties, or, on a fabric without switches (plan_only, see
 * planned_is_exact), by the list schedule itself (out->ties then empty). */
static tn_status_t build(a2a_t *A, uint64_t size, uint32_t m, bool plan_only, schedule_t *out,
                         tn_err_t *err) {
  uint32_t n = A->n, k = n * m, L = A->t->nlinks;
  uint64_t space = (uint64_t)n * size, T64 = 0, crossings, pieces;
  path_counts(A, &T64, &crossings, &pieces);
  schedule_init(out, TN_ALLTOALL, n, k, size);
  if (T64 + L >= UINT32_MAX)
    return tn_err_set(err, TN_LIMIT,
                      "greedy: All-to-All on %u NPUs in %u pieces per block crosses %llu "
                      "edges, more than the planner indexes (2^32)",
                      n, m, (unsigned long long)T64);
  uint32_t T = (uint32_t)T64;
  relay_t R = {.T = T};
  uint32_t *order = NULL, *lastx = NULL;
  uint64_t *key = NULL;
  tn_status_t st = TN_OK;
#define RALLOC(p, cnt)                                                                             \
  if (st == TN_OK) st = tn_calloc((size_t)(cnt) + 1, sizeof *(p), &(p), err)
  RALLOC(R.x, T);
  RALLOC(R.heap, T + L);
  RALLOC(R.qoff, L + 1);
  RALLOC(R.qlen, L);
  RALLOC(R.q, T);
  RALLOC(R.busy_link, L);
  RALLOC(R.touched, L);
  RALLOC(R.touch, L);
  RALLOC(order, T);
  RALLOC(key, T);
  RALLOC(lastx, L);
#undef RALLOC
  /* The transfers, piece by piece (round j, then destinations rotated from the next NPU
   * up, then sources), each piece's hops in a row. */
  uint32_t x = 0;
  for (uint32_t j = 0; st == TN_OK && j < m; j++)
    for (uint32_t i = 1; st == TN_OK && i < n; i++)
      for (uint32_t s = 0; st == TN_OK && s < n; s++) {
        uint32_t d = (s + i) % n, c = s * k + d * m + j;
        const uint32_t *h = &TN_VEC_AT(&A->hops, uint32_t, A->path[((size_t)s * n + d) * m + j]);
        uint64_t b = ten_chunk_bytes(space, n, k, c);
        uint32_t first = x;
        for (uint32_t e = 0; st == TN_OK && e < h[0]; e++, x++) {
          size_t p = (size_t)h[1 + e] * n + h[2 + e];
          rx_t *X = &R.x[x];
          X->chunk = c, X->dst = h[2 + e];
          X->res = A->lg.links[A->lg.lo[p]];
          for (uint32_t l = A->lg.lo[p]; st == TN_OK && l < A->lg.lo[p + 1]; l++) {
            const topo_link_t *lk = &A->t->links[A->lg.links[l]];
            uint64_t ps = 0;
            if (!tn_xfer_ps(b, lk->bandwidth_GBps, &ps))
              st = tn_err_set(err, TN_INVAL, "All-to-All: a piece's time overflows");
            if (l == A->lg.lo[p]) X->busy = ps ? ps : 1;
            X->fly += (ps ? ps : 1) + lk->latency_ps;
          }
          X->last = e + 1 == h[0];
        }
        for (uint32_t y = x; st == TN_OK && y-- > first;)
          R.x[y].ahead = y + 1 < x ? R.x[y + 1].ahead + R.x[y + 1].fly : 0;
      }
  if (st == TN_OK) {
    for (uint32_t y = 0; y < T; y++)
      R.qoff[R.x[y].res + 1]++;
    for (uint32_t r = 0; r < L; r++)
      R.qoff[r + 1] += R.qoff[r];
    relay_run(&R);
    for (uint32_t y = 0; y < T; y++)
      if (R.x[y].last && R.x[y].at + R.x[y].fly > out->time_ps)
        out->time_ps = R.x[y].at + R.x[y].fly;
    free(R.heap), free(R.q), R.heap = NULL, R.q = NULL; /* the run's queues: done */
    for (uint32_t y = 0; y < T; y++)
      key[y] = R.x[y].at;
    st = tn_radix_order(key, T, order, err);
  }
  /* The set's vectors at their size (a transfer has at most two dependencies): no
   * doubling, nor old and new copies side by side, while the scratch is still held. */
  if (st == TN_OK) st = tn_vec_reserve_exact(&out->xfers, T, err);
  if (st == TN_OK) st = tn_vec_reserve_exact(&out->chunks, T, err);
  if (st == TN_OK) st = tn_vec_reserve_exact(&out->deps, 2 * (size_t)T, err);
  if (st == TN_OK) {
    /* In start order: each transfer depends on the delivery that brought its piece (none
     * at the source), and when the one before it on its link is released later in the
     * plan than it is ready, also on that one's release (rel: the transfer whose arrival
     * releases it, NONE at once; at: when, in the plan). Issued at one instant, they go
     * in index order, which is start order. */
    for (uint32_t r = 0; r < L; r++)
      lastx[r] = SCHED_NONE;
    for (uint32_t o = 0; st == TN_OK && o < T; o++) {
      uint32_t y = order[o];
      rx_t *Y = &R.x[y];
      bool first_hop = y == 0 || R.x[y - 1].last;
      uint32_t deps[2], nd = 0, p = lastx[Y->res];
      Y->idx = o;
      Y->rel = first_hop ? SCHED_NONE : y - 1;
      Y->at = Y->ready; /* from here on: the release's time */
      if (!first_hop) deps[nd++] = R.x[y - 1].idx;
      if (p != SCHED_NONE && R.x[p].at > Y->at) { /* wait for what released p */
        Y->rel = R.x[p].rel, Y->at = R.x[p].at;
        if (first_hop || Y->rel != y - 1) deps[nd++] = R.x[Y->rel].idx;
      }
      lastx[Y->res] = y;
      sched_xfer_t t = {.src = A->t->links[Y->res].src,
                        .dst = Y->dst,
                        .bytes = ten_chunk_bytes(space, n, k, Y->chunk),
                        .nchunks = 1,
                        .ndeps = nd};
      st = schedule_add(out, &t, &Y->chunk, deps, NULL, err);
    }
  }
  relay_free(&R); /* before the replay: the plan's peak is the set's, not this scratch */
  free(order), free(key), free(lastx);
  if (st == TN_OK && !plan_only) st = schedule_replay_ties(A->t, out, A->tie_window, err);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLTOALL, n, k, size);
  }
  return st;
}

/* Whether the list schedule's time is the engine's on t: every edge is one link (no
 * switches), so a transfer's occupancy and flight are the engine's, the set keeps the
 * plan's order on every link, and pieces of one instant go in the plan's order. Then the
 * sweep compares counts by their plans and replays only the one it keeps. */
static bool planned_is_exact(const topo_t *t) {
  return t->switches == 0;
}

/* Paths for m pieces per block, from fresh lengths. */
static tn_status_t route(a2a_t *A, uint32_t m, tn_err_t *err) {
  uint32_t n = A->n;
  double slowest = INFINITY;
  for (uint32_t l = 0; l < A->t->nlinks; l++)
    slowest = fmin(slowest, A->t->links[l].bandwidth_GBps);
  for (uint32_t l = 0; l < A->t->nlinks; l++)
    A->len[l] = A->inv_bw[l] = slowest / A->t->links[l].bandwidth_GBps;
  free(A->path);
  A->hops.len = 0;
  tn_status_t st = tn_malloc((size_t)n * n * m, sizeof *A->path, &A->path, err);
  for (uint32_t j = 0; st == TN_OK && j < m; j++)
    st = route_round(A, j, m, err);
  return st;
}

/* The peak of a synthesis whose kept set is one plan's paths (the whole `tenet synth`
 * process: the schedule and its replay, the lowered set, order-proofing's runs and copy,
 * the verifier, the writer): per transfer its schedule entry, SEND and RECV nodes and
 * their simulation; per link a transfer crosses beyond its first (a logical edge through
 * switches) the engine's and the simulator's events there and the same-instant pairs
 * order-proofing gates, which pile up on shared switch links (hierarchical-16x8: 0.73 per
 * transfer, mesh-8x8: 0.26); per piece its delivery; per NPU pair the routes and logical
 * edges. Fitted (minimax, centred in 0.8-1.2) on the median of three peaks of 86 cases (19
 * fabrics of 8 to 256 NPUs at 1 MiB and 64 MiB, 5 at 1 GiB: meshes, tori, hypercubes, a
 * random regular graph, switches, leaf-spine, fat tree, rails, a degraded torus), each at
 * TENET_THREADS=1 and 2, with one malloc arena (cli/main.c): 0.81-1.18 of them in two sets
 * of runs. A second thread holds part of the set twice for a while (the verifier runs
 * beside order-proofing's last simulation): A2A_BESIDE_PCT percent of the transfers' term
 * more (tn_mem_threads), beyond its first A2A_BESIDE_FREE. Measured with relays by
 * priority (bench_mem, 19 fabrics at 1 MiB and 64 MiB): the large sets peak 1.25-1.36 times
 * higher at two threads than at one (mesh-8x8 1 MiB: 113.5 and 153.1 MiB), the small ones
 * (spine-4x8, switches, rings: a few thousand transfers) as high within the runs' spread;
 * the extra follows the transfers, not the links through switches. The link term was
 * refitted then (115 B had spine-4x8 and fattree-32-4to1 at 1.12-1.23). With these, the 76
 * cases (19 fabrics, 1 MiB and 64 MiB, one and two threads, one run each) read 0.87-1.15. */
#define A2A_BASE (GREEDY_MEM_BASE + ((uint64_t)1 << 20))
#define A2A_PER_XFER 557u
#define A2A_PER_LINK 60u
#define A2A_PER_PIECE 141u
#define A2A_PER_PAIR 22u
#define A2A_BESIDE_PCT 45u
#define A2A_BESIDE_FREE ((uint64_t)8 << 20)
/* Pieces of NEAR_PIECE_BYTES or less put nearly every transfer in a pair with the next one
 * on its link within the pairs' window (order-proofing's first run starts from them; the
 * replay keeps them): per transfer then, fitted on torus-8x8, hypercube-64,
 * torus-8x8-degraded (16 pieces of 1 KiB) and hierarchical-16x8 (8 of 1 KiB) at 1 MiB,
 * whose peaks were 13-18% (one thread) and 37-41% (two) above the figure without it. Sets
 * of 2 KiB pieces and more showed no such rise (mesh-8x8, torus-16x8, spine-4x8). */
#define NEAR_PIECE_BYTES 1024u
#define A2A_PER_NEAR 130u
static uint64_t a2a_mem(uint32_t n, uint64_t transfers, uint64_t links, uint64_t pieces, bool near,
                        unsigned threads) {
  uint64_t xw = transfers * (A2A_PER_XFER + (near ? A2A_PER_NEAR : 0));
  uint64_t held = xw < A2A_BESIDE_FREE ? xw : A2A_BESIDE_FREE; /* never held twice */
  return tn_mem_threads(A2A_BASE + (links - transfers) * A2A_PER_LINK + pieces * A2A_PER_PIECE +
                            (uint64_t)n * n * A2A_PER_PAIR + held,
                        xw - held, A2A_BESIDE_PCT, threads);
}

/* Whether pieces of m per block (of size / n bytes) are that small, in a run that keeps its
 * pairs (window_ps not UINT64_MAX). */
static bool near_pieces(const topo_t *t, uint64_t size, uint32_t m, uint64_t window_ps) {
  return window_ps != UINT64_MAX && t->npus > 0 && m > 0 && size / t->npus / m <= NEAR_PIECE_BYTES;
}

/* The memory the set planned on the paths just routed would need if kept; TN_LIMIT (the
 * refusal's line, m pieces per block) when over the cap, else TN_OK. */
static tn_status_t paths_fit(const a2a_t *A, uint32_t m, uint64_t *need, tn_err_t *err) {
  uint64_t x, l, p;
  path_counts(A, &x, &l, &p);
  *need = a2a_mem(A->n, x, l, p, near_pieces(A->t, A->size, m, A->tie_window), 1);
  if (*need <= tn_mem_cap()) return TN_OK;
  char what[96];
  snprintf(what, sizeof what, "greedy: All-to-All on %u NPUs in %u pieces per block", A->n, m);
  return tn_mem_check(what, *need, err);
}

/* A plan's own state (link lengths, Dijkstra's scratch, edge costs and heap); the routes,
 * logical edges and adjacency are set already. */
static tn_status_t plan_state(a2a_t *A, tn_err_t *err) {
  uint32_t n = A->n, edges = A->adj_off[n];
  tn_status_t st = tn_malloc(A->t->nlinks + 1u, sizeof *A->len, &A->len, err);
  if (st == TN_OK) st = tn_malloc(A->t->nlinks + 1u, sizeof *A->inv_bw, &A->inv_bw, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *A->dist, &A->dist, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *A->from, &A->from, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *A->done, &A->done, err);
  if (st == TN_OK) st = tn_malloc(edges + 1u, sizeof *A->cost, &A->cost, err);
  if (st == TN_OK) st = tn_malloc(edges + 1u, sizeof *A->q, &A->q, err);
  return st;
}

/* The largest pieces per block of 1, 2, 4, 8 the sweep's rules allow before routing (pieces
 * of MIN_PIECE_BYTES at least, blocks cut evenly, least * m within MAX_TRANSFERS). */
static uint32_t most_pieces(uint32_t n, uint64_t size, uint64_t least) {
  uint32_t m = 1;
  for (uint32_t c = 1; c < NCOUNTS && counts[c] <= 8; c++) {
    uint32_t x = counts[c];
    if (size / ((uint64_t)n * x) >= MIN_PIECE_BYTES && size / n % x == 0 &&
        least * x <= MAX_TRANSFERS)
      m = x;
  }
  return m;
}

/* One piece count of the first sweep, planned on its own copy of the per-plan state (the
 * logical edges and adjacency are shared, read only). */
typedef struct sweep_job {
  a2a_t A;
  uint64_t size;
  uint32_t m;
  bool capped;   /* its paths passed the transfer cap: not a plan */
  bool over;     /* its set, if kept, would pass the memory cap: not a plan */
  uint64_t need; /* that set's memory (a2a_mem) */
  schedule_t sch;
  tn_status_t st;
  tn_err_t e;
} sweep_job_t;

static void sweep_one(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  sweep_job_t *j = &((sweep_job_t *)ctx)[i];
  a2a_t *A = &j->A;
  uint32_t n = A->n, m = j->m;
  j->st = plan_state(A, &j->e);
  if (j->st == TN_OK) j->st = route(A, m, &j->e);
  j->capped =
      j->st == TN_OK && m > 1 && A->hops.len - 2 * (uint64_t)n * (n - 1) * m > MAX_TRANSFERS;
  if (j->st == TN_OK && !j->capped) {
    tn_err_t e = {0};
    j->over = paths_fit(A, m, &j->need, &e) != TN_OK;
  }
  if (j->st == TN_OK && !j->capped && !j->over)
    j->st = build(A, j->size, m, planned_is_exact(A->t), &j->sch, &j->e);
  free(A->len);
  free(A->inv_bw);
  free(A->dist);
  free(A->from);
  free(A->done);
  free(A->cost);
  free(A->q);
  free(A->path);
  tn_vec_free(&A->hops);
}

/* greedy_alltoall_mem_estimate's figure; with `transfers` (not 0) and `pieces`, the paths
 * routed at each growth rate in turn until their transfers are that many. */
static uint64_t mem_of(const topo_t *t, uint64_t size_bytes, uint32_t pieces, uint64_t transfers,
                       uint64_t window, unsigned threads) {
  uint32_t n = t->npus;
  if (n < 2) return GREEDY_MEM_BASE;
  tn_err_t err = {0};
  a2a_t A = {.t = t, .n = n, .growth = growths[0], .tie_window = window, .size = size_bytes};
  tn_vec_init(&A.hops, sizeof(uint32_t));
  topo_routes_t *routes = NULL;
  uint64_t least = 0, need = 0;
  tn_status_t st = topo_routes_create(t, &routes, &err);
  if (st == TN_OK) st = topo_logical_edges(t, routes, &A.lg, &err);
  if (st == TN_OK) st = adjacency(&A, &err);
  if (st == TN_OK) st = plan_state(&A, &err);
  if (st == TN_OK) st = least_transfers(&A, &least, &err);
  if (st == TN_OK) { /* the producer's first check, before routing: refused there */
    uint32_t m = pieces ? pieces : 1;
    need = a2a_mem(n, least * m, least * m, (uint64_t)n * (n - 1) * m,
                   near_pieces(t, size_bytes, m, window), 1);
    if (need > tn_mem_cap())
      st = TN_LIMIT; /* refused by its one-thread figure */
    else
      need = a2a_mem(n, least * m, least * m, (uint64_t)n * (n - 1) * m,
                     near_pieces(t, size_bytes, m, window), threads);
  }
  /* The count given, or the largest the sweep plans (one whose paths pass MAX_TRANSFERS
   * is not a plan: the next smaller). */
  for (uint32_t m = pieces ? pieces : most_pieces(n, size_bytes, least); st == TN_OK && m > 0;
       m = pieces ? 0 : m / 2) {
    uint64_t x, l, p;
    st = route(&A, m, &err);
    if (st != TN_OK) break;
    path_counts(&A, &x, &l, &p);
    bool near = near_pieces(t, size_bytes, m, window);
    need = a2a_mem(n, x, l, p, near, threads);
    if (pieces && transfers && x != transfers && A.growth == growths[0]) {
      uint64_t first = need; /* the second rate's paths, else the first rate's figure */
      A.growth = growths[1];
      st = route(&A, m, &err);
      if (st != TN_OK) break;
      path_counts(&A, &x, &l, &p);
      need = x == transfers ? a2a_mem(n, x, l, p, near, threads) : first;
    }
    if (pieces || m == 1 || x <= MAX_TRANSFERS) break;
  }
  a2a_free(&A);
  topo_routes_free(routes);
  return st == TN_OK || st == TN_LIMIT ? need : 0;
}

uint64_t greedy_alltoall_mem_estimate(const topo_t *t, uint64_t size_bytes, uint32_t pieces,
                                      uint64_t tie_window_ps, unsigned threads) {
  return mem_of(t, size_bytes, pieces, 0, tie_window_ps, threads);
}

uint64_t greedy_alltoall_kept_mem(const topo_t *t, uint64_t size_bytes, uint32_t pieces,
                                  uint64_t transfers, uint64_t tie_window_ps, unsigned threads) {
  return mem_of(t, size_bytes, pieces ? pieces : 1, transfers, tie_window_ps, threads);
}

tn_status_t greedy_alltoall(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                            schedule_t *out, tn_err_t *err) {
  uint32_t n = t->npus;
  schedule_init(out, TN_ALLTOALL, n, n ? n : 1, size_bytes);
  if (n < 2)
    return tn_err_set(err, TN_INVAL, "All-to-All: fabric '%s' has %u NPU; it needs 2", t->name, n);
  uint64_t space;
  if (!tn_coll_space(TN_ALLTOALL, n, size_bytes, &space))
    return tn_err_set(err, TN_INVAL, "All-to-All: %u times %llu B overflows", n,
                      (unsigned long long)size_bytes);
  uint32_t fixed = opts && opts->chunks_per_npu ? opts->chunks_per_npu : 0;
  if (size_bytes < (uint64_t)n * (fixed ? fixed : 1))
    return tn_err_set(err, TN_INVAL,
                      "All-to-All: %llu B is smaller than one byte per piece (%u NPUs x %u)",
                      (unsigned long long)size_bytes, n, fixed ? fixed : 1);
  tn_status_t st = tn_alltoall_check(size_bytes, n, fixed ? fixed : 1, err);
  if (st == TN_OK) st = topo_check_connected(t, err);
  if (st != TN_OK) return st;
  uint64_t window = opts && opts->keep_ties ? opts->tie_window_ps : UINT64_MAX;
  a2a_t A = {.t = t, .n = n, .tie_window = window, .size = size_bytes};
  tn_vec_init(&A.hops, sizeof(uint32_t));
  topo_routes_t *routes = NULL;
  st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = topo_logical_edges(t, routes, &A.lg, err);
  if (st == TN_OK) st = adjacency(&A, err);
  if (st == TN_OK) st = plan_state(&A, err);
  schedule_free(out);
  schedule_init(out, TN_ALLTOALL, n, n, size_bytes);
  /* Pieces per block at the first growth rate, then the second at every count (up to
   * SMALL NPUs) or at the best one. */
  uint32_t best_m = 0, first_best = 0;
  bool worse = false;  /* above SMALL NPUs: a count slower than a smaller one ends the sweep */
  bool uniform = true; /* every NPU with the same ingress and egress: the first rate only */
  for (uint32_t v = 1; v < n; v++)
    uniform = uniform && topo_egress_GBps(t, v) == topo_egress_GBps(t, 0) &&
              topo_ingress_GBps(t, v) == topo_ingress_GBps(t, 0);
  uint64_t least = 0, lb = 0;
  if (st == TN_OK) st = least_transfers(&A, &least, err);
  if (st == TN_OK) { /* the first count's set at its least: refused before any routing */
    char what[96];
    uint64_t p = (uint64_t)n * (n - 1) * (fixed ? fixed : 1), x = least * (fixed ? fixed : 1);
    snprintf(what, sizeof what, "greedy: All-to-All on %u NPUs in %u pieces per block", n,
             fixed ? fixed : 1);
    st = tn_mem_check(
        what, a2a_mem(n, x, x, p, near_pieces(t, size_bytes, fixed ? fixed : 1, window), 1), err);
  }
  /* Above MAX16_NPUS (no 16 pieces, so no count depends on an earlier plan) with threads
   * to spare, the first sweep's counts are planned side by side, each on its own state,
   * the largest first; the sweep below then reads them in its own order with its own
   * stops, so what it keeps (and any failure it meets) is what the one-thread sweep
   * would: only the plans past a stop were made for nothing. */
  sweep_job_t jobs[NCOUNTS];
  uint32_t njobs = 0, job_of[NCOUNTS];
  memset(jobs, 0, sizeof jobs);
  for (uint32_t c = 0; c < NCOUNTS; c++)
    job_of[c] = NCOUNTS;
  if (st == TN_OK && !fixed && n > MAX16_NPUS && tn_thread_count() > 1) {
    for (uint32_t c = NCOUNTS; c-- > 0;) {
      uint32_t m = counts[c];
      if (m > 8 || (m > 1 && size_bytes / ((uint64_t)n * m) < MIN_PIECE_BYTES)) continue;
      if (size_bytes / n % m != 0 || (m > 1 && least * m > MAX_TRANSFERS)) continue;
      a2a_t J = {.t = t,
                 .n = n,
                 .growth = growths[0],
                 .lg = A.lg,
                 .tie_window = window,
                 .size = size_bytes};
      J.adj_off = A.adj_off, J.adj = A.adj;
      tn_vec_init(&J.hops, sizeof(uint32_t));
      jobs[njobs] = (sweep_job_t){.A = J, .size = size_bytes, .m = m};
      job_of[c] = njobs++;
    }
    unsigned threads = tn_thread_count();
    tn_parallel_for(njobs, threads < njobs ? threads : njobs, sweep_one, jobs);
  }
  for (uint32_t i = 0; st == TN_OK && i < 2 * NCOUNTS; i++) {
    uint32_t c = i % NCOUNTS;
    if (i == NCOUNTS) first_best = best_m;
    if (i < NCOUNTS && njobs > 0) { /* planned side by side above */
      sweep_job_t *j = job_of[c] < NCOUNTS ? &jobs[job_of[c]] : NULL;
      if (worse || j == NULL) continue;
      if (j->st != TN_OK) {
        st = tn_err_set(err, j->st, "%s", j->e.msg);
        break;
      }
      if (j->capped) continue;
      if (j->over && best_m == 0) { /* the first count's set: refused */
        char what[96];
        snprintf(what, sizeof what, "greedy: All-to-All on %u NPUs in %u pieces per block", n,
                 j->m);
        st = tn_mem_check(what, j->need, err);
        break;
      }
      if (j->over) continue; /* a finer count that would not fit: not a plan */
      if (best_m == 0 || j->sch.time_ps < out->time_ps) {
        schedule_free(out);
        *out = j->sch;
        best_m = j->m;
      } else {
        worse = true;
        schedule_free(&j->sch);
      }
      memset(&j->sch, 0, sizeof j->sch);
      continue;
    }
    uint32_t m = i < NCOUNTS || n <= SMALL ? counts[c] : c == 0 ? first_best : 0;
    if (i < NCOUNTS && worse) m = 0;
    if (m && counts[c] > 8 && !finer_pays(t, size_bytes, out, &lb)) m = 0;
    if (i >= NCOUNTS && n > SMALL && uniform) m = 0;
    if (fixed) m = c == 0 ? fixed : 0;
    if (m == 0 || (!fixed && m > 1 && size_bytes / ((uint64_t)n * m) < MIN_PIECE_BYTES)) continue;
    if (!fixed && size_bytes / n % m != 0) continue; /* blocks cut evenly only (algo.h) */
    /* Every piece crosses at least its hop distance: past the cap whatever its paths. */
    if (!fixed && m > 1 && least * m > MAX_TRANSFERS) continue;
    A.growth = growths[i / NCOUNTS];
    schedule_t sch;
    st = route(&A, m, err);
    if (st != TN_OK) break;
    if (!fixed && m > 1 && A.hops.len - 2 * (uint64_t)n * (n - 1) * m > MAX_TRANSFERS) continue;
    /* Every count is checked as if kept, on its own paths: the first (or the one asked
     * for) over the cap is refused, a later one is not planned. */
    uint64_t need;
    tn_err_t e = {0};
    if (paths_fit(&A, m, &need, best_m == 0 ? err : &e) != TN_OK) {
      if (best_m == 0) {
        st = TN_LIMIT;
        break;
      }
      continue;
    }
    st = build(&A, size_bytes, m, planned_is_exact(t), &sch, err);
    if (st != TN_OK) break;
    if (best_m == 0 || sch.time_ps < out->time_ps) {
      schedule_free(out);
      *out = sch;
      best_m = m;
    } else {
      worse = n > SMALL;
      schedule_free(&sch);
    }
  }
  for (uint32_t k = 0; k < njobs; k++)
    schedule_free(&jobs[k].sch); /* the plans past a stop, or past a failure */
  /* Counts compared by their plans are timed by the engine now, the one kept alone (its
   * time and its pairs for order-proofing). */
  if (st == TN_OK && planned_is_exact(t)) st = schedule_replay_ties(t, out, window, err);
  a2a_free(&A);
  topo_routes_free(routes);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLTOALL, n, n, size_bytes);
  }
  return st;
}
