/* common/files.c — whole-file reads and all-or-nothing writes (temp name, then rename). */
#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void tn_temp_suffix(char *buf, size_t len) {
  snprintf(buf, len, ".tmp.%ld", (long)getpid());
}

tn_status_t tn_rename_into_place(const char *tmp, const char *path, tn_err_t *err) {
  if (rename(tmp, path) == 0) return TN_OK;
  tn_status_t st = tn_err_set(err, TN_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  remove(tmp);
  return st;
}

tn_status_t tn_outfile_open(tn_outfile_t *o, const char *path, tn_err_t *err) {
  o->f = NULL;
  o->path = NULL;
  o->tmp = NULL;
  tn_status_t st = tn_strdup(path, &o->path, err);
  if (st != TN_OK) return st;
  size_t n = strlen(path) + 48;
  if ((st = tn_calloc(n, 1, &o->tmp, err)) != TN_OK) goto fail;
  char suffix[32];
  tn_temp_suffix(suffix, sizeof suffix);
  snprintf(o->tmp, n, "%s%s", path, suffix);
  o->f = fopen(o->tmp, "wb");
  if (o->f == NULL) {
    st = tn_err_set(err, TN_IO, "%s: cannot write: %s", path, strerror(errno));
    goto fail;
  }
  return TN_OK;
fail:
  free(o->path);
  free(o->tmp);
  o->path = o->tmp = NULL;
  return st;
}

tn_status_t tn_outfile_commit(tn_outfile_t *o, tn_err_t *err) {
  tn_status_t st = TN_OK;
  int bad = ferror(o->f);
  if (fclose(o->f) != 0 || bad) {
    st = tn_err_set(err, TN_IO, "%s: write failed: %s", o->path, strerror(errno));
    remove(o->tmp);
  } else {
    st = tn_rename_into_place(o->tmp, o->path, err);
  }
  o->f = NULL;
  free(o->path);
  free(o->tmp);
  o->path = o->tmp = NULL;
  return st;
}

void tn_outfile_abort(tn_outfile_t *o) {
  if (o == NULL || o->tmp == NULL) return;
  if (o->f) fclose(o->f);
  remove(o->tmp);
  free(o->path);
  free(o->tmp);
  o->f = NULL;
  o->path = o->tmp = NULL;
}

tn_status_t tn_read_file(const char *path, size_t max, char **data, size_t *len,
                         tn_err_t *err) {
  *data = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return tn_err_set(err, TN_IO, "%s: cannot open: %s", path, strerror(errno));
  tn_vec_t v;
  tn_vec_init(&v, 1);
  tn_status_t st = TN_OK;
  char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    if (v.len + got > max) {
      st = tn_err_set(err, TN_LIMIT, "%s: larger than the %zu-byte limit", path, max);
      goto fail;
    }
    if ((st = tn_vec_reserve(&v, v.len + got + 1, err)) != TN_OK) goto fail;
    memcpy((char *)v.data + v.len, buf, got);
    v.len += got;
  }
  if (ferror(f)) {
    st = tn_err_set(err, TN_IO, "%s: read error: %s", path, strerror(errno));
    goto fail;
  }
  if ((st = tn_vec_reserve(&v, v.len + 1, err)) != TN_OK) goto fail;
  ((char *)v.data)[v.len] = '\0';
  fclose(f);
  *data = v.data;
  *len = v.len;
  return TN_OK;
fail:
  fclose(f);
  tn_vec_free(&v);
  return st;
}

tn_status_t tn_mkdir_parents(const char *path, tn_err_t *err) {
  char *p = NULL;
  tn_status_t st = tn_strdup(path, &p, err);
  if (st != TN_OK) return st;
  char *slash = strrchr(p, '/');
  if (slash == NULL || slash == p) {
    free(p);
    return TN_OK;
  }
  *slash = '\0';
  for (char *q = p + 1; ; q++) {
    if (*q == '/' || *q == '\0') {
      char c = *q;
      *q = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        st = tn_err_set(err, TN_IO, "%s: cannot create directory: %s", p, strerror(errno));
        break;
      }
      *q = c;
      if (c == '\0') break;
    }
  }
  free(p);
  return st;
}

void tn_rng_seed(tn_rng_t *r, uint64_t seed) { r->state = seed ^ 0x9e3779b97f4a7c15ull; }

uint64_t tn_rng_next(tn_rng_t *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tn_rng_below(tn_rng_t *r, uint64_t n) { return tn_rng_next(r) % n; }

double tn_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
