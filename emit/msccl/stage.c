/* emit/msccl/stage.c — gathered All-to-All messages, for both MSCCL-IR writers
 * (emit/msccl/export.c exact, emit/msccl/pack.c runtime-fit). A message is gathered when its
 * chunks are not one ascending range (Two-Step's: one message carries several pieces, each a
 * range of its own), or are one range but the receiver keeps some and relays others
 * (Two-Step when a server's NPUs are not numbered in order), or the sender finds them in
 * several places. An MSCCL step moves one contiguous range, so such a message is staged in
 * scratch, as MSCCLang's own Two-Step program does:
 *  - a SEND whose pieces sit in one range of one buffer in its order (a message relayed as
 *    it came) is one s from there; otherwise its pieces are copied (cpy, one per run of
 *    pieces that are consecutive where they sit) into a scratch range of its own, in the
 *    message's order, and one s sends that range;
 *  - a RECV whose pieces are all addressed to the GPU and fall in one range of o in the
 *    message's order is one r into o; otherwise it receives into a scratch range of its own
 *    and copies (cpy, one per run) the pieces addressed to the GPU into o; the pieces it
 *    relays stay there, where a later send finds them.
 * The cpys run in the node's threadblock: a SEND's before its s (the first carries the
 * node's last dependency), a RECV's after its r; whoever waits for the node waits for its
 * last step. Where a piece sits: its own pieces in i and those addressed to it in o
 * (emit_i_msccl_a2a_place), a relayed one in the scratch of the RECV that brought it (the
 * node itself or one it depends on), at the piece's position in that message. A run never
 * spans two places (two RECVs' scratch ranges that happen to be adjacent are two runs), so
 * the step counts do not depend on where scratch is laid out. */
#include "emit/msccl/msccl_internal.h"

#include <stdlib.h>
#include <string.h>

/* Where a chunk sits at a GPU: holder -1 in i, -2 in o (off: the slot), else the RECV node
 * whose scratch holds it (off: the chunk's position in that message). */
typedef struct loc {
  int64_t holder, off;
} loc_t;

#define IN_I (-1)
#define IN_O (-2)

/* The slot of a chunk r keeps (its own piece, or one addressed to it). */
static bool placed(const algo_t *a, uint32_t r, uint32_t c, loc_t *l) {
  const char *buf = NULL;
  int64_t off = 0;
  if (c >= a->npus * a->chunks_per_npu || !emit_i_msccl_a2a_place(a, r, c, &buf, &off))
    return false;
  *l = (loc_t){buf[0] == 'i' ? IN_I : IN_O, off};
  return true;
}

/* Where chunk c sits at rank r as node i reads it. */
static tn_status_t locate(const algo_t *a, uint32_t r, uint32_t i, uint32_t c, loc_t *l,
                          tn_err_t *err) {
  if (c >= a->npus * a->chunks_per_npu)
    return tn_err_set(err, TN_INVAL, "rank %u node %u: chunk %u out of range", r, i, c);
  if (placed(a, r, c, l)) return TN_OK;
  uint32_t recv = 0, idx = 0;
  tn_status_t rc = emit_i_msccl_a2a_relay_recv(a, r, i, c, &recv, &idx, err);
  if (rc == TN_OK) *l = (loc_t){recv, idx};
  return rc;
}

/* Whether the message's chunks c[0..n) all stay at receiver q in the same way: all relayed,
 * or all kept in one buffer. */
static bool one_kind_at(const algo_t *a, uint32_t q, const uint32_t *c, uint32_t n) {
  loc_t l0 = {0, 0}, l = {0, 0};
  bool p0 = placed(a, q, c[0], &l0);
  for (uint32_t k = 1; k < n; k++) {
    bool p = placed(a, q, c[k], &l);
    if (p != p0 || (p && l.holder != l0.holder)) return false;
  }
  return true;
}

/* Whether SEND i of r finds its chunks in one range, in order (one holder, consecutive). */
static bool one_run_at(const algo_t *a, uint32_t r, uint32_t i, const uint32_t *c, uint32_t n) {
  loc_t l0 = {0, 0}, l = {0, 0};
  tn_err_t e = {0};
  if (locate(a, r, i, c[0], &l0, &e) != TN_OK) return false;
  for (uint32_t k = 1; k < n; k++)
    if (locate(a, r, i, c[k], &l, &e) != TN_OK || l.holder != l0.holder || l.off != l0.off + k)
      return false;
  return true;
}

bool emit_i_msccl_a2a_gathered(const algo_t *a, uint32_t r, uint32_t i) {
  if (a->coll != TN_ALLTOALL) return false;
  const algo_node_t *n = algo_node(a, r, i);
  if (n->op == ALGO_COMP || n->nchunks < 2) return false;
  const uint32_t *c = algo_node_chunks(a, r, n);
  for (uint32_t k = 1; k < n->nchunks; k++)
    if (c[k] != c[k - 1] + 1) return true;
  /* One range of ids, but pieces the receiver keeps beside pieces it relays (Two-Step with
   * servers not numbered in order), or a SEND whose pieces sit in several places. */
  uint32_t q = n->op == ALGO_RECV ? r : (uint32_t)n->peer;
  if (q >= a->npus || !one_kind_at(a, q, c, n->nchunks)) return true;
  return n->op == ALGO_SEND && !one_run_at(a, r, i, c, n->nchunks);
}

static void resolve(const emit_i_msccl_xnode_t *const *x, uint32_t r, loc_t l, const char **buf,
                    int64_t *off) {
  if (l.holder == IN_I || l.holder == IN_O) {
    *buf = l.holder == IN_I ? "i" : "o";
    *off = l.off;
  } else {
    *buf = "s";
    *off = (int64_t)x[r][l.holder].scratch + l.off;
  }
}

/* A gathered RECV that lands straight in o: every piece addressed to r, one range of o in
 * the message's order (*first: where it starts). */
static bool recv_direct(const algo_t *a, uint32_t r, uint32_t i, loc_t *first) {
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *c = algo_node_chunks(a, r, n);
  for (uint32_t k = 0; k < n->nchunks; k++) {
    loc_t l;
    if (!placed(a, r, c[k], &l) || l.holder != IN_O) return false;
    if (k == 0)
      *first = l;
    else if (l.off != first->off + k)
      return false;
  }
  return true;
}

/* The runs of a gathered SEND's pieces (consecutive in the message and where they sit), or
 * of a staged RECV's pieces addressed to r (consecutive in the message and in o); the first
 * cap runs' position in the message, length and place into at, len and where when given;
 * returns the count. A SEND's chunk it cannot locate is a run of its own (the writer
 * reports it). */
static uint32_t runs(const algo_t *a, uint32_t r, uint32_t i, uint32_t *at, uint32_t *len,
                     loc_t *where, uint32_t cap) {
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *c = algo_node_chunks(a, r, n);
  uint32_t nr = 0;
  loc_t prev = {0, 0};
  bool open = false;
  for (uint32_t k = 0; k < n->nchunks; k++) {
    loc_t l;
    bool have;
    if (n->op == ALGO_SEND) {
      tn_err_t e = {0};
      have = locate(a, r, i, c[k], &l, &e) == TN_OK;
      if (!have) l = (loc_t){INT64_MIN, k}; /* a run of its own */
      have = true;
    } else {
      have = placed(a, r, c[k], &l) && l.holder == IN_O;
    }
    if (!have) {
      open = false;
      continue;
    }
    if (open && l.holder == prev.holder && l.holder != INT64_MIN && l.off == prev.off + 1) {
      if (len && nr - 1 < cap) len[nr - 1]++;
    } else {
      if (nr < cap) {
        if (at) at[nr] = k;
        if (len) len[nr] = 1;
        if (where) where[nr] = l;
      }
      nr++;
    }
    prev = l;
    open = true;
  }
  return nr;
}

uint32_t emit_i_msccl_a2a_gather_scratch(const algo_t *a, uint32_t r, uint32_t i) {
  const algo_node_t *n = algo_node(a, r, i);
  loc_t first;
  if (n->op == ALGO_RECV) return recv_direct(a, r, i, &first) ? 0 : n->nchunks;
  /* A SEND: one run covering the message is sent from where it sits. */
  uint32_t len = 0;
  return runs(a, r, i, NULL, &len, NULL, 1) == 1 && len == n->nchunks ? 0 : n->nchunks;
}

uint32_t emit_i_msccl_a2a_gather_ops(const algo_t *a, uint32_t r, uint32_t i) {
  const algo_node_t *n = algo_node(a, r, i);
  loc_t first;
  if (n->op == ALGO_RECV)
    return 1 + (recv_direct(a, r, i, &first) ? 0 : runs(a, r, i, NULL, NULL, NULL, 0));
  return 1 + (emit_i_msccl_a2a_gather_scratch(a, r, i) ? runs(a, r, i, NULL, NULL, NULL, 0) : 0);
}

static void gstep(tn_sb_t *b, uint32_t s, const char *type, const char *sb, int64_t so,
                  const char *db, int64_t doff, int64_t cnt, int64_t depid, int64_t deps,
                  bool hasdep, int32_t tag) {
  char tagattr[32] = "";
  if (tag >= 0) snprintf(tagattr, sizeof tagattr, " tag=\"%d\"", tag);
  tn_sb_printf(b,
               "      <step s=\"%u\" type=\"%s\" srcbuf=\"%s\" srcoff=\"%lld\" dstbuf=\"%s\" "
               "dstoff=\"%lld\" cnt=\"%lld\" depid=\"%lld\" deps=\"%lld\" hasdep=\"%d\"%s/>\n",
               s, type, sb, (long long)so, db, (long long)doff, (long long)cnt, (long long)depid,
               (long long)deps, hasdep ? 1 : 0, tagattr);
}

/* Where gathered RECV i of r puts the message: o when direct, else its scratch. */
static void recv_dst(const algo_t *a, const emit_i_msccl_xnode_t *const *x, uint32_t r, uint32_t i,
                     const char **buf, int64_t *off) {
  loc_t first;
  if (recv_direct(a, r, i, &first)) {
    resolve(x, r, first, buf, off);
  } else {
    *buf = "s";
    *off = x[r][i].scratch;
  }
}

tn_status_t emit_i_msccl_a2a_gather_write(tn_sb_t *b, const algo_t *a,
                                          const emit_i_msccl_xnode_t *const *x, uint32_t r,
                                          uint32_t i, uint32_t s, int64_t depid, int64_t deps,
                                          bool hasdep, int32_t tag, tn_err_t *err) {
  const algo_node_t *n = algo_node(a, r, i);
  const uint32_t *c = algo_node_chunks(a, r, n);
  for (uint32_t k = 0; k < n->nchunks; k++)
    if (c[k] >= a->npus * a->chunks_per_npu)
      return tn_err_set(err, TN_INVAL, "rank %u node %u: chunk %u out of range", r, i, c[k]);
  uint32_t nr = runs(a, r, i, NULL, NULL, NULL, 0);
  uint32_t *at = NULL, *len = NULL;
  loc_t *where = NULL;
  tn_status_t rc = tn_calloc(nr + 1, sizeof *at, &at, err);
  if (rc == TN_OK) rc = tn_calloc(nr + 1, sizeof *len, &len, err);
  if (rc == TN_OK) rc = tn_calloc(nr + 1, sizeof *where, &where, err);
  if (rc != TN_OK) goto done;
  runs(a, r, i, at, len, where, nr);
  const char *sb, *db;
  int64_t so, doff;
  if (n->op == ALGO_SEND) {
    const emit_i_msccl_xnode_t *xs = &x[r][i];
    const algo_node_t *rn = algo_node(a, xs->prank, xs->pnode);
    if (rn->nchunks != n->nchunks ||
        memcmp(algo_node_chunks(a, xs->prank, rn), c, n->nchunks * sizeof *c) != 0) {
      rc = tn_err_set(err, TN_INFEASIBLE,
                      "rank %u node %u: its chunks differ from those of the RECV it pairs with "
                      "(rank %u node %u)",
                      r, i, xs->prank, xs->pnode);
      goto done;
    }
    for (uint32_t k = 0; k < n->nchunks; k++) { /* every piece must be found here */
      loc_t l;
      if ((rc = locate(a, r, i, c[k], &l, err)) != TN_OK) goto done;
    }
    recv_dst(a, x, xs->prank, xs->pnode, &db, &doff);
    bool stage = emit_i_msccl_a2a_gather_scratch(a, r, i) > 0;
    if (stage) {
      for (uint32_t k = 0; k < nr; k++) {
        resolve(x, r, where[k], &sb, &so);
        gstep(b, s++, "cpy", sb, so, "s", (int64_t)x[r][i].scratch + at[k], len[k],
              k == 0 ? depid : -1, k == 0 ? deps : -1, false, -1);
      }
      sb = "s", so = x[r][i].scratch;
    } else {
      resolve(x, r, where[0], &sb, &so);
    }
    gstep(b, s, "s", sb, so, db, doff, n->nchunks, stage ? -1 : depid, stage ? -1 : deps, hasdep,
          tag);
  } else {
    recv_dst(a, x, r, i, &db, &doff);
    loc_t first;
    bool direct = recv_direct(a, r, i, &first);
    gstep(b, s++, "r", db, doff, db, doff, n->nchunks, depid, deps, hasdep && (direct || nr == 0),
          tag);
    for (uint32_t k = 0; !direct && k < nr; k++) {
      resolve(x, r, where[k], &sb, &so);
      gstep(b, s++, "cpy", "s", (int64_t)x[r][i].scratch + at[k], sb, so, len[k], -1, -1,
            hasdep && k + 1 == nr, -1);
    }
  }
  rc = b->st;
done:
  free(at);
  free(len);
  free(where);
  return rc;
}
