/* common/text.c — text helpers shared by the loaders and the CLI: the edit distance
 * behind every "did you mean" hint (topology keys and kinds, options, subcommands). */
#include "common/common.h"

#include <string.h>

size_t tn_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return SIZE_MAX;
  size_t prev[65], cur[65];
  for (size_t j = 0; j <= m; j++) prev[j] = j;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, (m + 1) * sizeof *prev);
  }
  return prev[m];
}

const char *tn_suggest(const char *word, const void *names, size_t n, size_t stride) {
  const char *best = NULL;
  size_t best_d = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    const char *name = *(const char *const *)(const void *)((const char *)names + i * stride);
    size_t d = tn_edit_distance(word, name);
    if (d < best_d) best_d = d, best = name;
  }
  size_t limit = strlen(word) <= 3 ? 1 : 2;
  return best_d <= limit ? best : NULL;
}
