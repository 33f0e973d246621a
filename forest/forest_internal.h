/* forest/forest_internal.h — private to forest/: the packing (pack.c) that the planners
 * (plan.c for All-Gather, reduce.c for Reduce-Scatter) schedule chunks on, and what the
 * two planners share (shared.c). */
#ifndef TENET_FOREST_INTERNAL_H
#define TENET_FOREST_INTERNAL_H

#include "forest/forest.h"

#define FOREST_NO_PARENT UINT32_MAX

/* The packing: ntrees broadcast trees, those of root r at tree_off[r] .. tree_off[r + 1]
 * each with the share of r's data it carries (weight; a root's sum to
 * 1). The parent of NPU v in tree i is parent[i * n + v] (FOREST_NO_PARENT at the root). */
typedef struct forest_pack {
  uint32_t n, ntrees;
  uint32_t *tree_off; /* n + 1 */
  uint32_t *parent;   /* ntrees * n */
  double *weight;     /* ntrees */
} forest_pack_t;

/* Packs broadcast trees on t (see forest_run): trees rounds of the multiplicative-weights
 * packing, weighted by how often each tree came out; with GLPK (at most FOREST_LP_MAX_NPUS
 * NPUs), more rounds and the weights that minimise the busiest link's time over those
 * trees (a linear program), the shallowest within slack of that least time.
 * routes is borrowed. *out is zeroed first; free with forest_i_pack_free. TN_INFEASIBLE
 * when some NPU cannot be reached over the logical edges. */
tn_status_t forest_i_pack(const topo_t *t, topo_routes_t *routes, uint32_t trees, double slack,
                          forest_pack_t *out, tn_err_t *err);
void forest_i_pack_free(forest_pack_t *p);

static inline uint32_t forest_i_parent(const forest_pack_t *pk, uint32_t tree, uint32_t v) {
  return pk->parent[(size_t)tree * pk->n + v];
}

/* The two-level trees of FOREST_PACK_LEVELS (levels.c) as a packing: one tree per root,
 * weight 1, root r's tree numbered r. routes is borrowed. TN_INFEASIBLE (nothing else
 * wrong) on a fabric where they do not apply: an NPU that links to no switch, a single
 * group, or a tree edge whose route crosses an NPU. */
tn_status_t forest_i_pack_levels(const topo_t *t, topo_routes_t *routes, forest_pack_t *out,
                                 tn_err_t *err);

/* The most chunks per NPU the two-level trees are planned at: finer plans gain little over
 * the packing's, and their sets' messages cost (fattree-64-2to1 All-Gather of 64 MiB at 128
 * chunks: 1.0057 of the bound against Ring's 1.0068, and 8.3 s of synthesis against
 * 0.83 s). */
#define LEVELS_MAX_CHUNKS 32u

/* Whether this build has GLPK for forest_i_lp_weights. */
bool forest_i_lp_available(void);

/* Weights for ncand trees that minimise the busiest link's load (the sum over trees of
 * weight times col_val) with every root's weights summing to 1 (tree i's root is root[i]);
 * tree i's loads are col_link / col_val at col_off[i] .. col_off[i + 1]. Among the mixes
 * within slack (a fraction) of that least load, the one of least weighted cost[i].
 * Overwrites w only when the LP solves; returns whether it did. Deterministic (GLPK's
 * primal simplex). */
bool forest_i_lp_weights(uint32_t n, uint32_t nlinks, uint32_t ncand, const uint32_t *root,
                         const uint32_t *col_off, const uint32_t *col_link, const double *col_val,
                         const double *cost, double slack, double *w);

/* The packing: the NPUs up to which the LP weighs the trees, and its usual slack (measured
 * at 1 GiB: 0.1% keeps the load optimal to the plans' precision). */
#define FOREST_LP_MAX_NPUS 64u
#define FOREST_SLACK 1e-3
/* The rounds and the LP's slack of packing opts->packing (opts may be NULL: packing 0). */
void forest_i_packing(const forest_opts_t *opts, uint32_t *trees, double *slack);

/* The children of every NPU in every tree of a packing, and the tree each chunk goes
 * down when every NPU has k chunks: tree tr's children of v are kid[tr * n + off[tr * (n
 * + 1) + v]] .. up to off[tr * (n + 1) + v + 1], in ascending NPU id; chunk c (of owner
 * c / k) goes down tree_of[c], a root's chunks dealt to its trees in proportion to their
 * weights and interleaved (smooth weighted round robin). */
typedef struct forest_kids {
  uint32_t n, k;
  uint32_t *off, *kid;
  uint32_t *tree_of; /* n * k */
} forest_kids_t;

tn_status_t forest_i_kids(const forest_pack_t *pk, uint32_t k, forest_kids_t *out, tn_err_t *err);
void forest_i_kids_free(forest_kids_t *k);

static inline uint32_t forest_i_tree_of(const forest_kids_t *kd, uint32_t c) {
  return kd->tree_of[c];
}

/* Children of v in tree tr: *count of them from the returned pointer. */
static inline const uint32_t *forest_i_children(const forest_kids_t *kd, uint32_t tr, uint32_t v,
                                                uint32_t *count) {
  const uint32_t *off = &kd->off[(size_t)tr * (kd->n + 1)];
  *count = off[v + 1] - off[v];
  return &kd->kid[(size_t)tr * kd->n + off[v]];
}

/* The two planners, on a packing made by the caller (forest.c): an All-Gather down
 * pk's trees (plan.c), a Reduce-Scatter up them (reduce.c: pk packed on the transposed
 * fabric, or on t itself when t is symmetric); routes are t's. As forest_run and
 * forest_run_reduce after their packing. */
tn_status_t forest_i_plan_gather(const topo_t *t, topo_routes_t *routes, const forest_pack_t *pk,
                                 uint64_t size_bytes, const forest_opts_t *opts, schedule_t *out,
                                 tn_err_t *err);
tn_status_t forest_i_plan_reduce(const topo_t *t, topo_routes_t *routes, const forest_pack_t *pk,
                                 uint64_t size_bytes, const forest_opts_t *opts, schedule_t *out,
                                 tn_err_t *err);

/* The automatic chunking's most chunks per NPU. Measured with bench_synth: 128 against 64
 * took the All-Gather on fattree-32-4to1 from 1.067 to 1.045 of the bound and on spine-4x8
 * from 1.024 to 1.015. */
#define FOREST_MAX_CHUNKS 128u
/* Chunks per NPU for size on n NPUs with at most most_chunks (see forest_run), at least
 * one. */
uint32_t forest_i_chunks(uint32_t n, uint64_t size, uint32_t most_chunks);

/* The refusals both planners share: fewer than 2 NPUs, more than FOREST_MAX_NPUS, less
 * than a byte per chunk, a disconnected fabric. */
tn_status_t forest_i_check(const topo_t *t, uint64_t size, uint32_t k, tn_err_t *err);

#endif
