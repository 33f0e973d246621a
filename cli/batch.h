/* cli/batch.h — private to cli/: the sweep behind `tenet batch` (plan, manifest, per-case
 * results, summaries, merge). Declared here rather than in cli.h because only
 * cli/batch.c, cli/cmd_batch.c and the unit tests use it. */
#ifndef TENET_CLI_BATCH_H
#define TENET_CLI_BATCH_H

#include "cli/cli.h"

/* Which Chakra sets a sweep keeps (--keep). */
typedef enum cli_batch_keep {
  CLI_BATCH_KEEP_RESULTS = 0, /* none: only the results and summaries (the default) */
  CLI_BATCH_KEEP_BEST = 1,    /* the fastest algorithm's per fabric, collective and size */
  CLI_BATCH_KEEP_ALL = 2,     /* every case's */
} cli_batch_keep_t;

/* "results", "best" or "all"; TN_INVAL naming --keep otherwise. */
tn_status_t cli_batch_keep_parse(const char *s, cli_batch_keep_t *keep, tn_err_t *err);
const char *cli_batch_keep_name(cli_batch_keep_t keep);

/* A sweep: fabrics x collectives x sizes x algorithms, in that nesting order. */
typedef struct cli_batch_plan {
  char **topos;  /* TOPO arguments as given (files, shipped names or KIND-DIMS) */
  char **labels; /* folder names: cli_topo_label of each, distinct */
  size_t ntopos;
  tn_coll_t *colls;
  size_t ncolls;
  uint64_t *sizes;
  size_t nsizes;
  char **algos;
  size_t nalgos;
  uint64_t seed;
  uint32_t seeds;        /* best of this many seeds per case (synth --seeds; 0 or 1: one) */
  cli_batch_keep_t keep; /* part of the sweep: a folder keeps one kind of output */
  double time_limit_s;   /* the MILP's wall-clock safety net (0: its default); not part of
                            a case's inputs: the MILP's work limit decides its result */
} cli_batch_plan_t;

typedef struct cli_batch_case {
  size_t index;
  size_t topo, coll, size, algo; /* indices into the plan's lists */
} cli_batch_case_t;

void cli_batch_plan_free(cli_batch_plan_t *p);
/* Number of cases: the product of the four list lengths (TN_LIMIT above 10^7). */
tn_status_t cli_batch_count(const cli_batch_plan_t *p, size_t *n, tn_err_t *err);
/* Case i of the fixed order (topology slowest, algorithm fastest). */
cli_batch_case_t cli_batch_case(const cli_batch_plan_t *p, size_t i);
/* Folder of a case relative to the output folder:
 * "cases/<label>/<coll>/<size>/<algo>". */
void cli_batch_case_dir(const cli_batch_plan_t *p, const cli_batch_case_t *c, char *buf,
                        size_t len);
/* Builds a plan from the flag values (each a comma list); checks every topology names
 * something loadable and labels are distinct. TN_INVAL naming the flag. */
tn_status_t cli_batch_plan_from_lists(const char *topos, const char *colls, const char *sizes,
                                      const char *algos, uint64_t seed, cli_batch_plan_t *p,
                                      tn_err_t *err);
/* Parses a manifest (text; see cmd_batch's --help): lines "KEY VALUE" with keys topos,
 * colls, sizes, algos (comma lists; a key may repeat to extend its list), seed and seeds
 * (best of N, 1..1000); '#' starts a comment. Relative topology paths with a '/' are taken relative
 * to the manifest's folder when they exist there. what names the file in messages
 * ("sweep.txt:3: unknown key 'topo' (did you mean 'topos'?)"). */
tn_status_t cli_batch_manifest_parse(const char *text, const char *what, cli_batch_plan_t *p,
                                     tn_err_t *err);
tn_status_t cli_batch_manifest_load(const char *path, cli_batch_plan_t *p, tn_err_t *err);

/* The plan as the JSON of DIR/batch.json (without the shard), malloc'ed; and back. */
tn_status_t cli_batch_plan_json(const cli_batch_plan_t *p, char **out, tn_err_t *err);
tn_status_t cli_batch_plan_parse_json(const char *text, const char *what, cli_batch_plan_t *p,
                                      tn_err_t *err);

/* ---- cost estimates and shards ------------------------------------------ */
/* What the plan's cost estimates need of a fabric; loaded once per topology. */
typedef struct cli_batch_fabric {
  uint64_t digest; /* cli_topo_digest: part of every case's inputs key */
  bool digested;   /* false: unreadable (its cases never count as done) */
  bool loaded;     /* false: it does not load (its cases fail at once) */
  uint32_t npus, links;
  uint64_t bounds_us; /* topo_bounds_cost_us: every case computes the bounds */
} cli_batch_fabric_t;

/* Loads every topology of the plan (*out: p->ntopos entries, caller frees). A malformed
 * topology file is an error (TN_PARSE, as every command reports it); any other topology
 * that does not load is not: its entry says so, and its cases fail. */
tn_status_t cli_batch_fabrics(const cli_batch_plan_t *p, cli_batch_fabric_t **out, tn_err_t *err);
/* The key of case c's inputs as 16 hex digits (buf: 17 bytes): a tn_fnv1a64 of the
 * fabric's digest (the file's bytes or the generator spec), the collective, the size, the
 * algorithm, the seed and (when above 1) the seeds tried. result.json records it; a result counts
 * as done only when its key is the current one, so a changed input reruns the case. */
void cli_batch_case_inputs(const cli_batch_plan_t *p, const cli_batch_fabric_t *f,
                           const cli_batch_case_t *c, char buf[17]);
/* Estimated run time of case c in microseconds of one core, from the fabric's NPUs,
 * links and bounds cost, the collective and the algorithm (the size hardly matters: the
 * planners' chunk counts and the message counts do not grow with it). Deterministic and
 * >= 1; meant to rank cases, within a factor of about 3. O(1). */
uint64_t cli_batch_case_cost_us(const cli_batch_plan_t *p, const cli_batch_fabric_t *f,
                                const cli_batch_case_t *c);
/* Deals the n cases of the plan to nshards shards by estimated cost, longest processing
 * time first: units in decreasing cost (ties: lower case number first), each to the shard
 * with the least cost so far (ties: the lower shard). A unit is a case, or with by_group
 * a group (one fabric, collective and size: every algorithm of it, which --keep best
 * compares). Fills shard_of[i] for every case. Every shard computes the same deal on its
 * own. TN_NOMEM. O(n log nshards). */
tn_status_t cli_batch_deal(const cli_batch_plan_t *p, const cli_batch_fabric_t *f, size_t n,
                           uint32_t nshards, bool by_group, uint32_t *shard_of, tn_err_t *err);

/* Options of one batch run. */
typedef struct cli_batch_opts {
  const char *out_dir;
  unsigned jobs;               /* 0 = all cores */
  uint32_t shard, nshards;     /* this shard's cases of cli_batch_deal (nshards >= 1) */
  volatile sig_atomic_t *stop; /* set (to the signal number) to stop scheduling */
  bool tty;                    /* progress bar (else one line per case) */
  unsigned test_delay_ms;      /* tests only: sleep this long before each case */
} cli_batch_opts_t;

typedef struct cli_batch_stats {
  size_t cases; /* of this shard */
  size_t ran, skipped, failed;
  size_t not_applicable; /* of ran: the algorithm does not make the collective */
  bool interrupted;      /* stopped before every case of the shard was complete */
} cli_batch_stats_t;

/* Runs the shard's cases, costliest first (skipping complete ones: an ok result.json
 * whose inputs key is the current one), then writes summary.csv and
 * summary.json of the shard's cases in case order (not when interrupted). A failing case
 * is counted in stats->failed; the return value is only for errors that stop the batch
 * (output folder unusable, a different sweep already in it). */
tn_status_t cli_batch_run(const cli_batch_plan_t *p, const cli_batch_opts_t *o,
                          cli_batch_stats_t *stats, tn_err_t *err);

/* Joins shard folders (same sweep) into out_dir's summary.csv, summary.json and
 * batch.json; every case must have a result in one of them. */
tn_status_t cli_batch_merge(const char *const *dirs, size_t ndirs, const char *out_dir,
                            size_t *failed, tn_err_t *err);

#endif
