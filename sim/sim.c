/* sim/sim.c — the analytical network simulator: validates an algo_t against a topo_t,
 * then runs it on ten/'s engine with the discipline of docs/architecture.md §3 (drain every
 * event of an instant, then issue the nodes that became ready in (rank, id) order; eager
 * sends; FIFO matching per (src, dst, tag, bytes)). Pipeline: algo → sim → cli. */
#include "sim/sim.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"
#include "ten/ten.h"

#define NONE UINT32_MAX
#define COMP_ZERO_PS 1000u /* a COMP of 0 µs costs 1 ns, as in ASTRA-sim */

enum { ST_WAIT = 0, ST_ISSUED = 1, ST_DONE = 2 };

/* What the run needs of one node, packed into 32 bytes (the algo_t's own nodes are
 * bigger and spread over per-rank arrays). Ranks fit 16 bits: TOPO_MAX_NPUS is 2^16. */
typedef struct snode {
  uint64_t arg;      /* SEND: bytes; COMP: duration in ps */
  uint32_t pending;  /* dependencies not yet done */
  uint32_t succ_off; /* successors: succ[succ_off .. next node's succ_off) */
  uint32_t keyid;    /* SEND/RECV: index into keys */
  uint32_t qnext;    /* next in a key's FIFO; a paired node's partner */
  uint16_t rank;
  uint16_t peer; /* SEND: destination; RECV: source */
  uint8_t op, state;
  uint8_t paired; /* the node's key has one SEND and one RECV: they match each other */
} snode_t;
_Static_assert(sizeof(snode_t) == 32, "a node should stay 32 bytes");
_Static_assert(TOPO_MAX_NPUS <= 65536u, "ranks must fit snode_t's 16 bits");

/* A matching key: messages from src to dst with this tag and size pair up FIFO. */
typedef struct msg_key {
  uint32_t src, dst;
  int32_t tag;
  uint64_t bytes;
} msg_key_t;

/* Per key: the FIFO of delivered-but-unclaimed messages (SEND nodes) and the FIFO of
 * posted-but-unsatisfied RECVs, both threaded through snode_t.qnext. At most one of the
 * two is non-empty at any time. */
typedef struct keyq {
  uint32_t msg_head, msg_tail, recv_head, recv_tail;
  uint32_t nsend, nrecv;         /* static counts, for the balance check */
  uint32_t last_send, last_recv; /* highest global index of each side */
} keyq_t;

/* The whole state of one run. Nodes are numbered globally: node id of rank r is
 * rank_off[r] + id, so ascending global index is (rank, id) order. */
typedef struct sim {
  const topo_t *t;
  const algo_t *a;
  uint32_t total;
  uint32_t *rank_off;
  snode_t *nodes;
  uint32_t *succ;
  uint64_t *issue_ps; /* only when tracing */
  msg_key_t *keys;
  keyq_t *kq;
  uint32_t nkeys;
  uint32_t *ready; /* min-heap of global indices ready at the current instant */
  uint32_t nready;
  uint64_t *finish; /* per rank */
  uint32_t ndone;
  uint64_t timers;
  topo_routes_t *routes;
  ten_engine_t *e;
  sim_trace_t *trace;
  bool trace_links_only; /* trace the links alone (sim_opts_t) */
  sim_ties_t ties;
  uint64_t seed;
  uint32_t *hop_rank; /* per link, for SIM_TIES_REVERSE / RANDOM */
  sim_tie_fn on_tie;
  void *tie_ctx;
  tn_heap_less_fn ready_less; /* ready_order(ties) */
  uint64_t stop_after_ps;     /* 0: run to the end */
  uint64_t stopped_ps;        /* the time of the event that stopped the run, or 0 */
  unsigned threads;           /* workers for the checks and the graph (sim_opts_t) */
  uint64_t sends;             /* SEND nodes */
} sim_t;

/* ten_tie_fn: engine cookies are global node indices. */
static void on_engine_tie(void *ctx, const ten_tie_t *t) {
  const sim_t *s = ctx;
  uint32_t r1 = s->nodes[t->first].rank, r2 = s->nodes[t->second].rank;
  uint32_t c1 = s->nodes[t->cause1].rank, c2 = s->nodes[t->cause2].rank;
  sim_tie_t v = {.link = t->link,
                 .first_rank = r1,
                 .first_id = (uint32_t)t->first - s->rank_off[r1],
                 .second_rank = r2,
                 .second_id = (uint32_t)t->second - s->rank_off[r2],
                 .first_waited = t->waited1,
                 .second_waited = t->waited2,
                 .first_cause_rank = c1,
                 .first_cause_id = (uint32_t)t->cause1 - s->rank_off[c1],
                 .second_cause_rank = c2,
                 .second_cause_id = (uint32_t)t->cause2 - s->rank_off[c2],
                 .gap_ps = t->gap_ps};
  s->on_tie(s->tie_ctx, &v);
}

static const char *op_name(algo_op_t op) {
  return op == ALGO_SEND ? "SEND" : op == ALGO_RECV ? "RECV" : "COMP";
}

/* ---- validation ---------------------------------------------------------- */

static tn_status_t check_node(const sim_t *s, uint32_t r, uint32_t i, tn_err_t *err) {
  const algo_t *a = s->a;
  const algo_node_t *n = algo_node(a, r, i);
  uint32_t len = algo_rank_len(a, r);
  uint64_t ps = 0;
  if (n->op != ALGO_SEND && n->op != ALGO_RECV && n->op != ALGO_COMP)
    return tn_err_set(err, TN_PARSE, "rank %u node %u: unknown node type %d", r, i, (int)n->op);
  if (n->op == ALGO_COMP && !tn_mul_u64(n->duration_us, 1000000u, &ps))
    return tn_err_set(err, TN_PARSE, "rank %u node %u: COMP of %" PRIu64 " us is too long", r, i,
                      n->duration_us);
  if (n->op != ALGO_COMP) {
    const char *dir = n->op == ALGO_SEND ? "to" : "from";
    if (n->peer < 0 || (uint32_t)n->peer >= a->npus || (uint32_t)n->peer >= s->t->npus)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %u: %s %s rank %d, outside the topology '%s' "
                        "(%u NPUs, %u ranks)",
                        r, i, op_name(n->op), dir, n->peer, s->t->name, s->t->npus, a->npus);
    if ((uint32_t)n->peer == r)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s %s itself", r, i, op_name(n->op), dir);
    if (n->bytes == 0)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s of 0 bytes", r, i, op_name(n->op));
    if (n->tag < 0 || n->tag > ALGO_MAX_TAG)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: tag %d outside 0..%d", r, i, n->tag,
                        ALGO_MAX_TAG);
  }
  const uint32_t *deps = algo_node_deps(a, r, n);
  for (uint32_t k = 0; k < n->ndeps; k++) {
    if (deps[k] >= len)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: depends on missing node %u (%u nodes)", r,
                        i, deps[k], len);
    if (deps[k] == i)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: dependency cycle (depends on itself)", r,
                        i);
  }
  return TN_OK;
}

/* The checks, the graph and the cycle check go rank by rank (dependencies never cross
 * ranks, and a rank's nodes are contiguous): on opts->threads workers, each rank's work in
 * one piece while its nodes are in cache. What comes out does not depend on the workers:
 * every rank's part of the arrays is its own, and the failure reported is the first in
 * rank order, as a loop over the ranks would meet it. */
typedef struct rank_fail {
  uint32_t rank; /* the lowest failing rank this worker met (NONE: none) */
  tn_err_t err;
} rank_fail_t;

typedef struct vjob {
  sim_t *s;
  rank_fail_t *fails; /* per worker */
  uint32_t *ebase;    /* per rank + 1: the rank's first successor slot */
  uint32_t *pend;     /* per node: dependency counts the cycle check counts down */
  uint32_t **queue;   /* per worker: the cycle check's queue (the longest rank's length) */
} vjob_t;

/* Keeps the failure of rank r when it is the lowest this worker met. */
static void note_fail(rank_fail_t *f, uint32_t r, const tn_err_t *err) {
  if (r < f->rank) f->rank = r, f->err = *err;
}

/* The lowest failing rank over the workers, its error in err; TN_OK when none failed. */
static tn_status_t first_fail(const rank_fail_t *f, unsigned n, tn_err_t *err) {
  const rank_fail_t *best = NULL;
  for (unsigned w = 0; w < n; w++)
    if (f[w].rank != NONE && (best == NULL || f[w].rank < best->rank)) best = &f[w];
  if (best == NULL) return TN_OK;
  *err = best->err;
  return err->status;
}

static void check_rank(void *ctx, size_t item, unsigned worker) {
  vjob_t *j = ctx;
  uint32_t r = (uint32_t)item;
  tn_err_t err = {0};
  for (uint32_t i = 0; i < algo_rank_len(j->s->a, r); i++)
    if (check_node(j->s, r, i, &err) != TN_OK) {
      note_fail(&j->fails[worker], r, &err);
      return;
    }
}

/* Rank r's nodes packed, and the count of each one's successors in its succ_off; the
 * rank's successor total in ebase[r + 1] (prefixed into slots once every rank is in). */
static void pack_rank(void *ctx, size_t item, unsigned worker) {
  (void)worker;
  vjob_t *j = ctx;
  sim_t *s = j->s;
  const algo_t *a = s->a;
  uint32_t r = (uint32_t)item, off = s->rank_off[r], edges = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
    const algo_node_t *nd = algo_node(a, r, i);
    snode_t *sn = &s->nodes[off + i];
    sn->op = (uint8_t)nd->op;
    sn->rank = (uint16_t)r;
    sn->peer = (uint16_t)(nd->op == ALGO_COMP ? 0 : nd->peer);
    sn->arg = nd->op == ALGO_COMP ? (nd->duration_us ? nd->duration_us * 1000000u : COMP_ZERO_PS)
                                  : nd->bytes;
    sn->pending = nd->ndeps;
    edges += nd->ndeps;
    const uint32_t *deps = algo_node_deps(a, r, nd);
    for (uint32_t k = 0; k < nd->ndeps; k++)
      s->nodes[off + deps[k]].succ_off++; /* count */
  }
  j->ebase[r + 1] = edges;
}

/* Rank r's successor lists (from slot ebase[r] on), then Kahn's algorithm on them. A
 * cycle is noted for the walk that names a node on it (find_cycle). */
static void link_rank(void *ctx, size_t item, unsigned worker) {
  vjob_t *j = ctx;
  sim_t *s = j->s;
  const algo_t *a = s->a;
  snode_t *nodes = s->nodes;
  uint32_t r = (uint32_t)item, lo = s->rank_off[r], hi = s->rank_off[r + 1];
  uint32_t sum = j->ebase[r];
  for (uint32_t v = lo; v < hi; v++) {
    uint32_t count = nodes[v].succ_off;
    nodes[v].succ_off = nodes[v].qnext = sum; /* qnext: fill cursor for now */
    sum += count;
  }
  for (uint32_t i = 0; i < hi - lo; i++) {
    const algo_node_t *nd = algo_node(a, r, i);
    const uint32_t *deps = algo_node_deps(a, r, nd);
    for (uint32_t k = 0; k < nd->ndeps; k++)
      s->succ[nodes[lo + deps[k]].qnext++] = lo + i;
  }
  for (uint32_t v = lo; v < hi; v++) {
    nodes[v].qnext = NONE;
    j->pend[v] = nodes[v].pending;
  }
  /* Kahn's algorithm on a copy of the dependency counts (the run needs them whole). The
   * last node's successors end where the next rank's begin (ebase: that rank's own pass
   * may not have written its first node yet). */
  uint32_t *q = j->queue[worker], head = 0, tail = 0;
  for (uint32_t v = lo; v < hi; v++)
    if (j->pend[v] == 0) q[tail++] = v - lo;
  while (head < tail) {
    uint32_t v = lo + q[head++], end = v + 1 < hi ? nodes[v + 1].succ_off : j->ebase[r + 1];
    for (uint32_t k = nodes[v].succ_off; k < end; k++)
      if (--j->pend[s->succ[k]] == 0) q[tail++] = s->succ[k] - lo;
  }
  if (tail < hi - lo) {
    tn_err_t err = {TN_PARSE, ""};
    note_fail(&j->fails[worker], r, &err);
  }
}

/* Rank r has a cycle (its nodes left with pend > 0): walks unfinished dependencies from
 * its first stuck node until a node repeats; that node lies on a cycle. */
static tn_status_t find_cycle(sim_t *s, const uint32_t *pend, uint32_t r, tn_err_t *err) {
  snode_t *nodes = s->nodes;
  uint32_t v = s->rank_off[r];
  while (pend[v] == 0)
    v++;
  while (nodes[v].state == ST_WAIT) {
    nodes[v].state = ST_ISSUED; /* marker: visited by the walk */
    uint32_t off = s->rank_off[r];
    const algo_node_t *nd = algo_node(s->a, r, v - off);
    const uint32_t *deps = algo_node_deps(s->a, r, nd);
    for (uint32_t k = 0; k < nd->ndeps; k++)
      if (pend[off + deps[k]] != 0) {
        v = off + deps[k];
        break;
      }
  }
  return tn_err_set(err, TN_PARSE, "rank %u node %u: dependency cycle", r, v - s->rank_off[r]);
}

/* Checks every node, packs the nodes, builds the successor lists and refuses a cycle. */
static tn_status_t build_graph(sim_t *s, tn_err_t *err) {
  const algo_t *a = s->a;
  unsigned workers = s->threads > 1 ? s->threads : 1;
  if (workers > a->npus) workers = a->npus ? a->npus : 1;
  vjob_t j = {s, NULL, NULL, NULL, NULL};
  tn_status_t st = tn_calloc(workers, sizeof *j.fails, &j.fails, err);
  if (st != TN_OK) return st;
  for (unsigned w = 0; w < workers; w++)
    j.fails[w].rank = NONE;
  tn_parallel_for(a->npus, workers, check_rank, &j);
  if ((st = first_fail(j.fails, workers, err)) != TN_OK) goto done;
  uint64_t total = 0, edges = 0;
  uint32_t longest = 0;
  for (uint32_t r = 0; r < a->npus; r++) {
    total += algo_rank_len(a, r);
    edges += a->ranks[r].deps.len;
    if (algo_rank_len(a, r) > longest) longest = algo_rank_len(a, r);
  }
  if (total >= NONE || edges >= NONE) {
    st = tn_err_set(err, TN_LIMIT,
                    "%" PRIu64 " nodes and %" PRIu64 " dependencies exceed "
                    "the simulator's limit",
                    total, edges);
    goto done;
  }
  s->total = (uint32_t)total;
  if ((st = tn_calloc(a->npus + 1u, sizeof *s->rank_off, &s->rank_off, err)) != TN_OK ||
      (st = tn_calloc(total + 1, sizeof *s->nodes, &s->nodes, err)) != TN_OK ||
      (st = tn_calloc(edges + 1, sizeof *s->succ, &s->succ, err)) != TN_OK ||
      (st = tn_calloc(total + 1, sizeof *s->ready, &s->ready, err)) != TN_OK ||
      (st = tn_calloc(a->npus, sizeof *s->finish, &s->finish, err)) != TN_OK ||
      (st = tn_calloc(a->npus + 1u, sizeof *j.ebase, &j.ebase, err)) != TN_OK ||
      (st = tn_malloc(total + 1, sizeof *j.pend, &j.pend, err)) != TN_OK ||
      (st = tn_calloc(workers, sizeof *j.queue, &j.queue, err)) != TN_OK)
    goto done;
  for (unsigned w = 0; w < workers && st == TN_OK; w++)
    st = tn_malloc(longest + 1u, sizeof **j.queue, &j.queue[w], err);
  if (st != TN_OK) goto done;
  uint32_t g = 0;
  for (uint32_t r = 0; r < a->npus; r++) {
    s->rank_off[r] = g;
    g += algo_rank_len(a, r);
  }
  s->rank_off[a->npus] = g;
  tn_parallel_for(a->npus, workers, pack_rank, &j);
  for (uint32_t r = 0; r < a->npus; r++) /* successor counts -> each rank's first slot */
    j.ebase[r + 1] += j.ebase[r];
  s->nodes[s->total].succ_off = j.ebase[a->npus];
  tn_parallel_for(a->npus, workers, link_rank, &j);
  uint32_t bad = NONE;
  for (unsigned w = 0; w < workers; w++)
    if (j.fails[w].rank < bad) bad = j.fails[w].rank;
  if (bad != NONE) st = find_cycle(s, j.pend, bad, err);
done:
  for (unsigned w = 0; j.queue && w < workers; w++)
    free(j.queue[w]);
  free(j.queue);
  free(j.pend);
  free(j.ebase);
  free(j.fails);
  return st;
}

static uint64_t key_hash(uint32_t src, int32_t tag, uint64_t bytes) {
  uint64_t h = src * 0x9E3779B97F4A7C15ull ^ (uint32_t)tag * 0xC2B2AE3D27D4EB4Full ^
               bytes * 0x165667B19E3779F9ull;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

/* Gives every SEND and RECV its key id (ids in order of first appearance, so nothing
 * depends on hash order) and counts both sides. Keys live in one open-addressing table
 * per destination rank, so the lookups of one rank's nodes stay in a few small tables. */
static tn_status_t build_keys(sim_t *s, tn_err_t *err) {
  uint32_t npus = s->a->npus, ncomm = 0;
  size_t *tab_off = NULL;
  uint32_t *table = NULL;
  tn_status_t st = tn_calloc(npus + 1u, sizeof *tab_off, &tab_off, err);
  if (st != TN_OK) return st;
  for (uint32_t v = 0; v < s->total; v++) {
    const snode_t *n = &s->nodes[v];
    if (n->op == ALGO_COMP) continue;
    ncomm++;
    tab_off[n->op == ALGO_SEND ? n->peer : n->rank]++; /* count per destination */
  }
  size_t sum = 0;
  for (uint32_t d = 0; d < npus; d++) {
    size_t cap = tab_off[d] ? 4 : 0;
    while (cap < 2 * tab_off[d])
      cap *= 2;
    tab_off[d] = sum;
    sum += cap;
  }
  tab_off[npus] = sum;
  if ((st = tn_calloc(sum + 1, sizeof *table, &table, err)) != TN_OK ||
      (st = tn_calloc(ncomm + 1u, sizeof *s->keys, &s->keys, err)) != TN_OK ||
      (st = tn_calloc(ncomm + 1u, sizeof *s->kq, &s->kq, err)) != TN_OK)
    goto fail;
  memset(table, 0xff, sum * sizeof *table);
  for (uint32_t v = 0; v < s->total; v++) {
    snode_t *n = &s->nodes[v];
    if (n->op == ALGO_COMP) continue;
    const algo_node_t *nd = algo_node(s->a, n->rank, v - s->rank_off[n->rank]);
    bool send = n->op == ALGO_SEND;
    msg_key_t k = {send ? n->rank : n->peer, send ? n->peer : n->rank, nd->tag, nd->bytes};
    size_t base = tab_off[k.dst], mask = tab_off[k.dst + 1] - base - 1;
    size_t h = (size_t)key_hash(k.src, k.tag, k.bytes) & mask;
    uint32_t *slot;
    for (;;) {
      slot = &table[base + h];
      if (*slot == NONE) break;
      const msg_key_t *o = &s->keys[*slot];
      if (o->src == k.src && o->tag == k.tag && o->bytes == k.bytes) break;
      h = (h + 1) & mask;
    }
    if (*slot == NONE) {
      *slot = s->nkeys;
      s->keys[s->nkeys] = k;
      s->kq[s->nkeys] = (keyq_t){NONE, NONE, NONE, NONE, 0, 0, NONE, NONE};
      s->nkeys++;
    }
    keyq_t *q = &s->kq[*slot];
    n->keyid = *slot;
    if (send)
      q->nsend++, q->last_send = v;
    else
      q->nrecv++, q->last_recv = v;
  }
fail:
  free(tab_off);
  free(table);
  return st;
}

/* Every key must have as many SENDs as RECVs, else some node can never complete. The
 * first unbalanced key in (rank, id) order of its nodes is reported, naming the last
 * node of the side that has too many.
 * A key with one SEND and one RECV (most keys: tags tell the messages of a pair apart)
 * needs no FIFO: the two match each other, whatever the order of events. Each is linked
 * to the other through qnext, so that a delivery or a posted RECV finds its partner
 * without a look at the key's queues. Both in one pass over the nodes, which also counts
 * the SENDs (the run's messages). */
static tn_status_t check_balanced_and_pair(sim_t *s, tn_err_t *err) {
  uint64_t sends = 0;
  for (uint32_t v = 0; v < s->total; v++) {
    snode_t *n = &s->nodes[v];
    if (n->op == ALGO_COMP) continue;
    const keyq_t *q = &s->kq[n->keyid];
    if (q->nsend != q->nrecv) {
      const msg_key_t *k = &s->keys[n->keyid];
      bool more_sends = q->nsend > q->nrecv;
      uint32_t g = more_sends ? q->last_send : q->last_recv, r = s->nodes[g].rank;
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %u: unmatched %s (src %u, dst %u, tag %d, %" PRIu64
                        " bytes): %u SEND(s) but %u RECV(s) with that key",
                        r, g - s->rank_off[r], more_sends ? "SEND" : "RECV", k->src, k->dst, k->tag,
                        k->bytes, q->nsend, q->nrecv);
    }
    if (n->op != ALGO_SEND) continue;
    sends++;
    if (q->nsend != 1) continue;
    n->paired = s->nodes[q->last_recv].paired = 1;
    n->qnext = q->last_recv;
    s->nodes[q->last_recv].qnext = v;
  }
  s->sends = sends;
  return TN_OK;
}

/* Every NPU must reach every NPU (through switches as needed): breadth-first search
 * from NPU 0 along the links and against them. */
static tn_status_t check_connected(const topo_t *t, uint32_t *queue, uint8_t *seen, tn_err_t *err) {
  uint32_t nodes = topo_nodes(t);
  for (int dir = 0; dir < 2; dir++) {
    memset(seen, 0, nodes);
    uint32_t head = 0, tail = 0;
    queue[tail++] = 0;
    seen[0] = 1;
    while (head < tail) {
      uint32_t v = queue[head++];
      const uint32_t *off = dir == 0 ? t->out_off : t->in_off;
      const uint32_t *lk = dir == 0 ? t->out_link : t->in_link;
      for (uint32_t i = off[v]; i < off[v + 1]; i++) {
        uint32_t u = dir == 0 ? t->links[lk[i]].dst : t->links[lk[i]].src;
        if (!seen[u]) seen[u] = 1, queue[tail++] = u;
      }
    }
    for (uint32_t u = 0; u < t->npus; u++)
      if (!seen[u])
        return tn_err_set(err, TN_INFEASIBLE,
                          "fabric '%s' is disconnected: NPU %u cannot reach "
                          "NPU %u",
                          t->name, dir == 0 ? 0u : u, dir == 0 ? u : 0u);
  }
  return TN_OK;
}

static tn_status_t validate(sim_t *s, tn_err_t *err) {
  const algo_t *a = s->a;
  if (a->npus > s->t->npus)
    return tn_err_set(err, TN_PARSE, "rank %u: outside the topology '%s' (%u NPUs)", s->t->npus,
                      s->t->name, s->t->npus);
  tn_status_t st = build_graph(s, err);
  if (st == TN_OK) st = build_keys(s, err);
  if (st == TN_OK) st = check_balanced_and_pair(s, err);
  if (st != TN_OK) return st;
  uint32_t *queue = NULL;
  uint8_t *seen = NULL;
  uint32_t nodes = topo_nodes(s->t);
  if ((st = tn_calloc(nodes, sizeof *queue, &queue, err)) == TN_OK &&
      (st = tn_calloc(nodes, 1, &seen, err)) == TN_OK)
    st = check_connected(s->t, queue, seen, err);
  free(queue);
  free(seen);
  return st;
}

/* ---- the run ------------------------------------------------------------- */

bool sim_ties_parse(const char *s, sim_ties_t *out) {
  static const char *const names[] = {"id", "reverse", "random"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (sim_ties_t)i;
      return true;
    }
  return false;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* The ready nodes of the current instant, issued in ascending global index (SIM_TIES_ID),
 * descending, or in an order drawn from the seed. */
static bool index_less(const void *ctx, uint32_t a, uint32_t b) {
  (void)ctx;
  return a < b;
}
static bool index_more(const void *ctx, uint32_t a, uint32_t b) {
  (void)ctx;
  return a > b;
}
static bool seeded_less(const void *ctx, uint32_t a, uint32_t b) {
  const sim_t *s = ctx;
  uint64_t ka = mix64(s->seed ^ mix64(a)), kb = mix64(s->seed ^ mix64(b));
  return ka != kb ? ka < kb : a < b;
}
/* The order of s->ties, picked once per run (the heap is the issue loop's hot path). */
static tn_heap_less_fn ready_order(const sim_t *s) {
  return s->ties == SIM_TIES_REVERSE  ? index_more
         : s->ties == SIM_TIES_RANDOM ? seeded_less
                                      : index_less;
}
/* The id order (every run of tenet sim and the planners) compares inline; the others
 * through ready_less. */
static void ready_push(sim_t *s, uint32_t g) {
  if (s->ties == SIM_TIES_ID)
    tn_heap_push(s->ready, &s->nready, g, index_less, NULL);
  else
    tn_heap_push(s->ready, &s->nready, g, s->ready_less, s);
}
static uint32_t ready_pop(sim_t *s) {
  if (s->ties == SIM_TIES_ID) return tn_heap_pop(s->ready, &s->nready, index_less, NULL);
  return tn_heap_pop(s->ready, &s->nready, s->ready_less, s);
}
/* The links' places among same-instant arrivals for SIM_TIES_REVERSE / RANDOM
 * (Fisher-Yates from the seed). */
static tn_status_t set_hop_order(sim_t *s, tn_err_t *err) {
  uint32_t n = s->t->nlinks;
  if (s->ties == SIM_TIES_ID || n == 0) return TN_OK;
  tn_status_t st = tn_calloc(n, sizeof *s->hop_rank, &s->hop_rank, err);
  if (st != TN_OK) return st;
  for (uint32_t l = 0; l < n; l++)
    s->hop_rank[l] = s->ties == SIM_TIES_REVERSE ? n - 1 - l : l;
  uint64_t x = s->seed;
  for (uint32_t i = n - 1; s->ties == SIM_TIES_RANDOM && i > 0; i--) {
    x = mix64(x + 0x9E3779B97F4A7C15ull);
    uint32_t j = (uint32_t)(x % (i + 1u)), tmp = s->hop_rank[i];
    s->hop_rank[i] = s->hop_rank[j];
    s->hop_rank[j] = tmp;
  }
  ten_engine_set_hop_order(s->e, s->hop_rank);
  return TN_OK;
}

static void complete(sim_t *s, uint32_t g, uint64_t now) {
  snode_t *n = &s->nodes[g];
  n->state = ST_DONE;
  s->ndone++;
  if (now > s->finish[n->rank]) s->finish[n->rank] = now;
  if (s->trace && !s->trace_links_only)
    sim_i_trace_node(s->trace, n->rank, g - s->rank_off[n->rank], s->issue_ps[g], now);
  for (uint32_t k = n->succ_off; k < n[1].succ_off; k++)
    if (--s->nodes[s->succ[k]].pending == 0) ready_push(s, s->succ[k]);
}

/* A message (SEND node g) reached its destination: the SEND is done, and the oldest
 * posted RECV of its key takes it, or it waits for one. */
static void deliver(sim_t *s, uint32_t g, uint64_t now) {
  complete(s, g, now);
  if (s->nodes[g].paired) { /* its RECV takes it now if posted, else when posted */
    uint32_t rv = s->nodes[g].qnext;
    if (s->nodes[rv].state == ST_ISSUED) complete(s, rv, now);
    return;
  }
  keyq_t *q = &s->kq[s->nodes[g].keyid];
  if (q->recv_head != NONE) {
    uint32_t rv = q->recv_head;
    q->recv_head = s->nodes[rv].qnext;
    if (q->recv_head == NONE) q->recv_tail = NONE;
    complete(s, rv, now);
    return;
  }
  s->nodes[g].qnext = NONE;
  if (q->msg_tail == NONE)
    q->msg_head = g;
  else
    s->nodes[q->msg_tail].qnext = g;
  q->msg_tail = g;
}

static tn_status_t issue(sim_t *s, uint32_t g, uint64_t now, tn_err_t *err) {
  snode_t *n = &s->nodes[g];
  n->state = ST_ISSUED;
  if (s->issue_ps) s->issue_ps[g] = now;
  if (n->op == ALGO_SEND) return ten_send(s->e, n->rank, n->peer, n->arg, g, err);
  if (n->op == ALGO_COMP) {
    s->timers++;
    return ten_timer(s->e, n->arg, g, err);
  }
  if (n->paired) { /* a delivered SEND is done: its message is here */
    if (s->nodes[n->qnext].state == ST_DONE) complete(s, g, now);
    return TN_OK;
  }
  keyq_t *q = &s->kq[n->keyid];
  if (q->msg_head != NONE) {
    uint32_t m = q->msg_head;
    q->msg_head = s->nodes[m].qnext;
    if (q->msg_head == NONE) q->msg_tail = NONE;
    complete(s, g, now);
    return TN_OK;
  }
  n->qnext = NONE;
  if (q->recv_tail == NONE)
    q->recv_head = g;
  else
    s->nodes[q->recv_tail].qnext = g;
  q->recv_tail = g;
  return TN_OK;
}

/* Issues every ready node in ascending global index, i.e. rank by rank in ascending id;
 * a RECV that completes at once may make lower ids of its rank ready, which then go
 * next. */
static tn_status_t issue_ready(sim_t *s, uint64_t now, tn_err_t *err) {
  while (s->nready > 0) {
    tn_status_t st = issue(s, ready_pop(s), now, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* The first instant: the nodes without dependencies, in ascending index (a sorted run,
 * merged with the heap that collects the nodes they make ready), so a set whose nodes
 * are mostly ready at once (Direct) does not pass them all through the heap. */
static tn_status_t issue_initial(sim_t *s, const uint32_t *run, uint32_t n, tn_err_t *err) {
  uint32_t i = 0;
  while (i < n || s->nready > 0) {
    uint32_t g;
    if (s->nready > 0 && (i == n || s->ready[0] < run[i]))
      g = ready_pop(s);
    else
      g = run[i++];
    tn_status_t st = issue(s, g, 0, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* After the queue ran dry with nodes left: some RECV is posted and waits for a message
 * whose SEND never becomes ready (counts are balanced, so that SEND exists). */
static tn_status_t report_stuck(const sim_t *s, tn_err_t *err) {
  const snode_t *nodes = s->nodes;
  for (uint32_t g = 0; g < s->total; g++) {
    if (nodes[g].state != ST_ISSUED || nodes[g].op != ALGO_RECV) continue;
    const msg_key_t *k = &s->keys[nodes[g].keyid];
    uint32_t r = nodes[g].rank, src = k->src, j = NONE;
    for (uint32_t h = s->rank_off[src]; h < s->rank_off[src + 1] && j == NONE; h++)
      if (nodes[h].state == ST_WAIT && nodes[h].op == ALGO_SEND && nodes[h].keyid == nodes[g].keyid)
        j = h - s->rank_off[src];
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %u: deadlock: RECV from rank %u (tag %d, %" PRIu64
                      " bytes) waits for rank %u node %u, a SEND that never becomes ready",
                      r, g - s->rank_off[r], src, k->tag, k->bytes, src, j);
  }
  for (uint32_t g = 0; g < s->total; g++)
    if (nodes[g].state != ST_DONE)
      return tn_err_set(err, TN_INTERNAL, "rank %u node %u: never completed", nodes[g].rank,
                        g - s->rank_off[nodes[g].rank]);
  return TN_OK;
}

static tn_status_t run(sim_t *s, tn_err_t *err) {
  uint32_t *run = NULL, n = 0;
  tn_status_t st = tn_calloc(s->total + 1u, sizeof *run, &run, err);
  if (st != TN_OK) return st;
  for (uint32_t g = 0; g < s->total; g++)
    if (s->nodes[g].pending == 0) run[n++] = g;
  if (s->ties == SIM_TIES_ID) {
    st = issue_initial(s, run, n, err);
  } else {
    for (uint32_t i = 0; i < n; i++)
      ready_push(s, run[i]);
    st = issue_ready(s, 0, err);
  }
  free(run);
  ten_event_t ev;
  while (st == TN_OK && ten_next(s->e, &ev)) {
    if (s->stop_after_ps != 0 && ev.time_ps > s->stop_after_ps) {
      s->stopped_ps = ev.time_ps;
      return TN_OK;
    }
    uint32_t g = (uint32_t)ev.cookie;
    if (ev.kind == TEN_EV_DELIVER)
      deliver(s, g, ev.time_ps);
    else
      complete(s, g, ev.time_ps);
    /* Hops of an instant come out of the queue before its deliveries and timers, so a
     * later time here means the instant is fully drained. */
    if (ten_peek_time(s->e) != ev.time_ps) st = issue_ready(s, ev.time_ps, err);
  }
  if (st == TN_OK) st = ten_engine_status(s->e, err);
  if (st == TN_OK && s->ndone < s->total) st = report_stuck(s, err);
  return st;
}

/* Sorts u[0..n) by busy time, descending, keeping id order among equals (u arrives in
 * id order): the common radix order on the complemented busy times. */
static tn_status_t sort_link_use(sim_link_use_t *u, uint32_t n, tn_err_t *err) {
  uint64_t *key = NULL;
  uint32_t *order = NULL;
  sim_link_use_t *tmp = NULL;
  tn_status_t st = tn_malloc((size_t)n + 1, sizeof *key, &key, err);
  if (st == TN_OK) st = tn_malloc((size_t)n + 1, sizeof *order, &order, err);
  if (st == TN_OK) st = tn_malloc((size_t)n + 1, sizeof *tmp, &tmp, err);
  for (uint32_t i = 0; st == TN_OK && i < n; i++)
    key[i] = ~u[i].busy_ps;
  if (st == TN_OK) st = tn_radix_order(key, n, order, err);
  if (st == TN_OK) {
    for (uint32_t i = 0; i < n; i++)
      tmp[i] = u[order[i]];
    memcpy(u, tmp, (size_t)n * sizeof *u);
  }
  free(key);
  free(order);
  free(tmp);
  return st;
}

static tn_status_t fill_result(const sim_t *s, sim_result_t *res, tn_err_t *err) {
  const topo_t *t = s->t;
  tn_status_t st;
  if ((st = tn_calloc(s->a->npus, sizeof *res->npu_finish_ps, &res->npu_finish_ps, err)) != TN_OK ||
      (st = tn_calloc(t->nlinks + 1u, sizeof *res->links, &res->links, err)) != TN_OK)
    return st;
  res->npus = s->a->npus;
  res->nlinks = t->nlinks;
  for (uint32_t r = 0; r < s->a->npus; r++) {
    res->npu_finish_ps[r] = s->finish[r];
    if (s->finish[r] > res->time_ps) res->time_ps = s->finish[r];
  }
  uint64_t xmits = 0;
  for (uint32_t l = 0; l < t->nlinks; l++) {
    const ten_link_stats_t *ls = ten_link_stats(s->e, l);
    res->links[l] = (sim_link_use_t){l, ls->bytes, ls->busy_ps, ls->messages};
    xmits += ls->messages;
  }
  if (t->nlinks > 0 && (st = sort_link_use(res->links, t->nlinks, err)) != TN_OK) return st;
  res->messages = s->sends;
  res->events = xmits + s->timers; /* every transmission ends in one queue event */
  if (s->stopped_ps != 0) res->stopped = true, res->time_ps = s->stopped_ps;
  return TN_OK;
}

static void sim_free(sim_t *s) {
  free(s->rank_off);
  free(s->nodes);
  free(s->succ);
  free(s->issue_ps);
  free(s->keys);
  free(s->kq);
  free(s->ready);
  free(s->finish);
  free(s->hop_rank);
  ten_engine_free(s->e);
  topo_routes_free(s->routes);
  sim_i_trace_free(s->trace);
}

tn_status_t sim_run(const topo_t *t, const algo_t *a, const sim_opts_t *opts, sim_result_t *res,
                    tn_err_t *err) {
  memset(res, 0, sizeof *res);
  sim_t s = {.t = t, .a = a};
  if (opts)
    s.ties = opts->ties, s.seed = opts->seed, s.on_tie = opts->on_tie, s.tie_ctx = opts->tie_ctx,
    s.stop_after_ps = opts->stop_after_ps, s.threads = opts->threads;
  s.ready_less = ready_order(&s);
  tn_status_t st = validate(&s, err);
  if (st != TN_OK) goto fail;
  if ((st = topo_routes_create(t, &s.routes, err)) != TN_OK ||
      (st = ten_engine_create(t, s.routes, &s.e, err)) != TN_OK ||
      (st = set_hop_order(&s, err)) != TN_OK)
    goto fail;
  if (s.on_tie) ten_engine_set_tie_observer(s.e, on_engine_tie, &s, opts->tie_window_ps);
  if (opts && opts->quantum_ps) ten_engine_set_quantum(s.e, opts->quantum_ps);
  if (opts && opts->trace_path) {
    if ((st = sim_i_trace_create(t, a, &s.trace, err)) != TN_OK ||
        (st = tn_calloc(s.total + 1u, sizeof *s.issue_ps, &s.issue_ps, err)) != TN_OK)
      goto fail;
    ten_engine_set_observer(s.e, sim_i_trace_xmit, s.trace);
    s.trace_links_only = opts->trace_links_only;
  }
  if ((st = run(&s, err)) != TN_OK || (st = fill_result(&s, res, err)) != TN_OK) goto fail;
  if (s.trace && (st = sim_i_trace_write(s.trace, opts->trace_path, s.rank_off, err)) != TN_OK)
    goto fail;
  sim_free(&s);
  return TN_OK;
fail:
  sim_free(&s);
  sim_result_free(res);
  memset(res, 0, sizeof *res);
  return st;
}
