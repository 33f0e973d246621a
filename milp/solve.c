/* milp/solve.c — the time-indexed All-Gather MILP handed to GLPK: building the model
 * from the discretised fabric, the starting solution through the branch-and-cut
 * callback, the solve under a work limit (simplex iterations and nodes, counted in that
 * callback; the wall clock only as a safety net) with GLPK's output captured, and reading
 * the solution back into a plan. The only file of tenet that includes <glpk.h>.
 *
 * Variables (H = horizon in steps, the starting plan's makespan):
 *   M            makespan in steps, continuous in [lb, H];
 *   x[c,e,t]     binary, chunk c starts over vlink e = (u -> v) at step t; created only
 *                when u can hold c by t (t >= earliest(c,u), a shortest-path bound), v is
 *                not c's owner and the chunk lands by H (t + arrive(e) <= H);
 *   h[c,v,t]     continuous in [0,1], "v holds c at step t", for v != owner and
 *                t in [earliest(c,v), H]; h[c,v,H] is fixed to 1.
 * Rows:
 *   flow         h[c,v,t] - h[c,v,t-1] - sum_{e into v} x[c,e,t-arrive(e)] = 0, so with
 *                h[c,v,H] = 1 every NPU receives every chunk exactly once;
 *   possession   x[c,e,t] <= h[c,u,t] for u = src(e) not owning c;
 *   capacity     per physical link and step, the transfers whose hop occupies it <= 1
 *                (a switch stores nothing: a route's later hops are reserved at their
 *                fixed offsets);
 *   makespan     M + sum_t h[c,v,t] >= H + 1, i.e. M >= the arrival step of c at v.
 * Objective: M + w * sum (t + hops(e)) x[c,e,t], w small enough that the second term
 * (which prefers early transfers and direct links, and makes replays follow the plan)
 * stays below 1/4. A relative gap tolerance of 0.5/(H+1) then stops the search exactly
 * when no schedule with a smaller makespan can exist (the makespan is integral), so
 * GLPK never spends time proving the secondary term.
 * Symmetric mode: only NPU 0's chunks get variables; a capacity row of link l counts
 * every variable whose translate under some r uses l (the translations act freely, so
 * no variable appears twice in a row), and the solution is expanded to all owners.
 * GLPK runs without its MIP presolver (the callback's starting solution must be in the
 * loaded columns) after a dual-simplex root LP; its fatal errors longjmp back through
 * glp_error_hook, as igraph's glpk_support.c does, instead of aborting the process. */
#include "milp/milp_internal.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct model {
  const milp_fab_t *f;
  uint32_t H;
  bool sym;      /* only NPU 0's chunks are variables, standing for all translates */
  uint32_t nc;   /* chunks with variables: k (sym) or all */
  uint32_t nimg; /* translates per variable: npus (sym) or 1 */
  /* x columns per (c, e): first column, first step, count (0: none). */
  int *xcol;
  uint32_t *xlo, *xn;
  /* h columns per (c, v): first column (step earliest(c,v)), 0 for the owner. */
  int *hcol;
  int ncols;
  /* triplets of the constraint matrix, 1-based as GLPK wants them */
  tn_vec_t ia, ja, ar;
  int nrows;
  tn_vec_t kind; /* uint8_t per row: ROW_* */
  double *start; /* starting solution, ncols + 1 entries */
} model_t;

enum { ROW_MAKESPAN = 1, ROW_FLOW = 2, ROW_HOLD = 3, ROW_CAP = 4 };

typedef struct ctx {
  jmp_buf jb;
  FILE *log;
  bool verbose;
  glp_prob *P;
  const double *start;
  bool start_given, start_accepted;
  double bound;
  /* The work limit: GLPK is deterministic, so stopping after a counted amount of work
   * (never on the clock) makes the answer the same on every machine under any load. */
  milp_budget_t limit;
  int nodes;            /* nodes GLPK created so far (glp_ios_tree_size's t_cnt) */
  size_t glpk_bytes;    /* what GLPK may hold (glp_mem_usage's count, deterministic): the
                           model's share of the estimate and the branch-and-bound's */
  milp_stop_t stop;     /* set when the callback ends the search */
  double deadline_s;    /* the wall-clock safety net: GLPK checks tm_lim coarsely */
  uint64_t bnb_granted; /* the branch-and-bound's share of the estimate (bnb_bytes) */
} ctx_t;

static void model_free(model_t *m) {
  free(m->xcol);
  free(m->xlo);
  free(m->xn);
  free(m->hcol);
  free(m->start);
  tn_vec_free(&m->ia);
  tn_vec_free(&m->ja);
  tn_vec_free(&m->ar);
  tn_vec_free(&m->kind);
}

static tn_status_t add_row(model_t *m, uint8_t kind, int *r, tn_err_t *err) {
  *r = ++m->nrows;
  return tn_vec_push(&m->kind, &kind, err);
}

static tn_status_t nz(model_t *m, int i, int j, double v, tn_err_t *err) {
  tn_status_t st = tn_vec_push(&m->ia, &i, err);
  if (st == TN_OK) st = tn_vec_push(&m->ja, &j, err);
  if (st == TN_OK) st = tn_vec_push(&m->ar, &v, err);
  return st;
}

/* Column layout and the size check (before GLPK sees anything). */
static tn_status_t layout(model_t *m, tn_err_t *err) {
  const milp_fab_t *f = m->f;
  size_t ce = (size_t)f->nchunks * f->nvl, cv = (size_t)f->nchunks * f->npus;
  tn_status_t st = tn_calloc(ce, sizeof *m->xcol, &m->xcol, err);
  if (st == TN_OK) st = tn_calloc(ce, sizeof *m->xlo, &m->xlo, err);
  if (st == TN_OK) st = tn_calloc(ce, sizeof *m->xn, &m->xn, err);
  if (st == TN_OK) st = tn_calloc(cv, sizeof *m->hcol, &m->hcol, err);
  if (st != TN_OK) return st;
  uint64_t cols = 1;
  for (uint32_t c = 0; c < m->nc; c++)
    for (uint32_t i = 0; i < f->nvl; i++) {
      const milp_vlink_t *e = &f->vl[i];
      uint32_t lo = milp_i_earliest(f, c, e->src);
      size_t k = (size_t)c * f->nvl + i;
      if (e->dst == milp_i_owner(f, c) || e->arrive > m->H || lo > m->H - e->arrive) continue;
      m->xcol[k] = (int)(cols + 1);
      m->xlo[k] = lo;
      m->xn[k] = m->H - e->arrive - lo + 1;
      cols += m->xn[k];
      if (cols > MILP_MAX_COLS) break;
    }
  for (uint32_t c = 0; c < m->nc && cols <= MILP_MAX_COLS; c++)
    for (uint32_t v = 0; v < f->npus; v++) {
      if (v == milp_i_owner(f, c)) continue;
      m->hcol[(size_t)c * f->npus + v] = (int)(cols + 1);
      cols += m->H - milp_i_earliest(f, c, v) + 1;
    }
  if (cols > MILP_MAX_COLS)
    return tn_err_set(err, TN_LIMIT,
                      "MILP for '%s' (%u chunks, horizon %u steps) would have "
                      "more than %u variables; use fewer chunks or the greedy",
                      f->t->name, f->nchunks, m->H, MILP_MAX_COLS);
  m->ncols = (int)cols;
  tn_vec_init(&m->ia, sizeof(int));
  tn_vec_init(&m->ja, sizeof(int));
  tn_vec_init(&m->ar, sizeof(double));
  tn_vec_init(&m->kind, sizeof(uint8_t));
  return tn_calloc((size_t)cols + 1, sizeof *m->start, &m->start, err);
}

static int hcol_at(const model_t *m, uint32_t c, uint32_t v, uint32_t t) {
  return m->hcol[(size_t)c * m->f->npus + v] + (int)(t - milp_i_earliest(m->f, c, v));
}

/* Flow, possession and makespan rows. */
static tn_status_t rows_flow(model_t *m, tn_err_t *err) {
  const milp_fab_t *f = m->f;
  tn_status_t st = TN_OK;
  for (uint32_t c = 0; c < m->nc && st == TN_OK; c++)
    for (uint32_t v = 0; v < f->npus && st == TN_OK; v++) {
      if (v == milp_i_owner(f, c)) continue;
      uint32_t E = milp_i_earliest(f, c, v);
      int mk = 0;
      st = add_row(m, ROW_MAKESPAN, &mk, err);
      if (st == TN_OK) st = nz(m, mk, 1, 1.0, err);
      for (uint32_t t = E; t <= m->H && st == TN_OK; t++) {
        int r = 0;
        st = nz(m, mk, hcol_at(m, c, v, t), 1.0, err);
        if (st == TN_OK) st = add_row(m, ROW_FLOW, &r, err);
        if (st == TN_OK) st = nz(m, r, hcol_at(m, c, v, t), 1.0, err);
        if (st == TN_OK && t > E) st = nz(m, r, hcol_at(m, c, v, t - 1), -1.0, err);
        for (uint32_t j = f->in_off[v]; j < f->in_off[v + 1] && st == TN_OK; j++) {
          uint32_t i = f->in_vl[j];
          size_t k = (size_t)c * f->nvl + i;
          if (!m->xcol[k] || t < f->vl[i].arrive) continue;
          uint32_t s = t - f->vl[i].arrive;
          if (s >= m->xlo[k] && s < m->xlo[k] + m->xn[k])
            st = nz(m, r, m->xcol[k] + (int)(s - m->xlo[k]), -1.0, err);
        }
      }
    }
  /* possession */
  for (uint32_t c = 0; c < m->nc && st == TN_OK; c++)
    for (uint32_t i = 0; i < f->nvl && st == TN_OK; i++) {
      size_t k = (size_t)c * f->nvl + i;
      uint32_t u = f->vl[i].src;
      if (!m->xcol[k] || u == milp_i_owner(f, c)) continue;
      for (uint32_t q = 0; q < m->xn[k] && st == TN_OK; q++) {
        int r = 0;
        st = add_row(m, ROW_HOLD, &r, err);
        if (st == TN_OK) st = nz(m, r, m->xcol[k] + (int)q, 1.0, err);
        if (st == TN_OK) st = nz(m, r, hcol_at(m, c, u, m->xlo[k] + q), -1.0, err);
      }
    }
  return st;
}

/* Capacity rows, one per (physical link, step) that two or more transfers could use. */
static tn_status_t rows_capacity(model_t *m, tn_err_t *err) {
  const milp_fab_t *f = m->f;
  size_t cells = (size_t)f->t->nlinks * m->H;
  uint32_t *cnt = NULL;
  int *row = NULL;
  tn_status_t st = tn_calloc(cells ? cells : 1, sizeof *cnt, &cnt, err);
  if (st == TN_OK) st = tn_calloc(cells ? cells : 1, sizeof *row, &row, err);
  for (int pass = 0; pass < 2 && st == TN_OK; pass++) {
    for (size_t q = 0; q < cells && pass == 1 && st == TN_OK; q++)
      if (cnt[q] >= 2) st = add_row(m, ROW_CAP, &row[q], err);
    for (uint32_t c = 0; c < m->nc && st == TN_OK; c++)
      for (uint32_t i = 0; i < f->nvl && st == TN_OK; i++) {
        size_t k = (size_t)c * f->nvl + i;
        const milp_vlink_t *e = &f->vl[i];
        for (uint32_t q = 0; q < m->xn[k] && st == TN_OK; q++)
          for (uint32_t hr = 0; hr < e->nhops * m->nimg && st == TN_OK; hr++) {
            uint32_t h = hr % e->nhops, r = hr / e->nhops;
            uint32_t l = m->sym ? f->lperm[(size_t)r * f->t->nlinks + e->link[h]] : e->link[h];
            for (uint32_t s = m->xlo[k] + q + e->off[h];
                 s < m->xlo[k] + q + e->off[h] + e->dur[h] && st == TN_OK; s++) {
              size_t cell = (size_t)l * m->H + s;
              if (pass == 0)
                cnt[cell]++;
              else if (row[cell])
                st = nz(m, row[cell], m->xcol[k] + (int)q, 1.0, err);
            }
          }
      }
  }
  free(cnt);
  free(row);
  return st;
}

/* The starting plan as a column vector (1-based). */
static void fill_start(model_t *m, const milp_plan_t *p) {
  const milp_fab_t *f = m->f;
  m->start[1] = p->makespan;
  for (uint32_t c = 0; c < m->nc; c++)
    for (uint32_t v = 0; v < f->npus; v++) {
      if (v == milp_i_owner(f, c)) continue;
      size_t cell = (size_t)c * f->npus + v;
      size_t k = (size_t)c * f->nvl + p->vl[cell];
      m->start[m->xcol[k] + (int)(p->step[cell] - m->xlo[k])] = 1.0;
      uint32_t a = milp_i_plan_arrival(f, p, c, v);
      for (uint32_t t = milp_i_earliest(f, c, v); t <= m->H; t++)
        m->start[hcol_at(m, c, v, t)] = t >= a ? 1.0 : 0.0;
    }
}

static int term_hook(void *info, const char *s) {
  ctx_t *cx = info;
  if (cx->verbose)
    fputs(s, stderr);
  else if (cx->log)
    fputs(s, cx->log);
  return 1; /* never GLPK's own stdout */
}

static void error_hook(void *info) {
  ctx_t *cx = info;
  longjmp(cx->jb, 1);
}

static void callback(glp_tree *tree, void *info) {
  ctx_t *cx = info;
  if (glp_ios_reason(tree) == GLP_IHEUR && !cx->start_given) {
    cx->start_given = true;
    cx->start_accepted = glp_ios_heur_sol(tree, cx->start) == 0;
  }
  int b = glp_ios_best_node(tree);
  if (b != 0) cx->bound = glp_ios_node_bound(tree, b);
  int active = 0, alive = 0;
  glp_ios_tree_size(tree, &active, &alive, &cx->nodes);
  uint64_t iters = (uint64_t)glp_get_it_cnt(glp_ios_get_prob(tree));
  int count = 0, cpeak = 0;
  size_t total = 0, tpeak = 0;
  glp_mem_usage(&count, &cpeak, &total, &tpeak);
  if ((uint64_t)cx->nodes > cx->limit.nodes)
    cx->stop = MILP_STOP_NODES;
  else if (iters >= cx->limit.iters)
    cx->stop = MILP_STOP_ITERS;
  else if (total > cx->glpk_bytes)
    cx->stop = MILP_STOP_MEM;
  else if (tn_wall_seconds() > cx->deadline_s)
    cx->stop = MILP_STOP_TIME;
  if (cx->stop != MILP_STOP_PROVEN) glp_ios_terminate(tree);
}

/* Loads the model into a fresh GLPK problem (cx->P). */
static void load(ctx_t *cx, const model_t *m) {
  const milp_fab_t *f = m->f;
  glp_prob *P = cx->P = glp_create_prob();
  glp_set_prob_name(P, "tenet_allgather");
  glp_set_obj_dir(P, GLP_MIN);
  glp_add_cols(P, m->ncols);
  glp_set_col_bnds(P, 1, f->lb_steps < m->H ? GLP_DB : GLP_FX, (double)f->lb_steps, (double)m->H);
  glp_set_obj_coef(P, 1, 1.0);
  double w = 0.25 / ((double)m->nc * (f->npus - 1) * (m->H + MILP_MAX_HOPS));
  for (uint32_t c = 0; c < m->nc; c++)
    for (uint32_t i = 0; i < f->nvl; i++) {
      size_t k = (size_t)c * f->nvl + i;
      for (uint32_t q = 0; q < m->xn[k]; q++) {
        int j = m->xcol[k] + (int)q;
        glp_set_col_kind(P, j, GLP_BV);
        glp_set_obj_coef(P, j, w * (double)(m->xlo[k] + q + f->vl[i].nhops));
      }
    }
  for (uint32_t c = 0; c < m->nc; c++)
    for (uint32_t v = 0; v < f->npus; v++) {
      if (v == milp_i_owner(f, c)) continue;
      for (uint32_t t = milp_i_earliest(f, c, v); t <= m->H; t++) {
        int j = hcol_at(m, c, v, t);
        if (t == m->H)
          glp_set_col_bnds(P, j, GLP_FX, 1.0, 1.0);
        else
          glp_set_col_bnds(P, j, GLP_DB, 0.0, 1.0);
      }
    }
  glp_add_rows(P, m->nrows);
  const uint8_t *kind = m->kind.data;
  for (int r = 1; r <= m->nrows; r++) {
    switch (kind[r - 1]) {
    case ROW_MAKESPAN: glp_set_row_bnds(P, r, GLP_LO, m->H + 1.0, 0.0); break;
    case ROW_FLOW: glp_set_row_bnds(P, r, GLP_FX, 0.0, 0.0); break;
    case ROW_HOLD: glp_set_row_bnds(P, r, GLP_UP, 0.0, 0.0); break;
    default: glp_set_row_bnds(P, r, GLP_UP, 0.0, 1.0); break;
    }
  }
  glp_load_matrix(P, (int)m->ia.len, (const int *)m->ia.data - 1, (const int *)m->ja.data - 1,
                  (const double *)m->ar.data - 1);
}

static int ms_of(double s) {
  if (!(s > 0.001)) return 1;
  if (s > (double)INT_MAX / 1000.0) return INT_MAX;
  return (int)(s * 1000.0);
}

/* Everything GLPK does happens here, under its error hook: a fatal error inside GLPK
 * longjmps back, the environment is freed (which frees every GLPK object, the problem
 * included) and 1 is returned instead of GLPK calling abort(). */
static int guarded(ctx_t *cx, const model_t *m, double limit_s, int *sret, int *mret) {
  if (setjmp(cx->jb)) {
    glp_free_env();
    cx->P = NULL;
    return 1;
  }
  glp_error_hook(error_hook, cx);
  glp_term_hook(term_hook, cx);
  load(cx, m);
  int msg = (cx->verbose || cx->log) ? GLP_MSG_ON : GLP_MSG_OFF;
  double t0 = tn_wall_seconds();
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = msg;
  sp.tm_lim = ms_of(limit_s);
  sp.it_lim = (int)cx->limit.iters; /* the root LP's share of the work limit */
  sp.meth = GLP_DUALP;              /* far faster than primal on these degenerate relaxations */
  *sret = glp_simplex(cx->P, &sp);
  *mret = -1;
  if (*sret == 0 && glp_get_status(cx->P) == GLP_OPT && cx->bnb_granted == 0)
    cx->stop = MILP_STOP_MEM; /* no memory granted to a branch-and-bound: the start stands */
  else if (*sret == 0 && glp_get_status(cx->P) == GLP_OPT) {
    /* No MIP presolve: the callback's starting solution must be in the columns of the
     * problem as loaded. */
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = msg;
    ip.presolve = GLP_OFF;
    /* No Gomory cuts: their separation (a tableau row per fractional variable, after
     * every backtrack) is work the iteration count does not see, and it took half the
     * time of ring-4 at 16 chunks per NPU (54 s with them, 18 s without, same answer). */
    ip.mir_cuts = ip.cov_cuts = ip.clq_cuts = GLP_ON;
    ip.fp_heur = GLP_ON;
    ip.br_tech = GLP_BR_DTH; /* pseudo-cost start-up probes cost seconds per node here */
    ip.bt_tech = GLP_BT_BLB;
    ip.mip_gap = 0.5 / (m->H + 1.0);
    ip.tm_lim = ms_of(limit_s - (tn_wall_seconds() - t0));
    ip.cb_func = callback;
    ip.cb_info = cx;
    *mret = glp_intopt(cx->P, &ip);
  }
  glp_error_hook(NULL, NULL);
  glp_term_hook(NULL, NULL);
  return 0;
}

static tn_status_t build(model_t *m, const milp_plan_t *start, tn_err_t *err) {
  tn_status_t st = layout(m, err);
  if (st == TN_OK) st = rows_flow(m, err);
  if (st == TN_OK) st = rows_capacity(m, err);
  if (st == TN_OK) fill_start(m, start);
  return st;
}

static uint64_t model_bytes(const model_t *m) {
  return (uint64_t)m->ia.len * MILP_MEM_PER_NZ +
         ((uint64_t)m->ncols + (uint64_t)m->nrows) * MILP_MEM_PER_ROWCOL;
}

/* The root LP's iteration limit: the given one, else scaled to the model's size (an
 * iteration costs about rows + columns). */
static uint64_t iter_limit(const model_t *m, uint64_t given) {
  if (given) return given;
  uint64_t size = (uint64_t)m->nrows + (uint64_t)m->ncols, it = MILP_AUTO_ITER_WORK / size;
  if (it < MILP_AUTO_ITER_MIN) it = MILP_AUTO_ITER_MIN;
  if (it > MILP_AUTO_ITER_MAX) it = MILP_AUTO_ITER_MAX;
  return m->sym ? it / 2 : it;
}

/* What GLPK's branch-and-bound may add to the model's memory (the cut generators' and the
 * tree's, the node LPs' work space): MILP_MEM_BNB_PCT of it, granted when the root LP's
 * iteration limit reaches half the model's rows (GLPK's dual simplex took 0.4-0.6
 * iterations per row to solve these relaxations: ring-8, mesh-2x4 at 1 and 2 chunks per
 * NPU); below that the root LP stops first (mesh-2x4 at 4, torus-4x4) and there is no
 * branch-and-bound to grant. */
static uint64_t bnb_bytes(const model_t *m, uint64_t iters) {
  return 2 * iters >= (uint64_t)m->nrows ? model_bytes(m) * MILP_MEM_BNB_PCT / 100 : 0;
}

static void model_init(model_t *m, const milp_fab_t *f, bool sym, const milp_plan_t *start) {
  memset(m, 0, sizeof *m);
  m->f = f;
  m->H = start->makespan;
  m->sym = sym;
  m->nc = sym ? f->k : f->nchunks;
  m->nimg = sym ? f->npus : 1;
}

tn_status_t milp_i_model_bytes(const milp_fab_t *f, bool sym, const milp_plan_t *start,
                               uint64_t iters, uint64_t *bytes, tn_err_t *err) {
  model_t m;
  model_init(&m, f, sym, start);
  tn_err_t e = {0};
  tn_status_t st = build(&m, start, &e);
  *bytes = st == TN_OK ? model_bytes(&m) + bnb_bytes(&m, iter_limit(&m, iters)) : 0;
  if (st != TN_OK && st != TN_LIMIT) *err = e; /* past MILP_MAX_COLS: never built */
  model_free(&m);
  return st == TN_LIMIT ? TN_OK : st;
}

/* Reads GLPK's integer solution into best. */
static tn_status_t extract(const model_t *m, glp_prob *P, milp_plan_t *best, tn_err_t *err) {
  const milp_fab_t *f = m->f;
  for (uint32_t c = 0; c < m->nc; c++)
    for (uint32_t i = 0; i < f->nvl; i++) {
      size_t k = (size_t)c * f->nvl + i;
      for (uint32_t q = 0; q < m->xn[k]; q++)
        if (glp_mip_col_val(P, m->xcol[k] + (int)q) > 0.5)
          for (uint32_t r = 0; r < m->nimg; r++) {
            uint32_t cr = m->sym ? milp_i_sym_chunk(f, r, c) : c;
            uint32_t er = m->sym ? milp_i_sym_vlink(f, r, i) : i;
            size_t cell = (size_t)cr * f->npus + f->vl[er].dst;
            best->vl[cell] = er;
            best->step[cell] = m->xlo[k] + q;
          }
    }
  return milp_i_plan_check(f, best, err);
}

static bool same_plan(const milp_fab_t *f, const milp_plan_t *a, const milp_plan_t *b) {
  size_t n = (size_t)f->nchunks * f->npus;
  return memcmp(a->vl, b->vl, n * sizeof *a->vl) == 0 &&
         memcmp(a->step, b->step, n * sizeof *a->step) == 0;
}

/* Maps GLPK's return codes to the outcome: an error, or *found (GLPK has an integer
 * solution) with the status and what stopped the search. */
static tn_status_t outcome(const milp_fab_t *f, ctx_t *cx, int sret, int mret, bool *found,
                           milp_result_t *res, tn_err_t *err) {
  int lp = glp_get_status(cx->P), mst = mret >= 0 ? glp_mip_status(cx->P) : GLP_UNDEF;
  *found = false;
  res->status = MILP_FEASIBLE;
  if (sret == GLP_EITLIM || sret == GLP_ETMLIM) {
    res->stop = sret == GLP_EITLIM ? MILP_STOP_ITERS : MILP_STOP_TIME;
    return TN_OK; /* the root LP used the budget: no integer solution, the start stands */
  }
  if (sret != 0)
    return tn_err_set(err, TN_SOLVER, "GLPK's simplex failed (code %d) on '%s'", sret, f->t->name);
  if (lp != GLP_OPT)
    return tn_err_set(err, TN_INTERNAL,
                      "the MILP relaxation for '%s' is not optimal (status %d) although a "
                      "schedule exists",
                      f->t->name, lp);
  if (mret > 0 && mret != GLP_ETMLIM && mret != GLP_EMIPGAP && mret != GLP_ESTOP)
    return tn_err_set(err, TN_SOLVER, "GLPK's branch-and-cut failed (code %d) on '%s'", mret,
                      f->t->name);
  if (mst == GLP_NOFEAS)
    return tn_err_set(err, TN_INTERNAL,
                      "GLPK calls the MILP for '%s' infeasible although a schedule exists",
                      f->t->name);
  bool proven = mret == 0 || mret == GLP_EMIPGAP;
  res->stop = proven ? MILP_STOP_PROVEN : cx->stop != MILP_STOP_PROVEN ? cx->stop : MILP_STOP_TIME;
  *found = mst == GLP_OPT || mst == GLP_FEAS;
  if (*found && proven) res->status = MILP_OPTIMAL;
  return TN_OK;
}

tn_status_t milp_i_glpk(const milp_fab_t *f, bool sym, const milp_plan_t *start,
                        const milp_opts_t *o, const milp_budget_t *limit, double deadline_s,
                        milp_plan_t *best, bool *found, uint32_t *bound_steps, milp_budget_t *used,
                        uint64_t *held, milp_result_t *res, tn_err_t *err) {
  model_t m;
  model_init(&m, f, sym, start);
  *found = false;
  *bound_steps = f->lb_steps;
  *used = (milp_budget_t){0};
  res->status = MILP_FEASIBLE;
  ctx_t *cx = NULL;
  tn_status_t st = tn_calloc(1, sizeof *cx, &cx, err);
  if (st == TN_OK) st = build(&m, start, err);
  if (st == TN_LIMIT) { /* too many variables for GLPK: the starting plan stands */
    res->stop = MILP_STOP_SIZE;
    st = TN_OK;
    goto fail;
  }
  if (st == TN_OK) { /* the memory cap, before GLPK is given anything */
    char what[128];
    snprintf(what, sizeof what, "the %s model for '%s' (%d variables, %zu nonzeros)",
             sym ? "symmetric" : "full", f->t->name, m.ncols, m.ia.len);
    cx->limit = *limit;
    cx->limit.iters = iter_limit(&m, limit->iters);
    cx->bnb_granted = bnb_bytes(&m, cx->limit.iters);
    /* GLPK's share: the model's and the branch-and-bound's, less our triplets */
    uint64_t share = model_bytes(&m) + cx->bnb_granted, ours = (uint64_t)m.ia.len * 16u;
    cx->glpk_bytes = share > ours ? (size_t)(share - ours) : 0;
    if (share > *held) *held = share; /* each model is freed before the next is built */
    st = tn_mem_check(what, MILP_MEM_BASE + *held, err);
    res->over_mem_cap = st == TN_LIMIT;
  }
  if (st != TN_OK) goto fail;
  res->cols = (uint32_t)m.ncols;
  res->rows = (uint32_t)m.nrows;
  cx->verbose = o->verbose;
  cx->start = m.start;
  cx->bound = -HUGE_VAL;
  cx->deadline_s = deadline_s;
  if (o->log_path && !o->verbose && (cx->log = fopen(o->log_path, "a")) == NULL) {
    st = tn_err_set(err, TN_IO, "cannot open the MILP log '%s'", o->log_path);
    goto fail;
  }
  int sret = 0, mret = 0;
  if (guarded(cx, &m, deadline_s - tn_wall_seconds(), &sret, &mret) != 0) {
    st = tn_err_set(err, TN_SOLVER, "GLPK failed on the MILP for '%s'%s%s", f->t->name,
                    o->log_path ? "; see " : "", o->log_path ? o->log_path : "");
    goto fail;
  }
  used->iters = (uint64_t)glp_get_it_cnt(cx->P);
  used->nodes = (uint32_t)cx->nodes;
  st = outcome(f, cx, sret, mret, found, res, err);
  if (st == TN_OK && *found) st = extract(&m, cx->P, best, err);
  if (st != TN_OK) goto fail;
  if (res->status == MILP_OPTIMAL) {
    *bound_steps = best->makespan;
  } else if (cx->bound > -HUGE_VAL) {
    /* the objective's secondary term is below 1/4: M >= bound - 1/4, and M is integral */
    uint32_t cap = *found ? best->makespan : start->makespan;
    double b = ceil(cx->bound - 0.25 - 1e-7);
    if (b > *bound_steps) *bound_steps = b >= cap ? cap : (uint32_t)b;
  }
  res->incumbent_is_start = !*found || (cx->start_accepted && same_plan(f, best, start));
fail:
  if (cx && cx->P) glp_delete_prob(cx->P);
  if (cx && cx->log) fclose(cx->log);
  free(cx);
  model_free(&m);
  /* GLPK keeps an environment per thread; a worker thread of `tenet batch -j N` that
   * leaves it behind leaks it at exit (as lp_guarded, free it after every solve). */
  glp_free_env();
  return st;
}
