/* milp/plan.c — discrete All-Gather plans (who brings chunk c to NPU v, over which
 * vlink, at which step): checking them and the two starting heuristics — a TEN list
 * scheduler and the re-timing of a caller's warm start — that give the MILP its first
 * incumbent and its horizon. */
#include "milp/milp_internal.h"

#include <stdlib.h>
#include <string.h>

tn_status_t milp_i_plan_init(const milp_fab_t *f, milp_plan_t *p, tn_err_t *err) {
  size_t n = (size_t)f->nchunks * f->npus;
  memset(p, 0, sizeof *p);
  tn_status_t st = tn_calloc(n, sizeof *p->vl, &p->vl, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *p->step, &p->step, err);
  if (st != TN_OK) {
    milp_i_plan_free(p);
    return st;
  }
  for (size_t i = 0; i < n; i++)
    p->vl[i] = MILP_NONE;
  return TN_OK;
}

void milp_i_plan_free(milp_plan_t *p) {
  if (p == NULL) return;
  free(p->vl);
  free(p->step);
  memset(p, 0, sizeof *p);
}

uint32_t milp_i_plan_arrival(const milp_fab_t *f, const milp_plan_t *p, uint32_t c, uint32_t v) {
  if (milp_i_owner(f, c) == v) return 0;
  size_t i = (size_t)c * f->npus + v;
  if (p->vl[i] == MILP_NONE) return MILP_NONE;
  return p->step[i] + f->vl[p->vl[i]].arrive;
}

/* Per-(link, step) occupancy that grows with the horizon. */
typedef struct occ {
  uint8_t *busy; /* [link * cap + step] */
  uint32_t nlinks, cap;
} occ_t;

static tn_status_t occ_need(occ_t *o, uint32_t steps, tn_err_t *err) {
  if (steps <= o->cap) return TN_OK;
  if (steps > 2 * MILP_MAX_STEPS) /* a start below the cap plus one transfer's span */
    return tn_err_set(err, TN_LIMIT, "the schedule needs more than %u time steps", MILP_MAX_STEPS);
  uint32_t ncap = o->cap ? o->cap : 64;
  while (ncap < steps)
    ncap *= 2;
  uint8_t *nb = NULL;
  tn_status_t st = tn_calloc((size_t)o->nlinks * ncap, 1, &nb, err);
  if (st != TN_OK) return st;
  for (size_t l = 0; l < o->nlinks && o->busy; l++)
    memcpy(&nb[l * ncap], &o->busy[l * o->cap], o->cap);
  free(o->busy);
  o->busy = nb;
  o->cap = ncap;
  return TN_OK;
}

/* True when every hop of e is free for a start at step t (occupancy already sized). */
static bool occ_free(const occ_t *o, const milp_vlink_t *e, uint32_t t) {
  for (uint32_t h = 0; h < e->nhops; h++)
    for (uint32_t s = t + e->off[h]; s < t + e->off[h] + e->dur[h]; s++)
      if (o->busy[(size_t)e->link[h] * o->cap + s]) return false;
  return true;
}

static void occ_take(occ_t *o, const milp_vlink_t *e, uint32_t t) {
  for (uint32_t h = 0; h < e->nhops; h++)
    for (uint32_t s = t + e->off[h]; s < t + e->off[h] + e->dur[h]; s++)
      o->busy[(size_t)e->link[h] * o->cap + s] = 1;
}

static uint32_t span_of(const milp_vlink_t *e) {
  return e->off[e->nhops - 1] + e->dur[e->nhops - 1];
}

tn_status_t milp_i_plan_check(const milp_fab_t *f, milp_plan_t *p, tn_err_t *err) {
  occ_t o = {NULL, f->t->nlinks, 0};
  tn_status_t st = TN_OK;
  uint32_t mk = 0;
  for (uint32_t c = 0; c < f->nchunks && st == TN_OK; c++)
    for (uint32_t v = 0; v < f->npus && st == TN_OK; v++) {
      if (milp_i_owner(f, c) == v) continue;
      size_t i = (size_t)c * f->npus + v;
      if (p->vl[i] == MILP_NONE) {
        st = tn_err_set(err, TN_INTERNAL, "plan: NPU %u never receives chunk %u", v, c);
        break;
      }
      const milp_vlink_t *e = &f->vl[p->vl[i]];
      uint32_t have = milp_i_plan_arrival(f, p, c, e->src);
      if (e->dst != v || have == MILP_NONE || have > p->step[i])
        st = tn_err_set(err, TN_INTERNAL,
                        "plan: NPU %u sends chunk %u at step %u before "
                        "holding it",
                        e->src, c, p->step[i]);
      else if ((st = occ_need(&o, p->step[i] + span_of(e), err)) == TN_OK) {
        if (!occ_free(&o, e, p->step[i]))
          st = tn_err_set(err, TN_INTERNAL,
                          "plan: a link of %u -> %u is used twice at "
                          "step %u",
                          e->src, e->dst, p->step[i]);
        occ_take(&o, e, p->step[i]);
      }
      if (p->step[i] + e->arrive > mk) mk = p->step[i] + e->arrive;
    }
  free(o.busy);
  if (st == TN_OK) p->makespan = mk;
  return st;
}

/* True when e's translates (all of them with sym, else e alone) are free at step t. */
static bool images_free(const milp_fab_t *f, const occ_t *o, bool sym, uint32_t e, uint32_t t) {
  for (uint32_t r = 0; r < (sym ? f->npus : 1); r++)
    if (!occ_free(o, &f->vl[sym ? milp_i_sym_vlink(f, r, e) : e], t)) return false;
  return true;
}

/* Records chunk c over e at step t (with all translates under sym). */
static void place(const milp_fab_t *f, occ_t *o, bool sym, milp_plan_t *p, uint32_t c, uint32_t e,
                  uint32_t t) {
  for (uint32_t r = 0; r < (sym ? f->npus : 1); r++) {
    uint32_t ce = sym ? milp_i_sym_chunk(f, r, c) : c, ee = sym ? milp_i_sym_vlink(f, r, e) : e;
    size_t cell = (size_t)ce * f->npus + f->vl[ee].dst;
    p->vl[cell] = ee;
    p->step[cell] = t;
    occ_take(o, &f->vl[ee], t);
  }
}

/* The list scheduler: step by step, every vlink whose links are free takes the chunk its
 * source has held longest among those its destination lacks (ties: the chunk id nearest
 * after the source's own, for a ring-like spread). */
tn_status_t milp_i_heuristic(const milp_fab_t *f, bool sym, milp_plan_t *p, tn_err_t *err) {
  occ_t o = {NULL, f->t->nlinks, 0};
  uint32_t n = f->npus, nc = sym ? f->k : f->nchunks;
  uint64_t left = (uint64_t)nc * (n - 1);
  tn_status_t st = TN_OK;
  for (uint32_t t = 0; left > 0 && st == TN_OK; t++) {
    if (t >= MILP_MAX_STEPS) {
      st = tn_err_set(err, TN_LIMIT, "the starting schedule needs more than %u time steps",
                      MILP_MAX_STEPS);
      break;
    }
    for (uint32_t i = 0; i < f->nvl && st == TN_OK; i++) {
      const milp_vlink_t *e = &f->vl[i];
      if ((st = occ_need(&o, t + span_of(e), err)) != TN_OK) break;
      if (!images_free(f, &o, sym, i, t)) continue;
      uint32_t best = MILP_NONE, best_have = 0;
      for (uint32_t j = 0; j < nc; j++) {
        uint32_t c = (e->src * f->k + j) % nc;
        if (milp_i_owner(f, c) == e->dst || p->vl[(size_t)c * n + e->dst] != MILP_NONE) continue;
        uint32_t have = milp_i_plan_arrival(f, p, c, e->src);
        if (have == MILP_NONE || have > t) continue;
        if (best == MILP_NONE || have < best_have) best = c, best_have = have;
      }
      if (best == MILP_NONE) continue;
      place(f, &o, sym, p, best, i, t);
      left--;
    }
  }
  free(o.busy);
  return st == TN_OK ? milp_i_plan_check(f, p, err) : st;
}

tn_status_t milp_i_retime(const milp_fab_t *f, const schedule_t *w, milp_plan_t *p, bool *fits,
                          tn_err_t *err) {
  *fits = true;
  if (w->coll != TN_ALLGATHER || w->npus != f->npus || w->chunks_per_npu != f->k)
    return tn_err_set(err, TN_INVAL,
                      "warm start: an All-Gather of %u NPUs x %u chunks "
                      "is needed, not %s of %u x %u",
                      f->npus, f->k, tn_coll_name(w->coll), w->npus, w->chunks_per_npu);
  uint32_t nx = schedule_len(w), *order = NULL;
  occ_t o = {NULL, f->t->nlinks, 0};
  tn_status_t st = tn_calloc(nx ? nx : 1, sizeof *order, &order, err);
  /* Transfers in start order (stable: insertion sort keeps equal starts in issue order). */
  for (uint32_t i = 0; i < nx && st == TN_OK; i++) {
    uint32_t j = i;
    while (j > 0 && schedule_xfer(w, order[j - 1])->start_ps > schedule_xfer(w, i)->start_ps)
      order[j] = order[j - 1], j--;
    order[j] = i;
  }
  for (uint32_t q = 0; q < nx && st == TN_OK; q++) {
    const sched_xfer_t *x = schedule_xfer(w, order[q]);
    uint32_t vi = x->src < f->npus && x->dst < f->npus
                      ? f->vl_index[(size_t)x->src * f->npus + x->dst]
                      : MILP_NONE;
    if (x->src >= f->npus || x->dst >= f->npus || x->src == x->dst) {
      st = tn_err_set(err, TN_INVAL, "warm start: transfer %u goes from %u to %u", order[q], x->src,
                      x->dst);
      break;
    }
    if (vi == MILP_NONE) { /* routed through other NPUs: the model cannot express it */
      *fits = false;
      break;
    }
    const milp_vlink_t *e = &f->vl[vi];
    for (uint32_t k = 0; k < x->nchunks && st == TN_OK; k++) {
      uint32_t c = TN_VEC_AT(&w->chunks, uint32_t, x->chunk_off + k);
      if (c >= f->nchunks) {
        st = tn_err_set(err, TN_INVAL, "warm start: transfer %u carries chunk %u of %u", order[q],
                        c, f->nchunks);
        break;
      }
      uint32_t have = milp_i_plan_arrival(f, p, c, e->src);
      if (milp_i_owner(f, c) == e->dst || p->vl[(size_t)c * f->npus + e->dst] != MILP_NONE)
        continue; /* a repeat delivery: the MILP never needs it */
      if (have == MILP_NONE) {
        st = tn_err_set(err, TN_INVAL,
                        "warm start: transfer %u sends chunk %u from NPU %u "
                        "before it arrives there",
                        order[q], c, e->src);
        break;
      }
      uint32_t t = have;
      for (;; t++) {
        if ((st = occ_need(&o, t + span_of(e), err)) != TN_OK || occ_free(&o, e, t)) break;
      }
      if (st != TN_OK) break;
      occ_take(&o, e, t);
      p->vl[(size_t)c * f->npus + e->dst] = vi;
      p->step[(size_t)c * f->npus + e->dst] = t;
    }
  }
  free(order);
  free(o.busy);
  if (st != TN_OK || !*fits) return st;
  for (uint32_t c = 0; c < f->nchunks; c++)
    for (uint32_t v = 0; v < f->npus; v++)
      if (milp_i_plan_arrival(f, p, c, v) == MILP_NONE)
        return tn_err_set(err, TN_INVAL, "warm start: NPU %u never receives chunk %u", v, c);
  return milp_i_plan_check(f, p, err);
}
