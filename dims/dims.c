/* dims/dims.c — the dimension-by-dimension All-Gather (see dims.h): blocks of chunks
 * exchanged along the lines of one dimension per phase, one part of the data per
 * dimension in rotated order, timed by schedule_replay. */
#include "dims/dims.h"

#include <stdlib.h>
#include <string.h>

typedef struct plan {
  const topo_t *t;
  schedule_t *s;
  uint32_t n, D, k, h;            /* k = D * h chunks per NPU: h per part (halves, see split) */
  uint32_t e[TOPO_MAX_DIMS];      /* the dimensions of size 2 or more (topo dim indices) */
  uint64_t stride[TOPO_MAX_DIMS]; /* per topo dimension: NPU id = sum coord * stride */
  uint32_t R;                     /* deliveries an NPU receives per part in all phases */
  uint32_t *recv;                 /* (part * n + NPU) * R: its deliveries, phase by phase */
  uint32_t *nrecv;                /* per (part, NPU): how many so far */
  uint32_t *block;                /* scratch: the chunks of one block (n * h at most) */
  uint32_t *half;                 /* scratch: one half of it (see split) */
  uint32_t *last, *last_h;        /* per (part, phase, NPU, way): the delivery it forwards
                                     last along its line that way, and its hops so far */
  uint32_t *phase_of;             /* per (part, topo dimension): the phase using it */
  uint32_t nblock;
  uint64_t block_bytes;
  uint32_t *gate; /* scratch: one first send's dependencies (R + D) */
} plan_t;

static uint32_t dim_size(const topo_t *t, uint32_t d) {
  return t->dims[d].size;
}

/* Whether dimension d's lines are two-way rings of an even size above 2: a block then goes
 * L/2 - 1 hops each way and the NPU opposite its origin gets one half of it from each side,
 * so that every link carries (L - 1) / 2 blocks rather than L / 2 one way (torus-8x8
 * All-Gather: 1.144 times the bound with whole blocks). */
static bool split(const topo_t *t, uint32_t d) {
  const topo_dim_t *x = &t->dims[d];
  return x->kind == TOPO_DIM_RING && !x->unidirectional && x->size >= 4 && x->size % 2 == 0;
}

/* Deliveries an NPU receives in a phase along d: one block from each other NPU of its
 * line, one more where the opposite NPU's block comes in halves. */
static uint32_t phase_recvs(const topo_t *t, uint32_t d) {
  return dim_size(t, d) - 1 + (split(t, d) ? 1u : 0u);
}

static uint32_t halves(const topo_t *t) {
  for (uint32_t d = 0; d < t->ndims; d++)
    if (split(t, d)) return 2;
  return 1;
}

uint32_t dims_chunks(const topo_t *t) {
  uint32_t D = 0;
  for (uint32_t d = 0; d < t->ndims; d++)
    D += dim_size(t, d) >= 2;
  return D * halves(t);
}

static uint32_t ndims_used(const topo_t *t) {
  uint32_t D = 0;
  for (uint32_t d = 0; d < t->ndims; d++)
    D += dim_size(t, d) >= 2;
  return D;
}

static uint32_t coord(const plan_t *P, uint32_t r, uint32_t d) {
  return (uint32_t)((r / P->stride[d]) % dim_size(P->t, d));
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The block NPU o holds of part j at the start of phase s: the part's chunk of every NPU
 * that differs from o only in the dimensions of phases 0 .. s-1, ascending. */
static void make_block(plan_t *P, uint32_t o, uint32_t j, uint32_t s) {
  uint32_t *b = P->block, m = 1;
  b[0] = o;
  for (uint32_t q = 0; q < s; q++) {
    uint32_t d = P->e[(j + q) % P->D], L = dim_size(P->t, d);
    for (uint32_t i = 0; i < m; i++) {
      uint32_t base = b[i] - (uint32_t)(coord(P, b[i], d) * P->stride[d]);
      for (uint32_t v = 1; v < L; v++)
        b[m * v + i] = base + (uint32_t)(v * P->stride[d]);
      b[i] = base;
    }
    m *= L;
  }
  P->block_bytes = 0;
  for (uint32_t i = m; i-- > 0;) /* in place, from the back: h chunks per NPU */
    for (uint32_t q = P->h; q-- > 0;)
      b[i * P->h + q] = b[i] * P->k + j * P->h + q;
  m *= P->h;
  for (uint32_t i = 0; i < m; i++)
    P->block_bytes += ten_chunk_bytes(P->s->size_bytes, P->n, P->k, b[i]);
  qsort(b, m, sizeof *b, cmp_u32);
  P->nblock = m;
}

/* Half q of the block into P->half (its chunks of that half): *bytes its size. */
static uint32_t make_half(plan_t *P, uint32_t q, uint64_t *bytes) {
  uint32_t m = 0;
  *bytes = 0;
  for (uint32_t i = 0; i < P->nblock; i++)
    if (P->block[i] % P->h == q) {
      P->half[m++] = P->block[i];
      *bytes += ten_chunk_bytes(P->s->size_bytes, P->n, P->k, P->block[i]);
    }
  return m;
}

/* Appends the transfer src -> dst of the current block of part j (or, with q < h, of its
 * half q) after deps; its index in *index, and dst's deliveries of the part grow by it. */
static tn_status_t add(plan_t *P, uint32_t j, uint32_t src, uint32_t dst, const uint32_t *deps,
                       uint32_t ndeps, uint32_t q, uint32_t *index, tn_err_t *err) {
  sched_xfer_t x = {
      .src = src, .dst = dst, .bytes = P->block_bytes, .nchunks = P->nblock, .ndeps = ndeps};
  const uint32_t *chunks = P->block;
  if (q < P->h) x.nchunks = make_half(P, q, &x.bytes), chunks = P->half;
  tn_status_t st = schedule_add(P->s, &x, chunks, deps, index, err);
  if (st != TN_OK) return st;
  size_t at = (size_t)j * P->n + dst;
  if (P->nrecv[at] >= P->R) /* more than its lines give: a planning error */
    return tn_err_set(err, TN_INTERNAL, "dims: NPU %u receives more than %u blocks", dst, P->R);
  P->recv[at * P->R + P->nrecv[at]++] = *index;
  return TN_OK;
}

/* The deliveries origin o's first send of part j, phase s, the way way (0 right, 1 left)
 * waits for, into g (*ng of them): the part's earlier phases at o, and for every other part
 * that used this dimension in an earlier phase, the delivery o forwarded last that way
 * then. That part's blocks are smaller (fewer phases gathered): they go first on the
 * line's links rather than queue behind this part's larger ones (mesh-8x8 All-Gather at
 * 1 GiB: 1.254 times the bound without this wait). */
static uint32_t gates(const plan_t *P, uint32_t j, uint32_t s, uint32_t d, uint32_t o, int way,
                      const uint32_t *first, uint32_t nfirst, uint32_t *g) {
  uint32_t ng = 0;
  for (uint32_t i = 0; i < nfirst; i++)
    g[ng++] = first[i];
  for (uint32_t q = 0; q < P->D; q++) {
    uint32_t sq = P->phase_of[q * TOPO_MAX_DIMS + d];
    if (q == j || sq >= s) continue;
    size_t at = (((size_t)q * P->D + sq) * P->n + o) * 2 + (size_t)way;
    if (P->last_h[at] > 0) g[ng++] = P->last[at];
  }
  return ng;
}

/* Origin o's block of part j in phase s (made), sent along its line of dimension d: the
 * line's NPU at position i is base + i * stride, o is at position at. first: the deliveries
 * its first sends wait for (nfirst); g: room for them and the gates. */
static tn_status_t send_block(plan_t *P, uint32_t j, uint32_t s, uint32_t d, const topo_dim_t *dim,
                              uint64_t stride, uint32_t base, uint32_t at, const uint32_t *first,
                              uint32_t nfirst, uint32_t *g, tn_err_t *err) {
  uint32_t L = dim->size, o = base + (uint32_t)(at * stride), idx = 0;
  tn_status_t st = TN_OK;
  if (dim->kind == TOPO_DIM_FC || dim->kind == TOPO_DIM_SWITCH) {
    for (uint32_t h = 1; h < L && st == TN_OK; h++) /* rotated: at+1, at+2, … */
      st = add(P, j, o, base + (uint32_t)(((at + h) % L) * stride), first, nfirst, P->h, &idx, err);
    return st;
  }
  /* Hops each way: a line to both ends; a ring halfway round each way (the odd one to the
   * right, or in halves both ways: split), a one-way ring all the way right. */
  uint32_t right, left;
  bool halved = split(P->t, d);
  if (dim->kind == TOPO_DIM_LINE) {
    right = L - 1 - at, left = at;
  } else if (dim->unidirectional) {
    right = L - 1, left = 0;
  } else {
    right = L / 2, left = halved ? L / 2 : (L - 1) / 2;
  }
  for (int way = 0; way < 2 && st == TN_OK; way++) {
    uint32_t hops = way == 0 ? right : left, from = at;
    uint32_t ng = hops ? gates(P, j, s, d, o, way, first, nfirst, g) : 0;
    for (uint32_t h = 1; h <= hops && st == TN_OK; h++) {
      uint32_t to = way == 0 ? (from + 1) % L : (from + L - 1) % L;
      uint32_t prev = idx, src = base + (uint32_t)(from * stride);
      if (h > 1) { /* src forwards the delivery prev: the farthest-travelled is its last */
        size_t k = (((size_t)j * P->D + s) * P->n + src) * 2 + (size_t)way;
        if (h - 1 > P->last_h[k]) P->last_h[k] = h - 1, P->last[k] = prev;
      }
      uint32_t q = halved && h == hops ? (uint32_t)way : P->h; /* the opposite NPU: a half */
      st = add(P, j, src, base + (uint32_t)(to * stride), h == 1 ? g : &prev, h == 1 ? ng : 1, q,
               &idx, err);
      from = to;
    }
  }
  return st;
}

/* Phase s of part j: every line of its dimension exchanges its blocks. */
static tn_status_t phase(plan_t *P, uint32_t j, uint32_t s, uint32_t before, tn_err_t *err) {
  uint32_t d = P->e[(j + s) % P->D];
  const topo_dim_t *dim = &P->t->dims[d];
  tn_status_t st = TN_OK;
  for (uint32_t base = 0; base < P->n && st == TN_OK; base++) {
    if (coord(P, base, d) != 0) continue;
    for (uint32_t at = 0; at < dim->size && st == TN_OK; at++) {
      uint32_t o = base + (uint32_t)(at * P->stride[d]);
      make_block(P, o, j, s);
      const uint32_t *first = &P->recv[((size_t)j * P->n + o) * P->R];
      st = send_block(P, j, s, d, dim, P->stride[d], base, at, first, before, P->gate, err);
    }
  }
  return st;
}

/* Transfers and chunk references of the plan on t (dimensions e[0..D)), counted. */
static void count(const topo_t *t, const uint32_t *e, uint32_t D, uint64_t *xfers, uint64_t *refs) {
  uint64_t h = halves(t);
  *xfers = *refs = 0;
  for (uint32_t j = 0; j < D; j++) {
    uint64_t blk = h; /* chunks in a block */
    for (uint32_t s = 0; s < D; s++) {
      uint32_t d = e[(j + s) % D], L = dim_size(t, d);
      uint64_t whole = L - 1 - (split(t, d) ? 1u : 0u), parts = split(t, d) ? 2u : 0u;
      *xfers += (uint64_t)t->npus * (whole + parts);
      *refs += (uint64_t)t->npus * (whole * blk + parts * (blk / h));
      blk *= L;
    }
  }
}

static tn_status_t check(const topo_t *t, uint64_t size, uint32_t want, uint32_t k, tn_err_t *err) {
  uint32_t D = ndims_used(t);
  if (t->ndims == 0)
    return tn_err_set(err, TN_INVAL,
                      "dims needs a generated fabric (mesh, torus, hypercube, KIND-DIMS); %s is "
                      "given link by link",
                      t->name);
  if (t->npus < 2 || D == 0)
    return tn_err_set(err, TN_INVAL, "dims needs at least 2 NPUs, not %u", t->npus);
  if (want != 0 && want != k)
    return tn_err_set(err, TN_INVAL,
                      "dims cuts each NPU's data into one chunk per dimension (two on a torus "
                      "of even rings): %u on %s, not %u",
                      k, t->name, want);
  if (size < (uint64_t)t->npus * k)
    return tn_err_set(err, TN_INVAL,
                      "dims: %llu B is below one byte for each of the %u x %u chunks",
                      (unsigned long long)size, t->npus, k);
  return TN_OK;
}

tn_status_t dims_allgather(const topo_t *t, uint64_t size_bytes, uint32_t chunks_per_npu,
                           uint64_t tie_window_ps, schedule_t *out, tn_err_t *err) {
  uint32_t D = ndims_used(t), k = dims_chunks(t);
  schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  tn_status_t st = check(t, size_bytes, chunks_per_npu, k, err);
  if (st != TN_OK) return st;
  plan_t P = {.t = t, .s = out, .n = t->npus, .D = D, .k = k, .h = halves(t)};
  for (uint32_t d = 0, i = 0; d < t->ndims; d++) {
    P.stride[d] = topo_dim_stride(t, d);
    if (dim_size(t, d) >= 2) P.e[i++] = d;
  }
  for (uint32_t i = 0; i < D; i++)
    P.R += phase_recvs(t, P.e[i]);
  /* Transfers and chunk references, to reserve once. */
  uint64_t xfers = 0, refs = 0;
  count(t, P.e, D, &xfers, &refs);
  if (xfers >= UINT32_MAX || refs >= UINT32_MAX)
    return tn_err_set(err, TN_LIMIT, "dims: %llu transfers of %llu chunks in all is too many",
                      (unsigned long long)xfers, (unsigned long long)refs);
  st = tn_calloc((size_t)D * P.n * P.R + 1, sizeof *P.recv, &P.recv, err);
  if (st == TN_OK) st = tn_calloc((size_t)D * P.n + 1, sizeof *P.nrecv, &P.nrecv, err);
  if (st == TN_OK) st = tn_malloc((size_t)P.n * P.h + 1, sizeof *P.block, &P.block, err);
  if (st == TN_OK) st = tn_malloc((size_t)P.n * P.h + 1, sizeof *P.half, &P.half, err);
  if (st == TN_OK) st = tn_malloc((size_t)P.R + D + 1, sizeof *P.gate, &P.gate, err);
  if (st == TN_OK) st = tn_calloc((size_t)D * D * P.n * 2 + 1, sizeof *P.last, &P.last, err);
  if (st == TN_OK) st = tn_calloc((size_t)D * D * P.n * 2 + 1, sizeof *P.last_h, &P.last_h, err);
  if (st == TN_OK)
    st = tn_calloc((size_t)D * TOPO_MAX_DIMS + 1, sizeof *P.phase_of, &P.phase_of, err);
  for (uint32_t j = 0; st == TN_OK && j < D; j++)
    for (uint32_t q = 0; q < D; q++)
      P.phase_of[j * TOPO_MAX_DIMS + P.e[(j + q) % D]] = q;
  if (st == TN_OK) st = tn_vec_reserve(&out->xfers, (size_t)xfers, err);
  if (st == TN_OK) st = tn_vec_reserve(&out->chunks, (size_t)refs, err);
  /* Phase by phase (every part's phase s before any phase s + 1): a block's first sends
   * wait for what the part's earlier phases delivered to its NPU. */
  uint32_t before[TOPO_MAX_DIMS] = {0};
  for (uint32_t s = 0; s < D && st == TN_OK; s++)
    for (uint32_t j = 0; j < D && st == TN_OK; j++) {
      st = phase(&P, j, s, before[j], err);
      before[j] += phase_recvs(t, P.e[(j + s) % D]);
    }
  if (st == TN_OK) st = schedule_replay_ties(t, out, tie_window_ps, err);
  free(P.recv);
  free(P.nrecv);
  free(P.block);
  free(P.half);
  free(P.gate);
  free(P.last);
  free(P.last_h);
  free(P.phase_of);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  }
  return st;
}

uint64_t dims_mem_estimate(const topo_t *t, tn_coll_t coll, unsigned threads) {
  uint32_t D = ndims_used(t);
  if (D == 0) return 0;
  uint32_t e[TOPO_MAX_DIMS], i = 0;
  for (uint32_t d = 0; d < t->ndims; d++)
    if (dim_size(t, d) >= 2) e[i++] = d;
  uint64_t x = 0, r = 0;
  count(t, e, D, &x, &r);
  double xfers = (double)x, refs = (double)r;
  /* Fitted on measured peaks of the whole process (see bench_mem, mesh-64x64 and
   * torus-16x16x16, then 64 to 256 NPUs with one and two threads): per transfer its
   * schedule entry, lowered nodes and simulation; per chunk reference the lists the
   * schedule, the lowering, the verifier and the files' encoding carry. A Reduce-Scatter is
   * the same plan reversed, its sends carrying partial sums the verifier keeps; an
   * All-Reduce holds both halves. The sets are small beside the process (7.75 to 9 MiB), and
   * a second thread adds nothing measurable (beside 0). */
  double per_xfer = coll == TN_ALLREDUCE ? 1748.0 : coll == TN_REDUCESCATTER ? 1005.0 : 801.0;
  double per_ref = coll == TN_ALLREDUCE ? 26.5 : coll == TN_REDUCESCATTER ? 22.2 : 11.3;
  uint64_t base = coll == TN_ALLREDUCE       ? (uint64_t)9 << 20
                  : coll == TN_REDUCESCATTER ? (uint64_t)33 << 18
                                             : (uint64_t)31 << 18;
  double w = per_xfer * xfers + per_ref * refs;
  return w >= 1.8e19 ? UINT64_MAX : tn_mem_threads(base, (uint64_t)w, 0, threads);
}
