/* cli/cmd_export.c — `tenet export msccl`: read a Chakra ET set that tenet wrote (greedy,
 * MILP, Ring, Direct), check it and write it as MSCCL-IR XML for the MSCCL runtimes; the
 * import reads that file back to the same DAG. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet export msccl -t TOPO -c COLL -s SIZE PREFIX -o FILE.xml [--exact | --channels "
    "N|best]\n"
    "\n"
    "Reads PREFIX.0.et ... (a set tenet wrote, with its chunk bookkeeping), verifies it on\n"
    "TOPO and writes it as MSCCL-IR XML (msccl-tools dialect, in place) for the MSCCL executor\n"
    "of NCCL / RCCL. 'tenet import msccl' reads the file back.\n"
    "\n"
    "Default (runtime-fit): nodes packed into few threadblocks, one per (channel, send peer,\n"
    "receive peer); a receive that feeds a send or a reduction becomes one rcs / rrc / rrcs\n"
    "step; steps ordered so that no threadblock can deadlock even when every send waits for\n"
    "its receiver; cross-threadblock waits as depid/deps (nop steps for extra ones); the\n"
    "fewest channels that keep within the runtime's limits: at most 32 channels, 108\n"
    "threadblocks per GPU, 32 sending and 32 receiving threadblocks per channel, 64 steps per\n"
    "threadblock, 71 chunks per step. Refused (exit 2, naming the limit) when nothing fits.\n"
    "The import verifies and simulates; the time may differ from the set's (a threadblock\n"
    "runs its steps one after another).\n"
    "\n"
    "--exact: one threadblock per node, channel k for the k-th message of a pair, tenet's tag\n"
    "attribute on every message: the import gives back the same DAG and the same simulated\n"
    "time, but large algorithms exceed what a runtime runs.\n"
    "\n"
    "An alltoall is written out of place in both forms: send buffer i, receive buffer o,\n"
    "relayed pieces in scratch (runtime-fit: a relay is one rcs step), and a tb of its own\n"
    "per GPU with the cpy of the piece a rank keeps (it imports as a 0 us COMP). A message\n"
    "that gathers several pieces (Two-Step's) is staged in scratch, as MSCCLang's Two-Step\n"
    "program does: the sender cpys the pieces into one scratch range and sends it, the\n"
    "receiver receives into one scratch range and cpys the pieces addressed to it into o\n"
    "(straight into o when they fill one range of it); relayed pieces are sent on from\n"
    "scratch. Each cpy imports as a 0 us COMP (1 ns in the simulator).\n"
    "\n"
    "  -t, --topo TOPO       topology file, shipped name or KIND-DIMS (its NPU count is the\n"
    "                        rank count)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE       the NCCL size the set was written for\n"
    "  -o, --out FILE.xml    output file\n"
    "      --exact           exact round-trip form instead of runtime-fit\n"
    "      --no-fuse         runtime-fit without fused rcs / rrc / rrcs steps\n"
    "      --channels N      runtime-fit on exactly N channels (1..32) instead of the fewest\n"
    "                        that fit; more channels, more threadblocks, less serialisation\n"
    "      --channels best   the count whose file, imported back, simulates fastest on TOPO\n"
    "                        (ties: fewer threadblocks); tries 1..32\n"
    "      --json            print one JSON object (mode, channels, threadblocks per GPU,\n"
    "                        steps, time_ns, exported_time_ns) instead of a summary\n"
    "\n"
    "The summary ends with the set's simulated time on TOPO next to the file's (read back\n"
    "as a runtime would run it: the runtime-fit form serialises steps per threadblock). A\n"
    "set that does not fit MSCCL's limits is refused (exit 2) with what would fit.\n"
    "  -h, --help            this help\n";

/* Files carry chunk ids but maybe not the header: fill it from -c/-s and the ids. */
static tn_status_t set_header(algo_t *a, tn_coll_t coll, uint64_t size, tn_err_t *err) {
  uint32_t max = 0;
  bool any = false;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = algo_node(a, r, i);
      const uint32_t *c = algo_node_chunks(a, r, n);
      for (uint32_t k = 0; k < n->nchunks; k++) {
        any = true;
        if (c[k] > max) max = c[k];
      }
    }
  if (a->has_coll) {
    if (a->coll != coll || a->size_bytes != size)
      return tn_err_set(err, TN_INVAL, "the set was written for %s of %llu B, not %s of %llu B",
                        tn_coll_name(a->coll), (unsigned long long)a->size_bytes,
                        tn_coll_name(coll), (unsigned long long)size);
    return TN_OK;
  }
  if (!any)
    return tn_err_set(err, TN_INVAL,
                      "the set carries no chunk bookkeeping (not written by "
                      "tenet); MSCCL-IR export needs it");
  return algo_set_collective(a, coll, max / a->npus + 1, size, err);
}

/* --channels best: the channel count (1..32) whose runtime-fit form, imported back with the
 * set's COMP duration, simulates fastest on t (ties: fewer threadblocks, then fewer
 * channels). Counts that do not fit are skipped; none fits: the default's refusal. */
/* The duration the set gives its COMPs (its reductions), for reading an export back. */
static uint64_t set_comp_us(const algo_t *a) {
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      if (algo_node(a, r, i)->op == ALGO_COMP && algo_node(a, r, i)->duration_us)
        return algo_node(a, r, i)->duration_us;
  return 0;
}

/* The simulated times of the set and of the MSCCL-IR it was written as (xml, read back
 * with the set's COMP duration): what a runtime running the file would take. */
static tn_status_t compare_times(const algo_t *a, const topo_t *t, const char *xml, size_t len,
                                 uint64_t *set_ps, uint64_t *xml_ps, tn_err_t *err) {
  emit_msccl_opts_t io = {set_comp_us(a), NULL};
  algo_t *b = NULL;
  sim_result_t r1 = {0}, r2 = {0};
  tn_status_t st = sim_run(t, a, NULL, &r1, err);
  if (st == TN_OK)
    st = emit_msccl_import_mem_opts(xml, len, "the written file", a->size_bytes, &io, &b, err);
  if (st == TN_OK) st = sim_run(t, b, NULL, &r2, err);
  *set_ps = r1.time_ps;
  *xml_ps = r2.time_ps;
  sim_result_free(&r1);
  sim_result_free(&r2);
  algo_free(b);
  return st;
}

/* Writes len bytes of xml to path (all or nothing, through tn_outfile). */
static tn_status_t write_xml(const char *path, const char *xml, size_t len, tn_err_t *err) {
  tn_outfile_t o = {0};
  tn_status_t st = tn_mkdir_parents(path, err);
  if (st == TN_OK) st = tn_outfile_open(&o, path, err);
  if (st != TN_OK) return st;
  if (fwrite(xml, 1, len, o.f) != len) {
    tn_outfile_abort(&o);
    return tn_err_set(err, TN_IO, "%s: write failed", path);
  }
  return tn_outfile_commit(&o, err);
}

static tn_status_t best_channels(const algo_t *a, const topo_t *t, bool no_fuse, uint64_t *best,
                                 tn_err_t *err) {
  uint64_t comp_us = set_comp_us(a), best_ps = UINT64_MAX;
  uint32_t best_tbs = UINT32_MAX;
  *best = 0;
  for (uint32_t c = 1; c <= EMIT_MSCCL_MAX_CHANNELS; c++) {
    emit_msccl_export_opts_t eo = {false, no_fuse, {0, 0, 0, 0, 0}, c};
    emit_msccl_export_stats_t st = {0};
    emit_msccl_opts_t io = {comp_us, NULL};
    char *xml = NULL;
    size_t len = 0;
    algo_t *b = NULL;
    sim_result_t sr = {0};
    tn_err_t e = {0};
    tn_status_t rc = emit_msccl_export_mem_opts(a, &eo, &xml, &len, &st, &e);
    if (rc == TN_LIMIT || rc == TN_INFEASIBLE) continue;
    if (rc == TN_OK)
      rc = emit_msccl_import_mem_opts(xml, len, "runtime-fit", a->size_bytes, &io, &b, &e);
    if (rc == TN_OK) rc = sim_run(t, b, NULL, &sr, &e);
    free(xml);
    algo_free(b);
    if (rc != TN_OK) {
      tn_err_set(err, e.status, "%u channels: %s", c, e.msg);
      return rc;
    }
    if (sr.time_ps < best_ps || (sr.time_ps == best_ps && st.tbs_max < best_tbs)) {
      best_ps = sr.time_ps;
      best_tbs = st.tbs_max;
      *best = c;
    }
    sim_result_free(&sr);
  }
  return TN_OK;
}

int cmd_export(int argc, char **argv) {
  const char *topo = NULL, *coll_s = NULL, *size_s = NULL, *out = NULL, *chan_s = NULL;
  bool help_f = false, exact = false, no_fuse = false, json = false;
  tn_err_t err = {0};
  const char *pos[2] = {NULL, NULL};
  size_t npos = 0;
  const cli_opt_t opts[] = {
      {"topo", 't', &topo, NULL},     {"coll", 'c', &coll_s, NULL},   {"size", 's', &size_s, NULL},
      {"out", 'o', &out, NULL},       {"output", 0, &out, NULL},      {"help", 'h', NULL, &help_f},
      {"exact", 0, NULL, &exact},     {"no-fuse", 0, NULL, &no_fuse}, {"json", 0, NULL, &json},
      {"channels", 0, &chan_s, NULL},
  };
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 2, &npos, &err) != TN_OK)
    return cli_report("export", &err);
  if (help_f) {
    fputs(help, stdout);
    return 0;
  }
  if (npos < 1 || strcmp(pos[0], "msccl") != 0)
    return cli_usage("export", "the only format is 'msccl' (tenet export msccl ...)");
  if (npos < 2) return cli_usage("export", "missing PREFIX");
  if (!topo || !coll_s || !size_s || !out)
    return cli_usage("export", "-t TOPO, -c COLL, -s SIZE and -o FILE.xml are required");
  tn_coll_t coll = TN_ALLGATHER;
  uint64_t size = 0;
  uint64_t nch = 0;
  if (tn_coll_parse(coll_s, &coll, &err) != TN_OK || tn_parse_size(size_s, &size, &err) != TN_OK ||
      (chan_s && strcmp(chan_s, "best") != 0 &&
       tn_parse_u64(chan_s, 1, EMIT_MSCCL_MAX_CHANNELS, "--channels", &nch, &err) != TN_OK))
    return cli_report("export", &err);
  if (chan_s && exact)
    return cli_usage("export", "--channels is for the runtime-fit form, not --exact");
  topo_t *t = NULL;
  algo_t *a = NULL;
  algo_verify_report_t rep = {0};
  int code = 0;
  if (cli_load_topo(topo, &t, &err) != TN_OK) goto fail;
  if (cli_read_set(pos[1], t, &a, &err) != TN_OK) goto fail;
  if (set_header(a, coll, size, &err) != TN_OK) goto fail;
  if (algo_verify(a, t, &rep, &err) != TN_OK) {
    tn_err_prefix(&err, "%s does not verify", pos[1]);
    goto fail;
  }
  if (chan_s && strcmp(chan_s, "best") == 0 && best_channels(a, t, no_fuse, &nch, &err) != TN_OK)
    goto fail;
  emit_msccl_export_opts_t eo = {exact, no_fuse, {0, 0, 0, 0, 0}, (uint32_t)nch};
  emit_msccl_export_stats_t st = {0};
  char *xml = NULL;
  size_t xml_len = 0;
  if (emit_msccl_export_mem_opts(a, &eo, &xml, &xml_len, &st, &err) != TN_OK) {
    tn_err_prefix(&err, "%s", exact ? "exact" : "runtime-fit");
    /* What to do instead. dims moves blocks gathered across a dimension: chunk sets with
     * strides, which no MSCCL step (a contiguous range) expresses, in either form. */
    const char *hint = NULL;
    if (strcmp(a->name, synth_method_name(SYNTH_DIMS)) == 0 &&
        strstr(err.msg, "not one ascending range") != NULL)
      hint = "a dims set moves blocks of chunks that are not ranges: export another method's "
             "set (e.g. 'tenet synth -a greedy --chunks 1')";
    else if (!exact && (err.status == TN_LIMIT || err.status == TN_INFEASIBLE))
      hint = "what fits: a set with fewer chunks per NPU ('tenet synth --chunks 1'), or --exact "
             "(one threadblock per node, for msccl-tools and simulators)";
    if (hint != NULL) {
      tn_err_t why = err;
      tn_err_clear(&err);
      tn_err_set(&err, why.status, "%s; %s", why.msg, hint);
    }
    goto fail;
  }
  uint64_t set_ps = 0, xml_ps = 0;
  /* Timed before it is written: a file that does not read back is not written at all. */
  if (compare_times(a, t, xml, xml_len, &set_ps, &xml_ps, &err) != TN_OK)
    tn_err_prefix(&err, "%s: reading it back", out);
  else
    write_xml(out, xml, xml_len, &err);
  free(xml);
  if (err.status != TN_OK) goto fail;
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", out);
    cJSON_AddStringToObject(o, "mode", exact ? "exact" : "runtime-fit");
    cJSON_AddStringToObject(o, "collective", tn_coll_name(a->coll));
    cJSON_AddNumberToObject(o, "npus", a->npus);
    cli_json_add_u64(o, "nodes", algo_node_count(a));
    cli_json_add_u64(o, "messages", algo_send_count(a));
    cJSON_AddNumberToObject(o, "channels", st.channels);
    cJSON_AddNumberToObject(o, "tbs_per_gpu_min", st.tbs_min);
    cJSON_AddNumberToObject(o, "tbs_per_gpu_max", st.tbs_max);
    cJSON_AddNumberToObject(o, "steps_per_tb_max", st.steps_max);
    cli_json_add_u64(o, "steps", st.steps);
    cli_json_add_u64(o, "nop_steps", st.nops);
    cli_json_add_u64(o, "fused_steps", st.fused);
    cli_json_add_ns(o, "time_ns", set_ps);
    cli_json_add_ns(o, "exported_time_ns", xml_ps);
    char *txt = cli_json_text(o, false);
    cJSON_Delete(o);
    if (!txt) {
      tn_err_set(&err, TN_NOMEM, "out of memory printing JSON");
      goto fail;
    }
    puts(txt);
    free(txt);
  } else {
    printf("wrote %s: %s, %u ranks, %llu nodes, %llu messages (MSCCL-IR, msccl-tools dialect, "
           "%s)\n",
           out, tn_coll_name(a->coll), a->npus, (unsigned long long)algo_node_count(a),
           (unsigned long long)algo_send_count(a), exact ? "exact" : "runtime-fit");
    printf("%u channels, %u..%u threadblocks per GPU, at most %u steps per threadblock "
           "(%llu steps, %llu nop, %llu fused)\n",
           st.channels, st.tbs_min, st.tbs_max, st.steps_max, (unsigned long long)st.steps,
           (unsigned long long)st.nops, (unsigned long long)st.fused);
    printf("simulated on %s: the set %.3f ns, this file %.3f ns (%+.2f%%)\n", t->name,
           (double)set_ps / 1e3, (double)xml_ps / 1e3,
           set_ps ? 100.0 * ((double)xml_ps - (double)set_ps) / (double)set_ps : 0.0);
  }
  goto done;
fail:
  code = cli_report("export", &err);
done:
  algo_free(a);
  topo_free(t);
  return code;
}
