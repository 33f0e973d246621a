/* emit/msccl/export.c — algo_t (tenet's own: greedy, MILP, baselines, with chunk
 * bookkeeping) → MSCCL-IR XML. Pipeline: algo_t → this writer → MSCCL runtimes, or back
 * through emit/msccl/import.c.
 *
 * Dialect: the MSCCL-IR XML that msccl-tools (MSCCLang) emits and that the MSCCL runtimes
 * (microsoft/msccl, RCCL's MSCCL executor) load: <algo name proto nchannels nchunksperloop
 * ngpus coll inplace outofplace> / <gpu id i_chunks o_chunks s_chunks> / <tb id send recv
 * chan> / <step s type srcbuf srcoff dstbuf dstoff cnt depid deps hasdep>, ops s, r, re, nop.
 *
 * Layout: in place; chunk c lives in slot c of the collective's buffer (All-Gather: o,
 * i_chunks 0; Reduce-Scatter and All-Reduce: i, o_chunks 0). All-to-All is out of place:
 * a rank's own pieces in i (slot c mod K), those addressed to it in o (slot s m + j for
 * source s's piece j), each relayed range in scratch (one range per RECV that brings it),
 * and a cpy of the piece it addresses to itself (imported back, a COMP of 0 us after
 * the rank's other nodes). A message whose chunks are not one ascending range (Two-Step's
 * gathered messages) is staged in scratch (emit/msccl/stage.c): its sender cpys the pieces
 * into a scratch range of the message's own and sends that range (a message whose pieces
 * already sit in one range, in order, is sent from there), its receiver receives into a
 * scratch range of its own and cpys the pieces addressed to it into o (a message that falls
 * in one range of o, in order, lands there directly); the pieces it relays stay in that
 * scratch, where a later send finds them (and cpys them again when they join other pieces).
 * Those cpys run in the message's tb and import as COMPs of 0 us: with the self cpy, the
 * only difference from the exported set. A copy RECV lands in the slot; each reduce RECV
 * gets its own scratch range, which the COMP's re steps add into the slot. Scratch is laid
 * out for every rank before any is written (a send names its place at the receiver).
 * Threadblocks: node i of a rank is tb i (so the importer's tb-major numbering gives the
 * same ids back); a node with dependencies d1..dk runs nop steps on d1..d(k-1) and carries
 * dk itself (a step has one cross-tb dependency; the importer folds nops back into exactly
 * these dependencies). Channels: the k-th message from a to b (in a's node order) uses
 * channel k, so each (peer, channel) has one sending and one receiving tb and pairing is
 * unambiguous; the channel count is the largest number of messages between one pair.
 * Tags: s and r steps carry tenet's extra attribute tag="N" (MSCCL runtimes ignore it;
 * their parsers accept up to 16 attributes per element) so that the importer restores
 * the Chakra tags exactly. The runtimes' limits (EMIT_MSCCL_MAX_* in emit.h) are not
 * checked here: one tb per node fits small algorithms (tenet's Ring All-Reduce on 8 NPUs:
 * 35 tbs, 14 channels per GPU) but not large synthesized ones; emit/msccl/pack.c writes
 * the runtime-fit form (emit_msccl_export_opts with exact false). Exactness: importing the
 * result with comp_us equal to the COMPs' duration gives back an algo_t that algo_equal
 * accepts (All-to-All: but for the cpys' COMPs above). */
#include "emit/emit.h"
#include "emit/msccl/msccl_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct msg {
  uint32_t src, dst, node;
  int32_t tag;
  uint64_t bytes;
} msg_t;

static int cmp_msg(const void *x, const void *y) {
  const msg_t *p = x, *q = y;
  if (p->src != q->src) return p->src < q->src ? -1 : 1;
  if (p->dst != q->dst) return p->dst < q->dst ? -1 : 1;
  if (p->tag != q->tag) return p->tag < q->tag ? -1 : 1;
  if (p->bytes != q->bytes) return p->bytes < q->bytes ? -1 : 1;
  return (p->node > q->node) - (p->node < q->node);
}

/* Chunks of node n must be a contiguous ascending range; *first gets its start. */
tn_status_t emit_i_msccl_contiguous(const algo_t *a, uint32_t r, uint32_t i, uint32_t *first,
                                    tn_err_t *err) {
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *c = algo_node_chunks(a, r, n);
  if (n->nchunks == 0)
    return tn_err_set(err, TN_INVAL,
                      "rank %u node %u: no chunk bookkeeping; MSCCL-IR export "
                      "needs tenet's own algorithms",
                      r, i);
  for (uint32_t k = 0; k < n->nchunks; k++)
    if (c[k] >= a->npus * a->chunks_per_npu || (k > 0 && c[k] != c[k - 1] + 1))
      return tn_err_set(err, TN_INFEASIBLE,
                        "rank %u node %u: its chunks are not one ascending "
                        "range; an MSCCL step moves a contiguous range",
                        r, i);
  *first = c[0];
  return TN_OK;
}

/* Pairs every SEND with its RECV (FIFO per (src, dst, tag, bytes)) and numbers the
 * messages of each (src, dst) pair in sender id order: that number is the channel. */
tn_status_t emit_i_msccl_pair_messages(const algo_t *a, emit_i_msccl_xnode_t **x, tn_err_t *err) {
  size_t ns = 0, nr = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      ns += algo_node(a, r, i)->op == ALGO_SEND;
      nr += algo_node(a, r, i)->op == ALGO_RECV;
    }
  msg_t *S = NULL, *R = NULL;
  tn_status_t rc = tn_calloc(ns + 1, sizeof *S, &S, err);
  if (rc == TN_OK) rc = tn_calloc(nr + 1, sizeof *R, &R, err);
  if (rc != TN_OK) goto fail;
  size_t is = 0, ir = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = algo_node(a, r, i);
      if (n->peer < 0 || (uint32_t)n->peer >= a->npus || (uint32_t)n->peer == r) {
        if (n->op == ALGO_COMP) continue;
        rc = tn_err_set(err, TN_INVAL, "rank %u node %u: peer %d out of range", r, i, n->peer);
        goto fail;
      }
      if (n->op == ALGO_SEND) S[is++] = (msg_t){r, (uint32_t)n->peer, i, n->tag, n->bytes};
      if (n->op == ALGO_RECV) R[ir++] = (msg_t){(uint32_t)n->peer, r, i, n->tag, n->bytes};
    }
  qsort(S, ns, sizeof *S, cmp_msg);
  qsort(R, nr, sizeof *R, cmp_msg);
  for (size_t k = 0; k < ns || k < nr; k++) {
    if (k >= ns || k >= nr || S[k].src != R[k].src || S[k].dst != R[k].dst ||
        S[k].tag != R[k].tag || S[k].bytes != R[k].bytes) {
      const msg_t *m = k < ns ? &S[k] : &R[k];
      bool send = k < ns && (k >= nr || cmp_msg(&S[k], &R[k]) < 0);
      if (!send) m = &R[k];
      rc = tn_err_set(err, TN_PARSE, "rank %u node %u: %s has no matching %s",
                      send ? m->src : m->dst, m->node, send ? "SEND" : "RECV",
                      send ? "RECV" : "SEND");
      goto fail;
    }
    x[S[k].src][S[k].node].prank = S[k].dst;
    x[S[k].src][S[k].node].pnode = R[k].node;
    x[R[k].dst][R[k].node].prank = S[k].src;
    x[R[k].dst][R[k].node].pnode = S[k].node;
  }
  /* Channels: each pair's messages numbered in sender node id order. */
  uint32_t *count = NULL;
  if ((rc = tn_calloc(a->npus, sizeof *count, &count, err)) != TN_OK) goto fail;
  for (uint32_t r = 0; r < a->npus; r++) {
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = algo_node(a, r, i);
      if (n->op != ALGO_SEND) continue;
      uint32_t c = count[n->peer]++;
      x[r][i].chan = c;
      x[n->peer][x[r][i].pnode].chan = c;
    }
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      if (algo_node(a, r, i)->op == ALGO_SEND) count[algo_node(a, r, i)->peer] = 0;
  }
  free(count);
fail:
  free(S);
  free(R);
  return rc;
}

/* The buffer holding slot c: "o" for All-Gather, "i" otherwise. */
const char *emit_i_msccl_slot_buf(const algo_t *a) {
  return a->coll == TN_ALLGATHER ? "o" : "i";
}

typedef struct wstate {
  const algo_t *a;
  emit_i_msccl_xnode_t **x;
  tn_sb_t *b;
  uint32_t *nsteps; /* per node of the current rank: steps of its tb */
  bool *hasdep;     /* per node of the current rank: some step waits on its last step */
} wstate_t;

/* One step; tag >= 0 adds tenet's tag attribute (s and r steps). */
static void step(wstate_t *w, uint32_t s, const char *type, const char *sb, int64_t so,
                 const char *db, int64_t doff, int64_t cnt, int64_t depid, int64_t deps,
                 bool hasdep, int32_t tag) {
  char tagattr[32] = "";
  if (tag >= 0) snprintf(tagattr, sizeof tagattr, " tag=\"%d\"", tag);
  tn_sb_printf(w->b,
               "      <step s=\"%u\" type=\"%s\" srcbuf=\"%s\" srcoff=\"%lld\" dstbuf=\"%s\" "
               "dstoff=\"%lld\" cnt=\"%lld\" depid=\"%lld\" deps=\"%lld\" hasdep=\"%d\"%s/>\n",
               s, type, sb, (long long)so, db, (long long)doff, (long long)cnt, (long long)depid,
               (long long)deps, hasdep ? 1 : 0, tagattr);
}

/* Steps of node i (its tb) on rank r: nops for all but the last dependency, then the op. */
/* ---- All-to-All (out of place) ------------------------------------------------------- */

bool emit_i_msccl_a2a_place(const algo_t *a, uint32_t r, uint32_t c, const char **buf,
                            int64_t *off) {
  uint32_t k = a->chunks_per_npu, m = k / a->npus;
  if (c / k == r) {
    *buf = "i", *off = c % k;
    return true;
  }
  if (c % k / m == r) {
    *buf = "o", *off = (int64_t)(c / k) * m + c % m;
    return true;
  }
  return false;
}

/* The position of chunk c in node i of rank r, or UINT32_MAX. */
static uint32_t chunk_pos(const algo_t *a, uint32_t r, uint32_t i, uint32_t c) {
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *ch = algo_node_chunks(a, r, n);
  for (uint32_t k = 0; k < n->nchunks; k++)
    if (ch[k] == c) return k;
  return UINT32_MAX;
}

tn_status_t emit_i_msccl_a2a_relay_recv(const algo_t *a, uint32_t r, uint32_t i, uint32_t c,
                                        uint32_t *recv, uint32_t *idx, tn_err_t *err) {
  const algo_node_t *n = algo_node(a, r, i);
  *idx = 0;
  if (n->op == ALGO_RECV) {
    uint32_t k = chunk_pos(a, r, i, c);
    *recv = i;
    *idx = k == UINT32_MAX ? 0 : k;
    return TN_OK;
  }
  const uint32_t *d = algo_node_deps(a, r, n);
  for (uint32_t q = 0; q < n->ndeps; q++) {
    const algo_node_t *dn = algo_node(a, r, d[q]);
    if (dn->op == ALGO_RECV && dn->nchunks && algo_node_chunks(a, r, dn)[0] == c) {
      *recv = d[q];
      return TN_OK;
    }
  }
  /* A piece in the middle of a gathered message (Two-Step's relays). */
  for (uint32_t q = 0; q < n->ndeps; q++) {
    const algo_node_t *dn = algo_node(a, r, d[q]);
    uint32_t k = dn->op == ALGO_RECV ? chunk_pos(a, r, d[q], c) : UINT32_MAX;
    if (k != UINT32_MAX) {
      *recv = d[q];
      *idx = k;
      return TN_OK;
    }
  }
  return tn_err_set(err, TN_INFEASIBLE,
                    "rank %u node %u: relays chunk %u without depending on the RECV that "
                    "brought it; MSCCL-IR cannot name where it is",
                    r, i, c);
}

/* Where chunk range [c, c + cnt) sits at rank r as node i of r moves it: its own pieces in
 * i, the pieces addressed to r in o, a relayed range in the scratch of the RECV that
 * brought it. */
static tn_status_t a2a_where(const wstate_t *w, uint32_t r, uint32_t i, uint32_t c,
                             const char **buf, int64_t *off, tn_err_t *err) {
  if (emit_i_msccl_a2a_place(w->a, r, c, buf, off)) return TN_OK;
  uint32_t recv = 0, idx = 0;
  tn_status_t rc = emit_i_msccl_a2a_relay_recv(w->a, r, i, c, &recv, &idx, err);
  if (rc == TN_OK) *buf = "s", *off = (int64_t)w->x[r][recv].scratch + idx;
  return rc;
}

/* An All-to-All SEND or RECV: s from its place here to its place at the receiver, r into
 * its place here. */
static tn_status_t a2a_step(wstate_t *w, uint32_t r, uint32_t i, uint32_t s, int64_t depid,
                            int64_t deps, bool hd, tn_err_t *err) {
  const algo_node_t *n = algo_node(w->a, r, i);
  const emit_i_msccl_xnode_t *xn = &w->x[r][i];
  uint32_t first;
  const char *sb, *db;
  int64_t so, doff;
  tn_status_t rc = emit_i_msccl_contiguous(w->a, r, i, &first, err);
  if (rc == TN_OK) rc = a2a_where(w, r, i, first, &sb, &so, err);
  if (rc != TN_OK) return rc;
  if (n->op == ALGO_SEND) {
    rc = a2a_where(w, xn->prank, xn->pnode, first, &db, &doff, err);
    if (rc != TN_OK) return rc;
    step(w, s, "s", sb, so, db, doff, n->nchunks, depid, deps, hd, n->tag);
  } else {
    step(w, s, "r", sb, so, sb, so, n->nchunks, depid, deps, hd, n->tag);
  }
  return TN_OK;
}

void emit_i_msccl_a2a_self_copy(tn_sb_t *b, const algo_t *a, uint32_t r, uint32_t tb) {
  uint32_t m = a->chunks_per_npu / a->npus;
  tn_sb_printf(b, "    <tb id=\"%u\" send=\"-1\" recv=\"-1\" chan=\"0\">\n", tb);
  tn_sb_printf(b,
               "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"%u\" dstbuf=\"o\" "
               "dstoff=\"%u\" cnt=\"%u\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n",
               r * m, r * m, m);
  tn_sb_printf(b, "    </tb>\n");
}

static tn_status_t write_node(wstate_t *w, uint32_t r, uint32_t i, tn_err_t *err) {
  const algo_t *a = w->a;
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *d = algo_node_deps(a, r, n);
  const emit_i_msccl_xnode_t *xn = &w->x[r][i];
  const char *slot = emit_i_msccl_slot_buf(a);
  uint32_t first = 0, s = 0;
  tn_status_t rc = TN_OK;
  int32_t send = -1, recv = -1;
  if (n->op == ALGO_SEND) send = n->peer;
  if (n->op == ALGO_RECV) recv = n->peer;
  tn_sb_printf(w->b, "    <tb id=\"%u\" send=\"%d\" recv=\"%d\" chan=\"%u\">\n", i, send, recv,
               n->op == ALGO_COMP ? 0 : xn->chan);
  /* Reduce-RECV dependencies of a COMP become its re steps. */
  uint32_t nre = 0;
  if (n->op == ALGO_COMP)
    for (uint32_t k = 0; k < n->ndeps; k++) {
      const algo_node_t *dn = algo_node(a, r, d[k]);
      nre += dn->op == ALGO_RECV && dn->reduce;
    }
  for (uint32_t k = 0; k + 1 < n->ndeps; k++)
    step(w, s++, "nop", "i", -1, "o", -1, 0, d[k], w->nsteps[d[k]] - 1, false, -1);
  int64_t depid = n->ndeps ? (int64_t)d[n->ndeps - 1] : -1;
  int64_t deps = n->ndeps ? (int64_t)w->nsteps[d[n->ndeps - 1]] - 1 : -1;
  bool hd = w->hasdep[i];
  if (emit_i_msccl_a2a_gathered(a, r, i)) {
    rc = emit_i_msccl_a2a_gather_write(w->b, a, (const emit_i_msccl_xnode_t *const *)w->x, r, i, s,
                                       depid, deps, hd, n->tag, err);
    if (rc != TN_OK) return rc;
    tn_sb_printf(w->b, "    </tb>\n");
    return w->b->st;
  }
  if (a->coll == TN_ALLTOALL && n->op != ALGO_COMP) {
    rc = a2a_step(w, r, i, s++, depid, deps, hd, err);
    if (rc != TN_OK) return rc;
    tn_sb_printf(w->b, "    </tb>\n");
    return w->b->st;
  }
  switch (n->op) {
  case ALGO_SEND: {
    if ((rc = emit_i_msccl_contiguous(a, r, i, &first, err)) != TN_OK) return rc;
    const algo_node_t *rn = algo_node(a, xn->prank, xn->pnode);
    const emit_i_msccl_xnode_t *rx = &w->x[xn->prank][xn->pnode];
    step(w, s++, "s", slot, first, rn->reduce ? "s" : slot, rn->reduce ? rx->scratch : first,
         n->nchunks, depid, deps, hd, n->tag);
    break;
  }
  case ALGO_RECV:
    if ((rc = emit_i_msccl_contiguous(a, r, i, &first, err)) != TN_OK) return rc;
    step(w, s++, "r", slot, first, n->reduce ? "s" : slot, n->reduce ? xn->scratch : first,
         n->nchunks, depid, deps, hd, n->tag);
    break;
  case ALGO_COMP: {
    if (n->nchunks == 0)
      return tn_err_set(err, TN_INFEASIBLE,
                        "rank %u node %u: a COMP that reduces nothing "
                        "(pure time, e.g. an imported cpy) has no MSCCL-IR form",
                        r, i);
    if ((rc = emit_i_msccl_contiguous(a, r, i, &first, err)) != TN_OK) return rc;
    if (nre == 0)
      return tn_err_set(err, TN_INFEASIBLE,
                        "rank %u node %u: a COMP that reduces no received "
                        "data has no MSCCL-IR form",
                        r, i);
    /* The last dependency rides on the first re; the others re steps take none, so that
     * the importer fuses the run into this one COMP. */
    bool firstre = true;
    for (uint32_t k = 0; k < n->ndeps; k++) {
      const algo_node_t *dn = algo_node(a, r, d[k]);
      if (dn->op != ALGO_RECV || !dn->reduce) continue;
      if (dn->nchunks != n->nchunks || algo_node_chunks(a, r, dn)[0] != first)
        return tn_err_set(err, TN_INFEASIBLE,
                          "rank %u node %u: reduces RECV %u whose chunks "
                          "differ from its own",
                          r, i, d[k]);
      nre--;
      step(w, s++, "re", "s", w->x[r][d[k]].scratch, slot, first, n->nchunks, firstre ? depid : -1,
           firstre ? deps : -1, hd && nre == 0, -1);
      firstre = false;
    }
    break;
  }
  }
  tn_sb_printf(w->b, "    </tb>\n");
  return w->b->st;
}

/* Steps per tb, needed before writing (a nop names the last step of another tb). */
static uint32_t count_steps(const algo_t *a, uint32_t r, uint32_t i) {
  const algo_node_t *n = algo_node(a, r, i);
  uint32_t nops = n->ndeps ? n->ndeps - 1 : 0, ops = 1;
  if (emit_i_msccl_a2a_gathered(a, r, i)) return nops + emit_i_msccl_a2a_gather_ops(a, r, i);
  if (n->op == ALGO_COMP) {
    ops = 0;
    const uint32_t *d = algo_node_deps(a, r, n);
    for (uint32_t k = 0; k < n->ndeps; k++)
      ops += algo_node(a, r, d[k])->op == ALGO_RECV && algo_node(a, r, d[k])->reduce;
    if (ops == 0) ops = 1;
  }
  return nops + ops;
}

const char *emit_i_msccl_coll_name(const algo_t *a) {
  return a->coll == TN_ALLGATHER   ? "allgather"
         : a->coll == TN_ALLREDUCE ? "allreduce"
         : a->coll == TN_ALLTOALL  ? "alltoall"
                                   : "reduce_scatter";
}

bool emit_i_msccl_idle_rank(const algo_t *a, uint32_t r) {
  if (algo_rank_len(a, r) != 1) return algo_rank_len(a, r) == 0;
  const algo_node_t *n = algo_node(a, r, 0);
  return n->op == ALGO_COMP && n->ndeps == 0 && n->nchunks == 0 && n->duration_us == 0;
}

void emit_i_msccl_header(tn_sb_t *b, const algo_t *a, const char *how, uint32_t nch) {
  /* The producer's name comes from the set's files: keep only what is safe in an XML
   * comment and attribute (no '&', '<', '"' or "--"). */
  char name[sizeof a->name];
  size_t n = 0;
  for (const char *c = a->name; *c && n + 1 < sizeof name; c++)
    name[n++] = (isalnum((unsigned char)*c) || *c == '_' || *c == '.') ? *c : '_';
  name[n] = '\0';
  const char *cname = emit_i_msccl_coll_name(a);
  tn_sb_printf(b,
               "<!-- MSCCL-IR written by tenet%s from a %s algorithm: %s, %u ranks, %u "
               "chunks per rank -->\n",
               how, name, cname, a->npus, a->chunks_per_npu);
  /* All-to-All is out of place: a rank's send buffer (i) and receive buffer (o). */
  bool out = a->coll == TN_ALLTOALL;
  tn_sb_printf(b,
               "<algo name=\"tenet_%s_%s\" proto=\"Simple\" nchannels=\"%u\" "
               "nchunksperloop=\"%u\" ngpus=\"%u\" coll=\"%s\" inplace=\"%d\" outofplace=\"%d\">\n",
               name, cname, nch, out ? a->chunks_per_npu : a->npus * a->chunks_per_npu, a->npus,
               cname, out ? 0 : 1, out ? 1 : 0);
}

void emit_i_msccl_gpu_open(tn_sb_t *b, const algo_t *a, uint32_t r, uint32_t scratch) {
  if (a->coll == TN_ALLTOALL) {
    tn_sb_printf(b, "  <gpu id=\"%u\" i_chunks=\"%u\" o_chunks=\"%u\" s_chunks=\"%u\">\n", r,
                 a->chunks_per_npu, a->chunks_per_npu, scratch);
    return;
  }
  uint32_t total = a->npus * a->chunks_per_npu;
  tn_sb_printf(b, "  <gpu id=\"%u\" i_chunks=\"%u\" o_chunks=\"%u\" s_chunks=\"%u\">\n", r,
               a->coll == TN_ALLGATHER ? 0 : total, a->coll == TN_ALLGATHER ? total : 0, scratch);
}

tn_status_t emit_msccl_export_mem(const algo_t *a, char **xml, size_t *len, tn_err_t *err) {
  *xml = NULL;
  *len = 0;
  if (!a->has_coll)
    return tn_err_set(err, TN_INVAL,
                      "MSCCL-IR export needs the collective and its chunk "
                      "bookkeeping (tenet's own algorithms)");
  tn_sb_t b;
  tn_sb_init(&b, err);
  emit_i_msccl_xnode_t **x = NULL;
  uint32_t *nsteps = NULL, *sc = NULL; /* sc: per rank, its scratch chunks */
  bool *hasdep = NULL;
  uint32_t maxlen = 1;
  tn_status_t rc = tn_calloc(a->npus, sizeof *x, &x, err);
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++) {
    uint32_t l = algo_rank_len(a, r);
    if (l > maxlen) maxlen = l;
    rc = tn_calloc(l + 1, sizeof **x, &x[r], err);
  }
  if (rc == TN_OK) rc = tn_calloc(maxlen, sizeof *nsteps, &nsteps, err);
  if (rc == TN_OK) rc = tn_calloc(maxlen, sizeof *hasdep, &hasdep, err);
  if (rc == TN_OK) rc = emit_i_msccl_pair_messages(a, x, err);
  if (rc != TN_OK) goto fail;
  uint32_t nch = 1;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      if (algo_node(a, r, i)->op != ALGO_COMP && x[r][i].chan + 1 > nch) nch = x[r][i].chan + 1;
  emit_i_msccl_header(&b, a, "", nch);
  wstate_t w = {a, x, &b, nsteps, hasdep};
  /* Scratch, every rank's before any is written (an All-to-All send names the place at its
   * receiver): a reduce RECV's input, an All-to-All piece the GPU relays. */
  if ((rc = tn_calloc(a->npus, sizeof *sc, &sc, err)) != TN_OK) goto fail;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = algo_node(a, r, i);
      bool relay = false;
      if (emit_i_msccl_a2a_gathered(a, r, i)) { /* staged: a range of its own */
        x[r][i].scratch = sc[r];
        sc[r] += emit_i_msccl_a2a_gather_scratch(a, r, i);
        continue;
      }
      if (a->coll == TN_ALLTOALL && n->op == ALGO_RECV && n->nchunks) {
        const char *bn;
        int64_t off;
        relay = !emit_i_msccl_a2a_place(a, r, algo_node_chunks(a, r, n)[0], &bn, &off);
      }
      if (n->op == ALGO_RECV && (n->reduce || relay)) {
        x[r][i].scratch = sc[r];
        sc[r] += n->nchunks;
      }
    }
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++) {
    uint32_t l = algo_rank_len(a, r);
    for (uint32_t i = 0; i < l; i++) {
      nsteps[i] = count_steps(a, r, i);
      hasdep[i] = false;
    }
    for (uint32_t i = 0; i < l; i++) {
      const algo_node_t *n = algo_node(a, r, i);
      const uint32_t *d = algo_node_deps(a, r, n);
      for (uint32_t k = 0; k < n->ndeps; k++) {
        if (d[k] >= l) {
          rc = tn_err_set(err, TN_INVAL, "rank %u node %u: dependency %u out of range", r, i, d[k]);
          goto fail;
        }
        hasdep[d[k]] = true;
      }
    }
    emit_i_msccl_gpu_open(&b, a, r, sc[r]);
    if (!emit_i_msccl_idle_rank(a, r))
      for (uint32_t i = 0; i < l && rc == TN_OK; i++)
        rc = write_node(&w, r, i, err);
    if (rc == TN_OK && a->coll == TN_ALLTOALL)
      emit_i_msccl_a2a_self_copy(&b, a, r, emit_i_msccl_idle_rank(a, r) ? 0 : l);
    tn_sb_printf(&b, "  </gpu>\n");
  }
  tn_sb_printf(&b, "</algo>\n");
  if (rc == TN_OK) rc = b.st;
  if (rc != TN_OK) goto fail;
  *xml = b.v.data;
  *len = b.v.len;
  b.v.data = NULL;
fail:
  tn_vec_free(&b.v);
  if (x)
    for (uint32_t r = 0; r < a->npus; r++)
      free(x[r]);
  free(x);
  free(nsteps);
  free(sc);
  free(hasdep);
  return rc;
}

/* Exact mode's figures: one tb per node, channels as written. */
static void exact_stats(const algo_t *a, const char *xml, size_t len,
                        emit_msccl_export_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->tbs_min = UINT32_MAX;
  for (uint32_t r = 0; r < a->npus; r++) {
    if (emit_i_msccl_idle_rank(a, r)) continue;
    uint32_t l = algo_rank_len(a, r);
    if (l < st->tbs_min) st->tbs_min = l;
    if (l > st->tbs_max) st->tbs_max = l;
    for (uint32_t i = 0; i < l; i++) {
      uint32_t s = count_steps(a, r, i);
      st->steps += s;
      if (s > st->steps_max) st->steps_max = s;
    }
  }
  if (st->tbs_min == UINT32_MAX) st->tbs_min = 0;
  const char *p = strstr(xml, "nchannels=\"");
  if (p && (size_t)(p - xml) < len) st->channels = (uint32_t)strtoul(p + 11, NULL, 10);
  for (p = xml; (p = strstr(p, "type=\"nop\"")) != NULL; p++)
    st->nops++;
}

tn_status_t emit_msccl_export_mem_opts(const algo_t *a, const emit_msccl_export_opts_t *opts,
                                       char **xml, size_t *len, emit_msccl_export_stats_t *stats,
                                       tn_err_t *err) {
  /* A threadblock runs its steps in order: the gates that fix the order of same-instant
   * events in a Chakra set have no MSCCL-IR form and need none. */
  algo_t *g = NULL;
  tn_status_t rc = algo_drop_gates(a, &g, err);
  if (rc != TN_OK) {
    *xml = NULL;
    *len = 0;
    return rc;
  }
  if (opts && !opts->exact) {
    rc = emit_i_msccl_pack(g, opts, xml, len, stats, err);
    algo_free(g);
    return rc;
  }
  rc = emit_msccl_export_mem(g, xml, len, err);
  if (rc == TN_OK && stats) exact_stats(g, *xml, *len, stats);
  algo_free(g);
  return rc;
}

tn_status_t emit_msccl_export(const algo_t *a, const char *path, tn_err_t *err) {
  return emit_msccl_export_opts(a, NULL, path, NULL, err);
}

tn_status_t emit_msccl_export_opts(const algo_t *a, const emit_msccl_export_opts_t *opts,
                                   const char *path, emit_msccl_export_stats_t *stats,
                                   tn_err_t *err) {
  char *xml = NULL;
  size_t len = 0;
  tn_status_t rc = emit_msccl_export_mem_opts(a, opts, &xml, &len, stats, err);
  if (rc != TN_OK) return rc;
  tn_outfile_t o = {0};
  if ((rc = tn_mkdir_parents(path, err)) == TN_OK &&
      (rc = tn_outfile_open(&o, path, err)) == TN_OK) {
    if (fwrite(xml, 1, len, o.f) != len) {
      tn_outfile_abort(&o);
      rc = tn_err_set(err, TN_IO, "%s: write failed", path);
    } else {
      rc = tn_outfile_commit(&o, err);
    }
  }
  free(xml);
  return rc;
}
