/* trees/plan.c — the tree All-Reduce schedule: chunks dealt to the packed trees, reduce up
 * and broadcast down each tree with depth-scaled flow control, timed on ten/'s engine as the
 * simulator will run it. Second step of trees/ (pack → plan); algo/ lowers the result. */
#include "trees/trees.h"
#include "trees/trees_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Automatic chunking: about CHUNKS_PER_TREE chunks per tree (the pipeline's fill and
 * drain shrink with the chunks; on mesh-8x8 at 64 MiB 43 chunks per NPU gave 1.127 times
 * the bound, 86 gave 1.080), no chunk below MIN_CHUNK_BYTES, and no more than
 * MAX_TRANSFERS transfers in all (planning, lowering and simulating are linear in them:
 * about 0.4 us each here). The budget binds from about 128 NPUs on: there the fill and
 * drain are what the smaller steady messages of a larger budget save (mesh-16x8, 1 GiB:
 * 1.068 times the bound with 2^20 transfers, 1.047 with 2^21, at twice the synthesis
 * time: 2.9 s against 5.8 s; torus-16x8 1.033 and 1.023). */
#define CHUNKS_PER_TREE 128u
#define MIN_CHUNK_BYTES (8u * 1024u)
/* Through switches the steady messages are at least this large: the trees there are
 * star-like, several messages reach a switch's link to one NPU at one instant, and the
 * order-proofing that makes the set run the same under any order of those costs more the
 * smaller they are (rail-4x8 with a dead and a degraded NIC, 64 MiB: planned at 1.056 of
 * the bound in 8 KiB messages, 1.346 once order-proof, in 7 s; in 16 KiB messages 1.081
 * in 3 s; in 32 KiB 1.111). */
#define SWITCHED_MIN_MESSAGE_BYTES (16u * 1024u)
#define MAX_TRANSFERS (1u << 21)
/* On a large fabric even one chunk per NPU in messages of GROUP_CHUNKS is more than
 * LARGE_TRANSFERS transfers (every message crosses 2(n-1) tree edges: 33.5M on 4096 NPUs,
 * about 27 GB to plan, lower and simulate). There the chunks are one per NPU, the steady
 * messages carry as many as keep the transfers within LARGE_TRANSFERS, and the packing keeps
 * few trees, each with about LARGE_GROUPS_PER_TREE messages to pipeline over its depth
 * (mesh-64x64: 2 trees of 8-chunk messages, 4.2M transfers). Fabrics below that size
 * (up to 1024 NPUs) plan as before. */
#define LARGE_TRANSFERS (1u << 22)
#define LARGE_GROUPS_PER_TREE 256u
/* The window across all trees at an NPU: this times the sum of its per-tree windows. It
 * binds when one tree lags (its chunks stop coming back), so the others hold back and the
 * trees finish together (mesh-8x8, 1 GiB: 1.063 times the bound without it, 1.044 with). */
#define GLOBAL_WINDOW 4.0
/* Chunks a steady message carries with automatic chunking (see make_groups). */
#define GROUP_CHUNKS 4u
/* Queueing a chunk meets per hop, in chunks of the tree's share of a link. */
#define QUEUE_CHUNKS 7.0

/* One tree as the planner walks it. */
typedef struct tree {
  uint32_t root;
  const uint32_t *parent;
  uint32_t *order;     /* NPUs top-down (BFS from the root) */
  uint32_t *child_off; /* n + 1 */
  uint32_t *child;     /* n - 1 */
  uint32_t *window;    /* per NPU: chunks it may have up before the first comes back */
  double *want;        /* per NPU: the window before rounding */
  uint32_t m, chunk0;  /* its chunks: chunk0 .. chunk0 + m - 1 */
  uint32_t ng;         /* its groups: the chunks one message carries */
  uint32_t *goff;      /* ng + 1: group q is chunks goff[q] .. goff[q + 1] - 1 */
  uint32_t *up, *down; /* ng * n: transfer of group q leaving / reaching NPU v */
} tree_t;

typedef struct plan {
  const topo_t *t;
  const trees_packing_t *pk;
  uint32_t n, ntrees;
  tree_t *tr;
  schedule_t *s;
  uint32_t group;         /* chunks per message in the steady state */
  uint32_t *gwin;         /* per NPU: chunks it may have up across all trees */
  uint32_t *hist;         /* per NPU: its down transfers, group by group (items per NPU) */
  uint32_t *hcum;         /* per NPU: chunks come down to it up to and including that group */
  uint32_t *hlen, *hgate; /* per NPU: groups in hist; those old enough to gate the next */
  uint32_t *sent;         /* per NPU: chunks it sent up so far */
  uint32_t items;         /* groups in all */
} plan_t;

static void plan_free(plan_t *P) {
  for (uint32_t i = 0; P->tr && i < P->ntrees; i++) {
    free(P->tr[i].order);
    free(P->tr[i].child_off);
    free(P->tr[i].child);
    free(P->tr[i].window);
    free(P->tr[i].want);
    free(P->tr[i].goff);
    free(P->tr[i].up);
    free(P->tr[i].down);
  }
  free(P->tr);
  free(P->gwin);
  free(P->hist);
  free(P->hcum);
  free(P->hlen);
  free(P->hgate);
  free(P->sent);
}

/* Chunks per NPU for size bytes when the caller leaves it to us. */
static uint32_t auto_chunks(uint32_t n, uint32_t ntrees, uint64_t size, uint32_t min_bytes) {
  uint64_t want = (uint64_t)ntrees * CHUNKS_PER_TREE, most = size / min_bytes;
  uint64_t cap = MAX_TRANSFERS / (2 * (uint64_t)(n - 1));
  if (want > most) want = most;
  if (want > cap) want = cap;
  uint64_t k = want / n;
  return k < 1 ? 1 : (uint32_t)k;
}

/* Whether the automatic chunking of n NPUs is in the large-fabric regime (LARGE_TRANSFERS):
 * one chunk per NPU in steady messages of GROUP_CHUNKS would pass it. */
static bool large_fabric(uint32_t n, uint32_t ntrees, uint64_t size) {
  uint64_t groups = (uint64_t)n * auto_chunks(n, ntrees, size, MIN_CHUNK_BYTES);
  return groups * 2 * (n - 1) > LARGE_TRANSFERS;
}

/* Large regime: messages in all the transfer budget allows (at least one). */
static uint64_t large_groups(uint32_t n) {
  uint64_t g = LARGE_TRANSFERS / (2 * (uint64_t)(n - 1));
  return g < 1 ? 1 : g;
}

/* Large regime: the trees kept, so that each pipelines about LARGE_GROUPS_PER_TREE
 * messages (2 at least: one tree carries at most one link's bandwidth). */
static uint32_t large_trees(uint32_t n) {
  uint64_t t = large_groups(n) / LARGE_GROUPS_PER_TREE;
  return t < 2 ? 2 : t > TREES_MAX_TREES ? TREES_MAX_TREES : (uint32_t)t;
}

/* The chunking of n NPUs over ntrees trees: *k chunks per NPU (the caller's when not 0)
 * and *group chunks per steady message. Automatic: in the large regime one chunk per NPU in
 * messages within the transfer budget; else steady messages of the automatic size (at
 * least min_bytes) cut into GROUP_CHUNKS chunks (fewer when the chunks would fall below a
 * quarter of MIN_CHUNK_BYTES). */
static void chunking(uint32_t n, uint32_t ntrees, uint64_t size, uint32_t min_bytes, uint32_t *k,
                     uint32_t *group) {
  *group = GROUP_CHUNKS;
  if (*k != 0) return;
  if (large_fabric(n, ntrees, size)) {
    uint64_t g = large_groups(n);
    *group = (uint32_t)((n + g - 1) / g);
    *k = 1;
    return;
  }
  uint32_t kref = auto_chunks(n, ntrees, size, min_bytes);
  while (*group > 1 && size / ((uint64_t)n * kref * *group) < MIN_CHUNK_BYTES / 4)
    *group /= 2;
  *k = kref * *group;
}

/* Mean latency (ps) and bandwidth (GB/s) of a tree edge: on a direct-connect fabric, of
 * the links between NPUs; through switches, of the trees' edges' routes (a route's
 * latency, its slowest link), every tree edge (v, parent) once. */
static tn_status_t link_means(const topo_t *t, const trees_packing_t *pk, double *lat_ps,
                              double *bw, tn_err_t *err) {
  double l = 0, b = 0;
  uint64_t k = 0;
  if (t->switches == 0) {
    for (uint32_t i = 0; i < t->nlinks; i++)
      if (t->links[i].src < t->npus && t->links[i].dst < t->npus) {
        l += (double)t->links[i].latency_ps;
        b += t->links[i].bandwidth_GBps;
        k++;
      }
  } else {
    topo_routes_t *r = NULL;
    tn_status_t st = topo_routes_create(t, &r, err);
    if (st != TN_OK) return st;
    for (uint32_t i = 0; i < pk->ntrees; i++)
      for (uint32_t v = 0; v < pk->npus; v++) {
        uint32_t u = pk->parent[(size_t)i * pk->npus + v];
        if (u == UINT32_MAX) continue;
        double slow = INFINITY, lat = 0;
        for (uint32_t x = v, hops = 0; x != u && hops <= t->npus + t->switches; hops++) {
          uint32_t e = topo_route_next(r, x, u);
          if (e == TOPO_NO_LINK) break;
          slow = fmin(slow, t->links[e].bandwidth_GBps);
          lat += (double)t->links[e].latency_ps;
          x = t->links[e].dst;
        }
        l += lat;
        b += isfinite(slow) ? slow : 0;
        k++;
      }
    bool oom = topo_routes_out_of_memory(r);
    topo_routes_free(r);
    if (oom) return tn_err_set(err, TN_NOMEM, "trees: out of memory for the route table");
  }
  *lat_ps = k ? l / (double)k : 0;
  *bw = k && b > 0 ? b / (double)k : 1;
  return TN_OK;
}

/* Deals total chunks to the trees in proportion to their weights (largest remainder,
 * ties to the lower tree); m[i] may be 0. */
static void deal(const trees_packing_t *pk, uint32_t total, uint32_t *m, double *rem) {
  uint32_t given = 0;
  for (uint32_t i = 0; i < pk->ntrees; i++) {
    double share = (double)total * pk->weight_GBps[i] / pk->value_GBps;
    m[i] = (uint32_t)floor(share);
    rem[i] = share - m[i];
    given += m[i];
  }
  while (given < total) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < pk->ntrees; i++)
      if (rem[i] > rem[best]) best = i;
    m[best]++;
    rem[best] = -1;
    given++;
  }
}

/* Cuts tr's m chunks into messages: 1, 1, 2, 2, 4, 4, ... up to group chunks from both
 * ends, group chunks in the middle. Small messages first make the pipeline fill fast
 * (every link starts with a queue of first messages from the trees that cross it) and
 * small ones last drain it fast; big ones between keep the message count down. right is
 * scratch of m entries. */
static tn_status_t make_groups(tree_t *tr, uint32_t group, uint32_t *right, tn_err_t *err) {
  tn_status_t st = tn_malloc((size_t)tr->m + 1, sizeof *tr->goff, &tr->goff, err);
  if (st != TN_OK) return st;
  uint32_t nl = 0, nr = 0, r = tr->m;
  tr->goff[0] = 0;
  for (uint32_t j = 0; r > 0; j++) {
    uint32_t sz = j / 2 < 31 && (1u << (j / 2)) < group ? 1u << (j / 2) : group;
    uint32_t a = sz < r ? sz : r;
    tr->goff[nl + 1] = tr->goff[nl] + a;
    nl++;
    r -= a;
    if (r == 0) break;
    a = sz < r ? sz : r;
    right[nr++] = a;
    r -= a;
  }
  while (nr > 0) {
    tr->goff[nl + 1] = tr->goff[nl] + right[--nr];
    nl++;
  }
  tr->ng = nl;
  return TN_OK;
}

/* Order, children, depth windows and transfer tables of tree tr. */
static tn_status_t tree_init(tree_t *tr, uint32_t n, double per_hop, uint32_t *depth,
                             tn_err_t *err) {
  tn_status_t st = tn_malloc(n, sizeof *tr->order, &tr->order, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 1, sizeof *tr->child_off, &tr->child_off, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *tr->child, &tr->child, err);
  if (st == TN_OK) st = tn_malloc(n, sizeof *tr->window, &tr->window, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *tr->want, &tr->want, err);
  if (st == TN_OK) st = tn_malloc((size_t)tr->ng * n + 1, sizeof *tr->up, &tr->up, err);
  if (st == TN_OK) st = tn_malloc((size_t)tr->ng * n + 1, sizeof *tr->down, &tr->down, err);
  if (st != TN_OK) return st;
  for (uint32_t v = 0; v < n; v++)
    if (tr->parent[v] != UINT32_MAX) tr->child_off[tr->parent[v] + 1]++;
  for (uint32_t v = 0; v < n; v++)
    tr->child_off[v + 1] += tr->child_off[v];
  for (uint32_t v = 0; v < n; v++) /* children in id order; fill, then restore */
    if (tr->parent[v] != UINT32_MAX) tr->child[tr->child_off[tr->parent[v]]++] = v;
  for (uint32_t v = n; v > 0; v--)
    tr->child_off[v] = tr->child_off[v - 1];
  tr->child_off[0] = 0;
  uint32_t head = 0, tail = 0;
  tr->order[tail++] = tr->root;
  depth[tr->root] = 0;
  while (head < tail) {
    uint32_t v = tr->order[head++];
    for (uint32_t a = tr->child_off[v]; a < tr->child_off[v + 1]; a++) {
      depth[tr->child[a]] = depth[v] + 1;
      tr->order[tail++] = tr->child[a];
    }
  }
  for (uint32_t v = 0; v < n; v++) {
    uint32_t w = (uint32_t)ceil(per_hop * depth[v] - 1e-9);
    tr->window[v] = w > 0 ? w : 1u;
    tr->want[v] = per_hop * depth[v];
  }
  return TN_OK;
}

static tn_status_t add(plan_t *P, uint32_t src, uint32_t dst, const uint32_t *chunks,
                       uint32_t nchunks, sched_op_t op, const uint32_t *deps, uint32_t ndeps,
                       uint32_t *idx, tn_err_t *err) {
  const schedule_t *s = P->s;
  sched_xfer_t x = {.src = src, .dst = dst, .nchunks = nchunks, .ndeps = ndeps};
  for (uint32_t j = 0; j < nchunks; j++)
    x.bytes += ten_chunk_bytes(s->size_bytes, s->npus, s->chunks_per_npu, chunks[j]);
  return schedule_add_op(P->s, &x, op, chunks, deps, idx, err);
}

/* The group of tr that came down to an NPU with window w before group q goes up: the last
 * one that ends w chunks or more before q starts; UINT32_MAX when none does. */
static uint32_t tree_gate(const tree_t *tr, uint32_t q, uint32_t w) {
  if (tr->goff[q] < w) return UINT32_MAX;
  uint32_t lim = tr->goff[q] - w, lo = 0, hi = q; /* the last g < q with goff[g + 1] <= lim */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (tr->goff[mid + 1] <= lim)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == 0 ? UINT32_MAX : lo - 1;
}

/* The down transfer at v old enough to gate v's next send up across all trees. */
static uint32_t global_gate(plan_t *P, uint32_t v) {
  size_t base = (size_t)v * P->items;
  if (P->sent[v] < P->gwin[v]) return UINT32_MAX;
  uint32_t lim = P->sent[v] - P->gwin[v];
  while (P->hgate[v] < P->hlen[v] && P->hcum[base + P->hgate[v]] <= lim)
    P->hgate[v]++;
  return P->hgate[v] > 0 ? P->hist[base + P->hgate[v] - 1] : UINT32_MAX;
}

/* Group q of tree tr: up from the deepest NPUs, then down from the root. cl is scratch
 * for its chunk ids. */
static tn_status_t emit_group(plan_t *P, tree_t *tr, uint32_t q, uint32_t *deps, uint32_t *cl,
                              tn_err_t *err) {
  uint32_t n = P->n, nc = tr->goff[q + 1] - tr->goff[q];
  uint32_t *up = tr->up + (size_t)q * n, *down = tr->down + (size_t)q * n;
  for (uint32_t j = 0; j < nc; j++)
    cl[j] = tr->chunk0 + tr->goff[q] + j;
  tn_status_t st = TN_OK;
  for (uint32_t j = n; j-- > 1 && st == TN_OK;) {
    uint32_t v = tr->order[j], nd = 0;
    for (uint32_t a = tr->child_off[v]; a < tr->child_off[v + 1]; a++)
      deps[nd++] = up[tr->child[a]];
    uint32_t g = tree_gate(tr, q, tr->window[v]);
    if (g != UINT32_MAX) deps[nd++] = tr->down[(size_t)g * n + v];
    uint32_t h = global_gate(P, v);
    if (h != UINT32_MAX && (g == UINT32_MAX || h != tr->down[(size_t)g * n + v])) deps[nd++] = h;
    P->sent[v] += nc;
    st = add(P, v, tr->parent[v], cl, nc, SCHED_REDUCE, deps, nd, &up[v], err);
  }
  for (uint32_t j = 1; j < n && st == TN_OK; j++) {
    uint32_t v = tr->order[j], u = tr->parent[v], nd = 0;
    if (u == tr->root)
      for (uint32_t a = tr->child_off[u]; a < tr->child_off[u + 1]; a++)
        deps[nd++] = up[tr->child[a]];
    else
      deps[nd++] = down[u];
    st = add(P, u, v, cl, nc, SCHED_COPY, deps, nd, &down[v], err);
    size_t at = (size_t)v * P->items + P->hlen[v];
    P->hist[at] = down[v];
    P->hcum[at] = (P->hlen[v] ? P->hcum[at - 1] : 0) + nc;
    P->hlen[v]++;
  }
  return st;
}

/* A (tree, group) pair in emission order: by the group's middle in its tree's chunks,
 * then by tree, so the trees advance together. */
typedef struct item {
  double key;
  uint32_t tree, p;
} item_t;

static int cmp_item(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
  return (x->p > y->p) - (x->p < y->p);
}

static tn_status_t emit_all(plan_t *P, uint32_t total, tn_err_t *err) {
  item_t *it = NULL;
  uint32_t *deps = NULL, *cl = NULL, k = 0;
  size_t xfers = 2 * (size_t)P->items * (P->n - 1), ids = 2 * (size_t)total * (P->n - 1);
  tn_status_t st = tn_malloc((size_t)P->items + 1, sizeof *it, &it, err);
  if (st == TN_OK) st = tn_malloc((size_t)P->n + 2, sizeof *deps, &deps, err);
  if (st == TN_OK) st = tn_malloc((size_t)P->group + 1, sizeof *cl, &cl, err);
  for (uint32_t i = 0; st == TN_OK && i < P->ntrees; i++) {
    const tree_t *tr = &P->tr[i];
    for (uint32_t q = 0; q < tr->ng; q++)
      it[k++] = (item_t){(tr->goff[q] + tr->goff[q + 1]) / (2.0 * tr->m), i, q};
  }
  if (st == TN_OK) {
    qsort(it, k, sizeof *it, cmp_item);
    st = tn_vec_reserve_exact(&P->s->xfers, xfers, err);
  }
  if (st == TN_OK) st = tn_vec_reserve_exact(&P->s->chunks, ids, err);
  if (st == TN_OK) st = tn_vec_reserve_exact(&P->s->ops, xfers, err);
  for (uint32_t j = 0; j < k && st == TN_OK; j++)
    st = emit_group(P, &P->tr[it[j].tree], it[j].p, deps, cl, err);
  free(it);
  free(deps);
  free(cl);
  return st;
}

/* ---- the producer ---------------------------------------------------------------------- */

static tn_status_t build(plan_t *P, const trees_opts_t *o, uint64_t size, schedule_t *out,
                         tn_err_t *err) {
  const trees_packing_t *pk = P->pk;
  uint32_t n = P->n, k = o->chunks_per_npu;
  chunking(n, pk->ntrees, size, P->t->switches ? SWITCHED_MIN_MESSAGE_BYTES : MIN_CHUNK_BYTES, &k,
           &P->group);
  uint64_t total = (uint64_t)n * k;
  if (total > UINT32_MAX / 4 || size < total)
    return tn_err_set(err, TN_INVAL, "trees: %llu B cannot be cut into %llu chunks",
                      (unsigned long long)size, (unsigned long long)total);
  schedule_init(out, TN_ALLREDUCE, n, k, size);
  P->s = out;
  uint32_t *m = NULL, *depth = NULL, *right = NULL;
  double *rem = NULL;
  tn_status_t st = tn_calloc(pk->ntrees, sizeof *m, &m, err);
  if (st == TN_OK) st = tn_calloc(pk->ntrees, sizeof *rem, &rem, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *depth, &depth, err);
  if (st == TN_OK) st = tn_calloc(total + 1, sizeof *right, &right, err);
  if (st == TN_OK) st = tn_calloc(pk->ntrees, sizeof *P->tr, &P->tr, err);
  if (st == TN_OK) deal(pk, (uint32_t)total, m, rem);
  double per_hop = o->window_per_hop > 0 ? o->window_per_hop
                   : P->t->switches      ? TREES_SWITCHED_WINDOW_PER_HOP
                                         : TREES_WINDOW_PER_HOP;
  double lat_ps = 0, bw = 0;
  if (st == TN_OK) st = link_means(P->t, pk, &lat_ps, &bw, err);
  uint64_t msg = size / total * P->group; /* a steady message */
  uint32_t next = 0;
  for (uint32_t i = 0; st == TN_OK && i < pk->ntrees; i++) {
    if (m[i] == 0) continue; /* a light tree may get no chunk */
    tree_t *tr = &P->tr[P->ntrees++];
    *tr = (tree_t){
        .root = pk->root[i], .parent = pk->parent + (size_t)i * n, .m = m[i], .chunk0 = next};
    next += m[i];
    /* The window sets a tree's rate (data in flight per round trip), so it is the tree's
     * rate times a hop's round trip, in steady messages: the latency, plus the queueing a
     * message meets at a link shared with the other trees; then in chunks. */
    double rate = pk->weight_GBps[i] * TN_GIB * 1e-12; /* B/ps */
    double hop = lat_ps * rate / (double)msg + per_hop * QUEUE_CHUNKS * pk->weight_GBps[i] / bw;
    st = make_groups(tr, P->group, right, err);
    if (st == TN_OK) st = tree_init(tr, n, 2.0 * hop * P->group, depth, err);
    P->items += tr->ng;
  }
  if (st == TN_OK) st = tn_calloc(n, sizeof *P->gwin, &P->gwin, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *P->hlen, &P->hlen, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *P->hgate, &P->hgate, err);
  if (st == TN_OK) st = tn_calloc(n, sizeof *P->sent, &P->sent, err);
  if (st == TN_OK) st = tn_malloc((size_t)n * P->items + 1, sizeof *P->hist, &P->hist, err);
  if (st == TN_OK) st = tn_malloc((size_t)n * P->items + 1, sizeof *P->hcum, &P->hcum, err);
  for (uint32_t v = 0; st == TN_OK && v < n; v++) {
    double g = 0;
    for (uint32_t i = 0; i < P->ntrees; i++)
      g += P->tr[i].want[v];
    P->gwin[v] = (uint32_t)ceil(g * GLOBAL_WINDOW);
    if (P->gwin[v] < 1) P->gwin[v] = 1;
  }
  if (st == TN_OK) st = emit_all(P, (uint32_t)total, err);
  if (st == TN_OK)
    st = schedule_replay_ties(P->t, out, o->keep_ties ? o->tie_window_ps : UINT64_MAX, err);
  free(m);
  free(rem);
  free(depth);
  free(right);
  return st;
}

uint64_t trees_transfers_estimate(uint32_t n, uint64_t size, const trees_opts_t *opts) {
  if (n < 2) return 0;
  trees_opts_t o = opts ? *opts : (trees_opts_t){0};
  uint32_t ntrees = o.max_trees ? o.max_trees : TREES_MAX_TREES, k = o.chunks_per_npu, group;
  if (k == 0 && o.max_trees == 0 && large_fabric(n, TREES_MAX_TREES, size)) ntrees = large_trees(n);
  chunking(n, ntrees, size, MIN_CHUNK_BYTES, &k, &group); /* (the finer: an upper bound) */
  /* make_groups: messages of 1, 1, 2, 2, ... up to group chunks at both ends of a tree */
  double ramp = 0;
  for (uint32_t sz = 1; sz < group; sz *= 2)
    ramp += 2.0 - 2.0 * sz / group;
  double groups = (double)n * k / group + 2.0 * ramp * ntrees;
  return (uint64_t)(groups * 2.0 * (n - 1));
}

uint64_t trees_mem_estimate(uint32_t n, uint64_t size, const trees_opts_t *opts, unsigned threads) {
  /* The whole `tenet synth -a trees` process per transfer, as measured with one thread
   * (bench_mem, 64 to 256 NPUs, 1 MiB to 1 GiB): the schedule, its lowering (a SEND, a RECV
   * and for the reduce half a COMP per transfer, with the flow control's dependencies), the
   * order-proof copy and its simulations, the verifier and the writer; plus the process and
   * the packing (n trees' parents, the pair weights). A second thread (the verifier and
   * writer beside the last simulation) holds a quarter more. */
  return tn_mem_threads(TREES_MEM_BASE + (uint64_t)n * TREES_MAX_TREES * 16,
                        trees_transfers_estimate(n, size, opts) * 625, 24, threads);
}

tn_status_t trees_allreduce(const topo_t *t, uint64_t size_bytes, const trees_opts_t *opts,
                            schedule_t *out, tn_err_t *err) {
  trees_opts_t o = opts ? *opts : (trees_opts_t){0};
  schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  trees_packing_t pk;
  /* Large regime: few trees (the packing is cut to them), whatever the packing would keep,
   * and layered ones only: with about LARGE_GROUPS_PER_TREE messages a tree's depth adds to
   * the time as much as its rate saves (torus-12x12x12 1 GiB: 7.57 times the bound with the
   * minimum spanning trees the packing preferred, 2.29 with layered trees). */
  bool large = o.chunks_per_npu == 0 && o.max_trees == 0 && t->npus > 1 &&
               large_fabric(t->npus, TREES_MAX_TREES, size_bytes);
  if (large) o.max_trees = large_trees(t->npus);
  char what[96];
  snprintf(what, sizeof what, "trees: %u NPUs, %llu B", t->npus, (unsigned long long)size_bytes);
  tn_status_t st = tn_mem_check(what, trees_mem_estimate(t->npus, size_bytes, opts, 1), err);
  if (st == TN_OK) st = trees_i_pack(t, o.max_trees, large, &pk, err);
  if (st != TN_OK) return st;
  plan_t P = {.t = t, .pk = &pk, .n = t->npus};
  st = build(&P, &o, size_bytes, out, err);
  plan_free(&P);
  trees_packing_free(&pk);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  }
  return st;
}
