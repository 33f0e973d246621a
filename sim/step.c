/* sim/step.c — a whole training step on the shared network (docs/workload.md): every rank's
 * workload DAG runs as ASTRA-sim's workload layer runs it, and each collective expands into
 * its algorithm's SENDs, RECVs and COMPs on ten/'s engine, so that collectives, point-to-
 * point messages and compute of one step contend for the same links. Pipeline:
 * (algo, workload) → sim → cli.
 *
 * The rules, those of ASTRA-sim's Workload and HardwareResource:
 * - A rank runs at most one GPU COMP, one CPU COMP (is_cpu_op) and one communication (a
 *   COLL, a SEND or a NOP) at a time; RECVs are not limited. Among the nodes whose
 *   dependencies are done, the lowest id of each kind goes first.
 * - A COMP takes duration_micros (0 costs 1 ns). A BROADCAST replays its duration_micros.
 * - A COLL on rank r starts its algorithm's rank-r nodes (they run as sim.c runs a set:
 *   ready nodes issued at once, eager sends) and is done when the last of them is.
 * - A SEND is done when its message has arrived; a RECV when its message is there. Every
 *   message (the workload's and the algorithms') pairs FIFO per (source, destination, tag,
 *   size), as in sim.c and in ASTRA-sim, which matches messages by tag alone.
 * - Events of one instant are drained first; then the nodes made ready are issued, in
 *   ascending (rank, id) order, as in sim.c. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_internal.h"
#include "ten/ten.h"

#define NONE UINT32_MAX
#define PAIRED (UINT32_MAX - 1) /* keyid of a SEND and a RECV alone on their key */
#define COMP_ZERO_PS 1000u

enum { X_COMP, X_SEND, X_RECV, X_COLL, X_BCAST, X_NOP };
enum { R_GPU, R_CPU, R_COMM, R_NCLASS, R_FREE = R_NCLASS, R_INNER };
enum { ST_WAIT, ST_ISSUED, ST_DONE };

typedef struct xnode {
  uint64_t arg;      /* SEND: bytes; COMP, BCAST: duration in ps */
  uint32_t pending;  /* dependencies not yet done (an algorithm's root: its COLL's start) */
  uint32_t succ_off; /* successors: succ[succ_off .. next node's succ_off) */
  uint32_t keyid, qnext;
  uint32_t inst; /* COLL: its instance; an algorithm's node: the instance it runs in */
  uint32_t rank, peer;
  int32_t tag;
  uint8_t op, cls, state;
  bool root; /* an algorithm node without dependencies: it waits for its COLL only */
} xnode_t;

/* One collective on one rank: the COLL node and its algorithm's rank-r nodes. */
typedef struct inst {
  uint32_t coll, wnode;  /* the collective (index into cs), the COLL's global index */
  uint32_t first, count; /* its algorithm nodes: global first .. first + count */
  uint32_t left;         /* not yet done */
} inst_t;

typedef struct key {
  uint32_t src, dst;
  int32_t tag;
  uint64_t bytes;
} key_t;

typedef struct keyq {
  uint32_t msg_head, msg_tail, recv_head, recv_tail;
} keyq_t;

/* A collective run apart (see "running a collective apart" below): what the step's own
 * rules give its algorithm when every rank issues its COLL at instant 0 of an idle
 * network and nothing else happens, with its times relative to that instant (recorded
 * from a collective of the step that ran so). */
typedef struct xrec {
  uint64_t enq, start; /* the message entered the link's queue; its transmission began */
  uint32_t link, node; /* node: the SEND (index among the collective's algorithm nodes) */
} xrec_t;

typedef struct profile {
  const algo_t *a; /* the key: the algorithm and its collective's ranks */
  const uint32_t *ranks;
  uint32_t nranks;
  bool ok;                      /* recorded to the end: usable */
  bool alone;                   /* profile_alone tried */
  uint32_t nodes;               /* the algorithm nodes of every rank, in the step's order */
  uint64_t *issue_ps, *done_ps; /* per node */
  uint64_t *fin_ps;             /* per rank of the collective: its COLL is done */
  uint64_t net_end_ps;          /* the last delivery (0: no message) */
  tn_vec_t x;                   /* xrec_t: every transmission, in the order of entry */
  struct profile *next;
} profile_t;

/* Room for the collectives' nodes, successors and keys: a collective takes a span when it
 * starts in the network (expand) and gives it back when its last instance is done, so a
 * step touches the memory of the collectives running at once rather than of all of them.
 * First fit, lowest offset first; spans are kept in offset order. */
typedef struct span {
  uint64_t at, len;
} span_t;

typedef struct pool {
  span_t *v;
  uint32_t n, cap;
  uint64_t high; /* the highest offset ever used + 1 */
} pool_t;

enum { P_NODE, P_SUCC, P_KEY };

static tn_status_t pool_take(pool_t *p, uint64_t len, uint64_t *at, bool *reused, tn_err_t *err) {
  uint64_t end = 0;
  uint32_t i = 0;
  for (; i < p->n && p->v[i].at - end < len; i++)
    end = p->v[i].at + p->v[i].len;
  if (p->n == p->cap) {
    uint32_t ncap = p->cap ? 2 * p->cap : 16;
    tn_status_t st = tn_realloc(&p->v, p->cap, ncap, sizeof *p->v, err);
    if (st != TN_OK) return st;
    p->cap = ncap;
  }
  memmove(&p->v[i + 1], &p->v[i], (p->n - i) * sizeof *p->v);
  p->v[i] = (span_t){end, len};
  p->n++;
  *reused = end < p->high;
  if (end + len > p->high) p->high = end + len;
  *at = end;
  return TN_OK;
}

static void pool_give(pool_t *p, uint64_t at) {
  uint32_t lo = 0, hi = p->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->v[mid].at < at)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < p->n && p->v[lo].at == at) {
    memmove(&p->v[lo], &p->v[lo + 1], (p->n - lo - 1) * sizeof *p->v);
    p->n--;
  }
}

typedef struct step {
  const topo_t *t;
  const workload_t *w;
  const wl_colls_t *cs;
  const algo_t *const *algos;
  uint32_t npus, total, nwork; /* nodes; the workload's come first, in (rank, id) order */
  uint32_t *wrank_off;         /* npus + 1: workload node i of rank r is wrank_off[r] + i */
  xnode_t *nodes;
  uint32_t *succ;
  inst_t *inst;
  uint32_t ninst;
  keyq_t *kq;
  uint64_t *ready; /* heap of nodes to issue at the current instant: order << 32 | index */
  uint32_t nready;
  uint32_t *wready; /* per rank and class: a heap of workload nodes waiting for it */
  uint32_t *wready_n;
  uint32_t *wready_base; /* offset of (rank, class)'s heap in wready */
  uint8_t *busy;         /* per rank and class */
  uint8_t *dirty;        /* ranks to look at once the instant is drained */
  uint32_t *dirty_list, *dirty_work;
  uint32_t ndirty;
  uint32_t ndone;
  topo_routes_t *routes;
  bool own_routes;
  ten_engine_t *e;
  sim_step_result_t *res;
  /* running collectives apart */
  bool apart;        /* allowed (sim_i_step_apart) */
  uint32_t *started; /* COLL instances issued in the current pass over the ranks */
  uint32_t nstarted;
  uint32_t *pass_count;        /* per collective: its instances among them */
  uint32_t *coll_inst;         /* per collective: its first instance */
  profile_t **prof_of;         /* per collective: its profile (NULL: not made yet) */
  profile_t *profs;            /* every profile made, by algorithm and ranks */
  uint8_t *virt;               /* per instance: running apart, not carried into the network */
  uint32_t vcoll;              /* the collective apart whose messages may be in flight, or NONE */
  uint64_t vstart_ps, vend_ps; /* its start and last delivery */
  uint64_t inflight;           /* messages in the shared network */
  uint32_t napart;             /* collectives run apart (statistics for tests) */
  uint32_t ncarried;           /* of them, carried into the network */
  uint64_t nplaced;
  uint64_t nsent; /* messages put back on their links then */
  /* a profile's run records: */
  uint32_t reck;        /* the collective whose run is being recorded as its profile */
  struct profile *recp; /* that profile */
  uint64_t rec_t0;      /* its start */
  uint32_t rec_base, rec_n, rec_left; /* its first node, nodes, instances not done */
  tn_err_t rec_err;
  struct tmpl *tmpl_list;     /* the algorithms' templates */
  const struct tmpl **coll_T; /* per collective: its template (NULL: none) */
  uint32_t *coll_vbase;       /* its nodes' place in the step's order (order_of) */
  uint32_t *coll_base, *coll_soff, *coll_kbase; /* where its nodes, successors and keys were
                                                   put (expand; NONE: not held) */
  uint32_t *coll_left;                          /* its instances not done */
  pool_t pool[3];                               /* of nodes, successors and keys (P_*) */
  uint32_t node_cap, succ_cap, key_cap;         /* the arrays' room */
  uint32_t wsucc, wkeys;    /* the workload's successors and keys (the pools' spans follow) */
  bool keep;                /* spans are never given back (sim_i_step's SIM_I_STEP_KEEP) */
  uint32_t nreused, ngrown; /* spans taken below a pool's high mark; arrays grown */
  uint8_t *expanded;        /* its nodes were copied in */
  uint8_t *shared;          /* another collective runs its algorithm */
  bool record_all;          /* profile_alone's step: record its one collective */
  const sim_alone_t *known; /* sim_step_opts_t's */
  bool learn;
  uint32_t ngiven, ndetailed; /* profiles made from known; of them, run alone after all */
  uint64_t messages;        /* SENDs */
  struct tmpl **tmpls;      /* &tmpl_list, or a profile's parent's */
} step_t;

#define APART_COOKIE (1ull << 63) /* a timer: instance (low bits) of a collective apart */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static bool index_less(const void *ctx, uint32_t a, uint32_t b) {
  (void)ctx;
  return a < b;
}

static int u32_cmp(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

static void rec_issue(step_t *s, uint32_t g, uint64_t now);
static void rec_done(step_t *s, uint32_t g, uint64_t now);
static void rec_fin(step_t *s, uint32_t ki, uint64_t now);

static void mark_dirty(step_t *s, uint32_t r) {
  if (!s->dirty[r]) s->dirty[r] = 1, s->dirty_list[s->ndirty++] = r;
}

/* The ready heap issues nodes in the step's order: the workload's in (rank, id) order,
 * then each collective's algorithm nodes in collective order, rank by rank, as if every
 * collective's nodes followed the workload's in one array (whatever span holds them). */
static void ready_push(step_t *s, uint32_t g) {
  const xnode_t *n = &s->nodes[g];
  uint64_t order = g;
  if (n->cls == R_INNER) {
    uint32_t k = s->inst[n->inst].coll;
    order = (uint64_t)s->coll_vbase[k] + (g - s->coll_base[k]);
  }
  uint64_t v = order << 32 | g, *h = s->ready;
  uint32_t i = s->nready++;
  while (i > 0 && v < h[(i - 1) / 2]) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = v;
}

static uint32_t ready_pop(step_t *s) {
  uint64_t *h = s->ready, top = h[0], last = h[--s->nready];
  uint32_t m = s->nready, i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && h[c + 1] < h[c]) c++;
    if (last <= h[c]) break;
    h[i] = h[c];
    i = c;
  }
  if (m > 0) h[i] = last;
  return (uint32_t)top;
}

/* A node's dependencies are done: an algorithm node (or a RECV, which nothing limits)
 * is issued this instant; a workload node waits for its kind's resource. */
static void make_ready(step_t *s, uint32_t g) {
  xnode_t *n = &s->nodes[g];
  if (n->cls == R_INNER || n->cls == R_FREE) {
    ready_push(s, g);
    return;
  }
  uint32_t q = n->rank * R_NCLASS + n->cls;
  tn_heap_push(s->wready + s->wready_base[q], &s->wready_n[q], g, index_less, NULL);
  mark_dirty(s, n->rank);
}

static void complete(step_t *s, uint32_t g, uint64_t now);

static void release(step_t *s, uint32_t k);

/* The last node of an instance is done: so is its COLL. */
static void inst_done(step_t *s, uint32_t k, uint64_t now) {
  inst_t *in = &s->inst[k];
  if (s->reck == in->coll) rec_fin(s, k, now);
  uint64_t *end = &s->res->coll_end_ps[in->coll];
  if (now > *end) *end = now;
  if (--s->coll_left[in->coll] == 0) release(s, in->coll);
  complete(s, in->wnode, now);
}

static void complete(step_t *s, uint32_t g, uint64_t now) {
  xnode_t *n = &s->nodes[g];
  n->state = ST_DONE;
  if (s->reck != NONE && g - s->rec_base < s->rec_n) rec_done(s, g, now);
  s->ndone++;
  if (now > s->res->finish_ps[n->rank]) s->res->finish_ps[n->rank] = now;
  if (n->op == X_BCAST) {
    uint64_t *end = &s->res->coll_end_ps[s->inst[n->inst].coll];
    if (now > *end) *end = now;
  }
  if (n->cls < R_NCLASS) {
    s->busy[n->rank * R_NCLASS + n->cls] = 0;
    mark_dirty(s, n->rank);
  }
  for (uint32_t k = n->succ_off; k < n[1].succ_off; k++)
    if (--s->nodes[s->succ[k]].pending == 0) make_ready(s, s->succ[k]);
  if (n->cls == R_INNER && --s->inst[n->inst].left == 0) inst_done(s, n->inst, now);
}

static void deliver(step_t *s, uint32_t g, uint64_t now) {
  complete(s, g, now);
  if (s->nodes[g].keyid == PAIRED) { /* its RECV takes it if posted, else finds it done */
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

static tn_status_t carry_in(step_t *s, uint64_t now, tn_err_t *err);

static tn_status_t issue(step_t *s, uint32_t g, uint64_t now, tn_err_t *err) {
  xnode_t *n = &s->nodes[g];
  n->state = ST_ISSUED;
  if (s->reck != NONE) rec_issue(s, g, now);
  if (n->cls < R_NCLASS) s->busy[n->rank * R_NCLASS + n->cls] = 1;
  switch (n->op) {
  case X_SEND: {
    tn_status_t st;
    if (s->vcoll != NONE && now < s->vend_ps) {
      if ((st = carry_in(s, now, err)) != TN_OK) return st;
      n = &s->nodes[g]; /* the nodes may have moved (expand) */
    }
    s->inflight++;
    s->nsent++;
    return ten_send(s->e, n->rank, n->peer, n->arg, g, err);
  }
  case X_BCAST: {
    uint64_t *start = &s->res->coll_start_ps[s->inst[n->inst].coll];
    if (*start == UINT64_MAX || now < *start) *start = now;
    return ten_timer(s->e, n->arg, g, err);
  }
  case X_COMP:
    if (n->cls == R_GPU) s->res->compute_ps[n->rank] += n->arg;
    return ten_timer(s->e, n->arg, g, err);
  case X_NOP: complete(s, g, now); return TN_OK;
  case X_COLL: {
    inst_t *in = &s->inst[n->inst];
    uint64_t *start = &s->res->coll_start_ps[in->coll];
    if (*start == UINT64_MAX || now < *start) *start = now;
    if (in->count == 0) inst_done(s, n->inst, now);
    /* Its algorithm starts (or runs apart) once this pass over the ranks is done. */
    s->started[s->nstarted++] = n->inst;
    return TN_OK;
  }
  default: break;
  }
  if (n->keyid == PAIRED) { /* X_RECV whose one SEND is done once its message arrived */
    if (s->nodes[n->qnext].state == ST_DONE) complete(s, g, now);
    return TN_OK;
  }
  keyq_t *q = &s->kq[n->keyid]; /* X_RECV */
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

static tn_status_t start_colls(step_t *s, uint64_t now, tn_err_t *err);

/* Issues what the instant made ready, until nothing more is: algorithm nodes and RECVs
 * at once, and per rank the lowest waiting node of every free resource. Issuing may
 * complete nodes at once (a RECV whose message is there, a NOP), hence the loop. */
static tn_status_t issue_ready(step_t *s, uint64_t now, tn_err_t *err) {
  tn_status_t st = TN_OK;
  while (st == TN_OK && (s->nready > 0 || s->ndirty > 0)) {
    while (st == TN_OK && s->nready > 0)
      st = issue(s, ready_pop(s), now, err);
    /* The ranks in ascending order, as sim.c issues (rank, id); ranks made dirty on the
     * way wait for the next pass. */
    uint32_t m = s->ndirty;
    if (st != TN_OK || m == 0) continue;
    memcpy(s->dirty_work, s->dirty_list, m * sizeof *s->dirty_work);
    s->ndirty = 0;
    if (m > 1) qsort(s->dirty_work, m, sizeof *s->dirty_work, u32_cmp);
    for (uint32_t i = 0; i < m && st == TN_OK; i++) {
      uint32_t r = s->dirty_work[i];
      s->dirty[r] = 0;
      for (uint32_t c = 0; st == TN_OK && c < R_NCLASS; c++) {
        uint32_t q = r * R_NCLASS + c;
        if (s->busy[q] || s->wready_n[q] == 0) continue;
        st = issue(s, tn_heap_pop(s->wready + s->wready_base[q], &s->wready_n[q], index_less, NULL),
                   now, err);
      }
    }
    if (st == TN_OK && s->nstarted > 0) st = start_colls(s, now, err);
  }
  return st;
}

/* ---- building the expanded graph ------------------------------------------------ */

/* Matching keys: (source, destination, tag, size) numbered in first-seen order by an
 * open-addressing table. */
typedef struct keymap {
  key_t *keys;
  uint64_t *hash;
  uint32_t *val; /* 1-based key ids; 0: empty */
  size_t cap;
  uint32_t n;
} keymap_t;

static tn_status_t keymap_init(keymap_t *m, uint64_t msgs, tn_err_t *err) {
  memset(m, 0, sizeof *m);
  m->cap = 16;
  while (m->cap < 2 * msgs + 2)
    m->cap <<= 1;
  tn_status_t st = tn_malloc(msgs + 1, sizeof *m->keys, &m->keys, err);
  if (st == TN_OK) st = tn_malloc(m->cap, sizeof *m->hash, &m->hash, err);
  if (st == TN_OK) st = tn_calloc(m->cap, sizeof *m->val, &m->val, err);
  return st;
}

static void keymap_free(keymap_t *m) {
  free(m->keys);
  free(m->hash);
  free(m->val);
}

static uint32_t key_of(keymap_t *m, uint32_t src, uint32_t dst, int32_t tag, uint64_t bytes) {
  uint64_t h = mix64(mix64(((uint64_t)src << 32 | dst) ^ mix64((uint64_t)(uint32_t)tag)) ^ bytes);
  size_t pos = h & (m->cap - 1);
  while (m->val[pos] != 0) {
    const key_t *k = &m->keys[m->val[pos] - 1];
    if (m->hash[pos] == h && k->src == src && k->dst == dst && k->tag == tag && k->bytes == bytes)
      return m->val[pos] - 1;
    pos = (pos + 1) & (m->cap - 1);
  }
  m->hash[pos] = h;
  m->val[pos] = m->n + 1;
  m->keys[m->n] = (key_t){src, dst, tag, bytes};
  return m->n++;
}

/* What a template keeps per node beyond the algorithm's own node: its first successor and
 * its key, local (expand reads the rest from the algorithm). */
typedef struct tnode {
  uint32_t succ_off, keyid, qnext; /* keyid NONE, PAIRED (qnext the partner) or a key */
} tnode_t;

/* An algorithm's nodes as the step lays them out, made once however many collectives run
 * it: a collective's algorithm nodes are its template's, rank by rank (the ranks without a
 * node are the ones outside it), shifted by the collective's first node; its messages pair
 * among themselves, so their keys are the template's, shifted by the collective's key base,
 * and a key with one SEND and one RECV pairs them for good (see pair_unique). */
typedef struct tmpl {
  const algo_t *a;
  uint32_t n;         /* nodes */
  uint32_t *rank_off; /* npus + 1: node i of rank r is rank_off[r] + i */
  tnode_t *nodes;     /* n + 1 (a sentinel holding nsucc) */
  uint32_t *succ;     /* local indices */
  uint32_t nsucc, nkeys, nsends;
  bool paired; /* every SEND and RECV alone on its key */
  struct tmpl *next;
  tn_status_t st; /* tmpl_fill's, when made side by side (make_tmpls) */
  tn_err_t err;
} tmpl_t;

static void tmpl_free(tmpl_t *t) {
  while (t) {
    tmpl_t *n = t->next;
    free(t->rank_off);
    free(t->nodes);
    free(t->succ);
    free(t);
    t = n;
  }
}

/* Node i of rank r of an algorithm as the step runs it: every field but inst, succ_off,
 * keyid and qnext, which the template gives. */
static void algo_xnode(const algo_node_t *y, uint32_t r, xnode_t *n) {
  *n = (xnode_t){0};
  n->rank = r;
  n->cls = R_INNER;
  n->root = y->ndeps == 0;
  n->pending = n->root ? 1 : y->ndeps; /* a root waits for its COLL */
  n->op = y->op == ALGO_SEND ? X_SEND : y->op == ALGO_RECV ? X_RECV : X_COMP;
  if (y->op == ALGO_COMP) {
    n->arg = y->duration_us ? y->duration_us * 1000000u : COMP_ZERO_PS;
  } else {
    n->peer = (uint32_t)y->peer;
    n->tag = y->tag;
    n->arg = y->bytes;
  }
}

static tn_status_t tmpl_fill(tmpl_t *T, tn_err_t *err) {
  const algo_t *a = T->a;
  uint64_t nodes = 0, msgs = 0, edges = 0;
  for (uint32_t r = 0; r < a->npus; r++) {
    nodes += algo_rank_len(a, r);
    edges += a->ranks[r].deps.len;
  }
  if (nodes >= UINT32_MAX - 2 || edges >= UINT32_MAX - 2)
    return tn_err_set(err, TN_LIMIT, "an algorithm of %" PRIu64 " nodes, above 2^32", nodes);
  T->n = (uint32_t)nodes;
  uint32_t *fill = NULL;
  keyq_t *kq = NULL;
  keymap_t m = {0};
  tn_status_t st;
  if ((st = tn_calloc((size_t)a->npus + 1, sizeof *T->rank_off, &T->rank_off, err)) != TN_OK ||
      (st = tn_calloc(nodes + 1, sizeof *T->nodes, &T->nodes, err)) != TN_OK ||
      (st = tn_malloc(edges + 1, sizeof *T->succ, &T->succ, err)) != TN_OK ||
      (st = tn_malloc(nodes + 1, sizeof *fill, &fill, err)) != TN_OK)
    goto out;
  for (uint32_t r = 0; r < a->npus; r++) {
    T->rank_off[r + 1] = T->rank_off[r] + (uint32_t)algo_rank_len(a, r);
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      msgs += algo_node(a, r, i)->op != ALGO_COMP;
  }
  if ((st = keymap_init(&m, msgs, err)) != TN_OK) goto out;
  tnode_t *N = T->nodes;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *y = algo_node(a, r, i);
      tnode_t *n = &N[T->rank_off[r] + i];
      n->keyid = NONE;
      if (y->op != ALGO_COMP) {
        uint32_t peer = (uint32_t)y->peer;
        n->keyid = y->op == ALGO_SEND ? key_of(&m, r, peer, y->tag, y->bytes)
                                      : key_of(&m, peer, r, y->tag, y->bytes);
        T->nsends += y->op == ALGO_SEND;
      }
      const uint32_t *d = algo_node_deps(a, r, y);
      for (uint32_t j = 0; j < y->ndeps; j++)
        N[T->rank_off[r] + d[j]].succ_off++; /* count successors first */
    }
  T->nkeys = m.n;
  uint32_t off = 0;
  for (uint32_t h = 0; h <= T->n; h++) {
    uint32_t c = h < T->n ? N[h].succ_off : 0;
    N[h].succ_off = off;
    if (h < T->n) fill[h] = off;
    off += c;
  }
  T->nsucc = off;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *y = algo_node(a, r, i);
      const uint32_t *d = algo_node_deps(a, r, y);
      for (uint32_t j = 0; j < y->ndeps; j++)
        T->succ[fill[T->rank_off[r] + d[j]]++] = T->rank_off[r] + i;
    }
  /* Keys with one SEND and one RECV: each holds the other (local) in qnext. */
  if ((st = tn_malloc((size_t)T->nkeys + 1, sizeof *kq, &kq, err)) != TN_OK) goto out;
  for (uint32_t q = 0; q < T->nkeys; q++)
    kq[q] = (keyq_t){0, NONE, 0, NONE};
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0, g = T->rank_off[r]; i < algo_rank_len(a, r); i++, g++) {
      if (N[g].keyid == NONE) continue;
      keyq_t *q = &kq[N[g].keyid];
      if (algo_node(a, r, i)->op == ALGO_SEND)
        q->msg_head++, q->msg_tail = g;
      else
        q->recv_head++, q->recv_tail = g;
    }
  T->paired = true;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0, g = T->rank_off[r]; i < algo_rank_len(a, r); i++, g++) {
      if (N[g].keyid == NONE) continue;
      const keyq_t *q = &kq[N[g].keyid];
      if (q->msg_head == 1 && q->recv_head == 1) {
        N[g].qnext = algo_node(a, r, i)->op == ALGO_SEND ? q->recv_tail : q->msg_tail;
        N[g].keyid = PAIRED;
      } else {
        T->paired = false;
      }
    }
out:
  keymap_free(&m);
  free(fill);
  free(kq);
  return st;
}

/* The template of algorithm a (made on first use). */
static tn_status_t tmpl_of(struct tmpl **list, const algo_t *a, const tmpl_t **out, tn_err_t *err) {
  for (tmpl_t *t = *list; t; t = t->next)
    if (t->a == a) return *out = t, TN_OK;
  tmpl_t *t = NULL;
  tn_status_t st = tn_calloc(1, sizeof *t, &t, err);
  if (st != TN_OK) return st;
  t->a = a;
  if ((st = tmpl_fill(t, err)) != TN_OK) {
    tmpl_free(t);
    return st;
  }
  t->next = *list;
  *list = t;
  *out = t;
  return TN_OK;
}

static void fill_item(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  tmpl_t *t = ((tmpl_t **)ctx)[i];
  t->st = tmpl_fill(t, &t->err);
}

/* The templates of the step's algorithms not made yet, made side by side (each on its
 * own, so the same whatever the thread count); a failure is the first algorithm's in
 * collective order, as one after another. */
static tn_status_t make_tmpls(step_t *s, tn_err_t *err) {
  const wl_colls_t *cs = s->cs;
  tmpl_t **fresh = NULL;
  size_t nf = 0;
  tn_status_t st = tn_calloc((size_t)cs->n + 1, sizeof *fresh, &fresh, err);
  for (uint32_t k = 0; k < cs->n && st == TN_OK; k++) {
    const algo_t *a = s->algos[k];
    bool known = a == NULL;
    for (const tmpl_t *t = *s->tmpls; t && !known; t = t->next)
      known = t->a == a;
    for (size_t i = 0; i < nf && !known; i++)
      known = fresh[i]->a == a;
    if (known) continue;
    if ((st = tn_calloc(1, sizeof **fresh, &fresh[nf], err)) == TN_OK) fresh[nf++]->a = a;
  }
  unsigned threads = tn_thread_count();
  if (st == TN_OK && nf > 0)
    tn_parallel_for(nf, threads < nf ? threads : (unsigned)nf, fill_item, fresh);
  for (size_t i = 0; i < nf; i++) {
    tmpl_t *t = fresh[i];
    if (st == TN_OK && t->st != TN_OK) {
      *err = t->err;
      st = t->st;
    }
    if (t->st != TN_OK || st != TN_OK) {
      tmpl_free(t);
      continue;
    }
    t->next = *s->tmpls;
    *s->tmpls = t;
  }
  free(fresh);
  return st;
}

static tn_status_t check_algos(const step_t *s, tn_err_t *err) {
  const wl_colls_t *cs = s->cs;
  for (uint32_t k = 0; k < cs->n; k++) {
    const wl_coll_t *c = &cs->c[k];
    const algo_t *a = s->algos[k];
    if (a == NULL) {
      if (c->comm_type == WL_CT_BROADCAST) continue;
      return tn_err_set(err, TN_INVAL, "collective node %" PRIu64 ": no algorithm", c->id);
    }
    if (a->npus != s->npus)
      return tn_err_set(err, TN_INVAL,
                        "collective node %" PRIu64 ": its algorithm has %u ranks, the step %u",
                        c->id, a->npus, s->npus);
    uint32_t j = 0;
    for (uint32_t r = 0; r < s->npus; r++) {
      bool member = j < c->nranks && c->ranks[j] == r;
      if (member) j++;
      if (!member && algo_rank_len(a, r) > 0)
        return tn_err_set(err, TN_INVAL,
                          "collective node %" PRIu64 ": its algorithm has nodes on rank %u, "
                          "which does not take part",
                          c->id, r);
    }
  }
  return TN_OK;
}

static uint8_t class_of(const wl_node_t *x) {
  if (x->op == WL_RECV) return R_FREE;
  if (x->op == WL_COMP) return x->cpu ? R_CPU : R_GPU;
  return R_COMM;
}

/* A workload key with one SEND and one RECV pairs them for good: each holds the other in
 * qnext and keyid PAIRED, so delivery needs no queue (the algorithms' keys were paired in
 * their templates). The other keys keep their FIFO queues. (kq counts each side first:
 * msg_head the SENDs, recv_head the RECVs, msg_tail and recv_tail the last of each.) */
static void pair_unique(step_t *s, uint32_t wkeys) {
  for (uint32_t k = 0; k < wkeys; k++)
    s->kq[k] = (keyq_t){0, NONE, 0, NONE};
  for (uint32_t g = 0; g < s->nwork; g++) {
    const xnode_t *n = &s->nodes[g];
    if (n->keyid == NONE) continue;
    keyq_t *q = &s->kq[n->keyid];
    if (n->op == X_SEND)
      q->msg_head++, q->msg_tail = g;
    else
      q->recv_head++, q->recv_tail = g;
  }
  for (uint32_t g = 0; g < s->nwork; g++) {
    xnode_t *n = &s->nodes[g];
    if (n->keyid == NONE) continue;
    const keyq_t *q = &s->kq[n->keyid];
    if (q->msg_head == 1 && q->recv_head == 1) {
      n->qnext = n->op == X_SEND ? q->recv_tail : q->msg_tail;
      n->keyid = PAIRED;
    }
  }
  for (uint32_t k = 0; k < wkeys; k++)
    s->kq[k] = (keyq_t){NONE, NONE, NONE, NONE};
}

/* Collective k is done on every rank: nothing refers to its nodes, successors or keys any
 * more (its messages were all delivered, its timers fired), so their spans are free. */
static void release(step_t *s, uint32_t k) {
  if (s->coll_base[k] == NONE || s->keep) return;
  const tmpl_t *T = s->coll_T[k];
  pool_give(&s->pool[P_NODE], s->coll_base[k] - (s->nwork + 1));
  if (T->nsucc > 0) pool_give(&s->pool[P_SUCC], s->coll_soff[k] - s->wsucc);
  if (!T->paired && T->nkeys > 0) pool_give(&s->pool[P_KEY], s->coll_kbase[k] - s->wkeys);
  s->coll_base[k] = NONE;
}

/* A span of len in pool i, whose offsets start at index first of an array of *cap
 * elements of size bytes at *arr (grown when the span ends past it: not zeroed, expand
 * writes every element it takes). The index of its first element in *at. */
static tn_status_t take(step_t *s, int i, uint64_t len, uint64_t first, void *arr, uint32_t *cap,
                        size_t size, uint32_t *at, tn_err_t *err) {
  uint64_t off = 0;
  bool reused = false;
  tn_status_t st = pool_take(&s->pool[i], len, &off, &reused, err);
  if (st != TN_OK) return st;
  s->nreused += reused;
  uint64_t end = first + off + len + (i == P_NODE); /* a sentinel after the nodes */
  if (end >= UINT32_MAX - 2)
    return tn_err_set(err, TN_LIMIT, "the step's running collectives need above 2^32 entries");
  if (end > *cap) {
    uint64_t ncap = 2 * (uint64_t)*cap > end ? 2 * (uint64_t)*cap : end;
    if (ncap >= UINT32_MAX - 2) ncap = end;
    if ((st = tn_realloc(arr, ncap, ncap, size, err)) != TN_OK) return st;
    if (i == P_NODE && (st = tn_realloc(&s->ready, ncap, ncap, sizeof *s->ready, err)) != TN_OK)
      return st;
    *cap = (uint32_t)ncap;
    s->ngrown++;
  }
  *at = (uint32_t)(first + off);
  return TN_OK;
}

/* Copies collective k's nodes, successors and key queues in from its template (once),
 * into spans of the pools. */
static tn_status_t expand(step_t *s, uint32_t k, tn_err_t *err) {
  const tmpl_t *T = s->coll_T[k];
  if (s->expanded[k] || T == NULL || T->n == 0) return TN_OK;
  s->expanded[k] = 1;
  uint32_t base = 0, off = s->wsucc, kbase = s->wkeys;
  tn_status_t st = take(s, P_NODE, (uint64_t)T->n + 1, (uint64_t)s->nwork + 1, &s->nodes,
                        &s->node_cap, sizeof *s->nodes, &base, err);
  if (st == TN_OK && T->nsucc > 0)
    st = take(s, P_SUCC, T->nsucc, s->wsucc, &s->succ, &s->succ_cap, sizeof *s->succ, &off, err);
  if (st == TN_OK && !T->paired && T->nkeys > 0)
    st = take(s, P_KEY, T->nkeys, s->wkeys, &s->kq, &s->key_cap, sizeof *s->kq, &kbase, err);
  if (st != TN_OK) return st;
  s->coll_base[k] = base;
  s->coll_soff[k] = off;
  s->coll_kbase[k] = kbase;
  xnode_t *X = s->nodes + base;
  memset(&X[T->n], 0, sizeof *X);
  X[T->n].succ_off = off + T->nsucc; /* ends the last node's successors */
  const wl_coll_t *c = &s->cs->c[k];
  for (uint32_t q = 0; q < c->nranks; q++) {
    uint32_t ki = s->coll_inst[k] + q, r = c->ranks[q];
    s->inst[ki].first = base + T->rank_off[r];
    for (uint32_t h = T->rank_off[r]; h < T->rank_off[r + 1]; h++) {
      const tnode_t *t = &T->nodes[h];
      xnode_t *x = &X[h];
      algo_xnode(algo_node(T->a, r, h - T->rank_off[r]), r, x);
      x->inst = ki;
      x->succ_off = t->succ_off + off;
      x->keyid = t->keyid;
      if (t->keyid == PAIRED)
        x->qnext = t->qnext + base;
      else if (t->keyid != NONE)
        x->keyid = t->keyid + kbase;
    }
  }
  for (uint32_t e = 0; e < T->nsucc; e++)
    s->succ[off + e] = T->succ[e] + base;
  for (uint32_t q = 0; !T->paired && q < T->nkeys; q++)
    s->kq[kbase + q] = (keyq_t){NONE, NONE, NONE, NONE};
  return TN_OK;
}

/* Numbers every node (the workload's, then each instance's algorithm nodes, copied from
 * their algorithm's template), counts their dependencies and successors, and sets the
 * instances and matching keys. */
static tn_status_t build(step_t *s, tn_err_t *err) {
  const workload_t *w = s->w;
  const wl_colls_t *cs = s->cs;
  tn_status_t st;
  uint64_t total = 0, edges = 0, wedges = 0, msgs = 0, keys = 0;
  uint32_t *fill = NULL;
  const tmpl_t **tk = NULL;
  keymap_t wm = {0};
  if ((st = tn_calloc((size_t)s->npus + 1, sizeof *s->wrank_off, &s->wrank_off, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *tk, &tk, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_T, &s->coll_T, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_base, &s->coll_base, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_vbase, &s->coll_vbase, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_left, &s->coll_left, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_soff, &s->coll_soff, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_kbase, &s->coll_kbase, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, 1, &s->expanded, err)) != TN_OK)
    goto out;
  for (uint32_t r = 0; r < s->npus; r++) {
    s->wrank_off[r + 1] = s->wrank_off[r] + wl_count(w, r);
    wedges += w->ranks[r].deps.len;
    for (uint32_t i = 0; i < wl_count(w, r); i++)
      msgs += wl_node(w, r, i)->op == WL_SEND || wl_node(w, r, i)->op == WL_RECV;
  }
  s->nwork = s->wrank_off[s->npus];
  total = s->nwork;
  edges = wedges;
  s->ninst = 0;
  if ((st = make_tmpls(s, err)) != TN_OK) goto out;
  for (uint32_t k = 0; k < cs->n; k++) {
    s->ninst += cs->c[k].nranks;
    if (s->algos[k] == NULL) continue;
    if ((st = tmpl_of(s->tmpls, s->algos[k], &tk[k], err)) != TN_OK) goto out;
    total += tk[k]->n;
    edges += tk[k]->nsucc;
    keys += tk[k]->nkeys;
  }
  if (total + cs->n >= UINT32_MAX - 4 || edges >= UINT32_MAX - 2 || msgs + keys >= UINT32_MAX - 2) {
    st = tn_err_set(err, TN_LIMIT,
                    "the step expands to %" PRIu64 " nodes, %" PRIu64 " dependencies and %" PRIu64
                    " message keys, above 2^32",
                    total, edges, msgs + keys);
    goto out;
  }
  s->total = (uint32_t)total;
  /* Room for the workload's nodes and a sentinel: the collectives' spans are added as they
   * start (take grows the arrays to what the collectives running at once need). */
  s->node_cap = s->nwork + 2;
  s->succ_cap = (uint32_t)wedges + 1;
  if ((st = keymap_init(&wm, msgs, err)) != TN_OK ||
      (st = tn_malloc(s->node_cap, sizeof *s->nodes, &s->nodes, err)) != TN_OK ||
      (st = tn_malloc(s->succ_cap, sizeof *s->succ, &s->succ, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->ninst + 1, sizeof *s->inst, &s->inst, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->nwork + 1, sizeof *fill, &fill, err)) != TN_OK)
    goto out;
  xnode_t *X = s->nodes;
  memset(X, 0, ((size_t)s->nwork + 1) * sizeof *X);
  /* The workload's nodes. */
  for (uint32_t r = 0; r < s->npus; r++)
    for (uint32_t i = 0; i < wl_count(w, r); i++) {
      const wl_node_t *x = wl_node(w, r, i);
      xnode_t *n = &X[s->wrank_off[r] + i];
      n->rank = r;
      n->cls = class_of(x);
      n->inst = NONE;
      n->keyid = NONE;
      n->pending = x->ndeps;
      switch (x->op) {
      case WL_COMP:
        n->op = X_COMP;
        n->arg = x->duration_us ? x->duration_us * 1000000u : COMP_ZERO_PS;
        break;
      case WL_SEND:
      case WL_RECV:
        n->op = x->op == WL_SEND ? X_SEND : X_RECV;
        n->peer = x->peer;
        n->tag = x->tag;
        n->arg = x->bytes;
        n->keyid = x->op == WL_SEND ? key_of(&wm, r, x->peer, x->tag, x->bytes)
                                    : key_of(&wm, x->peer, r, x->tag, x->bytes);
        break;
      case WL_COLL:
        n->op = cs->of[cs->rank_off[r] + i] != NONE && s->algos[cs->of[cs->rank_off[r] + i]]
                    ? X_COLL
                    : X_BCAST;
        n->arg = x->duration_us ? x->duration_us * 1000000u : COMP_ZERO_PS;
        break;
      default: n->op = X_NOP; break;
      }
      const uint32_t *d = wl_deps(w, r, x);
      for (uint32_t k = 0; k < x->ndeps; k++)
        X[s->wrank_off[r] + d[k]].succ_off++; /* count successors first */
    }
  /* Their successor lists: counts to offsets, then fill. */
  uint32_t off = 0;
  for (uint32_t h = 0; h < s->nwork; h++) {
    uint32_t c = X[h].succ_off;
    X[h].succ_off = off;
    fill[h] = off;
    off += c;
  }
  for (uint32_t r = 0; r < s->npus; r++)
    for (uint32_t i = 0; i < wl_count(w, r); i++) {
      const wl_node_t *x = wl_node(w, r, i);
      const uint32_t *d = wl_deps(w, r, x);
      for (uint32_t k = 0; k < x->ndeps; k++)
        s->succ[fill[s->wrank_off[r] + d[k]]++] = s->wrank_off[r] + i;
    }
  uint32_t wkeys = wm.n;
  for (uint32_t g2 = 0; g2 < s->nwork; g2++)
    s->messages += X[g2].op == X_SEND;
  X[s->nwork].succ_off = off; /* ends the last workload node's successors */
  s->wsucc = off;
  s->wkeys = wkeys;
  /* The instances: each collective's nodes are its template's, placed when it starts
   * (expand); its place in the order is where they would follow the workload's nodes. */
  uint32_t g = s->nwork, ki = 0;
  for (uint32_t k = 0; k < cs->n; k++) {
    const wl_coll_t *c = &cs->c[k];
    const tmpl_t *T = tk[k];
    s->coll_T[k] = T;
    s->coll_vbase[k] = g;
    s->coll_base[k] = NONE;
    s->coll_left[k] = c->nranks;
    for (uint32_t q = 0; q < c->nranks; q++, ki++) {
      uint32_t r = c->ranks[q], wg = s->wrank_off[r] + c->index[q];
      uint32_t cnt = T ? T->rank_off[r + 1] - T->rank_off[r] : 0;
      s->inst[ki] = (inst_t){k, wg, 0, cnt, cnt};
      X[wg].inst = ki;
    }
    if (T == NULL) continue;
    s->messages += T->nsends;
    g += T->n;
  }
  s->key_cap = wkeys + 1;
  if ((st = tn_malloc(s->key_cap, sizeof *s->kq, &s->kq, err)) != TN_OK) goto out;
  pair_unique(s, wkeys);
out:
  keymap_free(&wm);
  free(fill);
  free(tk);
  return st;
}

static tn_status_t alloc_queues(step_t *s, tn_err_t *err) {
  uint32_t nq = s->npus * R_NCLASS;
  tn_status_t st;
  if ((st = tn_malloc(s->node_cap, sizeof *s->ready, &s->ready, err)) != TN_OK ||
      (st = tn_malloc((size_t)s->nwork + 1, sizeof *s->wready, &s->wready, err)) != TN_OK ||
      (st = tn_calloc((size_t)nq + 1, sizeof *s->wready_n, &s->wready_n, err)) != TN_OK ||
      (st = tn_calloc((size_t)nq + 1, sizeof *s->wready_base, &s->wready_base, err)) != TN_OK ||
      (st = tn_calloc((size_t)nq + 1, 1, &s->busy, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->npus + 1, 1, &s->dirty, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->npus + 1, sizeof *s->dirty_list, &s->dirty_list, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->npus + 1, sizeof *s->dirty_work, &s->dirty_work, err)) != TN_OK)
    return st;
  /* Each (rank, class) heap has room for every workload node of that rank and class. */
  for (uint32_t g = 0; g < s->nwork; g++)
    if (s->nodes[g].cls < R_NCLASS)
      s->wready_base[s->nodes[g].rank * R_NCLASS + s->nodes[g].cls + 1]++;
  for (uint32_t q = 1; q < nq; q++)
    s->wready_base[q] += s->wready_base[q - 1];
  return TN_OK;
}

/* After the queue ran dry with nodes left: name a waiting node. */
static tn_status_t report_stuck(const step_t *s, tn_err_t *err) {
  for (uint32_t g = 0; g < s->nwork; g++) {
    const xnode_t *n = &s->nodes[g];
    if (n->state == ST_DONE) continue;
    const wl_node_t *x = wl_node(s->w, n->rank, g - s->wrank_off[n->rank]);
    if (n->state == ST_ISSUED && n->op == X_RECV)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %" PRIu64
                        ": deadlock: its RECV from rank %u (tag %d, %" PRIu64
                        " bytes) never gets its message",
                        n->rank, x->id, n->peer, n->tag, n->arg);
    if (n->state == ST_ISSUED && n->op == X_COLL)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %" PRIu64 ": deadlock: its collective waits for messages "
                        "from ranks that never send them (a rank blocked elsewhere)",
                        n->rank, x->id);
  }
  for (uint32_t g = 0; g < s->nwork; g++)
    if (s->nodes[g].state != ST_DONE) {
      uint32_t r = s->nodes[g].rank;
      return tn_err_set(err, TN_PARSE, "rank %u node %" PRIu64 ": deadlock: never starts", r,
                        wl_node(s->w, r, g - s->wrank_off[r])->id);
    }
  return tn_err_set(err, TN_INTERNAL, "the step stopped with nodes left");
}

/* ---- running a collective apart ------------------------------------------------------
 * Most of a step's collectives run on a network nothing else uses while they do, and
 * many collectives share one algorithm: the step runs such a collective apart, from a
 * profile of its algorithm recorded once (the first collective running it that started on
 * every rank at once and had the network to itself until it was done), and carries it into
 * the shared network only if something else needs the network before its last message is
 * delivered. This is exact:
 * - A collective goes apart only when every rank of it issued its COLL in one pass over
 *   the ranks of one instant T (the profile's start) with no message in the network and
 *   no other collective apart with messages in flight.
 * - While nothing else is in the network its algorithm's nodes interact with the rest of
 *   the step only through their ranks' COLL nodes: its messages, timers and ready nodes
 *   follow from its own (the engine orders the messages of an instant by link and position,
 *   not by when others were sent; sends of one instant on one link come from one rank,
 *   which runs one communication at a time), so each rank's COLL is done at T plus the
 *   profile's time for it.
 * - The first SEND that would enter the network before its last delivery (at instant
 *   t >= T, after t's events were drained) first carries it in: its nodes take the states
 *   the profile gives them after instant t, its COMPs their timers, and each message in
 *   flight is put back on the link it was on, its transmission starting when it did
 *   (ten_place), in the order the messages entered there. The step then goes on exactly as
 *   if the collective had run in the network from T. */

static void profile_free(profile_t *p) {
  free(p->issue_ps);
  free(p->done_ps);
  free(p->fin_ps);
  tn_vec_free(&p->x);
  free(p);
}

/* Collective k's profile, or NULL while none was recorded (shared by the collectives
 * that run the same algorithm on the same ranks). */
static profile_t *profile_find(step_t *s, uint32_t k) {
  const wl_coll_t *c = &s->cs->c[k];
  if (s->prof_of[k] != NULL) return s->prof_of[k];
  for (profile_t *p = s->profs; p; p = p->next)
    if (p->a == s->algos[k] && p->nranks == c->nranks &&
        memcmp(p->ranks, c->ranks, c->nranks * sizeof *c->ranks) == 0)
      return s->prof_of[k] = p;
  return NULL;
}

/* A profile is recorded from the step itself: the first time a collective that others
 * share an algorithm with starts as one that could go apart (every rank in one pass, an
 * idle network, nothing apart), it runs in the network with its nodes' times and its
 * transmissions recorded; if no other SEND enters the network before it is done on every
 * rank, it ran as it would alone and its record is its algorithm's profile (else the record
 * is dropped and the next such start records again). */
static void rec_xmit(void *ctx, uint32_t link, uint64_t start_ps, uint64_t end_ps, uint64_t bytes,
                     uint64_t cookie) {
  (void)end_ps;
  (void)bytes;
  step_t *s = ctx;
  uint32_t l = (uint32_t)cookie - s->rec_base;
  if (l >= s->rec_n) return;
  xrec_t x = {ten_now(s->e) - s->rec_t0, start_ps - s->rec_t0, link, l};
  if (s->rec_err.status == TN_OK) (void)tn_vec_push(&s->recp->x, &x, &s->rec_err);
}

static void rec_stop(step_t *s, bool keep) {
  profile_t *p = s->recp;
  ten_engine_set_observer(s->e, NULL, NULL);
  s->reck = NONE;
  s->recp = NULL;
  if (keep && s->rec_err.status == TN_OK) {
    p->ok = true;
    for (uint32_t l = 0; l < p->nodes; l++)
      if (s->nodes[s->rec_base + l].op == X_SEND && p->done_ps[l] > p->net_end_ps)
        p->net_end_ps = p->done_ps[l];
    p->next = s->profs;
    s->profs = p;
    return;
  }
  /* Kept without its record: the next start runs the algorithm alone (profile_alone). */
  s->rec_err = (tn_err_t){0};
  free(p->issue_ps);
  free(p->done_ps);
  free(p->fin_ps);
  p->issue_ps = p->done_ps = p->fin_ps = NULL;
  tn_vec_free(&p->x);
  tn_vec_init(&p->x, sizeof(xrec_t));
  p->next = s->profs;
  s->profs = p;
}

static void rec_issue(step_t *s, uint32_t g, uint64_t now) {
  if (g - s->rec_base < s->rec_n)
    s->recp->issue_ps[g - s->rec_base] = now - s->rec_t0;
  else if (s->nodes[g].op == X_SEND)
    rec_stop(s, false); /* another message in the network: not a run alone */
}

static void rec_done(step_t *s, uint32_t g, uint64_t now) {
  s->recp->done_ps[g - s->rec_base] = now - s->rec_t0;
}

static void rec_fin(step_t *s, uint32_t ki, uint64_t now) {
  s->recp->fin_ps[ki - s->coll_inst[s->reck]] = now - s->rec_t0;
  if (--s->rec_left == 0) rec_stop(s, true);
}

/* A new profile of collective k's algorithm (its key, node count and zeroed fin_ps), not
 * yet listed. */
static tn_status_t profile_new(step_t *s, uint32_t k, profile_t **out, tn_err_t *err) {
  const wl_coll_t *c = &s->cs->c[k];
  profile_t *p = NULL;
  tn_status_t st = tn_calloc(1, sizeof *p, &p, err);
  if (st != TN_OK) return st;
  tn_vec_init(&p->x, sizeof(xrec_t));
  p->a = s->algos[k];
  p->ranks = c->ranks;
  p->nranks = c->nranks;
  p->nodes = s->coll_T[k]->n;
  if ((st = tn_calloc((size_t)c->nranks + 1, sizeof *p->fin_ps, &p->fin_ps, err)) != TN_OK) {
    profile_free(p);
    p = NULL;
  }
  *out = p;
  return st;
}

/* Starts recording collective k, whose COLLs were all issued in this pass at now. */
static tn_status_t rec_start(step_t *s, uint32_t k, uint64_t now, tn_err_t *err) {
  const tmpl_t *T = s->coll_T[k];
  const wl_coll_t *c = &s->cs->c[k];
  if (T == NULL || T->n == 0 || !T->paired) return TN_OK;
  profile_t *p = NULL;
  tn_status_t st = expand(s, k, err); /* its nodes' place: rec_base */
  if (st == TN_OK) st = profile_new(s, k, &p, err);
  if (st != TN_OK) return st;
  if ((st = tn_malloc(T->n, sizeof *p->issue_ps, &p->issue_ps, err)) != TN_OK ||
      (st = tn_malloc(T->n, sizeof *p->done_ps, &p->done_ps, err)) != TN_OK) {
    profile_free(p);
    return st;
  }
  s->reck = k;
  s->recp = p;
  s->rec_t0 = now;
  s->rec_base = s->coll_base[k];
  s->rec_n = T->n;
  s->rec_left = 0;
  for (uint32_t j = 0; j < c->nranks; j++)
    s->rec_left += s->inst[s->coll_inst[k] + j].count > 0; /* the others are done */
  ten_engine_set_observer(s->e, rec_xmit, s);
  return TN_OK;
}

static tn_status_t step_exec(step_t *s, tn_err_t *err);
static void step_release(step_t *s);

/* Fills p, whose recording in the step was cut short by other traffic, by running
 * collective k alone: a step of its COLLs (NOPs on the other ranks) whose run is recorded
 * as above. TN_NOMEM only: a collective that cannot run alone is left to the network
 * (p->ok stays false), where the step reports what it meets. */
static tn_status_t profile_alone(step_t *s, uint32_t k, profile_t *p, tn_err_t *err) {
  const wl_coll_t *c = &s->cs->c[k];
  workload_t *w = NULL;
  wl_colls_t cs = {0};
  sim_step_result_t res = {0};
  tn_err_t e = {0};
  p->alone = true;
  tn_status_t st = wl_create(s->npus, &w, err);
  for (uint32_t r = 0, j = 0; st == TN_OK && r < s->npus; r++) {
    wl_node_t x = {.id = 0, .op = WL_NOP};
    if (j < c->nranks && c->ranks[j] == r) {
      x = (wl_node_t){
          .id = 1, .op = WL_COLL, .comm_type = c->comm_type, .bytes = c->bytes, .pg = c->pg};
      j++;
    }
    st = wl_add(w, r, &x, NULL, NULL, 0, NULL, err);
  }
  if (st == TN_OK && wl_check(w, &cs, &e) == TN_OK && cs.n == 1 && cs.c[0].nranks == c->nranks) {
    const algo_t *algos[1] = {s->algos[k]};
    step_t q = {.t = s->t,
                .w = w,
                .cs = &cs,
                .algos = algos,
                .npus = s->npus,
                .res = &res,
                .apart = true,
                .record_all = true,
                .routes = s->routes,
                .tmpls = s->tmpls};
    st = step_exec(&q, &e);
    profile_t *qp = q.profs;
    if (st == TN_OK && qp && qp->ok && qp->nodes == s->coll_T[k]->n) {
      p->nodes = qp->nodes;
      p->issue_ps = qp->issue_ps;
      p->done_ps = qp->done_ps;
      p->fin_ps = qp->fin_ps;
      tn_vec_free(&p->x);
      p->x = qp->x;
      p->net_end_ps = qp->net_end_ps;
      p->ok = true;
      qp->issue_ps = qp->done_ps = qp->fin_ps = NULL;
      tn_vec_init(&qp->x, sizeof(xrec_t));
    }
    if (st == TN_NOMEM)
      *err = e;
    else
      st = TN_OK;
    s->nsent += q.nsent; /* (the step's work) */
    step_release(&q);
  }
  sim_step_result_free(&res);
  wl_colls_free(&cs);
  wl_free(w);
  return st;
}

/* A profile of collective k from what the caller gave (sim_step_opts_t.known): its times
 * alone, without its nodes' and transmissions' (profile_detail fills those when needed). */
static tn_status_t profile_given(step_t *s, uint32_t k, profile_t **out, tn_err_t *err) {
  const sim_alone_t *g = &s->known[k];
  const wl_coll_t *c = &s->cs->c[k];
  const tmpl_t *T = s->coll_T[k];
  *out = NULL;
  if (g->nranks != c->nranks)
    return tn_err_set(err, TN_INVAL,
                      "collective node %" PRIu64 ": its run alone was given for %u ranks, not %u",
                      c->id, g->nranks, c->nranks);
  if (T == NULL || T->n == 0 || !T->paired) return TN_OK; /* as rec_start: none */
  profile_t *p = NULL;
  tn_status_t st = profile_new(s, k, &p, err);
  if (st != TN_OK) return st;
  memcpy(p->fin_ps, g->fin_ps, c->nranks * sizeof *p->fin_ps);
  p->net_end_ps = g->net_end_ps;
  p->ok = true;
  p->next = s->profs;
  s->profs = p;
  s->prof_of[k] = p;
  s->ngiven++;
  *out = p;
  return TN_OK;
}

/* Fills in what a given profile of collective k lacks by running it alone, which must
 * take the times given. */
static tn_status_t profile_detail(step_t *s, uint32_t k, profile_t *p, tn_err_t *err) {
  profile_t q = {.a = p->a, .ranks = p->ranks, .nranks = p->nranks};
  tn_vec_init(&q.x, sizeof(xrec_t));
  s->ndetailed++;
  tn_status_t st = profile_alone(s, k, &q, err);
  bool same = st == TN_OK && q.ok && q.nodes == p->nodes && q.net_end_ps == p->net_end_ps &&
              memcmp(q.fin_ps, p->fin_ps, p->nranks * sizeof *p->fin_ps) == 0;
  if (same) {
    p->issue_ps = q.issue_ps;
    p->done_ps = q.done_ps;
    tn_vec_free(&p->x);
    p->x = q.x;
    q.issue_ps = q.done_ps = NULL;
    tn_vec_init(&q.x, sizeof(xrec_t));
  } else if (st == TN_OK) {
    st = tn_err_set(err, TN_INVAL,
                    "collective node %" PRIu64 ": its algorithm's run alone takes other times "
                    "than the ones given for it",
                    s->cs->c[k].id);
  }
  free(q.issue_ps);
  free(q.done_ps);
  free(q.fin_ps);
  tn_vec_free(&q.x);
  return st;
}

/* Collective k's instances were all issued in this pass at now: run it apart. */
static tn_status_t go_apart(step_t *s, uint32_t k, const profile_t *p, uint64_t now,
                            tn_err_t *err) {
  s->vcoll = k;
  s->vstart_ps = now;
  s->vend_ps = now + p->net_end_ps;
  s->napart++;
  for (uint32_t j = 0; j < s->cs->c[k].nranks; j++) {
    uint32_t ki = s->coll_inst[k] + j;
    if (s->inst[ki].count == 0) continue; /* done already */
    s->virt[ki] = 1;
    tn_status_t st = ten_timer(s->e, p->fin_ps[j], APART_COOKIE | ki, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* The COLLs issued in this pass over the ranks start their algorithms: a collective all of
 * whose ranks are among them on an idle network runs apart, the others' root nodes are
 * ready (nothing was issued since their COLLs, so the instant runs as if they had been
 * made ready then). */
static tn_status_t start_colls(step_t *s, uint64_t now, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < s->nstarted; i++)
    s->pass_count[s->inst[s->started[i]].coll]++;
  if (s->vcoll != NONE && now >= s->vend_ps) s->vcoll = NONE;
  for (uint32_t i = 0; i < s->nstarted && st == TN_OK; i++) {
    uint32_t ki = s->started[i], k = s->inst[ki].coll;
    if (s->pass_count[k] == UINT32_MAX) continue; /* apart */
    bool given = s->known && s->known[k].nranks != 0;
    if (s->apart && (s->shared[k] || s->record_all || s->learn || given) &&
        s->pass_count[k] == s->cs->c[k].nranks && s->inflight == 0 && s->vcoll == NONE &&
        s->reck == NONE) {
      profile_t *p = profile_find(s, k);
      uint64_t end = 0;
      if (p == NULL && given && (st = profile_given(s, k, &p, err)) != TN_OK) break;
      if (p && !p->ok && !p->alone && (st = profile_alone(s, k, p, err)) != TN_OK) break;
      if (p && p->ok && tn_time_add(now, p->net_end_ps, &end)) {
        s->pass_count[k] = UINT32_MAX;
        st = go_apart(s, k, p, now, err);
        continue;
      }
      if (p == NULL && (st = rec_start(s, k, now, err)) != TN_OK) break;
    }
    if ((st = expand(s, k, err)) != TN_OK) break;
    const inst_t *in = &s->inst[ki];
    for (uint32_t h = in->first; h < in->first + in->count; h++)
      if (s->nodes[h].root && --s->nodes[h].pending == 0) make_ready(s, h);
  }
  for (uint32_t i = 0; i < s->nstarted; i++)
    s->pass_count[s->inst[s->started[i]].coll] = 0;
  s->nstarted = 0;
  return st;
}

/* The profile's time of instance ki's last node came: its COLL is done. */
static void apart_done(step_t *s, uint32_t ki, uint64_t now) {
  if (!s->virt[ki]) return; /* carried into the network since */
  s->virt[ki] = 0;
  inst_t *in = &s->inst[ki];
  uint32_t r = s->nodes[in->wnode].rank;
  s->ndone += in->count; /* (its nodes were never copied in) */
  in->left = 0;
  if (now > s->res->finish_ps[r]) s->res->finish_ps[r] = now;
  inst_done(s, ki, now);
}

/* Carries the collective apart into the network at now (see above). */
static tn_status_t carry_in(step_t *s, uint64_t now, tn_err_t *err) {
  uint32_t k = s->vcoll, nr = s->cs->c[k].nranks, ki0 = s->coll_inst[k];
  const profile_t *p = s->prof_of[k];
  uint64_t t0 = s->vstart_ps, rel = now - t0;
  uint32_t *cur = NULL;
  tn_status_t st = TN_OK;
  if (p->issue_ps == NULL && (st = profile_detail(s, k, s->prof_of[k], err)) != TN_OK) return st;
  s->vcoll = NONE;
  s->ncarried++;
  st = expand(s, k, err);
  if (st == TN_OK) st = tn_malloc((size_t)p->nodes + 1, sizeof *cur, &cur, err);
  if (st != TN_OK) return st;
  uint32_t g0 = s->coll_base[k];
  xnode_t *X = s->nodes;
  for (uint32_t j = 0; j < nr; j++) {
    inst_t *in = &s->inst[ki0 + j];
    if (!s->virt[ki0 + j]) continue;
    uint32_t r = X[in->wnode].rank;
    for (uint32_t h = in->first; h < in->first + in->count; h++) {
      uint32_t l = h - g0;
      cur[l] = NONE;
      if (X[h].root) X[h].pending = 0; /* its COLL was issued */
      if (p->done_ps[l] <= rel) {
        X[h].state = ST_DONE;
        s->ndone++;
        in->left--;
        if (t0 + p->done_ps[l] > s->res->finish_ps[r]) s->res->finish_ps[r] = t0 + p->done_ps[l];
      } else if (p->issue_ps[l] <= rel) {
        X[h].state = ST_ISSUED;
        if (X[h].op == X_COMP && (st = ten_timer(s->e, t0 + p->done_ps[l] - now, h, err)) != TN_OK)
          goto out;
      }
    }
  }
  /* Dependencies left: the nodes not done wait for those of theirs not done. */
  for (uint32_t j = 0; j < nr; j++) {
    const inst_t *in = &s->inst[ki0 + j];
    if (!s->virt[ki0 + j]) continue;
    for (uint32_t h = in->first; h < in->first + in->count; h++)
      if (X[h].state == ST_DONE)
        for (uint32_t e = X[h].succ_off; e < X[h + 1].succ_off; e++)
          X[s->succ[e]].pending--;
  }
  /* Each message in flight goes back on the link it was on. */
  const xrec_t *x = p->x.data;
  size_t nx = p->x.len, i;
  for (i = 0; i < nx && x[i].enq <= rel; i++)
    cur[x[i].node] = (uint32_t)i;
  for (size_t m = 0; m < i && st == TN_OK; m++) {
    uint32_t h = g0 + x[m].node;
    if (cur[x[m].node] != m || X[h].state != ST_ISSUED || !s->virt[X[h].inst]) continue;
    st = ten_place(s->e, X[h].rank, X[h].peer, x[m].link, X[h].arg, h, t0 + x[m].start, err);
    s->inflight++;
    s->nplaced++;
  }
  for (uint32_t j = 0; j < nr; j++)
    s->virt[ki0 + j] = 0;
out:
  free(cur);
  return st;
}

static tn_status_t run(step_t *s, tn_err_t *err) {
  for (uint32_t g = 0; g < s->nwork; g++)
    if (s->nodes[g].pending == 0) make_ready(s, g);
  tn_status_t st = issue_ready(s, 0, err);
  ten_event_t ev;
  while (st == TN_OK && ten_next(s->e, &ev)) {
    uint32_t g = (uint32_t)ev.cookie;
    if (ev.kind == TEN_EV_DELIVER) {
      s->inflight--;
      deliver(s, g, ev.time_ps);
    } else if (ev.cookie & APART_COOKIE) {
      apart_done(s, g, ev.time_ps);
    } else {
      complete(s, g, ev.time_ps);
    }
    if (ten_peek_time(s->e) != ev.time_ps) st = issue_ready(s, ev.time_ps, err);
  }
  if (st == TN_OK) st = ten_engine_status(s->e, err);
  if (st == TN_OK && s->ndone < s->total) st = report_stuck(s, err);
  return st;
}

void sim_step_result_free(sim_step_result_t *r) {
  if (r == NULL) return;
  for (uint32_t k = 0; r->alone && k < r->ncolls; k++)
    free(r->alone[k].fin_ps);
  free(r->alone);
  free(r->finish_ps);
  free(r->compute_ps);
  free(r->coll_start_ps);
  free(r->coll_end_ps);
  memset(r, 0, sizeof *r);
}

static tn_status_t alloc_apart(step_t *s, tn_err_t *err) {
  const wl_colls_t *cs = s->cs;
  tn_status_t st;
  if ((st = tn_malloc((size_t)s->ninst + 1, sizeof *s->started, &s->started, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->pass_count, &s->pass_count, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->coll_inst, &s->coll_inst, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *s->prof_of, &s->prof_of, err)) != TN_OK ||
      (st = tn_calloc((size_t)s->ninst + 1, 1, &s->virt, err)) != TN_OK)
    return st;
  for (uint32_t k = 0, ki = 0; k < cs->n; k++) {
    s->coll_inst[k] = ki;
    ki += cs->c[k].nranks;
  }
  /* A profile costs about what running its collective in the network does: only the
   * algorithms that several collectives run are worth one. */
  if ((st = tn_calloc((size_t)cs->n + 1, 1, &s->shared, err)) != TN_OK) return st;
  for (uint32_t k = 0; k < cs->n; k++)
    for (uint32_t j = 0; j < k && s->algos[k] && !s->shared[k]; j++)
      if (s->algos[j] == s->algos[k] && cs->c[j].nranks == cs->c[k].nranks &&
          memcmp(cs->c[j].ranks, cs->c[k].ranks, cs->c[k].nranks * sizeof *cs->c[k].ranks) == 0)
        s->shared[k] = s->shared[j] = 1;
  s->vcoll = NONE;
  s->reck = NONE;
  return TN_OK;
}

/* res->alone: each collective's run alone, where its algorithm's profile was recorded or
 * given (sim_step_opts_t.learn). */
static tn_status_t learned(step_t *s, tn_err_t *err) {
  const wl_colls_t *cs = s->cs;
  tn_status_t st = tn_calloc((size_t)cs->n + 1, sizeof *s->res->alone, &s->res->alone, err);
  for (uint32_t k = 0; k < cs->n && st == TN_OK; k++) {
    const profile_t *p = s->algos[k] ? profile_find(s, k) : NULL;
    sim_alone_t *a = &s->res->alone[k];
    if (p == NULL || !p->ok) continue;
    if ((st = tn_malloc((size_t)p->nranks + 1, sizeof *a->fin_ps, &a->fin_ps, err)) != TN_OK) break;
    memcpy(a->fin_ps, p->fin_ps, p->nranks * sizeof *a->fin_ps);
    a->nranks = p->nranks;
    a->net_end_ps = p->net_end_ps;
  }
  return st;
}

/* Builds and runs s (its t, w, cs, algos and res set; routes too, or NULL for its own). */
static tn_status_t step_exec(step_t *s, tn_err_t *err) {
  const workload_t *w = s->w;
  const wl_colls_t *cs = s->cs;
  sim_step_result_t *res = s->res;
  tn_status_t st;
  if ((st = tn_calloc(w->npus, sizeof *res->finish_ps, &res->finish_ps, err)) != TN_OK ||
      (st = tn_calloc(w->npus, sizeof *res->compute_ps, &res->compute_ps, err)) != TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *res->coll_start_ps, &res->coll_start_ps, err)) !=
          TN_OK ||
      (st = tn_calloc((size_t)cs->n + 1, sizeof *res->coll_end_ps, &res->coll_end_ps, err)) !=
          TN_OK)
    return st;
  res->npus = w->npus;
  res->ncolls = cs->n;
  for (uint32_t k = 0; k < cs->n; k++)
    res->coll_start_ps[k] = UINT64_MAX;
  if (s->tmpls == NULL) s->tmpls = &s->tmpl_list;
  if (s->routes == NULL) {
    if ((st = topo_routes_create(s->t, &s->routes, err)) != TN_OK) return st;
    s->own_routes = true;
  }
  if ((st = check_algos(s, err)) != TN_OK || (st = build(s, err)) != TN_OK ||
      (st = alloc_queues(s, err)) != TN_OK || (st = alloc_apart(s, err)) != TN_OK ||
      (st = ten_engine_create(s->t, s->routes, &s->e, err)) != TN_OK)
    return st;
  if ((st = run(s, err)) != TN_OK) return st;
  if (s->learn && (st = learned(s, err)) != TN_OK) return st;
  for (uint32_t r = 0; r < w->npus; r++)
    if (res->finish_ps[r] > res->step_ps) res->step_ps = res->finish_ps[r], res->last_rank = r;
  res->exposed_ps = res->step_ps - res->compute_ps[res->last_rank];
  res->messages = s->messages;
  return TN_OK;
}

static void step_release(step_t *s) {
  free(s->wrank_off);
  free(s->nodes);
  free(s->succ);
  free(s->inst);
  free(s->kq);
  free(s->ready);
  free(s->wready);
  free(s->wready_n);
  free(s->wready_base);
  free(s->busy);
  free(s->dirty);
  free(s->dirty_list);
  free(s->dirty_work);
  free(s->started);
  free(s->pass_count);
  free(s->coll_inst);
  free(s->prof_of);
  free(s->virt);
  if (s->recp) profile_free(s->recp);
  while (s->profs) {
    profile_t *p = s->profs;
    s->profs = p->next;
    profile_free(p);
  }
  tmpl_free(s->tmpl_list);
  free(s->coll_T);
  free(s->coll_base);
  free(s->coll_vbase);
  free(s->coll_left);
  for (int i = 0; i < 3; i++)
    free(s->pool[i].v);
  free(s->coll_soff);
  free(s->coll_kbase);
  free(s->expanded);
  free(s->shared);
  ten_engine_free(s->e);
  if (s->own_routes) topo_routes_free(s->routes);
}

tn_status_t sim_i_step(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                       const algo_t *const *algos, const sim_step_opts_t *opts, unsigned flags,
                       sim_step_result_t *res, sim_i_step_stats_t *stats, tn_err_t *err) {
  memset(res, 0, sizeof *res);
  if (w->npus != t->npus)
    return tn_err_set(err, TN_INVAL, "the workload has %u ranks, the fabric %u NPUs", w->npus,
                      t->npus);
  step_t s = {.t = t,
              .w = w,
              .cs = cs,
              .algos = algos,
              .npus = w->npus,
              .res = res,
              .apart = (flags & SIM_I_STEP_APART) != 0,
              .keep = (flags & SIM_I_STEP_KEEP) != 0,
              .known = opts ? opts->known : NULL,
              .learn = opts && opts->learn};
  tn_status_t st = step_exec(&s, err);
  if (stats)
    *stats = (sim_i_step_stats_t){s.napart,  s.ncarried, s.nplaced, s.nsent,
                                  s.nreused, s.ngrown,   s.ngiven,  s.ndetailed};
  step_release(&s);
  if (st != TN_OK) sim_step_result_free(res);
  return st;
}

tn_status_t sim_step(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                     const algo_t *const *algos, sim_step_result_t *res, tn_err_t *err) {
  return sim_i_step(t, w, cs, algos, NULL, SIM_I_STEP_APART, res, NULL, err);
}

tn_status_t sim_step_with(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                          const algo_t *const *algos, const sim_step_opts_t *opts,
                          sim_step_result_t *res, tn_err_t *err) {
  return sim_i_step(t, w, cs, algos, opts, SIM_I_STEP_APART, res, NULL, err);
}
