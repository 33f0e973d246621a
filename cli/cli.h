/* cli — the `tenet` command: argument parsing, subcommands, tables, plots. The only
 * module that prints or exits. Private to cli/ (no other module includes it). */
#ifndef TENET_CLI_H
#define TENET_CLI_H

#include <stdio.h>

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"

/* Entry point: returns the process exit code (ARCHITECTURE.md §6). */
int cli_main(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand's name. Each returns an exit code. */
int cmd_topo(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_et(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* ---- option parsing ----------------------------------------------------- */
/* One option: --long (and -s when short_name != 0). A value option stores its argument
 * in *value; a flag sets *flag. Accepts "--long VALUE", "--long=VALUE" and "-s VALUE". */
typedef struct cli_opt {
  const char *long_name;
  char short_name;
  const char **value; /* non-NULL: takes a value */
  bool *flag;         /* non-NULL: a flag */
} cli_opt_t;

/* Parses argv[1..] (argv[0] is the command's name) into opts and positional arguments
 * (up to max_pos, stored in pos). Unknown options and missing values are TN_INVAL errors
 * naming the option, with a did-you-mean when one is close. */
tn_status_t cli_parse(int argc, char **argv, const cli_opt_t *opts, size_t nopts,
                      const char **pos, size_t max_pos, size_t *npos, tn_err_t *err);

/* Prints "tenet CMD: message" for err on stderr and returns its exit code. */
int cli_report(const char *cmd, const tn_err_t *err);
/* Prints a usage error "tenet CMD: ..." (+ "see 'tenet CMD --help'") and returns 1. */
int cli_usage(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Levenshtein distance, for did-you-mean suggestions. */
size_t cli_edit_distance(const char *a, const char *b);

/* Directory of the shipped topologies (TENET_TOPOLOGY_DIR, overridable with the
 * TENET_TOPOLOGIES environment variable). */
const char *cli_topology_dir(void);
/* Resolves and loads a TOPO argument (a file or a shipped name). Caller frees. */
tn_status_t cli_load_topo(const char *arg, topo_t **out, tn_err_t *err);

/* ---- synthesis pipeline (shared by synth, compare, batch, demo) ---------- */
typedef struct cli_synth_opts {
  const char *algo;        /* "greedy" (default), "milp", "ring", "direct" */
  uint64_t seed;
  uint32_t chunks_per_npu; /* 0 = automatic */
  double time_limit_s;     /* MILP */
  bool verbose;
} cli_synth_opts_t;

typedef struct cli_synth_out {
  algo_t *algo;            /* caller frees */
  double synth_ms;         /* wall time of synthesis and lowering */
  uint64_t predicted_ps;   /* planner's predicted time (0 for baselines) */
  const char *milp_status; /* "optimal" / "feasible" / "timeout" or NULL */
} cli_synth_out_t;

/* Refuses disconnected fabrics (TN_INFEASIBLE), then builds the algorithm. */
tn_status_t cli_synthesize(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const cli_synth_opts_t *opts, cli_synth_out_t *out, tn_err_t *err);

#endif
