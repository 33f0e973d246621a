/* cli/cmd_et.c — `tenet et`: look inside a Chakra ET set (any producer's): `dump` prints it
 * as one JSON object, `dot` draws one rank's DAG in Graphviz DOT. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "cli/gv_internal.h"

#include "emit/emit.h"

static const char help[] =
    "usage: tenet et dump PREFIX [-o FILE]\n"
    "       tenet et dot PREFIX --rank R [-o FILE]\n"
    "\n"
    "Reads the Chakra ET set PREFIX.0.et, PREFIX.1.et, ... (ranks up to the first missing\n"
    "file; any producer's files, gzip accepted up to 64 times its size, see\n"
    "docs/chakra-format.md) and prints what follows. Files of different sets side by side\n"
    "(tenet's files carry their set's id) or a set cut short are refused, naming the ranks.\n"
    "  dump   the whole set as one JSON object: producer, npus, collective, chunks_per_npu,\n"
    "         size_bytes (null when the files do not say), nodes, messages, and per rank its\n"
    "         nodes (id, type, peer, tag, bytes, reduce, duration_us, deps, chunks)\n"
    "  dot    one rank's DAG in Graphviz DOT; with -o FILE.svg or FILE.png, the picture\n"
    "         itself, laid out by the graphviz library (no 'dot' program needed) with its\n"
    "         dot engine, for ranks of at most 1024 nodes and 2048 dependencies\n"
    "\n"
    "  -r, --rank R     the rank to draw (dot only)\n"
    "  -o, --out FILE   write to FILE (all or nothing; its directory is created) instead\n"
    "                   of stdout; dot: FILE.svg or FILE.png renders, any other name\n"
    "                   gets DOT text\n"
    "  -h, --help       this help\n";

typedef struct et_args {
  const char *rank, *out;
  bool help;
} et_args_t;

/* Renders rank r's DAG (emit_dot's DOT, read by the graphviz library) to out (.svg or
 * .png) with the dot engine, within what it lays out in a few seconds. */
static tn_status_t render_rank(const algo_t *set, const char *prefix, uint32_t r, const char *out,
                               tn_err_t *err) {
  if (r >= set->npus)
    return tn_err_set(err, TN_INVAL, "--rank %u: the set has %u ranks (0..%u)", r, set->npus,
                      set->npus - 1);
  uint64_t deps = 0;
  for (uint32_t i = 0; i < algo_rank_len(set, r); i++)
    deps += algo_node(set, r, i)->ndeps;
  const cli_gv_limit_t *lim = cli_i_gv_limit("dot");
  if (!cli_i_gv_fits(lim, algo_rank_len(set, r), deps))
    return tn_err_set(err, TN_INVAL,
                      "%s rank %u: %u nodes and %llu dependencies are too many to lay out in a "
                      "few seconds (at most %u nodes, %u dependencies and %u per node); "
                      "-o FILE.dot writes the DOT text",
                      prefix, r, algo_rank_len(set, r), (unsigned long long)deps, lim->max_nodes,
                      lim->max_links, lim->max_links_per_node);
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (m == NULL) return tn_err_set(err, TN_NOMEM, "out of memory writing rank %u's DOT", r);
  tn_status_t st = emit_dot(set, r, m, err);
  if (fclose(m) != 0 && st == TN_OK) st = tn_err_set(err, TN_NOMEM, "out of memory");
  if (st == TN_OK) st = tn_mkdir_parents(out, err);
  if (st == TN_OK) st = cli_i_gv_open(err);
  if (st != TN_OK) {
    free(text);
    return st;
  }
  cli_i_gv_catch_errors();
  GVC_t *gvc = gvContext();
  Agraph_t *g = gvc ? agmemread(text) : NULL;
  char what[64];
  snprintf(what, sizeof what, "rank %u", r);
  if (g == NULL)
    st = tn_err_set(err, TN_INTERNAL, "graphviz could not read rank %u's DOT%s%s", r,
                    cli_i_gv_last_error()[0] ? ": " : "", cli_i_gv_last_error());
  else
    st = cli_i_gv_render(gvc, g, "dot", what, out, err);
  if (g) agclose(g);
  if (gvc) gvFreeContext(gvc);
  free(text);
  return st;
}

static tn_status_t run(const char *sub, const char *prefix, const et_args_t *a, tn_err_t *err) {
  bool dot = strcmp(sub, "dot") == 0;
  uint64_t rank = 0;
  tn_status_t st = TN_OK;
  if (dot && a->rank == NULL)
    return tn_err_set(err, TN_INVAL, "'et dot' needs --rank R (see 'tenet et --help')");
  if (!dot && a->rank) return tn_err_set(err, TN_INVAL, "--rank applies to 'et dot' only");
  if (dot && (st = tn_parse_u64(a->rank, 0, TOPO_MAX_NPUS - 1, "--rank", &rank, err)) != TN_OK)
    return st;
  algo_t *set = NULL;
  if ((st = emit_chakra_read(prefix, 0, &set, err)) != TN_OK) return st;
  if (dot && a->out && cli_i_gv_format(a->out)) {
    st = render_rank(set, prefix, (uint32_t)rank, a->out, err);
    algo_free(set);
    return st;
  }
  tn_outfile_t of = {0};
  FILE *f = stdout;
  if (a->out) {
    if ((st = tn_mkdir_parents(a->out, err)) != TN_OK ||
        (st = tn_outfile_open(&of, a->out, err)) != TN_OK)
      goto done;
    f = of.f;
  }
  st = dot ? emit_dot(set, (uint32_t)rank, f, err) : emit_json_dump(set, f, err);
  if (a->out) {
    if (st == TN_OK)
      st = tn_outfile_commit(&of, err);
    else
      tn_outfile_abort(&of);
  }
done:
  algo_free(set);
  return st;
}

int cmd_et(int argc, char **argv) {
  et_args_t a = {0};
  tn_err_t err = {0};
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(help, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "dump") != 0 && strcmp(sub, "dot") != 0)
    return cli_usage("et", "unknown subcommand '%s' (dump or dot)", sub);
  const cli_opt_t opts[] = {
      {"rank", 'r', &a.rank, NULL},
      {"out", 'o', &a.out, NULL},
      {"output", 0, &a.out, NULL},
      {"help", 'h', NULL, &a.help},
  };
  const char *pos[1] = {NULL};
  size_t npos = 0;
  if (cli_parse(argc - 1, argv + 1, opts, sizeof opts / sizeof opts[0], pos, 1, &npos, &err) !=
      TN_OK)
    return cli_report("et", &err);
  if (a.help) {
    fputs(help, stdout);
    return 0;
  }
  if (npos != 1) return cli_usage("et", "'et %s' needs the set's PREFIX", sub);
  if (run(sub, pos[0], &a, &err) != TN_OK) return cli_report("et", &err);
  return 0;
}
