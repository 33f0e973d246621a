/* trees/trees_internal.h — private to trees/: the exact weights of a kept set of trees
 * (lp.c, GLPK behind lp/) for the packing (pack.c), and the packing as the planner's large
 * regime asks for it (plan.c). */
#ifndef TENET_TREES_INTERNAL_H
#define TENET_TREES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "trees/trees.h"

/* The weights x[0..k) that maximise their sum subject to every NPU pair e carrying at most
 * cap[e] (m pairs): tree i holds the n1 pair ids edges[i * n1 ..]. A linear program solved
 * by GLPK's simplex (deterministic). Returns false, x untouched, when the build has no GLPK
 * or the solve fails; the caller then falls back to multiplicative weights. */
bool trees_i_lp_weights(uint32_t m, const double *cap, uint32_t n1, const uint32_t *edges,
                        uint32_t k, double *x);

/* trees_pack, with layered_only: the layered (shallow) trees alone, never the minimum
 * spanning trees of all spanning trees, however much more those pack. For plans with few
 * messages per tree, where a tree's depth adds to the time as much as its rate saves. */
tn_status_t trees_i_pack(const topo_t *t, uint32_t max_trees, bool layered_only,
                         trees_packing_t *out, tn_err_t *err);

#endif
