/* emit/msccl/pack.c — algo_t → MSCCL-IR XML that a real MSCCL runtime can load
 * ("runtime-fit" export): nodes packed into few threadblocks. Pipeline: algo_t (tenet's
 * own, with chunk bookkeeping) → this packer → MSCCL executor, or back through
 * emit/msccl/import.c. The exact writer (one tb per node) is emit/msccl/export.c.
 *
 * Steps. A node becomes one step, except fused ones: a copy RECV from q with a dependent
 * SEND to p (that SEND's only dependency, same chunks) is one rcs; a reduce RECV with the
 * one COMP that reduces it (same chunks, no other reduce RECV) is one rrc, and with a SEND
 * of the result as above one rrcs. Fusion pairs receive peers with send peers per rank (a
 * greedy matching, most candidates first); only pairs of the matching are fused. Layout as
 * in the exact writer: in place, chunk c in slot c; an unfused reduce RECV lands in its own
 * scratch range and the COMP's re steps add it into the slot; rrc/rrcs reduce in the slot.
 * No tag attribute (a fused step carries two messages): the import numbers messages per
 * connection, so the imported DAG differs from the set but verifies. All-to-All is out of
 * place, as in the exact writer: a GPU sends its own pieces from i, receives the pieces
 * addressed to it into o and relays the others through scratch (a fused rcs receives into
 * scratch and sends from there), and the piece it keeps is one cpy in a last tb of its own.
 * A gathered message (chunks not one ascending range: Two-Step's) is staged through a
 * scratch range of its own with cpy steps in its unit's tb (emit/msccl/stage.c) and never
 * fuses; its unit's steps count those cpys against the steps-per-tb limit.
 *
 * Threadblocks. Per rank a shape (send peer, receive peer): one per matched pair, then a
 * send peer and an unmatched receive from the same peer share one, the rest are alone. A
 * tb is (channel, shape), so one tb per GPU owns each (peer, channel) in each direction, as
 * the runtime's connections require. A COMP's re steps run on the tb of the reduce RECV it
 * waits for last. Channels: messages linked by fused steps form chains that share a
 * channel; chain k (numbered by first message) gets channel k mod C. C is the smallest
 * count 1..32 for which the order below exists and every limit holds, fused first, then
 * unfused; nothing fits: refused, naming the limit or the node that never runs. The limits
 * that do not depend on the order (threadblocks per GPU and per channel, steps per tb) are
 * checked before a count's witness run (precheck), which is the costly part.
 *
 * Order and deadlock freedom. The runtime model is the strictest one: a connection
 * (sender, receiver, channel) buffers one message, so a send waits until the previous
 * message on its connection was received; a receive waits for its message; a fused step
 * does both at once; a step waits for its dependencies (depid/deps, nops when it has more
 * than one other tb to wait for: the latest step of each). A witness run fires ready steps
 * one at a time, earliest estimated start first (an eager run of the DAG without
 * contention), and every tb lists its steps in firing order L. The witness is a run of the
 * written program; all waits are monotone, so no run of the program can get stuck (in a
 * stuck state the first witness step not yet done would be the next step of its tb with
 * all its waits met). One message in flight per connection also makes the k-th receive
 * meet the k-th send: the FIFO pairing is the DAG's. Before writing, every wait is checked
 * to point earlier in L (the premise of the argument). A message larger than the
 * connection buffer streams and needs its receiver; that stricter case is not modelled. */
#include "emit/msccl/msccl_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

enum { U_S, U_R, U_RE, U_RCS, U_RRC, U_RRCS };

typedef struct unit {
  uint8_t kind;
  bool hasdep;               /* another tb waits on its last step */
  uint32_t rank;             /* its GPU */
  uint32_t recv, comp, send; /* node ids in the rank, NONE when absent */
  uint32_t head;             /* its lowest node id */
  uint32_t tb;               /* tb index in its rank */
  uint32_t chan;
  uint32_t step, nsteps;   /* first step index in its tb; nops + ops */
  uint32_t dep_off, ndeps; /* into pk.udeps: the latest unit of each other tb it waits on */
} unit_t;

typedef struct shape {
  int32_t send, recv;
} shape_t;

typedef struct tbinfo {
  uint32_t chan, shape, nsteps, first, n; /* units: order[first .. first+n) */
} tbinfo_t;

typedef struct pk {
  const algo_t *a;
  emit_i_msccl_xnode_t **x;
  uint32_t *base;            /* per rank: first global node index */
  uint32_t nn;               /* nodes in all */
  uint32_t *unit;            /* per global node: its unit or NONE (idle ranks) */
  uint32_t *succ_off, *succ; /* dependents (global ids), CSR */
  tn_vec_t units;            /* unit_t */
  uint32_t *L;               /* per unit: position of its event in the order */
  uint32_t *wpos, *wunit;    /* per unit: its rank in the witness's order; inverse */
  uint32_t *chain;           /* per global node (SEND: its message): union-find parent */
  uint32_t nchains;
  uint32_t *chain_ord; /* per global node that roots a chain: its number */
  /* per rank shapes */
  tn_vec_t shapes;           /* shape_t of all ranks */
  uint32_t *shape_off;       /* per rank + 1 */
  uint32_t *sshape, *rshape; /* npus * npus: rank r, peer p → shape index (global) */
  /* per attempt */
  tn_vec_t tbs;                /* tbinfo_t, all ranks, ranks in order */
  uint32_t *tb_off;            /* per rank + 1 */
  uint32_t *order;             /* units sorted by (rank, tb, L) */
  tn_vec_t udeps;              /* uint32_t units */
  uint32_t *usucc_off, *usucc; /* unit dependency graph, CSR */
  uint64_t *start;             /* per global node: estimated start (see estimate) */
} pk_t;

#define UN(P, k) TN_VEC_AT(&(P)->units, unit_t, k)
#define TBI(P, k) TN_VEC_AT(&(P)->tbs, tbinfo_t, k)
#define SH(P, k) TN_VEC_AT(&(P)->shapes, shape_t, k)

static uint32_t uf_find(uint32_t *par, uint32_t i) {
  while (par[i] != i) {
    par[i] = par[par[i]];
    i = par[i];
  }
  return i;
}

static void uf_union(uint32_t *par, uint32_t i, uint32_t j) {
  i = uf_find(par, i);
  j = uf_find(par, j);
  if (i == j) return;
  if (i < j)
    par[j] = i;
  else
    par[i] = j;
}

static const algo_node_t *nd(const pk_t *P, uint32_t r, uint32_t i) {
  return algo_node(P->a, r, i);
}

static bool same_chunks(const pk_t *P, uint32_t r, uint32_t i, uint32_t j) {
  const algo_node_t *n = nd(P, r, i), *m = nd(P, r, j);
  if (n->nchunks != m->nchunks || n->nchunks == 0) return false;
  return memcmp(algo_node_chunks(P->a, r, n), algo_node_chunks(P->a, r, m),
                n->nchunks * sizeof(uint32_t)) == 0;
}

/* Reduce-RECV dependencies of COMP i. */
static uint32_t reduce_deps(const pk_t *P, uint32_t r, uint32_t i) {
  const algo_node_t *n = nd(P, r, i);
  const uint32_t *d = algo_node_deps(P->a, r, n);
  uint32_t k = 0;
  for (uint32_t j = 0; j < n->ndeps; j++)
    k += nd(P, r, d[j])->op == ALGO_RECV && nd(P, r, d[j])->reduce;
  return k;
}

/* Dependents (same rank) of every node, CSR over global ids. */
static tn_status_t build_succ(pk_t *P, tn_err_t *err) {
  const algo_t *a = P->a;
  size_t ne = 0;
  tn_status_t rc = tn_calloc(P->nn + 2, sizeof *P->succ_off, &P->succ_off, err);
  if (rc != TN_OK) return rc;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = nd(P, r, i);
      const uint32_t *d = algo_node_deps(a, r, n);
      for (uint32_t k = 0; k < n->ndeps; k++) {
        if (d[k] >= algo_rank_len(a, r))
          return tn_err_set(err, TN_INVAL, "rank %u node %u: dependency %u out of range", r, i,
                            d[k]);
        P->succ_off[P->base[r] + d[k] + 1]++;
        ne++;
      }
    }
  for (uint32_t g = 0; g < P->nn; g++)
    P->succ_off[g + 1] += P->succ_off[g];
  if ((rc = tn_calloc(ne + 1, sizeof *P->succ, &P->succ, err)) != TN_OK) return rc;
  uint32_t *fill = NULL;
  if ((rc = tn_calloc(P->nn + 1, sizeof *fill, &fill, err)) != TN_OK) return rc;
  memcpy(fill, P->succ_off, P->nn * sizeof *fill);
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = nd(P, r, i);
      const uint32_t *d = algo_node_deps(a, r, n);
      for (uint32_t k = 0; k < n->ndeps; k++)
        P->succ[fill[P->base[r] + d[k]]++] = P->base[r] + i;
    }
  free(fill);
  return TN_OK;
}

static tn_status_t new_unit(pk_t *P, uint8_t kind, uint32_t r, uint32_t rv, uint32_t cp,
                            uint32_t sd, tn_err_t *err) {
  unit_t u = {kind, false, r, rv, cp, sd, NONE, NONE, 0, 0, 0, 0, 0};
  uint32_t id = (uint32_t)P->units.len;
  uint32_t parts[3] = {rv, cp, sd};
  for (int k = 0; k < 3; k++)
    if (parts[k] != NONE) {
      if (parts[k] < u.head || u.head == NONE) u.head = parts[k];
      P->unit[P->base[r] + parts[k]] = id;
    }
  return tn_vec_push(&P->units, &u, err);
}

/* A SEND dependent of node h (rank r) that fuses after it: its only dependency is h and
 * it carries the chunks of RECV rv; with peer p (NONE: any), not taken. */
static uint32_t fusable_send(const pk_t *P, uint32_t r, uint32_t h, uint32_t rv, uint32_t p) {
  uint32_t g = P->base[r] + h;
  if (emit_i_msccl_a2a_gathered(P->a, r, rv)) return NONE; /* staged through cpys instead */
  for (uint32_t e = P->succ_off[g]; e < P->succ_off[g + 1]; e++) {
    uint32_t s = P->succ[e] - P->base[r];
    const algo_node_t *n = nd(P, r, s);
    if (n->op != ALGO_SEND || n->ndeps != 1 || P->unit[P->succ[e]] != NONE ||
        emit_i_msccl_a2a_gathered(P->a, r, s))
      continue;
    if (p != NONE && (uint32_t)n->peer != p) continue;
    if (same_chunks(P, r, s, rv)) return s;
  }
  return NONE;
}

/* The one COMP that reduces reduce-RECV rv alone with the same chunks, or NONE. */
static uint32_t fusable_comp(const pk_t *P, uint32_t r, uint32_t rv) {
  uint32_t g = P->base[r] + rv, c = NONE, ncomp = 0;
  for (uint32_t e = P->succ_off[g]; e < P->succ_off[g + 1]; e++) {
    uint32_t d = P->succ[e] - P->base[r];
    if (nd(P, r, d)->op != ALGO_COMP) continue;
    ncomp++;
    if (reduce_deps(P, r, d) == 1 && same_chunks(P, r, d, rv)) c = d;
  }
  return ncomp == 1 ? c : NONE;
}

typedef struct qp {
  uint32_t q, p, n;
} qp_t;

static int cmp_qp(const void *x, const void *y) {
  const qp_t *s = x, *t = y;
  if (s->q != t->q) return s->q < t->q ? -1 : 1;
  return (s->p > t->p) - (s->p < t->p);
}

static int cmp_qp_count(const void *x, const void *y) {
  const qp_t *s = x, *t = y;
  if (s->n != t->n) return s->n > t->n ? -1 : 1;
  return cmp_qp(x, y);
}

/* Units of rank r: fused ones first (when fuse), then one per remaining node. smate[q]:
 * the send peer matched with receive peer q (NONE). */
static tn_status_t rank_units(pk_t *P, uint32_t r, bool fuse, uint32_t *smate, uint32_t *rmate,
                              tn_err_t *err) {
  const algo_t *a = P->a;
  uint32_t len = algo_rank_len(a, r);
  tn_status_t rc = TN_OK;
  qp_t *cand = NULL;
  for (uint32_t p = 0; p < a->npus; p++)
    smate[p] = rmate[p] = NONE;
  if (fuse) {
    size_t nc = 0;
    if ((rc = tn_calloc(len + 1, sizeof *cand, &cand, err)) != TN_OK) return rc;
    for (uint32_t i = 0; i < len; i++) {
      const algo_node_t *n = nd(P, r, i);
      if (n->op != ALGO_RECV) continue;
      uint32_t h = n->reduce ? fusable_comp(P, r, i) : i;
      uint32_t s = h == NONE ? NONE : fusable_send(P, r, h, i, NONE);
      if (s != NONE) cand[nc++] = (qp_t){(uint32_t)n->peer, (uint32_t)nd(P, r, s)->peer, 1};
    }
    qsort(cand, nc, sizeof *cand, cmp_qp);
    size_t m = 0;
    for (size_t k = 0; k < nc; k++) {
      if (m > 0 && cand[m - 1].q == cand[k].q && cand[m - 1].p == cand[k].p)
        cand[m - 1].n++;
      else
        cand[m++] = cand[k];
    }
    qsort(cand, m, sizeof *cand, cmp_qp_count);
    for (size_t k = 0; k < m; k++)
      if (smate[cand[k].q] == NONE && rmate[cand[k].p] == NONE) {
        smate[cand[k].q] = cand[k].p;
        rmate[cand[k].p] = cand[k].q;
      }
    free(cand);
    for (uint32_t i = 0; i < len && rc == TN_OK; i++) {
      const algo_node_t *n = nd(P, r, i);
      if (n->op != ALGO_RECV || P->unit[P->base[r] + i] != NONE) continue;
      uint32_t q = (uint32_t)n->peer;
      if (n->reduce) {
        uint32_t c = fusable_comp(P, r, i);
        if (c == NONE || P->unit[P->base[r] + c] != NONE) continue;
        uint32_t s = smate[q] == NONE ? NONE : fusable_send(P, r, c, i, smate[q]);
        rc = new_unit(P, s == NONE ? U_RRC : U_RRCS, r, i, c, s, err);
      } else {
        uint32_t s = smate[q] == NONE ? NONE : fusable_send(P, r, i, i, smate[q]);
        if (s != NONE) rc = new_unit(P, U_RCS, r, i, NONE, s, err);
      }
    }
  }
  for (uint32_t i = 0; i < len && rc == TN_OK; i++) {
    if (P->unit[P->base[r] + i] != NONE) continue;
    const algo_node_t *n = nd(P, r, i);
    if (n->op == ALGO_SEND)
      rc = new_unit(P, U_S, r, NONE, NONE, i, err);
    else if (n->op == ALGO_RECV)
      rc = new_unit(P, U_R, r, i, NONE, NONE, err);
    else
      rc = new_unit(P, U_RE, r, NONE, i, NONE, err);
  }
  return rc;
}

/* Shapes of rank r from its units (see the top). */
static tn_status_t rank_shapes(pk_t *P, uint32_t r, tn_err_t *err) {
  const algo_t *a = P->a;
  uint32_t *ss = P->sshape + (size_t)r * a->npus, *rs = P->rshape + (size_t)r * a->npus;
  bool *su = NULL, *ru = NULL;
  tn_status_t rc = tn_calloc(a->npus, sizeof *su, &su, err);
  if (rc == TN_OK) rc = tn_calloc(a->npus, sizeof *ru, &ru, err);
  for (uint32_t p = 0; p < a->npus; p++)
    ss[p] = rs[p] = NONE;
  for (uint32_t i = 0; i < algo_rank_len(a, r) && rc == TN_OK; i++) {
    uint32_t u = P->unit[P->base[r] + i];
    if (u == NONE) continue;
    const unit_t *U = &UN(P, u);
    const algo_node_t *n = nd(P, r, i);
    if (n->op == ALGO_SEND) su[n->peer] = true;
    if (n->op == ALGO_RECV) ru[n->peer] = true;
    if (U->send == NONE || U->recv == NONE || i != U->head) continue;
    uint32_t p = (uint32_t)nd(P, r, U->send)->peer, q = (uint32_t)nd(P, r, U->recv)->peer;
    if (ss[p] != NONE) continue; /* the matching makes (p, q) the only shape with p */
    ss[p] = rs[q] = (uint32_t)P->shapes.len;
    rc = tn_vec_push(&P->shapes, &(shape_t){(int32_t)p, (int32_t)q}, err);
  }
  for (uint32_t p = 0; p < a->npus && rc == TN_OK; p++)
    if (su[p] && ss[p] == NONE) {
      bool pair = ru[p] && rs[p] == NONE;
      ss[p] = (uint32_t)P->shapes.len;
      if (pair) rs[p] = ss[p];
      rc = tn_vec_push(&P->shapes, &(shape_t){(int32_t)p, pair ? (int32_t)p : -1}, err);
    }
  for (uint32_t q = 0; q < a->npus && rc == TN_OK; q++)
    if (ru[q] && rs[q] == NONE) {
      rs[q] = (uint32_t)P->shapes.len;
      rc = tn_vec_push(&P->shapes, &(shape_t){-1, (int32_t)q}, err);
    }
  P->shape_off[r + 1] = (uint32_t)P->shapes.len;
  free(su);
  free(ru);
  return rc;
}

/* ---- events and their order ------------------------------------------------ */

static uint64_t ukey(const unit_t *u) {
  return ((uint64_t)u->head << 32) | u->rank;
}

/* The witness's heaps hold units by their position in the order (estimated start, unit
 * key) (P->wpos, computed once per form): distinct units never tie. */
static bool pos_less(const void *ctx, uint32_t x, uint32_t y) {
  (void)ctx;
  return x < y;
}

/* Walks every dependency (node d of rank r → node i) between different units, as unit
 * ids: udep_it_t it = {P, u}; while (udep_next(&it, &v)) ... */
typedef struct udep_it {
  const pk_t *P;
  uint32_t u;
  int part;   /* 0 recv, 1 comp, 2 send */
  uint32_t j; /* next dependency of that part's node */
} udep_it_t;

static bool udep_next(udep_it_t *it, uint32_t *dv) {
  const pk_t *P = it->P;
  const unit_t *U = &UN(P, it->u);
  for (; it->part < 3; it->part++, it->j = 0) {
    uint32_t id = it->part == 0 ? U->recv : it->part == 1 ? U->comp : U->send;
    if (id == NONE) continue;
    const algo_node_t *n = nd(P, U->rank, id);
    const uint32_t *d = algo_node_deps(P->a, U->rank, n);
    while (it->j < n->ndeps) {
      uint32_t v = P->unit[P->base[U->rank] + d[it->j++]];
      if (v == it->u || v == NONE) continue;
      *dv = v;
      return true;
    }
  }
  return false;
}

/* Estimated start of every node in an eager run without contention, time in bytes: a SEND
 * starts when its dependencies are done and takes its bytes, a RECV is done (and
 * "starts") when its message arrived and its dependencies are done, a COMP takes 1. The
 * witness below fires ready steps earliest estimate first, so each tb lists its steps
 * roughly in the order the algorithm meant them to run. Nodes on a cycle keep 0 (the
 * witness reports the deadlock). */
static tn_status_t estimate(pk_t *P, tn_err_t *err) {
  const algo_t *a = P->a;
  uint32_t *indeg = NULL, *queue = NULL;
  uint64_t *done = NULL;
  tn_status_t rc = tn_calloc(P->nn + 1, sizeof *P->start, &P->start, err);
  if (rc == TN_OK) rc = tn_calloc(P->nn + 1, sizeof *indeg, &indeg, err);
  if (rc == TN_OK) rc = tn_calloc(P->nn + 1, sizeof *queue, &queue, err);
  if (rc == TN_OK) rc = tn_calloc(P->nn + 1, sizeof *done, &done, err);
  if (rc != TN_OK) goto fail;
  uint32_t head = 0, tail = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = nd(P, r, i);
      indeg[P->base[r] + i] = n->ndeps + (n->op == ALGO_RECV);
      if (indeg[P->base[r] + i] == 0) queue[tail++] = P->base[r] + i;
    }
  uint32_t r = 0;
  while (head < tail) {
    uint32_t g = queue[head++];
    while (g >= P->base[r + 1])
      r++;
    while (g < P->base[r])
      r--;
    const algo_node_t *n = nd(P, r, g - P->base[r]);
    done[g] = P->start[g] + (n->op == ALGO_SEND ? n->bytes : n->op == ALGO_COMP ? 1 : 0);
    if (n->op == ALGO_SEND) {
      const emit_i_msccl_xnode_t *xs = &P->x[r][g - P->base[r]];
      uint32_t v = P->base[xs->prank] + xs->pnode;
      if (done[g] > P->start[v]) P->start[v] = done[g];
      if (--indeg[v] == 0) queue[tail++] = v;
    }
    for (uint32_t e = P->succ_off[g]; e < P->succ_off[g + 1]; e++) {
      uint32_t v = P->succ[e];
      if (done[g] > P->start[v]) P->start[v] = done[g];
      if (--indeg[v] == 0) queue[tail++] = v;
    }
  }
fail:
  free(indeg);
  free(queue);
  free(done);
  return rc;
}

/* Unit-level dependency graph (edges v → u for every node dependency across units). */
static tn_status_t build_unit_graph(pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  free(P->usucc_off);
  free(P->usucc);
  P->usucc_off = P->usucc = NULL;
  tn_status_t rc = tn_calloc(nu + 2, sizeof *P->usucc_off, &P->usucc_off, err);
  if (rc != TN_OK) return rc;
  size_t ne = 0;
  for (uint32_t u = 0; u < nu; u++) {
    udep_it_t it = {.P = P, .u = u};
    for (uint32_t v; udep_next(&it, &v); ne++)
      P->usucc_off[v + 1]++;
  }
  for (uint32_t u = 0; u < nu; u++)
    P->usucc_off[u + 1] += P->usucc_off[u];
  if ((rc = tn_calloc(ne + 1, sizeof *P->usucc, &P->usucc, err)) != TN_OK) return rc;
  uint32_t *fill = NULL;
  if ((rc = tn_calloc(nu + 1, sizeof *fill, &fill, err)) != TN_OK) return rc;
  memcpy(fill, P->usucc_off, nu * sizeof *fill);
  for (uint32_t u = 0; u < nu; u++) {
    udep_it_t it = {.P = P, .u = u};
    for (uint32_t v; udep_next(&it, &v);)
      P->usucc[fill[v]++] = u;
  }
  free(fill);
  return TN_OK;
}

/* The unit that holds the SEND matching the receive of unit u. */
static uint32_t in_unit(const pk_t *P, const unit_t *U) {
  const emit_i_msccl_xnode_t *xr = &P->x[U->rank][U->recv];
  return P->unit[P->base[xr->prank] + xr->pnode];
}

/* A witness run of the packed program (channels already assigned) in the strictest
 * runtime model: a connection (sender, receiver, channel) buffers one message, so a send
 * waits until the previous message on its connection was received; a receive waits for its
 * message; a fused step does both at once; every step waits for its dependencies. Units
 * fire one at a time, the ready one with the lowest (node id, rank) first; the firing
 * position is L. Every tb will list its steps in L order, so this run is a run of the
 * written program; since all waits are monotone, no run of it can get stuck (the first
 * step of the witness not done in a stuck state would be enabled). One buffered message
 * per connection also makes receives meet their sends in order (FIFO pairing). A unit
 * left over means the program could deadlock: TN_INFEASIBLE naming it. */
/* The witness run's state: per unit its unmet dependencies, the connection its send
 * part uses, the units waiting on each connection (a heap per connection, in wv from
 * woff[c], wn[c] of them), the ready heap and the unit's state bits (bit 0 fired, bit 1
 * queued, bit 2 waiting on its connection). */
typedef struct witness {
  pk_t *P;
  uint32_t nconn, done;
  uint32_t *left, *sconn, *woff, *wn, *wv, *heapv, nheap;
  uint8_t *st;
  bool *busy;
} witness_t;

static void witness_free(witness_t *w) {
  free(w->left);
  free(w->sconn);
  free(w->woff);
  free(w->wn);
  free(w->wv);
  free(w->heapv);
  free(w->st);
  free(w->busy);
}

/* Numbers the connections (rank, peer, channel) of the units' send parts into sconn: a
 * send shape stands for one (rank, peer), and assign_channels left it in the unit's tb. */
static void number_connections(witness_t *w, uint32_t C) {
  pk_t *P = w->P;
  uint32_t nu = (uint32_t)P->units.len;
  w->nconn = (uint32_t)P->shapes.len * C;
  for (uint32_t u = 0; u < nu; u++) {
    const unit_t *U = &UN(P, u);
    w->sconn[u] = U->send == NONE ? NONE : U->tb * C + U->chan;
  }
}

static tn_status_t witness_init(witness_t *w, pk_t *P, uint32_t C, tn_err_t *err) {
  memset(w, 0, sizeof *w);
  w->P = P;
  uint32_t nu = (uint32_t)P->units.len;
  tn_status_t rc = tn_calloc(nu + 1, sizeof *w->left, &w->left, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *w->sconn, &w->sconn, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *w->wv, &w->wv, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *w->heapv, &w->heapv, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *w->st, &w->st, err);
  if (rc != TN_OK) return rc;
  number_connections(w, C);
  rc = tn_calloc(w->nconn + 1, sizeof *w->busy, &w->busy, err);
  if (rc == TN_OK) rc = tn_calloc(w->nconn + 2, sizeof *w->woff, &w->woff, err);
  if (rc == TN_OK) rc = tn_calloc(w->nconn + 1, sizeof *w->wn, &w->wn, err);
  if (rc != TN_OK) return rc;
  /* Room for every unit that sends on a connection in that connection's heap. */
  for (uint32_t u = 0; u < nu; u++)
    if (w->sconn[u] != NONE) w->woff[w->sconn[u] + 1]++;
  for (uint32_t c = 0; c < w->nconn; c++)
    w->woff[c + 1] += w->woff[c];
  for (uint32_t u = 0; u < nu; u++)
    for (uint32_t e = P->usucc_off[u]; e < P->usucc_off[u + 1]; e++)
      w->left[P->usucc[e]]++;
  return TN_OK;
}

/* Removes and returns the first unit waiting on connection c (one is waiting). */
static uint32_t hpop_wait(witness_t *w, uint32_t c) {
  return w->P->wunit[tn_heap_pop(w->wv + w->woff[c], &w->wn[c], pos_less, NULL)];
}

static void witness_queue(witness_t *w, uint32_t u) {
  w->st[u] |= 2;
  tn_heap_push(w->heapv, &w->nheap, w->P->wpos[u], pos_less, NULL);
}

/* Fires unit u (its dependencies and message are there, its connection is free): frees
 * its receive's connection, occupies its send's, and queues what became ready. */
static void witness_fire(witness_t *w, uint32_t u) {
  pk_t *P = w->P;
  const unit_t *U = &UN(P, u);
  w->st[u] |= 1;
  P->L[u] = w->done++;
  uint32_t woken = NONE;
  if (U->recv != NONE) { /* its connection is free again: wake the first waiting sender */
    uint32_t c = w->sconn[in_unit(P, U)];
    w->busy[c] = false;
    /* Only the first waiter by (estimate, key) can take the connection before the others:
     * the ready heap pops in that order, so waking them all (they would find it busy again
     * and wait anew) fires the same units in the same order, at a cost quadratic in the
     * messages queued on one connection. */
    if (w->wn[c] > 0) {
      uint32_t x = hpop_wait(w, c);
      w->st[x] &= (uint8_t)~4u;
      witness_queue(w, x);
    }
  }
  if (U->send != NONE) { /* its message is there: the receiver may go */
    w->busy[w->sconn[u]] = true;
    const emit_i_msccl_xnode_t *xs = &P->x[U->rank][U->send];
    woken = P->unit[P->base[xs->prank] + xs->pnode];
  }
  for (uint32_t e = P->usucc_off[u]; e < P->usucc_off[u + 1]; e++) {
    uint32_t v = P->usucc[e];
    if (--w->left[v] == 0 && (UN(P, v).recv == NONE || (w->st[in_unit(P, &UN(P, v))] & 1)) &&
        !(w->st[v] & 7))
      witness_queue(w, v);
  }
  if (woken != NONE && w->left[woken] == 0 && !(w->st[woken] & 7)) witness_queue(w, woken);
}

/* The witness's order of units: estimated start of the unit's lead node (its receive,
 * else its COMP, else its send), then (head, rank). P->wpos and its inverse P->wunit. */
typedef struct wkey {
  uint64_t start, key;
  uint32_t unit;
} wkey_t;

static int cmp_wkey(const void *x, const void *y) {
  const wkey_t *s = x, *t = y;
  if (s->start != t->start) return s->start < t->start ? -1 : 1;
  return (s->key > t->key) - (s->key < t->key);
}

static tn_status_t witness_order(pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  wkey_t *k = NULL;
  tn_status_t rc = tn_malloc(nu + 1, sizeof *k, &k, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *P->wpos, &P->wpos, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *P->wunit, &P->wunit, err);
  if (rc != TN_OK) {
    free(k);
    return rc;
  }
  for (uint32_t u = 0; u < nu; u++) {
    const unit_t *U = &UN(P, u);
    uint32_t lead = U->recv != NONE ? U->recv : U->comp != NONE ? U->comp : U->send;
    k[u] = (wkey_t){P->start[P->base[U->rank] + lead], ukey(U), u};
  }
  qsort(k, nu, sizeof *k, cmp_wkey);
  for (uint32_t i = 0; i < nu; i++) {
    P->wpos[k[i].unit] = i;
    P->wunit[i] = k[i].unit;
  }
  free(k);
  return TN_OK;
}

static tn_status_t simulate(pk_t *P, uint32_t C, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  witness_t w;
  tn_status_t rc = P->wpos ? TN_OK : witness_order(P, err); /* once per form */
  if (rc != TN_OK) return rc;
  rc = witness_init(&w, P, C, err);
  for (uint32_t u = 0; rc == TN_OK && u < nu; u++)
    if (w.left[u] == 0 && UN(P, u).recv == NONE) witness_queue(&w, u);
  while (rc == TN_OK && w.nheap > 0) {
    uint32_t u = P->wunit[tn_heap_pop(w.heapv, &w.nheap, pos_less, NULL)];
    w.st[u] &= (uint8_t)~2u;
    /* Queued units have their dependencies and message; the connection may be busy. */
    if (UN(P, u).send != NONE && w.busy[w.sconn[u]]) {
      uint32_t c = w.sconn[u];
      tn_heap_push(w.wv + w.woff[c], &w.wn[c], P->wpos[u], pos_less, NULL);
      w.st[u] |= 4;
      continue;
    }
    witness_fire(&w, u);
  }
  if (rc == TN_OK && w.done < nu) {
    uint32_t u = 0;
    while (u < nu && (w.st[u] & 1))
      u++;
    rc = tn_err_set(err, TN_INFEASIBLE,
                    "rank %u node %u: never runs once each connection buffers only one "
                    "message; the runtime could deadlock",
                    UN(P, u).rank, UN(P, u).head);
  }
  witness_free(&w);
  return rc;
}

/* Chains: messages joined by fused steps (union-find over SEND nodes' global ids). */
static void build_chains(pk_t *P) {
  const algo_t *a = P->a;
  for (uint32_t g = 0; g < P->nn; g++)
    P->chain[g] = g;
  for (size_t u = 0; u < P->units.len; u++) {
    const unit_t *U = &UN(P, u);
    if (U->send == NONE || U->recv == NONE) continue;
    const emit_i_msccl_xnode_t *xr = &P->x[U->rank][U->recv];
    uf_union(P->chain, P->base[U->rank] + U->send, P->base[xr->prank] + xr->pnode);
  }
  P->nchains = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      uint32_t g = P->base[r] + i;
      if (nd(P, r, i)->op != ALGO_SEND || P->unit[g] == NONE) continue;
      if (uf_find(P->chain, g) == g) P->chain_ord[g] = P->nchains++;
    }
}

/* The number of the chain of unit U's message (its send's, else its receive's: the
 * channel is that number mod C) and its shape; false for a COMP (no connection). */
static bool unit_conn(const pk_t *P, const unit_t *U, uint32_t *ord, uint32_t *shape) {
  uint32_t r = U->rank, npus = P->a->npus;
  if (U->send != NONE) {
    *ord = P->chain_ord[uf_find(P->chain, P->base[r] + U->send)];
    *shape = P->sshape[(size_t)r * npus + (uint32_t)nd(P, r, U->send)->peer];
    return true;
  }
  if (U->recv != NONE) {
    const emit_i_msccl_xnode_t *xr = &P->x[r][U->recv];
    *ord = P->chain_ord[uf_find(P->chain, P->base[xr->prank] + xr->pnode)];
    *shape = P->rshape[(size_t)r * npus + (uint32_t)nd(P, r, U->recv)->peer];
    return true;
  }
  return false;
}

/* ---- threadblocks for C channels ------------------------------------------- */

/* Channel and shape (tb index still per shape) of every unit with a connection. */
static void assign_channels(pk_t *P, uint32_t C) {
  for (uint32_t u = 0; u < (uint32_t)P->units.len; u++) {
    unit_t *U = &UN(P, u);
    uint32_t ord = 0, shape = 0;
    if (unit_conn(P, U, &ord, &shape)) {
      U->chan = ord % C;
      U->tb = shape;
    } else {
      U->tb = NONE;
    }
  }
}

/* COMP units go on the tb of the reduce RECV they wait for last (in L). */
static tn_status_t place_comps(pk_t *P, tn_err_t *err) {
  const algo_t *a = P->a;
  for (uint32_t u = 0; u < (uint32_t)P->units.len; u++) {
    unit_t *U = &UN(P, u);
    if (U->kind != U_RE) continue;
    const algo_node_t *n = nd(P, U->rank, U->comp);
    const uint32_t *d = algo_node_deps(a, U->rank, n);
    uint32_t best = NONE;
    for (uint32_t k = 0; k < n->ndeps; k++) {
      const algo_node_t *dn = nd(P, U->rank, d[k]);
      if (dn->op != ALGO_RECV || !dn->reduce) continue;
      uint32_t v = P->unit[P->base[U->rank] + d[k]];
      if (best == NONE || P->L[v] > P->L[best]) best = v;
    }
    if (best == NONE)
      return tn_err_set(err, TN_INFEASIBLE,
                        "rank %u node %u: a COMP that reduces no received data has no "
                        "MSCCL-IR form",
                        U->rank, U->comp);
    U->chan = UN(P, best).chan;
    U->tb = UN(P, best).tb; /* still a shape index here */
  }
  return TN_OK;
}

/* tb ids of rank r: (channel, shape) in that order, used ones only; tbid is scratch of C *
 * shapes entries. Units' tb becomes the id. */
static tn_status_t number_tbs(pk_t *P, uint32_t r, uint32_t C, uint32_t *tbid, tn_err_t *err) {
  const algo_t *a = P->a;
  uint32_t nsh = (uint32_t)P->shapes.len, s0 = P->shape_off[r], s1 = P->shape_off[r + 1];
  P->tb_off[r] = (uint32_t)P->tbs.len;
  for (uint32_t c = 0; c < C; c++)
    for (uint32_t s = s0; s < s1; s++)
      tbid[(size_t)c * nsh + s] = NONE;
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
    uint32_t u = P->unit[P->base[r] + i];
    if (u != NONE) tbid[(size_t)UN(P, u).chan * nsh + UN(P, u).tb] = 0;
  }
  tn_status_t rc = TN_OK;
  for (uint32_t c = 0; c < C && rc == TN_OK; c++)
    for (uint32_t s = s0; s < s1 && rc == TN_OK; s++) {
      uint32_t *t = &tbid[(size_t)c * nsh + s];
      if (*t == NONE) continue;
      *t = (uint32_t)P->tbs.len - P->tb_off[r];
      rc = tn_vec_push(&P->tbs, &(tbinfo_t){c, s, 0, 0, 0}, err);
    }
  if (rc != TN_OK) return rc;
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
    uint32_t u = P->unit[P->base[r] + i];
    if (u != NONE && UN(P, u).head == i)
      UN(P, u).tb = tbid[(size_t)UN(P, u).chan * nsh + UN(P, u).tb];
  }
  return TN_OK;
}

/* A unit with what orders the steps: (rank, tb, position in L). */
typedef struct okey {
  uint32_t rank, tb, L, unit;
} okey_t;

static int cmp_okey(const void *x, const void *y) {
  const okey_t *s = x, *t = y;
  if (s->rank != t->rank) return s->rank < t->rank ? -1 : 1;
  if (s->tb != t->tb) return s->tb < t->tb ? -1 : 1;
  return (s->L > t->L) - (s->L < t->L);
}

/* P->order: units by (rank, tb, L); each tb's first and count. */
static tn_status_t order_steps(pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  okey_t *k = NULL;
  tn_status_t rc = tn_malloc(nu + 1, sizeof *k, &k, err);
  if (rc != TN_OK) return rc;
  for (uint32_t u = 0; u < nu; u++)
    k[u] = (okey_t){UN(P, u).rank, UN(P, u).tb, P->L[u], u};
  qsort(k, nu, sizeof *k, cmp_okey);
  for (uint32_t i = 0; i < nu; i++)
    P->order[i] = k[i].unit;
  free(k);
  for (uint32_t i = 0; i < nu; i++) {
    const unit_t *U = &UN(P, P->order[i]);
    tbinfo_t *T = &TBI(P, P->tb_off[U->rank] + U->tb);
    if (T->n == 0)
      T->first = i;
    else if (P->L[P->order[i - 1]] >= P->L[P->order[i]])
      return tn_err_set(err, TN_INTERNAL, "rank %u node %u: two steps at one position (packer bug)",
                        U->rank, U->head);
    T->n++;
  }
  return TN_OK;
}

/* Steps of a unit without its nops, but a COMP's: one, or a gathered All-to-All message's
 * s or r with its cpys (emit/msccl/stage.c). */
static uint32_t unit_ops(const pk_t *P, const unit_t *U) {
  uint32_t lead = U->recv != NONE ? U->recv : U->send;
  if (lead == NONE || !emit_i_msccl_a2a_gathered(P->a, U->rank, lead)) return 1;
  return emit_i_msccl_a2a_gather_ops(P->a, U->rank, lead);
}

/* Unit u's waits: the latest unit of each other tb it depends on (by position upos in
 * that tb), sorted by tb; every dependency must come earlier in L (the premise of the
 * deadlock-freedom argument). */
static tn_status_t unit_waits(pk_t *P, uint32_t u, const uint32_t *upos, tn_err_t *err) {
  size_t start = P->udeps.len;
  udep_it_t it = {.P = P, .u = u};
  tn_status_t rc = TN_OK;
  for (uint32_t v; rc == TN_OK && udep_next(&it, &v);) {
    const unit_t *U = &UN(P, u);
    if (P->L[v] >= P->L[u])
      return tn_err_set(err, TN_INTERNAL,
                        "rank %u node %u: waits for a step later in the order (packer bug)",
                        U->rank, U->head);
    if (UN(P, v).tb == U->tb) continue; /* earlier in its own tb */
    bool seen = false;
    for (size_t j = start; j < P->udeps.len; j++) {
      uint32_t *w = &TN_VEC_AT(&P->udeps, uint32_t, j);
      if (UN(P, *w).tb != UN(P, v).tb) continue;
      seen = true;
      if (upos[v] > upos[*w]) *w = v;
    }
    if (!seen) rc = tn_vec_push(&P->udeps, &v, err);
  }
  if (rc != TN_OK) return rc;
  unit_t *U = &UN(P, u);
  U->dep_off = (uint32_t)start;
  U->ndeps = (uint32_t)(P->udeps.len - start);
  uint32_t *w = &TN_VEC_AT(&P->udeps, uint32_t, start); /* deterministic: sorted by tb */
  for (uint32_t i = 1; i < U->ndeps; i++)
    for (uint32_t j = i; j > 0 && UN(P, w[j - 1]).tb > UN(P, w[j]).tb; j--) {
      uint32_t t = w[j];
      w[j] = w[j - 1];
      w[j - 1] = t;
    }
  uint32_t ops = U->kind == U_RE ? reduce_deps(P, U->rank, U->comp) : unit_ops(P, U);
  U->nsteps = (U->ndeps ? U->ndeps - 1 : 0) + ops;
  return TN_OK;
}

/* Every unit's waits, the hasdep marks, and the step numbers of every tb. */
static tn_status_t waits_and_steps(pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len, *upos = NULL;
  tn_status_t rc = tn_calloc(nu + 1, sizeof *upos, &upos, err);
  if (rc != TN_OK) return rc;
  for (size_t t = 0; t < P->tbs.len; t++)
    for (uint32_t k = 0; k < TBI(P, t).n; k++)
      upos[P->order[TBI(P, t).first + k]] = k;
  for (uint32_t k = 0; k < nu && rc == TN_OK; k++)
    rc = unit_waits(P, P->order[k], upos, err);
  free(upos);
  if (rc != TN_OK) return rc;
  for (uint32_t u = 0; u < nu; u++)
    UN(P, u).hasdep = false;
  for (size_t j = 0; j < P->udeps.len; j++)
    UN(P, TN_VEC_AT(&P->udeps, uint32_t, j)).hasdep = true;
  for (size_t t = 0; t < P->tbs.len; t++) {
    tbinfo_t *T = &TBI(P, t);
    uint32_t s = 0;
    for (uint32_t k = 0; k < T->n; k++) {
      unit_t *U = &UN(P, P->order[T->first + k]);
      U->step = s;
      s += U->nsteps;
    }
    T->nsteps = s;
  }
  return TN_OK;
}

/* Assigns channels and tbs for C channels, orders each tb, computes the waits and step
 * numbers, and checks the premises of the deadlock-freedom argument. */
static tn_status_t layout(pk_t *P, uint32_t C, tn_err_t *err) {
  uint32_t *tbid = NULL;
  tn_status_t rc = tn_calloc((size_t)C * P->shapes.len + 1, sizeof *tbid, &tbid, err);
  if (rc != TN_OK) return rc;
  P->tbs.len = 0;
  P->udeps.len = 0;
  assign_channels(P, C);
  if ((rc = simulate(P, C, err)) == TN_OK) rc = place_comps(P, err);
  for (uint32_t r = 0; rc == TN_OK && r < P->a->npus; r++)
    rc = number_tbs(P, r, C, tbid, err);
  P->tb_off[P->a->npus] = (uint32_t)P->tbs.len;
  free(tbid);
  if (rc == TN_OK) rc = order_steps(P, err);
  if (rc == TN_OK) rc = waits_and_steps(P, err);
  return rc;
}

/* The first limit the layout breaks, as a message in msg (empty: fits). */
static void check_limits(const pk_t *P, const emit_msccl_limits_t *lim, uint32_t C, char *msg,
                         size_t cap) {
  const algo_t *a = P->a;
  msg[0] = 0;
  uint32_t own = a->coll == TN_ALLTOALL; /* All-to-All: the tb of the piece a GPU keeps */
  for (uint32_t r = 0; r < a->npus; r++) {
    uint32_t t0 = P->tb_off[r], t1 = P->tb_off[r + 1];
    if (t1 - t0 + own > lim->tbs) {
      snprintf(msg, cap, "gpu %u needs %u threadblocks (limit %u)", r, t1 - t0 + own, lim->tbs);
      return;
    }
    for (uint32_t c = 0; c < C; c++) {
      uint32_t ns = 0, nr = 0;
      for (uint32_t t = t0; t < t1; t++) {
        const tbinfo_t *T = &TBI(P, t);
        if (T->chan != c) continue;
        ns += SH(P, T->shape).send >= 0;
        nr += SH(P, T->shape).recv >= 0;
      }
      if (ns > lim->tbs_per_channel || nr > lim->tbs_per_channel) {
        snprintf(msg, cap,
                 "gpu %u channel %u has %u sending and %u receiving threadblocks "
                 "(limit %u each)",
                 r, c, ns, nr, lim->tbs_per_channel);
        return;
      }
    }
    for (uint32_t t = t0; t < t1; t++)
      if (TBI(P, t).nsteps > lim->steps) {
        snprintf(msg, cap, "gpu %u tb %u has %u steps (limit %u per threadblock)", r, t - t0,
                 TBI(P, t).nsteps, lim->steps);
        return;
      }
  }
}

/* ---- the limits without the witness run --------------------------------------- */

/* What checking a channel count C without its layout needs, computed once per form: per
 * unit its chain number and shape (NONE for a COMP), its operations (steps without nops)
 * and the other units it depends on (distinct, CSR doff/dv); per COMP unit the units of
 * the reduce RECVs it adds up (CSR roff/rv over q->re); per rank its units (uoff: build
 * makes them rank by rank). Per C, per unit its tb as a key (channel * shapes + shape,
 * NONE for a COMP whose tb depends on the order) and per key a stamp, a step count and a
 * tb number. Keys are sized for the largest C tried. */
typedef struct prechk {
  uint32_t *ord, *shape, *ops, *doff, *dv, *uoff;
  uint32_t *re, nre, *roff, *rv;
  uint32_t *ukey, *stamp, *steps, *tbnum;
  uint32_t nkeys;
} prechk_t;

static void prechk_free(prechk_t *q) {
  uint32_t **v[] = {&q->ord,  &q->shape, &q->ops,  &q->doff,  &q->dv,    &q->uoff, &q->re,
                    &q->roff, &q->rv,    &q->ukey, &q->stamp, &q->steps, &q->tbnum};
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
    free(*v[k]);
}

/* The distinct units each unit depends on, CSR. */
static tn_status_t prechk_deps(prechk_t *q, const pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  tn_status_t rc = tn_calloc(nu + 2, sizeof *q->doff, &q->doff, err);
  if (rc == TN_OK) rc = tn_calloc((size_t)P->usucc_off[nu] + 1, sizeof *q->dv, &q->dv, err);
  uint32_t *seen = NULL;
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *seen, &seen, err);
  for (uint32_t u = 0; rc == TN_OK && u < nu; u++) {
    q->doff[u + 1] = q->doff[u];
    udep_it_t it = {.P = P, .u = u};
    for (uint32_t v; udep_next(&it, &v);)
      if (seen[v] != u + 1) {
        seen[v] = u + 1;
        q->dv[q->doff[u + 1]++] = v;
      }
  }
  free(seen);
  return rc;
}

/* The COMP units and the units of the reduce RECVs each adds up, CSR. */
static tn_status_t prechk_comps(prechk_t *q, const pk_t *P, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len;
  size_t nrv = 0;
  for (uint32_t u = 0; u < nu; u++)
    if (UN(P, u).kind == U_RE) {
      q->nre++;
      nrv += nd(P, UN(P, u).rank, UN(P, u).comp)->ndeps;
    }
  tn_status_t rc = tn_calloc(q->nre + 1, sizeof *q->re, &q->re, err);
  if (rc == TN_OK) rc = tn_calloc(q->nre + 2, sizeof *q->roff, &q->roff, err);
  if (rc == TN_OK) rc = tn_calloc(nrv + 1, sizeof *q->rv, &q->rv, err);
  for (uint32_t u = 0, k = 0; rc == TN_OK && u < nu; u++) {
    const unit_t *U = &UN(P, u);
    if (U->kind != U_RE) continue;
    const algo_node_t *n = nd(P, U->rank, U->comp);
    const uint32_t *d = algo_node_deps(P->a, U->rank, n);
    q->re[k] = u;
    q->roff[k + 1] = q->roff[k];
    for (uint32_t j = 0; j < n->ndeps; j++) {
      const algo_node_t *dn = nd(P, U->rank, d[j]);
      if (dn->op == ALGO_RECV && dn->reduce)
        q->rv[q->roff[k + 1]++] = P->unit[P->base[U->rank] + d[j]];
    }
    q->ops[u] = q->roff[k + 1] - q->roff[k];
    k++;
  }
  return rc;
}

static tn_status_t prechk_init(prechk_t *q, const pk_t *P, uint32_t maxc, tn_err_t *err) {
  memset(q, 0, sizeof *q);
  uint32_t nu = (uint32_t)P->units.len, npus = P->a->npus;
  q->nkeys = maxc * (uint32_t)P->shapes.len;
  tn_status_t rc = tn_calloc(nu + 1, sizeof *q->ukey, &q->ukey, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *q->ord, &q->ord, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *q->shape, &q->shape, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *q->ops, &q->ops, err);
  if (rc == TN_OK) rc = tn_calloc(npus + 2, sizeof *q->uoff, &q->uoff, err);
  if (rc == TN_OK) rc = tn_calloc(q->nkeys + 1, sizeof *q->stamp, &q->stamp, err);
  if (rc == TN_OK) rc = tn_calloc(q->nkeys + 1, sizeof *q->steps, &q->steps, err);
  if (rc == TN_OK) rc = tn_calloc(q->nkeys + 1, sizeof *q->tbnum, &q->tbnum, err);
  if (rc == TN_OK) rc = prechk_deps(q, P, err);
  for (uint32_t u = 0; rc == TN_OK && u < nu; u++) {
    const unit_t *U = &UN(P, u);
    assert(u == 0 || UN(P, u - 1).rank <= U->rank);
    q->uoff[U->rank + 1] = u + 1;
    q->ops[u] = unit_ops(P, U);
    if (!unit_conn(P, U, &q->ord[u], &q->shape[u])) q->ord[u] = q->shape[u] = NONE;
  }
  for (uint32_t r = 0; rc == TN_OK && r < npus; r++)
    if (q->uoff[r + 1] < q->uoff[r]) q->uoff[r + 1] = q->uoff[r]; /* a rank without units */
  if (rc == TN_OK) rc = prechk_comps(q, P, err);
  return rc;
}

/* A necessary condition for C channels, as a message in msg (empty: layout may fit), in
 * the order check_limits reports. Channels and shapes do not depend on the witness run, so
 * each rank's threadblocks (and per channel its sending and receiving ones) are exactly
 * layout's; a tb's steps are its units' operations plus a nop for every other tb a unit
 * waits on beyond the first, exact too when no COMP's tb waits on the order (place_comps
 * puts a COMP on the tb of the reduce RECV it waits for last: known when all share one),
 * and a lower bound otherwise (said "at least"). The witness run it spares is most of an
 * export's time when many counts do not fit; this is O(N + deps + C * shapes). */
static void precheck(const pk_t *P, prechk_t *q, const emit_msccl_limits_t *lim, uint32_t C,
                     char *msg, size_t cap) {
  uint32_t nsh = (uint32_t)P->shapes.len, k = 0;
  msg[0] = 0;
  /* Rank by rank (a unit's dependencies are in its rank), so that a count refused on the
   * first ranks costs little. */
  for (uint32_t r = 0; r < P->a->npus && !msg[0]; r++) {
    uint32_t u0 = q->uoff[r], u1 = q->uoff[r + 1];
    uint32_t s0 = P->shape_off[r], s1 = P->shape_off[r + 1], ntb = 0;
    for (uint32_t u = u0; u < u1; u++)
      q->ukey[u] = q->ord[u] == NONE ? NONE : q->ord[u] % C * nsh + q->shape[u];
    for (; k < q->nre && q->re[k] < u1; k++) {
      uint32_t key = NONE;
      for (uint32_t e = q->roff[k]; e < q->roff[k + 1]; e++) {
        if (key != NONE && q->ukey[q->rv[e]] != key) {
          key = NONE;
          break;
        }
        key = q->ukey[q->rv[e]];
      }
      q->ukey[q->re[k]] = key;
    }
    for (uint32_t c = 0; c < C; c++)
      for (uint32_t s = s0; s < s1; s++) {
        q->tbnum[c * nsh + s] = NONE;
        q->stamp[c * nsh + s] = q->steps[c * nsh + s] = 0;
      }
    for (uint32_t u = u0; u < u1; u++)
      if (q->ukey[u] != NONE) q->tbnum[q->ukey[u]] = 0;
    for (uint32_t c = 0; c < C; c++)
      for (uint32_t s = s0; s < s1; s++)
        if (q->tbnum[c * nsh + s] != NONE) q->tbnum[c * nsh + s] = ntb++;
    ntb += P->a->coll == TN_ALLTOALL; /* the tb of the piece a GPU keeps (check_limits) */
    if (ntb > lim->tbs) {
      snprintf(msg, cap, "gpu %u needs %u threadblocks (limit %u)", r, ntb, lim->tbs);
      break;
    }
    for (uint32_t c = 0; c < C && !msg[0]; c++) {
      uint32_t ns = 0, nr = 0;
      for (uint32_t s = s0; s < s1; s++) {
        if (q->tbnum[c * nsh + s] == NONE) continue;
        ns += SH(P, s).send >= 0;
        nr += SH(P, s).recv >= 0;
      }
      if (ns > lim->tbs_per_channel || nr > lim->tbs_per_channel)
        snprintf(msg, cap,
                 "gpu %u channel %u has %u sending and %u receiving threadblocks "
                 "(limit %u each)",
                 r, c, ns, nr, lim->tbs_per_channel);
    }
    bool inexact = false; /* some tb's steps are only a lower bound */
    for (uint32_t u = u0; u < u1 && !msg[0]; u++) {
      uint32_t ku = q->ukey[u], others = 0;
      if (ku == NONE) {
        inexact = true;
        continue;
      }
      for (uint32_t e = q->doff[u]; e < q->doff[u + 1]; e++) {
        uint32_t kv = q->ukey[q->dv[e]];
        if (kv == NONE) inexact = true;
        if (kv == NONE || kv == ku || q->stamp[kv] == u + 1) continue;
        q->stamp[kv] = u + 1;
        others++;
      }
      q->steps[ku] += (others ? others - 1 : 0) + q->ops[u];
    }
    for (uint32_t c = 0; c < C && !msg[0]; c++)
      for (uint32_t s = s0; s < s1 && !msg[0]; s++) {
        uint32_t key = c * nsh + s;
        if (q->tbnum[key] != NONE && q->steps[key] > lim->steps)
          snprintf(msg, cap, "gpu %u tb %u has %s%u steps (limit %u per threadblock)", r,
                   q->tbnum[key], inexact ? "at least " : "", q->steps[key], lim->steps);
      }
  }
}

/* ---- writing ----------------------------------------------------------------- */

static void wstep(tn_sb_t *b, uint32_t s, const char *type, const char *sb, int64_t so,
                  const char *db, int64_t doff, int64_t cnt, int64_t depid, int64_t deps,
                  bool hasdep) {
  tn_sb_printf(b,
               "      <step s=\"%u\" type=\"%s\" srcbuf=\"%s\" srcoff=\"%lld\" "
               "dstbuf=\"%s\" dstoff=\"%lld\" cnt=\"%lld\" depid=\"%lld\" "
               "deps=\"%lld\" hasdep=\"%d\"/>\n",
               s, type, sb, (long long)so, db, (long long)doff, (long long)cnt, (long long)depid,
               (long long)deps, hasdep ? 1 : 0);
}

/* The last step index of unit v in its tb. */
static int64_t last_step(const pk_t *P, uint32_t v) {
  return (int64_t)UN(P, v).step + UN(P, v).nsteps - 1;
}

/* Where node i of rank r finds or puts All-to-All chunk c: its own and its received pieces
 * in place (i, o), a relayed one in the scratch of the RECV that brought it. */
static tn_status_t a2a_where(const pk_t *P, uint32_t r, uint32_t i, uint32_t c,
                             const uint32_t *scratch, const char **buf, int64_t *off,
                             tn_err_t *err) {
  if (emit_i_msccl_a2a_place(P->a, r, c, buf, off)) return TN_OK;
  uint32_t recv = 0, idx = 0;
  tn_status_t rc = emit_i_msccl_a2a_relay_recv(P->a, r, i, c, &recv, &idx, err);
  if (rc == TN_OK) *buf = "s", *off = (int64_t)scratch[P->base[r] + recv] + idx;
  return rc;
}

/* An All-to-All unit (no reductions: s, r or rcs). s reads the piece where this GPU holds
 * it; r and rcs store it where this GPU keeps it (o when addressed here, else scratch), and
 * rcs sends it on from there. A send's dst names the place at the receiver. */
static tn_status_t a2a_unit(const pk_t *P, tn_sb_t *b, uint32_t u, uint32_t s, uint32_t first,
                            int64_t cnt, int64_t depid, int64_t deps, const uint32_t *scratch,
                            tn_err_t *err) {
  const unit_t *U = &UN(P, u);
  uint32_t r = U->rank;
  const char *sb = NULL, *db = NULL;
  int64_t so = 0, doff = 0;
  tn_status_t rc = TN_OK;
  switch (U->kind) {
  case U_S: {
    const emit_i_msccl_xnode_t *xs = &P->x[r][U->send];
    if ((rc = a2a_where(P, r, U->send, first, scratch, &sb, &so, err)) == TN_OK)
      rc = a2a_where(P, xs->prank, xs->pnode, first, scratch, &db, &doff, err);
    if (rc == TN_OK) wstep(b, s, "s", sb, so, db, doff, cnt, depid, deps, U->hasdep);
    break;
  }
  case U_R:
  case U_RCS:
    if ((rc = a2a_where(P, r, U->recv, first, scratch, &db, &doff, err)) == TN_OK)
      wstep(b, s, U->kind == U_R ? "r" : "rcs", db, doff, db, doff, cnt, depid, deps, U->hasdep);
    break;
  default:
    return tn_err_set(err, TN_INTERNAL, "rank %u node %u: an All-to-All reduces (packer bug)", r,
                      U->head);
  }
  return rc == TN_OK ? b->st : rc;
}

static tn_status_t write_unit(const pk_t *P, tn_sb_t *b, uint32_t u, const uint32_t *scratch,
                              tn_err_t *err) {
  const algo_t *a = P->a;
  const unit_t *U = &UN(P, u);
  uint32_t r = U->rank, s = U->step, first = 0;
  const char *slot = emit_i_msccl_slot_buf(a);
  const uint32_t *w = &TN_VEC_AT(&P->udeps, uint32_t, U->dep_off);
  for (uint32_t k = 0; k + 1 < U->ndeps; k++)
    wstep(b, s++, "nop", "i", -1, "o", -1, 0, UN(P, w[k]).tb, last_step(P, w[k]), false);
  int64_t depid = U->ndeps ? (int64_t)UN(P, w[U->ndeps - 1]).tb : -1;
  int64_t deps = U->ndeps ? last_step(P, w[U->ndeps - 1]) : -1;
  uint32_t lead = U->recv != NONE ? U->recv : U->send != NONE ? U->send : U->comp;
  if (emit_i_msccl_a2a_gathered(a, r, lead)) /* U_S or U_R: gathered ones never fuse */
    return emit_i_msccl_a2a_gather_write(b, a, (const emit_i_msccl_xnode_t *const *)P->x, r, lead,
                                         s, depid, deps, U->hasdep, -1, err);
  tn_status_t rc = emit_i_msccl_contiguous(a, r, lead, &first, err);
  if (rc != TN_OK) return rc;
  int64_t cnt = nd(P, r, lead)->nchunks;
  if (a->coll == TN_ALLTOALL) return a2a_unit(P, b, u, s, first, cnt, depid, deps, scratch, err);
  switch (U->kind) {
  case U_S: {
    const emit_i_msccl_xnode_t *xs = &P->x[r][U->send];
    const algo_node_t *rn = nd(P, xs->prank, xs->pnode);
    uint32_t ru = P->unit[P->base[xs->prank] + xs->pnode];
    bool scr = rn->reduce && UN(P, ru).kind == U_R;
    wstep(b, s, "s", slot, first, scr ? "s" : slot,
          scr ? scratch[P->base[xs->prank] + xs->pnode] : first, cnt, depid, deps, U->hasdep);
    break;
  }
  case U_R: {
    bool scr = nd(P, r, U->recv)->reduce;
    wstep(b, s, "r", slot, first, scr ? "s" : slot, scr ? scratch[P->base[r] + U->recv] : first,
          cnt, depid, deps, U->hasdep);
    break;
  }
  case U_RCS: wstep(b, s, "rcs", slot, first, slot, first, cnt, depid, deps, U->hasdep); break;
  case U_RRC: wstep(b, s, "rrc", slot, first, slot, first, cnt, depid, deps, U->hasdep); break;
  case U_RRCS: wstep(b, s, "rrcs", slot, first, slot, first, cnt, depid, deps, U->hasdep); break;
  default: { /* U_RE: one re per reduce RECV; the wait rides on the first */
    const algo_node_t *n = nd(P, r, U->comp);
    const uint32_t *d = algo_node_deps(a, r, n);
    uint32_t left = reduce_deps(P, r, U->comp);
    bool firstre = true;
    for (uint32_t k = 0; k < n->ndeps; k++) {
      const algo_node_t *dn = nd(P, r, d[k]);
      if (dn->op != ALGO_RECV || !dn->reduce) continue;
      if (dn->nchunks != n->nchunks || algo_node_chunks(a, r, dn)[0] != first)
        return tn_err_set(err, TN_INFEASIBLE,
                          "rank %u node %u: reduces RECV %u whose chunks differ from its own", r,
                          U->comp, d[k]);
      uint32_t du = P->unit[P->base[r] + d[k]];
      if (UN(P, du).kind != U_R)
        return tn_err_set(err, TN_INTERNAL, "rank %u node %u: fused reduce RECV %u (packer bug)", r,
                          U->comp, d[k]);
      left--;
      wstep(b, s++, "re", "s", scratch[P->base[r] + d[k]], slot, first, cnt, firstre ? depid : -1,
            firstre ? deps : -1, U->hasdep && left == 0);
      firstre = false;
    }
    break;
  }
  }
  return b->st;
}

static tn_status_t write_xml(const pk_t *P, uint32_t C, char **xml, size_t *len,
                             emit_msccl_export_stats_t *stats, tn_err_t *err) {
  const algo_t *a = P->a;
  tn_sb_t b;
  tn_sb_init(&b, err);
  uint32_t *scratch = NULL, *sc = NULL; /* per node: its scratch offset; per rank: in all */
  tn_status_t rc = tn_calloc(P->nn + 1, sizeof *scratch, &scratch, err);
  if (rc == TN_OK) rc = tn_calloc(a->npus, sizeof *sc, &sc, err);
  if (rc != TN_OK) {
    free(scratch);
    return rc;
  }
  /* Scratch, every rank's before any is written (an All-to-All send names the place at its
   * receiver): an unfused reduce RECV's input; an All-to-All piece the GPU relays. */
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      uint32_t u = P->unit[P->base[r] + i];
      const algo_node_t *n = nd(P, r, i);
      const char *bn;
      int64_t off;
      if (u != NONE && emit_i_msccl_a2a_gathered(a, r, i)) { /* staged: a range of its own */
        scratch[P->base[r] + i] = P->x[r][i].scratch = sc[r];
        sc[r] += emit_i_msccl_a2a_gather_scratch(a, r, i);
        continue;
      }
      bool relay = a->coll == TN_ALLTOALL && u != NONE && n->op == ALGO_RECV && n->nchunks &&
                   !emit_i_msccl_a2a_place(a, r, algo_node_chunks(a, r, n)[0], &bn, &off);
      if (relay || (u != NONE && UN(P, u).kind == U_R && n->reduce)) {
        scratch[P->base[r] + i] = P->x[r][i].scratch = sc[r]; /* x: for the gathered ones */
        sc[r] += n->nchunks;
      }
    }
  emit_msccl_export_stats_t st = {C, UINT32_MAX, 0, 0, 0, 0, 0};
  emit_i_msccl_header(&b, a, " (runtime-fit)", C);
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++) {
    emit_i_msccl_gpu_open(&b, a, r, sc[r]);
    uint32_t t0 = P->tb_off[r], t1 = P->tb_off[r + 1], own = a->coll == TN_ALLTOALL;
    if (t1 + own > t0) {
      if (t1 - t0 + own < st.tbs_min) st.tbs_min = t1 - t0 + own;
      if (t1 - t0 + own > st.tbs_max) st.tbs_max = t1 - t0 + own;
    }
    for (uint32_t t = t0; t < t1 && rc == TN_OK; t++) {
      const tbinfo_t *T = &TBI(P, t);
      const shape_t *S = &SH(P, T->shape);
      tn_sb_printf(&b, "    <tb id=\"%u\" send=\"%d\" recv=\"%d\" chan=\"%u\">\n", t - t0, S->send,
                   S->recv, T->chan);
      for (uint32_t k = 0; k < T->n && rc == TN_OK; k++) {
        uint32_t u = P->order[T->first + k];
        rc = write_unit(P, &b, u, scratch, err);
        const unit_t *U = &UN(P, u);
        st.nops += U->ndeps ? U->ndeps - 1 : 0;
        st.fused += U->kind == U_RCS || U->kind == U_RRC || U->kind == U_RRCS;
      }
      tn_sb_printf(&b, "    </tb>\n");
      st.steps += T->nsteps;
      if (T->nsteps > st.steps_max) st.steps_max = T->nsteps;
    }
    if (a->coll == TN_ALLTOALL) emit_i_msccl_a2a_self_copy(&b, a, r, t1 - t0);
    tn_sb_printf(&b, "  </gpu>\n");
  }
  tn_sb_printf(&b, "</algo>\n");
  if (rc == TN_OK) rc = b.st;
  if (rc == TN_OK) {
    if (st.tbs_min == UINT32_MAX) st.tbs_min = 0;
    *xml = b.v.data;
    *len = b.v.len;
    b.v.data = NULL;
    if (stats) *stats = st;
  }
  tn_vec_free(&b.v);
  free(scratch);
  free(sc);
  return rc;
}

/* ---- driver -------------------------------------------------------------------- */

static void pk_free(pk_t *P) {
  if (P->x)
    for (uint32_t r = 0; r < P->a->npus; r++)
      free(P->x[r]);
  free(P->x);
  free(P->base);
  free(P->unit);
  free(P->succ_off);
  free(P->succ);
  tn_vec_free(&P->units);
  free(P->L);
  free(P->wpos);
  free(P->wunit);
  free(P->chain);
  free(P->chain_ord);
  tn_vec_free(&P->shapes);
  free(P->shape_off);
  free(P->sshape);
  free(P->rshape);
  tn_vec_free(&P->tbs);
  free(P->tb_off);
  free(P->order);
  tn_vec_free(&P->udeps);
  free(P->usucc_off);
  free(P->usucc);
  free(P->start);
}

/* Units, shapes, the unit graph and chains, with or without fusion. */
static tn_status_t build(pk_t *P, bool fuse, tn_err_t *err) {
  const algo_t *a = P->a;
  uint32_t *smate = NULL, *rmate = NULL;
  P->units.len = 0;
  P->shapes.len = 0;
  for (uint32_t g = 0; g < P->nn; g++)
    P->unit[g] = NONE;
  tn_status_t rc = tn_calloc(a->npus, sizeof *smate, &smate, err);
  if (rc == TN_OK) rc = tn_calloc(a->npus, sizeof *rmate, &rmate, err);
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++)
    if (!emit_i_msccl_idle_rank(a, r)) rc = rank_units(P, r, fuse, smate, rmate, err);
  P->shape_off[0] = 0;
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++)
    rc = rank_shapes(P, r, err);
  free(smate);
  free(rmate);
  if (rc != TN_OK) return rc;
  free(P->L);
  free(P->order);
  free(P->wpos);
  free(P->wunit);
  P->L = P->order = P->wpos = P->wunit = NULL;
  if ((rc = tn_calloc(P->units.len + 1, sizeof *P->L, &P->L, err)) != TN_OK) return rc;
  if ((rc = tn_calloc(P->units.len + 1, sizeof *P->order, &P->order, err)) != TN_OK) return rc;
  if ((rc = build_unit_graph(P, err)) != TN_OK) return rc;
  build_chains(P);
  return TN_OK;
}

/* The export's limits: MSCCL's, each lowered where opts asks. */
static emit_msccl_limits_t pack_limits(const emit_msccl_export_opts_t *opts) {
  emit_msccl_limits_t lim = {EMIT_MSCCL_MAX_CHANNELS, EMIT_MSCCL_MAX_TBS,
                             EMIT_MSCCL_MAX_TBS_PER_CHANNEL, EMIT_MSCCL_MAX_STEPS,
                             EMIT_MSCCL_MAX_CNT};
  const emit_msccl_limits_t *l = &opts->limits;
  if (l->channels) lim.channels = l->channels;
  if (l->tbs) lim.tbs = l->tbs;
  if (l->tbs_per_channel) lim.tbs_per_channel = l->tbs_per_channel;
  if (l->steps) lim.steps = l->steps;
  if (l->cnt) lim.cnt = l->cnt;
  return lim;
}

/* Every node must move one contiguous range (or be a gathered All-to-All message, staged)
 * of at most lim->cnt chunks, and a COMP must reduce something. */
static tn_status_t check_nodes(const algo_t *a, const emit_msccl_limits_t *lim, tn_err_t *err) {
  for (uint32_t r = 0; r < a->npus; r++) {
    if (emit_i_msccl_idle_rank(a, r)) continue;
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      uint32_t first = 0;
      const algo_node_t *n = algo_node(a, r, i);
      if (n->op == ALGO_COMP && n->nchunks == 0)
        return tn_err_set(err, TN_INFEASIBLE,
                          "rank %u node %u: a COMP that reduces nothing (pure time, e.g. an "
                          "imported cpy) has no MSCCL-IR form",
                          r, i);
      /* A gathered All-to-All message moves through a scratch range of its own. */
      tn_status_t rc = emit_i_msccl_a2a_gathered(a, r, i)
                           ? TN_OK
                           : emit_i_msccl_contiguous(a, r, i, &first, err);
      if (rc != TN_OK) return rc;
      if (n->nchunks > lim->cnt)
        return tn_err_set(err, TN_LIMIT,
                          "rank %u node %u: moves %u chunks in one step; MSCCL allows %u "
                          "(cnt < MSCCL_MAX_COUNT)",
                          r, i, n->nchunks, lim->cnt);
    }
  }
  return TN_OK;
}

/* P's arrays for a, the message pairs, and the checks every layout relies on. */
static tn_status_t pack_init(pk_t *P, const algo_t *a, const emit_msccl_limits_t *lim,
                             tn_err_t *err) {
  memset(P, 0, sizeof *P);
  P->a = a;
  tn_vec_init(&P->units, sizeof(unit_t));
  tn_vec_init(&P->shapes, sizeof(shape_t));
  tn_vec_init(&P->tbs, sizeof(tbinfo_t));
  tn_vec_init(&P->udeps, sizeof(uint32_t));
  size_t n2 = (size_t)a->npus * a->npus;
  tn_status_t rc = tn_calloc(a->npus, sizeof *P->x, &P->x, err);
  if (rc == TN_OK) rc = tn_calloc(a->npus + 1, sizeof *P->base, &P->base, err);
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++) {
    rc = tn_calloc(algo_rank_len(a, r) + 1, sizeof **P->x, &P->x[r], err);
    P->base[r + 1] = P->base[r] + algo_rank_len(a, r);
  }
  if (rc != TN_OK) return rc;
  P->nn = P->base[a->npus];
  if ((rc = emit_i_msccl_pair_messages(a, P->x, err)) != TN_OK) return rc;
  if ((rc = check_nodes(a, lim, err)) != TN_OK) return rc;
  if ((rc = tn_calloc(P->nn + 1, sizeof *P->unit, &P->unit, err)) == TN_OK &&
      (rc = tn_calloc(P->nn + 1, sizeof *P->chain, &P->chain, err)) == TN_OK &&
      (rc = tn_calloc(P->nn + 1, sizeof *P->chain_ord, &P->chain_ord, err)) == TN_OK &&
      (rc = tn_calloc(a->npus + 1, sizeof *P->shape_off, &P->shape_off, err)) == TN_OK &&
      (rc = tn_calloc(n2, sizeof *P->sshape, &P->sshape, err)) == TN_OK &&
      (rc = tn_calloc(n2, sizeof *P->rshape, &P->rshape, err)) == TN_OK &&
      (rc = tn_calloc(a->npus + 1, sizeof *P->tb_off, &P->tb_off, err)) == TN_OK &&
      (rc = build_succ(P, err)) == TN_OK)
    rc = estimate(P, err);
  return rc;
}

/* Whether the form's units can all run with no limit on connections at all: each after
 * the units it depends on and after the unit that sends its message (Kahn's order over
 * both). A fused form can tie a cycle (a unit that receives waits for one that sends,
 * which waits through others for the first): then no channel count can run it, and the
 * witness run of every count would say so. Message in msg as the witness words it, naming
 * the first unit left (empty: no cycle). O(units + deps). */
static tn_status_t form_cycle(const pk_t *P, char *msg, size_t cap, tn_err_t *err) {
  uint32_t nu = (uint32_t)P->units.len, head = 0, tail = 0;
  uint32_t *indeg = NULL, *queue = NULL;
  msg[0] = 0;
  tn_status_t rc = tn_calloc(nu + 1, sizeof *indeg, &indeg, err);
  if (rc == TN_OK) rc = tn_calloc(nu + 1, sizeof *queue, &queue, err);
  for (uint32_t u = 0; rc == TN_OK && u < nu; u++) {
    indeg[u] += UN(P, u).recv != NONE;
    for (uint32_t e = P->usucc_off[u]; e < P->usucc_off[u + 1]; e++)
      indeg[P->usucc[e]]++;
  }
  for (uint32_t u = 0; rc == TN_OK && u < nu; u++)
    if (indeg[u] == 0) queue[tail++] = u;
  while (rc == TN_OK && head < tail) {
    uint32_t u = queue[head++];
    const unit_t *U = &UN(P, u);
    for (uint32_t e = P->usucc_off[u]; e < P->usucc_off[u + 1]; e++)
      if (--indeg[P->usucc[e]] == 0) queue[tail++] = P->usucc[e];
    if (U->send != NONE) {
      const emit_i_msccl_xnode_t *xs = &P->x[U->rank][U->send];
      uint32_t w = P->unit[P->base[xs->prank] + xs->pnode];
      if (--indeg[w] == 0) queue[tail++] = w;
    }
  }
  if (rc == TN_OK && tail < nu) {
    uint32_t u = 0;
    while (indeg[u] == 0)
      u++;
    snprintf(msg, cap,
             "rank %u node %u: never runs once each connection buffers only one message; the "
             "runtime could deadlock",
             UN(P, u).rank, UN(P, u).head);
  }
  free(indeg);
  free(queue);
  return rc;
}

/* The search's outcome: the first and the last reason a layout did not fit. */
typedef struct fit {
  char first[240], last[240];
  uint32_t C;
  bool fits;
} fit_t;

/* Tries 1.. channels (or opts->channels) for the current form; stops at the first fit. */
static tn_status_t try_channels(pk_t *P, const emit_msccl_export_opts_t *opts,
                                const emit_msccl_limits_t *lim, bool fused, fit_t *f,
                                tn_err_t *err) {
  uint32_t maxc = lim->channels < P->nchains ? lim->channels : P->nchains;
  if (maxc == 0) maxc = 1;
  if (opts->channels) maxc = opts->channels;
  prechk_t q;
  bool acyclic = false; /* form_cycle ran and found none */
  tn_status_t rc = prechk_init(&q, P, maxc, err);
  for (f->C = opts->channels ? opts->channels : 1; rc == TN_OK && f->C <= maxc && !f->fits;
       f->C++) {
    /* A count the limits refuse before any order is chosen needs no witness run. */
    precheck(P, &q, lim, f->C, f->last, sizeof f->last);
    if (!f->last[0] && !acyclic) {
      rc = form_cycle(P, f->last, sizeof f->last, err);
      acyclic = rc == TN_OK && !f->last[0];
      if (rc == TN_OK && f->last[0]) { /* no count runs this form: the others need no try */
        if (!f->first[0])
          snprintf(f->first, sizeof f->first, "with %u channel%s%s: %s", f->C, f->C > 1 ? "s" : "",
                   fused ? "" : " unfused", f->last);
        f->C = maxc + 1;
        break;
      }
    }
    if (rc == TN_OK && !f->last[0]) {
      rc = layout(P, f->C, err);
      if (rc == TN_INFEASIBLE) {
        snprintf(f->last, sizeof f->last, "%s", err->msg);
        tn_err_clear(err);
        rc = TN_OK;
      } else if (rc == TN_OK) {
        check_limits(P, lim, f->C, f->last, sizeof f->last);
      }
    }
    f->fits = rc == TN_OK && !f->last[0];
    if (rc == TN_OK && !f->fits && !f->first[0])
      snprintf(f->first, sizeof f->first, "with %u channel%s%s: %s", f->C, f->C > 1 ? "s" : "",
               fused ? "" : " unfused", f->last);
    /* One channel gives every shape one tb, the fewest any count can: too many tbs there
     * means too many for every count. */
    if (rc == TN_OK && !f->fits && f->C == 1 && strstr(f->last, " needs ") &&
        strstr(f->last, " threadblocks (limit"))
      f->C = maxc;
  }
  f->C--;
  prechk_free(&q);
  return rc;
}

/* The error for a program that fits no layout tried. */
static tn_status_t no_fit(const fit_t *f, tn_err_t *err) {
  size_t lf = strlen(f->first), lm = strlen(f->last);
  if (strstr(f->last, "deadlock"))
    return tn_err_set(err, TN_INFEASIBLE, "%s (with up to %u channels, fused and unfused)", f->last,
                      f->C);
  if (lf >= lm && strcmp(f->first + lf - lm, f->last) == 0)
    return tn_err_set(err, TN_LIMIT, "does not fit MSCCL's limits: %s", f->first);
  return tn_err_set(err, TN_LIMIT, "does not fit MSCCL's limits: %s; with %u channels: %s",
                    f->first, f->C, f->last);
}

tn_status_t emit_i_msccl_pack(const algo_t *a, const emit_msccl_export_opts_t *opts, char **xml,
                              size_t *len, emit_msccl_export_stats_t *stats, tn_err_t *err) {
  *xml = NULL;
  *len = 0;
  if (!a->has_coll)
    return tn_err_set(err, TN_INVAL,
                      "MSCCL-IR export needs the collective and its chunk "
                      "bookkeeping (tenet's own algorithms)");
  emit_msccl_limits_t lim = pack_limits(opts);
  if (opts->channels > lim.channels)
    return tn_err_set(err, TN_INVAL, "%u channels asked for; MSCCL has at most %u", opts->channels,
                      lim.channels);
  pk_t P;
  tn_status_t rc = pack_init(&P, a, &lim, err);
  /* Fused first, then without fusion; per form the fewest channels that fit. A form that
   * could deadlock with C channels may not with more (fewer messages per connection). */
  fit_t f = {.fits = false};
  for (int form = opts->no_fuse ? 1 : 0; rc == TN_OK && form < 2 && !f.fits; form++) {
    if ((rc = build(&P, form == 0, err)) == TN_OK)
      rc = try_channels(&P, opts, &lim, form == 0, &f, err);
  }
  if (rc == TN_OK) rc = f.fits ? write_xml(&P, f.C, xml, len, stats, err) : no_fit(&f, err);
  pk_free(&P);
  return rc;
}
