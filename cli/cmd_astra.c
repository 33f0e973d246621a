/* cli/cmd_astra.c — `tenet astra`: synthesize a collective (or take a Chakra set) and write
 * a directory that ASTRA-sim's analytical backend runs as it is: the set, a workload of one
 * COMM_COLL_NODE per rank, the system JSON naming the set as the custom implementation,
 * the remote-memory JSON, the network YAML, and run.sh, which finds the simulator, runs it
 * and sets its time next to tenet's prediction. The directory appears whole or not at all:
 * it is built under a temporary name and renamed into place. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet astra -t TOPO -c COLL -s SIZE [-a ALGO | --set PREFIX] -o DIR\n"
    "                   [--backend aware|unaware] [--seed N] [--chunks K]\n"
    "\n"
    "Writes DIR, a directory ASTRA-sim's analytical backend runs as it is:\n"
    "  set/ALGO.<rank>.et       the algorithm (synthesized with -a, default auto, or the\n"
    "                           Chakra set PREFIX.<rank>.et given with --set)\n"
    "  workload/COLL.<rank>.et  one COMM_COLL_NODE per rank (comm_type of COLL)\n"
    "  system.json              \"COLL-implementation-custom\": [the set's absolute prefix],\n"
    "                           \"preferred-dataset-splits\": 1\n"
    "  remote_memory.json       no memory expansion\n"
    "  network.yml              TOPO as Ring / FullyConnected / Switch dimensions\n"
    "  run.sh                   runs ASTRA-sim ($ASTRA_SIM, else the backend's binary on\n"
    "                           PATH), prints its output, then its collective time (the\n"
    "                           largest 'sys[i] finished, N cycles') next to tenet's\n"
    "\n"
    "TOPO must be a generated fabric of those building blocks (e.g. ring-8, fc-8,\n"
    "switch-16); the congestion-aware backend (default) runs one dimension only, the\n"
    "congestion-unaware one several (e.g. torus-4x4) but models no contention, so tenet's\n"
    "prediction holds for the aware one. Other fabrics are refused with the reason. DIR\n"
    "must not exist or be empty; it is written whole or not at all.\n"
    "\n"
    "  -t, --topo TOPO       generated fabric: KIND-DIMS (ring-8, fc-8, switch-16, ...)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE       NCCL size: bytes, or with KB MB GB / KiB MiB GiB\n"
    "  -a, --algo ALGO       as 'tenet synth' (default auto)\n"
    "      --set PREFIX      use this Chakra set instead of synthesizing\n"
    "  -o, --out DIR         the directory to write\n"
    "      --backend B       aware (default) | unaware: ASTRA-sim's congestion model\n"
    "      --seed N          tie-breaking seed of the greedy (default 1)\n"
    "      --chunks K        chunks per NPU, as 'tenet synth'\n"
    "  -h, --help            this help\n";

typedef struct astra_args {
  const char *topo, *coll, *size, *algo, *set, *out, *backend, *seed, *chunks;
  bool help;
  synth_opts_t so; /* from -a, --seed, --chunks */
} astra_args_t;

typedef struct astra_job {
  const topo_t *t;
  tn_coll_t coll;
  uint64_t size;
  bool aware;
  const algo_t *a;
  uint64_t predicted_ps;
  uint64_t whole_ns_ps; /* the prediction with every delay in whole ns, as ASTRA-sim counts */
  bool spread;          /* a given set whose time depends on the order of events */
  uint64_t min_ps, max_ps;
  cli_rundir_t d;
} astra_job_t;

static tn_status_t run_sh(const astra_job_t *j, const char *coll_name, tn_sb_t *b) {
  char pred[160], what[256];
  if (j->spread)
    snprintf(pred, sizeof pred, "%.3f-%.3f", (double)j->min_ps / 1e3, (double)j->max_ps / 1e3);
  else
    snprintf(pred, sizeof pred,
             "%.3f ns (exact delays); in whole ns, as ASTRA-sim counts delays: %.3f",
             (double)j->predicted_ps / 1e3, (double)j->whole_ns_ps / 1e3);
  snprintf(what, sizeof what, "tenet astra: %s %s of %llu B on %s", j->a->name, coll_name,
           (unsigned long long)j->size, j->t->name);
  cli_astra_run_t r = {what, j->aware, coll_name, false, "", pred};
  return cli_astra_run_sh(&r, b);
}

/* Writes every file into d->tmp (cli_rundir_fill_fn). */
static tn_status_t write_dir(void *ctx, const cli_rundir_t *d, tn_err_t *err) {
  const astra_job_t *j = ctx;
  const char *cn = tn_coll_name(j->coll);
  char *set_tmp = NULL, *set_abs = NULL, *wl = NULL, *sys = NULL, rel[96];
  tn_sb_t sh;
  tn_sb_init(&sh, err);
  snprintf(rel, sizeof rel, "set/%s", j->a->name);
  tn_status_t st = cli_path_join(d->tmp, rel, &set_tmp, err);
  if (st == TN_OK) st = cli_path_join(d->final, rel, &set_abs, err);
  if (st == TN_OK) st = emit_chakra_write(j->a, set_tmp, err);
  snprintf(rel, sizeof rel, "workload/%s", cn);
  if (st == TN_OK) st = cli_path_join(d->tmp, rel, &wl, err);
  if (st == TN_OK) st = tn_mkdir_parents(wl, err);
  if (st == TN_OK) st = emit_chakra_write_workload(wl, j->t->npus, j->coll, j->size, err);
  cli_astra_system_t sj = {.custom_set = set_abs, .custom_coll = j->coll};
  if (st == TN_OK) st = cli_astra_system_json(&sj, &sys, err);
  if (st == TN_OK) st = cli_put_text(d->tmp, "system.json", sys, false, err);
  if (st == TN_OK) st = cli_astra_common_files(d->tmp, j->t, j->aware, err);
  if (st == TN_OK) st = run_sh(j, cn, &sh);
  if (st == TN_OK) st = cli_put_text(d->tmp, "run.sh", sh.v.data, true, err);
  free(set_tmp);
  free(set_abs);
  free(wl);
  free(sys);
  tn_vec_free(&sh.v);
  return st;
}

static tn_status_t parse_args(int argc, char **argv, astra_args_t *a, tn_err_t *err) {
  const cli_opt_t opts[] = {
      {"topo", 't', &a->topo, NULL}, {"coll", 'c', &a->coll, NULL},
      {"size", 's', &a->size, NULL}, {"algo", 'a', &a->algo, NULL},
      {"set", 0, &a->set, NULL},     {"out", 'o', &a->out, NULL},
      {"output", 0, &a->out, NULL},  {"backend", 0, &a->backend, NULL},
      {"seed", 0, &a->seed, NULL},   {"chunks", 0, &a->chunks, NULL},
      {"help", 'h', NULL, &a->help},
  };
  size_t npos = 0;
  tn_status_t st = cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], NULL, 0, &npos, err);
  if (st != TN_OK || a->help) return st;
  if (!a->topo || !a->coll || !a->size || !a->out)
    return tn_err_set(err, TN_INVAL,
                      "-t TOPO, -c COLL, -s SIZE and -o DIR are required (see 'tenet astra "
                      "--help')");
  if (a->set && (a->algo || a->seed || a->chunks))
    return tn_err_set(err, TN_INVAL,
                      "--set takes a made set: -a, --seed and --chunks do not "
                      "apply");
  if (a->backend && strcmp(a->backend, "aware") != 0 && strcmp(a->backend, "unaware") != 0)
    return tn_err_set(err, TN_INVAL, "--backend '%s': expected aware or unaware", a->backend);
  return cli_synth_opts(a->algo, a->seed, a->chunks, &a->so, err);
}

/* The algorithm: synthesized, or read from --set (checked, and timed under several orders
 * of same-instant events, since a set made elsewhere may leave that order open). */
/* j->a's time with every delay counted in whole ns, rounded down, as ASTRA-sim's analytical
 * backend counts it: what run.sh prints beside the exact prediction. */
static tn_status_t whole_ns(astra_job_t *j, tn_err_t *err) {
  sim_opts_t so = {.quantum_ps = 1000};
  sim_result_t sr = {0};
  tn_status_t st = sim_run(j->t, j->a, &so, &sr, err);
  j->whole_ns_ps = sr.time_ps;
  sim_result_free(&sr);
  return st;
}

static tn_status_t get_algo(const astra_args_t *a, astra_job_t *j, algo_t **own, tn_err_t *err) {
  tn_status_t st;
  if (a->set) {
    if ((st = cli_read_set(a->set, j->t, own, err)) != TN_OK) return st;
    if ((*own)->has_coll && ((*own)->coll != j->coll || (*own)->size_bytes != j->size)) {
      char got[32], want[32];
      return tn_err_set(err, TN_INVAL, "%s: the files hold %s of %s, not %s of %s", a->set,
                        tn_coll_name((*own)->coll),
                        tn_fmt_size((*own)->size_bytes, got, sizeof got), tn_coll_name(j->coll),
                        tn_fmt_size(j->size, want, sizeof want));
    }
    algo_verify_report_t rep;
    if ((st = algo_verify(*own, j->t, &rep, err)) != TN_OK) return st;
    sim_spread_t sp;
    if ((st = sim_order_spread(j->t, *own, 4, &sp, err)) != TN_OK) return st;
    j->a = *own;
    if ((st = whole_ns(j, err)) != TN_OK) return st;
    j->predicted_ps = sp.id_ps;
    j->spread = sp.min_ps != sp.max_ps;
    j->min_ps = sp.min_ps;
    j->max_ps = sp.max_ps;
    return TN_OK;
  }
  synth_result_t r;
  if ((st = synth_run(j->t, j->coll, j->size, &a->so, &r, err)) != TN_OK) return st;
  *own = r.algo;
  j->a = r.algo;
  sim_result_t sr = {0};
  st = sim_run(j->t, r.algo, NULL, &sr, err);
  j->predicted_ps = sr.time_ps;
  sim_result_free(&sr);
  return st == TN_OK ? whole_ns(j, err) : st;
}

tn_status_t cli_astra_write(const topo_t *t, tn_coll_t coll, uint64_t size, const char *dir,
                            uint64_t *predicted_ps, tn_err_t *err) {
  astra_job_t j = {.t = t, .coll = coll, .size = size, .aware = true};
  astra_args_t a = {0};
  algo_t *own = NULL;
  tn_sb_t probe;
  tn_sb_init(&probe, err);
  tn_status_t st = cli_synth_opts(NULL, NULL, NULL, &a.so, err);
  if (st == TN_OK) st = topo_astra_yaml(t, true, &probe, err);
  if (st == TN_OK) st = cli_rundir_plan(&j.d, dir, "astra", NULL, err);
  if (st == TN_OK) st = get_algo(&a, &j, &own, err);
  if (st == TN_OK) st = cli_rundir_write(&j.d, write_dir, &j, err);
  *predicted_ps = j.predicted_ps;
  tn_vec_free(&probe.v);
  algo_free(own);
  cli_rundir_free(&j.d);
  return st;
}

int cmd_astra(int argc, char **argv) {
  astra_args_t a = {0};
  tn_err_t err = {0};
  astra_job_t j = {0};
  topo_t *t = NULL;
  algo_t *own = NULL;
  int code = 0;
  if (parse_args(argc, argv, &a, &err) != TN_OK) return cli_report("astra", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  j.aware = !a.backend || strcmp(a.backend, "aware") == 0;
  tn_sb_t probe;
  tn_sb_init(&probe, &err);
  if (tn_coll_parse(a.coll, &j.coll, &err) != TN_OK ||
      tn_parse_size(a.size, &j.size, &err) != TN_OK || cli_load_topo(a.topo, &t, &err) != TN_OK)
    goto fail;
  j.t = t;
  /* The fabric's form is checked before any synthesis: a refusal costs nothing. */
  if (topo_astra_yaml(t, j.aware, &probe, &err) != TN_OK ||
      cli_rundir_plan(&j.d, a.out, "astra", NULL, &err) != TN_OK ||
      get_algo(&a, &j, &own, &err) != TN_OK || cli_rundir_write(&j.d, write_dir, &j, &err) != TN_OK)
    goto fail;
  printf("wrote %s: %s %s of %llu B on %s (%u NPUs) for ASTRA-sim's congestion-%s backend\n",
         j.d.dir, j.a->name, tn_coll_name(j.coll), (unsigned long long)j.size, t->name, t->npus,
         j.aware ? "aware" : "unaware");
  if (j.spread)
    printf("tenet predicts %.3f-%.3f ns (the set leaves the order of same-instant events open)\n",
           (double)j.min_ps / 1e3, (double)j.max_ps / 1e3);
  else
    printf("tenet predicts %.3f ns (%.3f ns counting every delay in whole ns, as ASTRA-sim "
           "does); run %s/run.sh (ASTRA_SIM=path/to/AstraSim_Analytical_Congestion_%s)\n",
           (double)j.predicted_ps / 1e3, (double)j.whole_ns_ps / 1e3, j.d.dir,
           j.aware ? "Aware" : "Unaware");
  goto done;
fail:
  code = cli_report("astra", &err);
done:
  tn_vec_free(&probe.v);
  algo_free(own);
  topo_free(t);
  cli_rundir_free(&j.d);
  return code;
}
