/* common/files.c — whole-file reads, the one rule for what an input may be (a regular file:
 * never a FIFO, device or directory, which would block or mean nothing) and the one rule
 * for where an output goes: a regular file is replaced all or nothing (temporary name, then
 * rename), a symbolic link has the file it names replaced, a device or a FIFO is written
 * straight into, a directory is refused. */
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How many links a chain may have before it counts as a loop (Linux's own limit). */
#define MAX_LINK_HOPS 40

/* ".tmp.<pid>" into buf (at least 32 bytes): the temporary's suffix. */
static void temp_suffix(char *buf, size_t len) {
  snprintf(buf, len, ".tmp.%ld", (long)getpid());
}

/* True when an output named path could only be a directory: empty, ending in '/', or an
 * existing directory (followed through links). */
static bool names_directory(const char *path) {
  size_t n = strlen(path);
  struct stat sb;
  return n == 0 || path[n - 1] == '/' || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

static tn_status_t refuse_directory(const char *path, tn_err_t *err) {
  if (!names_directory(path)) return TN_OK;
  return tn_err_set(err, TN_INVAL, "%s: is a directory; an output needs a file name",
                    path[0] ? path : "''");
}

/* Follows the chain of symbolic links at path to the name it ends at (*out, caller frees),
 * which need not exist: writing through a dangling link creates the file it names. */
static tn_status_t follow_links(const char *path, char **out, tn_err_t *err) {
  char *cur = NULL, *link = NULL;
  tn_status_t st = tn_strdup(path, &cur, err);
  struct stat sb;
  for (int hops = 0; st == TN_OK && lstat(cur, &sb) == 0 && S_ISLNK(sb.st_mode); hops++) {
    if (hops == MAX_LINK_HOPS) {
      st = tn_err_set(err, TN_IO, "%s: %s", path, strerror(ELOOP));
      break;
    }
    if ((st = tn_calloc(PATH_MAX + 1, 1, &link, err)) != TN_OK) break;
    ssize_t n = readlink(cur, link, PATH_MAX);
    if (n < 0) {
      st = tn_err_set(err, TN_IO, "%s: cannot read link: %s", cur, strerror(errno));
      break;
    }
    /* A relative target is read from the link's own folder. */
    const char *slash = strrchr(cur, '/');
    size_t dir = link[0] == '/' || slash == NULL ? 0 : (size_t)(slash - cur) + 1;
    char *next = NULL;
    if ((st = tn_calloc(dir + (size_t)n + 1, 1, &next, err)) != TN_OK) break;
    memcpy(next, cur, dir);
    memcpy(next + dir, link, (size_t)n);
    free(cur);
    free(link);
    cur = next;
    link = NULL;
  }
  free(link);
  if (st != TN_OK) {
    free(cur);
    cur = NULL;
  }
  *out = cur;
  return st;
}

tn_status_t tn_out_plan(const char *path, char **target, char **tmp, tn_err_t *err) {
  *target = *tmp = NULL;
  tn_status_t st = refuse_directory(path, err);
  if (st != TN_OK) return st;
  /* stat follows links the way open will, /proc's (/dev/stdout to a pipe) included. */
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) return tn_strdup(path, target, err);
  if ((st = follow_links(path, target, err)) != TN_OK) return st;
  char suffix[32];
  temp_suffix(suffix, sizeof suffix);
  size_t n = strlen(*target) + sizeof suffix;
  if ((st = tn_calloc(n, 1, tmp, err)) != TN_OK) {
    free(*target);
    *target = NULL;
    return st;
  }
  snprintf(*tmp, n, "%s%s", *target, suffix);
  return TN_OK;
}

tn_status_t tn_rename_into_place(const char *tmp, const char *path, tn_err_t *err) {
  if (rename(tmp, path) == 0) return TN_OK;
  tn_status_t st =
      tn_err_set(err, TN_IO, "%s: cannot rename into place: %s", path, strerror(errno));
  remove(tmp);
  return st;
}

/* A stream's temporary as registered for a fatal signal. */
struct tn_outfile_guard {
  tn_cleanup_t c;
  char *tmps[1];
  int slot;
};

static void outfile_release(tn_outfile_t *o) {
  if (o->guard) tn_cleanup_unregister(o->guard->slot);
  free(o->guard);
  o->guard = NULL;
  free(o->path);
  free(o->target);
  free(o->tmp);
  o->f = NULL;
  o->path = o->target = o->tmp = NULL;
}

tn_status_t tn_outfile_open(tn_outfile_t *o, const char *path, tn_err_t *err) {
  o->f = NULL;
  o->path = o->target = o->tmp = NULL;
  o->guard = NULL;
  tn_status_t st = tn_strdup(path, &o->path, err);
  if (st == TN_OK) st = tn_out_plan(path, &o->target, &o->tmp, err);
  if (st == TN_OK && o->tmp) st = tn_out_clean_stale(o->target, NULL, NULL, err);
  if (st == TN_OK && o->tmp) st = tn_calloc(1, sizeof *o->guard, &o->guard, err);
  if (st != TN_OK) goto fail;
  if (o->guard) {
    o->guard->tmps[0] = o->tmp;
    o->guard->c = (tn_cleanup_t){.n = 1, .tmps = o->guard->tmps};
    o->guard->slot = tn_cleanup_register(&o->guard->c);
  }
  /* A temporary is created where a signal handler waits for it. */
  if (o->tmp && !tn_cleanup_begin()) {
    st = tn_err_set(err, TN_IO, "%s: not written: the process is ending on a signal", path);
    goto fail;
  }
  o->f = fopen(o->tmp ? o->tmp : o->target, "wb");
  if (o->tmp) tn_cleanup_end();
  if (o->f == NULL) {
    st = tn_err_set(err, TN_IO, "%s: cannot write: %s", path, strerror(errno));
    goto fail;
  }
  return TN_OK;
fail:
  outfile_release(o);
  return st;
}

tn_status_t tn_outfile_commit(tn_outfile_t *o, tn_err_t *err) {
  tn_status_t st = TN_OK;
  /* fflush first: its errno is the reason for data still buffered (ENOSPC). */
  errno = 0;
  int bad = fflush(o->f) != 0 || ferror(o->f);
  int saved = errno;
  if (fclose(o->f) != 0 && !bad) {
    bad = 1;
    saved = errno;
  }
  if (bad) {
    st = tn_err_set(err, TN_IO, "%s: write failed: %s", o->path,
                    saved ? strerror(saved) : "i/o error");
    if (o->tmp) remove(o->tmp);
  } else if (o->tmp) {
    st = tn_rename_into_place(o->tmp, o->target, err);
  }
  outfile_release(o);
  return st;
}

void tn_outfile_abort(tn_outfile_t *o) {
  if (o == NULL || o->path == NULL) return;
  if (o->f) fclose(o->f);
  if (o->tmp) remove(o->tmp);
  outfile_release(o);
}

/* What a file of mode m is, for the refusal of an input that is not a regular file. */
static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

static tn_status_t refuse_kind(const char *path, mode_t m, tn_err_t *err) {
  return tn_err_set(err, TN_INVAL, "%s: %s, not a regular file", path, file_kind(m));
}

tn_status_t tn_input_check(const char *path, tn_err_t *err) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return tn_err_set(err, TN_IO, "%s: cannot open: %s", path, strerror(errno));
  return S_ISREG(sb.st_mode) ? TN_OK : refuse_kind(path, sb.st_mode, err);
}

tn_status_t tn_input_open_fd(const char *path, int *fd, size_t *size, tn_err_t *err) {
  *fd = -1;
  *size = 0;
  /* O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever. The
   * descriptor's own fstat then decides (no race with a stat of the name); on the regular
   * file that remains the flag changes nothing (reads of a regular file do not block). */
  int d = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (d < 0) return tn_err_set(err, TN_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  tn_status_t st = TN_OK;
  if (fstat(d, &sb) != 0)
    st = tn_err_set(err, TN_IO, "%s: cannot open: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    st = refuse_kind(path, sb.st_mode, err);
  if (st != TN_OK) {
    close(d);
    return st;
  }
  *fd = d;
  *size = sb.st_size > 0 ? (size_t)sb.st_size : 0;
  return TN_OK;
}

tn_status_t tn_input_open(const char *path, FILE **out, tn_err_t *err) {
  *out = NULL;
  int fd;
  size_t size;
  tn_status_t st = tn_input_open_fd(path, &fd, &size, err);
  if (st != TN_OK) return st;
  int flags = fcntl(fd, F_GETFL); /* stdio's reads as on any file opened for reading */
  FILE *f = flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
  if (f == NULL) {
    st = tn_err_set(err, TN_IO, "%s: cannot open: %s", path, strerror(errno));
    close(fd);
    return st;
  }
  *out = f;
  return TN_OK;
}

tn_status_t tn_read_file(const char *path, size_t max, char **data, size_t *len, tn_err_t *err) {
  *data = NULL;
  *len = 0;
  FILE *f = NULL;
  tn_status_t st = tn_input_open(path, &f, err);
  if (st != TN_OK) return st;
  tn_vec_t v;
  tn_vec_init(&v, 1);
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
  /* Refused before any folder is made: "out/" would otherwise create out first. */
  tn_status_t st = refuse_directory(path, err);
  if (st == TN_OK) st = tn_strdup(path, &p, err);
  if (st != TN_OK) return st;
  char *slash = strrchr(p, '/');
  if (slash == NULL || slash == p) {
    free(p);
    return TN_OK;
  }
  *slash = '\0';
  for (char *q = p + 1;; q++) {
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

void tn_rng_seed(tn_rng_t *r, uint64_t seed) {
  r->state = seed ^ 0x9e3779b97f4a7c15ull;
}

uint64_t tn_rng_next(tn_rng_t *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tn_rng_below(tn_rng_t *r, uint64_t n) {
  return tn_rng_next(r) % n;
}

double tn_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
