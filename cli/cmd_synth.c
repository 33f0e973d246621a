/* cli/cmd_synth.c — `tenet synth`: synthesize a collective for a fabric, check it with the
 * verifier, score it with the simulator, and write it as a Chakra ET set. */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet synth -t TOPO -c COLL -s SIZE [-a ALGO] -o PREFIX [options]\n"
    "\n"
    "Synthesizes COLL (allgather, reducescatter, allreduce, alltoall) of SIZE bytes for the\n"
    "fabric TOPO (a topology file, a shipped name such as mesh-8x8, or KIND-DIMS such as\n"
    "torus-4x4x2), verifies it, simulates it and writes one Chakra ET file per NPU:\n"
    "PREFIX.0.et ... PREFIX.<n-1>.et.\n"
    "\n"
    "  -t, --topo TOPO       topology file, shipped name or KIND-DIMS (e.g. torus-4x4)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE       NCCL size: bytes, or with KB MB GB (10^3) / KiB MiB GiB (2^10);\n"
    "                        alltoall: each NPU's send buffer, SIZE/n to every NPU\n"
    "                        (a multiple of n)\n"
    "  -a, --algo ALGO       auto (default: every method below but milp, simulated,\n"
    "                        the fastest kept; a set within 0.1% of the lower\n"
    "                        bound, the greedy's first, ends the search; on a fabric\n"
    "                        with slow links, greedy and forest are also planned\n"
    "                        without them and timed with them) | greedy |\n"
    "                        trees (All-Reduce; through switches up to 512 NPU\n"
    "                        pairs) | forest | dims\n"
    "                        (generated fabrics: one dimension at a time) | milp |\n"
    "                        ring | direct | twostep (alltoall: greedy, direct, or\n"
    "                        twostep on fabrics with servers)\n"
    "  -o, --out PREFIX      output prefix (its directory is created)\n"
    "      --chunks K        chunks per NPU (alltoall: pieces per block; default: chosen\n"
    "                        by the method: milp takes the greedy's; ring tries one\n"
    "                        direction whole and both directions in 2 and 8 chunks,\n"
    "                        direct 1 and 4 chunks, and each keeps its fastest, named\n"
    "                        in the summary)\n"
    "      --seed N          tie-breaking seed of the greedy (default 1)\n"
    "      --seeds N         best of N seeds (1..1000): synthesizes with seeds N0 ..\n"
    "                        N0+N-1 (N0 the --seed) and keeps the fastest set, the\n"
    "                        lowest seed among equal times; the summary and --json\n"
    "                        (seed, seeds_tried) name the winner. greedy, milp and auto\n"
    "                        only (the other methods use no seed); N times the work\n"
    "      --node-limit N    MILP work limit: branch-and-bound nodes (default 1000)\n"
    "      --iter-limit N    MILP work limit: simplex iterations, all LPs together\n"
    "                        (default: 5*10^7 / (rows + columns) of each model, within\n"
    "                        1000..100000). The MILP stops at the first limit reached\n"
    "                        and returns its best schedule (never slower than the\n"
    "                        greedy's); the same input gives the same output on any\n"
    "                        machine under any load\n"
    "      --time-limit S    MILP wall-clock safety net in seconds (default 60); a run\n"
    "                        it cuts short depends on the machine's speed\n"
    "      --verbose         show the MILP solver's output\n"
    "      --json            print one JSON object instead of a summary\n"
    "  -h, --help            this help\n";

typedef struct synth_args {
  const char *topo, *coll, *size, *algo, *out, *chunks, *seed, *seeds, *time_limit, *node_limit,
      *iter_limit;
  bool json, verbose, help;
} synth_args_t;

static void print_summary(const topo_t *t, const algo_t *a, uint64_t size, const synth_result_t *so,
                          const sim_result_t *sr, uint64_t lb_ps, const char *prefix) {
  char sz[32];
  double algbw = tn_gbps(size, sr->time_ps);
  printf("%s%s%s%s%s %s of %s on %s (%u NPUs): %.3f us, algbw %.2f GB/s, busbw %.2f GB/s\n",
         a->name, so->variant[0] ? " (" : "", so->variant, so->variant[0] ? ")" : "",
         so->chosen ? " (chosen by auto)" : "", tn_coll_name(a->coll),
         tn_fmt_size(size, sz, sizeof sz), t->name, t->npus, (double)sr->time_ps / 1e6, algbw,
         algbw * tn_coll_busbw_factor(a->coll, t->npus));
  printf("lower bound %.3f us (time/bound %.3f); %llu messages, %llu nodes; synthesized in "
         "%.1f ms%s%s\n",
         (double)lb_ps / 1e6, lb_ps ? (double)sr->time_ps / (double)lb_ps : 0.0,
         (unsigned long long)sr->messages, (unsigned long long)algo_node_count(a), so->synth_ms,
         so->milp_status ? "; MILP " : "", so->milp_status ? so->milp_status : "");
  if (so->seeds_tried > 1)
    printf("seed %llu: the fastest of the %u seeds tried (the lowest among equal times)\n",
           (unsigned long long)so->seed, so->seeds_tried);
  if (so->milp_status)
    printf("MILP search: %s, gap %.1f%%%s\n", so->milp_stop ? so->milp_stop : "-",
           100.0 * so->milp_gap,
           strcmp(so->milp_status, "greedy") == 0 ? "; the greedy's algorithm was faster: kept"
                                                  : "");
  printf("wrote %s.0.et .. %s.%u.et\n", prefix, prefix, t->npus - 1);
}

static int print_json(const topo_t *t, const algo_t *a, uint64_t size, const synth_result_t *so,
                      const sim_result_t *sr, uint64_t lb_ps, const char *prefix) {
  cJSON *o = cJSON_CreateObject();
  double algbw = tn_gbps(size, sr->time_ps);
  cJSON_AddStringToObject(o, "topology", t->name);
  cJSON_AddNumberToObject(o, "npus", t->npus);
  cJSON_AddStringToObject(o, "collective", tn_coll_name(a->coll));
  cJSON_AddStringToObject(o, "algorithm", a->name);
  cJSON_AddBoolToObject(o, "chosen_by_auto", so->chosen);
  cli_json_add_u64(o, "size_bytes", size);
  cJSON_AddNumberToObject(o, "chunks_per_npu", a->chunks_per_npu);
  if (so->variant[0]) cJSON_AddStringToObject(o, "variant", so->variant);
  cli_json_add_ns(o, "time_ns", sr->time_ps);
  if (so->time_ps) cli_json_add_ns(o, "predicted_ns", so->time_ps);
  /* what order-proofing's gates cost (or gained) on this set */
  if (so->unproofed_ps) cli_json_add_ns(o, "before_order_proofing_ns", so->unproofed_ps);
  /* the forest's set made again at half its chunks (both held at once: bench_mem) */
  if (so->halved_from) cJSON_AddNumberToObject(o, "halved_from_chunks", so->halved_from);
  cJSON_AddNumberToObject(o, "algbw_GBps", algbw);
  cJSON_AddNumberToObject(o, "busbw_GBps", algbw * tn_coll_busbw_factor(a->coll, t->npus));
  cli_json_add_ns(o, "lower_bound_ns", lb_ps);
  cJSON_AddNumberToObject(o, "ratio_to_bound", lb_ps ? (double)sr->time_ps / (double)lb_ps : 0);
  cli_json_add_u64(o, "messages", sr->messages);
  cJSON_AddNumberToObject(o, "synth_ms", so->synth_ms);
  cli_json_add_u64(o, "seed", so->seed);
  cJSON_AddNumberToObject(o, "seeds_tried", so->seeds_tried);
  if (so->milp_status) cJSON_AddStringToObject(o, "milp_status", so->milp_status);
  if (so->milp_stop) cJSON_AddStringToObject(o, "milp_stop", so->milp_stop);
  if (so->milp_status) cJSON_AddNumberToObject(o, "milp_gap", so->milp_gap);
  /* the memory the MILP's models were granted (bench_mem) */
  if (so->milp_mem) cli_json_add_u64(o, "milp_mem_bytes", so->milp_mem);
  cli_json_add_et_files(o, prefix, t->npus);
  return cli_json_print("synth", o);
}

static tn_status_t parse_args(int argc, char **argv, synth_args_t *a, tn_coll_t *coll,
                              uint64_t *size, synth_opts_t *so, tn_err_t *err) {
  const cli_opt_t opts[] = {
      {"topo", 't', &a->topo, NULL},
      {"coll", 'c', &a->coll, NULL},
      {"size", 's', &a->size, NULL},
      {"algo", 'a', &a->algo, NULL},
      {"out", 'o', &a->out, NULL},
      {"output", 0, &a->out, NULL},
      {"chunks", 0, &a->chunks, NULL},
      {"seed", 0, &a->seed, NULL},
      {"seeds", 0, &a->seeds, NULL},
      {"time-limit", 0, &a->time_limit, NULL},
      {"node-limit", 0, &a->node_limit, NULL},
      {"iter-limit", 0, &a->iter_limit, NULL},
      {"json", 0, NULL, &a->json},
      {"verbose", 0, NULL, &a->verbose},
      {"help", 'h', NULL, &a->help},
  };
  size_t npos = 0;
  tn_status_t st = cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], NULL, 0, &npos, err);
  if (st != TN_OK || a->help) return st;
  if (!a->topo || !a->coll || !a->size || !a->out)
    return tn_err_set(err, TN_INVAL,
                      "-t TOPO, -c COLL, -s SIZE and -o PREFIX are required "
                      "(see 'tenet synth --help')");
  if ((st = tn_coll_parse(a->coll, coll, err)) != TN_OK) return st;
  if ((st = tn_parse_size(a->size, size, err)) != TN_OK) return st;
  if (*size == 0) return tn_err_set(err, TN_INVAL, "--size must be > 0");
  if ((st = cli_synth_opts(a->algo, a->seed, a->chunks, so, err)) != TN_OK) return st;
  uint64_t v = 0;
  if (a->seeds) {
    if ((st = tn_parse_u64(a->seeds, 1, SYNTH_MAX_SEEDS, "--seeds", &v, err)) != TN_OK) return st;
    so->seeds = (uint32_t)v;
  }
  if (a->time_limit && (st = tn_parse_double(a->time_limit, 0.001, 1e6, "--time-limit",
                                             &so->time_limit_s, err)) != TN_OK)
    return st;
  if (a->node_limit) {
    if ((st = tn_parse_u64(a->node_limit, 1, UINT32_MAX, "--node-limit", &v, err)) != TN_OK)
      return st;
    so->node_limit = (uint32_t)v;
  }
  if (a->iter_limit && (st = tn_parse_u64(a->iter_limit, 1, INT32_MAX, "--iter-limit",
                                          &so->iter_limit, err)) != TN_OK)
    return st;
  so->verbose = a->verbose;
  return TN_OK;
}

/* What tenet synth does with the set it returns: verify it (every algorithm tenet emits
 * passes the verifier; a failure is our bug) and write it. synth_run runs this beside
 * the set's last simulation when it can. */
typedef struct check_write {
  const topo_t *t;
  const char *out;
  algo_verify_report_t rep;
  uint32_t written; /* ranks of the set last written (0: none yet) */
} check_write_t;

static tn_status_t check_and_write(void *ctx, const algo_t *a, tn_err_t *err) {
  check_write_t *cw = ctx;
  tn_status_t st = cli_verify_write(cw->t, a, cw->out, &cw->rep, err);
  if (st == TN_OK) cw->written = a->npus;
  return st;
}

/* synth_run wrote a set beside its last simulation and then failed (out of memory in a
 * later step): the command fails, so the set it wrote goes too, as if it never had been. */
static void unwrite(const check_write_t *cw) {
  cli_unlink_ranks(cw->out, cw->written);
}

int cmd_synth(int argc, char **argv) {
  synth_args_t a = {0};
  synth_opts_t so = {0};
  tn_coll_t coll = TN_ALLGATHER;
  uint64_t size = 0;
  tn_err_t err = {0};
  topo_t *t = NULL;
  synth_result_t out = {0};
  sim_result_t sr = {0};
  check_write_t cw = {0};
  int code = 0;
  if (parse_args(argc, argv, &a, &coll, &size, &so, &err) != TN_OK)
    return cli_report("synth", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (cli_load_topo(a.topo, &t, &err) != TN_OK) goto fail;
  cw.t = t;
  cw.out = a.out;
  so.on_set = check_and_write;
  so.on_set_ctx = &cw;
  if (synth_run(t, coll, size, &so, &out, &err) != TN_OK) goto fail;
  if (!out.on_set_done && check_and_write(&cw, out.algo, &err) != TN_OK) goto fail;
  /* The portfolio (and an All-Gather plan) already knows the simulated time exactly. */
  if (out.time_ps != 0) {
    sr.time_ps = out.time_ps;
    sr.messages = algo_send_count(out.algo);
  } else if (sim_run(t, out.algo, NULL, &sr, &err) != TN_OK) {
    goto fail;
  }
  uint64_t lb = 0;
  if (topo_lower_bound_ps(t, coll, size, &lb, &err) != TN_OK) goto fail;
  if (a.json)
    code = print_json(t, out.algo, size, &out, &sr, lb, a.out);
  else
    print_summary(t, out.algo, size, &out, &sr, lb, a.out);
  goto done;
fail:
  code = cli_report("synth", &err);
  unwrite(&cw);
done:
  sim_result_free(&sr);
  synth_result_free(&out);
  topo_free(t);
  return code;
}
