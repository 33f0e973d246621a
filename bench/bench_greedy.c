/* bench/bench_greedy.c — issue 5's figures for the greedy synthesizer: All-Gather and
 * All-Reduce busbw against the bound on mesh-8x8, mesh3d-4x4x4 and torus-8x8 (with Ring's
 * All-Reduce for comparison), the 128-NPU All-Reduce synthesis time, and how synthesis
 * time and peak memory grow from 64 to 4096 NPUs. Times are wall time of planning, lowering
 * and writing the Chakra files (to $TENET_BENCH_DIR/bench_greedy_w, default /tmp), as the
 * issue counts them. Prints figures;
 * not a test.
 *
 * Usage: bench_greedy [quality|speed|scale] [max_npus]   (default: all, up to 4096) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/algo.h"
#include "emit/emit.h"
#include "greedy/greedy.h"
#include "sim/sim.h"
#include "synth/synth.h"
#include "topo/topo.h"

static const uint64_t MiB = 1u << 20;

/* CPU seconds of this process: the machine is shared, so wall time alone overstates. */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static topo_t *gen(const char *kind, const char *dims) {
  tn_err_t err = {0};
  topo_t *t = NULL;
  if (topo_gen_kind(kind, dims, 50.0, 500.0, &t, &err) != TN_OK) {
    fprintf(stderr, "bench_greedy: %s %s: %s\n", kind, dims, err.msg);
    exit(1);
  }
  return t;
}

/* Simulated time of a on t in ps, or 0 when the simulator is unavailable or fails. */
static uint64_t simulate(const topo_t *t, const algo_t *a) {
  tn_err_t err = {0};
  sim_result_t res;
  memset(&res, 0, sizeof res);
  if (sim_run(t, a, NULL, &res, &err) != TN_OK) return 0;
  uint64_t time = res.time_ps;
  sim_result_free(&res);
  return time;
}

static void die(const char *what, const tn_err_t *err) {
  fprintf(stderr, "bench_greedy: %s: %s\n", what, err->msg);
  exit(1);
}

/* The lower bound, which fits for the sizes benchmarked (dies otherwise). */
static uint64_t lower_bound(const topo_t *t, tn_coll_t c, uint64_t size) {
  uint64_t ps = 0;
  tn_err_t err = {0};
  if (topo_lower_bound_ps(t, c, size, &ps, &err) != TN_OK) die("lower bound", &err);
  return ps;
}

static void all_gather_row(const char *name, const topo_t *t, uint64_t size) {
  tn_err_t err = {0};
  greedy_opts_t o = {.seed = 1, .chunks_per_npu = 0};
  schedule_t s;
  double t0 = tn_wall_seconds();
  if (greedy_run(t, size, &o, &s, &err) != TN_OK) die(name, &err);
  double ms = (tn_wall_seconds() - t0) * 1e3;
  algo_t *a = NULL;
  if (algo_from_schedule(&s, TN_ALLGATHER, "greedy", &a, &err) != TN_OK) die(name, &err);
  uint64_t lb = lower_bound(t, TN_ALLGATHER, size), sim = simulate(t, a);
  char sz[32];
  printf("  %-14s allgather %6s  K=%-2u time %12.3f us  bound %12.3f us  busbw/bound %.4f  "
         "sim %s  synth %7.1f ms\n",
         name, tn_fmt_size(size, sz, sizeof sz), s.chunks_per_npu, (double)s.time_ps / 1e6,
         (double)lb / 1e6, (double)lb / (double)s.time_ps,
         sim == 0           ? "n/a"
         : sim == s.time_ps ? "== plan"
                            : "DIFFERS",
         ms);
  algo_free(a);
  schedule_free(&s);
}

static void all_reduce_row(const char *name, const topo_t *t, uint64_t size) {
  tn_err_t err = {0};
  /* The greedy's All-Reduce as tenet makes it (synth/: transposed half on asymmetric
   * fabrics), not a copy of that assembly. */
  synth_opts_t o = {.method = SYNTH_GREEDY, .seed = 1};
  synth_result_t res;
  if (synth_run(t, TN_ALLREDUCE, size, &o, &res, &err) != TN_OK) die(name, &err);
  algo_t *a = res.algo, *ring = NULL;
  uint64_t lb = lower_bound(t, TN_ALLREDUCE, size), sim = simulate(t, a);
  uint64_t ring_ps = 0;
  if (algo_ring(TN_ALLREDUCE, t->npus, size, 1, &ring, &err) == TN_OK) ring_ps = simulate(t, ring);
  char sz[32];
  printf("  %-14s allreduce %6s  K=%-2u ", name, tn_fmt_size(size, sz, sizeof sz),
         a->chunks_per_npu);
  if (sim == 0) {
    printf("(simulator not available)\n");
  } else {
    printf("time %12.3f us  bound %12.3f us  busbw/bound %.4f", (double)sim / 1e6, (double)lb / 1e6,
           (double)lb / (double)sim);
    /* busbw against the bus bandwidth as nccl-tests defines it: the textbook All-Reduce
     * time, twice the All-Gather bound (the first column is docs/bounds.md's All-Reduce
     * bound: on full-duplex links a schedule can beat the textbook time, never that). */
    uint64_t textbook = 2 * lower_bound(t, TN_ALLGATHER, size);
    printf("  busbw/textbook %.4f", (double)textbook / (double)sim);
    if (ring_ps) printf("  ring busbw x%.2f", (double)ring_ps / (double)sim);
    printf("\n");
  }
  algo_free(ring);
  synth_result_free(&res);
}

static void quality(void) {
  static const struct {
    const char *name, *kind, *dims;
  } f[] = {{"mesh-8x8", "mesh", "8x8"},
           {"mesh3d-4x4x4", "mesh", "4x4x4"},
           {"torus-8x8", "torus", "8x8"}};
  printf("quality (50 GB/s links, 500 ns; busbw/bound = bound time / time)\n");
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    topo_t *t = gen(f[i].kind, f[i].dims);
    all_gather_row(f[i].name, t, 1 * MiB);
    all_gather_row(f[i].name, t, 64 * MiB);
    all_gather_row(f[i].name, t, 1024 * MiB);
    all_reduce_row(f[i].name, t, 64 * MiB);
    all_reduce_row(f[i].name, t, 1024 * MiB);
    topo_free(t);
  }
}

/* Where the bench writes Chakra sets (scratch, removed before it exits): under
 * $TENET_BENCH_DIR (default /tmp), e.g. /dev/shm to leave the disk's file system out. */
static char scratch[400] = "/tmp/bench_greedy_w";

/* The speed rows' sets, removed at exit. Each rep writes a new set, as a user's
 * `tenet synth -o NEW/PREFIX` does, rather than replacing the previous rep's files: on an
 * ext4 without a journal (this VM's disk) every file created skips, one by one, the inodes
 * freed in the last 1-6 minutes, so rewriting 128 files rep after rep timed the file
 * system's bookkeeping of our own deletions (up to 60 ms a rep, measured with perf in
 * find_inode_bit / recently_deleted), not tenet. */
enum { MAX_SPEED_SETS = 64 };
static struct {
  char prefix[512];
  uint32_t npus;
} speed_sets[MAX_SPEED_SETS];
static int nspeed_sets;

/* One synthesis as `tenet synth` does it: plan (with the automatic chunking when chunks is
 * 0), lower (plus algo_fill_idle), write the Chakra set under prefix. Wall and CPU times. */
typedef struct run {
  double plan, lower, write, total; /* wall ms */
  double cpu;                       /* CPU ms of the whole run (all threads) */
  uint32_t k;
  uint64_t nodes, transfers, time_ps;
} run_t;

static run_t synth_once(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t chunks,
                        const char *prefix, const char *what) {
  tn_err_t err = {0};
  run_t r = {0};
  greedy_opts_t o = {.seed = 1, .chunks_per_npu = chunks};
  schedule_t s;
  algo_t *a = NULL;
  double t0 = tn_wall_seconds(), c0 = cpu_seconds();
  if (greedy_run_for(t, coll, size, &o, &s, &err) != TN_OK) die(what, &err);
  double t1 = tn_wall_seconds();
  if (algo_from_schedule(&s, coll, "greedy", &a, &err) != TN_OK || algo_fill_idle(a, &err) != TN_OK)
    die(what, &err);
  double t2 = tn_wall_seconds();
  r.k = s.chunks_per_npu;
  r.transfers = schedule_len(&s);
  r.time_ps = s.time_ps;
  schedule_free(&s); /* as `tenet synth` does before writing: the peak is the CLI's */
  if (emit_chakra_write(a, prefix, &err) != TN_OK) die(what, &err);
  double t3 = tn_wall_seconds();
  r.cpu = (cpu_seconds() - c0) * 1e3;
  r.plan = (t1 - t0) * 1e3;
  r.lower = (t2 - t1) * 1e3;
  r.write = (t3 - t2) * 1e3;
  r.total = (t3 - t0) * 1e3;
  r.nodes = algo_node_count(a);
  algo_free(a);
  return r;
}

/* Removes the rank files of a set written under prefix (the scale sets are gigabytes). */
static void remove_set(const char *prefix, uint32_t npus) {
  char path[512];
  for (uint32_t r = 0; r < npus; r++) {
    snprintf(path, sizeof path, "%s.%u.et", prefix, r);
    unlink(path);
  }
}

/* Planning, lowering and writing the Chakra files (the wall time): the best of
 * reps for each phase and for the total (the machine is shared: the minimum is the
 * figure least disturbed by others). */
static void speed_row(const char *kind, const char *dims, tn_coll_t coll, uint64_t size,
                      uint32_t chunks, int reps) {
  topo_t *t = gen(kind, dims);
  char sz[32];
  run_t best = {.plan = 1e30, .lower = 1e30, .write = 1e30, .total = 1e30};
  double best_cpu = 1e30;
  for (int i = 0; i < reps && nspeed_sets < MAX_SPEED_SETS; i++) {
    char *prefix = speed_sets[nspeed_sets].prefix;
    snprintf(prefix, sizeof speed_sets[0].prefix, "%s/%s-%s-%s-%d/greedy", scratch, kind, dims,
             tn_coll_name(coll), i);
    remove_set(prefix, t->npus); /* left by an interrupted run */
    speed_sets[nspeed_sets++].npus = t->npus;
    run_t r = synth_once(t, coll, size, chunks, prefix, dims);
    best.k = r.k;
    best.nodes = r.nodes;
    if (r.plan < best.plan) best.plan = r.plan;
    if (r.lower < best.lower) best.lower = r.lower;
    if (r.write < best.write) best.write = r.write;
    if (r.total < best.total) best.total = r.total;
    if (r.cpu < best_cpu) best_cpu = r.cpu;
  }
  printf("  %-5s %-5s %4u NPUs %-13s %6s K=%-2u nodes %8llu  plan %7.1f  lower %7.1f  write "
         "%7.1f  total %7.1f ms  (cpu %7.1f ms, best of %d)\n",
         kind, dims, t->npus, tn_coll_name(coll), tn_fmt_size(size, sz, sizeof sz), best.k,
         (unsigned long long)best.nodes, best.plan, best.lower, best.write, best.total, best_cpu,
         reps);
  topo_free(t);
}

/* One scale point in a child process, so its peak RSS is its own. */
static void scale_row(const char *dims) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    topo_t *t = gen("mesh", dims);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/scale-%s/greedy", scratch, dims);
    run_t r = synth_once(t, TN_ALLGATHER, 64 * MiB, 1, prefix, dims);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t lb = lower_bound(t, TN_ALLGATHER, 64 * MiB);
    printf("  mesh %-6s %5u NPUs  transfers %9llu  plan %9.1f  lower %8.1f  write %8.1f  "
           "total %9.1f ms  cpu %9.1f ms  peak RSS %7.1f MiB  busbw/bound %.4f\n",
           dims, t->npus, (unsigned long long)r.transfers, r.plan, r.lower, r.write, r.total, r.cpu,
           (double)ru.ru_maxrss / 1024.0, (double)lb / (double)r.time_ps);
    fflush(stdout);
    remove_set(prefix, t->npus);
    topo_free(t);
    _exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
    printf("  mesh %s: failed\n", dims);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "all";
  const char *dir = getenv("TENET_BENCH_DIR");
  if (dir && *dir) snprintf(scratch, sizeof scratch, "%s/bench_greedy_w", dir);
  uint32_t max_npus = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4096;
  bool all = strcmp(what, "all") == 0;
  if (all || strcmp(what, "quality") == 0) quality();
  if (all || strcmp(what, "speed") == 0) {
    printf("speed (wall ms: plan, lower, write a new Chakra set under %s)\n", scratch);
    speed_row("mesh", "16x8", TN_ALLREDUCE, 64 * MiB, 0, 5);
    speed_row("torus", "16x8", TN_ALLREDUCE, 64 * MiB, 0, 5);
    speed_row("mesh", "32x32", TN_ALLGATHER, 64 * MiB, 1, 3);
  }
  if (all || strcmp(what, "scale") == 0) {
    printf("scale (All-Gather 64 MiB, one chunk per NPU; plan, lower, write Chakra)\n");
    static const char *dims[] = {"8x8", "16x8", "16x16", "32x16", "32x32", "64x32", "64x64"};
    static const uint32_t npus[] = {64, 128, 256, 512, 1024, 2048, 4096};
    for (size_t i = 0; i < sizeof npus / sizeof *npus; i++)
      if (npus[i] <= max_npus) scale_row(dims[i]);
  }
  for (int i = 0; i < nspeed_sets; i++)
    remove_set(speed_sets[i].prefix, speed_sets[i].npus);
  return 0;
}
