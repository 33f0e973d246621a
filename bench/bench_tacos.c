/* bench/bench_tacos.c — `tenet synth` against TACOS (astra-sim/tacos, the published TEN
 * greedy All-Gather synthesizer) on the same 64-NPU fabrics, both timed as whole processes
 * (issue 17: 64-NPU synth whole process <= 1.5x TACOS k=1's time on the same fabric).
 *
 * For each fabric (default mesh-8x8, torus-8x8, mesh3d-4x4x4: 50 GB/s = 50 GiB/s links,
 * 500 ns latency) and All-Gather size (default 1MiB, 64MiB, 1GiB) it times, as child
 * processes (fork/exec; CPU = user + system from the children's rusage; wall from a monotonic
 * clock), each repeated N times, minimum and median:
 *   greedy k=1  `tenet synth -t FABRIC -c allgather -s SIZE -a greedy --chunks 1 -o DIR/g`
 *               (the whole process: loading, bound, greedy, lowering, order-proofing,
 *               verification, simulation and the 64 Chakra files)
 *   greedy      the same without --chunks (the greedy picks its chunk count), information
 *   auto        `tenet synth` with its default method (auto), information
 *   tacos k=1   `$TACOS_DRIVER FABRIC SIZE` when $TACOS_DRIVER is set, and the ratio
 *               greedy k=1 / tacos k=1 of CPU and of wall (minimum and median).
 * Without $TACOS_DRIVER the TACOS rows and the ratios are skipped.
 *
 * The driver is not part of tenet: a small C++ program over TACOS's own classes, built
 * against astra-sim/tacos. Its command line, as this bench calls it:
 *   $TACOS_DRIVER FABRIC SIZE
 *     FABRIC  mesh-WxH (TACOS Mesh2D), torus-WxH (Torus2D) or mesh3d-XxYxZ (Hypercube3D,
 *             which is a 3D mesh), 50 GiB/s links, 500 ns (0.5 us) latency
 *     SIZE    the All-Gather's output buffer as tenet reads -s: bytes or with KiB/MiB/GiB;
 *             one chunk per NPU: Synthesizer().solve(topology, AllGather(n, 1), SIZE / n)
 *   and prints one line containing "time_us=T" (the collective time TACOS predicts, in us);
 *   the bench shows T beside tenet's predicted time. Exit status 0 on success.
 *
 * tenet is the binary beside this program ($TENET overrides). The first line gives the
 * cost of starting a tenet process at all (`tenet --help`). After each case a line says
 * where the greedy k=1 run's CPU goes, measured inside this process with the calls
 * tenet synth makes (minimum of N): loading the fabric, the greedy's plan alone, synth_run
 * (plan, lowering, order-proofing with its simulations, verification and writing the set
 * beside the last one) and the lower bound. On a shared machine wall times are inflated
 * by load; the CPU figures are the steadier ones.
 *
 * Every run writes its set into a directory of its own under DIR (default: a new one in
 * $TMPDIR or /tmp), all removed at the end only: on ext4 without a journal, creating a
 * file skips every inode deleted in the last minutes, one by one, so a bench that rewrote
 * one prefix (each run deleting the previous 64 files) would mostly time that scan.
 *
 * Usage: bench_tacos [--reps N] [--only SUBSTR] [--dir DIR] [-s SIZE ...] [FABRIC ...]
 *   --reps N       runs per row (default 9)
 *   --only SUBSTR  cases (FABRIC-SIZE) whose name contains SUBSTR
 *   --dir DIR      where the sets go (a file system to time the writing on, e.g. /dev/shm)
 *   -s SIZE        a size (repeatable; replaces the default three) */
#include <errno.h>
#include <fcntl.h>
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

#include "algo/algo.h"
#include "bench/bench_proc.h"
#include "cli/cli.h"
#include "emit/emit.h"
#include "greedy/greedy.h"
#include "synth/synth.h"
#include "topo/topo.h"

#define PATH_LEN 4096
#define MAX_REPS 101
#define MAX_ITEMS 16

typedef struct timing {
  double wall_min, wall_med, cpu_min, cpu_med; /* seconds */
  bool ok;
} timing_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Where each run writes: a new directory per run under the bench's own. */
static unsigned run_counter;
static char out_root[PATH_LEN];

/* Runs argv reps times (stdout of the last run to out_path when given). The argument
 * after "-o" (when there is one) is replaced by a fresh "<out_root>/<n>/g" per run. */
static timing_t time_runs(const char *const argv_in[], int reps, const char *out_path) {
  timing_t t = {0, 0, 0, 0, true};
  double walls[MAX_REPS], cpus[MAX_REPS];
  const char *argv[24];
  char prefix[PATH_LEN + 32];
  int o = -1;
  for (int k = 0; k < 23 && (argv[k] = argv_in[k]) != NULL; k++)
    if (k > 0 && strcmp(argv_in[k - 1], "-o") == 0) o = k;
  argv[23] = NULL;
  for (int i = 0; i < reps; i++) {
    if (o >= 0) {
      snprintf(prefix, sizeof prefix, "%s/%u/g", out_root, run_counter++);
      argv[o] = prefix;
    }
    if (run_child(argv, i + 1 == reps ? out_path : NULL, &walls[i], &cpus[i]) != 0) {
      t.ok = false;
      return t;
    }
  }
  t.wall_med = median(walls, reps); /* sorts: [0] is the minimum */
  t.cpu_med = median(cpus, reps);
  t.wall_min = walls[0];
  t.cpu_min = cpus[0];
  return t;
}

/* The collective time (us) a run printed: tenet's summary "...(N NPUs): T us," or the
 * driver's "time_us=T"; negative when absent. */
static double read_time_us(const char *path) {
  char buf[4096];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strstr(buf, "time_us=");
  if (p) return atof(p + 8);
  p = strstr(buf, "NPUs): ");
  if (!p) return -1;
  char *end = NULL;
  double v = strtod(p + 7, &end);
  if (end && strncmp(end, " ms", 3) == 0) v *= 1e3;
  if (end && strncmp(end, " s", 2) == 0) v *= 1e6;
  return v;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What tenet synth does with its set (cmd_synth's check_and_write): verify and write. */
typedef struct check_write {
  const topo_t *t;
  const char *out;
} check_write_t;

static tn_status_t check_and_write(void *ctx, const algo_t *a, tn_err_t *err) {
  const check_write_t *cw = ctx;
  return cli_verify_write(cw->t, a, cw->out, NULL, err);
}

/* The greedy k=1 run's parts in this process (CPU ms, minimum of reps): fabric, the
 * greedy's plan alone, synth_run as tenet synth calls it, the lower bound. */
static bool phases(const char *fabric, const char *size_arg, int reps, double ms[4]) {
  for (int k = 0; k < 4; k++)
    ms[k] = 1e30;
  uint64_t size = 0;
  tn_err_t err = {0};
  if (tn_parse_size(size_arg, &size, &err) != TN_OK) {
    fprintf(stderr, "bench_tacos: %s\n", err.msg);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < reps && ok; i++) {
    topo_t *t = NULL;
    schedule_t s;
    synth_result_t r = {0};
    char prefix[PATH_LEN + 32];
    snprintf(prefix, sizeof prefix, "%s/%u/g", out_root, run_counter++);
    check_write_t cw = {NULL, prefix};
    synth_opts_t so = {.method = SYNTH_GREEDY, .seed = 1, .chunks_per_npu = 1};
    greedy_opts_t g = {.seed = 1, .chunks_per_npu = 1};
    uint64_t lb = 0;
    double c[5];
    c[0] = cpu_now();
    ok = cli_load_topo(fabric, &t, &err) == TN_OK;
    c[1] = cpu_now();
    ok = ok && greedy_run_for(t, TN_ALLGATHER, size, &g, &s, &err) == TN_OK;
    if (ok) schedule_free(&s);
    c[2] = cpu_now();
    cw.t = t;
    so.on_set = check_and_write;
    so.on_set_ctx = &cw;
    ok = ok && synth_run(t, TN_ALLGATHER, size, &so, &r, &err) == TN_OK;
    ok = ok && (r.on_set_done || check_and_write(&cw, r.algo, &err) == TN_OK);
    c[3] = cpu_now();
    ok = ok && topo_lower_bound_ps(t, TN_ALLGATHER, size, &lb, &err) == TN_OK;
    c[4] = cpu_now();
    for (int k = 0; k < 4 && ok; k++)
      if ((c[k + 1] - c[k]) * 1e3 < ms[k]) ms[k] = (c[k + 1] - c[k]) * 1e3;
    if (!ok) fprintf(stderr, "bench_tacos: %s %s: %s\n", fabric, size_arg, err.msg);
    synth_result_free(&r);
    topo_free(t);
  }
  return ok;
}

static void print_row(const char *name, const char *what, timing_t t, double coll_us) {
  printf("%-20s %-11s %8.1f %8.1f %8.1f %8.1f", name, what, t.cpu_min * 1e3, t.cpu_med * 1e3,
         t.wall_min * 1e3, t.wall_med * 1e3);
  if (coll_us >= 0) printf(" %12.3f", coll_us);
  printf("\n");
}

static void remove_tree(const char *path) {
  const char *argv[] = {"/bin/rm", "-rf", path, NULL};
  double w, c;
  run_child(argv, NULL, &w, &c);
}

int main(int argc, char **argv) {
  int reps = 9;
  const char *only = NULL, *dir = NULL;
  const char *fabrics[MAX_ITEMS] = {"mesh-8x8", "torus-8x8", "mesh3d-4x4x4"};
  const char *sizes[MAX_ITEMS] = {"1MiB", "64MiB", "1GiB"};
  size_t nfab = 3, nsize = 3;
  bool own_fab = false, own_size = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
      dir = argv[++i];
    else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
      if (!own_size) nsize = 0;
      own_size = true;
      if (nsize < MAX_ITEMS) sizes[nsize++] = argv[++i];
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_tacos [--reps N] [--only SUBSTR] [--dir DIR] [-s SIZE ...] "
                      "[FABRIC ...]\n");
      return 2;
    } else {
      if (!own_fab) nfab = 0;
      own_fab = true;
      if (nfab < MAX_ITEMS) fabrics[nfab++] = argv[i];
    }
  }
  if (reps < 1) reps = 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  char tenet[PATH_LEN];
  tenet_path(argv[0], tenet, sizeof tenet);
  const char *tacos = getenv("TACOS_DRIVER");
  if (tacos && !*tacos) tacos = NULL;
  const char *base = dir ? dir : getenv("TMPDIR");
  char tmp[PATH_LEN];
  snprintf(tmp, sizeof tmp, "%s/bench_tacos.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmp)) {
    perror("bench_tacos: mkdtemp");
    return 1;
  }
  const char *prefix = "(per run)";
  char out_path[PATH_LEN + 16];
  snprintf(out_root, sizeof out_root, "%s", tmp);
  snprintf(out_path, sizeof out_path, "%s/stdout", tmp);

  printf("tenet synth vs TACOS k=1 (All-Gather), whole processes; %d runs per row, minimum and "
         "median (a shared machine inflates wall times; CPU = user + system)\n",
         reps);
  printf("sets written under %s (a new directory per run)\n", tmp);
  if (!tacos) printf("TACOS_DRIVER is not set: TACOS's times and the ratios are skipped\n");
  const char *help_argv[] = {tenet, "--help", NULL};
  timing_t th = time_runs(help_argv, reps, NULL);
  if (th.ok)
    printf("starting a tenet process (tenet --help): CPU %.1f ms min %.1f med, wall %.1f ms min "
           "%.1f med\n",
           th.cpu_min * 1e3, th.cpu_med * 1e3, th.wall_min * 1e3, th.wall_med * 1e3);
  printf("%-20s %-11s %8s %8s %8s %8s %12s\n", "case", "run", "cpu_min", "cpu_med", "wall_min",
         "wall_med", "coll_us");
  double worst = 0;
  bool ok = true;
  for (size_t f = 0; f < nfab; f++)
    for (size_t s = 0; s < nsize; s++) {
      char name[256];
      snprintf(name, sizeof name, "%s-%s", fabrics[f], sizes[s]);
      if (only && !strstr(name, only)) continue;
      const char *k1[] = {tenet,       "synth", "-t",     fabrics[f], "-c",
                          "allgather", "-s",    sizes[s], "-a",       "greedy",
                          "--chunks",  "1",     "-o",     prefix,     NULL};
      const char *gr[] = {tenet,    "synth", "-t",     fabrics[f], "-c",   "allgather", "-s",
                          sizes[s], "-a",    "greedy", "-o",       prefix, NULL};
      const char *au[] = {tenet, "synth",  "-t", fabrics[f], "-c", "allgather",
                          "-s",  sizes[s], "-o", prefix,     NULL};
      timing_t tk = time_runs(k1, reps, out_path);
      if (!tk.ok) {
        fprintf(stderr, "bench_tacos: %s: tenet synth -a greedy --chunks 1 failed\n", name);
        ok = false;
        continue;
      }
      print_row(name, "greedy k=1", tk, read_time_us(out_path));
      timing_t tg = time_runs(gr, reps, out_path);
      if (tg.ok) print_row("", "greedy", tg, read_time_us(out_path));
      timing_t ta = time_runs(au, reps, out_path);
      if (ta.ok) print_row("", "auto", ta, read_time_us(out_path));
      ok = ok && tg.ok && ta.ok;
      if (tacos) {
        const char *tc[] = {tacos, fabrics[f], sizes[s], NULL};
        timing_t tt = time_runs(tc, reps, out_path);
        if (!tt.ok) {
          fprintf(stderr, "bench_tacos: %s: %s failed\n", name, tacos);
          ok = false;
          continue;
        }
        print_row("", "tacos k=1", tt, read_time_us(out_path));
        double r[4] = {tk.cpu_min / tt.cpu_min, tk.cpu_med / tt.cpu_med, tk.wall_min / tt.wall_min,
                       tk.wall_med / tt.wall_med};
        printf("%-20s %-11s %8.2f %8.2f %8.2f %8.2f   (greedy k=1 / tacos k=1; target <= 1.5)\n",
               "", "ratio", r[0], r[1], r[2], r[3]);
        if (r[1] > worst) worst = r[1];
      }
      double ms[4];
      if (phases(fabrics[f], sizes[s], reps, ms))
        printf("%-20s in-process CPU ms (greedy k=1): fabric %.2f, greedy plan %.2f, synth_run "
               "%.2f (plan, lowering, order-proofing, verify, write), bound %.2f\n",
               "", ms[0], ms[1], ms[2], ms[3]);
      else
        ok = false;
      fflush(stdout);
    }
  if (tacos && worst > 0) printf("largest ratio (CPU median): %.2f (target: <= 1.5)\n", worst);
  remove_tree(tmp);
  return ok ? 0 : 1;
}
