/* cli/workload.h — private to cli/: a step's plan, shared by `tenet workload` (which makes
 * the sets and writes the directory) and `tenet sim --workload` (which reads them back and
 * simulates the step). docs/workload.md. */
#ifndef TENET_CLI_WORKLOAD_H
#define TENET_CLI_WORKLOAD_H

#include <stdio.h>

#include "cli/cli.h"
#include "workload/workload.h"

#define CLI_WL_MANIFEST "workload.json"
#define CLI_WL_FORMAT 1 /* workload.json's "tenet_workload" */

/* The step runs: with tenet's sets (fallbacks as below), with Ring for every collective
 * (All-to-All: Direct, which Ring does not make), with Direct for every collective. */
enum { CLI_WL_TENET = 0, CLI_WL_RING = 1, CLI_WL_DIRECT = 2, CLI_WL_RUNS = 3 };

/* One distinct (collective, size) of the step's collectives over every rank. */
typedef struct cli_wl_set {
  tn_coll_t coll;
  uint64_t bytes;
  char name[96];     /* "allreduce-4194304-<16 hex digits>": its files sets/NAME.* */
  algo_t *algo;      /* tenet's */
  char method[16];   /* what made it */
  uint64_t time_ps;  /* simulated alone */
  bool cached;       /* read from the cache instead of synthesized */
  char source[4096]; /* the prefix of its files in the cache (read or stored there) or in
                        the directory replaced: they are linked, not rewritten; "" none */
  uint64_t read_id;  /* emit_chakra_read_id of algo, 0 until wanted: the cache's NAME.time
                        and the manifest's set_id name it (cli_wl_make_sets, cli_wl_write),
                        and cli_wl_read_dir checks it against the manifest's records */
  sim_alone_t alone; /* its run alone in tenet's step, as DIR's manifest holds it when that
                        was made by this tenet on this fabric for this very set (else
                        nranks 0): sim_step_opts_t.known */
  algo_t *base[2];   /* Ring (All-to-All: Direct) and Direct, for the comparison */
  char base_variant[2][48];
  tn_err_t err; /* a job's failure */
} cli_wl_set_t;

typedef struct cli_wl_plan {
  /* what the caller sets */
  const char *prefix, *topo_arg, *cache;
  bool aware;
  unsigned jobs;
  synth_opts_t so;
  cli_rundir_t d;
  /* what cli_wl_load and cli_wl_make_sets / cli_wl_read_dir fill */
  topo_t *t;
  workload_t *w;
  wl_colls_t cs;
  cli_wl_set_t *sets;
  uint32_t nsets;
  uint32_t *set_of; /* per collective: its set, or UINT32_MAX */
  const char **why; /* per collective without a set: why (a static string) */
  algo_t **fill[2]; /* per collective without a set: Ring, Direct on its ranks */
  uint64_t digest;  /* of the fabric as TOPO loads it */
  bool astra_ok;    /* network.yml and run.sh can be written */
  char astra_why[256];
  sim_step_result_t step[CLI_WL_RUNS];
} cli_wl_plan_t;

/* Loads TOPO and the workload PREFIX (one rank per NPU), checks it (wl_check) and groups
 * its collectives: the ones tenet makes (every rank, a synthesizable type) get a set slot,
 * the others their reason. */
tn_status_t cli_wl_load(cli_wl_plan_t *p, tn_err_t *err);
/* Makes every set (the cache first, then synthesis, p->jobs at a time). */
tn_status_t cli_wl_make_sets(cli_wl_plan_t *p, tn_err_t *err);
/* Reads the sets DIR/workload.json names for p's collectives (after cli_wl_load), checks
 * they are what the collectives need, and makes the comparison's Ring and Direct. */
tn_status_t cli_wl_read_dir(cli_wl_plan_t *p, const char *dir, tn_err_t *err);
/* Runs the step (after cli_wl_read_dir) with tenet's sets, with Ring and with Direct into
 * p->step, p->jobs (or all cores) at a time. */
tn_status_t cli_wl_predict(cli_wl_plan_t *p, tn_err_t *err);
/* Writes the directory p->d (cli_rundir_write): runs the step with tenet's sets into
 * p->step[CLI_WL_TENET] on one of p->jobs workers while the others write the sets, then the
 * files that quote its figures. */
tn_status_t cli_wl_write(cli_wl_plan_t *p, tn_err_t *err);
/* The summary of `tenet workload --json` (NULL when out of memory). */
struct cJSON *cli_wl_json(const cli_wl_plan_t *p);
/* Tables: the sets (name, collective, size, method, alone time, cache) and the
 * collectives left without a set. */
void cli_wl_print_sets(const cli_wl_plan_t *p, FILE *f);
void cli_wl_print_fallbacks(const cli_wl_plan_t *p, FILE *f);
void cli_wl_plan_free(cli_wl_plan_t *p);
/* `tenet sim -t TOPO PREFIX --workload DIR [--json]`: the step with DIR's sets, with Ring
 * and with Direct; per-collective times. Returns the exit code. */
int cli_wl_sim(const char *topo, const char *prefix, const char *dir, bool json);

#endif
