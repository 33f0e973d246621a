/* bench/bench_astra.c — `tenet sim` against ASTRA-sim on the same Chakra files, both timed
 * as whole processes (issue 15: tenet sim >= 50x faster, wall and CPU). For each case a
 * directory written by `tenet astra` (the set, ASTRA-sim's workload, system, memory and
 * network files) is timed twice: `tenet sim -t TOPO SET_PREFIX` (stdout to /dev/null), and,
 * when $ASTRA_SIM names ASTRA-sim's congestion-aware binary, that binary on the directory's
 * files, exactly as the directory's run.sh runs it. Each figure is the minimum over the
 * repetitions (the machine may be shared: the minimum is the run least disturbed by
 * others); CPU is the child's user + system time. Without $ASTRA_SIM the ratios are skipped.
 *
 * Usage: bench_astra [--reps N] [--astra-reps M] [--only SUBSTR] [--keep] [DIR ...]
 *   DIR ...       directories written by `tenet astra`; without any, the cases
 *                 ring-128 and switch-64 x {allgather, reducescatter, allreduce, alltoall}
 *                 x {ring, direct, greedy}, 1 MiB, are written to a temporary directory
 *                 (removed at the end unless --keep) with the tenet next to this program
 *                 ($TENET overrides)
 *   --reps N      runs of tenet sim per case (default 5)
 *   --astra-reps M  runs of ASTRA-sim per case (default 1: it takes seconds to a minute)
 *   --only SUBSTR cases whose name contains SUBSTR
 *
 * After each row a second line says where tenet sim's CPU time goes, measured inside this
 * process with the library calls cmd_sim makes (minimum of N): loading the fabric,
 * reading the set (protobuf decoding, set-id checks; several threads), sim_run with the
 * tie observer cmd_sim attaches (validation, routes and the run), and the lower bound;
 * the first line gives the cost of starting a tenet process at all (`tenet --help`: the
 * dynamic loader and its shared libraries). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_proc.h"
#include "cli/cli.h"
#include "emit/emit.h"
#include "sim/sim.h"
#include "topo/topo.h"

#define PATH_LEN 4096

typedef struct timing {
  double wall, cpu; /* seconds: minimum over the runs */
  bool ok;
} timing_t;

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void count_tie(void *ctx, const sim_tie_t *tie) {
  (void)tie;
  ++*(uint64_t *)ctx;
}

/* tenet sim's phases in this process (CPU ms, minimum of reps): fabric, read, sim_run
 * with cmd_sim's tie observer, lower bound. False when one fails. */
static bool phases(const char *topo, const char *prefix, int reps, double ms[4]) {
  for (int k = 0; k < 4; k++)
    ms[k] = 1e30;
  bool ok = true;
  for (int i = 0; i < reps && ok; i++) {
    tn_err_t err = {0};
    topo_t *t = NULL;
    algo_t *a = NULL;
    sim_result_t r = {0};
    uint64_t ties = 0, lb = 0;
    sim_opts_t so = {.on_tie = count_tie, .tie_ctx = &ties, .threads = tn_thread_count()};
    double c[5];
    c[0] = cpu_now();
    ok = cli_load_topo(topo, &t, &err) == TN_OK;
    c[1] = cpu_now();
    ok = ok && emit_chakra_read(prefix, 0, &a, &err) == TN_OK;
    c[2] = cpu_now();
    ok = ok && sim_run(t, a, &so, &r, &err) == TN_OK;
    c[3] = cpu_now();
    ok = ok && (!a->has_coll || a->size_bytes == 0 ||
                topo_lower_bound_ps(t, a->coll, a->size_bytes, &lb, &err) == TN_OK);
    c[4] = cpu_now();
    for (int k = 0; k < 4 && ok; k++)
      if ((c[k + 1] - c[k]) * 1e3 < ms[k]) ms[k] = (c[k + 1] - c[k]) * 1e3;
    if (!ok) fprintf(stderr, "bench_astra: %s on %s: %s\n", prefix, topo, err.msg);
    sim_result_free(&r);
    algo_free(a);
    topo_free(t);
  }
  return ok;
}

static timing_t time_runs(const char *const argv[], int reps) {
  timing_t t = {1e30, 1e30, true};
  for (int i = 0; i < reps; i++) {
    double w = 0, c = 0;
    if (run_child(argv, NULL, &w, &c) != 0) {
      t.ok = false;
      return t;
    }
    if (w < t.wall) t.wall = w;
    if (c < t.cpu) t.cpu = c;
  }
  return t;
}

/* Reads the whole (small) file at path into buf; false when it cannot. */
static bool slurp(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = '\0';
  return true;
}

/* What a `tenet astra` directory holds: the fabric (network.yml's first line, "# TOPO,
 * written by tenet ..."), the set prefix (system.json's "...-implementation-custom":
 * ["PREFIX"]) and the workload's name (workload/NAME.0.et). */
typedef struct astra_dir {
  char topo[256], prefix[PATH_LEN], workload[PATH_LEN];
} astra_dir_t;

static bool read_dir(const char *dir, astra_dir_t *d) {
  char path[PATH_LEN], buf[8192];
  snprintf(path, sizeof path, "%s/network.yml", dir);
  if (!slurp(path, buf, sizeof buf) || strncmp(buf, "# ", 2) != 0) return false;
  size_t n = strcspn(buf + 2, ", \n");
  if (n == 0 || n >= sizeof d->topo) return false;
  memcpy(d->topo, buf + 2, n);
  d->topo[n] = '\0';
  snprintf(path, sizeof path, "%s/system.json", dir);
  if (!slurp(path, buf, sizeof buf)) return false;
  const char *k = strstr(buf, "-implementation-custom\"");
  const char *q = k ? strchr(k + 23, '"') : NULL;
  const char *e = q ? strchr(q + 1, '"') : NULL;
  if (!e || (size_t)(e - q - 1) >= sizeof d->prefix) return false;
  memcpy(d->prefix, q + 1, (size_t)(e - q - 1));
  d->prefix[e - q - 1] = '\0';
  snprintf(path, sizeof path, "%s/workload", dir);
  DIR *w = opendir(path);
  if (!w) return false;
  struct dirent *de;
  bool found = false;
  while (!found && (de = readdir(w)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len > 5 && strcmp(de->d_name + len - 5, ".0.et") == 0) {
      snprintf(d->workload, sizeof d->workload, "%s/%.*s", path, (int)(len - 5), de->d_name);
      found = true;
    }
  }
  closedir(w);
  return found;
}

static void print_ratio(double astra, double tenet) {
  printf(" %7.1fx", tenet > 0 ? astra / tenet : 0.0);
}

/* Times one directory; returns false when a run failed. *worst_* collect the smallest
 * ratios seen. */
static bool bench_dir(const char *name, const char *dir, const char *tenet, const char *astra,
                      int reps, int astra_reps, double *worst_wall, double *worst_cpu) {
  astra_dir_t d;
  if (!read_dir(dir, &d)) {
    fprintf(stderr, "bench_astra: %s: not a directory written by tenet astra\n", dir);
    return false;
  }
  const char *sim_argv[] = {tenet, "sim", "-t", d.topo, d.prefix, NULL};
  timing_t ts = time_runs(sim_argv, reps);
  if (!ts.ok) {
    fprintf(stderr, "bench_astra: %s: tenet sim -t %s %s failed\n", name, d.topo, d.prefix);
    return false;
  }
  printf("%-34s %9.1f %9.1f", name, ts.wall * 1e3, ts.cpu * 1e3);
  if (astra) {
    char wl[PATH_LEN + 32], sys[PATH_LEN + 32], mem[PATH_LEN + 40], net[PATH_LEN + 32];
    snprintf(wl, sizeof wl, "--workload-configuration=%s", d.workload);
    snprintf(sys, sizeof sys, "--system-configuration=%s/system.json", dir);
    snprintf(mem, sizeof mem, "--remote-memory-configuration=%s/remote_memory.json", dir);
    snprintf(net, sizeof net, "--network-configuration=%s/network.yml", dir);
    const char *astra_argv[] = {astra, wl, sys, mem, net, NULL};
    timing_t ta = time_runs(astra_argv, astra_reps);
    if (!ta.ok) {
      printf("\n");
      fprintf(stderr, "bench_astra: %s: ASTRA-sim failed on %s\n", name, dir);
      return false;
    }
    printf(" %9.1f %9.1f", ta.wall * 1e3, ta.cpu * 1e3);
    print_ratio(ta.wall, ts.wall);
    print_ratio(ta.cpu, ts.cpu);
    if (ta.wall / ts.wall < *worst_wall) *worst_wall = ta.wall / ts.wall;
    if (ta.cpu / ts.cpu < *worst_cpu) *worst_cpu = ta.cpu / ts.cpu;
  }
  printf("\n");
  double ms[4];
  if (!phases(d.topo, d.prefix, reps, ms)) return false;
  printf("%-34s   in-process CPU ms: fabric %.1f, read %.1f, sim_run %.1f, bound %.1f\n", "", ms[0],
         ms[1], ms[2], ms[3]);
  fflush(stdout);
  return true;
}

static void remove_tree(const char *path) {
  const char *argv[] = {"/bin/rm", "-rf", path, NULL};
  double w, c;
  run_child(argv, NULL, &w, &c);
}

int main(int argc, char **argv) {
  int reps = 5, astra_reps = 1;
  const char *only = NULL;
  bool keep = false;
  int first_dir = argc;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--astra-reps") == 0 && i + 1 < argc)
      astra_reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      keep = true;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_astra [--reps N] [--astra-reps M] [--only SUBSTR] [--keep] "
                      "[DIR ...]\n");
      return 2;
    } else {
      first_dir = i;
      break;
    }
  }
  if (reps < 1) reps = 1;
  if (astra_reps < 1) astra_reps = 1;
  char tenet[PATH_LEN];
  tenet_path(argv[0], tenet, sizeof tenet);
  const char *astra = getenv("ASTRA_SIM");
  if (astra && !*astra) astra = NULL;
  printf("tenet sim vs ASTRA-sim on the same Chakra files, whole processes; minimum of %d "
         "run(s) of tenet sim and %d of ASTRA-sim per case (a shared machine inflates wall "
         "times; CPU = user + system)\n",
         reps, astra_reps);
  if (!astra) printf("ASTRA_SIM is not set: ASTRA-sim's times and the ratios are skipped\n");
  const char *help_argv[] = {tenet, "--help", NULL};
  timing_t th = time_runs(help_argv, 3 * reps);
  if (th.ok)
    printf("starting a tenet process (tenet --help): %.1f ms wall, %.1f ms CPU\n", th.wall * 1e3,
           th.cpu * 1e3);
  printf("%-34s %9s %9s", "case", "tenet_ms", "tenet_cpu");
  if (astra) printf(" %9s %9s %8s %8s", "astra_ms", "astra_cpu", "wall_x", "cpu_x");
  printf("\n");
  double worst_wall = 1e30, worst_cpu = 1e30;
  bool ok = true;
  if (first_dir < argc) {
    for (int i = first_dir; i < argc; i++)
      if (!only || strstr(argv[i], only)) {
        char abs_dir[2 * PATH_LEN + 2];
        char cwd[PATH_LEN];
        if (argv[i][0] == '/' || !getcwd(cwd, sizeof cwd))
          snprintf(abs_dir, sizeof abs_dir, "%s", argv[i]);
        else
          snprintf(abs_dir, sizeof abs_dir, "%s/%s", cwd, argv[i]);
        ok = bench_dir(argv[i], abs_dir, tenet, astra, reps, astra_reps, &worst_wall, &worst_cpu) &&
             ok;
      }
  } else {
    static const char *const topos[] = {"ring-128", "switch-64"};
    static const char *const colls[] = {"allgather", "reducescatter", "allreduce", "alltoall"};
    static const char *const algos[] = {"ring", "direct", "greedy"};
    char tmp[] = "/tmp/bench_astra.XXXXXX";
    if (!mkdtemp(tmp)) {
      perror("bench_astra: mkdtemp");
      return 1;
    }
    for (size_t t = 0; t < 2; t++)
      for (size_t c = 0; c < 4; c++)
        for (size_t a = 0; a < 3; a++) {
          char name[128], dir[PATH_LEN];
          snprintf(name, sizeof name, "%s-%s-%s-1MiB", topos[t], colls[c], algos[a]);
          if (only && !strstr(name, only)) continue;
          snprintf(dir, sizeof dir, "%s/%s", tmp, name);
          const char *gen[] = {tenet,  "astra", "-t",     topos[t], "-c", colls[c], "-s",
                               "1MiB", "-a",    algos[a], "-o",     dir,  NULL};
          double w, cpu;
          int rc = run_child(gen, NULL, &w, &cpu);
          if (rc != 0) { /* e.g. Ring All-to-All, which tenet does not offer */
            printf("%-34s (tenet astra refused it)\n", name);
            continue;
          }
          ok = bench_dir(name, dir, tenet, astra, reps, astra_reps, &worst_wall, &worst_cpu) && ok;
          if (!keep) remove_tree(dir);
        }
    if (keep)
      printf("the directories are kept in %s\n", tmp);
    else
      remove_tree(tmp);
  }
  if (astra && worst_wall < 1e30)
    printf("smallest ratio: wall %.1fx, CPU %.1fx (target: 50x)\n", worst_wall, worst_cpu);
  return ok ? 0 : 1;
}
