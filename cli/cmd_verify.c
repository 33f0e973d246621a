/* cli/cmd_verify.c — `tenet verify`: read a Chakra ET set (any producer's) and check it by
 * symbolic execution with algo_verify: matching, acyclicity, deadlock freedom and, when the
 * files carry tenet's chunk bookkeeping, the collective's semantics. */
#include "cli/cli.h"

#include <inttypes.h>

#include "emit/emit.h"
#include "sim/sim.h"

static const char help[] =
    "usage: tenet verify -t TOPO -c COLL -s SIZE PREFIX\n"
    "\n"
    "Reads the Chakra ET set PREFIX.0.et ... PREFIX.<n-1>.et, one file per NPU of TOPO\n"
    "(any producer's files; gzip accepted), and checks it by symbolic execution: every SEND\n"
    "has its RECV (same src, dst, tag and size, FIFO per key), no dependency cycle, no\n"
    "deadlock with eager sends, and - when the files carry tenet's chunk bookkeeping - that\n"
    "every NPU ends holding what COLL promises (All-Gather: every chunk; Reduce-Scatter and\n"
    "All-Reduce: fully reduced chunks, every contribution exactly once). Files written by\n"
    "tenet also record their collective and size: they must match -c and -s.\n"
    "\n"
    "Then it simulates the set on TOPO under several orders of same-instant events (those a\n"
    "runtime may pick: tenet's id order, reverse, 4 random; see 'tenet sim --ties') and\n"
    "reports the collective time: one figure when every order gives it, else the spread\n"
    "(min-max) flagged 'order-dependent'.\n"
    "\n"
    "Prints 'verified: N nodes, M messages, semantics checked' (or 'semantics not checked'\n"
    "for files without bookkeeping) and the timing line, and exits 0; otherwise prints the\n"
    "first violation (file, or rank and node, and what) and exits 1.\n"
    "\n"
    "  -t, --topo TOPO   topology file, shipped name or KIND-DIMS (e.g. torus-4x4)\n"
    "  -c, --coll COLL   allgather | reducescatter | allreduce | alltoall\n"
    "  -s, --size SIZE   NCCL size: bytes, or with KB MB GB (10^3) / KiB MiB GiB (2^10)\n"
    "  -h, --help        this help\n";

typedef struct verify_args {
  const char *topo, *coll, *size;
  bool help;
} verify_args_t;

/* Files that say which collective they hold must hold the one asked for. */
static tn_status_t check_header(const algo_t *a, const char *prefix, tn_coll_t coll, uint64_t size,
                                tn_err_t *err) {
  if (!a->has_coll) return TN_OK;
  char want[32], got[32];
  if (a->coll != coll || a->size_bytes != size)
    return tn_err_set(err, TN_PARSE, "%s: the files hold %s %s of %s, not %s of %s", prefix,
                      a->name, tn_coll_name(a->coll), tn_fmt_size(a->size_bytes, got, sizeof got),
                      tn_coll_name(coll), tn_fmt_size(size, want, sizeof want));
  return TN_OK;
}

int cmd_verify(int argc, char **argv) {
  verify_args_t a = {0};
  tn_err_t err = {0};
  const cli_opt_t opts[] = {
      {"topo", 't', &a.topo, NULL},
      {"coll", 'c', &a.coll, NULL},
      {"size", 's', &a.size, NULL},
      {"help", 'h', NULL, &a.help},
  };
  const char *pos[1] = {NULL};
  size_t npos = 0;
  if (cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, &npos, &err) != TN_OK)
    return cli_report("verify", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (!a.topo || !a.coll || !a.size || npos != 1)
    return cli_usage("verify", "-t TOPO, -c COLL, -s SIZE and PREFIX are required");
  tn_coll_t coll = TN_ALLGATHER;
  uint64_t size = 0;
  if (tn_coll_parse(a.coll, &coll, &err) != TN_OK || tn_parse_size(a.size, &size, &err) != TN_OK)
    return cli_report("verify", &err);
  topo_t *t = NULL;
  algo_t *set = NULL;
  algo_verify_report_t rep = {0};
  int code = 0;
  if (cli_load_topo(a.topo, &t, &err) != TN_OK || cli_read_set(pos[0], t, &set, &err) != TN_OK ||
      check_header(set, pos[0], coll, size, &err) != TN_OK) {
    code = cli_report("verify", &err);
    goto done;
  }
  if (algo_verify(set, t, &rep, &err) != TN_OK) {
    tn_err_prefix(&err, "%s", pos[0]);
    code = cli_report("verify", &err);
    goto done;
  }
  sim_spread_t sp;
  if (sim_order_spread(t, set, SIM_SPREAD_SEEDS, &sp, &err) != TN_OK) {
    if (err.status == TN_PARSE) tn_err_prefix(&err, "%s", pos[0]);
    code = cli_report("verify", &err);
    goto done;
  }
  printf("verified: %" PRIu64 " nodes, %" PRIu64 " messages, %s\n", rep.nodes, rep.messages,
         rep.semantics_checked ? "semantics checked"
                               : "semantics not checked (the files carry no chunk bookkeeping)");
  if (sp.min_ps == sp.max_ps)
    printf("timing: %.3f ns under all %u orders of same-instant events tried\n",
           (double)sp.id_ps / 1e3, sp.orders);
  else
    printf("timing: order-dependent: %.3f-%.3f ns over %u orders of same-instant events "
           "(%.3f ns in id order, spread %.2f%%)\n",
           (double)sp.min_ps / 1e3, (double)sp.max_ps / 1e3, sp.orders, (double)sp.id_ps / 1e3,
           100.0 * (double)(sp.max_ps - sp.min_ps) / (double)sp.min_ps);
done:
  algo_free(set);
  topo_free(t);
  return code;
}
