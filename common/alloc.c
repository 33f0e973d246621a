/* common/alloc.c — overflow-checked allocation and the growable array. */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

/* tn_calloc and tn_malloc: n*size checked, a zero-size request still gets a unique
 * pointer. */
static tn_status_t alloc(size_t n, size_t size, bool zeroed, void *out, tn_err_t *err) {
  void **p = out;
  *p = NULL;
  if (size != 0 && n > SIZE_MAX / size)
    return tn_err_set(err, TN_NOMEM, "allocation of %zu x %zu bytes overflows", n, size);
  if (n == 0 || size == 0) n = 1, size = 1;
  *p = zeroed ? calloc(n, size) : malloc(n * size);
  if (*p == NULL)
    return tn_err_set(err, TN_NOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  return TN_OK;
}

tn_status_t tn_calloc(size_t n, size_t size, void *out, tn_err_t *err) {
  return alloc(n, size, true, out, err);
}

tn_status_t tn_malloc(size_t n, size_t size, void *out, tn_err_t *err) {
  return alloc(n, size, false, out, err);
}

tn_status_t tn_realloc(void *pp, size_t old_n, size_t n, size_t size, tn_err_t *err) {
  void **p = pp;
  if (size != 0 && n > SIZE_MAX / size)
    return tn_err_set(err, TN_NOMEM, "allocation of %zu x %zu bytes overflows", n, size);
  size_t bytes = n * size;
  void *q = realloc(*p, bytes ? bytes : 1);
  if (q == NULL) return tn_err_set(err, TN_NOMEM, "out of memory growing to %zu bytes", bytes);
  if (n > old_n) memset((char *)q + old_n * size, 0, (n - old_n) * size);
  *p = q;
  return TN_OK;
}

tn_status_t tn_strdup(const char *s, char **out, tn_err_t *err) {
  *out = NULL;
  if (s == NULL) return TN_OK;
  size_t n = strlen(s) + 1;
  tn_status_t st = tn_calloc(n, 1, out, err);
  if (st == TN_OK) memcpy(*out, s, n);
  return st;
}

void tn_vec_init(tn_vec_t *v, size_t elem_size) {
  v->data = NULL;
  v->len = v->cap = 0;
  v->elem_size = elem_size;
}

void tn_vec_free(tn_vec_t *v) {
  if (v == NULL) return;
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

tn_status_t tn_vec_reserve(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  size_t ncap = v->cap ? v->cap : 16;
  while (ncap < cap) {
    if (ncap > SIZE_MAX / 2) return tn_err_set(err, TN_NOMEM, "array too large");
    ncap *= 2;
  }
  tn_status_t st = tn_realloc(&v->data, v->cap, ncap, v->elem_size, err);
  if (st == TN_OK) v->cap = ncap;
  return st;
}

tn_status_t tn_vec_reserve_exact(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  tn_status_t st = v->data == NULL ? tn_calloc(cap, v->elem_size, &v->data, err)
                                   : tn_realloc(&v->data, v->cap, cap, v->elem_size, err);
  if (st == TN_OK) v->cap = cap;
  return st;
}

tn_status_t tn_vec_reserve_exact_uninit(tn_vec_t *v, size_t cap, tn_err_t *err) {
  if (cap <= v->cap) return TN_OK;
  /* tn_realloc zeroes only what lies beyond old_n: passing cap leaves the room as is */
  tn_status_t st = v->data == NULL ? tn_malloc(cap, v->elem_size, &v->data, err)
                                   : tn_realloc(&v->data, cap, cap, v->elem_size, err);
  if (st == TN_OK) v->cap = cap;
  return st;
}

tn_status_t tn_vec_push(tn_vec_t *v, const void *elem, tn_err_t *err) {
  if (v->len == v->cap) {
    tn_status_t st = tn_vec_reserve(v, v->len + 1, err);
    if (st != TN_OK) return st;
  }
  memcpy((char *)v->data + v->len * v->elem_size, elem, v->elem_size);
  v->len++;
  return TN_OK;
}
