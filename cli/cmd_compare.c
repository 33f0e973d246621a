/* cli/cmd_compare.c — `tenet compare`: every algorithm at every size on one fabric and
 * collective, scored by the simulator against the lower bound and Ring; as a table, JSON,
 * CSV and a busbw-against-size plot. cli_compare_run is shared with `tenet demo`. */
#include "cli/cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct compare_ctx {
  const cli_compare_spec_t *spec;
  cli_result_t *rows;
  topo_t **topos; /* one copy per worker, made on first use */
  tn_status_t *clone_st;
  volatile sig_atomic_t stop;
  pthread_mutex_t mu;
  cli_progress_t progress;
} compare_ctx_t;

static void compare_job(void *arg, size_t i, unsigned worker) {
  compare_ctx_t *c = arg;
  const cli_compare_spec_t *sp = c->spec;
  size_t si = i / sp->nalgos, ai = i % sp->nalgos;
  cli_result_t *r = &c->rows[i];
  tn_err_t e = {0};
  if (c->topos[worker] == NULL && c->clone_st[worker] == TN_OK)
    c->clone_st[worker] = topo_clone(sp->topo, &c->topos[worker], &e);
  double t0 = tn_wall_seconds();
  char prefix[4096], size_s[32];
  const char *chakra = NULL;
  tn_fmt_size(sp->sizes[si], size_s, sizeof size_s);
  if (sp->chakra_dir != NULL && sp->sizes[si] == sp->chakra_size) {
    snprintf(prefix, sizeof prefix, "%s/%s/%s-%s/%s", sp->chakra_dir, sp->label,
             tn_coll_name(sp->coll), size_s, sp->algos[ai]);
    chakra = prefix;
  }
  if (c->clone_st[worker] != TN_OK) {
    memset(r, 0, sizeof *r);
    r->ok = false;
    r->status = TN_NOMEM;
    snprintf(r->error, sizeof r->error, "cannot copy the fabric: out of memory");
  } else {
    cli_run_one(c->topos[worker], sp->label, sp->coll, sp->sizes[si], sp->algos[ai], sp->seed,
                sp->seeds, sp->time_limit_s, chakra, r, &e);
  }
  pthread_mutex_lock(&c->mu);
  if (!r->ok && sp->stop_on_error) c->stop = 1;
  if (sp->progress) {
    char item[96];
    snprintf(item, sizeof item, "%s %s %s", sp->label, size_s, sp->algos[ai]);
    cli_progress_step(&c->progress, item, r->ok, false, tn_wall_seconds() - t0);
  }
  pthread_mutex_unlock(&c->mu);
}

tn_status_t cli_compare_run(const cli_compare_spec_t *sp, cli_result_t **rows, size_t *nrows,
                            tn_err_t *err) {
  *rows = NULL;
  *nrows = 0;
  size_t n = sp->nsizes * sp->nalgos;
  unsigned jobs = sp->jobs ? sp->jobs : cli_cores();
  compare_ctx_t c = {.spec = sp};
  tn_status_t st = tn_calloc(n, sizeof *c.rows, &c.rows, err);
  if (st == TN_OK) st = tn_calloc(jobs, sizeof *c.topos, &c.topos, err);
  if (st == TN_OK) st = tn_calloc(jobs, sizeof *c.clone_st, &c.clone_st, err);
  if (st != TN_OK) goto done;
  for (size_t i = 0; i < n; i++)
    c.rows[i].ok = false, c.rows[i].speedup_vs_ring = -1.0;
  pthread_mutex_init(&c.mu, NULL);
  cli_progress_init(&c.progress, "compare", n, isatty(STDERR_FILENO) == 1, false);
  st = cli_parallel(n, jobs, compare_job, &c, &c.stop, err);
  cli_progress_finish(&c.progress);
  pthread_mutex_destroy(&c.mu);
  if (st != TN_OK) goto done;
  for (size_t i = 0; i < n && sp->stop_on_error; i++) {
    if (!c.rows[i].ok && c.rows[i].error[0]) {
      char b[32];
      tn_status_t rst = c.rows[i].status != TN_OK ? c.rows[i].status : TN_INTERNAL;
      st = tn_err_set(err, rst, "%s %s %s %s: %s", sp->label, tn_coll_name(sp->coll),
                      tn_fmt_size(c.rows[i].size_bytes, b, sizeof b), c.rows[i].algorithm,
                      c.rows[i].error);
      break;
    }
  }
  if (st == TN_OK) {
    cli_results_set_speedups(c.rows, n);
    *rows = c.rows;
    *nrows = n;
    c.rows = NULL;
  }
done:
  for (unsigned w = 0; c.topos && w < jobs; w++)
    topo_free(c.topos[w]);
  free(c.topos);
  free(c.clone_st);
  free(c.rows);
  return st;
}

static const char *const compare_help =
    "usage: tenet compare -t TOPO -c COLL [--sizes LIST] [--algos LIST] [--json]\n"
    "                     [--csv FILE] [--plot FILE.png|FILE.svg] [--plot-y auto|log|linear]\n"
    "                     [--seed N] [--seeds N] [-j N] [--time-limit S]\n\n"
    "Synthesizes every algorithm at every size on one fabric, simulates each and prints\n"
    "time, algbw, busbw (GB/s = 2^30 B/s), the lower bound, the ratio to it and the\n"
    "speed-up over Ring.\n\n"
    "  -t, --topo TOPO      topology file, shipped name (mesh-8x8) or KIND-DIMS\n"
    "                       (ring-8, mesh3d-4x4x4: generated at 50 GB/s, 500 ns)\n"
    "  -c, --coll COLL      allgather, reducescatter, allreduce or alltoall\n"
    "  --sizes LIST         1MiB,64MiB,1GiB or a power-of-two range 1KiB..1GiB\n"
    "                       (default 1KiB..1GiB)\n"
    "  --algos LIST         of auto, greedy, trees, forest, dims, ring, direct, twostep, milp\n"
    "                       (default auto,ring,direct, for alltoall auto,direct; auto\n"
    "                       rows name its choice)\n"
    "  --json               print {\"rows\":[...]} instead of the table\n"
    "  --csv FILE           also write the rows as CSV (all or nothing)\n"
    "  --plot FILE          busbw against size, one line per algorithm, the bound dashed\n"
    "                       (.png or .svg); each algorithm has its own marker and dash\n"
    "                       pattern, so lines that overlap stay apart (at most 8)\n"
    "  --plot-y SCALE       the busbw axis: auto (default: log when busbw spans more\n"
    "                       than 10x, else linear), log or linear\n"
    "  --seed N             greedy tie-breaking seed (default 1)\n"
    "  --seeds N            best of N seeds (1..1000) per greedy, milp or auto row, as\n"
    "                       'tenet synth --seeds'; --json rows then give seed and\n"
    "                       seeds_tried\n"
    "  --time-limit S       MILP wall-clock safety net in seconds per run (default 60);\n"
    "                       the MILP stops on its work limit first (see 'tenet synth\n"
    "                       --help': 1000 nodes, simplex iterations scaled to the model)\n"
    "  -j, --jobs N         runs in parallel (default: all cores)\n\n"
    "Exit: 0 ok, 1 bad arguments, 2 a run could not be done, 3 internal error.\n";

/* --plot-y: auto, log or linear. */
static tn_status_t parse_ploty(const char *s, cli_plot_y_t *out, tn_err_t *err) {
  static const char *const names[] = {"auto", "linear", "log"};
  for (int k = 0; k < 3; k++)
    if (strcmp(s, names[k]) == 0) {
      *out = (cli_plot_y_t)k;
      return TN_OK;
    }
  return tn_err_set(err, TN_INVAL, "--plot-y '%s': auto, log or linear", s);
}

int cmd_compare(int argc, char **argv) {
  const char *topo_arg = NULL, *coll_s = NULL, *sizes_s = "1KiB..1GiB";
  const char *algos_s = NULL, *csv = NULL, *plot = NULL, *seed_s = NULL;
  const char *jobs_s = NULL, *time_limit_s = NULL, *ploty_s = NULL, *seeds_s = NULL;
  bool json = false, help = false;
  const cli_opt_t opts[] = {
      /* --topo and --coll as in synth, sim and verify; the long forms too */
      {"topo", 't', &topo_arg, NULL},
      {"coll", 'c', &coll_s, NULL},
      {"topology", 0, &topo_arg, NULL},
      {"collective", 0, &coll_s, NULL},
      {"sizes", 0, &sizes_s, NULL},
      {"algos", 0, &algos_s, NULL},
      {"json", 0, NULL, &json},
      {"csv", 0, &csv, NULL},
      {"plot", 0, &plot, NULL},
      {"seed", 0, &seed_s, NULL},
      {"plot-y", 0, &ploty_s, NULL},
      {"seeds", 0, &seeds_s, NULL},
      {"jobs", 'j', &jobs_s, NULL},
      {"help", 'h', NULL, &help},
      {"time-limit", 0, &time_limit_s, NULL},
  };
  tn_err_t err = {0};
  const char *pos[1];
  size_t npos = 0;
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &npos, &err) != TN_OK)
    return cli_usage("compare", "%s", err.msg);
  if (help) {
    fputs(compare_help, stdout);
    return 0;
  }
  if (topo_arg == NULL) return cli_usage("compare", "missing -t TOPO");
  if (coll_s == NULL) return cli_usage("compare", "missing -c COLL");
  cli_compare_spec_t sp = {.seed = CLI_DEFAULT_SEED, .stop_on_error = true};
  char **algos = NULL;
  uint64_t *sizes = NULL, seed = CLI_DEFAULT_SEED, seeds = 0;
  cli_plot_y_t yscale = CLI_PLOT_Y_AUTO;
  topo_t *t = NULL;
  cli_result_t *rows = NULL;
  size_t nrows = 0;
  char *out = NULL, label[128];
  int rc = 0;
  tn_status_t pst = tn_coll_parse(coll_s, &sp.coll, &err);
  /* No Ring All-to-All: its default rows are auto and direct. */
  if (algos_s == NULL) algos_s = sp.coll == TN_ALLTOALL ? "auto,direct" : "auto,ring,direct";
  if (pst != TN_OK || cli_parse_sizes(sizes_s, &sizes, &sp.nsizes, &err) != TN_OK ||
      cli_parse_algos(algos_s, &algos, &sp.nalgos, &err) != TN_OK ||
      (seed_s && tn_parse_u64(seed_s, 0, UINT64_MAX, "--seed", &seed, &err) != TN_OK) ||
      (seeds_s && tn_parse_u64(seeds_s, 1, SYNTH_MAX_SEEDS, "--seeds", &seeds, &err) != TN_OK) ||
      (jobs_s && cli_parse_jobs(jobs_s, &sp.jobs, &err) != TN_OK) ||
      (time_limit_s && tn_parse_double(time_limit_s, 0.001, 1e6, "--time-limit", &sp.time_limit_s,
                                       &err) != TN_OK) ||
      (plot && cli_plot_device(plot, &(const char *){NULL}, &err) != TN_OK) ||
      (ploty_s && parse_ploty(ploty_s, &yscale, &err) != TN_OK) ||
      (ploty_s && !plot && tn_err_set(&err, TN_INVAL, "--plot-y needs --plot FILE") != TN_OK)) {
    rc = cli_usage("compare", "%s", err.msg);
    goto done;
  }
  if (cli_load_topo_spec(topo_arg, &t, &err) != TN_OK) {
    rc = cli_report("compare", &err);
    goto done;
  }
  cli_topo_label(topo_arg, label, sizeof label);
  sp.topo = t;
  sp.label = label;
  sp.sizes = sizes;
  sp.algos = (const char *const *)algos;
  sp.seed = seed;
  sp.seeds = (uint32_t)seeds;
  sp.progress = true;
  tn_status_t st = cli_compare_run(&sp, &rows, &nrows, &err);
  /* Both files or neither: the plot (the one more likely to fail) first, and it goes
   * again when the CSV cannot be written. Each is written whole or not at all. */
  if (st == TN_OK && plot) {
    char title[256];
    snprintf(title, sizeof title, "%s: %s, %u NPUs", label, tn_coll_name(sp.coll), t->npus);
    st = cli_plot_busbw(rows, nrows, title, plot, yscale, &err);
  }
  if (st == TN_OK && csv && (st = cli_results_csv(rows, nrows, csv, &err)) != TN_OK && plot)
    remove(plot);
  if (st == TN_OK && json) {
    st = cli_results_json(rows, nrows, &out, &err);
    if (st == TN_OK) printf("%s\n", out);
  } else if (st == TN_OK) {
    char why[200] = "see docs/bounds.md";
    topo_bounds_t bd;
    tn_err_t be = {0};
    if (topo_bounds_compute(t, &bd, &be) == TN_OK)
      topo_bound_explain(&bd, sp.coll, why, sizeof why);
    printf("%s, %s, %u NPUs (lower bound: %s)\n", label, tn_coll_name(sp.coll), t->npus, why);
    st = cli_results_table(rows, nrows, stdout, &err);
  }
  if (st != TN_OK) rc = cli_report("compare", &err);
done:
  free(out);
  free(rows);
  free(sizes);
  cli_list_free(algos, sp.nalgos);
  topo_free(t);
  return rc;
}
