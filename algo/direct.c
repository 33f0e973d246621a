/* algo/direct.c — the Direct (all-pairs) baselines of msccl-tools' examples: every rank
 * exchanges blocks straight with every other rank, all at once. A producer beside the
 * Ring baselines; its output goes to emit/, sim/ and the verifier. */
#include "algo/algo_internal.h"

#include <stdlib.h>

/* Reduce-Scatter: rank r sends its partial of block j to rank j (for every j != r, starting
 * at r+1 so that not every rank talks to rank 0 first); rank r receives the n-1 partials of
 * its own block as reduce-RECVs and adds them with one COMP per piece. comp[p] receives the
 * id of that COMP. Tags 0..K-1 per pair. */
static tn_status_t direct_rs(algo_t *a, uint32_t r, uint32_t *comp, uint32_t *deps, tn_err_t *err) {
  uint32_t n = a->npus, k = a->chunks_per_npu;
  tn_status_t st = TN_OK;
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t dst = (r + i) % n;
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      uint32_t c = dst * k + p;
      st =
          algo_add_send(a, r, dst, (int32_t)p, algo_i_chunk_bytes(a, c), NULL, 0, &c, 1, NULL, err);
    }
  }
  /* deps holds, per piece p, the n-1 reduce-RECV ids at deps[p * (n-1) + i-1]. */
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t src = (r + n - i) % n;
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      uint32_t c = r * k + p;
      st = algo_add_recv(a, r, src, (int32_t)p, algo_i_chunk_bytes(a, c), true, NULL, 0, &c, 1,
                         &deps[(size_t)p * (n - 1) + i - 1], err);
    }
  }
  for (uint32_t p = 0; p < k && st == TN_OK; p++) {
    uint32_t c = r * k + p;
    st = algo_add_comp(a, r, 0, &deps[(size_t)p * (n - 1)], n - 1, &c, 1, &comp[p], err);
  }
  return st;
}

/* All-Gather: rank r sends each piece of its block to every other rank and receives every
 * other rank's block as copy-RECVs. first_dep[p] (or NULL) is what the sends of piece p wait
 * for: the reduction that completed block r in All-Reduce. Tags tag0..tag0+K-1 per pair. */
static tn_status_t direct_ag(algo_t *a, uint32_t r, uint32_t tag0, const uint32_t *first_dep,
                             tn_err_t *err) {
  uint32_t n = a->npus, k = a->chunks_per_npu;
  tn_status_t st = TN_OK;
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t dst = (r + i) % n;
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      uint32_t c = r * k + p;
      st = algo_add_send(a, r, dst, (int32_t)(tag0 + p), algo_i_chunk_bytes(a, c),
                         first_dep ? &first_dep[p] : NULL, first_dep ? 1 : 0, &c, 1, NULL, err);
    }
  }
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t src = (r + n - i) % n;
    for (uint32_t p = 0; p < k && st == TN_OK; p++) {
      uint32_t c = src * k + p;
      st = algo_add_recv(a, r, src, (int32_t)(tag0 + p), algo_i_chunk_bytes(a, c), false, NULL, 0,
                         &c, 1, NULL, err);
    }
  }
  return st;
}

/* All-to-All: rank r sends each piece of its block for rank d to d (d from r+1 on, as NCCL
 * and MSCCLang's alltoall rotate their peers) and receives every rank's block for it as
 * copy-RECVs. m pieces per block; tags 0..m-1 per pair. */
static tn_status_t direct_a2a(algo_t *a, uint32_t r, uint32_t m, tn_err_t *err) {
  uint32_t n = a->npus, k = a->chunks_per_npu;
  tn_status_t st = TN_OK;
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t dst = (r + i) % n;
    for (uint32_t p = 0; p < m && st == TN_OK; p++) {
      uint32_t c = r * k + dst * m + p;
      st =
          algo_add_send(a, r, dst, (int32_t)p, algo_i_chunk_bytes(a, c), NULL, 0, &c, 1, NULL, err);
    }
  }
  for (uint32_t i = 1; i < n && st == TN_OK; i++) {
    uint32_t src = (r + n - i) % n;
    for (uint32_t p = 0; p < m && st == TN_OK; p++) {
      uint32_t c = src * k + r * m + p;
      st = algo_add_recv(a, r, src, (int32_t)p, algo_i_chunk_bytes(a, c), false, NULL, 0, &c, 1,
                         NULL, err);
    }
  }
  return st;
}

tn_status_t algo_direct(tn_coll_t coll, uint32_t npus, uint64_t size_bytes, uint32_t chunks_per_npu,
                        algo_t **out, tn_err_t *err) {
  algo_t *a = NULL;
  uint32_t *comp = NULL, *deps = NULL;
  uint64_t tags = (uint64_t)chunks_per_npu * (coll == TN_ALLREDUCE ? 2u : 1u);
  tn_status_t st =
      algo_i_baseline_create("direct", coll, npus, size_bytes, chunks_per_npu, tags, &a, err);
  if (st != TN_OK) goto fail;
  if ((st = tn_calloc(chunks_per_npu, sizeof *comp, &comp, err)) != TN_OK) goto fail;
  if ((st = tn_calloc((size_t)chunks_per_npu * (npus - 1), sizeof *deps, &deps, err)) != TN_OK)
    goto fail;
  for (uint32_t r = 0; r < npus && npus > 1 && coll == TN_ALLTOALL; r++)
    if ((st = direct_a2a(a, r, chunks_per_npu, err)) != TN_OK) goto fail;
  for (uint32_t r = 0; r < npus && npus > 1 && coll != TN_ALLTOALL; r++) {
    if (coll != TN_ALLGATHER && (st = direct_rs(a, r, comp, deps, err)) != TN_OK) goto fail;
    if (coll != TN_REDUCESCATTER &&
        (st = direct_ag(a, r, coll == TN_ALLREDUCE ? chunks_per_npu : 0,
                        coll == TN_ALLREDUCE ? comp : NULL, err)) != TN_OK)
      goto fail;
  }
  if ((st = algo_fill_idle(a, err)) != TN_OK) goto fail;
  free(comp);
  free(deps);
  *out = a;
  return TN_OK;
fail:
  free(comp);
  free(deps);
  algo_free(a);
  *out = NULL;
  return st;
}

/* ---- Two-Step All-to-All -------------------------------------------------------------- */

/* The chunks one Two-Step message carries, into ch: step 1 from s to local peer p, the m
 * pieces s addresses to every NPU with p's local index; step 2 from s to remote d, the m
 * pieces every NPU of s's group addresses to d. */
static uint32_t two_step_chunks(const algo_t *a, const uint32_t *member, uint32_t G,
                                uint32_t N, uint32_t m, int step, uint32_t s, uint32_t sa,
                                uint32_t peer, uint32_t pg, uint32_t *ch) {
  uint32_t k = a->chunks_per_npu, nc = 0;
  for (uint32_t x = 0; x < (step == 1 ? N : G); x++)
    for (uint32_t j = 0; j < m; j++)
      ch[nc++] = step == 1 ? s * k + member[x * G + pg] * m + j
                           : member[sa * G + x] * k + peer * m + j;
  return nc;
}

static uint64_t chunks_bytes(const algo_t *a, const uint32_t *ch, uint32_t nc) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < nc; i++)
    b += algo_i_chunk_bytes(a, ch[i]);
  return b;
}

tn_status_t algo_two_step(uint32_t npus, const uint32_t *member, uint32_t groups,
                          uint64_t size_bytes, uint32_t m, algo_t **out, tn_err_t *err) {
  *out = NULL;
  if (groups < 2 || npus % groups != 0 || npus / groups < 2)
    return tn_err_set(err, TN_INVAL,
                      "two-step: needs at least 2 groups of at least 2 NPUs each, the same "
                      "size (%u NPUs in %u groups)", npus, groups);
  uint32_t G = npus / groups, N = groups;
  algo_t *a = NULL;
  uint32_t *pos = NULL, *ch = NULL, *deps = NULL;
  tn_status_t st = algo_i_baseline_create("twostep", TN_ALLTOALL, npus, size_bytes, m, 1, &a, err);
  if (st == TN_OK) st = tn_malloc(npus, sizeof *pos, &pos, err);
  if (st == TN_OK) st = tn_malloc((size_t)(N > G ? N : G) * m, sizeof *ch, &ch, err);
  if (st == TN_OK) st = tn_malloc(G, sizeof *deps, &deps, err);
  for (uint32_t i = 0; st == TN_OK && i < npus; i++)
    pos[member[i]] = i;
  for (uint32_t s = 0; st == TN_OK && s < npus; s++) {
    uint32_t sa = pos[s] / G, sg = pos[s] % G, nd = 0;
    /* Step 1: to every local peer (rotated), what goes to its local index everywhere. */
    for (uint32_t i = 1; st == TN_OK && i < G; i++) {
      uint32_t pg = (sg + i) % G, p = member[sa * G + pg];
      uint32_t nc = two_step_chunks(a, member, G, N, m, 1, s, sa, p, pg, ch);
      st = algo_add_send(a, s, p, 0, chunks_bytes(a, ch, nc), NULL, 0, ch, nc, NULL, err);
    }
    for (uint32_t i = 1; st == TN_OK && i < G; i++) {
      uint32_t qg = (sg + G - i) % G, q = member[sa * G + qg];
      uint32_t nc = two_step_chunks(a, member, G, N, m, 1, q, sa, s, sg, ch);
      st = algo_add_recv(a, s, q, 0, chunks_bytes(a, ch, nc), false, NULL, 0, ch, nc,
                         &deps[nd++], err);
    }
    /* Step 2: to its counterpart in every other group (rotated), once step 1 is in. */
    for (uint32_t i = 1; st == TN_OK && i < N; i++) {
      uint32_t d = member[((sa + i) % N) * G + sg];
      uint32_t nc = two_step_chunks(a, member, G, N, m, 2, s, sa, d, sg, ch);
      st = algo_add_send(a, s, d, 0, chunks_bytes(a, ch, nc), deps, nd, ch, nc, NULL, err);
    }
    for (uint32_t i = 1; st == TN_OK && i < N; i++) {
      uint32_t ba = (sa + N - i) % N, q = member[ba * G + sg];
      uint32_t nc = two_step_chunks(a, member, G, N, m, 2, q, ba, s, sg, ch);
      st = algo_add_recv(a, s, q, 0, chunks_bytes(a, ch, nc), false, NULL, 0, ch, nc, NULL, err);
    }
  }
  free(pos);
  free(ch);
  free(deps);
  if (st != TN_OK) {
    algo_free(a);
    return st;
  }
  *out = a;
  return TN_OK;
}

uint64_t algo_direct_mem_estimate(tn_coll_t coll, uint32_t npus, uint32_t chunks_per_npu,
                                  unsigned threads) {
  uint64_t n = npus, msgs = n * (n > 0 ? n - 1 : 0) * chunks_per_npu;
  /* Per message (B), measured; every rank's n - 1 messages of a piece are in flight at once,
   * so the simulator holds more per message than for the Ring. */
  /* All-to-All (bench_mem on 12 fabrics of 8 to 128 NPUs, 1 MiB and 64 MiB, one and two
   * threads): 8.7 MiB and 820-840 B per message at one thread, 25-32% more per message
   * at two; the old thread-free 10 MiB + 1050 B read 1.07-1.43 at one thread. */
  if (coll == TN_ALLTOALL) return tn_mem_threads(ALGO_MEM_PROCESS, msgs * 840, 25, threads);
  uint64_t per = coll == TN_ALLREDUCE ? 2 * 800 : 810;
  /* (measured with one thread, bench_mem, 32 to 256 NPUs at 64 MiB and 1 GiB; with two the
   * verifier and writer beside the last simulation hold a fifth more) */
  return tn_mem_threads(ALGO_MEM_PROCESS, msgs * per, 22, threads);
}

uint64_t algo_two_step_mem_estimate(uint32_t npus, uint32_t m) {
  /* Two steps, each listing every NPU's n * m pieces on a SEND and a RECV (4 B a chunk id),
   * held by the set, its order-proof copy and the verifier's slots. */
  uint64_t n = npus, ids = 2 * n * n * m * 2;
  return ALGO_MEM_BASE + ids * 4 * 4;
}
