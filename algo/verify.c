/* algo/verify.c — the verifier: checks an algo_t (from a producer or read back from Chakra
 * files) by symbolic execution before it is trusted by emit/, sim/ or `tenet verify`.
 *
 * Passes, all linear in nodes + dependencies + chunk references (+ the semantic state):
 *  1. structure: ops, peers (< npus, < t->npus, not self), tags, sizes > 0, dependency ids,
 *     bookkeeping all-or-nothing over SENDs/RECVs, chunk ids in range and not repeated in a
 *     node, message bytes = sum of its chunks' ten_chunk_bytes;
 *  2. acyclicity of each rank's dependency graph (Kahn);
 *  3. matching: SENDs and RECVs grouped by key (src, dst, tag, bytes) must pair up
 *     (radix sort, so the grouping and the reported node never depend on memory order);
 *  4. symbolic execution under the eager semantics, in steps: step 0 runs every node
 *     without dependencies; step k+1 runs what step k made executable. A SEND completes
 *     when issued (delivery is eventual); a RECV runs once its dependencies are done and
 *     the SEND it matches (FIFO per key, in issue order) has been issued. Nodes left over
 *     are a deadlock, reported at the lowest waiting RECV with the SEND it waits for.
 *     With bookkeeping and a known collective it also runs the buffer model of algo.h:
 *     a SEND snapshots its slots (it must hold every chunk it sends), a copy RECV writes
 *     them, a COMP adds its reduce-RECV dependencies' snapshots (disjointly), and at the
 *     end every rank must hold what the collective promises.
 *
 * Races (what is checked, precisely): two nodes of one rank that run in the same step and
 * touch the same chunk slot, at least one of them writing (copy RECV, reducing COMP), are
 * reported. Such nodes are never ordered by dependencies or messages (an ordered pair runs
 * in different steps), so the slot's value would depend on the order the verifier picked.
 * A conflicting pair that is unordered but falls into different steps (e.g. one at the end
 * of a long chain, one at the start) is not detected; reduce-RECV scratch is private to its
 * node and cannot race. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* key[] of a SEND and RECV that are their key's only ones (nearly every message): they
 * are matched when the keys are grouped and skip the per-key FIFOs. */
#define PAIR (UINT32_MAX - 1)

/* Contribution sets are immutable values named by id: 0 is the empty set, 1 the full set
 * {0..n-1}, 2+r the singleton {r} (none of these stored), and ids from 2+n on are stored in
 * an arena, each in the smaller of two exact forms: a sorted list of disjoint intervals
 * (two uint32 each) or a bitset of n bits. Reductions on rings, all-pairs and trees make
 * few intervals, so a set usually costs a few words whatever n is. A copy RECV or a SEND
 * snapshot shares the id; only a reduction creates a set, and one whose result is full
 * yields id 1 without storing it. Operations run on interval lists: O(intervals + n/32). */
enum { SET_EMPTY = 0, SET_FULL = 1, SET_SINGLE = 2 };

typedef struct set_rec {
  uint64_t off;  /* into the arena */
  uint32_t card; /* members */
  uint32_t nint; /* intervals stored at off, or 0 for a bitset */
} set_rec_t;

typedef struct key_ent {
  uint32_t src, dst;
  int32_t tag;
  uint32_t is_recv;
  uint64_t bytes;
  uint32_t gid; /* global node id */
} key_ent_t;

/* One chunk slot of one rank: its contents and, for the race check, its last access: the
 * node (its round is in round_of) with LAST_WRITE set for a write, NONE before any. A
 * node's read after its own write of the same round keeps the write. This finds every
 * race a last reader and a last writer kept apart would: two accesses of one round by
 * different nodes, one of them a write. Kept together: the symbolic execution touches
 * them at once, in an order that jumps between ranks. */
#define LAST_WRITE 0x80000000u
typedef struct vslot {
  uint32_t set; /* set id */
  uint32_t last;
} vslot_t;

/* Per key: the FIFOs of issued SENDs (sq) and posted RECVs (rq), as slices of sq/rq. */
typedef struct vkeyq {
  uint32_t sq_head, sq_tail, rq_head, rq_tail;
} vkeyq_t;

typedef struct vctx {
  const algo_t *a;
  uint32_t n;
  uint32_t total;            /* nodes over all ranks */
  uint32_t *base;            /* base[r]: global id of rank r's node 0; base[n] = total */
  uint32_t *rank_of;         /* global id -> rank */
  uint32_t *succ_off, *succ; /* successors within the rank, by global id */
  uint32_t *remaining;       /* unfinished dependencies */
  uint8_t *done;
  uint8_t *is_recv; /* the node is a RECV (make_ready's test, without loading the node) */
  uint32_t *key;    /* SEND/RECV: key index */
  key_ent_t *ents;  /* sorted SEND/RECV keys */
  uint32_t nents, nkeys;
  uint32_t *key_off; /* per key: first entry in ents, nkeys+1 entries */
  uint32_t *sq, *rq; /* per key FIFO of issued SENDs / posted RECVs (slices of ents) */
  vkeyq_t *kq;
  uint32_t *matched; /* RECV -> the SEND it matched */
  uint32_t *order;   /* execution order; rounds are consecutive segments */
  uint32_t qlen;
  /* semantics */
  bool sem;
  uint32_t nchunks;        /* n * chunks_per_npu */
  uint32_t words;          /* uint32 words of a stored bitset: ceil(n / 32) */
  uint32_t *ibuf[3];       /* interval scratch lists, n + 4 uint32 each */
  vslot_t *slot;           /* the slots (see sem_init) */
  uint32_t *sref;          /* sparse slots: per chunk reference (parallel to snap) its slot;
                              NULL for dense slots (rank r's chunk c: r * nchunks + c) */
  uint32_t *round_of;      /* per node: the round it ran in */
  uint32_t *cmap, *cstamp; /* per chunk: slot index while cstamp names the rank */
  uint32_t *snap_base;     /* snap_base[r]: offset of rank r's chunk pool in snap */
  uint32_t *snap;          /* SEND: the set ids it carries, parallel to its chunk list
                              (unless sfull: then never written, so never in memory) */
  uint8_t *sfull;          /* per node: a SEND that carries complete chunks only */
  uint32_t *in_comp, *got; /* per chunk: stamps while a COMP executes */
  tn_vec_t arena;          /* uint32_t words of stored sets */
  tn_vec_t sets;           /* set_rec_t of stored sets */
  uint32_t *htab;          /* stored sets by content: index into sets + 1, 0 empty */
  size_t hcap;             /* slots of htab, a power of two (0 before the first set) */
} vctx_t;

static const char *op_name(algo_op_t op) {
  return op == ALGO_SEND ? "SEND" : op == ALGO_RECV ? "RECV" : "COMP";
}

static uint32_t local_id(const vctx_t *v, uint32_t g) {
  return g - v->base[v->rank_of[g]];
}

static const algo_node_t *gnode(const vctx_t *v, uint32_t g) {
  return algo_node(v->a, v->rank_of[g], local_id(v, g));
}

/* ---- pass 1: structure ------------------------------------------------------ */

static tn_status_t check_chunks(vctx_t *v, uint32_t r, uint32_t i, const algo_node_t *nd,
                                tn_err_t *err) {
  const uint32_t *ch = algo_node_chunks(v->a, r, nd);
  uint64_t sum = 0;
  uint32_t stamp = v->base[r] + i + 1;
  for (uint32_t j = 0; j < nd->nchunks; j++) {
    if (ch[j] >= v->nchunks)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: chunk %u out of range (%u chunks)", r, i,
                        ch[j], v->nchunks);
    if (v->in_comp[ch[j]] == stamp)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: lists chunk %u twice", r, i, ch[j]);
    v->in_comp[ch[j]] = stamp;
    sum += ten_chunk_bytes(v->a->space_bytes, v->n, v->a->chunks_per_npu, ch[j]);
  }
  if (nd->op != ALGO_COMP && sum != nd->bytes)
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %u: %s of %llu B carries chunks of %llu B in total", r, i,
                      op_name(nd->op), (unsigned long long)nd->bytes, (unsigned long long)sum);
  return TN_OK;
}

static tn_status_t check_node(vctx_t *v, const topo_t *t, uint32_t r, uint32_t i, tn_err_t *err) {
  const algo_t *a = v->a;
  const algo_node_t *nd = algo_node(a, r, i);
  if (nd->op != ALGO_SEND && nd->op != ALGO_RECV && nd->op != ALGO_COMP)
    return tn_err_set(err, TN_PARSE, "rank %u node %u: unknown node type %d", r, i, (int)nd->op);
  if (nd->op != ALGO_COMP) {
    const char *what = nd->op == ALGO_SEND ? "destination" : "source";
    if (nd->peer < 0 || (uint32_t)nd->peer >= v->n)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s %s %d out of range (%u ranks)", r, i,
                        op_name(nd->op), what, nd->peer, v->n);
    if (t != NULL && (uint32_t)nd->peer >= t->npus)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s %s %d is not an NPU of %s", r, i,
                        op_name(nd->op), what, nd->peer, t->name);
    if ((uint32_t)nd->peer == r)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s %s itself", r, i, op_name(nd->op),
                        nd->op == ALGO_SEND ? "to" : "from");
    if (nd->tag < 0 || nd->tag > ALGO_MAX_TAG)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: tag %d out of range 0..%d", r, i, nd->tag,
                        ALGO_MAX_TAG);
    if (nd->bytes == 0)
      return tn_err_set(err, TN_PARSE, "rank %u node %u: %s of 0 bytes", r, i, op_name(nd->op));
  }
  const uint32_t *deps = algo_node_deps(a, r, nd);
  for (uint32_t j = 0; j < nd->ndeps; j++)
    if (deps[j] >= algo_rank_len(a, r))
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %u: dependency on node %u out of range "
                        "(%u nodes)",
                        r, i, deps[j], algo_rank_len(a, r));
  if (v->sem && nd->nchunks > 0) return check_chunks(v, r, i, nd, err);
  return TN_OK;
}

/* Decides whether the set carries chunk bookkeeping: all SENDs and RECVs (and reducing
 * COMPs) list chunks, or none does (a COMP without chunks is pure time either way). */
static tn_status_t check_bookkeeping(const algo_t *a, bool *has, tn_err_t *err) {
  int first = -1; /* -1 unknown, 0 without, 1 with */
  uint32_t fr = 0, fi = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *nd = algo_node(a, r, i);
      if (nd->op == ALGO_COMP && (nd->nchunks == 0 || first == 1)) continue;
      int here = nd->nchunks > 0;
      if (first < 0) {
        first = here, fr = r, fi = i;
      } else if (here != first) {
        return tn_err_set(err, TN_PARSE,
                          "rank %u node %u: %s chunk bookkeeping but rank %u "
                          "node %u does%s (mixed files)",
                          r, i, here ? "carries" : "lacks", fr, fi, first ? "" : " not");
      }
    }
  /* A set without any message or reduction has nothing to lack: its semantics are checked
   * (so an empty algorithm for n > 1 fails instead of passing unchecked). */
  *has = first != 0;
  return TN_OK;
}

/* ---- pass 2: acyclicity ---------------------------------------------------- */

static tn_status_t build_succ(vctx_t *v, tn_err_t *err) {
  const algo_t *a = v->a;
  uint64_t edges = 0;
  for (uint32_t r = 0; r < v->n; r++)
    edges += a->ranks[r].deps.len;
  if (edges >= UINT32_MAX) return tn_err_set(err, TN_LIMIT, "too many dependencies");
  tn_status_t st = tn_calloc((size_t)v->total + 1, sizeof *v->succ_off, &v->succ_off, err);
  if (st == TN_OK) st = tn_calloc(edges, sizeof *v->succ, &v->succ, err);
  if (st != TN_OK) return st;
  for (uint32_t r = 0; r < v->n; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *nd = algo_node(a, r, i);
      const uint32_t *deps = algo_node_deps(a, r, nd);
      v->remaining[v->base[r] + i] = nd->ndeps;
      for (uint32_t j = 0; j < nd->ndeps; j++)
        v->succ_off[v->base[r] + deps[j] + 1]++;
    }
  for (uint32_t g = 0; g < v->total; g++)
    v->succ_off[g + 1] += v->succ_off[g];
  uint32_t *fill = v->order; /* borrowed as a cursor array; reset before execution */
  memcpy(fill, v->succ_off, (size_t)v->total * sizeof *fill);
  for (uint32_t r = 0; r < v->n; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *nd = algo_node(a, r, i);
      const uint32_t *deps = algo_node_deps(a, r, nd);
      for (uint32_t j = 0; j < nd->ndeps; j++)
        v->succ[fill[v->base[r] + deps[j]]++] = v->base[r] + i;
    }
  return TN_OK;
}

/* Kahn's algorithm per rank on a copy of the dependency counts. On a cycle, walks
 * unfinished dependencies from the lowest unfinished node until one repeats. */
static tn_status_t check_acyclic(vctx_t *v, tn_err_t *err) {
  uint32_t *cnt = v->matched, *queue = v->order; /* both free until execution */
  memcpy(cnt, v->remaining, (size_t)v->total * sizeof *cnt);
  for (uint32_t r = 0; r < v->n; r++) {
    uint32_t head = 0, tail = 0;
    for (uint32_t g = v->base[r]; g < v->base[r + 1]; g++)
      if (cnt[g] == 0) queue[tail++] = g;
    while (head < tail) {
      uint32_t g = queue[head++];
      for (uint32_t e = v->succ_off[g]; e < v->succ_off[g + 1]; e++)
        if (--cnt[v->succ[e]] == 0) queue[tail++] = v->succ[e];
    }
    if (tail == v->base[r + 1] - v->base[r]) continue;
    uint32_t g = v->base[r];
    while (cnt[g] == 0)
      g++;
    /* Every unfinished node has an unfinished dependency; mark the walk with done[]. */
    while (!v->done[g]) {
      v->done[g] = 1;
      const algo_node_t *nd = gnode(v, g);
      const uint32_t *deps = algo_node_deps(v->a, r, nd);
      for (uint32_t j = 0; j < nd->ndeps; j++)
        if (cnt[v->base[r] + deps[j]] != 0) {
          g = v->base[r] + deps[j];
          break;
        }
    }
    /* g is on the cycle; name the dependency that continues it. */
    const algo_node_t *gn = gnode(v, g);
    const uint32_t *gd = algo_node_deps(v->a, r, gn);
    uint32_t via = 0;
    for (uint32_t j = 0; j < gn->ndeps; j++)
      if (cnt[v->base[r] + gd[j]] != 0) {
        via = gd[j];
        break;
      }
    return tn_err_set(err, TN_PARSE, "rank %u node %u: dependency cycle through node %u", r,
                      local_id(v, g), via);
  }
  return TN_OK;
}

/* ---- pass 3: matching ---------------------------------------------------------- */

static int cmp_ent(const void *x, const void *y) {
  const key_ent_t *p = x, *q = y;
  if (p->src != q->src) return p->src < q->src ? -1 : 1;
  if (p->dst != q->dst) return p->dst < q->dst ? -1 : 1;
  if (p->tag != q->tag) return p->tag < q->tag ? -1 : 1;
  if (p->bytes != q->bytes) return p->bytes < q->bytes ? -1 : 1;
  if (p->is_recv != q->is_recv) return p->is_recv < q->is_recv ? -1 : 1;
  return p->gid < q->gid ? -1 : p->gid > q->gid;
}

static bool same_key(const key_ent_t *p, const key_ent_t *q) {
  return p->src == q->src && p->dst == q->dst && p->tag == q->tag && p->bytes == q->bytes;
}

static tn_status_t report_unmatched(const vctx_t *v, uint32_t g, tn_err_t *err) {
  const algo_node_t *nd = gnode(v, g);
  bool send = nd->op == ALGO_SEND;
  return tn_err_set(err, TN_PARSE,
                    "rank %u node %u: %s %s %d tag %d (%llu B) has no matching %s on rank %d",
                    v->rank_of[g], local_id(v, g), op_name(nd->op), send ? "to" : "from", nd->peer,
                    nd->tag, (unsigned long long)nd->bytes, send ? "RECV" : "SEND", nd->peer);
}

/* Sorts ents by cmp_ent in O(m): the common stable radix order on (src, dst, tag) packed
 * into 61 bits, whose input is in global id order, then the short runs of equal
 * (src, dst, tag) by (bytes, kind, id). */
static tn_status_t sort_ents(vctx_t *v, tn_err_t *err) {
  uint32_t m = v->nents, *order = NULL;
  uint64_t *key = NULL;
  key_ent_t *tmp = NULL;
  tn_status_t st = tn_malloc((size_t)m + 1, sizeof *key, &key, err);
  if (st == TN_OK) st = tn_malloc((size_t)m + 1, sizeof *order, &order, err);
  if (st == TN_OK) st = tn_malloc((size_t)m + 1, sizeof *tmp, &tmp, err);
  for (uint32_t i = 0; st == TN_OK && i < m; i++) {
    const key_ent_t *e = &v->ents[i];
    key[i] = (uint64_t)e->src << 45 | (uint64_t)e->dst << 29 | (uint64_t)(uint32_t)e->tag;
  }
  if (st == TN_OK) st = tn_radix_order(key, m, order, err);
  if (st == TN_OK) {
    for (uint32_t i = 0; i < m; i++)
      tmp[i] = v->ents[order[i]];
    memcpy(v->ents, tmp, (size_t)m * sizeof *v->ents);
    for (uint32_t i = 0; i < m;) {
      uint32_t j = i + 1;
      while (j < m && key[order[j]] == key[order[i]])
        j++;
      if (j - i > 2 || (j - i == 2 && cmp_ent(&v->ents[i], &v->ents[i + 1]) > 0))
        qsort(&v->ents[i], j - i, sizeof *v->ents, cmp_ent);
      i = j;
    }
  }
  free(key);
  free(order);
  free(tmp);
  return st;
}

/* Groups SENDs and RECVs by key; every key needs as many of each. Reports the unmatched
 * node with the lowest (rank, id): per key the surplus is the last ones in id order. */
static tn_status_t check_matching(vctx_t *v, tn_err_t *err) {
  uint32_t m = 0;
  for (uint32_t g = 0; g < v->total; g++) {
    const algo_node_t *nd = gnode(v, g);
    if (nd->op == ALGO_COMP) continue;
    uint32_t r = v->rank_of[g];
    key_ent_t e = {nd->op == ALGO_SEND ? r : (uint32_t)nd->peer,
                   nd->op == ALGO_SEND ? (uint32_t)nd->peer : r,
                   nd->tag,
                   nd->op == ALGO_RECV,
                   nd->bytes,
                   g};
    v->ents[m++] = e;
  }
  v->nents = m;
  if (tn_calloc((size_t)m + 1, sizeof *v->key_off, &v->key_off, err) != TN_OK) return TN_NOMEM;
  tn_status_t st = sort_ents(v, err);
  if (st != TN_OK) return st;
  uint32_t worst = NONE, nkeys = 0;
  for (uint32_t i = 0; i < m;) {
    uint32_t j = i, ns = 0;
    while (j < m && same_key(&v->ents[i], &v->ents[j])) {
      ns += !v->ents[j].is_recv;
      v->key[v->ents[j].gid] = nkeys;
      j++;
    }
    uint32_t nr = j - i - ns;
    if (ns > nr && v->ents[i + nr].gid < worst) worst = v->ents[i + nr].gid;
    if (nr > ns && v->ents[i + ns + ns].gid < worst) worst = v->ents[i + ns + ns].gid;
    if (ns == 1 && nr == 1) { /* the usual key: one message, matched now (PAIR) */
      uint32_t sg = v->ents[i].gid, rg = v->ents[i + 1].gid;
      v->key[sg] = v->key[rg] = PAIR;
      v->matched[sg] = rg, v->matched[rg] = sg;
    } else {
      v->key_off[nkeys++] = i;
    }
    i = j;
  }
  v->key_off[nkeys] = m;
  v->nkeys = nkeys;
  if (worst != NONE) return report_unmatched(v, worst, err);
  return TN_OK;
}

/* ---- semantics --------------------------------------------------------------- */

static const set_rec_t *set_rec(const vctx_t *v, uint32_t s) {
  return &TN_VEC_AT(&v->sets, set_rec_t, s - SET_SINGLE - v->n);
}

static uint32_t set_card(const vctx_t *v, uint32_t s) {
  if (s == SET_EMPTY) return 0;
  if (s == SET_FULL) return v->n;
  if (s < SET_SINGLE + v->n) return 1;
  return set_rec(v, s)->card;
}

/* Writes set s as sorted disjoint inclusive intervals lo,hi into buf; returns how many. */
static uint32_t set_load(const vctx_t *v, uint32_t s, uint32_t *buf) {
  if (s == SET_EMPTY) return 0;
  if (s == SET_FULL || s < SET_SINGLE + v->n) {
    buf[0] = s == SET_FULL ? 0 : s - SET_SINGLE;
    buf[1] = s == SET_FULL ? v->n - 1 : s - SET_SINGLE;
    return 1;
  }
  const set_rec_t *rec = set_rec(v, s);
  const uint32_t *w = &TN_VEC_AT(&v->arena, uint32_t, rec->off);
  if (rec->nint > 0) {
    memcpy(buf, w, 2 * (size_t)rec->nint * sizeof *buf);
    return rec->nint;
  }
  uint32_t cnt = 0;
  for (uint32_t i = 0; i < v->words; i++)
    for (uint32_t bits = w[i]; bits != 0; bits &= bits - 1) {
      uint32_t x = i * 32 + (uint32_t)__builtin_ctz(bits);
      if (cnt > 0 && buf[2 * cnt - 1] + 1 == x) {
        buf[2 * cnt - 1] = x;
      } else {
        buf[2 * cnt] = buf[2 * cnt + 1] = x;
        cnt++;
      }
    }
  return cnt;
}

static bool set_has(const vctx_t *v, uint32_t s, uint32_t x) {
  uint32_t *buf = v->ibuf[0], cnt = set_load(v, s, buf);
  for (uint32_t i = 0; i < cnt; i++)
    if (buf[2 * i] <= x && x <= buf[2 * i + 1]) return true;
  return false;
}

/* Sets bits lo..hi (inclusive) of the bitset w, a word at a time. */
static void bits_fill(uint32_t *w, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo / 32; i <= hi / 32; i++) {
    uint32_t from = i == lo / 32 ? lo % 32 : 0, to = i == hi / 32 ? hi % 32 : 31;
    uint32_t upto = to == 31 ? UINT32_MAX : ((uint32_t)1 << (to + 1)) - 1;
    w[i] |= upto & ~(((uint32_t)1 << from) - 1);
  }
}

/* Whether s is stored as a bitset (the other forms load as a few intervals). */
static bool set_is_bits(const vctx_t *v, uint32_t s) {
  return s >= SET_SINGLE + v->n && set_rec(v, s)->nint == 0;
}

/* Writes set s as a bitset of v->words words into w. */
static void set_bits(const vctx_t *v, uint32_t s, uint32_t *w) {
  memset(w, 0, v->words * sizeof *w);
  if (s == SET_EMPTY) return;
  if (s == SET_FULL || s < SET_SINGLE + v->n) {
    bits_fill(w, s == SET_FULL ? 0 : s - SET_SINGLE, s == SET_FULL ? v->n - 1 : s - SET_SINGLE);
    return;
  }
  const set_rec_t *rec = set_rec(v, s);
  const uint32_t *a = &TN_VEC_AT(&v->arena, uint32_t, rec->off);
  if (rec->nint == 0) {
    memcpy(w, a, v->words * sizeof *w);
    return;
  }
  for (uint32_t k = 0; k < rec->nint; k++)
    bits_fill(w, a[2 * k], a[2 * k + 1]);
}

/* The first position from `from` on whose bit in w (v->words words) is `set`, or
 * v->words * 32. */
static uint32_t next_bit(const vctx_t *v, const uint32_t *w, uint32_t from, bool set) {
  uint32_t i = from / 32;
  if (i >= v->words) return v->words * 32;
  uint32_t x = (set ? w[i] : ~w[i]) & (UINT32_MAX << (from % 32));
  while (x == 0) {
    if (++i == v->words) return v->words * 32;
    x = set ? w[i] : ~w[i];
  }
  return i * 32 + (uint32_t)__builtin_ctz(x);
}

/* Maximal runs of the bitset w (v->words words): their number, and when buf is not NULL
 * the runs themselves as inclusive intervals lo,hi in ascending order. */
static uint32_t bits_runs(const vctx_t *v, const uint32_t *w, uint32_t *buf) {
  uint32_t cnt = 0;
  if (buf == NULL) {
    uint32_t carry = 0; /* the previous word's top bit */
    for (uint32_t i = 0; i < v->words; i++) {
      cnt += (uint32_t)__builtin_popcount(w[i] & ~(w[i] << 1 | carry));
      carry = w[i] >> 31;
    }
    return cnt;
  }
  for (uint32_t lo = next_bit(v, w, 0, true); lo < v->words * 32;) {
    uint32_t end = next_bit(v, w, lo, false);
    buf[2 * cnt] = lo, buf[2 * cnt + 1] = end - 1;
    cnt++;
    lo = next_bit(v, w, end, true);
  }
  return cnt;
}

/* The lowest member of x that is also in y, or NONE when they are disjoint. Sets stored
 * as bitsets (many members in many runs) are compared word by word: O(n / 32), where
 * their intervals would cost O(n). */
static uint32_t set_overlap(const vctx_t *v, uint32_t x, uint32_t y) {
  uint32_t *p = v->ibuf[0], *q = v->ibuf[1];
  if (x != SET_EMPTY && y != SET_EMPTY && (set_is_bits(v, x) || set_is_bits(v, y))) {
    set_bits(v, x, p);
    set_bits(v, y, q);
    for (uint32_t i = 0; i < v->words; i++)
      if (p[i] & q[i]) return i * 32 + (uint32_t)__builtin_ctz(p[i] & q[i]);
    return NONE;
  }
  uint32_t np = set_load(v, x, p), nq = set_load(v, y, q), i = 0, j = 0;
  while (i < np && j < nq) {
    uint32_t lo = p[2 * i] > q[2 * j] ? p[2 * i] : q[2 * j];
    uint32_t hi = p[2 * i + 1] < q[2 * j + 1] ? p[2 * i + 1] : q[2 * j + 1];
    if (lo <= hi) return lo;
    if (p[2 * i + 1] < q[2 * j + 1])
      i++;
    else
      j++;
  }
  return NONE;
}

/* Hash of a stored form (nint and its words). */
static uint64_t set_hash(const uint32_t *w, size_t len, uint32_t nint) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ nint;
  for (size_t i = 0; i < len; i++) {
    h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

/* Doubles the table of stored sets (first: 1024 slots) and puts every set back. */
static tn_status_t set_table_grow(vctx_t *v, tn_err_t *err) {
  size_t cap = v->hcap ? 2 * v->hcap : 1024;
  uint32_t *tab = NULL;
  tn_status_t st = tn_calloc(cap, sizeof *tab, &tab, err);
  if (st != TN_OK) return st;
  for (size_t i = 0; i < v->sets.len; i++) {
    const set_rec_t *rec = &TN_VEC_AT(&v->sets, set_rec_t, i);
    size_t len = rec->nint == 0 ? v->words : 2 * (size_t)rec->nint;
    size_t h = (size_t)set_hash(&TN_VEC_AT(&v->arena, uint32_t, rec->off), len, rec->nint);
    while (tab[h & (cap - 1)] != 0)
      h++;
    tab[h & (cap - 1)] = (uint32_t)i + 1;
  }
  free(v->htab);
  v->htab = tab, v->hcap = cap;
  return TN_OK;
}

/* Names in *out the set of card members given as nint intervals at w (nint > 0) or as a
 * bitset of v->words words (nint == 0), storing it unless an equal set is stored already.
 * The form (intervals or bitset) is a function of the members (set_union), so equal sets
 * have equal forms and one id: the partial sums of a tree All-Reduce repeat for every chunk
 * a tree carries (the same subtrees), and stored once each they cost ntrees * n sets, not
 * one per reduction (4096 NPUs: 8 GB of bitsets before). */
static tn_status_t set_store(vctx_t *v, uint32_t card, const uint32_t *w, uint32_t nint,
                             uint32_t *out, tn_err_t *err) {
  size_t len = nint == 0 ? v->words : 2 * (size_t)nint;
  size_t h = (size_t)set_hash(w, len, nint);
  for (size_t i = h; v->hcap != 0 && v->htab[i & (v->hcap - 1)] != 0; i++) {
    uint32_t id = v->htab[i & (v->hcap - 1)] - 1;
    const set_rec_t *rec = &TN_VEC_AT(&v->sets, set_rec_t, id);
    if (rec->nint == nint && rec->card == card &&
        memcmp(&TN_VEC_AT(&v->arena, uint32_t, rec->off), w, len * sizeof *w) == 0) {
      *out = SET_SINGLE + v->n + id;
      return TN_OK;
    }
  }
  if ((uint64_t)v->sets.len + SET_SINGLE + v->n >= NONE)
    return tn_err_set(err, TN_LIMIT, "too many partial reductions to verify");
  tn_status_t st = TN_OK;
  if (2 * (v->sets.len + 1) > v->hcap && (st = set_table_grow(v, err)) != TN_OK) return st;
  set_rec_t rec = {v->arena.len, card, nint};
  st = tn_vec_reserve(&v->arena, v->arena.len + len, err);
  if (st == TN_OK) st = tn_vec_push(&v->sets, &rec, err);
  if (st != TN_OK) return st;
  memcpy(&TN_VEC_AT(&v->arena, uint32_t, v->arena.len), w, len * sizeof *w);
  v->arena.len += len;
  size_t i = h;
  while (v->htab[i & (v->hcap - 1)] != 0)
    i++;
  v->htab[i & (v->hcap - 1)] = (uint32_t)v->sets.len;
  *out = (uint32_t)(SET_SINGLE + v->n + v->sets.len - 1);
  return TN_OK;
}

/* The union of disjoint x and y as a set id, stored in its smaller form. */
static tn_status_t set_union(vctx_t *v, uint32_t x, uint32_t y, uint32_t *out, tn_err_t *err) {
  uint32_t card = set_card(v, x) + set_card(v, y);
  if (y == SET_EMPTY || x == SET_EMPTY || card == v->n) {
    *out = card == v->n ? (uint32_t)SET_FULL : x == SET_EMPTY ? y : x;
    return TN_OK;
  }
  uint32_t *p = v->ibuf[0], *q = v->ibuf[1], *m = v->ibuf[2];
  uint32_t nm = 0;
  if (set_is_bits(v, x) || set_is_bits(v, y)) { /* word by word, as in set_overlap */
    set_bits(v, x, p);
    set_bits(v, y, q);
    for (uint32_t i = 0; i < v->words; i++)
      p[i] |= q[i];
    nm = bits_runs(v, p, NULL);
    if (2 * nm > v->words) return set_store(v, card, p, 0, out, err);
    bits_runs(v, p, m);
    return set_store(v, card, m, nm, out, err);
  }
  uint32_t np = set_load(v, x, p), nq = set_load(v, y, q), i = 0, j = 0;
  while (i < np || j < nq) { /* merge by lower end, joining adjacent intervals */
    const uint32_t *iv = j >= nq || (i < np && p[2 * i] < q[2 * j]) ? &p[2 * i++] : &q[2 * j++];
    if (nm > 0 && m[2 * nm - 1] + 1 == iv[0]) {
      m[2 * nm - 1] = iv[1];
    } else {
      m[2 * nm] = iv[0], m[2 * nm + 1] = iv[1];
      nm++;
    }
  }
  if (2 * nm > v->words) { /* too many runs: store the bitset */
    memset(p, 0, v->words * sizeof *p);
    for (uint32_t k = 0; k < nm; k++)
      bits_fill(p, m[2 * k], m[2 * k + 1]);
    return set_store(v, card, p, 0, out, err);
  }
  return set_store(v, card, m, nm, out, err);
}

/* Race check of one access in round k by node g (reads and/or writes slot si). Two
 * accesses in one round are never ordered by dependencies or messages (an ordered pair
 * lands in different rounds), so the value would depend on the verifier's own order. */
static tn_status_t access_slot(vctx_t *v, uint32_t g, uint32_t si, uint32_t c, bool write,
                               uint32_t k, tn_err_t *err) {
  vslot_t *sl = &v->slot[si];
  uint32_t last = sl->last, h = last & ~LAST_WRITE;
  bool now = last != NONE && v->round_of[h] == k, wrote = (last & LAST_WRITE) != 0;
  if (now && h != g && (wrote || write))
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %u: race on chunk %u: node %u %s it "
                      "concurrently and no dependency or message orders the two",
                      v->rank_of[g], local_id(v, g), c, local_id(v, h), wrote ? "writes" : "reads");
  if (write)
    sl->last = g | LAST_WRITE;
  else if (!(now && wrote)) /* (a write of this round is g's own: it stays) */
    sl->last = g;
  return TN_OK;
}

/* The slot of rank r's chunk reference ref (its chunk c). */
static inline uint32_t slot_of(const vctx_t *v, uint32_t r, size_t ref, uint32_t c) {
  return v->sref ? v->sref[ref] : r * v->nchunks + c;
}

static tn_status_t exec_send(vctx_t *v, uint32_t g, uint32_t k, tn_err_t *err) {
  uint32_t r = v->rank_of[g];
  const algo_node_t *nd = gnode(v, g);
  const uint32_t *ch = algo_node_chunks(v->a, r, nd);
  size_t ref = (size_t)v->snap_base[r] + nd->chunk_off;
  bool full = true;
  for (uint32_t j = 0; j < nd->nchunks; j++) {
    uint32_t si = slot_of(v, r, ref + j, ch[j]);
    tn_status_t st = access_slot(v, g, si, ch[j], false, k, err);
    if (st != TN_OK) return st;
    if (v->slot[si].set == SET_EMPTY)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %u: sends chunk %u, which it does not "
                        "hold",
                        r, local_id(v, g), ch[j]);
    full = full && v->slot[si].set == SET_FULL;
  }
  /* A SEND of complete chunks only (every one of an All-Gather's) needs no snapshot: its
   * values are known, and its part of snap is never touched (400 MB of a 4096-NPU
   * All-Gather's 100M references never in memory). */
  v->sfull[g] = full;
  for (uint32_t j = 0; !full && j < nd->nchunks; j++)
    v->snap[ref + j] = v->slot[slot_of(v, r, ref + j, ch[j])].set;
  return TN_OK;
}

/* The value SEND s carried for its j-th chunk. */
static uint32_t sent_value(const vctx_t *v, uint32_t s, const algo_node_t *sn, uint32_t j) {
  return v->sfull[s] ? (uint32_t)SET_FULL
                     : v->snap[v->snap_base[v->rank_of[s]] + sn->chunk_off + j];
}

static tn_status_t exec_recv(vctx_t *v, uint32_t g, uint32_t k, tn_err_t *err) {
  uint32_t r = v->rank_of[g], s = v->matched[g];
  const algo_node_t *nd = gnode(v, g), *sn = gnode(v, s);
  const uint32_t *ch = algo_node_chunks(v->a, r, nd);
  const uint32_t *sch = algo_node_chunks(v->a, v->rank_of[s], sn);
  if (nd->nchunks != sn->nchunks || memcmp(ch, sch, nd->nchunks * sizeof *ch) != 0)
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %u: RECV lists other chunks than its SEND "
                      "(rank %u node %u)",
                      r, local_id(v, g), v->rank_of[s], local_id(v, s));
  if (nd->reduce) return TN_OK; /* lands in scratch: the matched SEND's snapshot */
  size_t ref = (size_t)v->snap_base[r] + nd->chunk_off;
  for (uint32_t j = 0; j < nd->nchunks; j++) {
    uint32_t si = slot_of(v, r, ref + j, ch[j]);
    tn_status_t st = access_slot(v, g, si, ch[j], true, k, err);
    if (st != TN_OK) return st;
    v->slot[si].set = sent_value(v, s, sn, j);
  }
  return TN_OK;
}

/* Adds the scratch of the COMP's direct reduce-RECV dependencies to the slots it lists. */
static tn_status_t exec_comp(vctx_t *v, uint32_t g, uint32_t k, tn_err_t *err) {
  uint32_t r = v->rank_of[g], id = local_id(v, g);
  const algo_node_t *nd = gnode(v, g);
  const uint32_t *ch = algo_node_chunks(v->a, r, nd);
  for (uint32_t j = 0; j < nd->nchunks; j++)
    v->in_comp[ch[j]] = g + 1;
  const uint32_t *deps = algo_node_deps(v->a, r, nd);
  tn_status_t st = TN_OK;
  for (uint32_t d = 0; d < nd->ndeps && st == TN_OK; d++) {
    uint32_t dg = v->base[r] + deps[d];
    const algo_node_t *dn = gnode(v, dg);
    if (dn->op != ALGO_RECV || !dn->reduce) continue;
    uint32_t s = v->matched[dg];
    const algo_node_t *sn = gnode(v, s);
    const uint32_t *dch = algo_node_chunks(v->a, r, dn);
    size_t dref = (size_t)v->snap_base[r] + dn->chunk_off;
    for (uint32_t j = 0; j < dn->nchunks && st == TN_OK; j++) {
      uint32_t c = dch[j], si = slot_of(v, r, dref + j, c);
      if (v->in_comp[c] != g + 1) continue;
      uint32_t val = sent_value(v, s, sn, j);
      uint32_t dup = set_overlap(v, v->slot[si].set, val);
      if (dup != NONE)
        return tn_err_set(err, TN_PARSE,
                          "rank %u node %u: chunk %u reduced twice with "
                          "contribution of rank %u (from node %u)",
                          r, id, c, dup, deps[d]);
      if ((st = access_slot(v, g, si, c, true, k, err)) == TN_OK)
        st = set_union(v, v->slot[si].set, val, &v->slot[si].set, err);
      v->got[c] = g + 1;
    }
  }
  for (uint32_t j = 0; j < nd->nchunks && st == TN_OK; j++)
    if (v->got[ch[j]] != g + 1)
      return tn_err_set(err, TN_PARSE,
                        "rank %u node %u: COMP reduces chunk %u but no "
                        "reduce-RECV it depends on carries it",
                        r, id, ch[j]);
  return st;
}

/* What rank r's slot of chunk c holds before any node runs. */
static uint32_t init_set(const vctx_t *v, uint32_t r, uint32_t c) {
  tn_coll_t coll = v->a->coll;
  if (coll == TN_ALLGATHER || coll == TN_ALLTOALL)
    return c / v->a->chunks_per_npu == r ? (uint32_t)SET_FULL : (uint32_t)SET_EMPTY;
  return v->n == 1 ? (uint32_t)SET_FULL : (uint32_t)SET_SINGLE + r;
}

/* Dense slots when there are no more (rank, chunk) pairs than chunk references (All-Gather,
 * Reduce-Scatter, All-Reduce: every rank handles nearly every chunk): rank r's chunk c is
 * slot r * nchunks + c, found without a table. Otherwise the buffer model keeps a slot only
 * for the pairs some node of the rank lists: a rank's other slots keep their first value
 * to the end. Each chunk reference (parallel to snap) names its slot in sref. An
 * All-to-All of n ranks and k chunks per NPU has n * n * k pairs, nearly all untouched
 * (1024 ranks: 4G), so slots are numbered in order of first reference, rank by rank,
 * through the per-chunk map cmap/cstamp. (Dense slots spare sref: 4 bytes per chunk
 * reference, 800 MB on a 4096-NPU All-Gather of six chunks per NPU.) */
static tn_status_t sem_init(vctx_t *v, tn_err_t *err) {
  const algo_t *a = v->a;
  v->words = (v->n + 31) / 32;
  tn_status_t st = TN_OK;
  for (int i = 0; i < 3 && st == TN_OK; i++)
    st = tn_calloc((size_t)v->n + 4, sizeof(uint32_t), &v->ibuf[i], err);
  if (st == TN_OK) st = tn_calloc((size_t)v->n + 1, sizeof *v->snap_base, &v->snap_base, err);
  if (st == TN_OK) st = tn_calloc((size_t)v->total + 1, sizeof *v->sfull, &v->sfull, err);
  if (st == TN_OK) st = tn_malloc((size_t)v->total + 1, sizeof *v->round_of, &v->round_of, err);
  if (st != TN_OK) return st;
  for (uint32_t r = 0; r < v->n; r++) {
    uint64_t next = (uint64_t)v->snap_base[r] + a->ranks[r].chunks.len;
    if (next >= NONE) return tn_err_set(err, TN_LIMIT, "too many chunk references to verify");
    v->snap_base[r + 1] = (uint32_t)next;
  }
  size_t refs = (size_t)v->snap_base[v->n] + 1;
  uint64_t pairs = (uint64_t)v->n * v->nchunks;
  if ((st = tn_malloc(refs, sizeof *v->snap, &v->snap, err)) != TN_OK) return st;
  if (pairs < refs) {
    if ((st = tn_malloc((size_t)pairs + 1, sizeof *v->slot, &v->slot, err)) != TN_OK) return st;
    for (uint32_t r = 0; r < v->n; r++)
      for (uint32_t c = 0; c < v->nchunks; c++)
        v->slot[(size_t)r * v->nchunks + c] = (vslot_t){init_set(v, r, c), NONE};
    return TN_OK;
  }
  if ((st = tn_malloc(refs, sizeof *v->sref, &v->sref, err)) != TN_OK ||
      (st = tn_malloc(v->nchunks, sizeof *v->cmap, &v->cmap, err)) != TN_OK ||
      (st = tn_calloc(v->nchunks, sizeof *v->cstamp, &v->cstamp, err)) != TN_OK)
    return st;
  uint32_t nslots = 0;
  for (uint32_t r = 0; r < v->n; r++) {
    const uint32_t *ch = a->ranks[r].chunks.data;
    uint32_t *sref = &v->sref[v->snap_base[r]];
    for (size_t j = 0; j < a->ranks[r].chunks.len; j++) {
      uint32_t c = ch[j];
      if (v->cstamp[c] != r + 1) v->cstamp[c] = r + 1, v->cmap[c] = nslots++;
      sref[j] = v->cmap[c];
    }
  }
  if ((st = tn_malloc((size_t)nslots + 1, sizeof *v->slot, &v->slot, err)) != TN_OK) return st;
  for (uint32_t r = 0; r < v->n; r++) {
    const uint32_t *ch = a->ranks[r].chunks.data;
    const uint32_t *sref = &v->sref[v->snap_base[r]];
    for (size_t j = 0; j < a->ranks[r].chunks.len; j++)
      v->slot[sref[j]] = (vslot_t){init_set(v, r, ch[j]), NONE};
  }
  return TN_OK;
}

/* Rank r's chunk c at the end: its slot, or (sparse slots) its first value when no node of
 * r lists it. cstamp[c] == stamp marks the chunks r lists, cmap[c] their slots. */
static uint32_t final_set(const vctx_t *v, uint32_t r, uint32_t c, uint32_t stamp) {
  if (v->sref == NULL) return v->slot[(size_t)r * v->nchunks + c].set;
  return v->cstamp[c] == stamp ? v->slot[v->cmap[c]].set : init_set(v, r, c);
}

static tn_status_t final_check(const vctx_t *v, uint32_t r, uint32_t c, uint32_t stamp,
                               tn_err_t *err) {
  uint32_t s = final_set(v, r, c, stamp);
  if (s == SET_FULL) return TN_OK;
  if (s == SET_EMPTY || v->a->coll == TN_ALLGATHER || v->a->coll == TN_ALLTOALL)
    return tn_err_set(err, TN_PARSE, "rank %u ends without chunk %u%s", r, c,
                      v->a->coll == TN_ALLTOALL ? " (addressed to it)" : "");
  uint32_t miss = 0;
  while (set_has(v, s, miss))
    miss++;
  return tn_err_set(err, TN_PARSE,
                    "rank %u ends with chunk %u missing the contribution "
                    "of rank %u (%u of %u)",
                    r, c, miss, set_card(v, s), v->n);
}

/* The collective's promise at the end (algo.h), chunk by chunk in ascending order. */
static tn_status_t sem_final(vctx_t *v, tn_err_t *err) {
  uint32_t k = v->a->chunks_per_npu, n = v->n;
  tn_status_t st = TN_OK;
  for (uint32_t r = 0; r < n && st == TN_OK; r++) {
    uint32_t stamp = n + 1 + r; /* sem_init's stamps are 1..n */
    const algo_t *a = v->a;
    const uint32_t *ch = a->ranks[r].chunks.data;
    for (size_t j = 0; v->sref && j < a->ranks[r].chunks.len; j++)
      v->cstamp[ch[j]] = stamp, v->cmap[ch[j]] = v->sref[v->snap_base[r] + j];
    if (a->coll == TN_REDUCESCATTER) {
      for (uint32_t c = r * k; c < (r + 1) * k && st == TN_OK; c++)
        st = final_check(v, r, c, stamp, err);
    } else if (a->coll == TN_ALLTOALL) {
      /* Chunk c of NPU c / k is addressed to NPU (c % k) / (k / n). */
      uint32_t per = k / n;
      for (uint32_t src = 0; src < n && st == TN_OK; src++)
        for (uint32_t p = r * per; p < (r + 1) * per && st == TN_OK; p++)
          st = final_check(v, r, src * k + p, stamp, err);
    } else {
      for (uint32_t c = 0; c < v->nchunks && st == TN_OK; c++)
        st = final_check(v, r, c, stamp, err);
    }
  }
  return st;
}

/* ---- pass 4: symbolic execution ---------------------------------------------- */

/* A node whose dependencies are done: SENDs and COMPs join the queue; a RECV is posted and
 * joins when its SEND has been issued (FIFO per key; a PAIR's SEND is known: matched). */
static void make_ready(vctx_t *v, uint32_t g) {
  if (!v->is_recv[g]) {
    v->order[v->qlen++] = g;
    return;
  }
  uint32_t q = v->key[g];
  if (q == PAIR) {
    if (v->done[v->matched[g]]) v->order[v->qlen++] = g; /* else issue_send queues it */
    return;
  }
  vkeyq_t *kq = &v->kq[q];
  if (kq->sq_head < kq->sq_tail) {
    v->matched[g] = v->sq[kq->sq_head++];
    v->order[v->qlen++] = g;
  } else {
    v->rq[kq->rq_tail++] = g;
  }
}

static void issue_send(vctx_t *v, uint32_t g) {
  if (v->key[g] == PAIR) { /* its RECV joins now if it is posted (its dependencies done) */
    uint32_t rg = v->matched[g];
    if (v->remaining[rg] == 0) v->order[v->qlen++] = rg;
    return;
  }
  vkeyq_t *kq = &v->kq[v->key[g]];
  if (kq->rq_head < kq->rq_tail) {
    uint32_t rg = v->rq[kq->rq_head++];
    v->matched[rg] = g;
    v->order[v->qlen++] = rg;
  } else {
    v->sq[kq->sq_tail++] = g;
  }
}

static tn_status_t report_deadlock(const vctx_t *v, tn_err_t *err) {
  for (uint32_t g = 0; g < v->total; g++) {
    if (v->done[g] || v->remaining[g] != 0) continue;
    /* Acyclic ranks: the lowest unfinished node with all dependencies done is a posted RECV
     * whose SEND was never issued. Name the first unissued SEND of its key. */
    const algo_node_t *nd = gnode(v, g);
    uint32_t q = v->key[g], s = NONE;
    if (q == PAIR)
      s = v->done[v->matched[g]] ? NONE : v->matched[g];
    else
      for (uint32_t e = v->key_off[q]; e < v->key_off[q + 1] && s == NONE; e++)
        if (!v->ents[e].is_recv && !v->done[v->ents[e].gid]) s = v->ents[e].gid;
    if (s == NONE) break;
    return tn_err_set(err, TN_PARSE,
                      "rank %u node %u: deadlock: RECV from %d tag %d waits "
                      "for rank %u node %u (SEND), which is never issued",
                      v->rank_of[g], local_id(v, g), nd->peer, nd->tag, v->rank_of[s],
                      local_id(v, s));
  }
  return tn_err_set(err, TN_INTERNAL, "verifier: execution stalled without a waiting RECV");
}

#define PREFETCH_AHEAD 8u

/* Executes in rounds: round k holds the nodes that became executable during round k-1 (a
 * RECV when both its dependencies and its SEND are done). A SEND completes when issued
 * (eager; delivery is eventual), so its dependents and its RECV run in the next round. */
static tn_status_t execute(vctx_t *v, tn_err_t *err) {
  tn_status_t st = TN_OK;
  v->qlen = 0;
  for (uint32_t g = 0; g < v->total; g++)
    if (v->remaining[g] == 0) make_ready(v, g);
  uint32_t head = 0, round = 0;
  while (head < v->qlen) {
    uint32_t end = v->qlen;
    for (; head < end; head++) {
      uint32_t g = v->order[head];
      /* The order jumps between ranks: fetch a node a few places ahead while this one runs
       * (what its execution reads first, its node and its successors). */
      if (head + PREFETCH_AHEAD < v->qlen) {
        uint32_t h = v->order[head + PREFETCH_AHEAD];
        __builtin_prefetch(gnode(v, h));
        __builtin_prefetch(&v->succ_off[h]);
      }
      const algo_node_t *nd = gnode(v, g);
      if (v->sem) {
        v->round_of[g] = round;
        if (nd->op == ALGO_SEND)
          st = exec_send(v, g, round, err);
        else if (nd->op == ALGO_RECV)
          st = exec_recv(v, g, round, err);
        else if (nd->nchunks > 0)
          st = exec_comp(v, g, round, err);
        if (st != TN_OK) return st;
      }
      v->done[g] = 1;
      if (nd->op == ALGO_SEND) issue_send(v, g);
      for (uint32_t e = v->succ_off[g]; e < v->succ_off[g + 1]; e++)
        if (--v->remaining[v->succ[e]] == 0) make_ready(v, v->succ[e]);
    }
    round++;
  }
  if (head < v->total) return report_deadlock(v, err);
  return v->sem ? sem_final(v, err) : TN_OK;
}

/* ---- driver ---------------------------------------------------------------------- */

static void vctx_free(vctx_t *v) {
  void *arrs[] = {v->base,  v->rank_of, v->succ_off,  v->succ, v->remaining, v->done, v->is_recv,
                  v->key,   v->ents,    v->key_off,   v->sq,   v->rq,        v->kq,   v->matched,
                  v->order, v->slot,    v->snap_base, v->snap, v->in_comp,   v->got,  v->sref,
                  v->cmap,  v->cstamp,  v->round_of,  v->sfull};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
    free(arrs[i]);
  for (int i = 0; i < 3; i++)
    free(v->ibuf[i]);
  tn_vec_free(&v->arena);
  tn_vec_free(&v->sets);
  free(v->htab);
}

static tn_status_t vctx_init(vctx_t *v, const algo_t *a, tn_err_t *err) {
  v->a = a;
  v->n = a->npus;
  tn_vec_init(&v->arena, sizeof(uint32_t));
  tn_vec_init(&v->sets, sizeof(set_rec_t));
  tn_status_t st = tn_calloc((size_t)v->n + 1, sizeof *v->base, &v->base, err);
  if (st != TN_OK) return st;
  uint64_t total = 0;
  for (uint32_t r = 0; r < v->n; r++) {
    v->base[r] = (uint32_t)total;
    total += algo_rank_len(a, r);
    if (total >= LAST_WRITE) return tn_err_set(err, TN_LIMIT, "too many nodes to verify");
  }
  v->total = v->base[v->n] = (uint32_t)total;
  size_t t1 = (size_t)total + 1;
  uint32_t **arrs[] = {&v->rank_of, &v->remaining, &v->key, &v->matched, &v->order};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0] && st == TN_OK; i++)
    st = tn_calloc(t1, sizeof(uint32_t), arrs[i], err);
  if (st == TN_OK) st = tn_calloc(t1, sizeof *v->done, &v->done, err);
  if (st == TN_OK) st = tn_calloc(t1, sizeof *v->is_recv, &v->is_recv, err);
  if (st == TN_OK) st = tn_calloc(t1, sizeof *v->ents, &v->ents, err);
  if (st != TN_OK) return st;
  for (uint32_t r = 0; r < v->n; r++)
    for (uint32_t g = v->base[r]; g < v->base[r + 1]; g++) {
      v->rank_of[g] = r;
      v->is_recv[g] = algo_node(a, r, g - v->base[r])->op == ALGO_RECV;
    }
  return TN_OK;
}

/* Sets up the per-key FIFOs: key q's SENDs and RECVs queue in slices of sq/rq. */
static tn_status_t init_queues(vctx_t *v, tn_err_t *err) {
  tn_status_t st = TN_OK;
  uint32_t **per_ent[] = {&v->sq, &v->rq};
  for (size_t i = 0; i < 2 && st == TN_OK; i++)
    st = tn_calloc((size_t)v->nents + 1, sizeof(uint32_t), per_ent[i], err);
  if (st == TN_OK) st = tn_calloc((size_t)v->nkeys + 1, sizeof *v->kq, &v->kq, err);
  if (st != TN_OK) return st;
  for (uint32_t q = 0; q < v->nkeys; q++) {
    uint32_t o = v->key_off[q];
    v->kq[q] = (vkeyq_t){o, o, o, o};
  }
  return TN_OK;
}

tn_status_t algo_verify(const algo_t *a, const topo_t *t, algo_verify_report_t *report,
                        tn_err_t *err) {
  vctx_t v;
  memset(&v, 0, sizeof v);
  algo_verify_report_t rep = {false, algo_node_count(a), algo_send_count(a)};
  if (report) *report = rep;
  tn_status_t st = vctx_init(&v, a, err);
  if (st != TN_OK) goto out;
  if (t != NULL && a->npus > t->npus) {
    st = tn_err_set(err, TN_PARSE, "the algorithm has %u ranks but %s has %u NPUs", a->npus,
                    t->name, t->npus);
    goto out;
  }
  bool book = false;
  if ((st = check_bookkeeping(a, &book, err)) != TN_OK) goto out;
  v.sem = book && a->has_coll;
  if (v.sem) {
    uint64_t nch = (uint64_t)a->npus * a->chunks_per_npu;
    if (a->chunks_per_npu == 0 || nch >= NONE) {
      st = tn_err_set(err, TN_PARSE, "%u chunks per NPU cannot be verified", a->chunks_per_npu);
      goto out;
    }
    v.nchunks = (uint32_t)nch;
    if ((st = tn_calloc(nch, sizeof *v.in_comp, &v.in_comp, err)) != TN_OK) goto out;
    if ((st = tn_calloc(nch, sizeof *v.got, &v.got, err)) != TN_OK) goto out;
  }
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      if ((st = check_node(&v, t, r, i, err)) != TN_OK) goto out;
  if (v.sem) memset(v.in_comp, 0, v.nchunks * sizeof *v.in_comp);
  if ((st = build_succ(&v, err)) != TN_OK) goto out;
  if ((st = check_acyclic(&v, err)) != TN_OK) goto out;
  if ((st = check_matching(&v, err)) != TN_OK) goto out;
  if ((st = init_queues(&v, err)) != TN_OK) goto out;
  if (v.sem && (st = sem_init(&v, err)) != TN_OK) goto out;
  if ((st = execute(&v, err)) != TN_OK) goto out;
  rep.semantics_checked = v.sem;
  if (report) *report = rep;
out:
  vctx_free(&v);
  return st;
}
