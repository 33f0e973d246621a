/* forest/shared.c — what the All-Gather planner (plan.c) and the Reduce-Scatter planner
 * (reduce.c) share: the children lists of the packed trees, the automatic chunking and
 * the refusals. */
#include <stdlib.h>

#include "forest/forest_internal.h"

/* No chunk below this (smaller ones cost more in latency and nodes than they gain in
 * pipelining) and at most this many transfers in all (what is lowered, written and
 * simulated). */
#define MIN_CHUNK_BYTES (16u << 10)
#define MAX_TRANSFERS (1u << 19)

tn_status_t forest_i_kids(const forest_pack_t *pk, uint32_t used, forest_kids_t *out,
                          tn_err_t *err) {
  uint32_t n = pk->n, ntrees = n * used;
  *out = (forest_kids_t){.n = n, .used = used};
  tn_status_t st = tn_calloc((size_t)ntrees * (n + 1), sizeof *out->off, &out->off, err);
  if (st == TN_OK) st = tn_calloc((size_t)ntrees * n, sizeof *out->kid, &out->kid, err);
  for (uint32_t tr = 0; st == TN_OK && tr < ntrees; tr++) {
    uint32_t *off = &out->off[(size_t)tr * (n + 1)], *kid = &out->kid[(size_t)tr * n];
    for (uint32_t v = 0; v < n; v++) {
      uint32_t p = forest_i_parent(pk, tr / used, tr % used, v);
      if (p != FOREST_NO_PARENT) off[p + 1]++;
    }
    for (uint32_t v = 0; v < n; v++)
      off[v + 1] += off[v];
    for (uint32_t v = 0; v < n; v++) { /* ascending v: each list comes out sorted */
      uint32_t p = forest_i_parent(pk, tr / used, tr % used, v);
      if (p != FOREST_NO_PARENT) kid[off[p]++] = v;
    }
    for (uint32_t v = n; v > 0; v--) /* the fill moved every start to the next one's */
      off[v] = off[v - 1];
    off[0] = 0;
  }
  if (st != TN_OK) forest_i_kids_free(out);
  return st;
}

void forest_i_kids_free(forest_kids_t *k) {
  free(k->off);
  free(k->kid);
  k->off = k->kid = NULL;
}

uint32_t forest_i_chunks(uint32_t n, uint64_t size, uint32_t most_chunks) {
  uint64_t k = most_chunks, most = size / ((uint64_t)n * MIN_CHUNK_BYTES);
  uint64_t cap = MAX_TRANSFERS / ((uint64_t)n * (n - 1));
  if (k > most) k = most;
  if (k > cap) k = cap;
  return k ? (uint32_t)k : 1u;
}

tn_status_t forest_i_check(const topo_t *t, uint64_t size, uint32_t k, tn_err_t *err) {
  if (t->npus < 2)
    return tn_err_set(err, TN_INVAL, "forest: fabric '%s' has %u NPU; it needs 2", t->name,
                      t->npus);
  if (t->npus > FOREST_MAX_NPUS)
    return tn_err_set(err, TN_LIMIT, "forest: fabric '%s' has %u NPUs, above its cap of %u",
                      t->name, t->npus, FOREST_MAX_NPUS);
  if (size < (uint64_t)t->npus * k)
    return tn_err_set(err, TN_INVAL,
                      "forest: size %llu B is smaller than one byte per chunk (%u NPUs x %u)",
                      (unsigned long long)size, t->npus, k);
  return topo_check_connected(t, err);
}
