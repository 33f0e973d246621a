/* common/error.c — status strings, exit codes and the first-error-wins error struct. */
#include "common/common.h"

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

tn_status_t tn_err_set(tn_err_t *err, tn_status_t st, const char *fmt, ...) {
  if (err == NULL || err->status != TN_OK || st == TN_OK) return st;
  err->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return st;
}

tn_status_t tn_err_set_at(tn_err_t *err, tn_status_t st, const char *where, const char *fmt,
                          va_list ap) {
  if (err == NULL || err->status != TN_OK || st == TN_OK) return st;
  char msg[sizeof err->msg];
  vsnprintf(msg, sizeof msg, fmt, ap);
  return tn_err_set(err, st, "%s: %s", where, msg);
}

void tn_err_prefix(tn_err_t *err, const char *fmt, ...) {
  if (err == NULL || err->status == TN_OK) return;
  char head[256];
  char old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  snprintf(err->msg, sizeof err->msg, "%s: %s", head, old);
}

void tn_err_clear(tn_err_t *err) {
  if (err == NULL) return;
  err->status = TN_OK;
  err->msg[0] = '\0';
}
