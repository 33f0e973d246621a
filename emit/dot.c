/* emit/dot.c — one rank's DAG in Graphviz DOT: a box per SEND / RECV / COMP node, an edge
 * per dependency. Backs `tenet et dot`. Pipeline: algo → emit → cli. */
#include "emit/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static void put_label(FILE *f, const algo_t *a, uint32_t r, const algo_node_t *x, uint32_t i) {
  char size[32];
  if (x->op == ALGO_COMP)
    fprintf(f, "%" PRIu32 " COMP %" PRIu64 " us", i, x->duration_us);
  else
    fprintf(f, "%" PRIu32 " %s %s r%" PRId32 "\\ntag %" PRId32 ", %s%s", i,
            x->op == ALGO_SEND ? "SEND" : "RECV", x->op == ALGO_SEND ? "to" : "from", x->peer,
            x->tag, tn_fmt_size(x->bytes, size, sizeof size), x->reduce ? ", reduce" : "");
  const uint32_t *c = algo_node_chunks(a, r, x);
  if (x->nchunks == 0) return;
  fputs("\\nchunks", f);
  for (uint32_t k = 0; k < x->nchunks && k < 8; k++)
    fprintf(f, " %" PRIu32, c[k]);
  if (x->nchunks > 8) fprintf(f, " (+%" PRIu32 ")", x->nchunks - 8);
}

tn_status_t emit_dot(const algo_t *a, uint32_t rank, FILE *f, tn_err_t *err) {
  if (rank >= a->npus)
    return tn_err_set(err, TN_INVAL,
                      "rank %" PRIu32 " is out of range (the set has %" PRIu32 " ranks)", rank,
                      a->npus);
  fprintf(f,
          "digraph \"rank%" PRIu32 "\" {\n  label=\"rank %" PRIu32 " of %" PRIu32 "\";\n"
          "  node [shape=box, style=filled, fontname=\"monospace\"];\n",
          rank, rank, a->npus);
  for (uint32_t i = 0; i < algo_rank_len(a, rank); i++) {
    const algo_node_t *x = algo_node(a, rank, i);
    fprintf(f, "  n%" PRIu32 " [label=\"", i);
    put_label(f, a, rank, x, i);
    fprintf(f, "\", fillcolor=\"%s\"];\n",
            x->op == ALGO_SEND   ? "lightblue"
            : x->op == ALGO_RECV ? "palegreen"
                                 : "khaki");
  }
  for (uint32_t i = 0; i < algo_rank_len(a, rank); i++) {
    const algo_node_t *x = algo_node(a, rank, i);
    const uint32_t *d = algo_node_deps(a, rank, x);
    for (uint32_t k = 0; k < x->ndeps; k++)
      fprintf(f, "  n%" PRIu32 " -> n%" PRIu32 ";\n", d[k], i);
  }
  fputs("}\n", f);
  if (ferror(f) || fflush(f) != 0)
    return tn_err_set(err, TN_IO, "writing the DOT graph failed: %s", strerror(errno));
  return TN_OK;
}
