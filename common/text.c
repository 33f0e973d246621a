/* common/text.c — text helpers shared by the loaders and the CLI: the edit distance and
 * the one "did you mean" rule, and the growing string every text writer builds with. */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
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

void tn_sb_init(tn_sb_t *b, tn_err_t *err) {
  tn_vec_init(&b->v, 1);
  b->st = TN_OK;
  b->err = err;
}

void tn_sb_printf(tn_sb_t *b, const char *fmt, ...) {
  if (b->st != TN_OK) return;
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->st = tn_err_set(b->err, TN_INTERNAL, "formatting failed");
  } else if ((b->st = tn_vec_reserve(&b->v, b->v.len + (size_t)n + 1, b->err)) == TN_OK) {
    vsnprintf((char *)b->v.data + b->v.len, (size_t)n + 1, fmt, ap2);
    b->v.len += (size_t)n;
  }
  va_end(ap2);
}
