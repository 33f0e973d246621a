/* common/sort.c — the one radix sort: a stable LSD sort of n 64-bit keys into an order
 * (a permutation), for the places that must not depend on qsort's instability or pay its
 * O(n log n) on large inputs (the verifier's message matching, the simulator's link
 * report). */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

enum { RADIX_BITS = 8, RADIX = 1 << RADIX_BITS };

tn_status_t tn_radix_order(const uint64_t *keys, uint32_t n, uint32_t *order, tn_err_t *err) {
  uint64_t all_or = 0, all_and = UINT64_MAX;
  for (uint32_t i = 0; i < n; i++) {
    order[i] = i;
    all_or |= keys[i], all_and &= keys[i];
  }
  uint32_t *tmp = NULL;
  tn_status_t st = tn_malloc((size_t)n + 1, sizeof *tmp, &tmp, err);
  if (st != TN_OK) return st;
  uint32_t *src = order, *dst = tmp;
  for (uint32_t shift = 0; shift < 64; shift += RADIX_BITS) {
    /* A digit every key shares orders nothing: skip its pass. */
    if ((((all_or ^ all_and) >> shift) & (RADIX - 1)) == 0) continue;
    uint32_t count[RADIX + 1] = {0};
    for (uint32_t i = 0; i < n; i++)
      count[((keys[src[i]] >> shift) & (RADIX - 1)) + 1]++;
    for (uint32_t b = 0; b < RADIX; b++)
      count[b + 1] += count[b];
    for (uint32_t i = 0; i < n; i++)
      dst[count[(keys[src[i]] >> shift) & (RADIX - 1)]++] = src[i];
    uint32_t *t = src;
    src = dst, dst = t;
  }
  if (src != order) memcpy(order, src, (size_t)n * sizeof *order);
  free(tmp);
  return TN_OK;
}
