/* greedy/greedy.c — greedy_run: checks the fabric and the memory the plan will need, then
 * plans the All-Gather at the requested chunking or, when asked to choose, at a few
 * candidate chunkings, keeping the fastest predicted (plan.c does one pass). */
#include "greedy/greedy_internal.h"

#include <stdlib.h>

/* Peak memory greedy_run accepts (plan plus its lowering), refused above with the figure. */
#define GREEDY_MEM_CAP ((uint64_t)4 << 30)
/* Candidate chunkings tried when chunks_per_npu is 0, finest last. */
static const uint32_t k_candidates[] = {1, 2, 4, 8, 16, 32};
/* Work budget of the automatic search, in planned (NPU, chunk) deliveries summed over the
 * candidates tried: a deterministic stand-in for a time budget (about 0.5 us each). */
#define GREEDY_SEARCH_BUDGET ((uint64_t)1 << 21)
/* The search stops once a plan is within this factor of the bandwidth bound, or when a
 * finer chunking gained less than this fraction. */
#define GREEDY_GOOD_ENOUGH 1.002
#define GREEDY_MIN_GAIN 0.005
/* A chunking is only tried when its chunks are at least this big (finer cuts only add
 * events once latency is pipelined away). */
#define GREEDY_MIN_CHUNK_BYTES 1024u

static tn_status_t check_memory(const topo_t *t, uint32_t k, tn_coll_t coll, tn_err_t *err) {
  uint64_t need = greedy_i_mem_estimate(t, k, coll);
  if (need <= GREEDY_MEM_CAP) return TN_OK;
  return tn_err_set(err, TN_LIMIT,
                    "greedy: %u NPUs x %u chunks need about %.1f GiB to plan and lower, over "
                    "the %.0f GiB cap",
                    t->npus, k, (double)need / TN_GIB, (double)GREEDY_MEM_CAP / TN_GIB);
}

/* Tries the candidate chunkings in order and keeps the fastest predicted (ties: fewer
 * chunks). Stops when the next candidate would exceed the work budget, the memory cap or
 * the minimum chunk size, when a finer cut did not help twice in a row or helped less
 * than 0.5%, or once the best is within 0.2% of the bandwidth bound. Every rule depends on the
 * inputs only, so the choice is deterministic. */
static tn_status_t search(const topo_t *t, topo_routes_t *routes, tn_coll_t coll, uint64_t size,
                          uint64_t seed, schedule_t *out, tn_err_t *err) {
  bool reduces = coll != TN_ALLGATHER;
  uint64_t n = t->npus, spent = 0;
  double good = GREEDY_GOOD_ENOUGH * (double)topo_lower_bound_ps(t, TN_ALLGATHER, size);
  uint32_t worse = 0;
  bool have = false;
  for (size_t i = 0; i < sizeof k_candidates / sizeof *k_candidates; i++) {
    uint32_t k = k_candidates[i];
    uint64_t work = n * (n - 1) * k;
    /* Reduce-Scatter and All-Reduce skip one chunk per NPU if 2 are possible. */
    if (reduces && k == 1 && size / (n * 2) >= GREEDY_MIN_CHUNK_BYTES &&
        greedy_i_mem_estimate(t, 2, coll) <= GREEDY_MEM_CAP)
      continue;
    if (have && (spent + work > GREEDY_SEARCH_BUDGET || size / (n * k) < GREEDY_MIN_CHUNK_BYTES ||
                 size < n * k || greedy_i_mem_estimate(t, k, coll) > GREEDY_MEM_CAP))
      break;
    if (!have) {
      tn_status_t st = check_memory(t, k, coll, err);
      if (st != TN_OK) return st;
    }
    schedule_t s;
    tn_status_t st = greedy_i_plan(t, routes, size, k, seed, &s, err);
    if (st != TN_OK) {
      schedule_free(&s);
      return st;
    }
    spent += work;
    if (!have || s.time_ps < out->time_ps) {
      double gain = have ? (double)(out->time_ps - s.time_ps) / (double)out->time_ps : 1.0;
      if (have) schedule_free(out);
      *out = s;
      have = true;
      worse = 0;
      if ((double)out->time_ps <= good || gain < GREEDY_MIN_GAIN) break;
    } else {
      schedule_free(&s);
      if (++worse == 2) break;
    }
  }
  return TN_OK;
}

tn_status_t greedy_run(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                       schedule_t *out, tn_err_t *err) {
  return greedy_run_for(t, TN_ALLGATHER, size_bytes, opts, out, err);
}

tn_status_t greedy_run_for(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const greedy_opts_t *opts, schedule_t *out, tn_err_t *err) {
  uint32_t k = opts ? opts->chunks_per_npu : 0;
  schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  uint64_t seed = opts ? opts->seed : 0;
  if (t->npus == 0) return tn_err_set(err, TN_INVAL, "greedy: fabric '%s' has no NPU", t->name);
  tn_status_t st = topo_check_connected(t, err);
  if (st != TN_OK) return st;
  if (size_bytes < (uint64_t)t->npus * (k ? k : 1))
    return tn_err_set(err, TN_INVAL,
                      "greedy: size %llu B is smaller than one byte per chunk (%u NPUs x %u "
                      "chunks)",
                      (unsigned long long)size_bytes, t->npus, k ? k : 1);
  if ((uint64_t)t->npus * (k ? k : 1) > UINT32_MAX / 2)
    return tn_err_set(err, TN_LIMIT, "greedy: %u NPUs x %u chunks is too many chunks", t->npus, k);
  if (t->npus == 1) return TN_OK; /* nothing to move */
  if (k != 0 && (st = check_memory(t, k, coll, err)) != TN_OK) return st;
  topo_routes_t *routes = NULL;
  if ((st = topo_routes_create(t, &routes, err)) != TN_OK) return st;
  schedule_free(out);
  if (k != 0) {
    st = greedy_i_plan(t, routes, size_bytes, k, seed, out, err);
  } else {
    schedule_init(out, TN_ALLGATHER, t->npus, 1, size_bytes);
    st = search(t, routes, coll, size_bytes, seed, out, err);
  }
  topo_routes_free(routes);
  if (st != TN_OK) { /* leave *out empty so a caller that frees or not is right */
    schedule_free(out);
    schedule_init(out, TN_ALLGATHER, t->npus, k ? k : 1, size_bytes);
  }
  return st;
}
