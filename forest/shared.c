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
/* At a size where MIN_CHUNK_BYTES holds the automatic count down, finer counts are
 * planned too (forest_tries): up to SMALL_DOUBLINGS doublings, no chunk below
 * SMALL_MIN_CHUNK_BYTES. There a tree's depth costs a chunk's time per level, so smaller
 * chunks fill and drain the trees faster, down to a point (leaf-32 All-Gather of 1 MiB:
 * 6.38 us at 16 KiB chunks, 6.03 at 8, 5.71 at 4, 7.94 at 2; hierarchical-16x8 was
 * fastest at 1 KiB). */
#define SMALL_MIN_CHUNK_BYTES (1u << 10)
#define SMALL_DOUBLINGS 3u
/* The other packings (forest_tries) up to this many NPUs: each is an LP of its own, which
 * on 64 NPUs costs about half a second (hypercube-64 Reduce-Scatter of 1 MiB: 2.7 s of CPU
 * with all four, against 0.5 s for the greedy's), and the fabrics they helped have 32. */
#define SMALL_PACK_NPUS 32u

/* Children lists of tree tr (CSR at off, kid), each in ascending NPU id. */
static void tree_kids(const forest_pack_t *pk, uint32_t tr, uint32_t *off, uint32_t *kid) {
  uint32_t n = pk->n;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t p = forest_i_parent(pk, tr, v);
    if (p != FOREST_NO_PARENT) off[p + 1]++;
  }
  for (uint32_t v = 0; v < n; v++)
    off[v + 1] += off[v];
  for (uint32_t v = 0; v < n; v++) { /* ascending v: each list comes out sorted */
    uint32_t p = forest_i_parent(pk, tr, v);
    if (p != FOREST_NO_PARENT) kid[off[p]++] = v;
  }
  for (uint32_t v = n; v > 0; v--) /* the fill moved every start to the next one's */
    off[v] = off[v - 1];
  off[0] = 0;
}

/* Root r's k chunks dealt to its m trees (from tree first) by weight: each tree gets the
 * floor of its share, the rest go to the largest remainders (lower trees first among
 * equals); then the smooth weighted round robin orders them, so a tree's chunks are spread
 * over the whole sequence. cnt and cur are scratch of m entries. */
static void deal(const forest_pack_t *pk, uint32_t first, uint32_t m, uint32_t k, uint32_t *out,
                 uint32_t *cnt, int64_t *cur) {
  uint32_t given = 0;
  for (uint32_t i = 0; i < m; i++) {
    cnt[i] = (uint32_t)(pk->weight[first + i] * k);
    given += cnt[i];
  }
  while (given < k) {
    uint32_t best = 0;
    double most = -1;
    for (uint32_t i = 0; i < m; i++) {
      double rem = pk->weight[first + i] * k - cnt[i];
      if (rem > most) most = rem, best = i;
    }
    cnt[best]++;
    given++;
  }
  for (uint32_t i = 0; i < m; i++)
    cur[i] = 0;
  for (uint32_t j = 0; j < k; j++) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < m; i++) {
      cur[i] += cnt[i];
      if (cnt[i] && (best == UINT32_MAX || cur[i] > cur[best])) best = i;
    }
    cur[best] -= k;
    out[j] = first + best;
  }
}

tn_status_t forest_i_kids(const forest_pack_t *pk, uint32_t k, forest_kids_t *out, tn_err_t *err) {
  uint32_t n = pk->n, ntrees = pk->ntrees, most = 0;
  *out = (forest_kids_t){.n = n, .k = k};
  uint32_t *cnt = NULL;
  int64_t *cur = NULL;
  for (uint32_t r = 0; r < n; r++)
    if (pk->tree_off[r + 1] - pk->tree_off[r] > most) most = pk->tree_off[r + 1] - pk->tree_off[r];
  tn_status_t st = tn_calloc((size_t)ntrees * (n + 1), sizeof *out->off, &out->off, err);
  if (st == TN_OK) st = tn_calloc((size_t)ntrees * n, sizeof *out->kid, &out->kid, err);
  if (st == TN_OK) st = tn_calloc((size_t)n * k, sizeof *out->tree_of, &out->tree_of, err);
  if (st == TN_OK) st = tn_calloc(most + 1, sizeof *cnt, &cnt, err);
  if (st == TN_OK) st = tn_calloc(most + 1, sizeof *cur, &cur, err);
  for (uint32_t tr = 0; st == TN_OK && tr < ntrees; tr++)
    tree_kids(pk, tr, &out->off[(size_t)tr * (n + 1)], &out->kid[(size_t)tr * n]);
  for (uint32_t r = 0; st == TN_OK && r < n; r++)
    deal(pk, pk->tree_off[r], pk->tree_off[r + 1] - pk->tree_off[r], k,
         &out->tree_of[(size_t)r * k], cnt, cur);
  free(cnt);
  free(cur);
  if (st != TN_OK) forest_i_kids_free(out);
  return st;
}

void forest_i_kids_free(forest_kids_t *k) {
  free(k->off);
  free(k->kid);
  free(k->tree_of);
  k->off = k->kid = k->tree_of = NULL;
}

/* The packings forest_tries names: rounds per NPU (0: the caller's trees_per_npu, or
 * FOREST_TREES) and the LP's slack. Measured at 1 MiB (time/bound, the usual packing
 * against the best of the four, with the chunk counts above): leaf-32 All-Gather 1.542
 * -> 1.329, fattree-32-4to1 Reduce-Scatter 1.658 -> 1.400. */
static const struct {
  uint32_t trees;
  double slack;
} packings[FOREST_PACKINGS] = {{0, FOREST_SLACK}, {2, FOREST_SLACK}, {2, 0.1}, {0, 0.1}};

void forest_i_packing(const forest_opts_t *opts, uint32_t *trees, double *slack) {
  uint32_t p = opts && opts->packing < FOREST_PACKINGS ? opts->packing : 0;
  *trees = packings[p].trees             ? packings[p].trees
           : opts && opts->trees_per_npu ? opts->trees_per_npu
                                         : FOREST_TREES;
  *slack = packings[p].slack;
}

uint32_t forest_tries(const topo_t *t, uint64_t size, forest_try_t tries[FOREST_TRIES]) {
  uint32_t n = t->npus;
  uint32_t counts[1 + SMALL_DOUBLINGS], nc = 0, m = 0;
  counts[nc++] = forest_i_chunks(n, size, FOREST_MAX_CHUNKS);
  bool small = n >= 2 && size / ((uint64_t)n * MIN_CHUNK_BYTES) < FOREST_MAX_CHUNKS;
  uint64_t cap = n >= 2 ? MAX_TRANSFERS / ((uint64_t)n * (n - 1)) : 0;
  for (uint32_t d = 0, c = counts[0]; small && d < SMALL_DOUBLINGS; d++) {
    c *= 2;
    if (c > FOREST_MAX_CHUNKS || c > cap || size / ((uint64_t)n * c) < SMALL_MIN_CHUNK_BYTES) break;
    counts[nc++] = c;
  }
  uint32_t np = small && n <= SMALL_PACK_NPUS && forest_i_lp_available() ? FOREST_PACKINGS : 1;
  for (uint32_t p = 0; p < np; p++)
    for (uint32_t i = 0; i < nc; i++)
      tries[m++] = (forest_try_t){counts[i], p};
  /* The two-level trees: the two finest of those counts up to LEVELS_MAX_CHUNKS, and one
   * doubling more (their depth is 2, so finer chunks fill them faster still; on the shipped
   * switch fabrics at 1 MiB the kept count was always one of the finest two, and the
   * coarser ones cost hierarchical-16x8's All-Reduce about a second). */
  uint32_t last = 0, fine = 0;
  bool levels = forest_levels_apply(t);
  while (levels && fine < nc && counts[fine] <= LEVELS_MAX_CHUNKS)
    fine++;
  for (uint32_t i = fine > 2 ? fine - 2 : 0; i < fine; i++)
    tries[m++] = (forest_try_t){last = counts[i], FOREST_PACK_LEVELS};
  if (last && 2 * last <= LEVELS_MAX_CHUNKS && 2 * last <= cap &&
      size / ((uint64_t)n * 2 * last) >= SMALL_MIN_CHUNK_BYTES)
    tries[m++] = (forest_try_t){2 * last, FOREST_PACK_LEVELS};
  return m;
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
