/* algo/core.c — building, comparing and freeing the per-NPU DAG set. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

static tn_status_t create(const char *name, bool has_coll, tn_coll_t coll, uint32_t npus,
                          uint32_t k, uint64_t size, algo_t **out, tn_err_t *err) {
  *out = NULL;
  if (npus == 0 || npus > TOPO_MAX_NPUS)
    return tn_err_set(err, TN_INVAL, "an algorithm needs 1 to %u ranks, not %u", TOPO_MAX_NPUS,
                      npus);
  algo_t *a = NULL;
  tn_status_t st = tn_calloc(1, sizeof *a, &a, err);
  if (st != TN_OK) return st;
  snprintf(a->name, sizeof a->name, "%s", name ? name : "unnamed");
  a->npus = npus;
  if (has_coll) {
    st = algo_set_collective(a, coll, k, size, err);
  } else {
    a->coll = coll, a->chunks_per_npu = k, a->size_bytes = a->space_bytes = size;
  }
  if (st != TN_OK) {
    free(a);
    return st;
  }
  if ((st = tn_calloc(npus, sizeof *a->ranks, &a->ranks, err)) != TN_OK) {
    free(a);
    return st;
  }
  for (uint32_t r = 0; r < npus; r++) {
    tn_vec_init(&a->ranks[r].nodes, sizeof(algo_node_t));
    tn_vec_init(&a->ranks[r].deps, sizeof(uint32_t));
    tn_vec_init(&a->ranks[r].chunks, sizeof(uint32_t));
  }
  *out = a;
  return TN_OK;
}

tn_status_t algo_set_collective(algo_t *a, tn_coll_t coll, uint32_t chunks_per_npu,
                                uint64_t size_bytes, tn_err_t *err) {
  uint64_t space;
  if (!tn_coll_space(coll, a->npus, size_bytes, &space))
    return tn_err_set(err, TN_INVAL, "%s of %llu B on %u ranks: %u times the size overflows",
                      tn_coll_name(coll), (unsigned long long)size_bytes, a->npus, a->npus);
  if (coll == TN_ALLTOALL && (chunks_per_npu == 0 || chunks_per_npu % a->npus != 0))
    return tn_err_set(err, TN_INVAL,
                      "an All-to-All needs chunks per NPU in multiples of its %u ranks, not %u",
                      a->npus, chunks_per_npu);
  /* Every block the same, cut evenly: the bounds and the schedules count whole blocks. */
  tn_status_t st = coll == TN_ALLTOALL
                       ? tn_alltoall_check(size_bytes, a->npus, chunks_per_npu / a->npus, err)
                       : TN_OK;
  if (st != TN_OK) return st;
  a->has_coll = true;
  a->coll = coll;
  a->chunks_per_npu = chunks_per_npu;
  a->size_bytes = size_bytes;
  a->space_bytes = space;
  return TN_OK;
}

tn_status_t algo_create(const char *name, tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                        uint64_t size_bytes, algo_t **out, tn_err_t *err) {
  if (chunks_per_npu == 0) {
    *out = NULL;
    return tn_err_set(err, TN_INVAL, "chunks per NPU must be at least 1");
  }
  return create(name, true, coll, npus, chunks_per_npu, size_bytes, out, err);
}

tn_status_t algo_create_unknown(const char *name, uint32_t npus, algo_t **out, tn_err_t *err) {
  return create(name, false, TN_ALLGATHER, npus, 1, 0, out, err);
}

void algo_free(algo_t *a) {
  if (a == NULL) return;
  for (uint32_t r = 0; r < a->npus; r++) {
    tn_vec_free(&a->ranks[r].nodes);
    tn_vec_free(&a->ranks[r].deps);
    tn_vec_free(&a->ranks[r].chunks);
  }
  free(a->ranks);
  free(a);
}

tn_status_t algo_add(algo_t *a, uint32_t rank, const algo_node_t *node, const uint32_t *deps,
                     const uint32_t *chunks, uint32_t *id, tn_err_t *err) {
  if (rank >= a->npus)
    return tn_err_set(err, TN_INVAL, "rank %u out of range (%u ranks)", rank, a->npus);
  algo_rank_t *R = &a->ranks[rank];
  if (R->nodes.len >= UINT32_MAX - 1 || R->deps.len + node->ndeps >= UINT32_MAX ||
      R->chunks.len + node->nchunks >= UINT32_MAX)
    return tn_err_set(err, TN_LIMIT, "rank %u has too many nodes", rank);
  algo_node_t n = *node;
  n.dep_off = (uint32_t)R->deps.len;
  n.chunk_off = (uint32_t)R->chunks.len;
  tn_status_t st = tn_vec_reserve(&R->deps, R->deps.len + n.ndeps, err);
  if (st == TN_OK) st = tn_vec_reserve(&R->chunks, R->chunks.len + n.nchunks, err);
  if (st != TN_OK) return st;
  if ((st = tn_vec_reserve(&R->nodes, R->nodes.len + 1, err)) != TN_OK) return st;
  /* Element by element: the lists are a few ids long, shorter than a call to memcpy. The
   * NULL tests let GCC -O2 see that inlined calls with NULL lists never copy. */
  for (uint32_t k = 0; deps && k < n.ndeps; k++)
    ((uint32_t *)R->deps.data)[R->deps.len + k] = deps[k];
  for (uint32_t k = 0; chunks && k < n.nchunks; k++)
    ((uint32_t *)R->chunks.data)[R->chunks.len + k] = chunks[k];
  ((algo_node_t *)R->nodes.data)[R->nodes.len++] = n;
  R->deps.len += n.ndeps;
  R->chunks.len += n.nchunks;
  if (id) *id = (uint32_t)(R->nodes.len - 1);
  return TN_OK;
}

tn_status_t algo_reserve(algo_t *a, uint32_t rank, size_t nodes, size_t deps, size_t chunks,
                         tn_err_t *err) {
  if (rank >= a->npus)
    return tn_err_set(err, TN_INVAL, "rank %u out of range (%u ranks)", rank, a->npus);
  /* Not zeroed: the producers that reserve (the lowering writes a whole rank into its
   * pools) fill every element they use, and nothing reads past len, so clearing would be
   * a wasted pass over every rank's memory. */
  algo_rank_t *R = &a->ranks[rank];
  tn_status_t st = tn_vec_reserve_exact_uninit(&R->nodes, nodes, err);
  if (st == TN_OK) st = tn_vec_reserve_exact_uninit(&R->deps, deps, err);
  if (st == TN_OK) st = tn_vec_reserve_exact_uninit(&R->chunks, chunks, err);
  return st;
}

tn_status_t algo_add_send(algo_t *a, uint32_t rank, uint32_t dst, int32_t tag, uint64_t bytes,
                          const uint32_t *deps, uint32_t ndeps, const uint32_t *chunks,
                          uint32_t nchunks, uint32_t *id, tn_err_t *err) {
  algo_node_t n = {ALGO_SEND, false, (int32_t)dst, tag, bytes, 0, 0, ndeps, 0, nchunks};
  return algo_add(a, rank, &n, deps, chunks, id, err);
}

tn_status_t algo_add_recv(algo_t *a, uint32_t rank, uint32_t src, int32_t tag, uint64_t bytes,
                          bool reduce, const uint32_t *deps, uint32_t ndeps, const uint32_t *chunks,
                          uint32_t nchunks, uint32_t *id, tn_err_t *err) {
  algo_node_t n = {ALGO_RECV, reduce, (int32_t)src, tag, bytes, 0, 0, ndeps, 0, nchunks};
  return algo_add(a, rank, &n, deps, chunks, id, err);
}

tn_status_t algo_add_comp(algo_t *a, uint32_t rank, uint64_t duration_us, const uint32_t *deps,
                          uint32_t ndeps, const uint32_t *chunks, uint32_t nchunks, uint32_t *id,
                          tn_err_t *err) {
  algo_node_t n = {ALGO_COMP, false, -1, 0, 0, duration_us, 0, ndeps, 0, nchunks};
  return algo_add(a, rank, &n, deps, chunks, id, err);
}

uint64_t algo_node_count(const algo_t *a) {
  uint64_t n = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    n += a->ranks[r].nodes.len;
  return n;
}

uint64_t algo_send_count(const algo_t *a) {
  uint64_t n = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      if (algo_node(a, r, i)->op == ALGO_SEND) n++;
  return n;
}

static bool node_equal(const algo_t *x, const algo_t *y, uint32_t r, uint32_t i) {
  const algo_node_t *p = algo_node(x, r, i), *q = algo_node(y, r, i);
  if (p->op != q->op || p->reduce != q->reduce || p->peer != q->peer || p->tag != q->tag ||
      p->bytes != q->bytes || p->duration_us != q->duration_us || p->ndeps != q->ndeps ||
      p->nchunks != q->nchunks)
    return false;
  if (p->ndeps &&
      memcmp(algo_node_deps(x, r, p), algo_node_deps(y, r, q), p->ndeps * sizeof(uint32_t)) != 0)
    return false;
  return p->nchunks == 0 || memcmp(algo_node_chunks(x, r, p), algo_node_chunks(y, r, q),
                                   p->nchunks * sizeof(uint32_t)) == 0;
}

bool algo_equal(const algo_t *x, const algo_t *y) {
  if (x->npus != y->npus || x->has_coll != y->has_coll) return false;
  if (x->has_coll && (x->coll != y->coll || x->chunks_per_npu != y->chunks_per_npu ||
                      x->size_bytes != y->size_bytes))
    return false;
  for (uint32_t r = 0; r < x->npus; r++) {
    if (algo_rank_len(x, r) != algo_rank_len(y, r)) return false;
    for (uint32_t i = 0; i < algo_rank_len(x, r); i++)
      if (!node_equal(x, y, r, i)) return false;
  }
  return true;
}

tn_status_t algo_fill_idle(algo_t *a, tn_err_t *err) {
  for (uint32_t r = 0; r < a->npus; r++) {
    if (algo_rank_len(a, r) > 0) continue;
    tn_status_t st = algo_add_comp(a, r, 0, NULL, 0, NULL, 0, NULL, err);
    if (st != TN_OK) return st;
  }
  return TN_OK;
}

/* One rank's pass of algo_drop_gates. map: old id -> new id, UINT32_MAX for a gate. A
 * gate's stand-ins (the kept nodes it leads to, in the order a depth-first walk of its
 * dependencies first meets them) are computed once and kept in pool from off[g], len[g]
 * of them: a gate of one dependency shares that dependency's list (a delay chain adds one
 * gate per nanosecond), and a chain of gates, each ordering one SEND after the previous
 * one, is walked once instead of once per SEND. stamp (per new id) dedups a list. */
typedef struct gates {
  const algo_t *a;
  uint32_t r;
  const uint32_t *map;
  uint32_t *off, *len, *stamp, mark;
  uint8_t *state; /* per old id: 0 not seen, 1 being listed, 2 listed */
  tn_vec_t pool;  /* uint32_t new ids */
} gates_t;

/* Appends to out (deduped by g->stamp at g->mark) what old node d stands for. */
static tn_status_t push_stand_ins(gates_t *g, uint32_t d, tn_vec_t *out, tn_err_t *err) {
  if (g->map[d] != UINT32_MAX) {
    if (g->stamp[g->map[d]] == g->mark) return TN_OK;
    g->stamp[g->map[d]] = g->mark;
    return tn_vec_push(out, &g->map[d], err);
  }
  tn_status_t st = TN_OK;
  for (uint32_t k = 0; st == TN_OK && k < g->len[d]; k++) {
    uint32_t v = TN_VEC_AT(&g->pool, uint32_t, g->off[d] + k);
    if (g->stamp[v] == g->mark) continue;
    g->stamp[v] = g->mark;
    st = tn_vec_push(out, &v, err);
  }
  return st;
}

/* Lists the stand-ins of gate d (and first of the gates it depends on). A gate met again
 * while being listed (a cycle: only an unverified set has one) stands for nothing. */
static tn_status_t list_gate(gates_t *g, uint32_t d, tn_err_t *err) {
  if (g->map[d] != UINT32_MAX || g->state[d] != 0) return TN_OK;
  g->state[d] = 1;
  const algo_node_t *n = algo_node(g->a, g->r, d);
  const uint32_t *dep = algo_node_deps(g->a, g->r, n);
  tn_status_t st = TN_OK;
  for (uint32_t k = 0; st == TN_OK && k < n->ndeps; k++)
    st = list_gate(g, dep[k], err);
  if (st != TN_OK) return st;
  if (n->ndeps == 1 && g->map[dep[0]] == UINT32_MAX) { /* share the one dependency's list */
    g->off[d] = g->off[dep[0]];
    g->len[d] = g->len[dep[0]];
  } else {
    g->off[d] = (uint32_t)g->pool.len;
    g->mark++;
    for (uint32_t k = 0; st == TN_OK && k < n->ndeps; k++)
      st = push_stand_ins(g, dep[k], &g->pool, err);
    g->len[d] = (uint32_t)g->pool.len - g->off[d];
  }
  g->state[d] = 2;
  return st;
}

tn_status_t algo_create_like(const algo_t *a, algo_t **out, tn_err_t *err) {
  *out = NULL;
  algo_t *b = NULL;
  tn_status_t st = algo_create_unknown(a->name, a->npus, &b, err);
  if (st == TN_OK && a->has_coll)
    st = algo_set_collective(b, a->coll, a->chunks_per_npu, a->size_bytes, err);
  if (st != TN_OK) {
    algo_free(b);
    return st;
  }
  memcpy(b->fabric, a->fabric, sizeof b->fabric);
  *out = b;
  return TN_OK;
}

tn_status_t algo_embed(const algo_t *a, const uint32_t *members, uint32_t npus, algo_t **out,
                       tn_err_t *err) {
  *out = NULL;
  for (uint32_t q = 0; q < a->npus; q++)
    if (members[q] >= npus || (q > 0 && members[q] <= members[q - 1]))
      return tn_err_set(err, TN_INVAL, "members must ascend below %u (member %u is rank %u)", npus,
                        q, members[q]);
  algo_t *b = NULL;
  tn_status_t st = algo_create_unknown(a->name, npus, &b, err);
  for (uint32_t q = 0; st == TN_OK && q < a->npus; q++)
    for (uint32_t i = 0; st == TN_OK && i < algo_rank_len(a, q); i++) {
      const algo_node_t *n = algo_node(a, q, i);
      algo_node_t m = *n;
      m.nchunks = 0;
      if (n->op != ALGO_COMP) m.peer = (int32_t)members[n->peer];
      st = algo_add(b, members[q], &m, algo_node_deps(a, q, n), NULL, NULL, err);
    }
  if (st != TN_OK) {
    algo_free(b);
    return st;
  }
  *out = b;
  return TN_OK;
}

tn_status_t algo_drop_gates(const algo_t *a, algo_t **out, tn_err_t *err) {
  *out = NULL;
  algo_t *b = NULL;
  tn_vec_t deps;
  tn_vec_init(&deps, sizeof(uint32_t));
  gates_t g = {.a = a};
  tn_vec_init(&g.pool, sizeof(uint32_t));
  uint32_t *map = NULL;
  tn_status_t st = algo_create_like(a, &b, err);
  for (uint32_t r = 0; st == TN_OK && r < a->npus; r++) {
    uint32_t len = algo_rank_len(a, r), kept = 0;
    free(map);
    free(g.off);
    free(g.len);
    free(g.stamp);
    free(g.state);
    map = g.off = g.len = g.stamp = NULL;
    g.state = NULL;
    g.pool.len = 0;
    if ((st = tn_malloc(len + 1u, sizeof *map, &map, err)) != TN_OK ||
        (st = tn_calloc(len + 1u, sizeof *g.off, &g.off, err)) != TN_OK ||
        (st = tn_calloc(len + 1u, sizeof *g.len, &g.len, err)) != TN_OK ||
        (st = tn_calloc(len + 1u, sizeof *g.stamp, &g.stamp, err)) != TN_OK ||
        (st = tn_calloc(len + 1u, sizeof *g.state, &g.state, err)) != TN_OK)
      break;
    for (uint32_t i = 0; i < len; i++) {
      const algo_node_t *n = algo_node(a, r, i);
      bool gate = n->op == ALGO_COMP && n->nchunks == 0 && n->duration_us == 0;
      map[i] = gate ? UINT32_MAX : kept++;
    }
    if (kept == 0) map[0] = kept++; /* a rank keeps one node */
    g.r = r;
    g.map = map;
    g.mark = 0;
    for (uint32_t i = 0; st == TN_OK && i < len; i++) {
      if (map[i] == UINT32_MAX) continue;
      const algo_node_t *n = algo_node(a, r, i);
      const uint32_t *d = algo_node_deps(a, r, n);
      deps.len = 0;
      for (uint32_t k = 0; st == TN_OK && k < n->ndeps; k++)
        st = list_gate(&g, d[k], err);
      g.mark++;
      for (uint32_t k = 0; st == TN_OK && k < n->ndeps; k++)
        st = push_stand_ins(&g, d[k], &deps, err);
      algo_node_t m = *n;
      m.ndeps = (uint32_t)deps.len;
      if (st == TN_OK) st = algo_add(b, r, &m, deps.data, algo_node_chunks(a, r, n), NULL, err);
    }
  }
  free(map);
  free(g.off);
  free(g.len);
  free(g.stamp);
  free(g.state);
  tn_vec_free(&g.pool);
  tn_vec_free(&deps);
  if (st != TN_OK) {
    algo_free(b);
    return st;
  }
  *out = b;
  return TN_OK;
}
