/* topo/resolve.c — turns a TOPO argument into a file path: an existing file as given,
 * else a shipped name looked up as <dir>/<name>.json (docs/architecture.md §6). The first step
 * of every command that takes -t. */
#include "topo/topo.h"
#include "topo/topo_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The shipped name closest to arg (a did-you-mean by tn_suggest), copied into buf; "" when
 * none is close or memory runs out (the hint is optional). The names are sorted first, so
 * a tie goes to the alphabetically first and the hint does not depend on readdir's order. */
static void closest_shipped(const char *arg, const char *dir, char *buf, size_t len) {
  buf[0] = '\0';
  DIR *d = dir ? opendir(dir) : NULL;
  if (d == NULL) return;
  tn_vec_t names;
  tn_vec_init(&names, sizeof(char *));
  bool ok = true;
  for (struct dirent *e = readdir(d); e != NULL && ok; e = readdir(d)) {
    size_t n = strlen(e->d_name);
    char *name = NULL;
    if (n <= 5 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    ok = tn_strdup(e->d_name, &name, NULL) == TN_OK;
    if (ok) name[n - 5] = '\0';
    if (ok && !(ok = tn_vec_push(&names, &name, NULL) == TN_OK)) free(name);
  }
  closedir(d);
  char **v = names.data;
  if (ok && names.len > 0) {
    qsort(v, names.len, sizeof *v, cmp_name);
    const char *best = tn_suggest(arg, v, names.len, sizeof *v);
    if (best) snprintf(buf, len, "%s", best);
  }
  for (size_t i = 0; i < names.len; i++)
    free(v[i]);
  tn_vec_free(&names);
}

tn_status_t topo_resolve(const char *arg, const char *shipped_dir, char **path, tn_err_t *err) {
  *path = NULL;
  if (arg == NULL || *arg == '\0') return tn_err_set(err, TN_INVAL, "empty topology name");
  if (is_file(arg)) return tn_strdup(arg, path, err);
  /* Something else there (a FIFO, a device, a directory) is named for what it is rather
   * than looked up as a shipped name. */
  struct stat sb;
  if (stat(arg, &sb) == 0) return tn_input_check(arg, err);
  bool looks_like_path = strchr(arg, '/') != NULL || strchr(arg, '.') != NULL;
  if (!looks_like_path && shipped_dir != NULL) {
    size_t n = strlen(shipped_dir) + strlen(arg) + 7;
    char *p = NULL;
    tn_status_t st = tn_calloc(n, 1, &p, err);
    if (st != TN_OK) return st;
    snprintf(p, n, "%s/%s.json", shipped_dir, arg);
    if (is_file(p)) {
      *path = p;
      return TN_OK;
    }
    free(p);
  }
  if (looks_like_path) return tn_err_set(err, TN_IO, "%s: no such file", arg);
  char hint[128];
  closest_shipped(arg, shipped_dir, hint, sizeof hint);
  if (hint[0])
    return tn_err_set(err, TN_IO,
                      "'%s' is neither a file nor a shipped topology (did you "
                      "mean '%s'? 'tenet topo list' shows the shipped names)",
                      arg, hint);
  return tn_err_set(err, TN_IO,
                    "'%s' is neither a file nor a shipped topology ('tenet topo "
                    "list' shows the shipped names, in %s)",
                    arg, shipped_dir ? shipped_dir : "the topologies folder");
}
