/* cli/cmd_export.c — `tenet export msccl`: read a Chakra ET set that tenet wrote (greedy,
 * MILP, Ring, Direct), check it and write it as MSCCL-IR XML for the MSCCL runtimes; the
 * import reads that file back to the same DAG. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "emit/emit.h"

static const char help[] =
    "usage: tenet export msccl -t TOPO -c COLL -s SIZE PREFIX -o FILE.xml\n"
    "\n"
    "Reads PREFIX.0.et ... (a set tenet wrote, with its chunk bookkeeping), verifies it on\n"
    "TOPO and writes it as MSCCL-IR XML (msccl-tools / MSCCL runtime dialect: in place, one\n"
    "threadblock per node, channel k for the k-th message of a pair, nop steps for extra\n"
    "dependencies, re steps for reductions through scratch). 'tenet import msccl' reads the\n"
    "file back to the same DAG.\n"
    "\n"
    "  -t, --topo TOPO       topology file or shipped name (its NPU count is the rank count)\n"
    "  -c, --coll COLL       allgather | reducescatter | allreduce\n"
    "  -s, --size SIZE       the NCCL size the set was written for\n"
    "  -o, --out FILE.xml    output file\n"
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
  a->has_coll = true;
  a->coll = coll;
  a->size_bytes = size;
  a->chunks_per_npu = max / a->npus + 1;
  return TN_OK;
}

int cmd_export(int argc, char **argv) {
  const char *topo = NULL, *coll_s = NULL, *size_s = NULL, *out = NULL;
  bool help_f = false;
  tn_err_t err = {0};
  const char *pos[2] = {NULL, NULL};
  size_t npos = 0;
  const cli_opt_t opts[] = {
      {"topo", 't', &topo, NULL}, {"coll", 'c', &coll_s, NULL}, {"size", 's', &size_s, NULL},
      {"out", 'o', &out, NULL},   {"help", 'h', NULL, &help_f},
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
  if (tn_coll_parse(coll_s, &coll, &err) != TN_OK || tn_parse_size(size_s, &size, &err) != TN_OK)
    return cli_report("export", &err);
  topo_t *t = NULL;
  algo_t *a = NULL;
  algo_verify_report_t rep = {0};
  int code = 0;
  if (cli_load_topo(topo, &t, &err) != TN_OK) goto fail;
  if (emit_chakra_read(pos[1], t->npus, &a, &err) != TN_OK) goto fail;
  if (set_header(a, coll, size, &err) != TN_OK) goto fail;
  if (algo_verify(a, t, &rep, &err) != TN_OK) {
    tn_err_prefix(&err, "%s does not verify", pos[1]);
    goto fail;
  }
  if (emit_msccl_export(a, out, &err) != TN_OK) goto fail;
  printf("wrote %s: %s, %u ranks, %llu nodes, %llu messages (MSCCL-IR, msccl-tools dialect)\n", out,
         tn_coll_name(a->coll), a->npus, (unsigned long long)algo_node_count(a),
         (unsigned long long)algo_send_count(a));
  goto done;
fail:
  code = cli_report("export", &err);
done:
  algo_free(a);
  topo_free(t);
  return code;
}
