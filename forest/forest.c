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

/* One half on its own: the packing (on t, or for a Reduce-Scatter as pack_reduce says),
 * then its planner. */
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
