/* cli/cmd_astra.c — `tenet astra`: synthesize a collective (or take a Chakra set) and write
 * a directory that ASTRA-sim's analytical backend runs as it is: the set, a workload of one
 * COMM_COLL_NODE per rank, the system JSON naming the set as the custom implementation,
 * the remote-memory JSON, the network YAML, and run.sh, which finds the simulator, runs it
 * and sets its time next to tenet's prediction. The directory appears whole or not at all:
 * it is built under a temporary name and renamed into place. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet astra -t TOPO -c COLL -s SIZE [-a ALGO | --set PREFIX] -o DIR\n"
    "                   [--backend aware|unaware] [--seed N] [--chunks K]\n"
    "\n"
    "Writes DIR, a directory ASTRA-sim's analytical backend runs as it is:\n"
    "  set/ALGO.<rank>.et       the algorithm (synthesized with -a, default auto, or the\n"
    "                           Chakra set PREFIX.<rank>.et given with --set)\n"
    "  workload/COLL.<rank>.et  one COMM_COLL_NODE per rank (comm_type of COLL)\n"
    "  system.json              \"COLL-implementation-custom\": [the set's absolute prefix],\n"
    "                           \"preferred-dataset-splits\": 1\n"
    "  remote_memory.json       no memory expansion\n"
    "  network.yml              TOPO as Ring / FullyConnected / Switch dimensions\n"
    "  run.sh                   runs ASTRA-sim ($ASTRA_SIM, else the backend's binary on\n"
    "                           PATH), prints its output, then its collective time (the\n"
    "                           largest 'sys[i] finished, N cycles') next to tenet's\n"
    "\n"
    "TOPO must be a generated fabric of those building blocks (e.g. ring-8, fc-8,\n"
    "switch-16); the congestion-aware backend (default) runs one dimension only, the\n"
    "congestion-unaware one several (e.g. torus-4x4) but models no contention, so tenet's\n"
    "prediction holds for the aware one. Other fabrics are refused with the reason. DIR\n"
    "must not exist or be empty; it is written whole or not at all.\n"
    "\n"
    "  -t, --topo TOPO       generated fabric: KIND-DIMS (ring-8, fc-8, switch-16, ...)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE       NCCL size: bytes, or with KB MB GB / KiB MiB GiB\n"
    "  -a, --algo ALGO       as 'tenet synth' (default auto)\n"
    "      --set PREFIX      use this Chakra set instead of synthesizing\n"
    "  -o, --out DIR         the directory to write\n"
    "      --backend B       aware (default) | unaware: ASTRA-sim's congestion model\n"
    "      --seed N          tie-breaking seed of the greedy (default 1)\n"
    "      --chunks K        chunks per NPU, as 'tenet synth'\n"
    "  -h, --help            this help\n";

typedef struct astra_args {
  const char *topo, *coll, *size, *algo, *set, *out, *backend, *seed, *chunks;
  bool help;
  synth_opts_t so; /* from -a, --seed, --chunks */
} astra_args_t;

typedef struct astra_job {
  const topo_t *t;
  tn_coll_t coll;
  uint64_t size;
  bool aware;
  const algo_t *a;
  uint64_t predicted_ps;
  bool spread; /* a given set whose time depends on the order of events */
  uint64_t min_ps, max_ps;
  char *dir;   /* DIR, without trailing slashes */
  char *final; /* DIR's absolute path */
  char *tmp;   /* where it is built */
} astra_job_t;

/* The key of the system JSON that names a custom implementation of coll. */
static const char *custom_key(tn_coll_t coll) {
  switch (coll) {
  case TN_ALLGATHER: return "all-gather-implementation-custom";
  case TN_REDUCESCATTER: return "reduce-scatter-implementation-custom";
  case TN_ALLREDUCE: return "all-reduce-implementation-custom";
  case TN_ALLTOALL: return "all-to-all-implementation-custom";
  }
  return "all-reduce-implementation-custom";
}

static tn_status_t join(const char *a, const char *b, char **out, tn_err_t *err) {
  size_t n = strlen(a) + strlen(b) + 2;
  tn_status_t st = tn_calloc(n, 1, out, err);
  if (st == TN_OK) snprintf(*out, n, "%s/%s", a, b);
  return st;
}

/* Writes text to dir/name (mode 0755 when exec). */
static tn_status_t put_text(const char *dir, const char *name, const char *text, bool exec,
                            tn_err_t *err) {
  char *path = NULL;
  tn_status_t st = join(dir, name, &path, err);
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

/* DIR's absolute path: its parent resolved, then its last component. Creates the parent. */
static tn_status_t plan_dir(astra_job_t *j, const char *dir, tn_err_t *err) {
  tn_status_t st = tn_strdup(dir, &j->dir, err);
  if (st != TN_OK) return st;
  size_t n = strlen(j->dir);
  while (n > 1 && j->dir[n - 1] == '/')
    j->dir[--n] = '\0';
  if (strcmp(j->dir, "/") == 0 || strcmp(j->dir, ".") == 0 || strcmp(j->dir, "..") == 0)
    return tn_err_set(err, TN_INVAL, "-o %s: name a new directory to write", dir);
  struct stat sb;
  if (stat(j->dir, &sb) == 0) {
    if (!S_ISDIR(sb.st_mode))
      return tn_err_set(err, TN_INVAL, "-o %s: exists and is not a directory", j->dir);
    DIR *d = opendir(j->dir);
    struct dirent *e;
    bool empty = d != NULL;
    while (d && (e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = false;
    if (d) closedir(d);
    if (!empty)
      return tn_err_set(err, TN_INVAL,
                        "-o %s: the directory is not empty (tenet astra writes "
                        "a new one whole)",
                        j->dir);
  }
  size_t tn = strlen(j->dir) + 32;
  if ((st = tn_calloc(tn, 1, &j->tmp, err)) != TN_OK) return st;
  snprintf(j->tmp, tn, "%s.tmp.%ld", j->dir, (long)getpid());
  return TN_OK;
}

/* Just before writing (nothing is created for a run that fails earlier): DIR's parent
 * folders, DIR's absolute path for system.json, and the folders earlier runs killed
 * mid-write left beside it. */
static tn_status_t place_dir(astra_job_t *j, tn_err_t *err) {
  struct stat sb;
  tn_status_t st = stat(j->dir, &sb) == 0 ? TN_OK : tn_mkdir_parents(j->dir, err);
  if (st == TN_OK) st = tn_out_clean_stale_dirs(j->dir, NULL, err);
  if (st != TN_OK) return st;
  char *slash = strrchr(j->dir, '/');
  const char *base = slash ? slash + 1 : j->dir;
  char parent[PATH_MAX];
  if (slash == j->dir) {
    strcpy(parent, "/");
  } else {
    char *p = NULL;
    if ((st = tn_strdup(j->dir, &p, err)) != TN_OK) return st;
    if (slash) p[slash - j->dir] = '\0';
    char *r = realpath(slash ? p : ".", parent);
    free(p);
    if (!r)
      return tn_err_set(err, TN_IO, "-o %s: cannot resolve its directory: %s", j->dir,
                        strerror(errno));
  }
  size_t fn = strlen(parent) + strlen(base) + 2;
  if ((st = tn_calloc(fn, 1, &j->final, err)) != TN_OK) return st;
  snprintf(j->final, fn, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", base);
  return TN_OK;
}

static tn_status_t system_json(const astra_job_t *j, const char *set_abs, char **out,
                               tn_err_t *err) {
  cJSON *o = cJSON_CreateObject(), *impl = NULL;
  if (o) {
    cJSON_AddStringToObject(o, "scheduling-policy", "FIFO");
    cJSON_AddNumberToObject(o, "endpoint-delay", 10);
    cJSON_AddNumberToObject(o, "active-chunks-per-dimension", 1);
    cJSON_AddNumberToObject(o, "preferred-dataset-splits", 1);
    impl = cJSON_AddArrayToObject(o, custom_key(j->coll));
    if (impl) cJSON_AddItemToArray(impl, cJSON_CreateString(set_abs));
    cJSON_AddStringToObject(o, "collective-optimization", "localBWAware");
    cJSON_AddNumberToObject(o, "local-mem-bw", 1600);
    cJSON_AddNumberToObject(o, "boost-mode", 0);
  }
  char *text = o && impl ? cli_json_text(o, true) : NULL;
  size_t n = text ? strlen(text) : 0;
  *out = text ? realloc(text, n + 2) : NULL;
  if (*out)
    memcpy(*out + n, "\n", 2);
  else
    free(text);
  cJSON_Delete(o);
  return *out ? TN_OK : tn_err_set(err, TN_NOMEM, "out of memory writing system.json");
}

static tn_status_t run_sh(const astra_job_t *j, const char *coll_name, tn_sb_t *b) {
  const char *bin =
      j->aware ? "AstraSim_Analytical_Congestion_Aware" : "AstraSim_Analytical_Congestion_Unaware";
  char pred[64];
  if (j->spread)
    snprintf(pred, sizeof pred, "%.3f-%.3f", (double)j->min_ps / 1e3, (double)j->max_ps / 1e3);
  else
    snprintf(pred, sizeof pred, "%.3f", (double)j->predicted_ps / 1e3);
  tn_sb_printf(
      b,
      "#!/bin/sh\n"
      "# Runs this directory in ASTRA-sim (written by tenet astra: %s %s of %llu B on %s).\n"
      "# ASTRA_SIM may name the simulator; else %s is looked up on PATH.\n"
      "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
      "bin=${ASTRA_SIM:-$(command -v %s || true)}\n"
      "if [ -z \"$bin\" ] || [ ! -x \"$bin\" ]; then\n"
      "  echo \"run.sh: no ASTRA-sim: set ASTRA_SIM to the %s binary or put it on "
      "PATH\" >&2\n"
      "  exit 2\n"
      "fi\n"
      "out=$(\"$bin\" --workload-configuration=\"$here/workload/%s\" \\\n"
      "  --system-configuration=\"$here/system.json\" \\\n"
      "  --remote-memory-configuration=\"$here/remote_memory.json\" \\\n"
      "  --network-configuration=\"$here/network.yml\" 2>&1)\n"
      "rc=$?\n"
      "printf '%%s\\n' \"$out\"\n"
      "[ $rc = 0 ] || { echo \"run.sh: ASTRA-sim exited with $rc\" >&2; exit 1; }\n"
      "ns=$(printf '%%s\\n' \"$out\" | sed -n 's/.*sys\\[[0-9]*\\] finished, "
      "\\([0-9][0-9]*\\) cycles.*/\\1/p' | sort -n | tail -n 1)\n"
      "[ -n \"$ns\" ] || { echo \"run.sh: no 'sys[i] finished, N cycles' line in "
      "ASTRA-sim's output\" >&2; exit 1; }\n"
      "echo \"ASTRA-sim: $ns ns; tenet predicted %s ns\"\n",
      j->a->name, coll_name, (unsigned long long)j->size, j->t->name, bin, bin, bin, coll_name,
      pred);
  return b->st;
}

/* Writes every file into j->tmp. */
static tn_status_t write_dir(const astra_job_t *j, tn_err_t *err) {
  const char *cn = tn_coll_name(j->coll);
  char *set_tmp = NULL, *set_abs = NULL, *wl = NULL, *sys = NULL, rel[96];
  tn_sb_t net, sh;
  tn_sb_init(&net, err);
  tn_sb_init(&sh, err);
  if (mkdir(j->tmp, 0755) != 0)
    return tn_err_set(err, TN_IO, "%s: cannot create: %s", j->tmp, strerror(errno));
  snprintf(rel, sizeof rel, "set/%s", j->a->name);
  tn_status_t st = join(j->tmp, rel, &set_tmp, err);
  if (st == TN_OK) st = join(j->final, rel, &set_abs, err);
  if (st == TN_OK) st = emit_chakra_write(j->a, set_tmp, err);
  snprintf(rel, sizeof rel, "workload/%s", cn);
  if (st == TN_OK) st = join(j->tmp, rel, &wl, err);
  if (st == TN_OK) st = tn_mkdir_parents(wl, err);
  if (st == TN_OK) st = emit_chakra_write_workload(wl, j->t->npus, j->coll, j->size, err);
  if (st == TN_OK) st = system_json(j, set_abs, &sys, err);
  if (st == TN_OK) st = put_text(j->tmp, "system.json", sys, false, err);
  if (st == TN_OK)
    st = put_text(j->tmp, "remote_memory.json",
                  "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n", false, err);
  if (st == TN_OK) st = topo_astra_yaml(j->t, j->aware, &net, err);
  if (st == TN_OK) st = put_text(j->tmp, "network.yml", net.v.data, false, err);
  if (st == TN_OK) st = run_sh(j, cn, &sh);
  if (st == TN_OK) st = put_text(j->tmp, "run.sh", sh.v.data, true, err);
  free(set_tmp);
  free(set_abs);
  free(wl);
  free(sys);
  tn_vec_free(&net.v);
  tn_vec_free(&sh.v);
  return st;
}

/* Writes the directory whole: built under j->tmp with SIGINT, SIGTERM and SIGHUP held, so
 * an interrupt takes effect only once it is complete or removed. */
static tn_status_t write_whole(astra_job_t *j, tn_err_t *err) {
  tn_status_t st = place_dir(j, err);
  if (st != TN_OK) return st;
  sigset_t hold, old;
  sigemptyset(&hold);
  sigaddset(&hold, SIGINT);
  sigaddset(&hold, SIGTERM);
  sigaddset(&hold, SIGHUP);
  sigprocmask(SIG_BLOCK, &hold, &old);
  st = write_dir(j, err);
  if (st == TN_OK && rename(j->tmp, j->dir) != 0)
    st = tn_err_set(err, TN_IO, "%s: cannot move the new directory into place: %s", j->dir,
                    strerror(errno));
  if (st != TN_OK) tn_remove_tree(j->tmp);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return st;
}

static tn_status_t parse_args(int argc, char **argv, astra_args_t *a, tn_err_t *err) {
  const cli_opt_t opts[] = {
      {"topo", 't', &a->topo, NULL}, {"coll", 'c', &a->coll, NULL},
      {"size", 's', &a->size, NULL}, {"algo", 'a', &a->algo, NULL},
      {"set", 0, &a->set, NULL},     {"out", 'o', &a->out, NULL},
      {"output", 0, &a->out, NULL},  {"backend", 0, &a->backend, NULL},
      {"seed", 0, &a->seed, NULL},   {"chunks", 0, &a->chunks, NULL},
      {"help", 'h', NULL, &a->help},
  };
  size_t npos = 0;
  tn_status_t st = cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], NULL, 0, &npos, err);
  if (st != TN_OK || a->help) return st;
  if (!a->topo || !a->coll || !a->size || !a->out)
    return tn_err_set(err, TN_INVAL,
                      "-t TOPO, -c COLL, -s SIZE and -o DIR are required (see 'tenet astra "
                      "--help')");
  if (a->set && (a->algo || a->seed || a->chunks))
    return tn_err_set(err, TN_INVAL,
                      "--set takes a made set: -a, --seed and --chunks do not "
                      "apply");
  if (a->backend && strcmp(a->backend, "aware") != 0 && strcmp(a->backend, "unaware") != 0)
    return tn_err_set(err, TN_INVAL, "--backend '%s': expected aware or unaware", a->backend);
  return cli_synth_opts(a->algo, a->seed, a->chunks, &a->so, err);
}

/* The algorithm: synthesized, or read from --set (checked, and timed under several orders
 * of same-instant events, since a set made elsewhere may leave that order open). */
static tn_status_t get_algo(const astra_args_t *a, astra_job_t *j, algo_t **own, tn_err_t *err) {
  tn_status_t st;
  if (a->set) {
    if ((st = cli_read_set(a->set, j->t, own, err)) != TN_OK) return st;
    if ((*own)->has_coll && ((*own)->coll != j->coll || (*own)->size_bytes != j->size)) {
      char got[32], want[32];
      return tn_err_set(err, TN_INVAL, "%s: the files hold %s of %s, not %s of %s", a->set,
                        tn_coll_name((*own)->coll),
                        tn_fmt_size((*own)->size_bytes, got, sizeof got), tn_coll_name(j->coll),
                        tn_fmt_size(j->size, want, sizeof want));
    }
    algo_verify_report_t rep;
    if ((st = algo_verify(*own, j->t, &rep, err)) != TN_OK) return st;
    sim_spread_t sp;
    if ((st = sim_order_spread(j->t, *own, 4, &sp, err)) != TN_OK) return st;
    j->a = *own;
    j->predicted_ps = sp.id_ps;
    j->spread = sp.min_ps != sp.max_ps;
    j->min_ps = sp.min_ps;
    j->max_ps = sp.max_ps;
    return TN_OK;
  }
  synth_result_t r;
  if ((st = synth_run(j->t, j->coll, j->size, &a->so, &r, err)) != TN_OK) return st;
  *own = r.algo;
  j->a = r.algo;
  sim_result_t sr = {0};
  st = sim_run(j->t, r.algo, NULL, &sr, err);
  j->predicted_ps = sr.time_ps;
  sim_result_free(&sr);
  return st;
}

tn_status_t cli_astra_write(const topo_t *t, tn_coll_t coll, uint64_t size, const char *dir,
                            uint64_t *predicted_ps, tn_err_t *err) {
  astra_job_t j = {.t = t, .coll = coll, .size = size, .aware = true};
  astra_args_t a = {0};
  algo_t *own = NULL;
  tn_sb_t probe;
  tn_sb_init(&probe, err);
  tn_status_t st = cli_synth_opts(NULL, NULL, NULL, &a.so, err);
  if (st == TN_OK) st = topo_astra_yaml(t, true, &probe, err);
  if (st == TN_OK) st = plan_dir(&j, dir, err);
  if (st == TN_OK) st = get_algo(&a, &j, &own, err);
  if (st == TN_OK) st = write_whole(&j, err);
  *predicted_ps = j.predicted_ps;
  tn_vec_free(&probe.v);
  algo_free(own);
  free(j.dir);
  free(j.final);
  free(j.tmp);
  return st;
}

int cmd_astra(int argc, char **argv) {
  astra_args_t a = {0};
  tn_err_t err = {0};
  astra_job_t j = {0};
  topo_t *t = NULL;
  algo_t *own = NULL;
  int code = 0;
  if (parse_args(argc, argv, &a, &err) != TN_OK) return cli_report("astra", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  j.aware = !a.backend || strcmp(a.backend, "aware") == 0;
  tn_sb_t probe;
  tn_sb_init(&probe, &err);
  if (tn_coll_parse(a.coll, &j.coll, &err) != TN_OK ||
      tn_parse_size(a.size, &j.size, &err) != TN_OK || cli_load_topo(a.topo, &t, &err) != TN_OK)
    goto fail;
  j.t = t;
  /* The fabric's form is checked before any synthesis: a refusal costs nothing. */
  if (topo_astra_yaml(t, j.aware, &probe, &err) != TN_OK || plan_dir(&j, a.out, &err) != TN_OK ||
      get_algo(&a, &j, &own, &err) != TN_OK || write_whole(&j, &err) != TN_OK)
    goto fail;
  printf("wrote %s: %s %s of %llu B on %s (%u NPUs) for ASTRA-sim's congestion-%s backend\n", j.dir,
         j.a->name, tn_coll_name(j.coll), (unsigned long long)j.size, t->name, t->npus,
         j.aware ? "aware" : "unaware");
  if (j.spread)
    printf("tenet predicts %.3f-%.3f ns (the set leaves the order of same-instant events open)\n",
           (double)j.min_ps / 1e3, (double)j.max_ps / 1e3);
  else
    printf("tenet predicts %.3f ns; run %s/run.sh (ASTRA_SIM=path/to/AstraSim_Analytical_"
           "Congestion_%s)\n",
           (double)j.predicted_ps / 1e3, j.dir, j.aware ? "Aware" : "Unaware");
  goto done;
fail:
  code = cli_report("astra", &err);
done:
  tn_vec_free(&probe.v);
  algo_free(own);
  topo_free(t);
  free(j.dir);
  free(j.final);
  free(j.tmp);
  return code;
}
