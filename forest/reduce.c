/* forest/reduce.c — the Reduce-Scatter planner: up packed trees, planned forward. The
 * trees are packed on the transposed fabric (or the fabric itself when symmetric; see
 * forest.c), so a broadcast tree there is a tree of paths into its root here. Every NPU adds the
 * contributions its children send it for chunk c to its own and sends the sum to its parent in c's
 * tree; the root ends with c complete. The plan runs on ten/'s engine as the simulator runs its
 * lowering: a send issued when its dependencies are met, a reduction SCHED_COMP_PS after its
 * arrival, serialised per NPU and chunk, sends of one instant in transfer order.
 *
 * Why forward: run backwards, an All-Gather plan loses its pacing (its waits are on
 * deliveries, which reversed are sends), and every NPU then sends all the chunks it is a
 * leaf for at once, queueing them ahead of the partial sums others wait for
 * (fattree-32-4to1, 1 GiB: 1.35 times the bound). Here an NPU's leaf sends are paced by
 * its own receptions: those of wave j (chunk j of every owner) wait until it has reduced
 * every contribution of the waves before j - ahead, through a dependency on the reception
 * that completed the count. */
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

#define TIMER_BIT (1ull << 63)

typedef struct rplan {
  const forest_pack_t *pk;
  forest_kids_t kd; /* children in the trees (the NPUs that send to v), chunks' trees */
  uint32_t n, k;
  uint64_t nchunks; /* n * k */
  uint64_t size;
  uint32_t ahead; /* pacing: waves a leaf send may run ahead (0: none) */
  ten_engine_t *eng;
  schedule_t *s;
  uint64_t tie_window;       /* schedule_keep_ties' window (UINT64_MAX: no pairs kept) */
  uint32_t *pending;         /* per slot (v * nchunks + c): contributions not yet reduced */
  uint32_t *head;            /* per slot: latest transfer into it (SCHED_NONE) */
  tn_vec_t prev;             /* uint32_t per transfer: the one into the same slot before it */
  uint64_t *comp_free;       /* per slot: when its last reduction is done */
  uint32_t *got;             /* per NPU: reductions done */
  uint32_t *last_in;         /* per NPU: the transfer of its latest reduction */
  uint32_t *leaf_off, *leaf; /* per NPU: the chunks it is a leaf for, in sending order */
  uint32_t *released;        /* per NPU: leaf sends issued so far */
  uint32_t *cum;             /* per NPU: cum[v * (k + 1) + w] = its receptions in waves < w */
  tn_vec_t arrivals;         /* uint32_t transfers delivered at this instant */
  tn_vec_t ready;            /* uint64_t slots whose sum is complete at this instant */
  uint8_t *dirty;            /* per NPU: reductions done at this instant (leaf sends to check) */
  tn_vec_t dirty_list;
} rplan_t;

static void rplan_free(rplan_t *p) {
  forest_i_kids_free(&p->kd);
  free(p->pending);
  free(p->head);
  tn_vec_free(&p->prev);
  free(p->comp_free);
  free(p->got);
  free(p->last_in);
  free(p->leaf_off);
  free(p->leaf);
  free(p->released);
  free(p->cum);
  tn_vec_free(&p->arrivals);
  tn_vec_free(&p->ready);
  free(p->dirty);
  tn_vec_free(&p->dirty_list);
}

/* Children of v in chunk c's tree. */
static const uint32_t *kids_of(const rplan_t *p, uint32_t v, uint32_t c, uint32_t *count) {
  return forest_i_children(&p->kd, forest_i_tree_of(&p->kd, c), v, count);
}

static uint32_t parent_of(const rplan_t *p, uint32_t v, uint32_t c) {
  return forest_i_parent(p->pk, forest_i_tree_of(&p->kd, c), v);
}

/* The static part: every NPU's leaf chunks (wave by wave, owners from the
 * next NPU up, so that NPUs start on different roots) and its receptions per wave. */
static tn_status_t setup(rplan_t *p, tn_err_t *err) {
  uint32_t n = p->n, k = p->k;
  uint64_t slots = (uint64_t)n * p->nchunks;
  tn_status_t st = tn_calloc(slots, sizeof *p->pending, &p->pending, err);
  if (st == TN_OK) st = tn_malloc(slots, sizeof *p->head, &p->head, err);
  if (st == TN_OK) st = tn_calloc(slots, sizeof *p->comp_free, &p->comp_free, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p->got, &p->got, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p->last_in, &p->last_in, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 1, sizeof *p->leaf_off, &p->leaf_off, err);
  if (st == TN_OK) st = tn_malloc(slots, sizeof *p->leaf, &p->leaf, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p->released, &p->released, err);
  if (st == TN_OK) st = tn_calloc((size_t)n * (k + 1), sizeof *p->cum, &p->cum, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p->dirty, &p->dirty, err);
  if (st != TN_OK) return st;
  uint32_t fill = 0;
  for (uint32_t v = 0; v < n; v++) {
    p->leaf_off[v] = fill;
    uint32_t *cum = &p->cum[(size_t)v * (k + 1)];
    for (uint32_t w = 0; w < k; w++) {
      uint32_t in = 0;
      for (uint32_t i = 1; i <= n; i++) {
        uint32_t r = (v + i) % n, c = r * k + w, nk;
        kids_of(p, v, c, &nk);
        in += nk;
        if (nk == 0 && r != v) p->leaf[fill++] = c;
      }
      cum[w + 1] = cum[w] + in;
    }
  }
  p->leaf_off[n] = fill;
  return TN_OK;
}

/* Sends v's sum of chunk c to its parent, depending on ndeps transfers at deps. */
static tn_status_t send_up(rplan_t *p, uint32_t v, uint32_t c, const uint32_t *deps, uint32_t ndeps,
                           tn_err_t *err) {
  uint32_t to = parent_of(p, v, c), index = schedule_len(p->s), none = SCHED_NONE;
  uint64_t bytes = ten_chunk_bytes(p->size, p->n, p->k, c);
  sched_xfer_t x = {.src = v,
                    .dst = to,
                    .bytes = bytes,
                    .start_ps = ten_now(p->eng),
                    .nchunks = 1,
                    .ndeps = ndeps};
  tn_status_t st = schedule_add_op(p->s, &x, SCHED_REDUCE, &c, deps, NULL, err);
  if (st == TN_OK) st = tn_vec_push(&p->prev, &none, err);
  if (st == TN_OK) st = ten_send(p->eng, v, to, bytes, index, err);
  return st;
}

/* Receptions v must have reduced before its leaf send of wave w. */
static uint32_t needed(const rplan_t *p, uint32_t v, uint32_t w) {
  return p->ahead == 0 || w < p->ahead ? 0 : p->cum[(size_t)v * (p->k + 1) + w - p->ahead];
}

/* Issues v's leaf sends that its reductions so far release. */
static tn_status_t release(rplan_t *p, uint32_t v, tn_err_t *err) {
  tn_status_t st = TN_OK;
  uint32_t base = p->leaf_off[v], m = p->leaf_off[v + 1] - base;
  while (st == TN_OK && p->released[v] < m) {
    uint32_t c = p->leaf[base + p->released[v]];
    uint32_t need = needed(p, v, c % p->k);
    if (p->got[v] < need) break;
    p->released[v]++;
    st = send_up(p, v, c, &p->last_in[v], need > 0 ? 1u : 0u, err);
  }
  return st;
}

/* A sum completed at slot: its transfers in are the dependencies of the send up. */
static tn_status_t send_sum(rplan_t *p, uint64_t slot, tn_err_t *err) {
  uint32_t v = (uint32_t)(slot / p->nchunks), c = (uint32_t)(slot % p->nchunks), nk;
  kids_of(p, v, c, &nk);
  uint32_t deps[FOREST_MAX_NPUS], nd = 0;
  for (uint32_t x = p->head[slot]; x != SCHED_NONE && nd < nk; x = TN_VEC_AT(&p->prev, uint32_t, x))
    deps[nd++] = x;
  for (uint32_t i = 0; i < nd / 2; i++) { /* oldest first */
    uint32_t tmp = deps[i];
    deps[i] = deps[nd - 1 - i];
    deps[nd - 1 - i] = tmp;
  }
  return send_up(p, v, c, deps, nd, err);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* Transfer xi arrived: its reduction is done SCHED_COMP_PS after the slot's previous one. The
 * arrivals of an instant take their turns in transfer order, as the lowering serialises
 * them. */
static tn_status_t arrived(rplan_t *p, uint32_t xi, uint64_t now, tn_err_t *err) {
  sched_xfer_t *x = &TN_VEC_AT(&p->s->xfers, sched_xfer_t, xi);
  uint32_t c = TN_VEC_AT(&p->s->chunks, uint32_t, x->chunk_off);
  uint64_t slot = (uint64_t)x->dst * p->nchunks + c;
  TN_VEC_AT(&p->prev, uint32_t, xi) = p->head[slot];
  p->head[slot] = xi;
  uint64_t done = (p->comp_free[slot] > now ? p->comp_free[slot] : now) + SCHED_COMP_PS;
  p->comp_free[slot] = done;
  if (done > p->s->time_ps) p->s->time_ps = done;
  return ten_timer(p->eng, done - now, TIMER_BIT | xi, err);
}

/* Transfer xi's reduction is done. */
static tn_status_t reduced(rplan_t *p, uint32_t xi, tn_err_t *err) {
  const sched_xfer_t *x = schedule_xfer(p->s, xi);
  uint32_t v = x->dst, c = TN_VEC_AT(&p->s->chunks, uint32_t, x->chunk_off);
  uint64_t slot = (uint64_t)v * p->nchunks + c;
  p->got[v]++;
  p->last_in[v] = xi;
  tn_status_t st = TN_OK;
  if (--p->pending[slot] == 0 && c / p->k != v) st = tn_vec_push(&p->ready, &slot, err);
  if (st == TN_OK && !p->dirty[v]) {
    p->dirty[v] = 1;
    st = tn_vec_push(&p->dirty_list, &v, err);
  }
  return st;
}

/* The end of an instant: the reductions of its arrivals start, then the sums completed
 * are sent (by NPU, then chunk), then the leaf sends released (by NPU). */
static tn_status_t issue(rplan_t *p, uint64_t now, tn_err_t *err) {
  tn_status_t st = TN_OK;
  uint32_t *arr = p->arrivals.data;
  if (p->arrivals.len > 1) qsort(arr, p->arrivals.len, sizeof *arr, cmp_u32);
  for (size_t i = 0; st == TN_OK && i < p->arrivals.len; i++)
    st = arrived(p, arr[i], now, err);
  p->arrivals.len = 0;
  uint64_t *ready = p->ready.data;
  if (p->ready.len > 1) qsort(ready, p->ready.len, sizeof *ready, cmp_u64);
  for (size_t i = 0; st == TN_OK && i < p->ready.len; i++)
    st = send_sum(p, ready[i], err);
  p->ready.len = 0;
  uint32_t *dl = p->dirty_list.data;
  if (p->dirty_list.len > 1) qsort(dl, p->dirty_list.len, sizeof *dl, cmp_u32);
  for (size_t i = 0; st == TN_OK && i < p->dirty_list.len; i++) {
    p->dirty[dl[i]] = 0;
    st = release(p, dl[i], err);
  }
  p->dirty_list.len = 0;
  return st;
}

static tn_status_t run(rplan_t *p, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t v = 0; st == TN_OK && v < p->n; v++)
    st = release(p, v, err);
  ten_event_t ev;
  while (st == TN_OK && ten_next(p->eng, &ev)) {
    if (ev.kind == TEN_EV_DELIVER) {
      uint32_t xi = (uint32_t)ev.cookie;
      TN_VEC_AT(&p->s->xfers, sched_xfer_t, xi).end_ps = ev.time_ps;
      st = tn_vec_push(&p->arrivals, &xi, err);
    } else {
      st = reduced(p, (uint32_t)(ev.cookie & ~TIMER_BIT), err);
    }
    if (st == TN_OK && ten_peek_time(p->eng) != ev.time_ps) st = issue(p, ev.time_ps, err);
  }
  if (st == TN_OK) st = ten_engine_status(p->eng, err);
  if (st == TN_OK && schedule_len(p->s) != (uint64_t)p->n * (p->n - 1) * p->k)
    st = tn_err_set(err, TN_INTERNAL, "forest: the reduction planned %u of %llu transfers",
                    schedule_len(p->s), (unsigned long long)p->n * (p->n - 1) * p->k);
  return st;
}

/* One plan with the given pacing into *out (initialised here; empty on failure). */
static tn_status_t plan_once(rplan_t *p, const topo_t *t, topo_routes_t *routes, uint32_t ahead,
                             schedule_t *out, tn_err_t *err) {
  schedule_init(out, TN_REDUCESCATTER, p->n, p->k, p->size);
  p->s = out;
  p->ahead = ahead;
  uint64_t slots = (uint64_t)p->n * p->nchunks;
  memset(p->got, 0, p->n * sizeof *p->got);
  memset(p->released, 0, p->n * sizeof *p->released);
  memset(p->comp_free, 0, slots * sizeof *p->comp_free);
  memset(p->head, 0xff, slots * sizeof *p->head);
  for (uint32_t v = 0; v < p->n; v++)
    for (uint64_t c = 0; c < p->nchunks; c++) {
      uint32_t nk;
      kids_of(p, v, (uint32_t)c, &nk);
      p->pending[v * p->nchunks + c] = nk;
    }
  p->prev.len = 0;
  size_t xfers = (size_t)p->n * (p->n - 1) * p->k;
  tn_status_t st = tn_vec_reserve(&out->xfers, xfers, err);
  if (st == TN_OK) st = tn_vec_reserve(&p->prev, xfers, err);
  if (st == TN_OK) st = ten_engine_create(t, routes, &p->eng, err);
  if (st == TN_OK && p->tie_window != UINT64_MAX) schedule_keep_ties(out, p->eng, p->tie_window);
  if (st == TN_OK) st = run(p, err);
  ten_engine_free(p->eng);
  p->eng = NULL;
  if (st != TN_OK) schedule_free(out);
  return st;
}

/* Pacings tried (waves ahead); the fastest plan is kept, the first among equals. Measured
 * at 1 GiB over the direct and switch fabrics of bench_synth: 2 or 4 was always best or
 * within 0.1% of it; 1, 8 and none never were. The two-level trees (FOREST_PACK_LEVELS)
 * also try none, the last: at 1 MiB, 32 chunks, leaf-32 1.321 of the bound unpaced against
 * 2.616 paced, where the fat-trees are faster paced (fattree-64-2to1 1.152 against 1.790). */
static const uint32_t paces[] = {2, 4, 0};
#define PACED_TRIES 2u /* the paces tried on the other packings */

/* One pacing on a plan state of its own (set up afresh: the state is per slot, so two
 * pacings cannot share it side by side); routes NULL means a fresh table (routes are not
 * thread-safe). */
typedef struct rjob {
  const topo_t *t;
  topo_routes_t *routes;
  const forest_pack_t *pk;
  uint32_t k, ahead;
  uint64_t size, tie_window;
  schedule_t s;
  tn_status_t st;
  tn_err_t e;
} rjob_t;

static void plan_alone(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  rjob_t *j = &((rjob_t *)ctx)[i];
  const topo_t *t = j->t;
  rplan_t p = {.pk = j->pk,
               .n = t->npus,
               .k = j->k,
               .nchunks = (uint64_t)t->npus * j->k,
               .size = j->size,
               .tie_window = j->tie_window};
  tn_vec_init(&p.prev, sizeof(uint32_t));
  tn_vec_init(&p.arrivals, sizeof(uint32_t));
  tn_vec_init(&p.ready, sizeof(uint64_t));
  tn_vec_init(&p.dirty_list, sizeof(uint32_t));
  topo_routes_t *own = NULL;
  tn_status_t st = j->routes ? TN_OK : topo_routes_create(t, &own, &j->e);
  if (st == TN_OK) st = forest_i_kids(j->pk, j->k, &p.kd, &j->e);
  if (st == TN_OK) st = setup(&p, &j->e);
  schedule_init(&j->s, TN_REDUCESCATTER, t->npus, j->k, j->size);
  if (st == TN_OK) st = plan_once(&p, t, j->routes ? j->routes : own, j->ahead, &j->s, &j->e);
  rplan_free(&p);
  topo_routes_free(own);
  j->st = st;
}

tn_status_t forest_i_plan_reduce(const topo_t *t, topo_routes_t *routes, const forest_pack_t *pk,
                                 uint64_t size_bytes, const forest_opts_t *opts, schedule_t *out,
                                 tn_err_t *err) {
  uint32_t k = opts && opts->chunks_per_npu
                   ? opts->chunks_per_npu
                   : forest_i_chunks(t->npus, size_bytes, FOREST_MAX_CHUNKS);
  schedule_init(out, TN_REDUCESCATTER, t->npus, k, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, k, err);
  if (st != TN_OK) return st;
  bool pace = !opts || opts->pace;
  size_t tries = !pace                                         ? 1
                 : opts && opts->packing == FOREST_PACK_LEVELS ? sizeof paces / sizeof paces[0]
                                                               : PACED_TRIES;
  uint64_t window = opts && opts->keep_ties ? opts->tie_window_ps : UINT64_MAX;
  unsigned threads = tn_thread_count();
  if (pace && threads > 1) {
    /* Both pacings side by side, then compared in their order: the plan kept (and the
     * failure reported) is the one-thread loop's. */
    enum { TRIES = sizeof paces / sizeof paces[0] };
    rjob_t jobs[TRIES];
    memset(jobs, 0, sizeof jobs);
    for (size_t i = 0; i < tries; i++)
      jobs[i] = (rjob_t){.t = t,
                         .routes = i == 0 ? routes : NULL,
                         .pk = pk,
                         .k = k,
                         .ahead = paces[i],
                         .size = size_bytes,
                         .tie_window = window};
    tn_parallel_for(tries, threads < tries ? threads : (unsigned)tries, plan_alone, jobs);
    size_t kept = tries;
    for (size_t i = 0; st == TN_OK && i < tries; i++) {
      if (jobs[i].st != TN_OK)
        st = tn_err_set(err, jobs[i].st, "%s", jobs[i].e.msg);
      else if (kept == tries || jobs[i].s.time_ps < jobs[kept].s.time_ps)
        kept = i;
    }
    schedule_free(out);
    for (size_t i = 0; i < tries; i++) {
      if (st == TN_OK && i == kept)
        *out = jobs[i].s;
      else
        schedule_free(&jobs[i].s);
    }
    if (st != TN_OK) schedule_init(out, TN_REDUCESCATTER, t->npus, k, size_bytes);
    return st;
  }
  rplan_t p = {.pk = pk,
               .n = t->npus,
               .k = k,
               .nchunks = (uint64_t)t->npus * k,
               .size = size_bytes,
               .tie_window = window};
  tn_vec_init(&p.prev, sizeof(uint32_t));
  tn_vec_init(&p.arrivals, sizeof(uint32_t));
  tn_vec_init(&p.ready, sizeof(uint64_t));
  tn_vec_init(&p.dirty_list, sizeof(uint32_t));
  st = forest_i_kids(pk, k, &p.kd, err);
  if (st == TN_OK) st = setup(&p, err);
  schedule_free(out);
  if (st == TN_OK) st = plan_once(&p, t, routes, pace ? paces[0] : 0, out, err);
  for (size_t i = 1; st == TN_OK && i < tries; i++) {
    schedule_t s;
    st = plan_once(&p, t, routes, paces[i], &s, err);
    if (st != TN_OK) break;
    if (s.time_ps < out->time_ps) {
      schedule_free(out);
      *out = s;
    } else {
      schedule_free(&s);
    }
  }
  rplan_free(&p);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_REDUCESCATTER, t->npus, k, size_bytes);
  }
  return st;
}
