/* common/text.c — text helpers shared by the loaders and the CLI: the edit distance and
 * the one "did you mean" rule, the growing string every text writer builds with, and
 * UTF-8: the check names from input pass, the repair every JSON writer applies. */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint64_t tn_fnv1a64(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

size_t tn_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return SIZE_MAX;
  size_t prev[65], cur[65];
  for (size_t j = 0; j <= m; j++)
    prev[j] = j;
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

size_t tn_utf8_char_len(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  if (n == 0) return 0;
  if (p[0] < 0x80) return 1;
  /* The lead byte gives the length, the smallest code point that needs it, and its bits. */
  static const struct {
    unsigned char mask, lead;
    size_t len;
    uint32_t min;
  } forms[] = {{0xE0u, 0xC0u, 2, 0x80}, {0xF0u, 0xE0u, 3, 0x800}, {0xF8u, 0xF0u, 4, 0x10000}};
  size_t f = 0;
  while (f < 3 && (p[0] & forms[f].mask) != forms[f].lead)
    f++;
  if (f == 3) return 0;
  size_t len = forms[f].len;
  uint32_t min = forms[f].min, cp = p[0] & (unsigned char)~forms[f].mask;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (p[i] & 0x3Fu);
  }
  /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8. */
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return len;
}

bool tn_text_ok(const char *s, bool allow_controls, size_t *bad) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    size_t k = tn_utf8_char_len(s + i, n - i);
    unsigned char c = (unsigned char)s[i];
    if (k == 0 || (!allow_controls && (c < 0x20u || c == 0x7Fu))) {
      if (bad) *bad = i;
      return false;
    }
    i += k;
  }
  return true;
}

tn_status_t tn_utf8_repair(const char *s, size_t n, char **out, size_t *out_len, tn_err_t *err) {
  static const char fffd[] = "\xEF\xBF\xBD";
  *out = NULL;
  /* Each invalid byte grows to three: n * 3 + 1 bounds the result. */
  if (n > (SIZE_MAX - 1) / 3) return tn_err_set(err, TN_NOMEM, "out of memory");
  char *d = NULL;
  tn_status_t st = tn_malloc(n * 3 + 1, 1, &d, err);
  if (st != TN_OK) return st;
  size_t j = 0;
  for (size_t i = 0; i < n;) {
    size_t k = tn_utf8_char_len(s + i, n - i);
    if (k == 0) {
      memcpy(d + j, fffd, 3);
      j += 3;
      i++;
    } else {
      memcpy(d + j, s + i, k);
      j += k;
      i += k;
    }
  }
  d[j] = '\0';
  *out = d;
  if (out_len) *out_len = j;
  return TN_OK;
}
