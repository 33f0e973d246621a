/* cli/cmd_batch.c — `tenet batch`: many fabrics x collectives x sizes x algorithms on
 * all cores, resumable, shardable, with summaries; and `tenet batch merge`. The sweep
 * itself lives in cli/batch.c. */
#include "cli/batch.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const batch_help =
    "usage: tenet batch --topos LIST --colls LIST --sizes LIST [--algos LIST]\n"
    "                   [-j N] [--shard I/N] [--seed N] [--seeds N] [--keep results|best|all]\n"
    "                   [--time-limit S] -o DIR\n"
    "       tenet batch --manifest FILE [-j N] [--shard I/N] [--keep K] -o DIR\n"
    "       tenet batch merge DIR... -o DIR\n\n"
    "Runs every case of fabrics x collectives x sizes x algorithms (in that order,\n"
    "numbered from 0): synthesizes, simulates, and writes the case's\n"
    "DIR/cases/<topo>/<coll>/<size>/<algo>/result.json last (atomically), with its\n"
    "Chakra set chakra.<rank>.et beside it when --keep asks for it. A case whose ok\n"
    "result.json was made from the same inputs (the bytes of the fabric file or the\n"
    "generator spec, collective, size, algorithm, seed, seeds) is complete and is skipped\n"
    "when the command is run again (resume); a changed input reruns its cases. Failed cases\n"
    "are recorded and retried on the next run; a case whose algorithm does not make\n"
    "its collective (ring x alltoall, trees x allgather) is recorded as status n/a, not\n"
    "a failure. At the end DIR/summary.json\n"
    "({\"rows\":[...]}, one row per case: case, topology, npus, collective, algorithm,\n"
    "size_bytes, time_ns, algbw_GBps, busbw_GBps, lower_bound_ns, ratio_to_bound, status,\n"
    "error; with --seeds also seed and seeds_tried) and DIR/summary.csv (text quoted as 'tenet "
    "compare --csv' does) are written\n"
    "in case order.\n\n"
    "  --topos LIST      topology files, shipped names or KIND-DIMS (ring-8, mesh-8x8,\n"
    "                    mesh3d-4x4x4: generated at 50 GB/s, 500 ns), comma-separated\n"
    "  --colls LIST      allgather, reducescatter, allreduce, alltoall\n"
    "  --sizes LIST      1MiB,64MiB,1GiB or a power-of-two range 1KiB..1GiB\n"
    "  --algos LIST      auto, greedy, trees, forest, dims, ring, direct, twostep, milp\n"
    "                    (default auto,ring,direct)\n"
    "  --seed N          greedy tie-breaking seed (default 1)\n"
    "  --seeds N         best of N seeds (1..1000) per greedy, milp or auto case, as\n"
    "                    'tenet synth --seeds' (N0 the --seed); N times the work\n";

/* The help's second part (one string would pass the 4095 bytes C99 promises). */
static const char *const batch_help_opts =
    "  --time-limit S    MILP wall-clock safety net in seconds per case (default 60); the\n"
    "                    MILP stops on its work limit first (1000 nodes, simplex\n"
    "                    iterations scaled to the model: see 'tenet synth --help'), so\n"
    "                    a case's result does not depend on it unless it is reached\n"
    "  --keep WHAT       Chakra sets to keep: results (default: none, only result.json\n"
    "                    and the summaries), best (the fastest algorithm's set per\n"
    "                    fabric, collective and size) or all (every case's). A sweep's\n"
    "                    sets add up fast (1,122 cases of 16..64 NPUs wrote 9.2 GB), and\n"
    "                    'tenet synth' with the case's fabric, collective, size,\n"
    "                    algorithm and seed writes the same set again byte for byte.\n"
    "                    A folder keeps what it was first run with.\n"
    "  --manifest FILE   the sweep from a text file instead of the four lists:\n"
    "                      # comment\n"
    "                      topos  mesh-8x8, fabrics/my.json   (relative to FILE's folder)\n"
    "                      colls  allgather, allreduce\n"
    "                      sizes  1MiB,64MiB,1GiB\n"
    "                      algos  auto,ring,direct\n"
    "                      seed   1\n"
    "                      seeds  4          (best of 4 seeds; default 1)\n"
    "                    (KEY VALUE, KEY: VALUE or KEY = VALUE; a list key may repeat\n"
    "                    to extend its list)\n"
    "  -j, --jobs N      cases in parallel (default: all cores); results do not depend on N\n"
    "  --shard I/N       only shard I of N (e.g. a Slurm array task:\n"
    "                    --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); join the\n"
    "                    shard folders with 'tenet batch merge'. Cases are dealt by\n"
    "                    estimated run time (from NPUs, links, collective, algorithm):\n"
    "                    the longest first, each to the shard with the least so far, so\n"
    "                    shards take about equally long; every shard computes the same\n"
    "                    deal on its own. A shard runs its longest cases first.\n"
    "  -o, --output DIR  output folder (created; batch.json records the sweep)\n\n";

/* The rest of the help (one string would pass the 4095 bytes C99 promises). */
static const char *const batch_help_more =
    "merge: reads the shard folders' batch.json (same sweep) and per-case results and\n"
    "writes summary.json, summary.csv and batch.json into -o DIR: the same summary one\n"
    "run of the whole sweep writes. DIR must not be one of the shard folders. When some\n"
    "cases have no result, one line counts them, names the shards none of the folders\n"
    "ran and lists every missing case, and nothing is written. The Chakra sets stay in\n"
    "the shard folders.\n\n"
    "Progress goes to stderr: a bar with counts and ETA on a terminal (the ETA weighs\n"
    "the cases left by their estimated run time), one line per case otherwise. Ctrl-C\n"
    "(SIGINT) or SIGTERM stops scheduling, lets running cases finish and leaves no\n"
    "half-written case; a second one stops at once, leaving no temporary file (cases\n"
    "still running are redone); run the same command again to resume.\n"
    "Exit: 0 all cases ok, 1 bad arguments, 2 some cases failed, 3 internal error,\n"
    "130/143 interrupted by SIGINT/SIGTERM.\n";

static volatile sig_atomic_t batch_signal;

/* The first SIGINT or SIGTERM stops scheduling and lets running cases finish; a second
 * one ends the process at once, as cli/main.c's handler does: the temporaries of the sets
 * being written are removed first (tn_cleanup_on_signal), and a resumed run redoes those
 * cases. */
static void on_signal(int sig) {
  if (batch_signal == 0) {
    batch_signal = sig;
    return;
  }
  tn_cleanup_on_signal();
  signal(sig, SIG_DFL);
  raise(sig);
}

static int batch_merge(int argc, char **argv) {
  const char *out = NULL;
  bool help = false;
  const cli_opt_t opts[] = {
      {"output", 'o', &out, NULL}, {"out", 0, &out, NULL}, {"help", 'h', NULL, &help}};
  tn_err_t err = {0};
  const char **pos = NULL;
  size_t npos = 0, failed = 0;
  if (tn_calloc((size_t)argc + 1, sizeof *pos, &pos, &err) != TN_OK)
    return cli_report("batch", &err);
  int rc = 0;
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, (size_t)argc, &npos, &err) !=
      TN_OK) {
    rc = cli_usage("batch", "merge: %s", err.msg);
  } else if (help) {
    fputs(batch_help, stdout), fputs(batch_help_opts, stdout), fputs(batch_help_more, stdout);
  } else if (out == NULL) {
    rc = cli_usage("batch", "merge: missing -o DIR");
  } else if (npos == 0) {
    rc = cli_usage("batch", "merge: give the shard folders to merge");
  } else if (cli_batch_merge(pos, npos, out, &failed, &err) != TN_OK) {
    rc = cli_report("batch", &err);
  } else {
    fprintf(stderr, "tenet batch: merged %zu folder%s into %s/summary.json (%zu case%s failed)\n",
            npos, npos == 1 ? "" : "s", out, failed, failed == 1 ? "" : "s");
    rc = failed ? 2 : 0;
  }
  free(pos);
  return rc;
}

int cmd_batch(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "merge") == 0) return batch_merge(argc - 1, argv + 1);
  const char *topos = NULL, *colls = NULL, *sizes = NULL, *algos = NULL;
  const char *manifest = NULL, *jobs_s = NULL, *shard_s = NULL, *out = NULL, *seed_s = NULL;
  const char *keep_s = NULL, *time_limit_s = NULL, *seeds_s = NULL;
  bool help = false;
  const cli_opt_t opts[] = {
      {"topos", 0, &topos, NULL},       {"colls", 0, &colls, NULL},
      {"sizes", 0, &sizes, NULL},       {"algos", 0, &algos, NULL},
      {"manifest", 0, &manifest, NULL}, {"jobs", 'j', &jobs_s, NULL},
      {"shard", 0, &shard_s, NULL},     {"output", 'o', &out, NULL},
      {"out", 0, &out, NULL},           {"seed", 0, &seed_s, NULL},
      {"seeds", 0, &seeds_s, NULL},     {"keep", 0, &keep_s, NULL},
      {"help", 'h', NULL, &help},       {"time-limit", 0, &time_limit_s, NULL},
  };
  tn_err_t err = {0};
  const char *pos[1];
  size_t npos = 0;
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &npos, &err) != TN_OK)
    return cli_usage("batch", "%s", err.msg);
  if (help) {
    fputs(batch_help, stdout), fputs(batch_help_opts, stdout), fputs(batch_help_more, stdout);
    return 0;
  }
  cli_batch_opts_t o = {
      .out_dir = out, .nshards = 1, .stop = &batch_signal, .tty = isatty(STDERR_FILENO) == 1};
  uint64_t seed = CLI_DEFAULT_SEED, seeds = 1;
  cli_batch_keep_t keep = CLI_BATCH_KEEP_RESULTS;
  double time_limit = 0.0;
  if (out == NULL) return cli_usage("batch", "missing -o DIR");
  if (manifest && (topos || colls || sizes || algos || seed_s || seeds_s))
    return cli_usage("batch",
                     "--manifest replaces --topos, --colls, --sizes, --algos, --seed and --seeds");
  if (algos == NULL) algos = "auto,ring,direct";
  if (!manifest && (!topos || !colls || !sizes))
    return cli_usage("batch", "give --topos, --colls and --sizes (or --manifest FILE)");
  if ((jobs_s && cli_parse_jobs(jobs_s, &o.jobs, &err) != TN_OK) ||
      (shard_s && cli_parse_shard(shard_s, &o.shard, &o.nshards, &err) != TN_OK) ||
      (seed_s && tn_parse_u64(seed_s, 0, UINT64_MAX, "--seed", &seed, &err) != TN_OK) ||
      (seeds_s && tn_parse_u64(seeds_s, 1, SYNTH_MAX_SEEDS, "--seeds", &seeds, &err) != TN_OK) ||
      (keep_s && cli_batch_keep_parse(keep_s, &keep, &err) != TN_OK) ||
      (time_limit_s &&
       tn_parse_double(time_limit_s, 0.001, 1e6, "--time-limit", &time_limit, &err) != TN_OK))
    return cli_usage("batch", "%s", err.msg);
  const char *delay = getenv("TENET_BATCH_TEST_DELAY_MS"); /* tests only */
  if (delay && *delay) o.test_delay_ms = (unsigned)strtoul(delay, NULL, 10);

  cli_batch_plan_t plan;
  tn_status_t st = manifest
                       ? cli_batch_manifest_load(manifest, &plan, &err)
                       : cli_batch_plan_from_lists(topos, colls, sizes, algos, seed, &plan, &err);
  if (st != TN_OK)
    return st == TN_PARSE || st == TN_INVAL ? cli_usage("batch", "%s", err.msg)
                                            : cli_report("batch", &err);
  plan.keep = keep;
  plan.time_limit_s = time_limit;
  if (!manifest) plan.seeds = (uint32_t)seeds;
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  batch_signal = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  cli_batch_stats_t stats;
  double t0 = tn_wall_seconds();
  st = cli_batch_run(&plan, &o, &stats, &err);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  cli_batch_plan_free(&plan);
  if (st != TN_OK) return cli_report("batch", &err);
  char dur[32];
  cli_fmt_duration(tn_wall_seconds() - t0, dur, sizeof dur);
  if (stats.interrupted) {
    fprintf(stderr,
            "tenet batch: interrupted: %zu of %zu cases complete, none half-written; run the "
            "same command to resume\n",
            stats.ran + stats.skipped - stats.failed, stats.cases);
    return batch_signal == SIGTERM ? 143 : 130;
  }
  fprintf(stderr,
          "tenet batch: %zu cases (%zu run, %zu done before, %zu failed, %zu n/a) in %s; "
          "summary in %s/summary.json and %s/summary.csv\n",
          stats.cases, stats.ran - stats.not_applicable, stats.skipped, stats.failed,
          stats.not_applicable, dur, out, out);
  return stats.failed ? 2 : 0;
}
