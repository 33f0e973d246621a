/* forest/forest.c — the entry points: pack the trees once (pack.c), plan each half on
 * them (plan.c, reduce.c). A Reduce-Scatter's trees are packed on the transposed fabric,
 * which on a symmetric fabric carries the same loads as the fabric itself, so there one
 * packing serves both halves of an All-Reduce. */
#include "forest/forest_internal.h"

static uint32_t trees_of(const forest_opts_t *opts) {
  return opts && opts->trees_per_npu ? opts->trees_per_npu : FOREST_TREES;
}

/* The packing for a Reduce-Scatter on t: on t when it is symmetric, else on its transpose
 * (with that fabric's routes). */
static tn_status_t pack_reduce(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                               forest_pack_t *pk, tn_err_t *err) {
  if (topo_is_symmetric(t)) return forest_i_pack(t, routes, trees_of(opts), pk, err);
  topo_t *tt = NULL;
  topo_routes_t *troutes = NULL;
  tn_status_t st = topo_transpose(t, &tt, err);
  if (st == TN_OK) st = topo_routes_create(tt, &troutes, err);
  if (st == TN_OK) st = forest_i_pack(tt, troutes, trees_of(opts), pk, err);
  topo_routes_free(troutes);
  topo_free(tt);
  return st;
}

/* With the automatic chunking, a half whose chunks stay at least this big at twice the
 * usual count is planned at that count too, and the faster plan kept (the usual one among
 * equals). Measured on leaf-32 at 1 GiB (256 KiB chunks at 128 per NPU, 128 KiB at 256):
 * Reduce-Scatter 1.032 -> 1.023 of the bound, All-Gather 1.022 -> 1.014; at 64 MiB (8 KiB
 * chunks) the finer plans were worse (All-Gather 1.030 -> 1.180), and the All-Reduce gains
 * nothing (1.050 -> 1.051, its synthesis 1.3 -> 9.0 s), so it keeps one count. */
#define FINER_MIN_CHUNK_BYTES (128u << 10)

/* One half on its own: the packing (on t, or for a Reduce-Scatter as pack_reduce says),
 * then its planner (at a second, finer chunking where FINER_MIN_CHUNK_BYTES allows). */
static tn_status_t run_half(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                            bool reduce, schedule_t *out, tn_err_t *err) {
  schedule_init(out, reduce ? TN_REDUCESCATTER : TN_ALLGATHER, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  forest_pack_t pk = {0};
  topo_routes_t *routes = NULL;
  st = topo_routes_create(t, &routes, err);
  if (st == TN_OK)
    st = reduce ? pack_reduce(t, routes, opts, &pk, err)
                : forest_i_pack(t, routes, trees_of(opts), &pk, err);
  if (st == TN_OK)
    st = reduce ? forest_i_plan_reduce(t, routes, &pk, size_bytes, opts, out, err)
                : forest_i_plan_gather(t, routes, &pk, size_bytes, opts, out, err);
  uint32_t k = out->chunks_per_npu, fine = 2 * k;
  bool finer = st == TN_OK && !(opts && opts->chunks_per_npu) &&
               forest_i_chunks(t->npus, size_bytes, fine) == fine &&
               size_bytes / ((uint64_t)t->npus * fine) >= FINER_MIN_CHUNK_BYTES;
  if (finer) {
    forest_opts_t o =
        opts ? *opts : (forest_opts_t){.pace = reduce}; /* as the planners take NULL */
    o.chunks_per_npu = fine;
    schedule_t s;
    st = reduce ? forest_i_plan_reduce(t, routes, &pk, size_bytes, &o, &s, err)
                : forest_i_plan_gather(t, routes, &pk, size_bytes, &o, &s, err);
    if (st == TN_OK && s.time_ps < out->time_ps) {
      schedule_free(out);
      *out = s;
    } else {
      schedule_free(&s);
    }
    if (st != TN_OK) {
      schedule_free(out);
      schedule_init(out, reduce ? TN_REDUCESCATTER : TN_ALLGATHER, t->npus, 1, size_bytes);
    }
  }
  forest_i_pack_free(&pk);
  topo_routes_free(routes);
  return st;
}

tn_status_t forest_run(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                       schedule_t *out, tn_err_t *err) {
  return run_half(t, size_bytes, opts, false, out, err);
}

tn_status_t forest_run_reduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *out, tn_err_t *err) {
  return run_half(t, size_bytes, opts, true, out, err);
}

tn_status_t forest_run_halves(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *rs, schedule_t *ag, tn_err_t *err) {
  schedule_init(rs, TN_REDUCESCATTER, t->npus, 1, size_bytes);
  schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  forest_pack_t pk = {0}, tpk = {0};
  topo_routes_t *routes = NULL;
  bool symmetric = topo_is_symmetric(t);
  st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = forest_i_pack(t, routes, trees_of(opts), &pk, err);
  if (st == TN_OK && !symmetric) st = pack_reduce(t, routes, opts, &tpk, err);
  if (st == TN_OK)
    st = forest_i_plan_reduce(t, routes, symmetric ? &pk : &tpk, size_bytes, opts, rs, err);
  forest_opts_t g = opts ? *opts : (forest_opts_t){.pace = true};
  g.chunks_per_npu = rs->chunks_per_npu;
  if (st == TN_OK) st = forest_i_plan_gather(t, routes, &pk, size_bytes, &g, ag, err);
  forest_i_pack_free(&pk);
  forest_i_pack_free(&tpk);
  topo_routes_free(routes);
  if (st != TN_OK) {
    schedule_free(rs);
    schedule_free(ag);
    schedule_init(rs, TN_REDUCESCATTER, t->npus, 1, size_bytes);
    schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  }
  return st;
}

uint64_t forest_mem_estimate(uint32_t n, tn_coll_t coll, uint64_t size, uint32_t chunks_per_npu) {
  if (n < 2) return FOREST_MEM_BASE;
  /* the automatic chunking's count (MAX_CHUNKS of plan.c and reduce.c: 128) */
  uint64_t k = chunks_per_npu ? chunks_per_npu : forest_i_chunks(n, size, 128u);
  uint64_t msgs = (uint64_t)n * (n - 1) * k * (coll == TN_ALLREDUCE ? 2u : 1u);
  /* Per message (B) of the whole `tenet synth -a forest` process, measured at 1 GiB on
   * switch-64 and switch-256 (bench_mem): constant for a Reduce-Scatter, growing with the
   * NPUs for an All-Gather (its pacings and chunkings planned side by side) and most for an
   * All-Reduce (both halves, their pacings; 6.5 GB for 1.04M messages on switch-256). */
  uint64_t per = coll == TN_REDUCESCATTER ? 1090
                 : coll == TN_ALLREDUCE   ? 360 + 23 * (uint64_t)n
                                          : 590 + 4 * (uint64_t)n;
  return FOREST_MEM_BASE + msgs * per;
}
