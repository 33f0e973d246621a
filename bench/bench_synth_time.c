/* bench/bench_synth_time.c — synthesis wall time against issue 14's targets: per fabric and
 * collective, the time `tenet synth -a auto` spends from the loaded fabric to the written
 * files (synthesis, the portfolio's simulations, order-proofing, verification and the Chakra
 * set), as wall time and as the process's CPU time (user + system, all threads; on a shared
 * machine the steadier figure). Targets: 128 NPUs ≤ 1 s for any collective, the greedy-only
 * path ≤ 50 ms, 1024 NPUs ≤ 60 s. Prints figures; not a test.
 *
 * Usage: bench_synth_time [-s SIZE] [--greedy] [FABRIC ...]
 *   default fabrics: mesh-16x8 torus-16x8 hierarchical-16x8 switch-128 (128 NPUs) and
 *   torus-32x32 (1024); default size 1GiB; --greedy adds a row for `-a greedy` per case.
 *   TENET_THREADS sets the threads, as for tenet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "emit/emit.h"
#include "synth/synth.h"

static const char *const default_fabrics[] = {"mesh-16x8", "torus-16x8", "hierarchical-16x8",
                                              "switch-128", "torus-32x32"};

typedef struct span {
  double wall_s, cpu_s;
} span_t;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const tn_err_t *err) {
  fprintf(stderr, "bench_synth_time: %s: %s\n", what, err->msg);
  exit(1);
}

typedef struct check_write {
  const topo_t *t;
  const char *prefix;
} check_write_t;

static tn_status_t check_and_write(void *ctx, const algo_t *a, tn_err_t *err) {
  const check_write_t *cw = ctx;
  return cli_verify_write(cw->t, a, cw->prefix, NULL, err);
}

/* What `tenet synth` does between loading the fabric and printing: synthesize, verify,
 * write the set under dir (the last two beside the set's last simulation, through
 * synth_opts.on_set, where synth_run can). */
static span_t synth_write(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                          const char *dir, synth_result_t *out) {
  tn_err_t err = {0};
  char prefix[4096];
  snprintf(prefix, sizeof prefix, "%s/set", dir);
  check_write_t cw = {t, prefix};
  synth_opts_t o = {
      .method = m, .seed = CLI_DEFAULT_SEED, .on_set = check_and_write, .on_set_ctx = &cw};
  double w0 = tn_wall_seconds(), c0 = cpu_seconds();
  if (synth_run(t, coll, size, &o, out, &err) != TN_OK) die(synth_method_name(m), &err);
  if (!out->on_set_done && check_and_write(&cw, out->algo, &err) != TN_OK)
    die("verify and write", &err);
  span_t s = {tn_wall_seconds() - w0, cpu_seconds() - c0};
  for (uint32_t r = 0; r < t->npus; r++) { /* the next case writes afresh */
    char path[4200];
    snprintf(path, sizeof path, "%s.%u.et", prefix, r);
    remove(path);
  }
  return s;
}

static void row(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m, const char *dir) {
  /* An All-to-All's size is n equal blocks: round down. */
  if (coll == TN_ALLTOALL) size -= size % t->npus;
  synth_result_t r = {0};
  span_t s = synth_write(t, coll, size, m, dir, &r);
  double target = m == SYNTH_GREEDY && t->npus <= 128 ? 0.05 : t->npus <= 128 ? 1.0 : 60.0;
  char sz[32];
  printf("  %-18s %4u  %-13s %6s  %-6s -> %-7s  wall %8.3f s  cpu %8.3f s  target %5.2f s  %s\n",
         t->name, t->npus, tn_coll_name(coll), tn_fmt_size(size, sz, sizeof sz),
         synth_method_name(m), synth_method_name(r.method), s.wall_s, s.cpu_s, target,
         s.wall_s <= target ? "ok" : "OVER");
  fflush(stdout);
  synth_result_free(&r);
}

int main(int argc, char **argv) {
  tn_alloc_setup(); /* synthesis in-process, with the allocator a tenet process has */
  uint64_t size = 1024u << 20;
  bool greedy = false;
  int first = 1;
  tn_err_t err = {0};
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (strcmp(argv[first], "--greedy") == 0) {
      greedy = true;
    } else if (strcmp(argv[first], "-s") == 0 && first + 1 < argc) {
      if (tn_parse_size(argv[++first], &size, &err) != TN_OK) die("-s", &err);
    } else {
      fprintf(stderr, "usage: bench_synth_time [-s SIZE] [--greedy] [FABRIC ...]\n");
      return 1;
    }
  }
  char dir[] = "/tmp/bench_synth_time.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("bench_synth_time: mkdtemp");
    return 1;
  }
  size_t n =
      first < argc ? (size_t)(argc - first) : sizeof default_fabrics / sizeof default_fabrics[0];
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE, TN_ALLTOALL};
  printf("synthesis + verification + writing the Chakra set, %u thread(s)\n", tn_thread_count());
  for (size_t i = 0; i < n; i++) {
    const char *name = first < argc ? argv[first + (int)i] : default_fabrics[i];
    topo_t *t = NULL;
    if (cli_load_topo_spec(name, &t, &err) != TN_OK) die(name, &err);
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
      row(t, colls[c], size, SYNTH_AUTO, dir);
      if (greedy) row(t, colls[c], size, SYNTH_GREEDY, dir);
    }
    topo_free(t);
  }
  tn_remove_tree(dir);
  return 0;
}
