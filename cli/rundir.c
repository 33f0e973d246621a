/* cli/rundir.c — directories ASTRA-sim runs as they are (`tenet astra`, `tenet workload`):
 * DIR is built under DIR.tmp.<pid> with SIGINT, SIGTERM and SIGHUP held and renamed into
 * place, so that it appears whole or not at all; and the files every such directory holds
 * (system.json, remote_memory.json, network.yml, text files). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

tn_status_t cli_path_join(const char *a, const char *b, char **out, tn_err_t *err) {
  size_t n = strlen(a) + strlen(b) + 2;
  tn_status_t st = tn_calloc(n, 1, out, err);
  if (st == TN_OK) snprintf(*out, n, "%s/%s", a, b);
  return st;
}

tn_status_t cli_put_text(const char *dir, const char *name, const char *text, bool exec,
                         tn_err_t *err) {
  char *path = NULL;
  tn_status_t st = cli_path_join(dir, name, &path, err);
  if (st != TN_OK) return st;
  tn_outfile_t o = {0};
  if ((st = tn_outfile_open(&o, path, err)) == TN_OK) {
    size_t len = strlen(text);
    if (fwrite(text, 1, len, o.f) != len) {
      tn_outfile_abort(&o);
      st = tn_err_set(err, TN_IO, "%s: write failed", path);
    } else {
      st = tn_outfile_commit(&o, err);
    }
  }
  if (st == TN_OK && exec && chmod(path, 0755) != 0)
    st = tn_err_set(err, TN_IO, "%s: cannot make it executable: %s", path, strerror(errno));
  free(path);
  return st;
}

void cli_rundir_free(cli_rundir_t *d) {
  free(d->dir);
  free(d->final);
  free(d->tmp);
  memset(d, 0, sizeof *d);
}

/* Whether folder path holds a file named name. */
static bool holds(const char *path, const char *name) {
  char *p = NULL;
  tn_err_t e = {0};
  if (cli_path_join(path, name, &p, &e) != TN_OK) return false;
  struct stat sb;
  bool yes = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
  free(p);
  return yes;
}

tn_status_t cli_rundir_plan(cli_rundir_t *d, const char *dir, const char *cmd, const char *marker,
                            tn_err_t *err) {
  tn_status_t st = tn_strdup(dir, &d->dir, err);
  if (st != TN_OK) return st;
  size_t n = strlen(d->dir);
  while (n > 1 && d->dir[n - 1] == '/')
    d->dir[--n] = '\0';
  if (strcmp(d->dir, "/") == 0 || strcmp(d->dir, ".") == 0 || strcmp(d->dir, "..") == 0)
    return tn_err_set(err, TN_INVAL, "-o %s: name a new directory to write", dir);
  struct stat sb;
  if (stat(d->dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode))
      return tn_err_set(err, TN_INVAL, "-o %s: exists and is not a directory", d->dir);
    DIR *dd = opendir(d->dir);
    struct dirent *e;
    bool empty = dd != NULL;
    while (dd && (e = readdir(dd)) != NULL)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = false;
    if (dd) closedir(dd);
    d->replace = !empty && marker && holds(d->dir, marker);
    if (!empty && !d->replace)
      return tn_err_set(err, TN_INVAL,
                        "-o %s: the directory is not empty (tenet %s writes a new one whole%s%s)",
                        d->dir, cmd, marker ? ", or replaces one it wrote, which holds " : "",
                        marker ? marker : "");
  }
  size_t tn = strlen(d->dir) + 32;
  if ((st = tn_calloc(tn, 1, &d->tmp, err)) != TN_OK) return st;
  snprintf(d->tmp, tn, "%s.tmp.%ld", d->dir, (long)getpid());
  return TN_OK;
}

/* Just before writing (nothing is created for a run that fails earlier): DIR's parent
 * folders, DIR's absolute path, and the folders earlier runs killed mid-write left. */
static tn_status_t place(cli_rundir_t *d, tn_err_t *err) {
  struct stat sb;
  tn_status_t st = stat(d->dir, &sb) == 0 ? TN_OK : tn_mkdir_parents(d->dir, err);
  if (st == TN_OK) st = tn_out_clean_stale_dirs(d->dir, NULL, err);
  if (st != TN_OK) return st;
  char *slash = strrchr(d->dir, '/');
  const char *base = slash ? slash + 1 : d->dir;
  char parent[PATH_MAX];
  if (slash == d->dir) {
    strcpy(parent, "/");
  } else {
    char *p = NULL;
    if ((st = tn_strdup(d->dir, &p, err)) != TN_OK) return st;
    if (slash) p[slash - d->dir] = '\0';
    char *r = realpath(slash ? p : ".", parent);
    free(p);
    if (!r)
      return tn_err_set(err, TN_IO, "-o %s: cannot resolve its directory: %s", d->dir,
                        strerror(errno));
  }
  size_t fn = strlen(parent) + strlen(base) + 2;
  if ((st = tn_calloc(fn, 1, &d->final, err)) != TN_OK) return st;
  snprintf(d->final, fn, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", base);
  return TN_OK;
}

/* Moves d->tmp to d->dir; a directory an earlier run wrote is moved aside first and
 * removed once the new one is in place (put back when the move fails). */
static tn_status_t move_in(const cli_rundir_t *d, tn_err_t *err) {
  char *old = NULL;
  tn_status_t st = TN_OK;
  struct stat sb;
  if (d->replace && stat(d->dir, &sb) == 0) {
    size_t n = strlen(d->dir) + 32;
    if ((st = tn_calloc(n, 1, &old, err)) != TN_OK) return st;
    snprintf(old, n, "%s.old.%ld", d->dir, (long)getpid());
    if (rename(d->dir, old) != 0) {
      st = tn_err_set(err, TN_IO, "%s: cannot move the earlier directory aside: %s", d->dir,
                      strerror(errno));
      free(old);
      return st;
    }
  }
  if (rename(d->tmp, d->dir) != 0) {
    st = tn_err_set(err, TN_IO, "%s: cannot move the new directory into place: %s", d->dir,
                    strerror(errno));
    if (old) (void)rename(old, d->dir);
  } else if (old) {
    tn_remove_tree(old);
  }
  free(old);
  return st;
}

tn_status_t cli_rundir_write(cli_rundir_t *d, cli_rundir_fill_fn fill, void *ctx, tn_err_t *err) {
  tn_status_t st = place(d, err);
  if (st != TN_OK) return st;
  sigset_t hold, old;
  sigemptyset(&hold);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGHUP);
  sigprocmask(SIG_BLOCK, &hold, &old);
  if (mkdir(d->tmp, 0755) != 0)
    st = tn_err_set(err, TN_IO, "%s: cannot create: %s", d->tmp, strerror(errno));
  if (st == TN_OK) st = fill(ctx, d, err);
  if (st == TN_OK) st = move_in(d, err);
  if (st != TN_OK) tn_remove_tree(d->tmp);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return st;
}

const char *cli_astra_custom_key(tn_coll_t coll) {
  switch (coll) {
  case TN_ALLGATHER: return "all-gather-implementation-custom";
  case TN_REDUCESCATTER: return "reduce-scatter-implementation-custom";
  case TN_ALLREDUCE: return "all-reduce-implementation-custom";
  case TN_ALLTOALL: return "all-to-all-implementation-custom";
  }
  return "all-reduce-implementation-custom";
}

tn_status_t cli_astra_system_json(const cli_astra_system_t *s, char **out, tn_err_t *err) {
  static const char *const native_keys[] = {
      "all-reduce-implementation", "reduce-scatter-implementation", "all-gather-implementation",
      "all-to-all-implementation"};
  bool ok = true;
  cJSON *o = cJSON_CreateObject();
  if (o) {
    cJSON_AddStringToObject(o, "scheduling-policy", "FIFO");
    cJSON_AddNumberToObject(o, "endpoint-delay", 10);
    cJSON_AddNumberToObject(o, "active-chunks-per-dimension", 1);
    cJSON_AddNumberToObject(o, "preferred-dataset-splits", 1);
    for (uint32_t k = 0; k < 4 && s->native_dims > 0; k++) {
      cJSON *impl = cJSON_AddArrayToObject(o, native_keys[k]);
      for (uint32_t d = 0; impl && d < s->native_dims; d++)
        ok = ok && cJSON_AddItemToArray(impl, cJSON_CreateString(k == 3 ? "direct" : "ring"));
      ok = ok && impl;
    }
    if (s->custom_set) {
      cJSON *impl = cJSON_AddArrayToObject(o, cli_astra_custom_key(s->custom_coll));
      ok = ok && impl && cJSON_AddItemToArray(impl, cJSON_CreateString(s->custom_set));
    }
    if (s->per_node)
      ok = ok && cJSON_AddStringToObject(o, "per-node-custom-implementation", s->per_node);
    cJSON_AddStringToObject(o, "collective-optimization", "localBWAware");
    cJSON_AddNumberToObject(o, "local-mem-bw", 1600);
    cJSON_AddNumberToObject(o, "boost-mode", 0);
  }
  char *text = o && ok ? cli_json_text(o, true) : NULL;
  size_t n = text ? strlen(text) : 0;
  *out = text ? realloc(text, n + 2) : NULL;
  if (*out)
    memcpy(*out + n, "\n", 2);
  else
    free(text);
  cJSON_Delete(o);
  return *out ? TN_OK : tn_err_set(err, TN_NOMEM, "out of memory writing system.json");
}

tn_status_t cli_astra_common_files(const char *dir, const topo_t *t, bool aware, tn_err_t *err) {
  tn_sb_t net;
  tn_sb_init(&net, err);
  tn_status_t st = cli_put_text(dir, "remote_memory.json",
                                "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n", false, err);
  if (st == TN_OK) st = topo_astra_yaml(t, aware, &net, err);
  if (st == TN_OK) st = cli_put_text(dir, "network.yml", net.v.data, false, err);
  tn_vec_free(&net.v);
  return st;
}

tn_status_t cli_astra_run_sh(const cli_astra_run_t *r, tn_sb_t *b) {
  const char *bin =
      r->aware ? "AstraSim_Analytical_Congestion_Aware" : "AstraSim_Analytical_Congestion_Unaware";
  tn_sb_printf(b,
               "#!/bin/sh\n"
               "# Runs this directory in ASTRA-sim (written by %s).\n"
               "# ASTRA_SIM may name the simulator; else %s is looked up on PATH.\n"
               "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
               "bin=${ASTRA_SIM:-$(command -v %s || true)}\n"
               "if [ -z \"$bin\" ] || [ ! -x \"$bin\" ]; then\n"
               "  echo \"run.sh: no ASTRA-sim: set ASTRA_SIM to the %s binary or put it on "
               "PATH\" >&2\n"
               "  exit 2\n"
               "fi\n"
               "bin=$(cd \"$(dirname \"$bin\")\" && pwd)/$(basename \"$bin\")\n"
               "# Run from this directory: ASTRA-sim writes its log/ where it runs.\n"
               "out=$(cd \"$here\" && \"$bin\" --workload-configuration=\"$here/workload/%s\" \\\n"
               "  --system-configuration=\"$here/system.json\" \\\n"
               "  --remote-memory-configuration=\"$here/remote_memory.json\" \\\n"
               "  %s--network-configuration=\"$here/network.yml\" 2>&1)\n"
               "rc=$?\n"
               "printf '%%s\\n' \"$out\"\n"
               "[ $rc = 0 ] || { echo \"run.sh: ASTRA-sim exited with $rc\" >&2; exit 1; }\n"
               "ns=$(printf '%%s\\n' \"$out\" | sed -n 's/.*sys\\[[0-9]*\\] finished, "
               "\\([0-9][0-9]*\\) cycles.*/\\1/p' | sort -n | tail -n 1)\n"
               "[ -n \"$ns\" ] || { echo \"run.sh: no 'sys[i] finished, N cycles' line in "
               "ASTRA-sim's output\" >&2; exit 1; }\n"
               "echo \"ASTRA-sim: %s$ns ns; tenet predicted %s ns\"\n",
               r->what, bin, bin, bin, r->workload,
               r->comm_group ? "--comm-group-configuration=\"$here/comm_group.json\" \\\n  " : "",
               r->label, r->predicted);
  return b->st;
}
