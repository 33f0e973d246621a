/* common/error.c — status strings, exit codes and the first-error-wins error struct. Every
 * message is one line that fits the struct whatever its length: control characters (a
 * third-party library's newlines) fold to blanks and an overlong text loses its middle,
 * never its end, which holds the reason. */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
#define TN_STATUS_STR(name, str) str,
    TN_STATUS_MAP(TN_STATUS_STR)
#undef TN_STATUS_STR
};

const char *tn_status_str(tn_status_t st) {
  size_t i = (size_t)st;
  if (i >= sizeof status_names / sizeof status_names[0]) return "unknown status";
  return status_names[i];
}

int tn_status_exit_code(tn_status_t st) {
  switch (st) {
  case TN_OK: return 0;
  case TN_INVAL:
  case TN_PARSE:
  case TN_IO: return 1;
  case TN_INFEASIBLE:
  case TN_LIMIT:
  case TN_SOLVER: return 2;
  case TN_NOMEM:
  case TN_INTERNAL: return 3;
  }
  return 3;
}

/* True for a byte that continues a UTF-8 sequence: a cut never lands before one. */
static bool utf8_tail(char c) {
  return ((unsigned char)c & 0xC0u) == 0x80u;
}

void tn_fit_line(char *dst, size_t cap, const char *src) {
  static const char gap[] = "...";
  if (cap == 0) return;
  size_t n = strlen(src);
  size_t head = n, tail = 0;
  if (n >= cap) {
    /* Keep a third from the start (the item) and the rest from the end (the reason). */
    size_t room = cap > sizeof gap ? cap - sizeof gap : 0;
    head = room / 3;
    tail = room - head;
    while (head > 0 && utf8_tail(src[head]))
      head--;
    while (tail > 0 && utf8_tail(src[n - tail]))
      tail--;
  }
  memcpy(dst, src, head);
  size_t len = head;
  if (n >= cap) {
    memcpy(dst + len, gap, sizeof gap - 1);
    len += sizeof gap - 1;
    memcpy(dst + len, src + n - tail, tail);
    len += tail;
  }
  dst[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)dst[i] < 0x20u || dst[i] == 0x7f) dst[i] = ' ';
  while (len > 0 && dst[len - 1] == ' ')
    dst[--len] = '\0';
}

/* Formats fmt into err->msg through tn_fit_line: the whole text is formatted first (on the
 * heap), so that its end survives; without memory it is cut at the end instead. */
static void set_msg(tn_err_t *err, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;
static void set_msg(tn_err_t *err, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *full = n >= 0 && (size_t)n >= sizeof err->msg ? malloc((size_t)n + 1) : NULL;
  if (full != NULL) {
    vsnprintf(full, (size_t)n + 1, fmt, ap);
    tn_fit_line(err->msg, sizeof err->msg, full);
    free(full);
    return;
  }
  char buf[sizeof err->msg];
  vsnprintf(buf, sizeof buf, fmt, ap);
  tn_fit_line(err->msg, sizeof err->msg, buf);
}

tn_status_t tn_err_set(tn_err_t *err, tn_status_t st, const char *fmt, ...) {
  if (err == NULL || err->status != TN_OK || st == TN_OK) return st;
  err->status = st;
  va_list ap;
  va_start(ap, fmt);
  set_msg(err, fmt, ap);
  va_end(ap);
  return st;
}

tn_status_t tn_err_set_at(tn_err_t *err, tn_status_t st, const char *where, const char *fmt,
                          va_list ap) {
  if (err == NULL || err->status != TN_OK || st == TN_OK) return st;
  tn_err_t inner = {0};
  set_msg(&inner, fmt, ap);
  return tn_err_set(err, st, "%s: %s", where, inner.msg);
}

void tn_err_prefix(tn_err_t *err, const char *fmt, ...) {
  if (err == NULL || err->status == TN_OK) return;
  tn_err_t head = {0};
  va_list ap;
  va_start(ap, fmt);
  set_msg(&head, fmt, ap);
  va_end(ap);
  tn_err_t old = *err;
  tn_err_clear(err);
  tn_err_set(err, old.status, "%s: %s", head.msg, old.msg);
}

void tn_err_clear(tn_err_t *err) {
  if (err == NULL) return;
  err->status = TN_OK;
  err->msg[0] = '\0';
}
