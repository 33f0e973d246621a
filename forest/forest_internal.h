/* forest/forest_internal.h — private to forest/: the packing (pack.c) that the planners
 * (plan.c for All-Gather, reduce.c for Reduce-Scatter) schedule chunks on, and what the
 * two planners share (shared.c). */
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

/* The children of every NPU in the used trees of a packing (used <= trees per root): tree
 * r * used + i is tree i of root r; its children of v are kid[tree * n + off[tree * (n + 1)
 * + v]] .. up to off[tree * (n + 1) + v + 1], in ascending NPU id. */
typedef struct forest_kids {
  uint32_t n, used;
  uint32_t *off, *kid;
} forest_kids_t;

tn_status_t forest_i_kids(const forest_pack_t *pk, uint32_t used, forest_kids_t *out,
                          tn_err_t *err);
void forest_i_kids_free(forest_kids_t *k);

/* Tree (of forest_kids_t's numbering) of chunk c with k chunks per NPU: its owner's used
 * trees in turn. */
static inline uint32_t forest_i_tree_of(const forest_kids_t *kd, uint32_t k, uint32_t c) {
  return c / k * kd->used + c % k % kd->used;
}

/* Children of v in tree tr: *count of them from the returned pointer. */
static inline const uint32_t *forest_i_children(const forest_kids_t *kd, uint32_t tr, uint32_t v,
                                                uint32_t *count) {
  const uint32_t *off = &kd->off[(size_t)tr * (kd->n + 1)];
  *count = off[v + 1] - off[v];
  return &kd->kid[(size_t)tr * kd->n + off[v]];
}

/* Parent of v in tree i of root r (FOREST_NO_PARENT at r). */
static inline uint32_t forest_i_parent(const forest_pack_t *pk, uint32_t r, uint32_t i,
                                       uint32_t v) {
  return pk->parent[((size_t)r * pk->trees + i) * pk->n + v];
}

/* Chunks per NPU for size on n NPUs with at most most_chunks (see forest_run), at least
 * one. */
uint32_t forest_i_chunks(uint32_t n, uint64_t size, uint32_t most_chunks);

/* The refusals both planners share: fewer than 2 NPUs, more than FOREST_MAX_NPUS, less
 * than a byte per chunk, a disconnected fabric. */
tn_status_t forest_i_check(const topo_t *t, uint64_t size, uint32_t k, tn_err_t *err);

#endif
