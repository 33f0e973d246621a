/* milp/replay.c — turns a discrete plan into the schedule_t the rest of the pipeline
 * reads, by running it through ten's engine with the simulator's discipline: a transfer
 * is issued the instant its dependencies have been delivered to the sender, transfers
 * that become ready at one instant are issued in plan order (step, src, dst, chunk). The
 * engine's times are the schedule's times, so the lowered algorithm simulates to exactly
 * out->time_ps.
 *
 * The simulator sends a chunk the moment it is at the sender, and a link serves its
 * messages first come, first served; a plan may instead hold a chunk back for a later
 * step and let a later arrival pass it, which the simulator cannot do. So a transfer the
 * plan delays gets one more dependency, after the transfer that brought the chunk (if
 * any): the latest delivery to the sender planned after the chunk's arrival and no later
 * than the planned start. When such a delivery lands exactly at the planned start, as it
 * usually does, the replay keeps the plan's timing. Gates are only allowed on request
 * (milp_opts_t.gate_sends, for All-Gather: the Reduce-Scatter reversal of
 * algo_from_schedule reads every dependency as data); then both replays, with and
 * without them, are run and the faster is kept. */
#include "milp/milp_internal.h"

#include <stdlib.h>

typedef struct xfer {
  uint32_t c, src, dst, step, arrive;
  uint32_t dep;  /* transfer that brought c to src, MILP_NONE at the owner */
  uint32_t gate; /* a delivery to src that holds this transfer back, or MILP_NONE */
} xfer_t;

static bool key_less(const xfer_t *a, const xfer_t *b) {
  if (a->step != b->step) return a->step < b->step;
  if (a->src != b->src) return a->src < b->src;
  if (a->dst != b->dst) return a->dst < b->dst;
  return a->c < b->c;
}

/* Insertion sort of transfer ids by plan order (the lists are short). */
static void sort_by_key(const xfer_t *x, uint32_t *ids, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    uint32_t v = ids[i], j = i;
    while (j > 0 && key_less(&x[v], &x[ids[j - 1]]))
      ids[j] = ids[j - 1], j--;
    ids[j] = v;
  }
}

typedef struct replay {
  xfer_t *x;
  uint32_t nx;
  uint32_t *id;             /* [c * npus + v] -> transfer */
  uint32_t *kid_off, *kids; /* CSR: transfers waiting for each transfer */
  uint32_t *pending;        /* dependencies not yet delivered */
  uint32_t *ready;          /* scratch list of transfers to issue now */
  uint32_t *out_idx;        /* transfer -> index in the schedule */
} replay_t;

static void replay_free(replay_t *r) {
  free(r->x);
  free(r->id);
  free(r->kid_off);
  free(r->kids);
  free(r->pending);
  free(r->ready);
  free(r->out_idx);
}

/* The latest planned delivery to x->src in (arrival of x's chunk there, x->step]. */
static uint32_t find_gate(const milp_fab_t *f, const replay_t *r, const xfer_t *x, uint32_t have) {
  uint32_t best = MILP_NONE;
  for (uint32_t c = 0; c < f->nchunks; c++) {
    uint32_t g = r->id[(size_t)c * f->npus + x->src];
    if (g == MILP_NONE) continue;
    uint32_t a = r->x[g].arrive;
    if (a > have && a <= x->step && (best == MILP_NONE || a > r->x[best].arrive)) best = g;
  }
  return best;
}

static tn_status_t replay_build(const milp_fab_t *f, const milp_plan_t *p, bool gates, replay_t *r,
                                tn_err_t *err) {
  size_t cells = (size_t)f->nchunks * f->npus;
  r->nx = f->nchunks * (f->npus - 1);
  size_t nx = r->nx ? r->nx : 1;
  tn_status_t st = tn_calloc(nx, sizeof *r->x, &r->x, err);
  if (st == TN_OK) st = tn_calloc(cells, sizeof *r->id, &r->id, err);
  if (st == TN_OK) st = tn_calloc(nx + 1, sizeof *r->kid_off, &r->kid_off, err);
  if (st == TN_OK) st = tn_calloc(2 * nx, sizeof *r->kids, &r->kids, err);
  if (st == TN_OK) st = tn_calloc(nx, sizeof *r->pending, &r->pending, err);
  if (st == TN_OK) st = tn_calloc(nx, sizeof *r->ready, &r->ready, err);
  if (st == TN_OK) st = tn_calloc(nx, sizeof *r->out_idx, &r->out_idx, err);
  if (st != TN_OK) return st;
  uint32_t k = 0;
  for (uint32_t c = 0; c < f->nchunks; c++)
    for (uint32_t v = 0; v < f->npus; v++) {
      size_t i = (size_t)c * f->npus + v;
      r->id[i] = MILP_NONE;
      if (milp_i_owner(f, c) == v) continue;
      const milp_vlink_t *e = &f->vl[p->vl[i]];
      r->x[k] = (xfer_t){c, e->src, v, p->step[i], p->step[i] + e->arrive, MILP_NONE, MILP_NONE};
      r->id[i] = k++;
    }
  for (uint32_t i = 0; i < r->nx; i++) {
    xfer_t *x = &r->x[i];
    uint32_t have = 0;
    if (milp_i_owner(f, x->c) != x->src) {
      x->dep = r->id[(size_t)x->c * f->npus + x->src];
      have = r->x[x->dep].arrive;
    }
    if (gates && x->step > have) x->gate = find_gate(f, r, x, have);
    if (x->dep != MILP_NONE) r->kid_off[x->dep + 1]++, r->pending[i]++;
    if (x->gate != MILP_NONE) r->kid_off[x->gate + 1]++, r->pending[i]++;
  }
  for (uint32_t i = 0; i < r->nx; i++)
    r->kid_off[i + 1] += r->kid_off[i];
  uint32_t *fill = r->out_idx; /* borrowed as a counter until the replay fills it */
  for (uint32_t i = 0; i < r->nx; i++) {
    const xfer_t *x = &r->x[i];
    if (x->dep != MILP_NONE) r->kids[r->kid_off[x->dep] + fill[x->dep]++] = i;
    if (x->gate != MILP_NONE) r->kids[r->kid_off[x->gate] + fill[x->gate]++] = i;
  }
  return TN_OK;
}

static tn_status_t issue(const milp_fab_t *f, replay_t *r, ten_engine_t *eng, uint32_t nready,
                         schedule_t *out, tn_err_t *err) {
  sort_by_key(r->x, r->ready, nready);
  tn_status_t st = TN_OK;
  for (uint32_t q = 0; q < nready && st == TN_OK; q++) {
    uint32_t i = r->ready[q];
    const xfer_t *x = &r->x[i];
    uint64_t bytes = ten_chunk_bytes(f->size_bytes, f->npus, f->k, x->c);
    uint32_t deps[2], nd = 0;
    if (x->dep != MILP_NONE) deps[nd++] = r->out_idx[x->dep];
    if (x->gate != MILP_NONE) deps[nd++] = r->out_idx[x->gate];
    r->out_idx[i] = schedule_len(out);
    st = ten_send(eng, x->src, x->dst, bytes, i, err);
    sched_xfer_t sx = {x->src, x->dst, bytes, ten_now(eng), 0, 0, 1, 0, nd};
    if (st == TN_OK) st = schedule_add(out, &sx, &x->c, deps, NULL, err);
  }
  return st;
}

static tn_status_t run(const milp_fab_t *f, const milp_plan_t *p, bool gates, schedule_t *out,
                       tn_err_t *err) {
  replay_t r = {0};
  topo_routes_t *routes = NULL;
  ten_engine_t *eng = NULL;
  tn_status_t st = replay_build(f, p, gates, &r, err);
  if (st == TN_OK) st = topo_routes_create(f->t, &routes, err);
  if (st == TN_OK) st = ten_engine_create(f->t, routes, &eng, err);
  if (st != TN_OK) goto fail;
  for (uint32_t i = 0; i < r.nx; i++)
    r.out_idx[i] = 0;
  uint32_t nready = 0, delivered = 0;
  for (uint32_t i = 0; i < r.nx; i++)
    if (r.pending[i] == 0) r.ready[nready++] = i;
  if ((st = issue(f, &r, eng, nready, out, err)) != TN_OK) goto fail;
  while (ten_peek_time(eng) != UINT64_MAX) {
    uint64_t now = ten_peek_time(eng);
    nready = 0;
    ten_event_t ev;
    while (ten_peek_time(eng) == now && ten_next(eng, &ev)) {
      uint32_t i = (uint32_t)ev.cookie;
      TN_VEC_AT(&out->xfers, sched_xfer_t, r.out_idx[i]).end_ps = ev.time_ps;
      if (ev.time_ps > out->time_ps) out->time_ps = ev.time_ps;
      delivered++;
      for (uint32_t j = r.kid_off[i]; j < r.kid_off[i + 1]; j++)
        if (--r.pending[r.kids[j]] == 0) r.ready[nready++] = r.kids[j];
    }
    if ((st = ten_engine_status(eng, err)) != TN_OK) goto fail;
    if ((st = issue(f, &r, eng, nready, out, err)) != TN_OK) goto fail;
  }
  if (delivered != r.nx)
    st = tn_err_set(err, TN_INTERNAL, "replay delivered %u of %u transfers", delivered, r.nx);
fail:
  ten_engine_free(eng);
  topo_routes_free(routes);
  replay_free(&r);
  return st;
}

tn_status_t milp_i_replay(const milp_fab_t *f, const milp_plan_t *p, bool gates, schedule_t *out,
                          bool *gated, tn_err_t *err) {
  *gated = false;
  tn_status_t st = run(f, p, false, out, err);
  if (st != TN_OK || !gates) return st;
  schedule_t g;
  schedule_init(&g, out->coll, out->npus, out->chunks_per_npu, out->size_bytes);
  st = run(f, p, true, &g, err);
  if (st == TN_OK && g.time_ps < out->time_ps) {
    schedule_t tmp = *out;
    *out = g;
    g = tmp;
    *gated = true;
  }
  schedule_free(&g);
  return st;
}
