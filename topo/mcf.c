/* topo/mcf.c — the exact All-to-All throughput of a fabric (docs/bounds.md §4): the
 * maximum concurrent multicommodity flow, a linear program solved with GLPK (lp/). Every
 * NPU sends the same rate lambda to every other NPU; flows are aggregated by source (one
 * commodity per NPU, conserved at every node, absorbed lambda at a time by each other NPU)
 * and share each link's bandwidth. No schedule delivers S/n per pair faster than
 * (S/n) / lambda*. Run only up to MCF_MAX_VARS flow variables (NPUs x links). */
#include <stdlib.h>

#include "lp/lp.h"
#include "topo/topo_internal.h"

#ifdef TENET_HAVE_GLPK
#include <glpk.h>

typedef struct mcf {
  const topo_t *t;
  int *ia, *ja;
  double *ar;
  double lambda;
} mcf_t;

/* Columns: f(s, l) at s * L + l + 1, lambda last. Rows: conservation of commodity s at
 * node v at s * V + v + 1, then one capacity row per link. */
static bool mcf_body(void *ctx) {
  mcf_t *M = ctx;
  const topo_t *t = M->t;
  uint32_t n = t->npus, V = topo_nodes(t), L = t->nlinks;
  int lam = (int)(n * L + 1), rows = (int)(n * V + L);
  glp_prob *P = glp_create_prob();
  glp_set_obj_dir(P, GLP_MAX);
  glp_add_rows(P, rows);
  glp_add_cols(P, lam);
  for (int r = 1; r <= (int)(n * V); r++)
    glp_set_row_bnds(P, r, GLP_FX, 0.0, 0.0);
  for (uint32_t l = 0; l < L; l++)
    glp_set_row_bnds(P, (int)(n * V + l + 1), GLP_UP, 0.0, t->links[l].bandwidth_GBps);
  for (int c = 1; c <= lam; c++)
    glp_set_col_bnds(P, c, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(P, lam, 1.0);
  size_t k = 0;
  for (uint32_t s = 0; s < n; s++) {
    for (uint32_t l = 0; l < L; l++) {
      int col = (int)(s * L + l + 1);
      k++, M->ia[k] = (int)(s * V + t->links[l].src + 1), M->ja[k] = col, M->ar[k] = 1.0;
      k++, M->ia[k] = (int)(s * V + t->links[l].dst + 1), M->ja[k] = col, M->ar[k] = -1.0;
      k++, M->ia[k] = (int)(n * V + l + 1), M->ja[k] = col, M->ar[k] = 1.0;
    }
    for (uint32_t v = 0; v < n; v++) { /* out - in = (n-1) lambda at s, -lambda elsewhere */
      k++, M->ia[k] = (int)(s * V + v + 1), M->ja[k] = lam;
      M->ar[k] = v == s ? -(double)(n - 1) : 1.0;
    }
  }
  glp_load_matrix(P, (int)k, M->ia, M->ja, M->ar);
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.presolve = GLP_ON;
  bool ok = glp_simplex(P, &sp) == 0 && glp_get_status(P) == GLP_OPT;
  if (ok) M->lambda = glp_get_obj_val(P);
  glp_delete_prob(P);
  return ok && M->lambda > 0.0;
}

bool topo_i_mcf_rate(const topo_t *t, double *lambda) {
  uint64_t vars = (uint64_t)t->npus * t->nlinks;
  if (t->npus < 2 || vars > MCF_MAX_VARS) return false;
  size_t nz = (size_t)(3 * vars + (uint64_t)t->npus * t->npus + 1);
  mcf_t M = {.t = t};
  M.ia = malloc(nz * sizeof *M.ia);
  M.ja = malloc(nz * sizeof *M.ja);
  M.ar = malloc(nz * sizeof *M.ar);
  bool ok = M.ia && M.ja && M.ar && lp_guarded(mcf_body, &M);
  free(M.ia);
  free(M.ja);
  free(M.ar);
  /* The simplex's optimum may sit a rounding error above the true one: shade it. */
  if (ok) *lambda = M.lambda * (1.0 + 1e-9);
  return ok;
}

#else

bool topo_i_mcf_rate(const topo_t *t, double *lambda) {
  (void)t, (void)lambda;
  return false;
}

#endif
