/* workload/workload.c — the step's DAGs, their checks and their collectives
 * (docs/workload.md). */
#include "workload/workload.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

tn_status_t wl_create(uint32_t npus, workload_t **out, tn_err_t *err) {
  *out = NULL;
  if (npus == 0) return tn_err_set(err, TN_INVAL, "a workload needs at least one rank");
  workload_t *w = NULL;
  tn_status_t st = tn_calloc(1, sizeof *w, &w, err);
  if (st != TN_OK) return st;
  if ((st = tn_calloc(npus, sizeof *w->ranks, &w->ranks, err)) != TN_OK) {
    free(w);
    return st;
  }
  w->npus = npus;
  for (uint32_t r = 0; r < npus; r++) {
    tn_vec_init(&w->ranks[r].nodes, sizeof(wl_node_t));
    tn_vec_init(&w->ranks[r].deps, sizeof(uint32_t));
    tn_vec_init(&w->ranks[r].names, 1);
  }
  *out = w;
  return TN_OK;
}

void wl_free(workload_t *w) {
  if (w == NULL) return;
  for (uint32_t r = 0; r < w->npus; r++) {
    tn_vec_free(&w->ranks[r].nodes);
    tn_vec_free(&w->ranks[r].deps);
    tn_vec_free(&w->ranks[r].names);
  }
  free(w->ranks);
  free(w);
}

static int u32_cmp(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

tn_status_t wl_add(workload_t *w, uint32_t rank, const wl_node_t *node, const char *name,
                   const uint32_t *deps, uint32_t ndeps, uint32_t *index, tn_err_t *err) {
  if (rank >= w->npus)
    return tn_err_set(err, TN_INVAL, "rank %u out of range (%u ranks)", rank, w->npus);
  wl_rank_t *R = &w->ranks[rank];
  if (R->nodes.len >= WL_MAX_NODES)
    return tn_err_set(err, TN_LIMIT, "rank %u: more than %u nodes", rank, WL_MAX_NODES);
  if (R->nodes.len > 0 && TN_VEC_AT(&R->nodes, wl_node_t, R->nodes.len - 1).id >= node->id)
    return tn_err_set(err, TN_INVAL,
                      "rank %u: node ids must ascend (%" PRIu64 " after %" PRIu64 ")", rank,
                      node->id, TN_VEC_AT(&R->nodes, wl_node_t, R->nodes.len - 1).id);
  if (R->deps.len + ndeps >= UINT32_MAX || R->names.len + WL_MAX_NAME >= UINT32_MAX)
    return tn_err_set(err, TN_LIMIT, "rank %u: too many dependencies or names", rank);
  wl_node_t n = *node;
  n.dep_off = (uint32_t)R->deps.len;
  n.name_off = (uint32_t)R->names.len;
  size_t nl = name ? strlen(name) : 0;
  n.name_len = (uint32_t)(nl > WL_MAX_NAME ? WL_MAX_NAME : nl);
  tn_status_t st = tn_vec_reserve(&R->deps, R->deps.len + ndeps, err);
  if (st == TN_OK) st = tn_vec_reserve(&R->names, R->names.len + n.name_len, err);
  if (st != TN_OK) return st;
  uint32_t k = 0;
  if (ndeps) { /* an empty vector's data is NULL, which neither memcpy nor qsort may take */
    uint32_t *d = (uint32_t *)R->deps.data + R->deps.len;
    memcpy(d, deps, ndeps * sizeof *deps);
    qsort(d, ndeps, sizeof *d, u32_cmp);
    for (uint32_t i = 0; i < ndeps; i++)
      if (k == 0 || d[k - 1] != d[i]) d[k++] = d[i];
  }
  n.ndeps = k;
  if (n.name_len) memcpy((char *)R->names.data + R->names.len, name, n.name_len);
  if ((st = tn_vec_push(&R->nodes, &n, err)) != TN_OK) return st;
  R->deps.len += k;
  R->names.len += n.name_len;
  if (index) *index = (uint32_t)(R->nodes.len - 1);
  return TN_OK;
}

const char *wl_name(const workload_t *w, uint32_t rank, const wl_node_t *n,
                    char buf[WL_MAX_NAME + 1]) {
  if (n->name_len) /* the names' data is NULL while no node has a name */
    memcpy(buf, (const char *)w->ranks[rank].names.data + n->name_off, n->name_len);
  buf[n->name_len] = '\0';
  return buf;
}

const char *wl_comm_type_name(int64_t comm_type, char buf[24]) {
  static const char *const names[] = {
      "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
      "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
  if (comm_type >= 0 && comm_type < (int64_t)(sizeof names / sizeof *names))
    return names[comm_type];
  snprintf(buf, 24, "code %" PRId64, comm_type);
  return buf;
}

bool wl_comm_type_coll(int64_t comm_type, tn_coll_t *coll) {
  switch (comm_type) {
  case WL_CT_ALL_GATHER: *coll = TN_ALLGATHER; return true;
  case WL_CT_REDUCE_SCATTER: *coll = TN_REDUCESCATTER; return true;
  case WL_CT_ALL_REDUCE: *coll = TN_ALLREDUCE; return true;
  case WL_CT_ALL_TO_ALL: *coll = TN_ALLTOALL; return true;
  default: return false;
  }
}

static const char *op_name(wl_op_t op) {
  static const char *const names[] = {"COMP", "COLL", "SEND", "RECV", "NOP"};
  return op <= WL_NOP ? names[op] : "?";
}

/* ---- per-node checks ------------------------------------------------------ */

static tn_status_t check_node(const workload_t *w, uint32_t r, const wl_node_t *n, tn_err_t *err) {
  char tb[24];
  if (n->op == WL_SEND || n->op == WL_RECV) {
    if (n->peer >= w->npus || n->peer == r)
      return tn_err_set(err, TN_PARSE, "rank %u node %" PRIu64 ": %s %s rank %u, %s", r, n->id,
                        op_name(n->op), n->op == WL_SEND ? "to" : "from", n->peer,
                        n->peer == r ? "its own rank" : "outside the workload's ranks");
    if (n->bytes == 0 || n->bytes > WL_MAX_BYTES)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %" PRIu64 ": comm_size %" PRIu64 " outside 1..%" PRIu64, r,
                        n->id, n->bytes, (uint64_t)WL_MAX_BYTES);
  }
  if (n->op == WL_COLL) {
    tn_coll_t c;
    if (!wl_comm_type_coll(n->comm_type, &c) && n->comm_type != WL_CT_BROADCAST)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %" PRIu64 ": collective %s, which ASTRA-sim does not run "
                        "(it runs ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)",
                        r, n->id, wl_comm_type_name(n->comm_type, tb));
    if (n->comm_type != WL_CT_BROADCAST && (n->bytes == 0 || n->bytes > WL_MAX_BYTES))
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %" PRIu64 ": comm_size %" PRIu64 " outside 1..%" PRIu64, r,
                        n->id, n->bytes, (uint64_t)WL_MAX_BYTES);
  }
  if (n->duration_us > WL_MAX_DURATION_US)
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %" PRIu64 ": duration_micros %" PRIu64 " above %" PRIu64, r,
                      n->id, n->duration_us, (uint64_t)WL_MAX_DURATION_US);
  return TN_OK;
}

/* Kahn's algorithm on one rank; on a cycle, walks back from a node left over until a node
 * repeats and names the cycle's nodes. */
static tn_status_t check_acyclic(const workload_t *w, uint32_t r, tn_err_t *err) {
  uint32_t n = wl_count(w, r), *pending = NULL, *succ_off = NULL, *succ = NULL, *queue = NULL;
  const wl_rank_t *R = &w->ranks[r];
  tn_status_t st = tn_calloc((size_t)n + 1, sizeof *pending, &pending, err);
  if (st == TN_OK) st = tn_calloc((size_t)n + 2, sizeof *succ_off, &succ_off, err);
  if (st == TN_OK) st = tn_malloc(R->deps.len + 1, sizeof *succ, &succ, err);
  if (st == TN_OK) st = tn_malloc((size_t)n + 1, sizeof *queue, &queue, err);
  if (st != TN_OK) goto out;
  for (uint32_t i = 0; i < n; i++) {
    const wl_node_t *x = wl_node(w, r, i);
    const uint32_t *d = wl_deps(w, r, x);
    for (uint32_t k = 0; k < x->ndeps; k++) {
      if (d[k] >= n || d[k] == i) {
        st = tn_err_set(err, TN_PARSE, "rank %u node %" PRIu64 ": dependency %s", r, x->id,
                        d[k] == i ? "on itself" : "out of range");
        goto out;
      }
      succ_off[d[k] + 2]++;
    }
    pending[i] = x->ndeps;
  }
  for (uint32_t i = 0; i < n; i++)
    succ_off[i + 2] += succ_off[i + 1];
  for (uint32_t i = 0; i < n; i++) {
    const wl_node_t *x = wl_node(w, r, i);
    const uint32_t *d = wl_deps(w, r, x);
    for (uint32_t k = 0; k < x->ndeps; k++)
      succ[succ_off[d[k] + 1]++] = i;
  }
  uint32_t head = 0, tail = 0;
  for (uint32_t i = 0; i < n; i++)
    if (pending[i] == 0) queue[tail++] = i;
  while (head < tail) {
    uint32_t i = queue[head++];
    for (uint32_t k = succ_off[i]; k < succ_off[i + 1]; k++)
      if (--pending[succ[k]] == 0) queue[tail++] = succ[k];
  }
  if (tail == n) goto out;
  /* Walk dependencies among the left-over nodes: every one has a pending dependency that
   * is itself left over, so the walk meets a node twice; that stretch is a cycle. */
  uint32_t at = NONE;
  for (uint32_t i = 0; i < n && at == NONE; i++)
    if (pending[i]) at = i;
  memset(queue, 0xff, ((size_t)n + 1) * sizeof *queue); /* queue: step of the walk, or NONE */
  uint32_t step = 0;
  while (queue[at] == NONE) {
    queue[at] = step++;
    const wl_node_t *x = wl_node(w, r, at);
    const uint32_t *d = wl_deps(w, r, x);
    for (uint32_t k = 0; k < x->ndeps; k++)
      if (pending[d[k]]) {
        at = d[k];
        break;
      }
  }
  char list[160];
  size_t len = 0;
  uint32_t start = at, shown = 0;
  do {
    const wl_node_t *x = wl_node(w, r, at);
    if (shown < 6)
      len +=
          (size_t)snprintf(list + len, sizeof list - len, "%s%" PRIu64, shown ? ", " : "", x->id);
    else if (shown == 6)
      len += (size_t)snprintf(list + len, sizeof list - len, ", …");
    shown++;
    const uint32_t *d = wl_deps(w, r, x);
    for (uint32_t k = 0; k < x->ndeps; k++)
      if (pending[d[k]]) { /* the walk's rule: from a node of the cycle it stays on it */
        at = d[k];
        break;
      }
    if (len >= sizeof list) len = sizeof list - 1;
  } while (at != start && shown < n);
  st = tn_err_set(err, TN_PARSE, "rank %u: dependency cycle through nodes %s", r, list);
out:
  free(pending);
  free(succ_off);
  free(succ);
  free(queue);
  return st;
}

/* ---- point-to-point balance ----------------------------------------------- */

typedef struct p2p {
  uint32_t src, dst;
  int32_t tag;
  uint64_t bytes;
  uint32_t rank, index; /* the node */
} p2p_t;

static int p2p_cmp(const void *x, const void *y) {
  const p2p_t *a = x, *b = y;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

static int p2p_key_cmp(const p2p_t *a, const p2p_t *b) {
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
  return (a->bytes > b->bytes) - (a->bytes < b->bytes);
}

static tn_status_t unmatched(const workload_t *w, const p2p_t *p, bool send, tn_err_t *err) {
  const wl_node_t *x = wl_node(w, p->rank, p->index);
  return tn_err_set(err, TN_PARSE,
                    "rank %u node %" PRIu64 ": %s %s rank %u (tag %d, %" PRIu64
                    " bytes) has no matching %s on rank %u",
                    p->rank, x->id, send ? "SEND" : "RECV", send ? "to" : "from", x->peer, p->tag,
                    p->bytes, send ? "RECV" : "SEND", x->peer);
}

static tn_status_t check_p2p(const workload_t *w, tn_err_t *err) {
  tn_vec_t s, v;
  tn_vec_init(&s, sizeof(p2p_t));
  tn_vec_init(&v, sizeof(p2p_t));
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; r < w->npus && st == TN_OK; r++)
    for (uint32_t i = 0; i < wl_count(w, r) && st == TN_OK; i++) {
      const wl_node_t *x = wl_node(w, r, i);
      if (x->op == WL_SEND)
        st = tn_vec_push(&s, &(p2p_t){r, x->peer, x->tag, x->bytes, r, i}, err);
      else if (x->op == WL_RECV)
        st = tn_vec_push(&v, &(p2p_t){x->peer, r, x->tag, x->bytes, r, i}, err);
    }
  if (st == TN_OK) {
    if (s.len > 1) qsort(s.data, s.len, sizeof(p2p_t), p2p_cmp); /* data is NULL when empty */
    if (v.len > 1) qsort(v.data, v.len, sizeof(p2p_t), p2p_cmp);
    const p2p_t *a = s.data, *b = v.data;
    size_t i = 0, j = 0;
    while (st == TN_OK && (i < s.len || j < v.len)) {
      int c = i == s.len ? 1 : j == v.len ? -1 : p2p_key_cmp(&a[i], &b[j]);
      if (c < 0)
        st = unmatched(w, &a[i], true, err);
      else if (c > 0)
        st = unmatched(w, &b[j], false, err);
      i++, j++;
    }
  }
  tn_vec_free(&s);
  tn_vec_free(&v);
  return st;
}

/* ---- collectives ------------------------------------------------------------ */

/* A collective node: its process group, its place among its rank's collectives of that
 * group (in ascending id), its rank and index. */
typedef struct member {
  int64_t pg;
  uint32_t seq, rank, index;
} member_t;

static int by_rank(const void *x, const void *y) {
  const member_t *a = x, *b = y;
  if (a->pg != b->pg) return a->pg < b->pg ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

static int by_seq(const void *x, const void *y) {
  const member_t *a = x, *b = y;
  if (a->pg != b->pg) return a->pg < b->pg ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* "every rank (no process group)" or "process group P". */
static const char *group_name(int64_t pg, char buf[48]) {
  if (pg == 0) return "every rank (no process group)";
  snprintf(buf, 48, "process group %" PRId64, pg);
  return buf;
}

/* Every rank of a group holds as many of its collectives: the k-th of each is one
 * collective, as ASTRA-sim pairs them by the order each rank issues them. m is sorted by
 * (pg, rank, index). The default group spans every rank; another group, the ranks that
 * hold its collectives. */
static tn_status_t check_counts(const workload_t *w, const member_t *m, size_t n, tn_err_t *err) {
  char gb[48];
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && m[j].pg == m[i].pg)
      j++;
    uint32_t most = 0, most_rank = 0;
    for (size_t k = i; k < j;) {
      size_t e = k;
      while (e < j && m[e].rank == m[k].rank)
        e++;
      if (e - k > most) most = (uint32_t)(e - k), most_rank = m[k].rank;
      k = e;
    }
    /* The first rank with fewer (the default group: counting the ranks that hold none). */
    size_t k = i;
    for (uint32_t r = 0; r < w->npus; r++) {
      uint32_t has = 0;
      while (k < j && m[k].rank == r)
        k++, has++;
      if (has == most || (has == 0 && m[i].pg != 0)) continue;
      return tn_err_set(err, TN_PARSE,
                        "%s: rank %u holds %u of its collectives but rank %u holds %u (the k-th "
                        "of each rank is one collective): ASTRA-sim would wait for the missing "
                        "ones forever",
                        group_name(m[i].pg, gb), r, has, most_rank, most);
    }
    i = j;
  }
  return TN_OK;
}

/* Why the group m[0..k) (the same place in one process group on each of its ranks) is not
 * one collective, or TN_OK. */
static tn_status_t check_group(const workload_t *w, const member_t *m, uint32_t k, tn_err_t *err) {
  const wl_node_t *f = wl_node(w, m[0].rank, m[0].index);
  char t1[24], t2[24], also[48];
  for (uint32_t j = 1; j < k; j++) {
    const wl_node_t *x = wl_node(w, m[j].rank, m[j].index);
    also[0] = '\0';
    if (x->id != f->id) snprintf(also, sizeof also, " (its node %" PRIu64 ")", x->id);
    if (x->comm_type != f->comm_type)
      return tn_err_set(err, TN_PARSE, "node %" PRIu64 ": %s on rank %u but %s on rank %u%s", f->id,
                        wl_comm_type_name(f->comm_type, t1), m[0].rank,
                        wl_comm_type_name(x->comm_type, t2), m[j].rank, also);
    if (x->bytes != f->bytes)
      return tn_err_set(err, TN_PARSE,
                        "node %" PRIu64 ": collective of %" PRIu64 " bytes on rank %u but %" PRIu64
                        " bytes on rank %u%s",
                        f->id, f->bytes, m[0].rank, x->bytes, m[j].rank, also);
  }
  return TN_OK;
}

void wl_colls_free(wl_colls_t *c) {
  if (c == NULL) return;
  for (uint32_t i = 0; i < c->n; i++) {
    free(c->c[i].ranks);
    free(c->c[i].index);
  }
  free(c->c);
  free(c->of);
  free(c->rank_off);
  memset(c, 0, sizeof *c);
}

static int coll_cmp(const void *x, const void *y) {
  const wl_coll_t *a = x, *b = y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  if (a->pg != b->pg) return a->pg < b->pg ? -1 : 1;
  return (a->ranks[0] > b->ranks[0]) - (a->ranks[0] < b->ranks[0]);
}

static tn_status_t group_colls(const workload_t *w, wl_colls_t *out, tn_err_t *err) {
  tn_vec_t m;
  tn_vec_init(&m, sizeof(member_t));
  tn_status_t st = tn_calloc((size_t)w->npus + 1, sizeof *out->rank_off, &out->rank_off, err);
  for (uint32_t r = 0; st == TN_OK && r < w->npus; r++)
    out->rank_off[r + 1] = out->rank_off[r] + wl_count(w, r);
  if (st == TN_OK)
    st = tn_malloc((size_t)out->rank_off[w->npus] + 1, sizeof *out->of, &out->of, err);
  if (st == TN_OK) memset(out->of, 0xff, ((size_t)out->rank_off[w->npus] + 1) * sizeof *out->of);
  for (uint32_t r = 0; st == TN_OK && r < w->npus; r++)
    for (uint32_t i = 0; st == TN_OK && i < wl_count(w, r); i++)
      if (wl_node(w, r, i)->op == WL_COLL)
        st = tn_vec_push(&m, &(member_t){wl_node(w, r, i)->pg, 0, r, i}, err);
  if (st != TN_OK || m.len == 0) goto out; /* m.data is NULL when empty */
  member_t *ms = m.data;
  qsort(ms, m.len, sizeof *ms, by_rank);
  for (size_t i = 0; i < m.len; i++)
    ms[i].seq =
        i > 0 && ms[i - 1].pg == ms[i].pg && ms[i - 1].rank == ms[i].rank ? ms[i - 1].seq + 1 : 0;
  if ((st = check_counts(w, ms, m.len, err)) != TN_OK) goto out;
  qsort(ms, m.len, sizeof *ms, by_seq);
  uint32_t groups = 0;
  for (size_t i = 0; i < m.len; i++)
    if (i == 0 || ms[i].seq != ms[i - 1].seq || ms[i].pg != ms[i - 1].pg) groups++;
  if ((st = tn_calloc((size_t)groups + 1, sizeof *out->c, &out->c, err)) != TN_OK) goto out;
  for (size_t i = 0; i < m.len && st == TN_OK;) {
    size_t j = i;
    while (j < m.len && ms[j].seq == ms[i].seq && ms[j].pg == ms[i].pg)
      j++;
    uint32_t k = (uint32_t)(j - i);
    if ((st = check_group(w, ms + i, k, err)) != TN_OK) break;
    wl_coll_t *c = &out->c[out->n];
    const wl_node_t *f = wl_node(w, ms[i].rank, ms[i].index);
    c->id = f->id;
    c->comm_type = f->comm_type;
    c->synthesizable = wl_comm_type_coll(f->comm_type, &c->coll);
    c->bytes = f->bytes;
    c->pg = f->pg;
    c->nranks = k;
    if ((st = tn_malloc(k, sizeof *c->ranks, &c->ranks, err)) != TN_OK ||
        (st = tn_malloc(k, sizeof *c->index, &c->index, err)) != TN_OK)
      break;
    out->n++;
    for (uint32_t q = 0; q < k; q++) {
      c->ranks[q] = ms[i + q].rank;
      c->index[q] = ms[i + q].index;
    }
    i = j;
  }
  if (st != TN_OK) goto out;
  /* In ascending id (of the lowest rank's node), then group and first rank. */
  qsort(out->c, out->n, sizeof *out->c, coll_cmp);
  for (uint32_t g = 0; g < out->n; g++)
    for (uint32_t q = 0; q < out->c[g].nranks; q++)
      out->of[out->rank_off[out->c[g].ranks[q]] + out->c[g].index[q]] = g;
out:
  tn_vec_free(&m);
  return st;
}

tn_status_t wl_check(const workload_t *w, wl_colls_t *out, tn_err_t *err) {
  memset(out, 0, sizeof *out);
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; r < w->npus && st == TN_OK; r++) {
    if (wl_count(w, r) == 0) return tn_err_set(err, TN_PARSE, "rank %u: no node", r);
    for (uint32_t i = 0; i < wl_count(w, r) && st == TN_OK; i++)
      st = check_node(w, r, wl_node(w, r, i), err);
    if (st == TN_OK) st = check_acyclic(w, r, err);
  }
  if (st == TN_OK) st = check_p2p(w, err);
  if (st == TN_OK) st = group_colls(w, out, err);
  if (st != TN_OK) wl_colls_free(out);
  return st;
}
