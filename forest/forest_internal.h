/* forest/forest_internal.h — private to forest/: the packing (pack.c) that the planner
 * (plan.c) schedules chunks on. */
#ifndef TENET_FOREST_INTERNAL_H
#define TENET_FOREST_INTERNAL_H

#include "forest/forest.h"

#define FOREST_NO_PARENT UINT32_MAX

/* trees trees per root NPU: the parent of NPU v in tree i of root r is
 * parent[((size_t)r * trees + i) * n + v] (FOREST_NO_PARENT at the root). */
typedef struct forest_pack {
  uint32_t n, trees;
  uint32_t *parent;
} forest_pack_t;

/* Packs trees broadcast trees per NPU on t (see forest_run). routes is borrowed. *out is
 * zeroed first; free with forest_i_pack_free. TN_INFEASIBLE when some NPU cannot be
 * reached over the logical edges. */
tn_status_t forest_i_pack(const topo_t *t, topo_routes_t *routes, uint32_t trees,
                          forest_pack_t *out, tn_err_t *err);
void forest_i_pack_free(forest_pack_t *p);

#endif
