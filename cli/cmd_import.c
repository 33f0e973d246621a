/* cli/cmd_import.c — `tenet import msccl`: read an MSCCL-IR XML algorithm (MSCCLang,
 * msccl-tools, the MSCCL schedulers), check it, optionally simulate it on a fabric, and
 * write it as a Chakra ET set that ASTRA-sim runs. */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet import msccl FILE.xml -s SIZE -o PREFIX [options]\n"
    "\n"
    "Reads an MSCCL-IR XML algorithm (ops s r rcs rrc rrs rrcs cpy re nop, channels,\n"
    "depid/deps, in-place and out-of-place; allgather, allreduce, reduce_scatter, and\n"
    "alltoall out of place), builds per-NPU SEND/RECV/COMP DAGs (fused ops become\n"
    "RECV -> COMP -> SEND, nop steps fold into dependencies), checks them with the\n"
    "verifier (chunks tracked through the buffers) and writes PREFIX.0.et ...\n"
    "PREFIX.<n-1>.et. SIZE is the collective's NCCL size; a step of\n"
    "cnt chunks moves cnt * SIZE / (chunks of the collective's buffer); for alltoall SIZE\n"
    "is each rank's send buffer (i_chunks of it).\n"
    "\n"
    "  -s, --size SIZE       NCCL size: bytes, or with KB MB GB (10^3) / KiB MiB GiB (2^10)\n"
    "  -o, --out PREFIX      output prefix (its directory is created)\n"
    "      --comp-us N       duration of every reduction in whole us (default 0, which\n"
    "                        costs 1 ns; collectiveapi's converter uses 7)\n"
    "  -t, --topo TOPO       also simulate on this fabric and report the time\n"
    "      --json            print one JSON object instead of a summary\n"
    "  -h, --help            this help\n";

typedef struct import_args {
  const char *size, *out, *comp_us, *topo;
  bool json, help;
} import_args_t;

static int print_result(const algo_t *a, const char *file, const char *prefix,
                        const algo_verify_report_t *rep, const topo_t *t, const sim_result_t *sr,
                        uint64_t lb, double import_ms, bool json) {
  uint64_t msgs = algo_send_count(a), nodes = algo_node_count(a);
  if (!json) {
    char sz[32];
    printf("imported %s: %s of %s, %u ranks, %u chunks per rank, %llu nodes, %llu messages "
           "(%.1f ms)\n",
           file, tn_coll_name(a->coll), tn_fmt_size(a->size_bytes, sz, sizeof sz), a->npus,
           a->chunks_per_npu, (unsigned long long)nodes, (unsigned long long)msgs, import_ms);
    printf("verified: %s\n", rep->semantics_checked ? "matching, acyclic, deadlock-free, "
                                                      "collective semantics hold"
                                                    : "matching, acyclic, deadlock-free");
    if (t) {
      double algbw = tn_gbps(a->size_bytes, sr->time_ps);
      printf("simulated on %s: %.3f us, algbw %.2f GB/s, busbw %.2f GB/s\n", t->name,
             (double)sr->time_ps / 1e6, algbw, algbw * tn_coll_busbw_factor(a->coll, a->npus));
    }
    printf("wrote %s.0.et .. %s.%u.et\n", prefix, prefix, a->npus - 1);
    return 0;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "file", file);
  cJSON_AddNumberToObject(o, "npus", a->npus);
  cJSON_AddStringToObject(o, "collective", tn_coll_name(a->coll));
  cJSON_AddStringToObject(o, "algorithm", a->name);
  cli_json_add_u64(o, "size_bytes", a->size_bytes);
  cJSON_AddNumberToObject(o, "chunks_per_npu", a->chunks_per_npu);
  cli_json_add_u64(o, "nodes", nodes);
  cli_json_add_u64(o, "messages", msgs);
  cJSON_AddBoolToObject(o, "verified", true);
  cJSON_AddBoolToObject(o, "semantics_checked", rep->semantics_checked);
  cJSON_AddNumberToObject(o, "import_ms", import_ms);
  if (t) {
    double algbw = tn_gbps(a->size_bytes, sr->time_ps);
    cJSON_AddStringToObject(o, "topology", t->name);
    cli_json_add_ns(o, "time_ns", sr->time_ps);
    cJSON_AddNumberToObject(o, "algbw_GBps", algbw);
    cJSON_AddNumberToObject(o, "busbw_GBps", algbw * tn_coll_busbw_factor(a->coll, a->npus));
    cli_json_add_ns(o, "lower_bound_ns", lb);
    cJSON_AddNumberToObject(o, "ratio_to_bound", lb ? (double)sr->time_ps / (double)lb : 0.0);
  }
  cli_json_add_et_files(o, prefix, a->npus);
  return cli_json_print("import", o);
}

int cmd_import(int argc, char **argv) {
  import_args_t a = {0};
  tn_err_t err = {0};
  const char *pos[2] = {NULL, NULL};
  size_t npos = 0;
  const cli_opt_t opts[] = {
      {"size", 's', &a.size, NULL},     {"out", 'o', &a.out, NULL},   {"output", 0, &a.out, NULL},
      {"comp-us", 0, &a.comp_us, NULL}, {"topo", 't', &a.topo, NULL}, {"json", 0, NULL, &a.json},
      {"help", 'h', NULL, &a.help},
  };
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 2, &npos, &err) != TN_OK)
    return cli_report("import", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (npos < 1 || strcmp(pos[0], "msccl") != 0)
    return cli_usage("import", "the only format is 'msccl' (tenet import msccl FILE.xml ...)");
  if (npos < 2) return cli_usage("import", "missing FILE.xml");
  if (!a.size || !a.out) return cli_usage("import", "-s SIZE and -o PREFIX are required");
  emit_msccl_origin_t origin = {0};
  emit_msccl_opts_t mo = {0, &origin};
  uint64_t size = 0;
  if (tn_parse_size(a.size, &size, &err) != TN_OK) return cli_report("import", &err);
  if (size == 0) return cli_usage("import", "--size must be > 0");
  if (a.comp_us && tn_parse_u64(a.comp_us, 0, 1000000000, "--comp-us", &mo.comp_us, &err) != TN_OK)
    return cli_report("import", &err);
  algo_t *alg = NULL;
  topo_t *t = NULL;
  sim_result_t sr = {0};
  algo_verify_report_t rep = {0};
  int code = 0;
  if (a.topo && cli_load_topo(a.topo, &t, &err) != TN_OK) goto fail;
  double t0 = tn_wall_seconds();
  if (emit_msccl_import_opts(pos[1], size, &mo, &alg, &err) != TN_OK) goto fail;
  double ms = (tn_wall_seconds() - t0) * 1e3;
  if (t && t->npus != alg->npus) {
    tn_err_set(&err, TN_INVAL, "%s has %u ranks but %s has %u NPUs", pos[1], alg->npus, t->name,
               t->npus);
    goto fail;
  }
  if (algo_verify(alg, t, &rep, &err) != TN_OK) {
    /* The verifier names "rank r node i": say which XML step that is. */
    unsigned r = 0, i = 0;
    if (sscanf(err.msg, "rank %u node %u", &r, &i) == 2 && r < origin.npus &&
        i < algo_rank_len(alg, r) && origin.at[r][i].tb >= 0)
      tn_err_prefix(&err, "%s:%ld: gpu %u tb %d step %d: does not verify", pos[1],
                    origin.at[r][i].line, r, origin.at[r][i].tb, origin.at[r][i].step);
    else
      tn_err_prefix(&err, "%s does not verify", pos[1]);
    goto fail;
  }
  uint64_t lb = 0;
  if (t && (sim_run(t, alg, NULL, &sr, &err) != TN_OK ||
            topo_lower_bound_ps(t, alg->coll, alg->size_bytes, &lb, &err) != TN_OK))
    goto fail;
  if (emit_chakra_write(alg, a.out, &err) != TN_OK) goto fail;
  code = print_result(alg, pos[1], a.out, &rep, t, &sr, lb, ms, a.json);
  goto done;
fail:
  code = cli_report("import", &err);
done:
  emit_msccl_origin_free(&origin);
  sim_result_free(&sr);
  algo_free(alg);
  topo_free(t);
  return code;
}
