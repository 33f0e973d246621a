/* cli/cmd_workload.c — `tenet workload`: reads a Chakra workload (a training step, one file
 * per rank), synthesizes one algorithm per distinct (collective, size) of its collectives
 * that span every rank — reused from the cache by content, made in parallel — and writes
 * a directory ASTRA-sim runs the step from: the sets, the per-node YAML naming each
 * collective's set, a system JSON that uses it, a copy of the workload, the network and
 * memory files, run.sh, and workload.json, the manifest `tenet sim --workload` reads
 * (docs/workload.md). `tenet workload example` writes example steps. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/workload.h"
#include "emit/emit.h"

static const char help[] =
    "usage: tenet workload -t TOPO PREFIX -o DIR [-a ALGO] [-j N] [--seed N] [--chunks K]\n"
    "                      [--cache CDIR] [--backend aware|unaware] [--json]\n"
    "       tenet workload example KIND -n NPUS -o PREFIX [--layers L] [-s SIZE]\n"
    "                      [--compute-us U] [--seed N]\n"
    "\n"
    "Reads the Chakra workload PREFIX.0.et ... PREFIX.<n-1>.et (one file per NPU of TOPO, as\n"
    "ASTRA-sim reads it: COMP nodes with duration_micros, COMM_COLL nodes with comm_type and\n"
    "comm_size, COMM_SEND / COMM_RECV, data and control dependencies; see docs/workload.md),\n"
    "takes the collective nodes that share a node id across ranks as one collective, and\n"
    "synthesizes one algorithm per distinct (collective, size) with -a (default auto), N at a\n"
    "time. It writes DIR (whole or not at all; a DIR an earlier run wrote is replaced):\n"
    "  sets/NAME.<rank>.et      one set per distinct collective; NAME holds a digest of the\n"
    "                           fabric, collective, size, algorithm, seed, chunks and\n"
    "                           tenet's sources, so a set found under that name in CDIR\n"
    "                           or in the DIR being replaced is reused instead of\n"
    "                           synthesized again\n"
    "  per_node.yaml            node id: sets/NAME, for ASTRA-sim's\n"
    "                           per-node-custom-implementation\n"
    "  system.json              ASTRA-sim's system file: that YAML, and ASTRA-sim's own\n"
    "                           ring (All-to-All: direct) for the collectives left to it\n"
    "  workload/NAME.<rank>.et  a copy of the workload; comm_group.json when it has\n"
    "                           process groups\n"
    "  network.yml, remote_memory.json, run.sh   as 'tenet astra' writes them (only for a\n"
    "                           fabric ASTRA-sim's backend expresses; else left out, and\n"
    "                           the reason is printed)\n"
    "  workload.json            the manifest: every collective, its set or why it has none,\n"
    "                           tenet's predicted step, and each set's run alone in it\n"
    "                           (read by 'tenet sim --workload', which then need not\n"
    "                           simulate those again)\n"
    "Collectives tenet does not synthesize are left to ASTRA-sim and listed: BROADCAST\n"
    "(ASTRA-sim replays its duration) and collectives of a process group that is not every\n"
    "rank (tenet's sets span every rank).\n"
    "\n"
    "  -t, --topo TOPO       topology file, shipped name or KIND-DIMS\n"
    "  -o, --out DIR         the directory to write\n"
    "  -a, --algo ALGO       auto (default) | greedy | trees | forest | dims | milp | ring\n"
    "                        | direct | twostep, as 'tenet synth'\n"
    "  -j, --jobs N          syntheses at a time (default: the number of cores)\n"
    "      --seed N          the greedy's tie-breaking seed (default 1)\n"
    "      --chunks K        chunks per NPU, as 'tenet synth'\n"
    "      --cache CDIR      also look sets up in CDIR and store new ones there, each\n"
    "                        with its simulated time (NAME.time, trusted only for the\n"
    "                        set whose id it names)\n"
    "      --backend B       aware (default) | unaware: ASTRA-sim's network model\n"
    "      --json            print one JSON object instead of a summary\n"
    "  -h, --help            this help\n"
    "\n"
    "example KIND writes an example step: dp (per layer a backward COMP and an All-Reduce of\n"
    "its gradients overlapping the next layer, then an All-Gather), tp (per layer\n"
    "All-Gather, COMP, Reduce-Scatter), pp (micro-batches passed rank to rank with SEND /\n"
    "RECV) or mixed (a compute chain with one collective of every kind and size after each\n"
    "COMP, drawn from --seed).\n"
    "  -n, --npus NPUS       ranks\n"
    "  -o, --out PREFIX      files PREFIX.<rank>.et\n"
    "      --layers L        layers (pp: micro-batches; mixed: collectives); default 4\n"
    "  -s, --size SIZE       each collective's size (mixed: the largest); default 64MiB\n"
    "      --compute-us U    each COMP's duration in microseconds; default 1000\n"
    "\n"
    "Exit 1: a bad workload (a missing rank, a cycle, a collective whose size differs\n"
    "between ranks, an unmatched SEND or RECV, a node type ASTRA-sim does not simulate),\n"
    "named by file, rank and node.\n";

typedef struct wl_args {
  const char *topo, *out, *algo, *jobs, *seed, *chunks, *cache, *backend;
  const char *npus, *layers, *size, *compute;
  const char *pos[2];
  size_t npos;
  bool json, help;
} wl_args_t;

static tn_status_t parse_args(int argc, char **argv, wl_args_t *a, tn_err_t *err) {
  const cli_opt_t opts[] = {
      {"topo", 't', &a->topo, NULL},     {"out", 'o', &a->out, NULL},
      {"output", 0, &a->out, NULL},      {"algo", 'a', &a->algo, NULL},
      {"jobs", 'j', &a->jobs, NULL},     {"seed", 0, &a->seed, NULL},
      {"chunks", 0, &a->chunks, NULL},   {"cache", 0, &a->cache, NULL},
      {"backend", 0, &a->backend, NULL}, {"json", 0, NULL, &a->json},
      {"npus", 'n', &a->npus, NULL},     {"layers", 0, &a->layers, NULL},
      {"size", 's', &a->size, NULL},     {"compute-us", 0, &a->compute, NULL},
      {"help", 'h', NULL, &a->help},
  };
  return cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], a->pos, 2, &a->npos, err);
}

/* ---- tenet workload example ---------------------------------------------------- */

static int run_example(const wl_args_t *a) {
  tn_err_t err = {0};
  wl_example_t kind;
  wl_example_opts_t o = {0, 4, 64ull << 20, 1000, 1};
  uint64_t v = 0;
  workload_t *w = NULL;
  if (a->npos != 2 || !wl_example_parse(a->pos[1], &kind))
    return cli_usage("workload", "example needs KIND: dp, tp, pp or mixed");
  if (!a->npus || !a->out) return cli_usage("workload", "example needs -n NPUS and -o PREFIX");
  if (a->topo || a->algo || a->jobs || a->chunks || a->cache || a->backend || a->json)
    return cli_usage("workload", "example takes -n, -o, --layers, -s, --compute-us and --seed");
  if (tn_parse_u64(a->npus, 2, TOPO_MAX_NPUS, "--npus", &v, &err) != TN_OK) goto fail;
  o.npus = (uint32_t)v;
  if (a->layers) {
    if (tn_parse_u64(a->layers, 1, 100000, "--layers", &v, &err) != TN_OK) goto fail;
    o.layers = (uint32_t)v;
  }
  if (a->size && tn_parse_size(a->size, &o.bytes, &err) != TN_OK) goto fail;
  if (a->compute &&
      tn_parse_u64(a->compute, 0, WL_MAX_DURATION_US, "--compute-us", &o.compute_us, &err) != TN_OK)
    goto fail;
  if (a->seed && tn_parse_u64(a->seed, 0, UINT64_MAX, "--seed", &o.seed, &err) != TN_OK) goto fail;
  if (wl_example(kind, &o, &w, &err) != TN_OK || emit_chakra_write_wl(w, a->out, &err) != TN_OK)
    goto fail;
  printf("wrote %s.0.et .. %s.%u.et: the %s example step (%u ranks, %u %s)\n", a->out, a->out,
         o.npus - 1, wl_example_name(kind), o.npus, o.layers,
         kind == WL_EX_PP      ? "micro-batches"
         : kind == WL_EX_MIXED ? "collectives"
                               : "layers");
  wl_free(w);
  return 0;
fail:
  wl_free(w);
  return cli_report("workload", &err);
}

/* ---- tenet workload -------------------------------------------------------------- */

typedef struct job {
  wl_args_t *a;
  cli_wl_plan_t *p;
  tn_err_t err;
} job_t;

static void print_summary(const cli_wl_plan_t *p, const char *dir) {
  uint32_t made = 0, reused = 0;
  for (uint32_t i = 0; i < p->nsets; i++)
    p->sets[i].cached ? reused++ : made++;
  printf("wrote %s: %u collectives of %s on %s (%u NPUs); %u sets (%u synthesized, %u from "
         "the cache)\n",
         dir, p->cs.n, p->prefix, p->t->name, p->t->npus, p->nsets, made, reused);
  cli_wl_print_sets(p, stdout);
  cli_wl_print_fallbacks(p, stdout);
  printf("tenet predicts the step at %.3f us (exposed communication %.3f us); 'tenet sim -t "
         "%s %s --workload %s' compares it with Ring and Direct\n",
         (double)p->step[CLI_WL_TENET].step_ps / 1e6,
         (double)p->step[CLI_WL_TENET].exposed_ps / 1e6, p->topo_arg, p->prefix, dir);
  if (p->astra_ok)
    printf("run %s/run.sh (ASTRA_SIM=path/to/AstraSim_Analytical_Congestion_%s)\n", dir,
           p->aware ? "Aware" : "Unaware");
  else
    printf("no network.yml or run.sh: %s\n", p->astra_why);
}

int cmd_workload(int argc, char **argv) {
  wl_args_t a = {0};
  tn_err_t err = {0};
  cli_wl_plan_t p = {0};
  int code = 0;
  if (parse_args(argc, argv, &a, &err) != TN_OK) return cli_report("workload", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (a.npos >= 1 && strcmp(a.pos[0], "example") == 0) return run_example(&a);
  if (!a.topo || a.npos != 1 || !a.out)
    return cli_usage("workload", "-t TOPO, PREFIX and -o DIR are required");
  if (a.npus || a.layers || a.size || a.compute)
    return cli_usage("workload", "-n, --layers, -s and --compute-us belong to 'example'");
  if (a.backend && strcmp(a.backend, "aware") != 0 && strcmp(a.backend, "unaware") != 0) {
    tn_err_set(&err, TN_INVAL, "--backend '%s': expected aware or unaware", a.backend);
    goto fail;
  }
  struct stat sb; /* a cache that cannot hold sets is refused before any synthesis */
  if (a.cache && stat(a.cache, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
    tn_err_set(&err, TN_INVAL, "--cache %s: exists and is not a directory", a.cache);
    goto fail;
  }
  p.prefix = a.pos[0];
  p.topo_arg = a.topo;
  p.cache = a.cache;
  p.aware = !a.backend || strcmp(a.backend, "aware") == 0;
  p.jobs = cli_cores();
  if ((a.jobs && cli_parse_jobs(a.jobs, &p.jobs, &err) != TN_OK) ||
      cli_synth_opts(a.algo, a.seed, a.chunks, &p.so, &err) != TN_OK ||
      cli_rundir_plan(&p.d, a.out, "workload", CLI_WL_MANIFEST, &err) != TN_OK ||
      cli_wl_load(&p, &err) != TN_OK || cli_wl_make_sets(&p, &err) != TN_OK ||
      cli_wl_write(&p, &err) != TN_OK)
    goto fail;
  if (a.json)
    code = cli_json_print("workload", cli_wl_json(&p));
  else
    print_summary(&p, p.d.dir);
  goto done;
fail:
  code = cli_report("workload", &err);
done:
  cli_wl_plan_free(&p);
  return code;
}
