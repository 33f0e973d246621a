/* forest/plan.c — forest_run: packs the trees (pack.c), then runs the chunks down them on
 * ten/'s engine, every NPU forwarding a chunk to its children in that chunk's tree as soon
 * as it arrives. The engine is the simulator's, so the plan's time is the simulated one. */
#include <stdlib.h>
#include <string.h>

#include "forest/forest_internal.h"

/* The automatic chunking: as many chunks per NPU as MAX_CHUNKS (MAX_CHUNKS_UNGATED for a
 * plan that will run without its pacing waits: reversed, it does better coarser), but none
 * below MIN_CHUNK_BYTES (smaller ones cost more in latency and nodes than they gain in
 * pipelining) and at most MAX_TRANSFERS transfers in all (what is lowered, written and
 * simulated). Measured with bench_synth: 128 against 64 took the All-Gather on
 * fattree-32-4to1 from 1.067 to 1.045 of the bound and on spine-4x8 from 1.024 to 1.015,
 * while spine-4x8's Reduce-Scatter went from 1.064 to 1.080. */
#define MIN_CHUNK_BYTES (16u << 10)
#define MAX_CHUNKS 128u
#define MAX_CHUNKS_UNGATED 64u
#define MAX_TRANSFERS (1u << 19)

typedef struct plan {
  const topo_t *t;
  const forest_pack_t *pk;
  uint32_t n, k, used; /* NPUs, chunks per NPU, trees per NPU in use (<= pk->trees) */
  uint32_t *kid_off;   /* per used tree (r * used + i): children CSR, kid_off[tree * (n + 1) + v] */
  uint32_t *kids;
  ten_engine_t *eng;
  schedule_t *s;
  uint64_t size;
  uint32_t ahead;        /* pacing: own chunks an NPU may send ahead of its deliveries'
                            rate (0: no pacing, every own chunk at once) */
  uint32_t *got;         /* per NPU: deliveries so far */
  uint32_t *released;    /* per NPU: own chunks sent so far */
  uint32_t *last_in;     /* per NPU: index of its latest delivery */
} plan_t;

/* Tree (of plan's numbering) that chunk c goes down: its owner's trees in turn. */
static uint32_t tree_of(const plan_t *p, uint32_t c) {
  uint32_t r = c / p->k, j = c % p->k;
  return r * p->used + j % p->used;
}

/* Children lists of every used tree, in ascending NPU id. */
static tn_status_t build_kids(plan_t *p, tn_err_t *err) {
  uint32_t n = p->n, ntrees = n * p->used;
  size_t offs = (size_t)ntrees * (n + 1);
  tn_status_t st = tn_calloc(offs, sizeof *p->kid_off, &p->kid_off, err);
  if (st == TN_OK) st = tn_calloc((size_t)ntrees * n, sizeof *p->kids, &p->kids, err);
  for (uint32_t tr = 0; st == TN_OK && tr < ntrees; tr++) {
    uint32_t r = tr / p->used, i = tr % p->used;
    const uint32_t *parent = &p->pk->parent[((size_t)r * p->pk->trees + i) * n];
    uint32_t *off = &p->kid_off[(size_t)tr * (n + 1)], *kid = &p->kids[(size_t)tr * n];
    for (uint32_t v = 0; v < n; v++)
      if (parent[v] != FOREST_NO_PARENT) off[parent[v] + 1]++;
    for (uint32_t v = 0; v < n; v++)
      off[v + 1] += off[v];
    for (uint32_t v = 0; v < n; v++) /* ascending v: each list comes out sorted */
      if (parent[v] != FOREST_NO_PARENT) kid[off[parent[v]]++] = v;
    for (uint32_t v = n; v > 0; v--) /* the fill moved every start to the next one's */
      off[v] = off[v - 1];
    off[0] = 0;
  }
  return st;
}

/* Sends chunk c from u to each of its children in c's tree; dep is the transfer that
 * brought c to u, or at the owner SCHED_NONE or the delivery that releases it (pacing). */
static tn_status_t forward(plan_t *p, uint32_t u, uint32_t c, uint32_t dep, tn_err_t *err) {
  uint32_t tr = tree_of(p, c);
  const uint32_t *off = &p->kid_off[(size_t)tr * (p->n + 1)], *kid = &p->kids[(size_t)tr * p->n];
  uint64_t bytes = ten_chunk_bytes(p->size, p->n, p->k, c);
  uint64_t now = ten_now(p->eng);
  for (uint32_t i = off[u]; i < off[u + 1]; i++) {
    uint32_t index = schedule_len(p->s);
    sched_xfer_t x = {.src = u, .dst = kid[i], .bytes = bytes, .start_ps = now, .nchunks = 1,
                      .ndeps = dep == SCHED_NONE ? 0u : 1u};
    tn_status_t st = schedule_add(p->s, &x, &c, &dep, NULL, err);
    if (st == TN_OK) st = ten_send(p->eng, u, kid[i], bytes, index, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* Deliveries NPU r must have had before it sends its own chunk j: in steady state an NPU
 * receives n - 1 chunks for every one of its own it sends, so own chunk j waits for
 * (j - ahead) (n - 1) of them. Sending every own chunk at once instead fills the shared
 * links' queues with owners' data ahead of the relays that others wait for. */
static uint32_t needed(const plan_t *p, uint32_t j) {
  return p->ahead == 0 || j < p->ahead ? 0 : (j - p->ahead) * (p->n - 1);
}

/* Sends NPU r's own chunks that its deliveries so far release. */
static tn_status_t release(plan_t *p, uint32_t r, tn_err_t *err) {
  tn_status_t st = TN_OK;
  while (st == TN_OK && p->released[r] < p->k && p->got[r] >= needed(p, p->released[r])) {
    uint32_t j = p->released[r]++;
    uint32_t gate = needed(p, j) > 0 ? p->last_in[r] : SCHED_NONE;
    st = forward(p, r, r * p->k + j, gate, err);
  }
  return st;
}

static tn_status_t run(plan_t *p, tn_err_t *err) {
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; st == TN_OK && r < p->n; r++)
    st = release(p, r, err);
  ten_event_t ev;
  while (st == TN_OK && ten_next(p->eng, &ev)) {
    if (ev.kind != TEN_EV_DELIVER) continue;
    uint32_t index = (uint32_t)ev.cookie;
    sched_xfer_t *x = &TN_VEC_AT(&p->s->xfers, sched_xfer_t, index);
    x->end_ps = ev.time_ps;
    if (ev.time_ps > p->s->time_ps) p->s->time_ps = ev.time_ps;
    uint32_t c = TN_VEC_AT(&p->s->chunks, uint32_t, x->chunk_off), v = x->dst;
    st = forward(p, v, c, index, err);
    p->got[v]++;
    p->last_in[v] = index;
    if (st == TN_OK) st = release(p, v, err);
  }
  if (st == TN_OK) st = ten_engine_status(p->eng, err);
  return st;
}

/* Chunks per NPU for size (see MAX_CHUNKS), at least one. */
static uint32_t auto_chunks(uint32_t n, uint64_t size, bool gates) {
  uint64_t k = gates ? MAX_CHUNKS : MAX_CHUNKS_UNGATED, most = size / ((uint64_t)n * MIN_CHUNK_BYTES);
  uint64_t cap = MAX_TRANSFERS / ((uint64_t)n * (n - 1));
  if (k > most) k = most;
  if (k > cap) k = cap;
  return k ? (uint32_t)k : 1u;
}

static tn_status_t check(const topo_t *t, uint64_t size, uint32_t k, tn_err_t *err) {
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "forest: fabric '%s' has %u NPU; it needs 2", t->name,
                      t->npus);
  if (t->npus > FOREST_MAX_NPUS)
    return tn_err_set(err, TN_LIMIT, "forest: fabric '%s' has %u NPUs, above its cap of %u",
                      t->name, t->npus, FOREST_MAX_NPUS);
  if (size < (uint64_t)t->npus * k)
    return tn_err_set(err, TN_INVAL,
                      "forest: size %llu B is smaller than one byte per chunk (%u NPUs x %u)",
                      (unsigned long long)size, t->npus, k);
  return topo_check_connected(t, err);
}

/* Removes the pacing dependencies (an owner's send depending on a delivery of another
 * chunk): a reversed lowering would read them as data. The times and the order of the
 * plan stay as they are. */
static void drop_gates(schedule_t *s) {
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    sched_xfer_t *x = &TN_VEC_AT(&s->xfers, sched_xfer_t, i);
    uint32_t c = TN_VEC_AT(&s->chunks, uint32_t, x->chunk_off);
    if (x->ndeps == 1 && c / s->chunks_per_npu == x->src) x->ndeps = 0;
  }
}

/* One plan with the given pacing into *out (re-initialised), on p's trees. */
static tn_status_t plan_once(plan_t *p, const topo_t *t, topo_routes_t *routes, uint32_t ahead,
                             schedule_t *out, tn_err_t *err) {
  schedule_init(out, TN_ALLGATHER, p->n, p->k, p->size);
  p->s = out;
  p->ahead = ahead;
  memset(p->got, 0, p->n * sizeof *p->got);
  memset(p->released, 0, p->n * sizeof *p->released);
  tn_status_t st = tn_vec_reserve(&out->xfers, (size_t)p->n * (p->n - 1) * p->k, err);
  if (st == TN_OK) st = ten_engine_create(t, routes, &p->eng, err);
  if (st == TN_OK) st = run(p, err);
  ten_engine_free(p->eng);
  p->eng = NULL;
  if (st != TN_OK) schedule_free(out);
  return st;
}

/* Pacings tried for an All-Gather (chunks ahead); the fastest plan is kept, the first
 * among equals. Which is best depends on how deep the trees relay across shared links. */
static const uint32_t paces[] = {1, 2, 4};

/* Plans every pacing (or none) and keeps the fastest in *out. */
static tn_status_t plan_best(plan_t *p, const topo_t *t, topo_routes_t *routes, bool pace,
                             schedule_t *out, tn_err_t *err) {
  size_t tries = pace ? sizeof paces / sizeof paces[0] : 1;
  tn_status_t st = plan_once(p, t, routes, pace ? paces[0] : 0, out, err);
  for (size_t i = 1; st == TN_OK && i < tries; i++) {
    schedule_t s;
    st = plan_once(p, t, routes, paces[i], &s, err);
    if (st != TN_OK) break;
    if (s.time_ps < out->time_ps) {
      schedule_free(out);
      *out = s;
    } else {
      schedule_free(&s);
    }
  }
  return st;
}

tn_status_t forest_run(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                       schedule_t *out, tn_err_t *err) {
  uint32_t trees = opts && opts->trees_per_npu ? opts->trees_per_npu : FOREST_TREES;
  bool gates = opts && opts->gates;
  uint32_t k = opts && opts->chunks_per_npu ? opts->chunks_per_npu
               : t->npus >= 2                ? auto_chunks(t->npus, size_bytes, gates)
                                             : 1;
  schedule_init(out, TN_ALLGATHER, t->npus, k, size_bytes);
  tn_status_t st = check(t, size_bytes, k, err);
  if (st != TN_OK) return st;
  plan_t p = {.t = t, .n = t->npus, .k = k, .used = k < trees ? k : trees, .size = size_bytes};
  forest_pack_t pk = {0};
  topo_routes_t *routes = NULL;
  st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = forest_i_pack(t, routes, p.used, &pk, err);
  p.pk = &pk;
  if (st == TN_OK) st = build_kids(&p, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.got, &p.got, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.released, &p.released, err);
  if (st == TN_OK) st = tn_calloc(p.n, sizeof *p.last_in, &p.last_in, err);
  schedule_free(out);
  if (st == TN_OK) st = plan_best(&p, t, routes, opts && opts->pace, out, err);
  if (st == TN_OK && !(opts && opts->gates)) drop_gates(out);
  free(p.kid_off);
  free(p.kids);
  free(p.got);
  free(p.released);
  free(p.last_in);
  forest_i_pack_free(&pk);
  topo_routes_free(routes);
  if (st != TN_OK) schedule_init(out, TN_ALLGATHER, t->npus, k, size_bytes);
  return st;
}
