/* sim/trace.c — records a simulation's timeline (link transmissions and node executions)
 * and writes it as Chrome trace-event JSON, which chrome://tracing and Perfetto open.
 * Used by sim_run when sim_opts_t.trace_path is set; times are written in µs. Records are
 * kept short (no category on link events, nothing in args a name already says): about
 * 100 bytes per transmission and 200 per node (see sim/sim.h for the figures). */
#include "sim/sim_internal.h"

#include <inttypes.h>
#include <stdlib.h>

typedef struct xmit_rec {
  uint32_t link;
  uint64_t start_ps, end_ps, bytes, cookie;
} xmit_rec_t;

typedef struct node_rec {
  uint32_t rank, id;
  uint64_t start_ps, end_ps;
} node_rec_t;

struct sim_trace {
  const topo_t *t;
  const algo_t *a;
  tn_vec_t xmits; /* xmit_rec_t in the order the engine scheduled them */
  tn_vec_t nodes; /* node_rec_t in completion order */
  tn_err_t sticky;
};

tn_status_t sim_i_trace_create(const topo_t *t, const algo_t *a, sim_trace_t **out, tn_err_t *err) {
  *out = NULL;
  sim_trace_t *tr = NULL;
  tn_status_t st = tn_calloc(1, sizeof *tr, &tr, err);
  if (st != TN_OK) return st;
  tr->t = t;
  tr->a = a;
  tn_vec_init(&tr->xmits, sizeof(xmit_rec_t));
  tn_vec_init(&tr->nodes, sizeof(node_rec_t));
  *out = tr;
  return TN_OK;
}

void sim_i_trace_free(sim_trace_t *tr) {
  if (tr == NULL) return;
  tn_vec_free(&tr->xmits);
  tn_vec_free(&tr->nodes);
  free(tr);
}

void sim_i_trace_xmit(void *ctx, uint32_t link, uint64_t start_ps, uint64_t end_ps, uint64_t bytes,
                      uint64_t cookie) {
  sim_trace_t *tr = ctx;
  xmit_rec_t r = {link, start_ps, end_ps, bytes, cookie};
  (void)tn_vec_push(&tr->xmits, &r, &tr->sticky);
}

void sim_i_trace_node(sim_trace_t *tr, uint32_t rank, uint32_t id, uint64_t start_ps,
                      uint64_t end_ps) {
  node_rec_t r = {rank, id, start_ps, end_ps};
  (void)tn_vec_push(&tr->nodes, &r, &tr->sticky);
}

/* Picoseconds as the trace format's microseconds, exactly, without trailing zeros
 * (626.001 for 626,001,000 ps; 9.765625; 12 for a whole microsecond). */
static void put_us(FILE *f, uint64_t ps) {
  uint64_t frac = ps % 1000000u;
  int digits = 6;
  if (frac == 0) {
    fprintf(f, "%" PRIu64, ps / 1000000u);
    return;
  }
  while (frac % 10 == 0)
    frac /= 10, digits--;
  fprintf(f, "%" PRIu64 ".%0*" PRIu64, ps / 1000000u, digits, frac);
}

static void write_meta(FILE *f, const sim_trace_t *tr) {
  const topo_t *t = tr->t;
  fprintf(f, "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"links\"}}");
  for (uint32_t l = 0; l < t->nlinks; l++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":0,\"tid\":%" PRIu32 ",\"name\":\"thread_name\","
            "\"args\":{\"name\":\"link %" PRIu32 ": %" PRIu32 "->%" PRIu32 "\"}}",
            l, l, t->links[l].src, t->links[l].dst);
  for (uint32_t r = 0; r < tr->a->npus; r++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"name\":\"process_name\","
            "\"args\":{\"name\":\"NPU %" PRIu32 "\"}},\n"
            "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"name\":\"process_sort_index\","
            "\"args\":{\"sort_index\":%" PRIu32 "}}",
            r + 1, r, r + 1, r + 1);
}

/* The rank of global node index g: the last r with rank_off[r] <= g. */
static uint32_t rank_of(const uint32_t *rank_off, uint32_t npus, uint32_t g) {
  uint32_t lo = 0, hi = npus;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (rank_off[mid] <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

static void write_xmit(FILE *f, const xmit_rec_t *x, const uint32_t *rank_off, uint32_t npus) {
  uint32_t g = (uint32_t)x->cookie, r = rank_of(rank_off, npus, g);
  /* The name "rank:node" names the SEND; bytes are the one figure it does not say. */
  fprintf(f,
          ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":%" PRIu32 ",\"name\":\"%" PRIu32 ":%" PRIu32
          "\",\"ts\":",
          x->link, r, g - rank_off[r]);
  put_us(f, x->start_ps);
  fprintf(f, ",\"dur\":");
  put_us(f, x->end_ps - x->start_ps);
  fprintf(f, ",\"args\":{\"bytes\":%" PRIu64 "}}", x->bytes);
}

/* One node execution as a nestable async begin/end pair: a rank's nodes overlap (many
 * sends in flight), which "X" events on one thread cannot show. */
static void write_node(FILE *f, const sim_trace_t *tr, const node_rec_t *n, uint32_t g) {
  const algo_node_t *nd = algo_node(tr->a, n->rank, n->id);
  char name[96];
  switch (nd->op) {
  case ALGO_SEND:
    snprintf(name, sizeof name, "SEND %" PRIu32 " ->%d tag %d %" PRIu64 " B", n->id, nd->peer,
             nd->tag, nd->bytes);
    break;
  case ALGO_RECV:
    snprintf(name, sizeof name, "RECV %" PRIu32 " <-%d tag %d %" PRIu64 " B", n->id, nd->peer,
             nd->tag, nd->bytes);
    break;
  default: snprintf(name, sizeof name, "COMP %" PRIu32, n->id); break;
  }
  for (int phase = 0; phase < 2; phase++) { /* a begin and its end pair by (cat, id) */
    fprintf(f,
            ",\n{\"ph\":\"%s\",\"cat\":\"n\",\"id\":%" PRIu32 ",\"pid\":%" PRIu32
            ",\"tid\":0,\"name\":\"%s\",\"ts\":",
            phase == 0 ? "b" : "e", g, n->rank + 1, name);
    put_us(f, phase == 0 ? n->start_ps : n->end_ps);
    fputc('}', f);
  }
}

tn_status_t sim_i_trace_write(const sim_trace_t *tr, const char *path, const uint32_t *rank_off,
                              tn_err_t *err) {
  if (tr->sticky.status != TN_OK)
    return tn_err_set(err, tr->sticky.status, "%s: %s", path, tr->sticky.msg);
  tn_outfile_t o;
  tn_status_t st = tn_outfile_open(&o, path, err);
  if (st != TN_OK) return st;
  FILE *f = o.f;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  write_meta(f, tr);
  for (size_t i = 0; i < tr->xmits.len; i++)
    write_xmit(f, &TN_VEC_AT(&tr->xmits, xmit_rec_t, i), rank_off, tr->a->npus);
  for (size_t i = 0; i < tr->nodes.len; i++) {
    const node_rec_t *n = &TN_VEC_AT(&tr->nodes, node_rec_t, i);
    write_node(f, tr, n, rank_off[n->rank] + n->id);
  }
  fprintf(f, "\n]}\n");
  return tn_outfile_commit(&o, err);
}
