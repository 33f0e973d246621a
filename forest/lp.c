/* forest/lp.c — the packing's weights by linear program (GLPK), when the build has it:
 * minimise tau subject to, for every link, the weighted sum of the trees' loads on it
 * <= tau, and for every root, its trees' weights summing to 1. Column generation's master
 * problem over the trees the multiplicative-weights rounds grew (ForestColl, arXiv
 * 2402.06787, solves the packing exactly; this is its LP restricted to those trees). */
#include "forest/forest_internal.h"

#include "lp/lp.h"

#ifdef TENET_HAVE_GLPK
#include <glpk.h>
#include <stdlib.h>

/* The most of its root's data one tree may carry under the second objective (measured at
 * 1 GiB against no cap: leaf-32 All-Gather 1.030 -> 1.021 of the bound, spine-4x8
 * Reduce-Scatter 1.055 -> 1.035). How far above the least busiest-link load that
 * objective may go is the caller's slack (FOREST_SLACK, or a packing variant's). */
#define CAP 0.5
/* The second objective's simplex stops after this many iterations (a count, not a clock:
 * the result must not depend on the machine's load); any feasible mix it reached is
 * within the slack. Measured at 1 GiB: hypercube-64 All-Gather 1.0137 of the bound with it,
 * 1.0146 without, in 1.1 s against 1.6 s. */
#define SECOND_ITERATIONS 1000

typedef struct lp {
  uint32_t n, ncand;
  double slack;
  const uint32_t *root, *col_off, *col_link;
  const double *col_val, *cost;
  int *row_of;
  double *w;
  int *ia, *ja;
  double *ar;
} lp_t;

/* The weights of the current solution (dust below 1e-9 dropped). */
static void take(glp_prob *P, uint32_t ncand, double *w) {
  for (uint32_t c = 0; c < ncand; c++) {
    double x = glp_get_col_prim(P, (int)c + 1);
    w[c] = x > 1e-9 ? x : 0.0;
  }
}

/* Rows: 1 .. nl for the links that carry something (row_of[l]), then one per root;
 * columns: 1 .. ncand for the weights, ncand + 1 for tau. Runs under lp_guarded. */
static bool solve(void *ctx) {
  lp_t *L = ctx;
  uint32_t n = L->n, ncand = L->ncand;
  const uint32_t *col_off = L->col_off;
  int nl = 0;
  for (uint32_t j = 0; j < col_off[ncand]; j++)
    if (L->row_of[L->col_link[j]] == 0) L->row_of[L->col_link[j]] = ++nl;
  size_t nz = (size_t)col_off[ncand] + (size_t)nl + ncand;
  if (nz >= (size_t)INT32_MAX) return false;
  glp_prob *P = glp_create_prob();
  glp_set_obj_dir(P, GLP_MIN);
  glp_add_rows(P, nl + (int)n);
  glp_add_cols(P, (int)ncand + 1);
  for (int i = 1; i <= nl; i++)
    glp_set_row_bnds(P, i, GLP_UP, 0.0, 0.0);
  for (uint32_t r = 0; r < n; r++)
    glp_set_row_bnds(P, nl + 1 + (int)r, GLP_FX, 1.0, 1.0);
  for (uint32_t c = 0; c < ncand; c++)
    glp_set_col_bnds(P, (int)c + 1, GLP_LO, 0.0, 0.0);
  int tau = (int)ncand + 1;
  glp_set_col_bnds(P, tau, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(P, tau, 1.0);
  size_t k = 0;
  for (uint32_t c = 0; c < ncand; c++) {
    for (uint32_t j = col_off[c]; j < col_off[c + 1]; j++) {
      k++;
      L->ia[k] = L->row_of[L->col_link[j]], L->ja[k] = (int)c + 1, L->ar[k] = L->col_val[j];
    }
    k++;
    L->ia[k] = nl + 1 + (int)L->root[c], L->ja[k] = (int)c + 1, L->ar[k] = 1.0;
  }
  for (int i = 1; i <= nl; i++) {
    k++;
    L->ia[k] = i, L->ja[k] = tau, L->ar[k] = -1.0;
  }
  glp_load_matrix(P, (int)k, L->ia, L->ja, L->ar);
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.presolve = GLP_ON;
  if (glp_simplex(P, &sp) != 0 || glp_get_status(P) != GLP_OPT) {
    glp_delete_prob(P);
    return false;
  }
  take(P, ncand, L->w);
  /* Among the (many) optimal mixes, one of least cost, with tau held within slack of its
   * optimum and no tree above CAP of its root's data (a root's data spread over two trees
   * at least, which the plans measured better), or without the cap when that is
   * infeasible. From the optimal basis; its solution stays when neither gets feasible. */
  double best = glp_get_obj_val(P);
  glp_set_col_bnds(P, tau, GLP_DB, 0.0, best * (1.0 + L->slack));
  glp_set_obj_coef(P, tau, 0.0);
  sp.presolve = GLP_OFF;
  sp.it_lim = SECOND_ITERATIONS;
  for (int capped = 1; capped >= 0; capped--) {
    for (uint32_t c = 0; c < ncand; c++) {
      glp_set_obj_coef(P, (int)c + 1, L->cost[c]);
      if (capped)
        glp_set_col_bnds(P, (int)c + 1, GLP_DB, 0.0, CAP);
      else
        glp_set_col_bnds(P, (int)c + 1, GLP_LO, 0.0, 0.0);
    }
    int rc = glp_simplex(P, &sp);
    if ((rc == 0 || rc == GLP_EITLIM) &&
        (glp_get_status(P) == GLP_OPT || glp_get_status(P) == GLP_FEAS)) {
      take(P, ncand, L->w);
      break;
    }
  }
  glp_delete_prob(P);
  return true;
}

bool forest_i_lp_weights(uint32_t n, uint32_t nlinks, uint32_t ncand, const uint32_t *root,
                         const uint32_t *col_off, const uint32_t *col_link, const double *col_val,
                         const double *cost, double slack, double *w) {
  lp_t L = {.n = n,
            .slack = slack,
            .ncand = ncand,
            .root = root,
            .col_off = col_off,
            .col_link = col_link,
            .col_val = col_val,
            .cost = cost};
  size_t nz = (size_t)col_off[ncand] + nlinks + ncand + 1;
  L.row_of = calloc(nlinks + 1u, sizeof *L.row_of);
  L.w = malloc((ncand + 1u) * sizeof *L.w);
  L.ia = malloc((nz + 1) * sizeof *L.ia);
  L.ja = malloc((nz + 1) * sizeof *L.ja);
  L.ar = malloc((nz + 1) * sizeof *L.ar);
  bool ok = L.row_of && L.w && L.ia && L.ja && L.ar && lp_guarded(solve, &L);
  for (uint32_t c = 0; ok && c < ncand; c++)
    w[c] = L.w[c];
  free(L.row_of);
  free(L.w);
  free(L.ia);
  free(L.ja);
  free(L.ar);
  return ok;
}

#else

bool forest_i_lp_weights(uint32_t n, uint32_t nlinks, uint32_t ncand, const uint32_t *root,
                         const uint32_t *col_off, const uint32_t *col_link, const double *col_val,
                         const double *cost, double slack, double *w) {
  (void)n, (void)nlinks, (void)ncand, (void)root, (void)col_off, (void)col_link, (void)col_val,
      (void)cost, (void)slack, (void)w;
  return false;
}

#endif

bool forest_i_lp_available(void) {
  return lp_available();
}
