/* trees/lp.c — the kept trees' weights by linear program (GLPK, through lp/'s guard):
 * maximise the packing's value over those trees, every resource (an NPU pair, or a link
 * the pairs through switches share) within its capacity. The
 * multiplicative weights that chose the trees are within a few percent of this optimum
 * (mesh-16x8, 64 trees: 0.974 of the fractional ideal against 0.98+ here). */
#include "trees/trees_internal.h"

#include "lp/lp.h"

#ifdef TENET_HAVE_GLPK
#include <glpk.h>
#include <stdlib.h>

typedef struct lp {
  uint32_t nrows, k;
  const double *cap;
  size_t nz;
  const uint32_t *row, *col;
  const double *coef;
  double *x;
  int *ia, *ja;
  double *ar;
} lp_t;

/* Rows 1 .. nrows: the resources; columns 1 .. k: the trees. Runs under lp_guarded. */
static bool solve(void *ctx) {
  lp_t *L = ctx;
  glp_prob *P = glp_create_prob();
  glp_set_obj_dir(P, GLP_MAX);
  glp_add_rows(P, (int)L->nrows);
  glp_add_cols(P, (int)L->k);
  for (uint32_t e = 0; e < L->nrows; e++)
    glp_set_row_bnds(P, (int)e + 1, GLP_UP, 0.0, L->cap[e]);
  for (uint32_t i = 0; i < L->k; i++) {
    glp_set_col_bnds(P, (int)i + 1, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(P, (int)i + 1, 1.0);
  }
  for (size_t z = 0; z < L->nz; z++) {
    L->ia[z + 1] = (int)L->row[z] + 1;
    L->ja[z + 1] = (int)L->col[z] + 1;
    L->ar[z + 1] = L->coef[z];
  }
  glp_load_matrix(P, (int)L->nz, L->ia, L->ja, L->ar);
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.presolve = GLP_ON;
  bool ok = glp_simplex(P, &sp) == 0 && glp_get_status(P) == GLP_OPT;
  for (uint32_t i = 0; ok && i < L->k; i++) {
    double v = glp_get_col_prim(P, (int)i + 1);
    L->x[i] = v > 1e-9 ? v : 0.0;
  }
  glp_delete_prob(P);
  return ok;
}

bool trees_i_lp_weights(uint32_t nrows, const double *cap, uint32_t k, size_t nz,
                        const uint32_t *row, const uint32_t *col, const double *coef, double *x) {
  if (nz >= (size_t)INT32_MAX) return false;
  lp_t L = {.nrows = nrows, .k = k, .cap = cap, .nz = nz, .row = row, .col = col, .coef = coef};
  L.x = malloc((k + 1u) * sizeof *L.x);
  L.ia = malloc((nz + 1) * sizeof *L.ia);
  L.ja = malloc((nz + 1) * sizeof *L.ja);
  L.ar = malloc((nz + 1) * sizeof *L.ar);
  bool ok = L.x && L.ia && L.ja && L.ar && lp_guarded(solve, &L);
  for (uint32_t i = 0; ok && i < k; i++)
    x[i] = L.x[i];
  free(L.x);
  free(L.ia);
  free(L.ja);
  free(L.ar);
  return ok;
}

#else

bool trees_i_lp_weights(uint32_t nrows, const double *cap, uint32_t k, size_t nz,
                        const uint32_t *row, const uint32_t *col, const double *coef, double *x) {
  (void)nrows, (void)cap, (void)k, (void)nz, (void)row, (void)col, (void)coef, (void)x;
  return false;
}

#endif
