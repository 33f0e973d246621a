/* cli/cmd_demo.c — `tenet demo`: the main job on embedded defaults, the setup of
 * "Towards a Standardized Representation for Deep Learning Collective Algorithms" (64
 * NPUs as an 8x8 and a 4x4x4 mesh, 50 GB/s, 500 ns links; All-Gather and All-Reduce;
 * greedy against Ring and Direct from 1 KiB to 1 GiB), and All-to-All against Direct:
 * tables, plots and Chakra sets. */
#include "cli/cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const demo_help =
    "usage: tenet demo [-o DIR] [--quick] [-j N]\n\n"
    "Runs the paper's setup with no input files: 64 NPUs as mesh-8x8 and mesh3d-4x4x4\n"
    "(50 GB/s, 500 ns links), All-Gather and All-Reduce, greedy vs Ring vs Direct, and\n"
    "All-to-All, greedy vs Direct, at sizes 1KiB..1GiB. Prints one comparison table per fabric and "
    "collective and writes\n"
    "into DIR (default ./tenet-demo):\n"
    "  <fabric>-<collective>.png and .svg   busbw against size, the bound dashed\n"
    "  mesh-8x8-allgather-64MiB-{greedy,ring}-links.png   per-link utilization\n"
    "  results.csv, results.json            every row of the tables\n"
    "  chakra/<fabric>/<coll>-64MiB/<algo>.<rank>.et   Chakra sets\n"
    "  astra-ring-8/   what 'tenet astra' writes for an All-Gather of 1 MiB on ring-8:\n"
    "                  ASTRA-sim's congestion-aware backend runs it as it is (run.sh)\n\n"
    "  -o, --output DIR  output folder (default tenet-demo)\n"
    "  --quick           three sizes (4KiB, 256KiB, 16MiB; Chakra sets of 16MiB): seconds\n"
    "  -j, --jobs N      runs in parallel (default: all cores)\n";

typedef struct demo_fabric {
  const char *label, *kind, *dims;
} demo_fabric_t;

static const demo_fabric_t demo_fabrics[] = {
    {"mesh-8x8", "mesh", "8x8"},
    {"mesh3d-4x4x4", "mesh", "4x4x4"},
};
static const tn_coll_t demo_colls[] = {TN_ALLGATHER, TN_ALLREDUCE, TN_ALLTOALL};
static const char *const demo_algos[] = {"greedy", "ring", "direct"};
/* All-to-All has no Ring. */
static const char *const demo_a2a_algos[] = {"greedy", "direct"};

/* Appends rows to the collected ones (for results.csv/json). */
static tn_status_t collect(cli_result_t **all, size_t *nall, const cli_result_t *rows, size_t n,
                           tn_err_t *err) {
  tn_status_t st = tn_realloc(all, *nall, *nall + n, sizeof **all, err);
  if (st != TN_OK) return st;
  memcpy(*all + *nall, rows, n * sizeof *rows);
  *nall += n;
  return TN_OK;
}

static tn_status_t write_json(const char *path, const cli_result_t *rows, size_t n, tn_err_t *err) {
  char *text = NULL;
  tn_outfile_t o;
  tn_status_t st = cli_results_json(rows, n, &text, err);
  if (st == TN_OK && (st = tn_outfile_open(&o, path, err)) == TN_OK) {
    fprintf(o.f, "%s\n", text);
    st = tn_outfile_commit(&o, err);
  }
  free(text);
  return st;
}

/* One fabric and collective: compare, print the table, draw PNG and SVG. */
static tn_status_t demo_one(const demo_fabric_t *f, const topo_t *t, tn_coll_t coll,
                            const uint64_t *sizes, size_t nsizes, uint64_t chakra_size,
                            unsigned jobs, const char *dir, cli_result_t **all, size_t *nall,
                            tn_err_t *err) {
  char chakra_dir[PATH_MAX], path[PATH_MAX], title[256];
  snprintf(chakra_dir, sizeof chakra_dir, "%s/chakra", dir);
  cli_compare_spec_t sp = {.topo = t,
                           .label = f->label,
                           .coll = coll,
                           .sizes = sizes,
                           .nsizes = nsizes,
                           .algos = coll == TN_ALLTOALL ? demo_a2a_algos : demo_algos,
                           .nalgos = coll == TN_ALLTOALL
                                         ? sizeof demo_a2a_algos / sizeof demo_a2a_algos[0]
                                         : sizeof demo_algos / sizeof demo_algos[0],
                           .seed = CLI_DEFAULT_SEED,
                           .jobs = jobs,
                           .progress = true,
                           .stop_on_error = true,
                           .chakra_dir = chakra_dir,
                           .chakra_size = chakra_size};
  cli_result_t *rows = NULL;
  size_t n = 0;
  tn_status_t st = cli_compare_run(&sp, &rows, &n, err);
  if (st == TN_OK) {
    printf("\n%s, %s, %u NPUs, %g GB/s %g ns links\n", f->label, tn_coll_name(coll), t->npus,
           CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS);
    st = cli_results_table(rows, n, stdout, err);
    fflush(stdout);
  }
  snprintf(title, sizeof title, "%s: %s, %u NPUs (%g GB/s, %g ns)", f->label, tn_coll_name(coll),
           t->npus, CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS);
  static const char *const exts[] = {"png", "svg"};
  for (size_t e = 0; st == TN_OK && e < 2; e++) {
    snprintf(path, sizeof path, "%s/%s-%s.%s", dir, f->label, tn_coll_name(coll), exts[e]);
    st = cli_plot_busbw(rows, n, title, path, CLI_PLOT_Y_AUTO, err);
  }
  /* Where the time goes: per-link utilization of greedy and Ring, first fabric's
   * All-Gather at the Chakra size (two more runs; the others would look alike). */
  static const char *const heat_algos[] = {"greedy", "ring"};
  for (size_t a = 0; st == TN_OK && coll == TN_ALLGATHER && f == &demo_fabrics[0] && a < 2; a++) {
    char size_s[32];
    snprintf(path, sizeof path, "%s/%s-%s-%s-%s-links.png", dir, f->label, tn_coll_name(coll),
             tn_fmt_size(chakra_size, size_s, sizeof size_s), heat_algos[a]);
    st =
        cli_heatmap_run(t, f->label, coll, chakra_size, heat_algos[a], CLI_DEFAULT_SEED, path, err);
  }
  if (st == TN_OK) st = collect(all, nall, rows, n, err);
  free(rows);
  return st;
}

int cmd_demo(int argc, char **argv) {
  const char *dir = "tenet-demo", *jobs_s = NULL;
  bool quick = false, help = false;
  const cli_opt_t opts[] = {{"output", 'o', &dir, NULL},
                            {"out", 0, &dir, NULL},
                            {"quick", 0, NULL, &quick},
                            {"jobs", 'j', &jobs_s, NULL},
                            {"help", 'h', NULL, &help}};
  tn_err_t err = {0};
  const char *pos[1];
  size_t npos = 0;
  unsigned jobs = 0;
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &npos, &err) != TN_OK ||
      (jobs_s && cli_parse_jobs(jobs_s, &jobs, &err) != TN_OK))
    return cli_usage("demo", "%s", err.msg);
  if (help) {
    fputs(demo_help, stdout);
    return 0;
  }
  const uint64_t quick_sizes[] = {4096, 262144, 16777216};
  uint64_t *sizes = NULL;
  size_t nsizes = 0;
  uint64_t chakra_size = quick ? 16777216 : 67108864;
  tn_status_t st = TN_OK;
  if (quick) {
    st = tn_calloc(3, sizeof *sizes, &sizes, &err);
    if (st == TN_OK) memcpy(sizes, quick_sizes, sizeof quick_sizes), nsizes = 3;
  } else {
    st = tn_parse_size_list("1KiB..1GiB", &sizes, &nsizes, &err);
  }
  char probe[PATH_MAX];
  snprintf(probe, sizeof probe, "%s/chakra/x", dir);
  if (st == TN_OK) st = tn_mkdir_parents(probe, &err);
  cli_result_t *all = NULL;
  size_t nall = 0;
  double t0 = tn_wall_seconds();
  for (size_t fi = 0; st == TN_OK && fi < sizeof demo_fabrics / sizeof demo_fabrics[0]; fi++) {
    const demo_fabric_t *f = &demo_fabrics[fi];
    topo_t *t = NULL;
    st = topo_gen_kind(f->kind, f->dims, CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS, &t, &err);
    for (size_t ci = 0; st == TN_OK && ci < sizeof demo_colls / sizeof demo_colls[0]; ci++)
      st = demo_one(f, t, demo_colls[ci], sizes, nsizes, chakra_size, jobs, dir, &all, &nall, &err);
    topo_free(t);
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/results.csv", dir);
  if (st == TN_OK) st = cli_results_csv(all, nall, path, &err);
  snprintf(path, sizeof path, "%s/results.json", dir);
  if (st == TN_OK) st = write_json(path, all, nall, &err);
  free(all);
  free(sizes);
  /* The last case runs in ASTRA-sim as it is: its congestion-aware backend takes 1-D
   * fabrics only, so a ring of 8 (the demo's own folder: an earlier run's is replaced). */
  char astra_dir[PATH_MAX];
  uint64_t astra_ps = 0;
  snprintf(astra_dir, sizeof astra_dir, "%s/astra-ring-8", dir);
  topo_t *ring = NULL;
  if (st == TN_OK)
    st = topo_gen_kind("ring", "8", CLI_GEN_BANDWIDTH_GBPS, CLI_GEN_LATENCY_NS, &ring, &err);
  if (st == TN_OK) {
    tn_remove_tree(astra_dir);
    st = cli_astra_write(ring, TN_ALLGATHER, 1u << 20, astra_dir, &astra_ps, &err);
  }
  topo_free(ring);
  if (st != TN_OK) return cli_report("demo", &err);
  char abs[PATH_MAX], size_s[32];
  char cwd[PATH_MAX];
  if (dir[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
    snprintf(abs, sizeof abs, "%s/%s", cwd, dir);
  else
    snprintf(abs, sizeof abs, "%s", dir);
  tn_fmt_size(chakra_size, size_s, sizeof size_s);
  printf("\n%zu runs in %.1f s.\n", nall, tn_wall_seconds() - t0);
  printf("Open %s/mesh-8x8-allgather.png (and the other .png/.svg plots); every row is in "
         "%s/results.csv.\n",
         dir, dir);
  printf("ASTRA-sim: %s/astra-ring-8 holds an All-Gather of 1 MiB on ring-8 that its "
         "congestion-aware backend runs as it is (tenet predicts %.3f ns): "
         "ASTRA_SIM=/path/to/AstraSim_Analytical_Congestion_Aware %s/astra-ring-8/run.sh "
         "(see the README's 'Feeding ASTRA-sim').\n",
         abs, (double)astra_ps / 1e3, abs);
  return 0;
}
