/* greedy/listed.c — the greedy's All-Reduce as one explicit reduction schedule, list-scheduled
 * (greedy_allreduce_listed in greedy.h).
 *
 * The All-Reduce algo/ derives from an All-Gather plan runs the plan backwards (the
 * Reduce-Scatter: every chunk's partial sums flow up its tree to its owner) and then the plan
 * forwards from its end (the All-Gather). Every chunk's reduction then completes at about
 * the plan's end T, so the halves do not overlap: the All-Reduce takes 2T. Here the same
 * transfers (each plan transfer once as a reduction, dst -> src, and once as a copy) are
 * scheduled again, work-conserving: whenever a link is idle it takes, among the transfers
 * waiting for it, the one the 2T sequence puts first. A copy of a chunk that is reduced
 * early therefore goes while other chunks still reduce. That is usually, not always,
 * faster (synth/ keeps it only when it is): on mesh-8x8 at 1 MiB and 8 chunks per NPU
 * 20.43 us against the sequence's 20.86, on torus-8x8 11.47 against 12.02.
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
#define HEAP_FNS(NAME, T, LESS)                                                                    \
  static void NAME##_push(T *h, uint32_t *n, T v) {                                                \
    uint32_t i = (*n)++;                                                                           \
    while (i > 0 && LESS(&v, &h[(i - 1) / 2])) {                                                   \
      h[i] = h[(i - 1) / 2];                                                                       \
      i = (i - 1) / 2;                                                                             \
    }                                                                                              \
    h[i] = v;                                                                                      \
  }                                                                                                \
  static T NAME##_pop(T *h, uint32_t *n) {                                                         \
    T top = h[0], last = h[--*n];                                                                  \
    uint32_t m = *n, i = 0;                                                                        \
    for (;;) {                                                                                     \
      uint32_t c = 2 * i + 1;                                                                      \
      if (c >= m) break;                                                                           \
      if (c + 1 < m && LESS(&h[c + 1], &h[c])) c++;                                                \
      if (!LESS(&h[c], &last)) break;                                                              \
      h[i] = h[c];                                                                                 \
      i = c;                                                                                       \
    }                                                                                              \
    if (m > 0) h[i] = last;                                                                        \
    return top;                                                                                    \
  }
HEAP_FNS(levh, lev_t, lev_less)
HEAP_FNS(waith, wait_t, wait_less)
#undef HEAP_FNS

/* The list schedule's state. Transfer x < T is plan transfer x run backwards (a reduction
 * from the plan's receiver to its sender); T + x is plan transfer x as a copy. */
typedef struct ls {
  const topo_t *t;
  const schedule_t *p;
  uint32_t T, N, nchunks;
  uint32_t *link;           /* N: the one link the transfer crosses */
  uint32_t *chunk;          /* T: the plan transfer's chunk */
  uint64_t *key;            /* N: start in the 2T sequence */
  uint32_t *kid_off, *kids; /* dependents, CSR over N */
  uint32_t *pending;        /* N: dependencies not yet met */
  uint64_t *start, *arrive; /* N */
  uint64_t *comp_free;      /* npus * nchunks: the last reduction's COMP at (NPU, chunk) */
  wait_t *wq;               /* per link a heap at wq + woff[l] */
  uint32_t *woff, *wlen;
  uint8_t *busy;           /* per link */
  uint32_t *touch, ntouch; /* links to look at once the instant's events are in */
  uint8_t *touched;
  lev_t *ev;
  uint32_t nev;
  uint64_t time_ps;
} ls_t;

static void ls_free(ls_t *L) {
  void *arrs[] = {L->link,  L->chunk,  L->key,       L->kid_off, L->kids, L->pending,
                  L->start, L->arrive, L->comp_free, L->wq,      L->woff, L->wlen,
                  L->busy,  L->touch,  L->touched,   L->ev};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
    free(arrs[i]);
}

/* The plan transfer behind x, and its sender and receiver as x runs (a reduction runs the
 * plan's transfer backwards). */
static const sched_xfer_t *plan_of(const ls_t *L, uint32_t x) {
  return schedule_xfer(L->p, x < L->T ? x : x - L->T);
}
static uint32_t src_of(const ls_t *L, uint32_t x) {
  return x < L->T ? plan_of(L, x)->dst : plan_of(L, x)->src;
}
static uint32_t dst_of(const ls_t *L, uint32_t x) {
  return x < L->T ? plan_of(L, x)->src : plan_of(L, x)->dst;
}

/* The plan's dependency of transfer i (SCHED_NONE for an owner's own chunk). */
static uint32_t plan_dep(const schedule_t *p, uint32_t i) {
  const sched_xfer_t *x = schedule_xfer(p, i);
  return x->ndeps ? TN_VEC_AT(&p->deps, uint32_t, x->dep_off) : SCHED_NONE;
}

/* Calls fn(ctx, from, to) for every dependency "to waits for from" of the joined
 * schedule: a reduction waits for the reductions into its sender of the transfers the plan
 * forwarded from it; a copy waits for the copy that brought its chunk; an owner's first
 * copy of a chunk waits for every reduction into the owner of that chunk. firsts lists, per
 * chunk, the plan transfers that start from its owner (first_off CSR). */
typedef void (*dep_fn)(void *ctx, uint32_t from, uint32_t to);
static void each_dep(const ls_t *L, const uint32_t *first_off, const uint32_t *firsts, dep_fn fn,
                     void *ctx) {
  for (uint32_t i = 0; i < L->T; i++) {
    uint32_t d = plan_dep(L->p, i);
    if (d != SCHED_NONE) {
      fn(ctx, i, d); /* reduction d' sends what i' reduced into its sender */
      fn(ctx, L->T + d, L->T + i);
    } else {
      uint32_t c = L->chunk[i];
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

/* Checks the plan (one chunk a transfer, every transfer one link along the fabric's route)
 * and builds the joined transfers' links, keys and dependencies. */
static tn_status_t setup(ls_t *L, tn_err_t *err) {
  const topo_t *t = L->t;
  const schedule_t *p = L->p;
  uint32_t T = L->T, N = L->N, n = t->npus;
  tn_status_t st = TN_OK;
  uint32_t *first_off = NULL, *firsts = NULL;
  if ((st = tn_calloc(N, sizeof *L->link, &L->link, err)) != TN_OK ||
      (st = tn_calloc(T + 1u, sizeof *L->chunk, &L->chunk, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->key, &L->key, err)) != TN_OK ||
      (st = tn_calloc((size_t)N + 2, sizeof *L->kid_off, &L->kid_off, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->pending, &L->pending, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->start, &L->start, err)) != TN_OK ||
      (st = tn_calloc(N, sizeof *L->arrive, &L->arrive, err)) != TN_OK ||
      (st = tn_calloc((size_t)L->nchunks + 2, sizeof *first_off, &first_off, err)) != TN_OK)
    goto done;
  topo_routes_t *routes = NULL;
  if ((st = topo_routes_create(t, &routes, err)) != TN_OK) goto done;
  for (uint32_t i = 0; i < T && st == TN_OK; i++) {
    const sched_xfer_t *x = schedule_xfer(p, i);
    uint32_t l = x->src < n && x->dst < n ? topo_route_next(routes, x->src, x->dst) : TOPO_NO_LINK;
    if (x->nchunks != 1 || x->ndeps > 1 || l == TOPO_NO_LINK || t->links[l].dst != x->dst) {
      st = tn_err_set(err, TN_INVAL,
                      "greedy: transfer %u (%u -> %u) is not one chunk over one link; the "
                      "listed All-Reduce takes direct-connect plans only",
                      i, x->src, x->dst);
      break;
    }
    /* the reverse link carries the reduction: the route back must be that one link */
    uint32_t back = topo_route_next(routes, x->dst, x->src);
    if (back == TOPO_NO_LINK || t->links[back].dst != x->src) {
      st = tn_err_set(err, TN_INVAL, "greedy: no direct link back from %u to %u", x->dst, x->src);
      break;
    }
    L->link[i] = back;
    L->link[T + i] = l;
    L->chunk[i] = TN_VEC_AT(&p->chunks, uint32_t, x->chunk_off);
    if (L->chunk[i] >= L->nchunks) {
      st = tn_err_set(err, TN_INVAL, "greedy: transfer %u carries chunk %u of %u", i, L->chunk[i],
                      L->nchunks);
      break;
    }
    /* the 2T sequence: the plan backwards, then forwards from 1 ps after its end */
    L->key[i] = p->time_ps - x->end_ps;
    L->key[T + i] = p->time_ps + 1 + x->start_ps;
    if (x->ndeps == 0) first_off[L->chunk[i] + 2]++;
  }
  topo_routes_free(routes);
  if (st != TN_OK) goto done;
  for (uint32_t c = 0; c < L->nchunks; c++)
    first_off[c + 2] += first_off[c + 1];
  if ((st = tn_malloc(first_off[L->nchunks + 1] + 1u, sizeof *firsts, &firsts, err)) != TN_OK)
    goto done;
  for (uint32_t i = 0; i < T; i++)
    if (plan_dep(p, i) == SCHED_NONE) firsts[first_off[L->chunk[i] + 1]++] = i;
  each_dep(L, first_off, firsts, count_dep, L);
  for (uint32_t x = 0; x < N; x++)
    L->kid_off[x + 2] += L->kid_off[x + 1];
  if ((st = tn_malloc(L->kid_off[N + 1] + 1u, sizeof *L->kids, &L->kids, err)) != TN_OK) goto done;
  each_dep(L, first_off, firsts, put_dep, L);
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
      (st = tn_calloc(nl, sizeof *L->touch, &L->touch, err)) != TN_OK ||
      (st = tn_calloc(nl, sizeof *L->touched, &L->touched, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *L->wq, &L->wq, err)) != TN_OK ||
      (st = tn_malloc((size_t)2 * L->N + nl + 1, sizeof *L->ev, &L->ev, err)) != TN_OK ||
      (st = tn_calloc((size_t)L->t->npus * L->nchunks, sizeof *L->comp_free, &L->comp_free, err)) !=
          TN_OK)
    return st;
  for (uint32_t x = 0; x < L->N; x++)
    L->woff[L->link[x] + 1]++;
  for (uint32_t l = 0; l < nl; l++)
    L->woff[l + 1] += L->woff[l];
  return TN_OK;
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
  uint64_t busy = 0, arrive = 0;
  if (!tn_xfer_ps(plan_of(L, x)->bytes, lk->bandwidth_GBps, &busy) ||
      !tn_time_add(now, busy ? busy : 1, &busy) || !tn_time_add(busy, lk->latency_ps, &arrive))
    return tn_time_overflow(err, "the listed All-Reduce's transfer %u over link %u", x, l);
  L->start[x] = now;
  L->arrive[x] = arrive;
  L->busy[l] = 1;
  levh_push(L->ev, &L->nev, (lev_t){busy, EV_IDLE, l});
  levh_push(L->ev, &L->nev, (lev_t){arrive, EV_ARRIVE, x});
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
    if (L->nev == 0) break;
    now = L->ev[0].t;
    while (L->nev > 0 && L->ev[0].t == now) {
      lev_t e = levh_pop(L->ev, &L->nev);
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
        levh_push(L->ev, &L->nev, (lev_t){done, EV_COMP, e.id});
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

/* Transfers in start order (then key, then index): every dependency starts earlier. */
typedef struct slot {
  uint64_t start, key;
  uint32_t x;
} slot_t;

static int by_start(const void *a, const void *b) {
  const slot_t *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->x > y->x) - (x->x < y->x);
}

static tn_status_t emit(ls_t *L, schedule_t *out, tn_err_t *err) {
  slot_t *order = NULL;
  uint32_t *at = NULL, *deps = NULL;
  tn_status_t st = TN_OK;
  if ((st = tn_malloc((size_t)L->N + 1, sizeof *order, &order, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *at, &at, err)) != TN_OK ||
      (st = tn_malloc((size_t)L->N + 1, sizeof *deps, &deps, err)) != TN_OK)
    goto done;
  for (uint32_t x = 0; x < L->N; x++)
    order[x] = (slot_t){L->start[x], L->key[x], x};
  qsort(order, L->N, sizeof *order, by_start);
  for (uint32_t i = 0; i < L->N; i++)
    at[order[i].x] = i;
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
    uint32_t x = order[i].x, nd = doff[x + 1] - doff[x];
    for (uint32_t j = 0; j < nd; j++)
      deps[j] = at[dl[doff[x] + j]];
    const sched_xfer_t *px = plan_of(L, x);
    sched_xfer_t sx = {.src = src_of(L, x),
                       .dst = dst_of(L, x),
                       .bytes = px->bytes,
                       .start_ps = L->start[x],
                       .end_ps = L->arrive[x],
                       .nchunks = 1,
                       .ndeps = nd};
    uint32_t c = x < L->T ? L->chunk[x] : L->chunk[x - L->T];
    st = schedule_add_op(out, &sx, x < L->T ? SCHED_REDUCE : SCHED_COPY, &c, deps, NULL, err);
  }
  out->time_ps = L->time_ps;
  free(doff);
  free(dl);
done:
  free(order);
  free(at);
  free(deps);
  return st;
}

tn_status_t greedy_allreduce_listed(const topo_t *t, const schedule_t *plan, schedule_t *out,
                                    tn_err_t *err) {
  schedule_init(out, TN_ALLREDUCE, plan->npus, plan->chunks_per_npu, plan->size_bytes);
  if (plan->coll != TN_ALLGATHER || plan->npus != t->npus)
    return tn_err_set(err, TN_INVAL,
                      "greedy: the listed All-Reduce needs an All-Gather plan "
                      "of this fabric");
  uint64_t T = schedule_len(plan);
  if (T == 0) return TN_OK;
  if (2 * T >= UINT32_MAX / 2)
    return tn_err_set(err, TN_LIMIT, "greedy: %llu transfers are too many to list",
                      (unsigned long long)T);
  ls_t L = {.t = t,
            .p = plan,
            .T = (uint32_t)T,
            .N = (uint32_t)(2 * T),
            .nchunks = plan->npus * plan->chunks_per_npu};
  tn_status_t st = setup(&L, err);
  if (st == TN_OK) st = setup_run(&L, err);
  if (st == TN_OK) st = run(&L, err);
  if (st == TN_OK) st = emit(&L, out, err);
  ls_free(&L);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, plan->npus, plan->chunks_per_npu, plan->size_bytes);
  }
  return st;
}
