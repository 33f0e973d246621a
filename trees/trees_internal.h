/* trees/trees_internal.h — private to trees/: the exact weights of a kept set of trees
 * (lp.c, GLPK behind lp/) for the packing (pack.c), and the packing as the planner's large
 * regime asks for it (plan.c). */
#ifndef TENET_TREES_INTERNAL_H
#define TENET_TREES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trees/trees.h"

/* The weights x[0..k) that maximise their sum subject to every resource r carrying at
 * most cap[r] (nrows resources): tree i loads resource row[z] coef[z] times for each z
 * with col[z] == i (nz entries, at most one per row and tree). A linear program solved by
 * GLPK's simplex (deterministic). Returns false, x untouched, when the build has no GLPK
 * or the solve fails; the caller then falls back to multiplicative weights. */
bool trees_i_lp_weights(uint32_t nrows, const double *cap, uint32_t k, size_t nz,
                        const uint32_t *row, const uint32_t *col, const double *coef, double *x);

/* trees_pack, with layered_only: the layered (shallow) trees alone, never the minimum
 * spanning trees of all spanning trees, however much more those pack. For plans with few
 * messages per tree, where a tree's depth adds to the time as much as its rate saves. */
tn_status_t trees_i_pack(const topo_t *t, uint32_t max_trees, bool layered_only,
                         trees_packing_t *out, tn_err_t *err);

#endif
