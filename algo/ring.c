/* algo/ring.c — the Ring baselines of msccl-tools' examples (All-Gather, Reduce-Scatter,
 * All-Reduce over the logical ring 0 → 1 → … → n-1 → 0), built as per-NPU DAGs. A
 * producer beside the schedule lowering; its output goes to emit/, sim/ and the verifier. */
#include "algo/algo_internal.h"

#include <stdlib.h>

tn_status_t algo_i_baseline_create(const char *name, tn_coll_t coll, uint32_t npus,
                                   uint64_t size_bytes, uint32_t chunks_per_npu,
                                   uint64_t tags_per_pair, algo_t **out, tn_err_t *err) {
  *out = NULL;
  if (coll != TN_ALLGATHER && coll != TN_REDUCESCATTER && coll != TN_ALLREDUCE &&
      coll != TN_ALLTOALL)
    return tn_err_set(err, TN_INVAL, "%s: unknown collective %d", name, (int)coll);
  if (npus == 0 || npus > TOPO_MAX_NPUS)
    return tn_err_set(err, TN_INVAL, "%s: needs 1 to %u NPUs, not %u", name, TOPO_MAX_NPUS, npus);
  if (chunks_per_npu == 0)
    return tn_err_set(err, TN_INVAL, "%s: chunks per NPU must be at least 1", name);
  uint64_t chunks = (uint64_t)npus * chunks_per_npu;
  if (npus > 1 && size_bytes < chunks)
    return tn_err_set(err, TN_INVAL,
                      "%s: size %llu B is smaller than %llu chunks (%u NPUs x %u chunks); "
                      "every chunk needs at least one byte",
                      name, (unsigned long long)size_bytes, (unsigned long long)chunks, npus,
                      chunks_per_npu);
  if (tags_per_pair > (uint64_t)ALGO_MAX_TAG + 1)
    return tn_err_set(err, TN_LIMIT, "%s: %llu messages per NPU pair exceed the tag range", name,
                      (unsigned long long)tags_per_pair);
  /* An All-to-All's chunks_per_npu here counts the pieces of each (source, destination)
   * block; the set's counts every NPU's whole buffer (algo.h). */
  uint64_t k = coll == TN_ALLTOALL ? (uint64_t)chunks_per_npu * npus : chunks_per_npu;
  if (k > UINT32_MAX / npus)
    return tn_err_set(err, TN_LIMIT, "%s: %u NPUs x %llu chunks are too many", name, npus,
                      (unsigned long long)k);
  return algo_create(name, coll, npus, (uint32_t)k, size_bytes, out, err);
}

/* Reduce-Scatter over the ring. In step s (0..n-2) rank r sends its partial of block
 * (r-s-1) mod n to r+1; r+1 receives it as a reduce-RECV and adds it to its own partial with
 * a COMP, which the send of the next step forwards. After n-1 steps rank r holds block r
 * reduced over all ranks. Every block is K chunks (pieces) that travel independently.
 * last_comp[p] receives, per rank, the id of the final COMP of piece p (for All-Reduce). */
/* Piece p's way round the ring: +1 (r to r+1), or -1 for the odd pieces of a
 * bidirectional ring, which mirror the even ones. */
static int piece_dir(uint32_t p, bool both) {
  return both && (p & 1u) ? -1 : 1;
}

/* The ring neighbour of r one step in direction dir, and the block r handles at offset
 * off (mirrored for dir -1): (r + dir * off) mod n. */
static uint32_t ring_at(uint32_t r, int dir, int64_t off, uint32_t n) {
  int64_t v = ((int64_t)r + dir * off) % (int64_t)n;
  return (uint32_t)(v < 0 ? v + n : v);
}

static tn_status_t ring_rs(algo_t *a, uint32_t r, bool both, uint32_t *tag, uint32_t *last_comp,
                           uint32_t *prev, tn_err_t *err) {
  uint32_t n = a->npus, k = a->chunks_per_npu;
  tn_status_t st = TN_OK;
  for (uint32_t s = 0; s + 1 < n && st == TN_OK; s++) {
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      int d = piece_dir(p, both);
      uint32_t c = ring_at(r, d, -(int64_t)s - 1, n) * k + p;
      st = algo_add_send(a, r, ring_at(r, d, 1, n), (int32_t)(*tag + p), algo_i_chunk_bytes(a, c),
                         &prev[p], s == 0 ? 0 : 1, &c, 1, NULL, err);
    }
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      int d = piece_dir(p, both);
      uint32_t c = ring_at(r, d, -(int64_t)s - 2, n) * k + p;
      st = algo_add_recv(a, r, ring_at(r, d, -1, n), (int32_t)(*tag + p), algo_i_chunk_bytes(a, c),
                         true, NULL, 0, &c, 1, &prev[p], err);
    }
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      uint32_t c = ring_at(r, piece_dir(p, both), -(int64_t)s - 2, n) * k + p;
      st = algo_add_comp(a, r, 0, &prev[p], 1, &c, 1, &prev[p], err);
    }
    *tag += k;
  }
  for (uint32_t p = 0; p < k; p++)
    last_comp[p] = prev[p];
  return st;
}

/* All-Gather over the ring: in step s (0..n-2) rank r sends block (r-s) mod n to r+1; a
 * block received in step s is forwarded in step s+1. first_dep[p] (or NULL) is what the
 * first send of piece p waits for: the reduction that completed block r in All-Reduce. */
static tn_status_t ring_ag(algo_t *a, uint32_t r, bool both, uint32_t *tag,
                           const uint32_t *first_dep, uint32_t *prev, tn_err_t *err) {
  uint32_t n = a->npus, k = a->chunks_per_npu;
  tn_status_t st = TN_OK;
  for (uint32_t s = 0; s + 1 < n && st == TN_OK; s++) {
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      int d = piece_dir(p, both);
      uint32_t c = ring_at(r, d, -(int64_t)s, n) * k + p;
      const uint32_t *dep = s > 0 ? &prev[p] : first_dep ? &first_dep[p] : NULL;
      st = algo_add_send(a, r, ring_at(r, d, 1, n), (int32_t)(*tag + p), algo_i_chunk_bytes(a, c),
                         dep, dep ? 1 : 0, &c, 1, NULL, err);
    }
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      int d = piece_dir(p, both);
      uint32_t c = ring_at(r, d, -(int64_t)s - 1, n) * k + p;
      st = algo_add_recv(a, r, ring_at(r, d, -1, n), (int32_t)(*tag + p), algo_i_chunk_bytes(a, c),
                         false, NULL, 0, &c, 1, &prev[p], err);
    }
    *tag += k;
  }
  return st;
}

tn_status_t algo_ring(tn_coll_t coll, uint32_t npus, uint64_t size_bytes, uint32_t chunks_per_npu,
                      algo_t **out, tn_err_t *err) {
  return algo_ring_both(coll, npus, size_bytes, chunks_per_npu, false, out, err);
}

tn_status_t algo_ring_both(tn_coll_t coll, uint32_t npus, uint64_t size_bytes,
                           uint32_t chunks_per_npu, bool both, algo_t **out, tn_err_t *err) {
  algo_t *a = NULL;
  uint32_t *scratch = NULL;
  if (coll == TN_ALLTOALL) {
    *out = NULL;
    return tn_err_set(err, TN_INVAL, "ring: no All-to-All baseline (Direct is the usual one)");
  }
  if (both && chunks_per_npu < 2) {
    *out = NULL;
    return tn_err_set(err, TN_INVAL, "ring: both directions need 2 chunks per NPU or more");
  }
  uint64_t steps = npus > 0 ? npus - 1 : 0;
  uint64_t tags = steps * chunks_per_npu * (coll == TN_ALLREDUCE ? 2u : 1u);
  tn_status_t st =
      algo_i_baseline_create("ring", coll, npus, size_bytes, chunks_per_npu, tags, &a, err);
  if (st != TN_OK) goto fail;
  /* Per piece: the node the next step depends on, and the final reduction. */
  if ((st = tn_calloc(2 * (size_t)chunks_per_npu, sizeof *scratch, &scratch, err)) != TN_OK)
    goto fail;
  uint32_t *prev = scratch, *last = scratch + chunks_per_npu;
  for (uint32_t r = 0; r < npus && npus > 1; r++) {
    /* Tags count the messages of the pair (r, r+1) in the order they are sent. */
    uint32_t tag = 0;
    if (coll != TN_ALLGATHER && (st = ring_rs(a, r, both, &tag, last, prev, err)) != TN_OK)
      goto fail;
    if (coll != TN_REDUCESCATTER &&
        (st = ring_ag(a, r, both, &tag, coll == TN_ALLREDUCE ? last : NULL, prev, err)) != TN_OK)
      goto fail;
  }
  if ((st = algo_fill_idle(a, err)) != TN_OK) goto fail;
  free(scratch);
  *out = a;
  return TN_OK;
fail:
  free(scratch);
  algo_free(a);
  *out = NULL;
  return st;
}

uint64_t algo_ring_mem_estimate(tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                                unsigned threads) {
  uint64_t n = npus, msgs = n * (n > 0 ? n - 1 : 0) * chunks_per_npu;
  /* Per message (B), measured with one thread (bench_mem, 32 to 256 NPUs, 64 MiB and 1 GiB):
   * All-Gather a SEND and a RECV, Reduce-Scatter also a COMP. With two threads the three
   * configurations are built and simulated side by side and the verifier and writer run
   * beside the last simulation: a quarter more. */
  uint64_t per = coll == TN_REDUCESCATTER ? 717 : coll == TN_ALLREDUCE ? 2 * 636 : 504;
  return tn_mem_threads(ALGO_MEM_PROCESS, msgs * per, 25, threads);
}
