/* emit/msccl/import.c — MSCCL-IR XML (algo/gpu/tb/step, as msccl-tools and the MSCCL
 * runtimes read it) → algo_t, with chunk bookkeeping from a symbolic run of the buffers.
 * Pipeline: XML file → this importer → algo_t → Chakra writer / simulator / verifier.
 *
 * Semantics of the mapping (the contract the tests pin):
 *  - Chunk size. S (the collective's NCCL size: All-Gather output, Reduce-Scatter input per
 *    NPU, All-Reduce buffer, All-to-All send buffer) is the buffer the XML cuts into its
 *    chunks: All-Gather's output (o_chunks), the others' input (i_chunks). An alltoall
 *    is out of place, its output also n*K chunks: input slot d*K + j of gpu g is g's piece
 *    j for d and must end in output slot g*K + j of gpu d. So chunks_per_npu
 *    K = that count / ngpus, logical chunk c is buffer slot c of that buffer, and a step of
 *    cnt chunks moves the sum of ten_chunk_bytes of the chunks it carries (cnt * S / (n*K)
 *    when S divides evenly). The other buffer of an out-of-place program must be declared
 *    as K chunks (All-Gather input, Reduce-Scatter output: the NPU's share) or n*K
 *    (All-Reduce output); with inplace="1" (the default when inplace is absent and
 *    i_chunks or o_chunks is 0) it aliases that part of the collective's buffer. Scratch
 *    holds s_chunks slots.
 *  - Nodes. Each tb's steps run in order: the first node of a step depends on the last
 *    node of the previous step of its tb and on the last node of its cross-tb dependency
 *    (depid, deps). s → SEND; r → copy RECV; rcs → RECV → SEND; rrc → reduce RECV → COMP;
 *    rrs and rrcs → reduce RECV → COMP → SEND; cpy → COMP (no chunks, 0 µs); re → COMP
 *    (a run of consecutive re steps with the same destination, the later ones without a
 *    cross-tb dependency, is one COMP, as MSCCL fuses them); nop → no node: it is folded
 *    away and whoever depends on it depends on its dependencies instead (a nop costs
 *    nothing in the runtimes, a COMP would cost 1 ns). Reductions take opts->comp_us.
 *    A COMP of a re also depends directly on the RECV that brought its operand (that RECV
 *    becomes a reduce RECV), as the verifier's model requires.
 *  - Node ids per rank: tb id order, then step order, then RECV < COMP < SEND in a step.
 *    A node's dependencies are listed previous step first, then its cross-tb one, with a
 *    folded nop replaced in place by its own dependencies (duplicates dropped), then the
 *    RECVs a re reduces.
 *  - Pairing: the k-th send from a to b on channel c pairs with the k-th receive at b from
 *    a on channel c (a (peer, channel) belongs to one tb per direction). Tags: the k-th
 *    message of a connection on channel c gets tag k * nch + c, nch being the highest
 *    channel used + 1, so a tag encodes (channel, order) one-to-one within each pair (a
 *    one-channel file numbers each pair's messages 0, 1, 2, ...). A step may carry
 *    tenet's optional tag="N" attribute (written by the exporter, ignored by the MSCCL
 *    runtimes): then both sides must carry the same N and it is the tag.
 *  - Bookkeeping: the buffers are executed symbolically in a topological order of the
 *    whole DAG; a SEND lists the chunk ids its source slots hold, a RECV its send's list,
 *    a COMP the chunks it reduces. rrs is modelled as updating its source slot (the runtime
 *    sends src+recv without storing it): equivalent whenever that slot is overwritten
 *    before being read again, as in every ring All-Reduce. At the end every output slot
 *    must hold the chunk the collective puts there.
 * Errors name "file:line: gpu G tb T step S: ..." (TN_PARSE); sizes too small for the
 * chunk count are TN_INVAL. */
#include "emit/emit.h"

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ten/ten.h"

#define NONE UINT32_MAX
#define MAX_CHUNKS (1u << 20) /* per buffer: far beyond any runtime's limit */

typedef enum { OP_S, OP_R, OP_RCS, OP_RRC, OP_RRS, OP_RRCS, OP_CPY, OP_RE, OP_NOP } mop_t;
static const char *const op_names[] = {"s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re", "nop"};

enum { BUF_I = 0, BUF_O = 1, BUF_S = 2 };
enum { K_SEND, K_RECV, K_COMP, K_VIRT };

typedef struct mstep {
  uint8_t op;             /* mop_t */
  uint8_t srcbuf, dstbuf; /* BUF_* */
  int32_t srcoff, dstoff, cnt, depid, deps, s;
  int32_t tag; /* tenet's optional tag="..." (exact round trip), -1 when absent */
  long line;
  uint32_t tb;   /* index into tbs */
  uint32_t last; /* internal node that completes the step */
} mstep_t;

typedef struct mtb {
  int32_t id, send, recv, chan;
  long line;
  uint32_t gpu;
  uint32_t step_off, nsteps;
  uint32_t node_first, node_end; /* its nodes (created tb by tb) */
} mtb_t;

typedef struct mgpu {
  int32_t ic, oc, sc;
  uint32_t tb_off, ntbs;    /* tbs sorted by id, ids 0..ntbs-1 */
  uint32_t loc_base, nlocs; /* slots i, o, s after aliasing */
  uint32_t o_base, s_base;
} mgpu_t;

typedef struct inode {
  uint8_t kind;
  bool reduce;
  uint16_t ndeps; /* static deps (internal indices): at most 2 */
  uint32_t gpu, step;
  uint32_t dep_off;
  uint32_t extra; /* head of extra-deps list or NONE */
  uint32_t partner;
  uint32_t chunk_off, nchunks;
  int32_t tag;
  uint32_t id;
  uint64_t bytes;
} inode_t; /* its peer is its tb's send or recv peer; a COMP's duration follows its op */

typedef struct extra_dep {
  uint32_t dep, next;
} extra_dep_t;

typedef struct imp {
  const char *what;
  uint64_t size;
  uint64_t comp_us;
  tn_coll_t coll;
  bool inplace;
  uint32_t n, K;
  uint32_t algo_k; /* chunks per NPU of the algo_t: K, or n K for All-to-All (algo.h) */
  uint64_t space;  /* what those chunks divide (tn_coll_space) */
  mgpu_t *gpus;
  tn_vec_t tbs, steps;  /* mtb_t, mstep_t */
  tn_vec_t nodes, deps; /* inode_t, uint32_t */
  tn_vec_t extras;      /* extra_dep_t */
  tn_vec_t chunks;      /* uint32_t */
  uint32_t *content;    /* per global slot: chunk id or NONE */
  uint32_t *producer;   /* per global slot: node that wrote it or NONE */
  uint32_t nslots;
} imp_t;

#define TB(I, k) TN_VEC_AT(&(I)->tbs, mtb_t, k)
#define ST(I, k) TN_VEC_AT(&(I)->steps, mstep_t, k)
#define ND(I, k) TN_VEC_AT(&(I)->nodes, inode_t, k)

/* Appends x to a uint32_t pool (inline when it has room). */
static inline tn_status_t push_u32(tn_vec_t *v, uint32_t x, tn_err_t *err) {
  if (v->len == v->cap) return tn_vec_push(v, &x, err);
  ((uint32_t *)v->data)[v->len++] = x;
  return TN_OK;
}

/* ---- errors ------------------------------------------------------------- */

/* Formats a step error into err. */
static tn_status_t serr(const imp_t *I, tn_err_t *err, uint32_t si, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static tn_status_t serr(const imp_t *I, tn_err_t *err, uint32_t si, const char *fmt, ...) {
  const mstep_t *st = &ST(I, si);
  const mtb_t *tb = &TB(I, st->tb);
  char where[600];
  snprintf(where, sizeof where, "%s:%ld: gpu %u tb %d step %d", I->what, st->line, tb->gpu, tb->id,
           st->s);
  va_list ap;
  va_start(ap, fmt);
  tn_status_t rc = tn_err_set_at(err, TN_PARSE, where, fmt, ap);
  va_end(ap);
  return rc;
}

/* ---- attribute parsing ------------------------------------------------------ */

/* The XML is read with libxml2's SAX2 interface: no tree is built and attribute values
 * are parsed in place. Element and attribute names are recognised by pointer: libxml2
 * interns every name it parses in the parser's dictionary, so the names this importer
 * knows are looked up in that dictionary once (parse_xml) and each attribute of an
 * element is matched by comparing pointers, in one pass over the attributes. */

enum {
  A_S,
  A_TYPE,
  A_SRCBUF,
  A_SRCOFF,
  A_DSTBUF,
  A_DSTOFF,
  A_CNT,
  A_DEPID,
  A_DEPS,
  A_HASDEP,
  A_TAG,
  A_ID,
  A_SEND,
  A_RECV,
  A_CHAN,
  A_I_CHUNKS,
  A_O_CHUNKS,
  A_S_CHUNKS,
  A_NGPUS,
  A_COLL,
  A_INPLACE,
  A_COUNT
};
static const char *const attr_names[A_COUNT] = {
    "s",     "type",     "srcbuf",   "srcoff",   "dstbuf", "dstoff", "cnt",
    "depid", "deps",     "hasdep",   "tag",      "id",     "send",   "recv",
    "chan",  "i_chunks", "o_chunks", "s_chunks", "ngpus",  "coll",   "inplace"};

/* The known attributes of one element: value and length of each one present. */
typedef struct attrs {
  uint32_t present; /* bit A_x */
  long line;
  const char *v[A_COUNT];
  uint32_t len[A_COUNT];
} attrs_t;

/* Names the element in messages; formatted only when an error is reported. */
typedef struct where {
  int level; /* 0 algo, 1 gpu, 2 tb, 3 step */
  int64_t gpu, tb, step;
} where_t;

static const char *fmt_where(const where_t *w, char *buf, size_t len) {
  if (w->level == 0)
    snprintf(buf, len, "algo");
  else if (w->level == 1)
    snprintf(buf, len, w->gpu < 0 ? "gpu" : "gpu %lld", (long long)w->gpu);
  else if (w->level == 2 && w->tb < 0)
    snprintf(buf, len, "gpu %lld tb", (long long)w->gpu);
  else if (w->level == 2)
    snprintf(buf, len, "gpu %lld tb %lld", (long long)w->gpu, (long long)w->tb);
  else if (w->step < 0)
    snprintf(buf, len, "gpu %lld tb %lld step", (long long)w->gpu, (long long)w->tb);
  else
    snprintf(buf, len, "gpu %lld tb %lld step %lld", (long long)w->gpu, (long long)w->tb,
             (long long)w->step);
  return buf;
}

static bool attr_get(const attrs_t *a, int id, const char **val, size_t *len) {
  if (!(a->present >> id & 1u)) return false;
  *val = a->v[id];
  *len = a->len[id];
  return true;
}

/* Decimal integer with an optional '-', at most 12 digits. */
static inline bool parse_int(const char *s, size_t len, int64_t *out) {
  size_t k = len > 0 && s[0] == '-';
  if (k >= len || len - k > 12) return false;
  int64_t val = 0;
  for (; k < len; k++) {
    unsigned dig = (unsigned)(unsigned char)s[k] - '0';
    if (dig > 9) return false;
    val = val * 10 + (int64_t)dig;
  }
  *out = s[0] == '-' ? -val : val;
  return true;
}

/* The message for an attribute attr_int rejects (kept out of the fast path). */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static tn_status_t
attr_bad(const imp_t *I, const attrs_t *a, int id, int64_t min, int64_t max, const where_t *wh,
         tn_err_t *err) {
  char where[96];
  if (!(a->present >> id & 1u))
    return tn_err_set(err, TN_PARSE, "%s:%ld: %s: missing attribute '%s'", I->what, a->line,
                      fmt_where(wh, where, sizeof where), attr_names[id]);
  size_t len = a->len[id];
  return tn_err_set(err, TN_PARSE,
                    "%s:%ld: %s: attribute %s=\"%.*s\" is not an integer in "
                    "[%lld, %lld]",
                    I->what, a->line, fmt_where(wh, where, sizeof where), attr_names[id],
                    (int)(len > 40 ? 40 : len), a->v[id], (long long)min, (long long)max);
}

/* Attribute id as an integer in [min, max]; def when absent and not required. */
static inline tn_status_t attr_int(const imp_t *I, const attrs_t *a, int id, bool required,
                                   int64_t def, int64_t min, int64_t max, int64_t *out,
                                   const where_t *wh, tn_err_t *err) {
  int64_t val = def;
  if (a->present >> id & 1u) {
    if (parse_int(a->v[id], a->len[id], &val) && val >= min && val <= max) {
      *out = val;
      return TN_OK;
    }
  } else if (!required) {
    *out = def;
    return TN_OK;
  }
  return attr_bad(I, a, id, min, max, wh, err);
}

static bool attr_is(const char *s, size_t len, const char *want) {
  return strlen(want) == len && memcmp(s, want, len) == 0;
}

static int parse_buf(const attrs_t *a, int id) {
  const char *s = NULL;
  size_t len = 0;
  if (!attr_get(a, id, &s, &len)) return -1;
  if (len == 1) return s[0] == 'i' ? BUF_I : s[0] == 'o' ? BUF_O : s[0] == 's' ? BUF_S : -2;
  if (attr_is(s, len, "input")) return BUF_I;
  if (attr_is(s, len, "output")) return BUF_O;
  if (attr_is(s, len, "scratch")) return BUF_S;
  return -2;
}

/* The op named by type="...", or -1. */
static int parse_op(const char *s, size_t len) {
  if (len == 1) return s[0] == 's' ? OP_S : s[0] == 'r' ? OP_R : -1;
  if (len == 2) return s[0] == 'r' && s[1] == 'e' ? OP_RE : -1;
  if (len == 4) return memcmp(s, "rrcs", 4) == 0 ? OP_RRCS : -1;
  if (len != 3) return -1;
  static const mop_t three[] = {OP_RCS, OP_RRC, OP_RRS, OP_CPY, OP_NOP};
  for (size_t k = 0; k < sizeof three / sizeof *three; k++)
    if (memcmp(s, op_names[three[k]], 3) == 0) return (int)three[k];
  return -1;
}

static tn_status_t parse_step(imp_t *I, attrs_t *x, uint32_t tbi, int64_t gpu, int64_t tb,
                              tn_err_t *err) {
  mstep_t st = {0};
  st.tb = tbi;
  st.line = x->line;
  st.last = NONE;
  int64_t v = 0;
  tn_status_t rc = TN_OK;
  where_t wh = {3, gpu, tb, -1};
  char w[96];
  if ((rc = attr_int(I, x, A_S, true, 0, 0, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  st.s = (int32_t)v;
  wh.step = v;
  const char *type = NULL;
  size_t tlen = 0;
  if (!attr_get(x, A_TYPE, &type, &tlen))
    return tn_err_set(err, TN_PARSE, "%s:%ld: %s: missing attribute 'type'", I->what, st.line,
                      fmt_where(&wh, w, sizeof w));
  int op = tlen ? parse_op(type, tlen) : -1;
  if (op < 0)
    return tn_err_set(err, TN_PARSE,
                      "%s:%ld: %s: unknown op type '%.*s' (known: s r rcs rrc rrs rrcs cpy re "
                      "nop)",
                      I->what, st.line, fmt_where(&wh, w, sizeof w), (int)(tlen > 20 ? 20 : tlen),
                      type);
  st.op = (uint8_t)op;
  bool nop = st.op == OP_NOP;
  if ((rc = attr_int(I, x, A_SRCOFF, !nop, -1, -1, MAX_CHUNKS, &v, &wh, err)) != TN_OK) return rc;
  st.srcoff = (int32_t)v;
  if ((rc = attr_int(I, x, A_DSTOFF, !nop, -1, -1, MAX_CHUNKS, &v, &wh, err)) != TN_OK) return rc;
  st.dstoff = (int32_t)v;
  if ((rc = attr_int(I, x, A_CNT, !nop, 0, nop ? -1 : 1, MAX_CHUNKS, &v, &wh, err)) != TN_OK)
    return rc;
  st.cnt = (int32_t)v;
  if ((rc = attr_int(I, x, A_DEPID, false, -1, -1, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  st.depid = (int32_t)v;
  if ((rc = attr_int(I, x, A_DEPS, false, -1, -1, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  st.deps = (int32_t)v;
  if ((rc = attr_int(I, x, A_HASDEP, false, 0, 0, 1, &v, &wh, err)) != TN_OK) return rc;
  if ((rc = attr_int(I, x, A_TAG, false, -1, 0, ALGO_MAX_TAG, &v, &wh, err)) != TN_OK) return rc;
  st.tag = (int32_t)v;
  if ((st.depid < 0) != (st.deps < 0))
    return tn_err_set(err, TN_PARSE, "%s:%ld: %s: depid and deps must both be -1 or both set",
                      I->what, st.line, fmt_where(&wh, w, sizeof w));
  const char *bn[2] = {"srcbuf", "dstbuf"};
  uint8_t *bv[2] = {&st.srcbuf, &st.dstbuf};
  for (int k = 0; k < 2; k++) {
    int r = parse_buf(x, k ? A_DSTBUF : A_SRCBUF);
    if (r == -1 && nop) r = BUF_I;
    if (r < 0)
      return tn_err_set(err, TN_PARSE, "%s:%ld: %s: %s must be i, o or s", I->what, st.line,
                        fmt_where(&wh, w, sizeof w), bn[k]);
    *bv[k] = (uint8_t)r;
  }
  if (I->steps.len == I->steps.cap) return tn_vec_push(&I->steps, &st, err);
  TN_VEC_AT(&I->steps, mstep_t, I->steps.len++) = st;
  return TN_OK;
}

static int cmp_tb(const void *a, const void *b) {
  const mtb_t *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

typedef struct sax {
  imp_t *I;
  tn_err_t *err;
  xmlParserCtxt *ctxt;
  tn_status_t rc;
  int depth; /* elements open: 1 algo, 2 gpu, 3 tb, 4 step, more = error */
  bool *seen;
  uint32_t count, gid;
  mtb_t tb;
  bool algo_seen;
  int64_t inplace;
  char xml_msg[200]; /* libxml2's first error */
  int xml_line;
  const xmlChar *elem[4];        /* "algo" "gpu" "tb" "step" in the parser's dictionary */
  const xmlChar *aname[A_COUNT]; /* attr_names in the parser's dictionary */
  uint8_t guess[16];             /* per attribute position: the name last seen there */
} sax_t;

/* Fills a with the known attributes of one element. Files list attributes in a fixed
 * order, so the name last seen at the same position is tried first. Prefixed and
 * unknown attributes are skipped. */
static void collect(sax_t *S, const xmlChar **attr, int nattr, attrs_t *a) {
  a->present = 0;
  for (int k = 0; k < nattr; k++) {
    const xmlChar **t = attr + 5 * k;
    if (t[1] != NULL) continue;
    int id = k < 16 ? S->guess[k] : 0;
    if (S->aname[id] != t[0]) {
      for (id = 0; id < A_COUNT && S->aname[id] != t[0]; id++)
        ;
      if (id == A_COUNT) continue;
      if (k < 16) S->guess[k] = (uint8_t)id;
    }
    a->present |= 1u << id;
    a->v[id] = (const char *)t[3];
    a->len[id] = (uint32_t)(t[4] - t[3]);
  }
}

static tn_status_t start_algo(sax_t *S, attrs_t *a) {
  imp_t *I = S->I;
  tn_err_t *err = S->err;
  int64_t v = 0;
  tn_status_t rc;
  const where_t wh = {0, -1, -1, -1};
  if ((rc = attr_int(I, a, A_NGPUS, true, 0, 1, TOPO_MAX_NPUS, &v, &wh, err)) != TN_OK) return rc;
  I->n = (uint32_t)v;
  const char *cs = NULL;
  size_t cl = 0;
  if (!attr_get(a, A_COLL, &cs, &cl))
    return tn_err_set(err, TN_PARSE, "%s:%ld: algo: missing attribute 'coll'", I->what, a->line);
  if (attr_is(cs, cl, "allgather"))
    I->coll = TN_ALLGATHER;
  else if (attr_is(cs, cl, "allreduce"))
    I->coll = TN_ALLREDUCE;
  else if (attr_is(cs, cl, "reduce_scatter") || attr_is(cs, cl, "reducescatter"))
    I->coll = TN_REDUCESCATTER;
  else if (attr_is(cs, cl, "alltoall") || attr_is(cs, cl, "all_to_all"))
    I->coll = TN_ALLTOALL;
  else
    return tn_err_set(err, TN_PARSE,
                      "%s:%ld: algo: collective '%.*s' is not supported "
                      "(allgather, allreduce, reduce_scatter, alltoall)",
                      I->what, a->line, (int)(cl > 40 ? 40 : cl), cs);
  if ((rc = attr_int(I, a, A_INPLACE, false, -1, 0, 1, &S->inplace, &wh, err)) != TN_OK) return rc;
  if ((rc = tn_calloc(I->n, sizeof *I->gpus, &I->gpus, err)) != TN_OK) return rc;
  return tn_calloc(I->n, sizeof *S->seen, &S->seen, err);
}

static tn_status_t start_gpu(sax_t *S, attrs_t *a) {
  imp_t *I = S->I;
  tn_err_t *err = S->err;
  int64_t v = 0;
  tn_status_t rc;
  where_t wh = {1, -1, -1, -1};
  if ((rc = attr_int(I, a, A_ID, true, 0, 0, (int64_t)I->n - 1, &v, &wh, err)) != TN_OK) return rc;
  if (S->seen[v])
    return tn_err_set(err, TN_PARSE, "%s:%ld: gpu %lld appears twice", I->what, a->line,
                      (long long)v);
  S->seen[v] = true;
  S->count++;
  S->gid = (uint32_t)v;
  mgpu_t *G = &I->gpus[v];
  wh.gpu = S->gid;
  if ((rc = attr_int(I, a, A_I_CHUNKS, true, 0, 0, MAX_CHUNKS, &v, &wh, err)) != TN_OK) return rc;
  G->ic = (int32_t)v;
  if ((rc = attr_int(I, a, A_O_CHUNKS, true, 0, 0, MAX_CHUNKS, &v, &wh, err)) != TN_OK) return rc;
  G->oc = (int32_t)v;
  if ((rc = attr_int(I, a, A_S_CHUNKS, false, 0, 0, MAX_CHUNKS, &v, &wh, err)) != TN_OK) return rc;
  G->sc = (int32_t)v;
  G->tb_off = (uint32_t)I->tbs.len;
  return TN_OK;
}

static tn_status_t start_tb(sax_t *S, attrs_t *a) {
  imp_t *I = S->I;
  tn_err_t *err = S->err;
  int64_t v = 0;
  tn_status_t rc;
  mtb_t tb = {0};
  char tw[96];
  where_t wh = {2, S->gid, -1, -1};
  tb.gpu = S->gid;
  tb.line = a->line;
  if ((rc = attr_int(I, a, A_ID, true, 0, 0, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  tb.id = (int32_t)v;
  wh.tb = v;
  if ((rc = attr_int(I, a, A_SEND, true, 0, -1, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  tb.send = (int32_t)v;
  if ((rc = attr_int(I, a, A_RECV, true, 0, -1, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  tb.recv = (int32_t)v;
  if ((rc = attr_int(I, a, A_CHAN, false, 0, 0, INT32_MAX, &v, &wh, err)) != TN_OK) return rc;
  tb.chan = (int32_t)v;
  for (int32_t p = tb.send, k = 0; k < 2; k++, p = tb.recv)
    if (p >= (int32_t)I->n || p == (int32_t)S->gid)
      return tn_err_set(err, TN_PARSE, "%s:%ld: %s: %s peer %d is out of range or itself", I->what,
                        tb.line, fmt_where(&wh, tw, sizeof tw), k ? "recv" : "send", p);
  tb.step_off = (uint32_t)I->steps.len;
  S->tb = tb;
  return TN_OK;
}

/* End of a gpu: tbs sorted by id (ids 0..T-1), steps pointed at their tb's new index. */
static tn_status_t end_gpu(sax_t *S) {
  imp_t *I = S->I;
  mgpu_t *G = &I->gpus[S->gid];
  G->ntbs = (uint32_t)(I->tbs.len - G->tb_off);
  mtb_t *tbs = G->ntbs ? &TB(I, G->tb_off) : NULL;
  if (G->ntbs) qsort(tbs, G->ntbs, sizeof *tbs, cmp_tb);
  for (uint32_t k = 0; k < G->ntbs; k++) {
    if (tbs[k].id != (int32_t)k)
      return tn_err_set(S->err, TN_PARSE,
                        "%s:%ld: gpu %u tb %d: tb ids must be 0..%u, each "
                        "once",
                        I->what, tbs[k].line, S->gid, tbs[k].id, G->ntbs - 1);
    for (uint32_t j = 0; j < tbs[k].nsteps; j++)
      ST(I, tbs[k].step_off + j).tb = G->tb_off + k;
  }
  return TN_OK;
}

static void on_start(void *ctx, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri,
                     int nns, const xmlChar **ns, int nattr, int ndef, const xmlChar **attr) {
  (void)prefix, (void)uri, (void)nns, (void)ns, (void)ndef;
  sax_t *S = ctx;
  if (S->rc != TN_OK) return;
  imp_t *I = S->I;
  attrs_t a;
  a.line = (long)xmlSAX2GetLineNumber(S->ctxt);
  const char *n = (const char *)name;
  static const char *const where[] = {"document", "algo", "gpu", "tb", "step"};
  int d = S->depth;
  tn_status_t rc = TN_OK;
  if (d < 4 && name == S->elem[d]) collect(S, attr, nattr, &a);
  if (d >= 4 || name != S->elem[d]) {
    if (d == 0)
      rc = tn_err_set(S->err, TN_PARSE, "%s: the root element must be <algo>, not <%.40s>", I->what,
                      n);
    else
      rc = tn_err_set(S->err, TN_PARSE, "%s:%ld: unexpected element <%.40s> inside <%s>%s", I->what,
                      a.line, n, where[d], d < 4 ? " (see the MSCCL-IR layout)" : "");
  } else if (d == 0) {
    S->algo_seen = true;
    rc = start_algo(S, &a);
  } else if (d == 1) {
    rc = start_gpu(S, &a);
  } else if (d == 2) {
    rc = start_tb(S, &a);
  } else {
    rc = parse_step(I, &a, (uint32_t)I->tbs.len, S->gid, S->tb.id, S->err);
    if (rc == TN_OK) {
      const mstep_t *st = &ST(I, I->steps.len - 1);
      if (st->s != (int32_t)(I->steps.len - 1 - S->tb.step_off))
        rc = tn_err_set(S->err, TN_PARSE,
                        "%s:%ld: gpu %u tb %d step %d: steps must be "
                        "numbered 0, 1, 2, ... in order",
                        I->what, st->line, S->gid, S->tb.id, st->s);
    }
  }
  S->depth++;
  if (rc != TN_OK) {
    S->rc = rc;
    xmlStopParser(S->ctxt);
  }
}

static void on_end(void *ctx, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri) {
  (void)name, (void)prefix, (void)uri;
  sax_t *S = ctx;
  if (S->rc != TN_OK) return;
  tn_status_t rc = TN_OK;
  if (S->depth == 3) { /* </tb> */
    S->tb.nsteps = (uint32_t)(S->I->steps.len - S->tb.step_off);
    rc = tn_vec_push(&S->I->tbs, &S->tb, S->err);
  } else if (S->depth == 2) { /* </gpu> */
    rc = end_gpu(S);
  }
  S->depth--;
  if (rc != TN_OK) {
    S->rc = rc;
    xmlStopParser(S->ctxt);
  }
}

/* libxml2 2.12 made the structured error callback's error const. */
#if LIBXML_VERSION >= 21200
static void on_xml_error(void *ctx, const xmlError *e) {
#else
static void on_xml_error(void *ctx, xmlError *e) {
#endif
  sax_t *S = ctx;
  if (S->xml_msg[0] || e == NULL) return;
  /* libxml2's messages end in a newline and may span lines: fold them into ours. */
  tn_fit_line(S->xml_msg, sizeof S->xml_msg, e->message ? e->message : "not well-formed");
  S->xml_line = e->line;
}

/* Parses the document into I's gpus, tbs and steps. */
static tn_status_t parse_xml(imp_t *I, const char *xml, size_t len, tn_err_t *err) {
  sax_t S = {0};
  S.I = I;
  S.err = err;
  S.inplace = -1;
  if (len == 0) return tn_err_set(err, TN_PARSE, "%s:1: malformed XML: the file is empty", I->what);
  if (len > INT_MAX)
    return tn_err_set(err, TN_PARSE, "%s: the file is too large for the XML parser", I->what);
  /* Our own SAX handler only (no tree), through the public push-parser API. */
  xmlSAXHandler h;
  memset(&h, 0, sizeof h);
  h.initialized = XML_SAX2_MAGIC;
  h.startElementNs = on_start;
  h.endElementNs = on_end;
  h.serror = on_xml_error;
  xmlParserCtxt *ctxt = xmlCreatePushParserCtxt(&h, &S, NULL, 0, I->what);
  if (ctxt == NULL) return tn_err_set(err, TN_NOMEM, "%s: cannot create an XML parser", I->what);
  S.ctxt = ctxt;
  xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  static const char *const elems[4] = {"algo", "gpu", "tb", "step"};
  bool interned = true;
  for (int k = 0; k < 4; k++)
    interned &= (S.elem[k] = xmlDictLookup(ctxt->dict, (const xmlChar *)elems[k], -1)) != NULL;
  for (int k = 0; k < A_COUNT; k++)
    interned &=
        (S.aname[k] = xmlDictLookup(ctxt->dict, (const xmlChar *)attr_names[k], -1)) != NULL;
  tn_status_t rc = interned ? TN_OK : tn_err_set(err, TN_NOMEM, "%s: out of memory", I->what);
  /* A step element takes about 100 bytes in the files the tools write. */
  if (rc == TN_OK) rc = tn_vec_reserve_exact(&I->steps, len / 100 + 16, err);
  if (rc == TN_OK) {
    /* In pieces: one chunk of the whole file trips libxml2's "huge input lookup" limit
     * (10 MB) that keeps its other safeguards on; a 128-NPU export is larger. */
    const size_t piece = (size_t)1 << 16;
    for (size_t at = 0; at < len && S.rc == TN_OK && ctxt->wellFormed; at += piece) {
      size_t n = len - at < piece ? len - at : piece;
      xmlParseChunk(ctxt, xml + at, (int)n, at + n == len);
    }
    rc = S.rc;
  }
  if (rc == TN_OK && !ctxt->wellFormed)
    rc = tn_err_set(err, TN_PARSE, "%s:%d: malformed XML: %s", I->what, S.xml_line,
                    S.xml_msg[0] ? S.xml_msg : "not well-formed");
  if (rc == TN_OK && !S.algo_seen)
    rc = tn_err_set(err, TN_PARSE, "%s: the root element must be <algo>", I->what);
  if (rc == TN_OK && S.count != I->n)
    rc = tn_err_set(err, TN_PARSE, "%s: algo: ngpus=%u but %u <gpu> elements", I->what, I->n,
                    S.count);
  if (rc == TN_OK) {
    /* In place unless said otherwise or both buffers are declared in full. */
    const mgpu_t *G0 = &I->gpus[0];
    I->inplace = S.inplace >= 0 ? S.inplace == 1 : (G0->ic == 0 || G0->oc == 0);
  }
  free(S.seen);
  xmlFreeParserCtxt(ctxt);
  return rc;
}

/* ---- buffers -------------------------------------------------------------- */

/* Lays out every gpu's slots (i, o, s after aliasing) and fixes K. */
static tn_status_t layout(imp_t *I, tn_err_t *err) {
  const mgpu_t *G0 = &I->gpus[0];
  int32_t whole = I->coll == TN_ALLGATHER ? G0->oc : G0->ic;
  const char *wn = I->coll == TN_ALLGATHER ? "o_chunks" : "i_chunks";
  if (whole <= 0 || (uint32_t)whole % I->n != 0)
    return tn_err_set(err, TN_PARSE,
                      "%s: gpu 0: %s=%d must be a positive multiple of ngpus=%u "
                      "(the %s buffer holds every NPU's chunks)",
                      I->what, wn, whole, I->n, I->coll == TN_ALLGATHER ? "output" : "input");
  I->K = (uint32_t)whole / I->n;
  if (I->coll == TN_ALLTOALL && I->inplace)
    return tn_err_set(err, TN_PARSE,
                      "%s: an in-place alltoall is not supported (declare o_chunks=%d and "
                      "inplace=\"0\")",
                      I->what, whole);
  uint64_t base = 0;
  for (uint32_t g = 0; g < I->n; g++) {
    mgpu_t *G = &I->gpus[g];
    int32_t gw = I->coll == TN_ALLGATHER ? G->oc : G->ic;
    if (gw != whole)
      return tn_err_set(err, TN_PARSE, "%s: gpu %u: %s=%d differs from gpu 0's %d", I->what, g, wn,
                        gw, whole);
    /* The other buffer: one NPU's share (AG input, RS output: K slots) or, for All-Reduce,
     * the whole result; none when in place (it aliases the collective's buffer). Its
     * declared size must be what slot_of will index. */
    uint32_t whole_n = I->n * I->K;
    bool whole_out = I->coll == TN_ALLREDUCE || I->coll == TN_ALLTOALL;
    uint32_t other = whole_out ? whole_n : I->K;
    int32_t declared = I->coll == TN_ALLGATHER ? G->ic : G->oc;
    if (!I->inplace && declared != (int32_t)other)
      return tn_err_set(err, TN_PARSE, "%s: gpu %u: an out-of-place %s needs %s=%u (%s), not %d",
                        I->what, g, tn_coll_name(I->coll),
                        I->coll == TN_ALLGATHER ? "i_chunks" : "o_chunks", other,
                        whole_out ? "the whole buffer" : "one NPU's share", declared);
    uint32_t ni = I->coll == TN_ALLGATHER ? (I->inplace ? 0 : other) : whole_n;
    uint32_t no = I->coll == TN_ALLGATHER ? whole_n : (I->inplace ? 0 : other);
    G->loc_base = (uint32_t)base;
    G->o_base = ni;
    G->s_base = ni + no;
    G->nlocs = ni + no + (uint32_t)G->sc;
    base += G->nlocs;
    if (base > UINT32_MAX / 2) return tn_err_set(err, TN_LIMIT, "%s: buffers too large", I->what);
  }
  I->nslots = (uint32_t)base;
  tn_status_t rc = tn_calloc(I->nslots ? I->nslots : 1, sizeof *I->content, &I->content, err);
  if (rc == TN_OK)
    rc = tn_calloc(I->nslots ? I->nslots : 1, sizeof *I->producer, &I->producer, err);
  if (rc != TN_OK) return rc;
  for (uint32_t k = 0; k < I->nslots; k++)
    I->content[k] = I->producer[k] = NONE;
  return TN_OK;
}

/* Global slot of (gpu, buf, off) for cnt chunks; range-checked. */
static tn_status_t slot_of(const imp_t *I, tn_err_t *err, uint32_t si, uint32_t g, int32_t buf,
                           int32_t off, int32_t cnt, uint32_t *out) {
  const mgpu_t *G = &I->gpus[g];
  const char *bn = buf == BUF_I ? "i" : buf == BUF_O ? "o" : "s";
  int64_t size = 0, start = 0;
  uint32_t whole_base = I->coll == TN_ALLGATHER ? G->o_base : 0;
  bool share_buf =
      (I->coll == TN_ALLGATHER && buf == BUF_I) || (I->coll == TN_REDUCESCATTER && buf == BUF_O);
  if (buf == BUF_S) {
    size = G->sc, start = G->s_base;
  } else if (share_buf) {
    size = I->K;
    start = I->inplace ? (int64_t)whole_base + (int64_t)g * I->K : (buf == BUF_I ? 0 : G->o_base);
  } else if ((I->coll == TN_ALLREDUCE || I->coll == TN_ALLTOALL) && buf == BUF_O) {
    size = (int64_t)I->n * I->K;
    start = I->inplace ? 0 : G->o_base;
  } else {
    size = (int64_t)I->n * I->K;
    start = whole_base;
  }
  if (off < 0 || cnt < 1 || (int64_t)off + cnt > size)
    return serr(I, err, si, "%s[%d..%d) is out of range (buffer %s holds %lld chunks)", bn, off,
                off + cnt, bn, (long long)size);
  *out = G->loc_base + (uint32_t)(start + off);
  return TN_OK;
}

static void init_content(imp_t *I) {
  for (uint32_t g = 0; g < I->n; g++) {
    const mgpu_t *G = &I->gpus[g];
    if (I->coll == TN_ALLGATHER) {
      uint32_t at = I->inplace ? G->o_base + g * I->K : 0;
      for (uint32_t j = 0; j < I->K; j++)
        I->content[G->loc_base + at + j] = g * I->K + j;
    } else {
      /* All-to-All: input slot d K + j of gpu g is g's piece j for d, chunk g n K + d K + j
       * (algo.h); the others' buffers are the collective's, slot c chunk c. */
      uint32_t first = I->coll == TN_ALLTOALL ? g * I->n * I->K : 0;
      for (uint32_t c = 0; c < I->n * I->K; c++)
        I->content[G->loc_base + c] = first + c;
    }
  }
}

/* ---- nodes ----------------------------------------------------------------- */

/* Appends a node depending on dep (none when NONE); *idx receives its index. */
static inline tn_status_t add_node(imp_t *I, uint8_t kind, uint32_t g, uint32_t si, uint32_t dep,
                                   uint32_t *idx, tn_err_t *err) {
  tn_status_t rc = TN_OK;
  if (I->nodes.len >= UINT32_MAX / 2)
    return tn_err_set(err, TN_LIMIT, "%s: too many steps", I->what);
  if (I->nodes.len == I->nodes.cap &&
      (rc = tn_vec_reserve(&I->nodes, I->nodes.len + 1, err)) != TN_OK)
    return rc;
  if (dep != NONE && (rc = push_u32(&I->deps, dep, err)) != TN_OK) return rc;
  inode_t *n = &ND(I, I->nodes.len);
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->gpu = g;
  n->step = si;
  n->ndeps = dep != NONE;
  n->dep_off = (uint32_t)I->deps.len - n->ndeps;
  n->extra = NONE;
  n->partner = NONE;
  *idx = (uint32_t)I->nodes.len++;
  return TN_OK;
}

/* The peer of a SEND or RECV: its tb's send or recv peer. */
static int32_t node_peer(const imp_t *I, const inode_t *n) {
  const mtb_t *tb = &TB(I, ST(I, n->step).tb);
  return n->kind == K_SEND ? tb->send : tb->recv;
}

/* Nodes a step of op makes (a nop makes a virtual one). */
static uint32_t nodes_of(mop_t op) {
  static const uint8_t n[] = {[OP_S] = 1,    [OP_R] = 1,   [OP_RCS] = 2, [OP_RRC] = 2, [OP_RRS] = 3,
                              [OP_RRCS] = 3, [OP_CPY] = 1, [OP_RE] = 1,  [OP_NOP] = 1};
  return n[op];
}

/* Sizes the node, dependency and chunk pools for the steps at once: at most nodes_of
 * nodes per step, one dependency per node plus the cross-tb one of its first node, and
 * (the usual case) one chunk per node; they grow if a program needs more. */
static tn_status_t reserve_pools(imp_t *I, tn_err_t *err) {
  size_t nodes = 0;
  for (size_t k = 0; k < I->steps.len; k++)
    nodes += nodes_of(ST(I, k).op);
  tn_status_t rc = tn_vec_reserve_exact(&I->nodes, nodes + 1, err);
  if (rc == TN_OK) rc = tn_vec_reserve_exact(&I->deps, nodes + I->steps.len + 1, err);
  if (rc == TN_OK) rc = tn_vec_reserve_exact(&I->chunks, nodes + 1, err);
  return rc;
}

/* The cross-tb dependency of step si: the step it names (validated). */
static tn_status_t cross_dep(const imp_t *I, tn_err_t *err, uint32_t si, uint32_t *dep_step) {
  const mstep_t *st = &ST(I, si);
  *dep_step = NONE;
  if (st->depid < 0) return TN_OK;
  const mgpu_t *G = &I->gpus[TB(I, st->tb).gpu];
  if ((uint32_t)st->depid >= G->ntbs)
    return serr(I, err, si, "depid %d names no tb of this gpu", st->depid);
  const mtb_t *dt = &TB(I, G->tb_off + (uint32_t)st->depid);
  if ((uint32_t)st->deps >= dt->nsteps)
    return serr(I, err, si, "deps %d: tb %d has only %u steps", st->deps, st->depid, dt->nsteps);
  *dep_step = dt->step_off + (uint32_t)st->deps;
  return TN_OK;
}

static bool is_send_op(mop_t op) {
  return op == OP_S || op == OP_RCS || op == OP_RRS || op == OP_RRCS;
}
static bool is_recv_op(mop_t op) {
  return op == OP_R || op == OP_RCS || op == OP_RRC || op == OP_RRS || op == OP_RRCS;
}

/* Two passes per gpu: first every step gets its nodes (so a step's `last` is known),
 * then the first node of each step gets its dependencies. Steps of a fused re run share
 * one node. A nop is a virtual node. */
static tn_status_t build_nodes(imp_t *I, tn_err_t *err) {
  tn_status_t rc = TN_OK;
  for (uint32_t g = 0; g < I->n; g++) {
    const mgpu_t *G = &I->gpus[g];
    for (uint32_t t = 0; t < G->ntbs; t++) {
      mtb_t *tb = &TB(I, G->tb_off + t);
      tb->node_first = (uint32_t)I->nodes.len;
      for (uint32_t j = 0; j < tb->nsteps; j++) {
        uint32_t si = tb->step_off + j;
        mstep_t *st = &ST(I, si);
        if (is_send_op(st->op) && tb->send < 0)
          return serr(I, err, si, "op %s sends but the tb has send=-1", op_names[st->op]);
        if (is_recv_op(st->op) && tb->recv < 0)
          return serr(I, err, si, "op %s receives but the tb has recv=-1", op_names[st->op]);
        uint32_t d = NONE, idx = NONE;
        if (st->op == OP_RE && j > 0) {
          const mstep_t *p = &ST(I, si - 1);
          if (p->op == OP_RE && st->depid < 0 && p->dstbuf == st->dstbuf &&
              p->dstoff == st->dstoff && p->cnt == st->cnt) {
            st->last = p->last;
            continue;
          }
        }
        if (is_recv_op(st->op)) {
          if ((rc = add_node(I, K_RECV, g, si, NONE, &idx, err)) != TN_OK) return rc;
          ND(I, idx).reduce = st->op == OP_RRC || st->op == OP_RRS || st->op == OP_RRCS;
          d = idx;
        }
        if (st->op == OP_RRC || st->op == OP_RRS || st->op == OP_RRCS || st->op == OP_RE ||
            st->op == OP_CPY) {
          if ((rc = add_node(I, K_COMP, g, si, d, &idx, err)) != TN_OK) return rc;
          d = idx;
        }
        if (is_send_op(st->op)) {
          if ((rc = add_node(I, K_SEND, g, si, d, &idx, err)) != TN_OK) return rc;
        }
        if (st->op == OP_NOP && (rc = add_node(I, K_VIRT, g, si, NONE, &idx, err)) != TN_OK)
          return rc;
        st->last = idx;
      }
      tb->node_end = (uint32_t)I->nodes.len;
    }
  }
  /* Dependencies of each step's first node: previous step's last, cross-tb step's last.
   * The first node is the lowest index created for the step (nodes were appended in
   * step order); fused re steps add their cross deps... they have none by construction. */
  uint32_t nn = (uint32_t)I->nodes.len;
  for (uint32_t i = 0; i < nn; i++) {
    inode_t *n = &ND(I, i);
    if (i > 0 && ND(I, i - 1).step == n->step) continue; /* not the first of its step */
    uint32_t si = n->step;
    const mstep_t *st = &ST(I, si);
    const mtb_t *tb = &TB(I, st->tb);
    uint32_t dstep = NONE;
    if ((rc = cross_dep(I, err, si, &dstep)) != TN_OK) return rc;
    uint32_t d[2] = {si > tb->step_off ? ST(I, si - 1).last : NONE,
                     dstep != NONE ? ST(I, dstep).last : NONE};
    if (d[1] != NONE && d[1] == i)
      return serr(I, err, si, "depends on itself (depid %d deps %d)", st->depid, st->deps);
    /* Static deps were stored empty for first nodes; append these now. The pool is
     * append-only, so the first node's deps go at the end. */
    n->dep_off = (uint32_t)I->deps.len;
    n->ndeps = 0;
    for (int k = 0; k < 2; k++) {
      if (d[k] == NONE) continue;
      if ((rc = push_u32(&I->deps, d[k], err)) != TN_OK) return rc;
      n->ndeps++;
    }
  }
  return TN_OK;
}

/* ---- pairing --------------------------------------------------------------- */

/* One direction of one tb's connection: (sender a, receiver b, channel) and the tb. */
typedef struct pkey {
  uint32_t a, b, chan, tb;
} pkey_t;

static int cmp_pkey(const void *x, const void *y) {
  const pkey_t *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  if (p->chan != q->chan) return p->chan < q->chan ? -1 : 1;
  return (p->tb > q->tb) - (p->tb < q->tb);
}

/* First node of kind k in tb at or after node *at (advancing *at past it), or NONE. */
static uint32_t next_of(const imp_t *I, const mtb_t *tb, uint32_t *at, uint8_t k) {
  for (; *at < tb->node_end; (*at)++)
    if (ND(I, *at).kind == k) return (*at)++;
  return NONE;
}

/* Checks that one tb per gpu owns each (peer, channel) in each direction. */
static tn_status_t check_connections(const imp_t *I, const pkey_t *keys, size_t n, bool send,
                                     tn_err_t *err) {
  for (size_t k = 1; k < n; k++) {
    if (keys[k].a != keys[k - 1].a || keys[k].b != keys[k - 1].b ||
        keys[k].chan != keys[k - 1].chan)
      continue;
    const mtb_t *tb = &TB(I, keys[k].tb);
    uint32_t at = tb->node_first, node = next_of(I, tb, &at, send ? K_SEND : K_RECV);
    return serr(I, err, ND(I, node).step,
                "tb %d also %s %u on channel %u; a (peer, channel) "
                "belongs to one tb",
                TB(I, keys[k - 1].tb).id, send ? "sends to" : "receives from",
                send ? keys[k].b : keys[k].a, keys[k].chan);
  }
  return TN_OK;
}

static tn_status_t unmatched(const imp_t *I, uint32_t node, tn_err_t *err) {
  const inode_t *n = &ND(I, node);
  uint32_t chan = (uint32_t)TB(I, ST(I, n->step).tb).chan;
  int32_t peer = node_peer(I, n);
  if (n->kind == K_SEND)
    return serr(I, err, n->step, "send to gpu %d on channel %u has no matching receive at gpu %d",
                peer, chan, peer);
  return serr(I, err, n->step, "receive from gpu %d on channel %u has no matching send at gpu %d",
              peer, chan, peer);
}

/* Pairs the k-th send of each (a, b, channel) with the k-th receive: connections are
 * matched tb to tb (sorted keys), then the two tbs' node lists are zipped. */
static tn_status_t pair(imp_t *I, tn_err_t *err) {
  size_t nt = I->tbs.len, ns = 0, nr = 0;
  pkey_t *S = NULL, *R = NULL;
  tn_status_t rc = tn_calloc(nt + 1, sizeof *S, &S, err);
  if (rc == TN_OK) rc = tn_calloc(nt + 1, sizeof *R, &R, err);
  if (rc != TN_OK) goto fail;
  for (uint32_t t = 0; t < nt; t++) {
    const mtb_t *tb = &TB(I, t);
    bool has_s = false, has_r = false;
    for (uint32_t i = tb->node_first; i < tb->node_end; i++) {
      has_s |= ND(I, i).kind == K_SEND;
      has_r |= ND(I, i).kind == K_RECV;
    }
    if (has_s) S[ns++] = (pkey_t){tb->gpu, (uint32_t)tb->send, (uint32_t)tb->chan, t};
    if (has_r) R[nr++] = (pkey_t){(uint32_t)tb->recv, tb->gpu, (uint32_t)tb->chan, t};
  }
  qsort(S, ns, sizeof *S, cmp_pkey);
  qsort(R, nr, sizeof *R, cmp_pkey);
  if ((rc = check_connections(I, S, ns, true, err)) != TN_OK) goto fail;
  if ((rc = check_connections(I, R, nr, false, err)) != TN_OK) goto fail;
  /* Tags: the k-th message of a connection on channel c gets k * nch + c (nch = highest
   * channel + 1): one-to-one with (channel, order) within each (sender, receiver) pair. */
  uint64_t nch = 1;
  for (size_t k = 0; k < ns; k++)
    if (S[k].chan + 1ull > nch) nch = S[k].chan + 1ull;
  size_t a = 0, b = 0;
  while (a < ns || b < nr) {
    int c = a == ns   ? 1
            : b == nr ? -1
                      : cmp_pkey(&(pkey_t){S[a].a, S[a].b, S[a].chan, 0},
                                 &(pkey_t){R[b].a, R[b].b, R[b].chan, 0});
    const mtb_t *ts = c <= 0 ? &TB(I, S[a].tb) : NULL, *tr = c >= 0 ? &TB(I, R[b].tb) : NULL;
    uint32_t as = ts ? ts->node_first : 0, ar = tr ? tr->node_first : 0;
    for (uint64_t order = 0;; order++) {
      uint32_t x = ts ? next_of(I, ts, &as, K_SEND) : NONE;
      uint32_t y = tr ? next_of(I, tr, &ar, K_RECV) : NONE;
      if (x == NONE && y == NONE) break;
      if (x == NONE || y == NONE) {
        rc = unmatched(I, x == NONE ? y : x, err);
        goto fail;
      }
      int32_t tx = ST(I, ND(I, x).step).tag, ty = ST(I, ND(I, y).step).tag;
      if (tx != ty) {
        rc = serr(I, err, ND(I, tx < 0 ? y : x).step,
                  "tag=\"%d\" differs from its %s's "
                  "tag=\"%d\"",
                  tx < 0 ? ty : tx, tx < 0 ? "send" : "receive", tx < 0 ? tx : ty);
        goto fail;
      }
      uint64_t tag = tx >= 0 ? (uint64_t)tx : order * nch + (uint64_t)ts->chan;
      if (tag > ALGO_MAX_TAG) {
        rc = serr(I, err, ND(I, x).step,
                  "message %llu on channel %d needs tag %llu, above "
                  "the limit %d",
                  (unsigned long long)order, ts->chan, (unsigned long long)tag, ALGO_MAX_TAG);
        goto fail;
      }
      ND(I, x).partner = y;
      ND(I, y).partner = x;
      ND(I, x).tag = ND(I, y).tag = (int32_t)tag;
    }
    a += c <= 0;
    b += c >= 0;
  }
fail:
  free(S);
  free(R);
  return rc;
}

/* ---- topological order and symbolic execution ------------------------------- */

static tn_status_t add_extra(imp_t *I, uint32_t node, uint32_t dep, tn_err_t *err) {
  extra_dep_t e = {dep, ND(I, node).extra};
  tn_status_t rc = tn_vec_push(&I->extras, &e, err);
  if (rc == TN_OK) ND(I, node).extra = (uint32_t)I->extras.len - 1;
  return rc;
}

static tn_status_t read_slots(imp_t *I, tn_err_t *err, uint32_t si, uint32_t slot, int32_t cnt,
                              const char *bn, int32_t off) {
  for (int32_t k = 0; k < cnt; k++)
    if (I->content[slot + (uint32_t)k] == NONE)
      return serr(I, err, si, "reads %s[%d] before anything was written there", bn, off + k);
  return TN_OK;
}

static const char *bufname(int32_t b) {
  return b == BUF_I ? "i" : b == BUF_O ? "o" : "s";
}

static tn_status_t set_chunks(imp_t *I, uint32_t node, const uint32_t *src, uint32_t cnt,
                              tn_err_t *err) {
  if (I->chunks.len + cnt > I->chunks.cap) {
    /* src may point into the pool itself (a RECV copies its send's list): keep its index
     * across the reallocation. */
    const uint32_t *pool = I->chunks.data;
    bool inside = pool && src >= pool && src < pool + I->chunks.len;
    size_t at = inside ? (size_t)(src - pool) : 0;
    tn_status_t rc = tn_vec_reserve(&I->chunks, I->chunks.len + cnt, err);
    if (rc != TN_OK) return rc;
    if (inside) src = (const uint32_t *)I->chunks.data + at;
  }
  inode_t *n = &ND(I, node);
  n->chunk_off = (uint32_t)I->chunks.len;
  n->nchunks = cnt;
  uint32_t *dst = (uint32_t *)I->chunks.data + I->chunks.len;
  for (uint32_t k = 0; k < cnt; k++)
    dst[k] = src[k];
  I->chunks.len += cnt;
  return TN_OK;
}

/* One node being executed: its step, gpu, slots and count. */
typedef struct xnode {
  uint32_t i, si, g, src, dst, cnt;
  const mstep_t *st;
} xnode_t;

/* s and rrs send their source; rcs and rrcs what they just stored at dst. */
static tn_status_t exec_send(imp_t *I, const xnode_t *x, tn_err_t *err) {
  const mstep_t *st = x->st;
  bool own = st->op == OP_S || st->op == OP_RRS;
  uint32_t from = own ? x->src : x->dst;
  int32_t fb = own ? st->srcbuf : st->dstbuf, fo = own ? st->srcoff : st->dstoff;
  tn_status_t rc = read_slots(I, err, x->si, from, st->cnt, bufname(fb), fo);
  if (rc == TN_OK) rc = set_chunks(I, x->i, &I->content[from], x->cnt, err);
  if (rc != TN_OK) return rc;
  uint64_t bytes = 0;
  for (uint32_t k = 0; k < x->cnt; k++)
    bytes += ten_chunk_bytes(I->space, I->n, I->algo_k, I->content[from + k]);
  ND(I, x->i).bytes = bytes;
  return TN_OK;
}

static tn_status_t exec_recv(imp_t *I, const xnode_t *x, tn_err_t *err) {
  const inode_t *s = &ND(I, ND(I, x->i).partner);
  if ((uint32_t)ST(I, s->step).cnt != x->cnt)
    return serr(I, err, x->si, "receives %u chunks but its send (gpu %u tb %d step %d) sends %d",
                x->cnt, s->gpu, TB(I, ST(I, s->step).tb).id, ST(I, s->step).s, ST(I, s->step).cnt);
  uint32_t off = s->chunk_off;
  uint64_t bytes = s->bytes;
  tn_status_t rc = set_chunks(I, x->i, &TN_VEC_AT(&I->chunks, uint32_t, off), x->cnt, err);
  if (rc != TN_OK) return rc;
  inode_t *n = &ND(I, x->i);
  n->bytes = bytes;
  if (!n->reduce) /* r, rcs: the data lands at dst */
    for (uint32_t k = 0; k < x->cnt; k++) {
      I->content[x->dst + k] = TN_VEC_AT(&I->chunks, uint32_t, n->chunk_off + k);
      I->producer[x->dst + k] = x->i;
    }
  return TN_OK;
}

static tn_status_t exec_cpy(imp_t *I, const xnode_t *x, tn_err_t *err) {
  const mstep_t *st = x->st;
  tn_status_t rc = read_slots(I, err, x->si, x->src, st->cnt, bufname(st->srcbuf), st->srcoff);
  if (rc != TN_OK) return rc;
  memmove(&I->content[x->dst], &I->content[x->src], x->cnt * sizeof *I->content);
  memmove(&I->producer[x->dst], &I->producer[x->src], x->cnt * sizeof *I->producer);
  return TN_OK;
}

/* re: every step of the fused run adds its source to dst; the RECVs that filled the
 * sources become reduce RECVs this COMP depends on. */
static tn_status_t exec_re(imp_t *I, const xnode_t *x, tn_err_t *err) {
  const mstep_t *st = x->st;
  const mtb_t *tb = &TB(I, st->tb);
  uint32_t i = x->i, dst = x->dst, src = 0;
  tn_status_t rc = read_slots(I, err, x->si, dst, st->cnt, bufname(st->dstbuf), st->dstoff);
  for (uint32_t sj = x->si; rc == TN_OK && sj < tb->step_off + tb->nsteps && ST(I, sj).last == i;
       sj++) {
    const mstep_t *rs = &ST(I, sj);
    if ((rc = slot_of(I, err, sj, x->g, rs->srcbuf, rs->srcoff, rs->cnt, &src)) != TN_OK ||
        (rc = read_slots(I, err, sj, src, rs->cnt, bufname(rs->srcbuf), rs->srcoff)) != TN_OK)
      return rc;
    for (uint32_t k = 0; rc == TN_OK && k < x->cnt; k++) {
      if (I->content[src + k] != I->content[dst + k])
        return serr(I, err, sj, "reduces chunk %u (%s[%u]) into chunk %u (%s[%u])",
                    I->content[src + k], bufname(rs->srcbuf), (uint32_t)rs->srcoff + k,
                    I->content[dst + k], bufname(rs->dstbuf), (uint32_t)rs->dstoff + k);
      uint32_t p = I->producer[src + k];
      if (p != NONE && ND(I, p).kind == K_RECV) {
        ND(I, p).reduce = true;
        rc = add_extra(I, i, p, err);
      }
    }
  }
  if (rc != TN_OK) return rc;
  rc = set_chunks(I, i, &I->content[dst], x->cnt, err);
  for (uint32_t k = 0; k < x->cnt; k++)
    I->producer[dst + k] = NONE;
  return rc;
}

/* rrc, rrs, rrcs: the reduce RECV's chunks are added to src (and stored at dst). */
static tn_status_t exec_fused_reduce(imp_t *I, const xnode_t *x, bool need_dst, tn_err_t *err) {
  const mstep_t *st = x->st;
  const inode_t *r = &ND(I, x->i - 1);
  uint32_t src = x->src;
  tn_status_t rc = read_slots(I, err, x->si, src, st->cnt, bufname(st->srcbuf), st->srcoff);
  if (rc != TN_OK) return rc;
  for (uint32_t k = 0; k < x->cnt; k++) {
    uint32_t got = TN_VEC_AT(&I->chunks, uint32_t, r->chunk_off + k);
    if (got != I->content[src + k])
      return serr(I, err, x->si, "reduces received chunk %u into chunk %u (%s[%u])", got,
                  I->content[src + k], bufname(st->srcbuf), (uint32_t)st->srcoff + k);
  }
  if ((rc = set_chunks(I, x->i, &I->content[src], x->cnt, err)) != TN_OK) return rc;
  if (need_dst) {
    memmove(&I->content[x->dst], &I->content[src], x->cnt * sizeof *I->content);
    for (uint32_t k = 0; k < x->cnt; k++)
      I->producer[x->dst + k] = NONE;
  }
  return TN_OK;
}

static tn_status_t exec_node(imp_t *I, uint32_t i, tn_err_t *err) {
  const inode_t *n = &ND(I, i);
  if (n->kind == K_VIRT) return TN_OK;
  const mstep_t *st = &ST(I, n->step);
  xnode_t x = {.i = i, .si = n->step, .g = n->gpu, .cnt = (uint32_t)st->cnt, .st = st};
  bool need_src = st->op == OP_S || st->op == OP_RRC || st->op == OP_RRS || st->op == OP_RRCS ||
                  st->op == OP_CPY || st->op == OP_RE;
  bool need_dst = st->op != OP_S && st->op != OP_RRS;
  tn_status_t rc = TN_OK;
  if (need_src &&
      (rc = slot_of(I, err, x.si, x.g, st->srcbuf, st->srcoff, st->cnt, &x.src)) != TN_OK)
    return rc;
  if (need_dst &&
      (rc = slot_of(I, err, x.si, x.g, st->dstbuf, st->dstoff, st->cnt, &x.dst)) != TN_OK)
    return rc;
  if (n->kind == K_SEND) return exec_send(I, &x, err);
  if (n->kind == K_RECV) return exec_recv(I, &x, err);
  if (st->op == OP_CPY) return exec_cpy(I, &x, err);
  if (st->op == OP_RE) return exec_re(I, &x, err);
  return exec_fused_reduce(I, &x, need_dst, err);
}

/* Kahn's algorithm over every node of every gpu (edges: deps, send → its receive), running
 * each node symbolically as it comes out. A node left over sits on a cycle. */
static tn_status_t execute(imp_t *I, tn_err_t *err) {
  uint32_t nn = (uint32_t)I->nodes.len;
  uint32_t *indeg = NULL, *off = NULL, *succ = NULL, *queue = NULL;
  tn_status_t rc = tn_calloc(nn + 1, sizeof *indeg, &indeg, err);
  if (rc == TN_OK) rc = tn_calloc(nn + 2, sizeof *off, &off, err);
  if (rc == TN_OK) rc = tn_calloc(nn + 1, sizeof *queue, &queue, err);
  if (rc != TN_OK) goto fail;
  size_t ne = 0;
  for (uint32_t i = 0; i < nn; i++) {
    const inode_t *n = &ND(I, i);
    for (uint32_t k = 0; k < n->ndeps; k++)
      off[TN_VEC_AT(&I->deps, uint32_t, n->dep_off + k) + 1]++;
    if (n->kind == K_RECV) off[n->partner + 1]++;
    indeg[i] = (uint32_t)n->ndeps + (n->kind == K_RECV);
    ne += indeg[i];
  }
  for (uint32_t i = 0; i < nn; i++)
    off[i + 1] += off[i];
  if ((rc = tn_calloc(ne + 1, sizeof *succ, &succ, err)) != TN_OK) goto fail;
  for (uint32_t i = 0; i < nn; i++) {
    const inode_t *n = &ND(I, i);
    for (uint32_t k = 0; k < n->ndeps; k++)
      succ[off[TN_VEC_AT(&I->deps, uint32_t, n->dep_off + k)]++] = i;
    if (n->kind == K_RECV) succ[off[n->partner]++] = i;
  }
  for (uint32_t i = nn; i > 0; i--)
    off[i] = off[i - 1];
  off[0] = 0;
  uint32_t head = 0, tail = 0;
  for (uint32_t i = 0; i < nn; i++)
    if (indeg[i] == 0) queue[tail++] = i;
  while (head < tail) {
    uint32_t i = queue[head++];
    if ((rc = exec_node(I, i, err)) != TN_OK) goto fail;
    for (uint32_t e = off[i]; e < off[i + 1]; e++)
      if (--indeg[succ[e]] == 0) queue[tail++] = succ[e];
  }
  if (tail < nn) {
    uint32_t i = 0;
    while (indeg[i] == 0)
      i++;
    rc = serr(I, err, ND(I, i).step,
              "is on a dependency cycle (through depid/deps, step order "
              "and send/receive pairs)");
    goto fail;
  }
fail:
  free(indeg);
  free(off);
  free(succ);
  free(queue);
  return rc;
}

/* Every output slot must end holding the chunk the collective puts there. */
static tn_status_t check_outputs(const imp_t *I, tn_err_t *err) {
  for (uint32_t g = 0; g < I->n; g++) {
    const mgpu_t *G = &I->gpus[g];
    uint32_t first = 0, count = I->n * I->K, base = 0;
    const char *bn = "o";
    if (I->coll == TN_ALLGATHER || I->coll == TN_ALLTOALL) {
      base = G->o_base;
    } else if (I->coll == TN_ALLREDUCE) {
      base = I->inplace ? 0 : G->o_base;
      bn = I->inplace ? "i" : "o";
    } else {
      first = g * I->K, count = I->K;
      base = I->inplace ? first : G->o_base;
      bn = I->inplace ? "i" : "o";
    }
    for (uint32_t k = 0; k < count; k++) {
      uint32_t got = I->content[G->loc_base + base + k];
      /* All-to-All: output slot s K + j of gpu g receives s's piece j for g. */
      uint32_t want =
          I->coll == TN_ALLTOALL ? k / I->K * I->n * I->K + g * I->K + k % I->K : first + k;
      if (got != want)
        return tn_err_set(err, TN_PARSE,
                          "%s: gpu %u: output slot %s[%u] ends %s%u, not chunk %u "
                          "(the %s is incomplete)",
                          I->what, g, bn, base + k - (bn[0] == 'o' ? G->o_base : 0),
                          got == NONE ? "never written" : "holding chunk ", got == NONE ? 0 : got,
                          want, tn_coll_name(I->coll));
    }
  }
  return TN_OK;
}

/* Dependencies of node i as final ids: its own (previous step, then cross-tb) and the extra
 * ones, each folded nop replaced in place by its own dependencies, first occurrence kept.
 * (A depth-first walk with an explicit stack; children are pushed in reverse so they come
 * out in order.) The exporter writes a node's dependencies d1..dk as nop(d1) ... nop(dk-1),
 * op(dk), which this walk turns back into d1..dk in that order. stamp marks nodes seen for
 * i (stamp[k] == i + 1). */
static tn_status_t final_deps(imp_t *I, uint32_t i, uint32_t *stamp, tn_vec_t *stack, tn_vec_t *out,
                              tn_err_t *err) {
  stack->len = 0;
  out->len = 0;
  tn_status_t rc = TN_OK;
  const inode_t *n = &ND(I, i);
  for (uint32_t e = n->extra; e != NONE && rc == TN_OK;
       e = TN_VEC_AT(&I->extras, extra_dep_t, e).next)
    rc = tn_vec_push(stack, &TN_VEC_AT(&I->extras, extra_dep_t, e).dep, err);
  for (uint32_t k = n->ndeps; k > 0 && rc == TN_OK; k--)
    rc = tn_vec_push(stack, &TN_VEC_AT(&I->deps, uint32_t, n->dep_off + k - 1), err);
  while (rc == TN_OK && stack->len > 0) {
    uint32_t d = TN_VEC_AT(stack, uint32_t, --stack->len);
    if (stamp[d] == i + 1) continue;
    stamp[d] = i + 1;
    const inode_t *dn = &ND(I, d);
    if (dn->kind != K_VIRT) {
      rc = tn_vec_push(out, &dn->id, err);
      continue;
    }
    for (uint32_t k = dn->ndeps; k > 0 && rc == TN_OK; k--)
      rc = tn_vec_push(stack, &TN_VEC_AT(&I->deps, uint32_t, dn->dep_off + k - 1), err);
  }
  return rc;
}

void emit_msccl_origin_free(emit_msccl_origin_t *o) {
  if (o == NULL || o->at == NULL) return;
  for (uint32_t r = 0; r < o->npus; r++)
    free(o->at[r]);
  free(o->at);
  o->at = NULL;
  o->npus = 0;
}

/* Fills o with the XML step of every node of a (created in I's node order). */
static tn_status_t fill_origin(const imp_t *I, const algo_t *a, emit_msccl_origin_t *o,
                               tn_err_t *err) {
  o->npus = 0;
  tn_status_t rc = tn_calloc(a->npus, sizeof *o->at, &o->at, err);
  if (rc != TN_OK) return rc;
  o->npus = a->npus;
  for (uint32_t r = 0; r < a->npus && rc == TN_OK; r++) {
    rc = tn_calloc(algo_rank_len(a, r) + 1, sizeof **o->at, &o->at[r], err);
    for (uint32_t i = 0; rc == TN_OK && i < algo_rank_len(a, r); i++)
      o->at[r][i] = (emit_msccl_step_ref_t){-1, -1, 0};
  }
  for (uint32_t i = 0; rc == TN_OK && i < I->nodes.len; i++) {
    const inode_t *n = &ND(I, i);
    if (n->kind == K_VIRT) continue;
    const mstep_t *st = &ST(I, n->step);
    o->at[n->gpu][n->id] = (emit_msccl_step_ref_t){TB(I, st->tb).id, st->s, st->line};
  }
  if (rc != TN_OK) emit_msccl_origin_free(o);
  return rc;
}

static tn_status_t emit_algo(imp_t *I, algo_t **out, tn_err_t *err) {
  uint32_t nn = (uint32_t)I->nodes.len;
  uint32_t *count = NULL, *stamp = NULL;
  size_t *ndeps = NULL, *nchunks = NULL;
  tn_vec_t stack, deps;
  tn_vec_init(&stack, sizeof(uint32_t));
  tn_vec_init(&deps, sizeof(uint32_t));
  algo_t *a = NULL;
  tn_status_t rc = tn_calloc(I->n, sizeof *count, &count, err);
  if (rc == TN_OK) rc = tn_calloc(nn + 1, sizeof *stamp, &stamp, err);
  if (rc == TN_OK) rc = tn_calloc(I->n, sizeof *ndeps, &ndeps, err);
  if (rc == TN_OK) rc = tn_calloc(I->n, sizeof *nchunks, &nchunks, err);
  if (rc != TN_OK) goto fail;
  /* Ids per gpu in creation order (tb id, step, RECV < COMP < SEND); nodes were created
   * gpu by gpu. Each rank's pools are sized at once (dependencies: before nop folding). */
  for (uint32_t i = 0; i < nn; i++) {
    inode_t *n = &ND(I, i);
    if (n->kind == K_VIRT) continue;
    n->id = count[n->gpu]++;
    ndeps[n->gpu] += n->ndeps;
    for (uint32_t e = n->extra; e != NONE; e = TN_VEC_AT(&I->extras, extra_dep_t, e).next)
      ndeps[n->gpu]++;
    nchunks[n->gpu] += n->nchunks;
  }
  if ((rc = algo_create("msccl", I->coll, I->n, I->algo_k, I->size, &a, err)) != TN_OK) goto fail;
  for (uint32_t g = 0; g < I->n; g++)
    if ((rc = algo_reserve(a, g, count[g], ndeps[g], nchunks[g], err)) != TN_OK) goto fail;
  for (uint32_t i = 0; i < nn; i++) {
    const inode_t *n = &ND(I, i);
    if (n->kind == K_VIRT) continue;
    /* The usual node (no extra dependency, no nop among its own) needs no folding. */
    const uint32_t *sd = &TN_VEC_AT(&I->deps, uint32_t, n->dep_off);
    uint32_t direct[2], nd = 0;
    bool simple = n->extra == NONE && n->ndeps <= 2;
    for (uint32_t k = 0; simple && k < n->ndeps; k++)
      simple = ND(I, sd[k]).kind != K_VIRT;
    if (simple) {
      for (uint32_t k = 0; k < n->ndeps; k++)
        if (k == 0 || sd[k] != sd[0]) direct[nd++] = ND(I, sd[k]).id;
    } else if ((rc = final_deps(I, i, stamp, &stack, &deps, err)) != TN_OK) {
      goto fail;
    }
    algo_node_t an = {0};
    an.op = n->kind == K_SEND ? ALGO_SEND : n->kind == K_RECV ? ALGO_RECV : ALGO_COMP;
    an.reduce = n->kind == K_RECV && n->reduce;
    an.peer = n->kind == K_COMP ? -1 : node_peer(I, n);
    an.tag = n->kind == K_COMP ? 0 : n->tag;
    an.bytes = n->kind == K_COMP ? 0 : n->bytes;
    an.duration_us = n->kind == K_COMP && ST(I, n->step).op != OP_CPY ? I->comp_us : 0;
    an.ndeps = simple ? nd : (uint32_t)deps.len;
    an.nchunks = n->nchunks;
    const uint32_t *ch = n->nchunks ? &TN_VEC_AT(&I->chunks, uint32_t, n->chunk_off) : NULL;
    const uint32_t *dl = simple ? direct : (const uint32_t *)deps.data;
    if ((rc = algo_add(a, n->gpu, &an, dl, ch, NULL, err)) != TN_OK) goto fail;
  }
  if ((rc = algo_fill_idle(a, err)) != TN_OK) goto fail;
  *out = a;
  a = NULL;
fail:
  algo_free(a);
  free(count);
  free(stamp);
  free(ndeps);
  free(nchunks);
  tn_vec_free(&stack);
  tn_vec_free(&deps);
  return rc;
}

static void imp_free(imp_t *I) {
  free(I->gpus);
  tn_vec_free(&I->tbs);
  tn_vec_free(&I->steps);
  tn_vec_free(&I->nodes);
  tn_vec_free(&I->deps);
  tn_vec_free(&I->extras);
  tn_vec_free(&I->chunks);
  free(I->content);
  free(I->producer);
}

tn_status_t emit_msccl_import_mem_opts(const char *xml, size_t len, const char *what,
                                       uint64_t size_bytes, const emit_msccl_opts_t *opts,
                                       algo_t **out, tn_err_t *err) {
  *out = NULL;
  if (what == NULL) what = "<memory>";
  if (len > INT32_MAX) return tn_err_set(err, TN_LIMIT, "%s: file too large", what);
  if (size_bytes == 0) return tn_err_set(err, TN_INVAL, "%s: size must be > 0", what);
  imp_t I = {0};
  I.what = what;
  I.size = size_bytes;
  I.comp_us = opts ? opts->comp_us : 0;
  tn_vec_init(&I.tbs, sizeof(mtb_t));
  tn_vec_init(&I.steps, sizeof(mstep_t));
  tn_vec_init(&I.nodes, sizeof(inode_t));
  tn_vec_init(&I.deps, sizeof(uint32_t));
  tn_vec_init(&I.extras, sizeof(extra_dep_t));
  tn_vec_init(&I.chunks, sizeof(uint32_t));
  tn_status_t rc = TN_OK;
  if ((rc = parse_xml(&I, xml, len, err)) != TN_OK) goto fail;
  if ((rc = layout(&I, err)) != TN_OK) goto fail;
  I.algo_k = I.coll == TN_ALLTOALL ? I.n * I.K : I.K;
  if (!tn_coll_space(I.coll, I.n, size_bytes, &I.space)) {
    rc = tn_err_set(err, TN_INVAL, "%s: %u times %llu B overflows", what, I.n,
                    (unsigned long long)size_bytes);
    goto fail;
  }
  if (size_bytes < (uint64_t)I.n * I.K) {
    rc = tn_err_set(err, TN_INVAL,
                    "%s: size %llu B is smaller than the %u chunks the "
                    "algorithm cuts it into",
                    what, (unsigned long long)size_bytes, I.n * I.K);
    goto fail;
  }
  if ((rc = reserve_pools(&I, err)) != TN_OK) goto fail;
  if ((rc = build_nodes(&I, err)) != TN_OK) goto fail;
  if ((rc = pair(&I, err)) != TN_OK) goto fail;
  init_content(&I);
  if ((rc = execute(&I, err)) != TN_OK) goto fail;
  if ((rc = check_outputs(&I, err)) != TN_OK) goto fail;
  if ((rc = emit_algo(&I, out, err)) != TN_OK) goto fail;
  if (opts && opts->origin && (rc = fill_origin(&I, *out, opts->origin, err)) != TN_OK) {
    algo_free(*out);
    *out = NULL;
  }
fail:
  imp_free(&I);
  return rc;
}

tn_status_t emit_msccl_import_mem(const char *xml, size_t len, const char *what,
                                  uint64_t size_bytes, algo_t **out, tn_err_t *err) {
  return emit_msccl_import_mem_opts(xml, len, what, size_bytes, NULL, out, err);
}

tn_status_t emit_msccl_import_opts(const char *path, uint64_t size_bytes,
                                   const emit_msccl_opts_t *opts, algo_t **out, tn_err_t *err) {
  *out = NULL;
  char *data = NULL;
  size_t len = 0;
  tn_status_t rc = tn_read_file(path, (size_t)1 << 30, &data, &len, err);
  if (rc != TN_OK) return rc;
  rc = emit_msccl_import_mem_opts(data, len, path, size_bytes, opts, out, err);
  free(data);
  return rc;
}

tn_status_t emit_msccl_import(const char *path, uint64_t size_bytes, algo_t **out, tn_err_t *err) {
  return emit_msccl_import_opts(path, size_bytes, NULL, out, err);
}
