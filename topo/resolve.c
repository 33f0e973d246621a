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

/* The shipped name closest to arg (a did-you-mean), copied into buf; "" when none is
 * close. Ties go to the alphabetically first name, so the hint is deterministic. */
static void closest_shipped(const char *arg, const char *dir, char *buf, size_t len) {
  buf[0] = '\0';
  DIR *d = dir ? opendir(dir) : NULL;
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n <= 5 || n >= 128 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    char name[128];
    memcpy(name, e->d_name, n - 5);
    name[n - 5] = '\0';
    const char *cand[1] = {name};
    if (tn_suggest(arg, cand, 1, sizeof(char *)) == NULL) continue;
    /* Keep the better of the two: compare via suggest on a two-candidate list. */
    if (buf[0] == '\0') {
      snprintf(buf, len, "%s", name);
    } else {
      const char *two[2] = {strcmp(buf, name) < 0 ? buf : name,
                            strcmp(buf, name) < 0 ? name : buf};
      const char *best = tn_suggest(arg, two, 2, sizeof(char *));
      if (best && best != buf) {
        char tmp[128];
        snprintf(tmp, sizeof tmp, "%s", best);
        snprintf(buf, len, "%s", tmp);
      }
    }
  }
  closedir(d);
}

tn_status_t topo_resolve(const char *arg, const char *shipped_dir, char **path,
                         tn_err_t *err) {
  *path = NULL;
  if (arg == NULL || *arg == '\0') return tn_err_set(err, TN_INVAL, "empty topology name");
  if (is_file(arg)) return tn_strdup(arg, path, err);
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
  if (looks_like_path)
    return tn_err_set(err, TN_IO, "%s: no such file", arg);
  char hint[128];
  closest_shipped(arg, shipped_dir, hint, sizeof hint);
  if (hint[0])
    return tn_err_set(err, TN_IO, "'%s' is neither a file nor a shipped topology (did you "
                      "mean '%s'? 'tenet topo list' shows the shipped names)", arg, hint);
  return tn_err_set(err, TN_IO, "'%s' is neither a file nor a shipped topology ('tenet topo "
                    "list' shows the shipped names, in %s)", arg,
                    shipped_dir ? shipped_dir : "the topologies folder");
}
