/* common/cleanup.c — what a fatal signal must tidy up, and what an earlier, killed run left:
 * writers register the temporaries (and the backups of files they replace) before they
 * create them, and cli/'s SIGINT, SIGTERM and SIGHUP handlers call tn_cleanup_on_signal;
 * tn_out_clean_stale removes the temporaries of processes that no longer run. */
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Outputs being written at once: a command writes one or a few; a batch writes one per job
 * (at most the thread count). A writer that finds every slot taken still writes, and its
 * temporaries, if a signal strands them, are removed as stale by the next write. */
#define CLEANUP_SLOTS 256

static _Atomic(const tn_cleanup_t *) slots[CLEANUP_SLOTS];
/* Set by the signal handler before it reads the slots: from then on no registration may
 * be freed, for the handler may be reading it on another thread, and no file may be
 * created or renamed (tn_cleanup_begin refuses). */
static atomic_int dying;
/* Creations and renames under way (between tn_cleanup_begin and tn_cleanup_end) on any
 * thread: the handler waits for them to finish before it cleans up, so that no temporary
 * appears after its unlink and no rename lands after it put a backup back. */
static atomic_int busy;

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* The calling thread's signal mask before its bracket. */
static _Thread_local sigset_t saved_mask;

bool tn_cleanup_begin(void) {
  sigset_t block;
  sigemptyset(&block);
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
    sigaddset(&block, fatal_signals[i]);
  /* Blocked on this thread while it is busy: a handler running here would wait for this
   * very thread. Another thread takes the signal, or this one once it is done. */
  pthread_sigmask(SIG_BLOCK, &block, &saved_mask);
  atomic_fetch_add(&busy, 1);
  if (!atomic_load(&dying)) return true;
  tn_cleanup_end();
  return false;
}

void tn_cleanup_end(void) {
  atomic_fetch_sub(&busy, 1);
  pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}

int tn_cleanup_register(const tn_cleanup_t *c) {
  for (int i = 0; i < CLEANUP_SLOTS; i++) {
    const tn_cleanup_t *none = NULL;
    if (atomic_compare_exchange_strong(&slots[i], &none, c)) return i;
  }
  return -1;
}

void tn_cleanup_unregister(int slot) {
  if (slot < 0 || slot >= CLEANUP_SLOTS) return;
  atomic_store(&slots[slot], NULL);
  /* The handler sets dying before it loads a slot, and this store came before this load
   * (both sequentially consistent): when dying still reads 0 here, no handler holds the
   * registration and the caller may free its names. Otherwise the process is ending. */
  while (atomic_load(&dying))
    pause();
}

void tn_cleanup_on_signal(void) {
  atomic_store(&dying, 1);
  /* busy is raised before dying is read (both sequentially consistent): a thread that
   * missed dying is counted here, and one that comes later sees it and stops. */
  while (atomic_load(&busy) > 0) {
  }
  for (int i = 0; i < CLEANUP_SLOTS; i++) {
    const tn_cleanup_t *c = atomic_load(&slots[i]);
    if (c == NULL) continue;
    int saved = errno;
    for (size_t k = 0; k < c->n; k++) {
      if (c->tmps[k]) unlink(c->tmps[k]);
      /* A backup that still exists holds the file the writer was replacing: put it back. */
      if (c->backups && c->backups[k]) rename(c->backups[k], c->targets[k]);
    }
    errno = saved;
  }
}

/* The process id in a temporary's tail ".tmp.<pid>" or ".old.<pid>" (name ends there), or
 * 0 when name does not end so. */
static pid_t tail_pid(const char *name) {
  size_t n = strlen(name), d = n;
  while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
    d--;
  if (d == n || n - d > 9 || d < 5 || name[d] == '0') return 0;
  if (strncmp(name + d - 5, ".tmp.", 5) != 0 && strncmp(name + d - 5, ".old.", 5) != 0) return 0;
  return (pid_t)strtol(name + d, NULL, 10);
}

/* Whether process pid no longer runs. EPERM: it runs under another user. */
static bool pid_gone(pid_t pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Whether name (its tail already checked) is stem, or stem "." digits ranked, then the
 * tail of 5 + digits characters. */
static bool stem_matches(const char *name, const char *stem, const char *ranked) {
  size_t sl = strlen(stem);
  if (strncmp(name, stem, sl) != 0) return false;
  const char *p = name + sl;
  if (ranked) {
    if (*p++ != '.' || *p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9')
      p++;
    size_t rl = strlen(ranked);
    if (strncmp(p, ranked, rl) != 0) return false;
    p += rl;
  }
  return (p[0] == '.' && (strncmp(p, ".tmp.", 5) == 0 || strncmp(p, ".old.", 5) == 0) &&
          tail_pid(p) > 0 && strchr(p + 5, '.') == NULL);
}

void tn_remove_tree(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  if (!S_ISDIR(sb.st_mode)) {
    unlink(path);
    return;
  }
  DIR *d = opendir(path);
  const struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    size_t n = strlen(path) + strlen(e->d_name) + 2;
    char *sub = malloc(n);
    if (!sub) continue;
    snprintf(sub, n, "%s/%s", path, e->d_name);
    tn_remove_tree(sub);
    free(sub);
  }
  if (d) closedir(d);
  rmdir(path);
}

/* tn_out_clean_stale's walk; dirs: the stale names are folders (removed whole), else
 * regular files. */
static tn_status_t clean_stale(const char *path, const char *ranked, bool dirs, size_t *removed,
                               tn_err_t *err) {
  if (removed) *removed = 0;
  const char *slash = strrchr(path, '/');
  const char *stem = slash ? slash + 1 : path;
  /* The folder: "." for a bare name, "/" for a name at the root. */
  size_t dl = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
  char *dir = NULL;
  tn_status_t st = tn_calloc(dl + 2, 1, &dir, err);
  if (st != TN_OK) return st;
  if (slash)
    memcpy(dir, path, dl);
  else
    dir[0] = '.';
  DIR *d = opendir(dir);
  if (d == NULL) { /* no folder yet: nothing stale in it */
    free(dir);
    return TN_OK;
  }
  pid_t me = getpid();
  const struct dirent *e;
  while (st == TN_OK && (e = readdir(d)) != NULL) {
    if (!stem_matches(e->d_name, stem, ranked)) continue;
    pid_t pid = tail_pid(e->d_name);
    /* Our own pid: a process that ran before with the same pid (containers restart the
     * numbering); this one writes a prefix from one thread at a time. */
    if (pid != me && !pid_gone(pid)) continue;
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *p = NULL;
    if ((st = tn_calloc(n, 1, &p, err)) != TN_OK) break;
    snprintf(p, n, "%s/%s", dir, e->d_name);
    struct stat sb; /* only the kind asked for: a link of that name is no writer's */
    if (lstat(p, &sb) != 0 || !(dirs ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode))) {
      free(p);
      continue;
    }
    if (dirs) {
      tn_remove_tree(p);
      if (removed && lstat(p, &sb) != 0) (*removed)++;
    } else if (unlink(p) == 0) {
      if (removed) (*removed)++;
    } else if (errno != ENOENT) {
      st = tn_err_set(err, TN_IO, "%s: cannot remove a stale temporary: %s", p, strerror(errno));
    }
    free(p);
  }
  closedir(d);
  free(dir);
  return st;
}

tn_status_t tn_out_clean_stale(const char *path, const char *ranked, size_t *removed,
                               tn_err_t *err) {
  return clean_stale(path, ranked, false, removed, err);
}

tn_status_t tn_out_clean_stale_dirs(const char *path, size_t *removed, tn_err_t *err) {
  return clean_stale(path, NULL, true, removed, err);
}
