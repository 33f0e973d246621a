/* bench/bench_mem.c — each producer's memory estimate (synth_mem_estimate, the figure its
 * refusal over TENET_MEM_CAP compares) against the peak resident set of the whole
 * `tenet synth -a METHOD` process that the estimate describes (planning, lowering,
 * order-proofing and simulating, verifying, writing the set), measured with wait4's
 * ru_maxrss. The greedy's estimate is taken at the chunking it chose (its search checks
 * every candidate's); its All-to-All's on the paths of the pieces per block it kept (its
 * sweep checks every count on its own paths); the forest's and Direct's as the larger of
 * the figure checked before they build (the forest's planning of every count it tries,
 * Direct's largest configuration's trial) and the kept count's whole run, checked once
 * kept (synth_mem_kept); where the forest's gates made it make its set again at half its
 * chunks, both sets' figures together (what that halving checks; the JSON's
 * halved_from_chunks); the MILP's as the larger of the greedy's (its warm start, at the
 * count kept) and its models as built (the JSON's milp_mem_bytes: milp_solve checks each
 * before GLPK sees it, while the figure ahead also counts a full model that a proof by the
 * symmetric one leaves unbuilt). The child runs on the threads this program
 * counts (TENET_THREADS, else the online CPUs up to 8), and the estimate is the one for
 * that count (tn_mem_threads: a second thread holds more). Prints one row per case with
 * estimate / peak and the set's messages; not a test (the peak depends on the C library's
 * allocator). Issue 16 asks for every ratio within 0.8..1.2, at one thread and at two.
 *
 * Usage: bench_mem [-s SIZE] [-m METHODS] [-c COLLS] [-r RUNS] [-k CHUNKS] FABRIC ...
 *   default size 1GiB, methods greedy,ring,direct,trees, collectives
 *   allgather,reducescatter,allreduce (trees: All-Reduce only); default fabrics mesh-8x8
 *   and mesh-16x16. -r runs each case RUNS times (default 1) and compares the median peak
 *   (the lowest and highest in brackets): a peak varies by up to ~25% between runs of one
 *   command, with one thread too (hierarchical-16x8 1 MiB: 31 and 39 MB), as the C
 *   library's arenas fill. -k passes --chunks CHUNKS to every run (the MILP's larger
 *   models: mesh-2x4 -k 2). $TENET names the tenet binary (default: beside this program). */
#define _DEFAULT_SOURCE /* wait4 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_proc.h"
#include "cli/cli.h"
#include "forest/forest.h"
#include "greedy/greedy.h"
#include "synth/synth.h"

/* Runs argv with stdout to out_path; the child's peak resident set (KiB) in *maxrss_kb. */
static int run_peak(const char *const argv[], const char *out_path, long *maxrss_kb) {
  pid_t pid = spawn_child(argv, out_path);
  if (pid < 0) return -1;
  int status = 0;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) return -1;
  *maxrss_kb = ru.ru_maxrss;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The unsigned integer after "key": in the JSON text js, or 0. */
static uint64_t json_u64(const char *js, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(js, pat);
  return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* What one case's run needs, from its JSON text js (see the header): the figure that
 * describes it. */
static uint64_t kept_figure(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t meth,
                            const char *chunks, uint32_t k, const char *js, unsigned threads) {
  /* The figure that describes the run (synth_mem_kept): the greedy's and the MILP's
   * chunking as chosen, the forest's and Direct's before and once kept. The greedy
   * All-to-All's pieces per block as kept (its k is n x pieces): each count it plans
   * is checked on its own paths as if kept, and the kept set is the bulk of the
   * peak; that count may have been kept at the sweep's second growth rate, whose
   * paths differ: the set's messages tell which. */
  uint32_t asked = chunks ? (uint32_t)strtoul(chunks, NULL, 10) : 0;
  uint32_t pieces = meth == SYNTH_GREEDY && coll == TN_ALLTOALL ? k / t->npus : 0;
  uint64_t est = pieces ? greedy_alltoall_kept_mem(t, size, pieces, json_u64(js, "messages"),
                                                   SIM_STRICT_FIRST_WINDOW_PS, threads)
                        : synth_mem_kept(t, coll, size, meth, asked, k, threads);
  /* The MILP's models as built (milp_mem_bytes): its figure ahead also counts the
   * full model, which a proof by the symmetric one leaves unbuilt; beside the greedy's
   * run that warm-starts it. */
  uint64_t models = meth == SYNTH_MILP && js ? json_u64(js, "milp_mem_bytes") : 0;
  if (models) {
    uint64_t g = synth_mem_kept(t, coll, size, SYNTH_GREEDY, asked, k, threads);
    est = g > models ? g : models;
  }
  /* The forest's set made again at half its chunks: both held at once (the figure
   * that halving checks). */
  uint32_t halved = js ? (uint32_t)json_u64(js, "halved_from_chunks") : 0;
  if (halved) {
    uint64_t both = forest_mem_halving(t, coll, size, halved, threads);
    if (both > est) est = both;
  }
  return est;
}

/* kept_figure, worked out in a child process: some figures plan again (the greedy's own
 * choice, the MILP's warm start), and a forked child's peak resident set (ru_maxrss)
 * starts from its parent's, so this process must not grow. 0 when the child fails. */
static uint64_t kept_figure_apart(const topo_t *t, tn_coll_t coll, uint64_t size,
                                  synth_method_t meth, const char *chunks, uint32_t k,
                                  const char *js, unsigned threads) {
  int fd[2];
  if (pipe(fd) != 0) return 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    uint64_t est = kept_figure(t, coll, size, meth, chunks, k, js, threads);
    ssize_t w = write(fd[1], &est, sizeof est);
    _exit(w == (ssize_t)sizeof est ? 0 : 1);
  }
  close(fd[1]);
  uint64_t est = 0;
  if (pid > 0 && read(fd[0], &est, sizeof est) != (ssize_t)sizeof est) est = 0;
  close(fd[0]);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return est;
}

int main(int argc, char **argv) {
  const char *size_s = "1GiB", *methods = "greedy,ring,direct,trees",
             *colls = "allgather,reducescatter,allreduce", *chunks = NULL;
  const char *fabrics[64];
  int nf = 0, runs = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
      size_s = argv[++i];
    else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
      methods = argv[++i];
    else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
      colls = argv[++i];
    else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc)
      chunks = argv[++i];
    else if (nf < 64)
      fabrics[nf++] = argv[i];
  }
  if (nf == 0) fabrics[nf++] = "mesh-8x8", fabrics[nf++] = "mesh-16x16";
  if (runs < 1 || runs > 15) {
    fprintf(stderr, "bench_mem: -r takes 1 to 15 runs\n");
    return 1;
  }
  char tenet[4096], dir[] = "/tmp/bench_mem.XXXXXX";
  tenet_path(argv[0], tenet, sizeof tenet);
  if (mkdtemp(dir) == NULL) {
    perror("bench_mem: mkdtemp");
    return 1;
  }
  tn_err_t err = {0};
  uint64_t size = 0;
  if (tn_parse_size(size_s, &size, &err) != TN_OK) {
    fprintf(stderr, "bench_mem: %s\n", err.msg);
    return 1;
  }
  /* The child runs on the threads this process counts (the same TENET_THREADS), and its
   * estimate is the one for them (tn_mem_threads). */
  unsigned threads = tn_thread_count();
  printf("%-17s %5s %-13s %-7s %4s %10s %10s %6s %9s  %s\n", "fabric", "npus", "collective",
         "method", "k", "peak MiB", "est MiB", "est/pk", "messages", "(whole tenet synth process)");
  printf("threads %u\n", threads);
  for (int f = 0; f < nf; f++) {
    topo_t *t = NULL;
    if (cli_load_topo(fabrics[f], &t, &err) != TN_OK) {
      fprintf(stderr, "bench_mem: %s: %s\n", fabrics[f], err.msg);
      continue;
    }
    char cl[256], ml[256];
    snprintf(cl, sizeof cl, "%s", colls);
    for (char *cs = NULL, *c = strtok_r(cl, ",", &cs); c; c = strtok_r(NULL, ",", &cs)) {
      tn_coll_t coll;
      if (tn_coll_parse(c, &coll, &err) != TN_OK) {
        fprintf(stderr, "bench_mem: %s\n", err.msg);
        return 1;
      }
      snprintf(ml, sizeof ml, "%s", methods);
      for (char *ms = NULL, *m = strtok_r(ml, ",", &ms); m; m = strtok_r(NULL, ",", &ms)) {
        synth_method_t meth;
        if (synth_method_parse(m, "-m", &meth, &err) != TN_OK) {
          fprintf(stderr, "bench_mem: %s\n", err.msg);
          return 1;
        }
        if (!synth_method_applies(meth, coll, NULL)) continue;
        char prefix[4200], json[4200];
        snprintf(prefix, sizeof prefix, "%s/x", dir);
        snprintf(json, sizeof json, "%s/out.json", dir);
        const char *av[] = {
            tenet,  "synth", "-t", fabrics[f], "-c",   c,        "-s",
            size_s, "-a",    m,    "-o",       prefix, "--json", chunks ? "--chunks" : NULL,
            chunks, NULL};
        long kbs[15] = {0}, kb = 0;
        int rc = 0;
        for (int r = 0; r < runs && rc == 0; r++) {
          rc = run_peak(av, json, &kbs[r]);
          for (int q = r; q > 0 && kbs[q - 1] > kbs[q]; q--) { /* sorted */
            long x = kbs[q];
            kbs[q] = kbs[q - 1], kbs[q - 1] = x;
          }
        }
        kb = kbs[(runs - 1) / 2];
        const char *js = slurp(json);
        uint32_t k = js ? (uint32_t)json_u64(js, "chunks_per_npu") : 0;
        uint64_t est = kept_figure_apart(t, coll, size, meth, chunks, k, js, threads);
        double peak_mib = (double)kb / 1024.0, est_mib = (double)est / (1 << 20);
        char range[64] = "";
        if (runs > 1 && rc == 0)
          snprintf(range, sizeof range, "  [%.1f-%.1f]", (double)kbs[0] / 1024.0,
                   (double)kbs[runs - 1] / 1024.0);
        printf("%-17s %5u %-13s %-7s %4u %10.1f %10.1f %6.3f %9llu%s%s\n", t->name, t->npus, c, m,
               k, peak_mib, est_mib, peak_mib > 0 ? est_mib / peak_mib : 0.0,
               (unsigned long long)(js ? json_u64(js, "messages") : 0), range,
               rc == 0 ? "" : "  (refused or failed)");
        fflush(stdout);
        char rm[4300];
        snprintf(rm, sizeof rm, "rm -rf '%s'/*", dir);
        if (system(rm) != 0) fprintf(stderr, "bench_mem: could not empty %s\n", dir);
      }
    }
    topo_free(t);
  }
  rmdir(dir);
  return 0;
}
