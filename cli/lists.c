/* cli/lists.c — small argument helpers shared by compare, batch and demo: comma lists,
 * algorithm lists and --shard I/N. Pure functions (unit-tested in test_cli.c). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

void cli_list_free(char **items, size_t n) {
  for (size_t i = 0; items != NULL && i < n; i++)
    free(items[i]);
  free(items);
}

tn_status_t cli_split_list(const char *s, const char *what, char ***items, size_t *n,
                           tn_err_t *err) {
  *items = NULL;
  *n = 0;
  tn_vec_t v;
  tn_vec_init(&v, sizeof(char *));
  tn_status_t st = TN_OK;
  const char *p = s ? s : "";
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    while (len > 0 && (*p == ' ' || *p == '\t'))
      p++, len--;
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
      len--;
    if (len == 0) {
      st = tn_err_set(err, TN_INVAL, "%s: empty item in '%s'", what, s ? s : "");
      break;
    }
    char *item = NULL;
    if ((st = tn_calloc(len + 1, 1, &item, err)) != TN_OK) break;
    memcpy(item, p, len);
    for (size_t i = 0; i < v.len && st == TN_OK; i++)
      if (strcmp(TN_VEC_AT(&v, char *, i), item) == 0)
        st = tn_err_set(err, TN_INVAL, "%s: '%s' is listed twice", what, item);
    if (st == TN_OK) st = tn_vec_push(&v, &item, err);
    if (st != TN_OK) {
      free(item);
      break;
    }
    if (comma == NULL) break;
    p = comma + 1;
  }
  if (st != TN_OK) {
    cli_list_free(v.data, v.len);
    return st;
  }
  *items = v.data;
  *n = v.len;
  return TN_OK;
}

tn_status_t cli_parse_algos(const char *s, char ***items, size_t *n, tn_err_t *err) {
  tn_status_t st = cli_split_list(s, "--algos", items, n, err);
  for (size_t i = 0; st == TN_OK && i < *n; i++) {
    synth_method_t m;
    st = synth_method_parse((*items)[i], "--algos", &m, err);
  }
  if (st != TN_OK) {
    cli_list_free(*items, *n);
    *items = NULL;
    *n = 0;
  }
  return st;
}

tn_status_t cli_parse_colls(const char *s, tn_coll_t **colls, size_t *n, tn_err_t *err) {
  char **items = NULL;
  size_t m = 0;
  *colls = NULL;
  *n = 0;
  tn_status_t st = cli_split_list(s, "--colls", &items, &m, err);
  if (st == TN_OK) st = tn_calloc(m, sizeof **colls, colls, err);
  for (size_t i = 0; st == TN_OK && i < m; i++) {
    st = tn_coll_parse(items[i], &(*colls)[i], err);
    for (size_t j = 0; st == TN_OK && j < i; j++)
      if ((*colls)[j] == (*colls)[i])
        st =
            tn_err_set(err, TN_INVAL, "--colls: '%s' names %s twice", s, tn_coll_name((*colls)[i]));
  }
  cli_list_free(items, m);
  if (st != TN_OK) {
    free(*colls);
    *colls = NULL;
    return st;
  }
  *n = m;
  return TN_OK;
}

tn_status_t cli_parse_shard(const char *s, uint32_t *index, uint32_t *count, tn_err_t *err) {
  const char *slash = s ? strchr(s, '/') : NULL;
  char left[32];
  if (slash == NULL || (size_t)(slash - s) >= sizeof left)
    return tn_err_set(err, TN_INVAL, "--shard: '%s' is not I/N (like 0/4)", s ? s : "");
  snprintf(left, sizeof left, "%.*s", (int)(slash - s), s);
  uint64_t i = 0, n = 0;
  tn_err_t e = {0};
  if (tn_parse_u64(left, 0, UINT32_MAX, "--shard", &i, &e) != TN_OK ||
      tn_parse_u64(slash + 1, 1, 1000000, "--shard", &n, &e) != TN_OK)
    return tn_err_set(err, TN_INVAL, "--shard: '%s' is not I/N (like 0/4)", s);
  if (i >= n)
    return tn_err_set(err, TN_INVAL, "--shard: index %llu must be below the count %llu",
                      (unsigned long long)i, (unsigned long long)n);
  *index = (uint32_t)i;
  *count = (uint32_t)n;
  return TN_OK;
}

tn_status_t cli_parse_sizes(const char *s, uint64_t **sizes, size_t *n, tn_err_t *err) {
  tn_status_t st = tn_parse_size_list(s, sizes, n, err);
  if (st != TN_OK) {
    tn_err_prefix(err, "--sizes");
    return st;
  }
  for (size_t i = 0; st == TN_OK && i < *n; i++) {
    char b[32];
    if ((*sizes)[i] == 0) st = tn_err_set(err, TN_INVAL, "--sizes: a size must be > 0");
    for (size_t j = 0; st == TN_OK && j < i; j++)
      if ((*sizes)[i] == (*sizes)[j])
        st = tn_err_set(err, TN_INVAL, "--sizes: %s is listed twice",
                        tn_fmt_size((*sizes)[i], b, sizeof b));
  }
  if (st != TN_OK) {
    free(*sizes);
    *sizes = NULL;
    *n = 0;
  }
  return st;
}
