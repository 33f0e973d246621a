/* greedy/listed.c — the greedy's All-Reduce as one explicit reduction schedule, list-scheduled
 * (greedy_allreduce_listed in greedy.h).
 *
 * The All-Reduce algo/ derives from an All-Gather plan runs the plan backwards (the
 * Reduce-Scatter: every chunk's partial sums flow up its tree to its owner) and then the plan
 * forwards from its end (the All-Gather). Every chunk's reduction then completes at about
 * the plan's end T, so the halves do not overlap: the All-Reduce takes 2T. Here the
 * transfers of a Reduce-Scatter plan (each once as a reduction, receiver to sender) and of
 * an All-Gather plan (each once as a copy) are scheduled again, work-conserving: whenever a
 * link is idle it takes, among the transfers waiting for it, the one the sequence (the first
 * plan backwards, then the second forwards) puts first. A copy of a chunk that is reduced
 * early therefore goes while other chunks still reduce; a Reduce-Scatter plan whose own
 * chunks entered in turn (greedy_opts_t.stagger_ps) reduces them in turn, which lets more
 * go early. That is usually, not always, faster (synth/ keeps it only when it is): on
 * mesh-8x8 at 1 MiB and 8 chunks per NPU 20.43 us with one plan for both halves, 19.49
 * with a staggered Reduce-Scatter plan, against the sequence's 20.86. Keys may also weigh
 * in each transfer's critical path (blend_path): a transfer with a long chain of others
 * behind it goes earlier. A plan from roots (greedy_opts_t.roots) reduces each chunk into
 * the root it starts at instead of its owner; nothing here tells the two apart.
 *
 * The times follow the simulator's model exactly for what is scheduled here: a transfer on
 * one link occupies it for tn_xfer_ps(bytes, bandwidth) (at least 1 ps) and arrives the
 * link's latency after that; a reduction's COMP takes SCHED_COMP_PS after the later of its
 * arrival and the previous reduction of that chunk at that NPU (ten/replay.c's rule). The
 * lowering numbers SENDs by these start times, so order-proofing can keep this order
 * (sim_make_strict_planned with plan time out->time_ps). */
#include <stdlib.h>
#include <string.h>

#include "greedy/greedy.h"
#include "greedy/greedy_internal.h"

/* An event of the list schedule: a link becomes idle, a transfer arrives, or a reduction's
 * COMP is done (then its dependents may go). Ordered by time, then kind, then id, so the
 * schedule does not depend on the order events were made in. */
enum { EV_IDLE = 0, EV_ARRIVE = 1, EV_COMP = 2 };
typedef struct lev {
  uint64_t t;
  uint32_t kind, id;
} lev_t;

static bool lev_less(const lev_t *a, const lev_t *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->kind != b->kind) return a->kind < b->kind;
  return a->id < b->id;
}

/* A waiting transfer on a link's queue: its key (the 2T sequence's start) and index. */
typedef struct wait {
  uint64_t key;
  uint32_t x;
} wait_t;

static bool wait_less(const wait_t *a, const wait_t *b) {
  return a->key < b->key || (a->key == b->key && a->x < b->x);
}

/* Binary min-heaps over the two entry types. */
GREEDY_I_HEAP_FNS(levh, lev_t, lev_less)
GREEDY_I_HEAP_FNS(waith, wait_t, wait_less)

/* The list schedule's state. Transfer x < T is plan transfer x run backwards (a reduction
 * from the plan's receiver to its sender); T + x is plan transfer x as a copy. */
typedef struct ls {
  const topo_t *t;
  const schedule_t *rs, *ag; /* the plans run backwards (reductions) and forwards (copies) */
  uint32_t T, N, nchunks;
  uint32_t path_permille;   /* the critical path's weight in the keys (setup) */
  uint32_t *link;           /* N: the one link the transfer crosses (its sender and receiver) */
  uint32_t *chunk;          /* N: the transfer's chunk */
  uint64_t *chunk_bytes;    /* nchunks: the size of every transfer of the chunk */
  uint64_t *key;            /* N: start in the 2T sequence */
  uint32_t *kid_off, *kids; /* dependents, CSR over N */
  uint32_t *pending;        /* N: dependencies not yet met */
  uint64_t *start, *arrive; /* N */
  uint64_t *comp_free;      /* npus * nchunks: the last reduction's COMP at (NPU, chunk) */
  wait_t *wq;               /* per link a heap at wq + woff[l] */
  uint32_t *woff, *wlen;
  uint8_t *busy;                  /* per link */
  uint64_t *memo_bytes, *memo_ps; /* per link: the last message's size and busy time */
  uint32_t *touch, ntouch;        /* links to look at once the instant's events are in */
  uint8_t *touched;
  lev_t *ev; /* the events that came out of order: a heap */
  uint32_t nev;
  /* The events of each kind that came in order (nearly all on a uniform fabric: every
   * link busy and every flight as long as the others): sorted runs, read from the head. */
  lev_t *run[3];
  uint32_t rhead[3], rlen[3];
  uint64_t time_ps;
} ls_t;

static void ls_free(ls_t *L) {
  void *arrs[] = {L->link,    L->chunk,  L->chunk_bytes, L->key,       L->kid_off, L->kids,
                  L->pending, L->start,  L->arrive,      L->comp_free, L->wq,      L->woff,
                  L->wlen,    L->busy,   L->touch,       L->touched,   L->ev,      L->run[0],
                  L->run[1],  L->run[2], L->memo_bytes,  L->memo_ps};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
    free(arrs[i]);
}

/* Transfer x's sender and receiver as it runs (a reduction runs the plan's transfer
 * backwards): its link's ends, and its size, its chunk's. Read from these small arrays, not
 * from the plans' transfers: the list visits transfers in time order, and the plans' 48-byte
 * records in that order missed the cache at every step (a third of the list's time on
 * torus-16x8 at 1 MiB). */
static uint32_t src_of(const ls_t *L, uint32_t x) {
  return L->t->links[L->link[x]].src;
}
static uint32_t dst_of(const ls_t *L, uint32_t x) {
  return L->t->links[L->link[x]].dst;
}
static uint64_t bytes_of(const ls_t *L, uint32_t x) {
  return L->chunk_bytes[L->chunk[x]];
}

/* The plan's dependency of transfer i (SCHED_NONE for a chunk leaving the NPU it starts at:
 * its owner, or its root in a plan from roots). "Owner" below means that NPU. */
static uint32_t plan_dep(const schedule_t *p, uint32_t i) {
  const sched_xfer_t *x = schedule_xfer(p, i);
  return x->ndeps ? TN_VEC_AT(&p->deps, uint32_t, x->dep_off) : SCHED_NONE;
}

/* Calls fn(ctx, from, to) for every dependency "to waits for from" of the joined
 * schedule: a reduction waits for the reductions into its sender of the transfers rs
 * forwarded from it; a copy waits for the copy that brought its chunk; an owner's first
 * copy of a chunk waits for every reduction into the owner of that chunk. firsts lists, per
 * chunk, the rs transfers that start from its owner (first_off CSR). */
typedef void (*dep_fn)(void *ctx, uint32_t from, uint32_t to);
static void each_dep(const ls_t *L, const uint32_t *first_off, const uint32_t *firsts, dep_fn fn,
                     void *ctx) {
  for (uint32_t i = 0; i < L->T; i++) {
    uint32_t d = plan_dep(L->rs, i), a = plan_dep(L->ag, i);
    if (d != SCHED_NONE) fn(ctx, i, d); /* reduction d' sends what i' reduced into its sender */
    if (a != SCHED_NONE) {
      fn(ctx, L->T + a, L->T + i);
    } else {
      uint32_t c = L->chunk[L->T + i];
      for (uint32_t j = first_off[c]; j < first_off[c + 1]; j++)
        fn(ctx, firsts[j], L->T + i);
    }
  }
}

static void count_dep(void *ctx, uint32_t from, uint32_t to) {
  ls_t *L = ctx;
  L->kid_off[from + 2]++;
  L->pending[to]++;
}

static void put_dep(void *ctx, uint32_t from, uint32_t to) {
  ls_t *L = ctx;
  L->kids[L->kid_off[from + 1]++] = to;
}

/* Transfer i of plan p: its one link (the route's, which must end at its receiver) in *fwd
 * and the route back in *back, both one link; its chunk in *c. TN_INVAL otherwise. */
static tn_status_t one_link(const ls_t *L, topo_routes_t *routes, const schedule_t *p, uint32_t i,
                            uint32_t *fwd, uint32_t *back, uint32_t *c, tn_err_t *err) {
  const topo_t *t = L->t;
  const sched_xfer_t *x = schedule_xfer(p, i);
  uint32_t n = t->npus;
  *fwd = x->src < n && x->dst < n ? topo_route_next(routes, x->src, x->dst) : TOPO_NO_LINK;
  *back = x->src < n && x->dst < n ? topo_route_next(routes, x->dst, x->src) : TOPO_NO_LINK;
  if (x->nchunks != 1 || x->ndeps > 1 || *fwd == TOPO_NO_LINK || t->links[*fwd].dst != x->dst ||
      *back == TOPO_NO_LINK || t->links[*back].dst != x->src)
    return tn_err_set(err, TN_INVAL,
                      "greedy: transfer %u (%u -> %u) is not one chunk over one link and back; "
                      "the listed All-Reduce takes direct-connect plans only",
                      i, x->src, x->dst);
  *c = TN_VEC_AT(&p->chunks, uint32_t, x->chunk_off);
  if (*c >= L->nchunks)
    return tn_err_set(err, TN_INVAL, "greedy: transfer %u carries chunk %u of %u", i, *c,
                      L->nchunks);
  uint64_t *size = &L->chunk_bytes[*c];
  if (*size != 0 && *size != x->bytes)
    return tn_err_set(err, TN_INVAL, "greedy: transfer %u carries %llu B of chunk %u, another %llu",
                      i, (unsigned long long)x->bytes, *c, (unsigned long long)*size);
  *size = x->bytes;
  return TN_OK;
}

/* Every transfer of plan p (transfers base .. base + T of the joined ones) that leaves the
 * NPU its chunk starts at (no dependency) must leave the NPU start[chunk] names; the first
 * such sets it (start[c] NONE). Both plans must start every chunk at one NPU: the
 * reductions of one end where the copies of the other begin. */
static tn_status_t check_starts(const ls_t *L, const schedule_t *p, uint32_t base, uint32_t *start,
                                tn_err_t *err) {
  for (uint32_t i = 0; i < L->T; i++) {
    const sched_xfer_t *x = schedule_xfer(p, i);
    uint32_t c = L->chunk[base + i];
    if (x->ndeps != 0) continue;
    if (start[c] == SCHED_NONE) start[c] = x->src;
    if (start[c] != x->src)
      return tn_err_set(err, TN_INVAL,
                        "greedy: the listed All-Reduce's plans start chunk %u at NPU %u and at "
                        "NPU %u; both must start it at one (its owner, or one root)",
                        c, start[c], x->src);
  }
  return TN_OK;
}

/* Checks the plans (one chunk a transfer, each over one link along the fabric's route and
 * back; every chunk starting at one NPU in both), filling the joined transfers' links and
 * chunks: all that is held before a plan fails the check. */
static tn_status_t check_plans(ls_t *L, tn_err_t *err) {
  uint32_t T = L->T, *start = NULL;
  topo_routes_t *routes = NULL;
  tn_status_t st = tn_calloc(L->N, sizeof *L->link, &L->link, err);
  if (st == TN_OK) st = tn_calloc(L->N, sizeof *L->chunk, &L->chunk, err);
  if (st == TN_OK)
    st = tn_calloc((size_t)L->nchunks + 1, sizeof *L->chunk_bytes, &L->chunk_bytes, err);
  if (st == TN_OK) st = topo_routes_create(L->t, &routes, err);
  for (uint32_t i = 0; i < T && st == TN_OK; i++) {
    uint32_t fwd, back;
    /* the rs plan runs backwards: its transfer's reverse link carries the reduction */
    st = one_link(L, routes, L->rs, i, &fwd, &back, &L->chunk[i], err);
    L->link[i] = back;
    if (st == TN_OK)
      st = one_link(L, routes, L->ag, i, &L->link[T + i], &fwd, &L->chunk[T + i], err);
  }
  topo_routes_free(routes);
  if (st == TN_OK) st = tn_malloc((size_t)L->nchunks + 1, sizeof *start, &start, err);
  for (uint32_t c = 0; st == TN_OK && c < L->nchunks; c++)
    start[c] = SCHED_NONE;
  if (st == TN_OK) st = check_starts(L, L->rs, 0, start, err);
  if (st == TN_OK) st = check_starts(L, L->ag, T, start, err);
  free(start);
  return st;
}

/* Blends each transfer's key with its critical path (path_permille of 1000): key :=
 * (1000 - w) key + w (P - p(x)), where p(x) is the longest chain of transfers from x to
 * the end (each its link's serialization and latency, and a reduction's COMP), P the
 * longest of all. Keys in ascending order are a topological order (a dependency starts
 * before its dependent in the sequence), so one pass backwards over them finds every p. */
static tn_status_t blend_path(ls_t *L, tn_err_t *err) {
  uint32_t *ord = NULL, w = L->path_permille;
  uint64_t *p = NULL, most = 0;
  tn_status_t st = tn_malloc((size_t)L->N + 1, sizeof *ord, &ord, err);
  if (st == TN_OK) st = tn_calloc((size_t)L->N + 1, sizeof *p, &p, err);
  if (st == TN_OK) st = tn_radix_order(L->key, L->N, ord, err);
  for (uint32_t i = L->N; st == TN_OK && i-- > 0;) {
    uint32_t x = ord[i];
    const topo_link_t *lk = &L->t->links[L->link[x]];
    uint64_t d = 0, tail = 0;
    if (!tn_xfer_ps(bytes_of(L, x), lk->bandwidth_GBps, &d) ||
        !tn_time_add(d, lk->latency_ps + (x < L->T ? SCHED_COMP_PS : 0), &d)) {
      st = tn_time_overflow(err, "the listed All-Reduce's transfer %u", x);
      break;
    }
    for (uint32_t k = L->kid_off[x]; k < L->kid_off[x + 1]; k++)
      if (p[L->kids[k]] > tail) tail = p[L->kids[k]];
    if (!tn_time_add(d, tail, &p[x])) st = tn_time_overflow(err, "the listed All-Reduce's path");
    if (p[x] > most) most = p[x];
  }
  /* both scaled below 2^53 (times past 2.5 hours only) so that 1000x of them fits */
  uint64_t top = most;
  for (uint32_t x = 0; st == TN_OK && x < L->N; x++)
    if (L->key[x] > top) top = L->key[x];
  unsigned sh = 0;
  while ((top >> sh) >= (UINT64_C(1) << 53))
    sh++;
  for (uint32_t x = 0; st == TN_OK && x < L->N; x++)
    L->key[x] = (1000u - w) * (L->key[x] >> sh) + w * ((most - p[x]) >> sh);
  free(ord);
  free(p);
  return st;
}

/* Builds the joined transfers' keys and dependencies (check_plans first). */
static tn_status_t setup(ls_t *L, tn_err_t *err) {
  uint32_t T = L->T, N = L->N;
  tn_status_t st = TN_OK;
  uint32_t *first_off = NULL, *firsts = NULL;
  if ((st = tn_calloc(N, sizeof *L->key, &L->key, err)) != TN_OK ||
      (st = tn_calloc((size_t)N + 2, sizeof *L->kid_off, &L->kid_off, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->pending, &L->pending, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->start, &L->start, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->arrive, &L->arrive, err)) != TN_OK ||
      (st = tn_calloc((size_t)L->nchunks + 2, sizeof *first_off, &first_off, err)) != TN_OK)
    goto done;
  for (uint32_t i = 0; i < T; i++) {
    /* the sequence: rs backwards, then ag forwards from 1 ps after rs's end */
    L->key[i] = L->rs->time_ps - schedule_xfer(L->rs, i)->end_ps;
    L->key[T + i] = L->rs->time_ps + 1 + schedule_xfer(L->ag, i)->start_ps;
    if (plan_dep(L->rs, i) == SCHED_NONE) first_off[L->chunk[i] + 2]++;
  }
  for (uint32_t c = 0; c < L->nchunks; c++)
    first_off[c + 2] += first_off[c + 1];
  if ((st = tn_malloc(first_off[L->nchunks + 1] + 1u, sizeof *firsts, &firsts, err)) != TN_OK)
    goto done;
  for (uint32_t i = 0; i < T; i++)
    if (plan_dep(L->rs, i) == SCHED_NONE) firsts[first_off[L->chunk[i] + 1]++] = i;
  each_dep(L, first_off, firsts, count_dep, L);
  for (uint32_t x = 0; x < N; x++)
    L->kid_off[x + 2] += L->kid_off[x + 1];
  if ((st = tn_malloc(L->kid_off[N + 1] + 1u, sizeof *L->kids, &L->kids, err)) != TN_OK) goto done;
  each_dep(L, first_off, firsts, put_dep, L);
  if (L->path_permille > 0) st = blend_path(L, err);
done:
  free(first_off);
  free(firsts);
  return st;
}

/* Room for the per-link queues (a link's queue holds at most the transfers over it), the
 * events (one per transfer and link at most) and the COMP table. */
static tn_status_t setup_run(ls_t *L, tn_err_t *err) {
  uint32_t nl = L->t->nlinks;
  tn_status_t st = TN_OK;
  if ((st = tn_calloc((size_t)nl + 1, sizeof *L->woff, &L->woff, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->wlen, &L->wlen, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->busy, &L->busy, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->memo_bytes, &L->memo_bytes, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->memo_ps, &L->memo_ps, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->touch, &L->touch, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->touched, &L->touched, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *L->wq, &L->wq, err)) != TN_OK ||
      (st = tn_malloc((size_t)2 * L->N + nl + 1, sizeof *L->ev, &L->ev, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *L->run[EV_IDLE], &L->run[EV_IDLE], err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *L->run[EV_ARRIVE], &L->run[EV_ARRIVE], err)) !=
          TN_OK ||
      (st = tn_malloc((size_t)L->T + 1, sizeof *L->run[EV_COMP], &L->run[EV_COMP], err)) != TN_OK ||
      (st = tn_calloc((size_t)L->t->npus * L->nchunks, sizeof *L->comp_free, &L->comp_free, err)) !=
          TN_OK)
    return st;
  for (uint32_t x = 0; x < L->N; x++)
    L->woff[L->link[x] + 1]++;
  for (uint32_t l = 0; l < nl; l++)
    L->woff[l + 1] += L->woff[l];
  return TN_OK;
}

/* An event joins its kind's run when it comes no earlier than the run's last (each kind
 * pushes at most its own count of events, the room the runs have), else the heap. The next
 * event is the least of the heap's top and the runs' heads: the order is the heap's alone. */
static void ev_push(ls_t *L, lev_t e) {
  lev_t *r = L->run[e.kind];
  uint32_t n = L->rlen[e.kind];
  if (n == L->rhead[e.kind] || !lev_less(&e, &r[n - 1]))
    r[L->rlen[e.kind]++] = e;
  else
    levh_push(L->ev, &L->nev, e);
}

static const lev_t *ev_next(const ls_t *L) {
  const lev_t *best = L->nev ? &L->ev[0] : NULL;
  for (int k = 0; k < 3; k++)
    if (L->rhead[k] < L->rlen[k] && (best == NULL || lev_less(&L->run[k][L->rhead[k]], best)))
      best = &L->run[k][L->rhead[k]];
  return best;
}

/* Removes next (what ev_next returned) and returns it. */
static lev_t ev_pop(ls_t *L, const lev_t *next) {
  lev_t e = *next;
  if (L->nev && next == &L->ev[0]) {
    levh_pop(L->ev, &L->nev);
  } else {
    L->rhead[e.kind]++;
  }
  return e;
}

static void touch(ls_t *L, uint32_t l) {
  if (!L->touched[l]) L->touched[l] = 1, L->touch[L->ntouch++] = l;
}

/* x's dependencies are met: it waits for its link. */
static void enqueue(ls_t *L, uint32_t x) {
  uint32_t l = L->link[x];
  waith_push(L->wq + L->woff[l], &L->wlen[l], (wait_t){L->key[x], x});
  touch(L, l);
}

static void release(ls_t *L, uint32_t x) {
  for (uint32_t k = L->kid_off[x]; k < L->kid_off[x + 1]; k++)
    if (--L->pending[L->kids[k]] == 0) enqueue(L, L->kids[k]);
}

static tn_status_t start_on(ls_t *L, uint32_t l, uint64_t now, tn_err_t *err) {
  uint32_t x = waith_pop(L->wq + L->woff[l], &L->wlen[l]).x;
  const topo_link_t *lk = &L->t->links[l];
  uint64_t bytes = bytes_of(L, x), busy = 0, arrive = 0;
  if (bytes != L->memo_bytes[l]) { /* bytes > 0: the zeroed memo never matches */
    if (!tn_xfer_ps(bytes, lk->bandwidth_GBps, &busy))
      return tn_time_overflow(err, "the listed All-Reduce's transfer %u over link %u", x, l);
    L->memo_bytes[l] = bytes, L->memo_ps[l] = busy ? busy : 1;
  }
  if (!tn_time_add(now, L->memo_ps[l], &busy) || !tn_time_add(busy, lk->latency_ps, &arrive))
    return tn_time_overflow(err, "the listed All-Reduce's transfer %u over link %u", x, l);
  L->start[x] = now;
  L->arrive[x] = arrive;
  L->busy[l] = 1;
  ev_push(L, (lev_t){busy, EV_IDLE, l});
  ev_push(L, (lev_t){arrive, EV_ARRIVE, x});
  return TN_OK;
}

static tn_status_t run(ls_t *L, tn_err_t *err) {
  for (uint32_t x = 0; x < L->N; x++)
    if (L->pending[x] == 0) enqueue(L, x);
  uint64_t now = 0;
  for (;;) {
    for (uint32_t i = 0; i < L->ntouch; i++) {
      uint32_t l = L->touch[i];
      L->touched[l] = 0;
      if (L->busy[l] || L->wlen[l] == 0) continue;
      tn_status_t st = start_on(L, l, now, err);
      if (st != TN_OK) return st;
    }
    L->ntouch = 0;
    const lev_t *next = ev_next(L);
    if (next == NULL) break;
    now = next->t;
    while ((next = ev_next(L)) != NULL && next->t == now) {
      lev_t e = ev_pop(L, next);
      if (now > L->time_ps) L->time_ps = now;
      if (e.kind == EV_IDLE) {
        L->busy[e.id] = 0;
        touch(L, e.id);
      } else if (e.kind == EV_ARRIVE && e.id >= L->T) {
        release(L, e.id);
      } else if (e.kind == EV_ARRIVE) { /* a reduction: its COMP, serialised per chunk */
        uint64_t *f = &L->comp_free[(size_t)dst_of(L, e.id) * L->nchunks + L->chunk[e.id]];
        uint64_t done = (*f > now ? *f : now) + SCHED_COMP_PS;
        *f = done;
        ev_push(L, (lev_t){done, EV_COMP, e.id});
      } else {
        release(L, e.id);
      }
    }
  }
  for (uint32_t x = 0; x < L->N; x++)
    if (L->pending[x] != 0)
      return tn_err_set(err, TN_INTERNAL, "greedy: the listed All-Reduce left transfer %u", x);
  return TN_OK;
}

static tn_status_t emit(ls_t *L, schedule_t *out, tn_err_t *err) {
  /* Transfers in start order, then the sequence's (key), then index: every dependency
   * starts earlier. Two stable radix passes: by key, then by start. */
  uint32_t *order = NULL, *by_key = NULL, *at = NULL, *deps = NULL;
  uint64_t *starts = NULL;
  tn_status_t st = TN_OK;
  if ((st = tn_malloc((size_t)L->N + 1, sizeof *order, &order, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *by_key, &by_key, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *starts, &starts, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *at, &at, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *deps, &deps, err)) != TN_OK ||
      (st = tn_radix_order(L->key, L->N, by_key, err)) != TN_OK)
    goto done;
  for (uint32_t i = 0; i < L->N; i++)
    starts[i] = L->start[by_key[i]];
  if ((st = tn_radix_order(starts, L->N, order, err)) != TN_OK) goto done;
  for (uint32_t i = 0; i < L->N; i++)
    order[i] = by_key[order[i]];
  for (uint32_t i = 0; i < L->N; i++)
    at[order[i]] = i;
  /* the dependencies of x, as its dependents list them: collect them per transfer */
  uint32_t *doff = NULL, *dl = NULL;
  if ((st = tn_calloc((size_t)L->N + 2, sizeof *doff, &doff, err)) != TN_OK) goto done;
  for (uint32_t k = 0; k < L->kid_off[L->N]; k++)
    doff[L->kids[k] + 2]++;
  for (uint32_t x = 0; x < L->N; x++)
    doff[x + 2] += doff[x + 1];
  if ((st = tn_malloc(L->kid_off[L->N] + 1u, sizeof *dl, &dl, err)) != TN_OK) {
    free(doff);
    goto done;
  }
  for (uint32_t x = 0; x < L->N; x++)
    for (uint32_t k = L->kid_off[x]; k < L->kid_off[x + 1]; k++)
      dl[doff[L->kids[k] + 1]++] = x;
  for (uint32_t i = 0; i < L->N && st == TN_OK; i++) {
    uint32_t x = order[i], nd = doff[x + 1] - doff[x];
    for (uint32_t j = 0; j < nd; j++)
      deps[j] = at[dl[doff[x] + j]];
    sched_xfer_t sx = {.src = src_of(L, x),
                       .dst = dst_of(L, x),
                       .bytes = bytes_of(L, x),
                       .start_ps = L->start[x],
                       .end_ps = L->arrive[x],
                       .nchunks = 1,
                       .ndeps = nd};
    st = schedule_add_op(out, &sx, x < L->T ? SCHED_REDUCE : SCHED_COPY, &L->chunk[x], deps, NULL,
                         err);
  }
  out->time_ps = L->time_ps;
  free(doff);
  free(dl);
done:
  free(order);
  free(by_key);
  free(starts);
  free(at);
  free(deps);
  return st;
}

tn_status_t greedy_allreduce_listed(const topo_t *t, const schedule_t *rs_plan,
                                    const schedule_t *ag_plan, uint32_t path_permille,
                                    schedule_t *out, tn_err_t *err) {
  const schedule_t *p = ag_plan;
  schedule_init(out, TN_ALLREDUCE, p->npus, p->chunks_per_npu, p->size_bytes);
  if (rs_plan->coll != TN_ALLGATHER || p->coll != TN_ALLGATHER || p->npus != t->npus ||
      rs_plan->npus != p->npus || rs_plan->chunks_per_npu != p->chunks_per_npu ||
      rs_plan->size_bytes != p->size_bytes || schedule_len(rs_plan) != schedule_len(p))
    return tn_err_set(err, TN_INVAL,
                      "greedy: the listed All-Reduce needs two All-Gather plans of this "
                      "fabric with one chunking and size");
  if (path_permille > 1000)
    return tn_err_set(err, TN_INVAL, "greedy: path_permille %u is over 1000", path_permille);
  uint64_t T = schedule_len(p);
  if (T == 0) return TN_OK;
  if (2 * T >= UINT32_MAX / 2)
    return tn_err_set(err, TN_LIMIT, "greedy: %llu transfers are too many to list",
                      (unsigned long long)T);
  ls_t L = {.t = t,
            .rs = rs_plan,
            .ag = p,
            .T = (uint32_t)T,
            .N = (uint32_t)(2 * T),
            .nchunks = p->npus * p->chunks_per_npu,
            .path_permille = path_permille};
  tn_status_t st = check_plans(&L, err);
  if (st == TN_OK) st = setup(&L, err);
  if (st == TN_OK) st = setup_run(&L, err);
  if (st == TN_OK) st = run(&L, err);
  if (st == TN_OK) st = emit(&L, out, err);
  ls_free(&L);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, p->npus, p->chunks_per_npu, p->size_bytes);
  }
  return st;
}
