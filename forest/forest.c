/* forest/forest.c — the entry points: pack the trees once (pack.c), plan each half on
 * them (plan.c, reduce.c). A Reduce-Scatter's trees are packed on the transposed fabric,
 * which on a symmetric fabric carries the same loads as the fabric itself, so there one
 * packing serves both halves of an All-Reduce. */
#include "forest/forest_internal.h"

/* Packing opts->packing on t (forest_i_packing). */
static tn_status_t pack(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                        forest_pack_t *pk, tn_err_t *err) {
  uint32_t trees;
  double slack;
  forest_i_packing(opts, &trees, &slack);
  return forest_i_pack(t, routes, trees, slack, pk, err);
}

/* The packing for a Reduce-Scatter on t: on t when it is symmetric, else on its transpose
 * (with that fabric's routes). */
static tn_status_t pack_reduce(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                               forest_pack_t *pk, tn_err_t *err) {
  if (topo_is_symmetric(t)) return pack(t, routes, opts, pk, err);
  topo_t *tt = NULL;
  topo_routes_t *troutes = NULL;
  tn_status_t st = topo_transpose(t, &tt, err);
  if (st == TN_OK) st = topo_routes_create(tt, &troutes, err);
  if (st == TN_OK) st = pack(tt, troutes, opts, pk, err);
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

/* One plan of a half, try tr (forest_tries), on pk into *out (initialised; empty on
 * failure). */
static tn_status_t plan_half(const topo_t *t, topo_routes_t *routes, const forest_pack_t *pk,
                             uint64_t size_bytes, const forest_opts_t *opts, bool reduce,
                             forest_try_t tr, schedule_t *out, tn_err_t *err) {
  forest_opts_t o = opts ? *opts : (forest_opts_t){.pace = reduce}; /* as the planners take NULL */
  o.chunks_per_npu = tr.chunks_per_npu;
  o.packing = tr.packing;
  return reduce ? forest_i_plan_reduce(t, routes, pk, size_bytes, &o, out, err)
                : forest_i_plan_gather(t, routes, pk, size_bytes, &o, out, err);
}

/* One half on its own: for every try forest_tries gives (or the caller's chunking, or a
 * second, finer count where FINER_MIN_CHUNK_BYTES allows) the packing (on t, or for a
 * Reduce-Scatter as pack_reduce says; once per packing) and its planner; the fastest plan
 * is kept, the first among equals. */
static tn_status_t run_half(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                            bool reduce, schedule_t *out, tn_err_t *err) {
  tn_coll_t coll = reduce ? TN_REDUCESCATTER : TN_ALLGATHER;
  schedule_init(out, coll, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  forest_try_t tries[FOREST_TRIES];
  uint32_t ntries = 1;
  if (opts && opts->chunks_per_npu) {
    tries[0] = (forest_try_t){opts->chunks_per_npu, opts->packing};
  } else {
    ntries = forest_tries(t->npus, size_bytes, tries);
    uint32_t fine = 2 * tries[0].chunks_per_npu;
    if (ntries == 1 && forest_i_chunks(t->npus, size_bytes, fine) == fine &&
        size_bytes / ((uint64_t)t->npus * fine) >= FINER_MIN_CHUNK_BYTES)
      tries[ntries++] = (forest_try_t){fine, tries[0].packing};
    if (opts && opts->packing != 0) { /* the caller's packing: the counts on it only */
      uint32_t m = 0;
      for (uint32_t i = 0; i < ntries; i++)
        if (tries[i].packing == 0)
          tries[m++] = (forest_try_t){tries[i].chunks_per_npu, opts->packing};
      ntries = m;
    }
  }
  forest_pack_t pk = {0};
  topo_routes_t *routes = NULL;
  st = topo_routes_create(t, &routes, err);
  schedule_free(out);
  bool have = false;
  for (uint32_t i = 0; st == TN_OK && i < ntries; i++) {
    if (i == 0 || tries[i].packing != tries[i - 1].packing) {
      forest_opts_t o = opts ? *opts : (forest_opts_t){0};
      o.packing = tries[i].packing;
      forest_i_pack_free(&pk);
      st = reduce ? pack_reduce(t, routes, &o, &pk, err) : pack(t, routes, &o, &pk, err);
    }
    schedule_t s;
    if (st == TN_OK) st = plan_half(t, routes, &pk, size_bytes, opts, reduce, tries[i], &s, err);
    if (st == TN_OK && (!have || s.time_ps < out->time_ps)) {
      if (have) schedule_free(out);
      *out = s;
      have = true;
    } else if (st == TN_OK) {
      schedule_free(&s);
    }
  }
  if (st != TN_OK) {
    if (have) schedule_free(out);
    schedule_init(out, coll, t->npus, 1, size_bytes);
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

/* The packings of an All-Reduce's halves: pk for the All-Gather on t, tpk for the
 * Reduce-Scatter where t is not symmetric (else pk serves both). */
typedef struct packs {
  forest_pack_t pk, tpk;
  bool symmetric;
} packs_t;

static tn_status_t packs_make(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                              packs_t *p, tn_err_t *err) {
  *p = (packs_t){.symmetric = topo_is_symmetric(t)};
  tn_status_t st = pack(t, routes, opts, &p->pk, err);
  if (st == TN_OK && !p->symmetric) st = pack_reduce(t, routes, opts, &p->tpk, err);
  return st;
}

static void packs_free(packs_t *p) {
  forest_i_pack_free(&p->pk);
  forest_i_pack_free(&p->tpk);
}

/* Both halves on the packings p (forest_run_halves after its packing). */
static tn_status_t halves_on(const topo_t *t, topo_routes_t *routes, const packs_t *p,
                             uint64_t size_bytes, const forest_opts_t *opts, schedule_t *rs,
                             schedule_t *ag, tn_err_t *err) {
  schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  tn_status_t st =
      forest_i_plan_reduce(t, routes, p->symmetric ? &p->pk : &p->tpk, size_bytes, opts, rs, err);
  forest_opts_t g = opts ? *opts : (forest_opts_t){.pace = true};
  g.chunks_per_npu = rs->chunks_per_npu;
  if (st == TN_OK) {
    schedule_free(ag);
    st = forest_i_plan_gather(t, routes, &p->pk, size_bytes, &g, ag, err);
  }
  if (st != TN_OK) {
    schedule_free(rs);
    schedule_free(ag);
    schedule_init(rs, TN_REDUCESCATTER, t->npus, 1, size_bytes);
    schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  }
  return st;
}

tn_status_t forest_run_halves(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *rs, schedule_t *ag, tn_err_t *err) {
  schedule_init(rs, TN_REDUCESCATTER, t->npus, 1, size_bytes);
  schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  packs_t p = {0};
  topo_routes_t *routes = NULL;
  st = topo_routes_create(t, &routes, err);
  if (st == TN_OK) st = packs_make(t, routes, opts, &p, err);
  if (st == TN_OK) {
    schedule_free(rs);
    schedule_free(ag);
    st = halves_on(t, routes, &p, size_bytes, opts, rs, ag, err);
  }
  packs_free(&p);
  topo_routes_free(routes);
  return st;
}

/* forest_allreduce at try tr on the packings p. */
static tn_status_t allreduce_at(const topo_t *t, topo_routes_t *routes, const packs_t *p,
                                uint64_t size_bytes, const forest_opts_t *opts, forest_try_t tr,
                                schedule_t *ar, tn_err_t *err) {
  forest_opts_t f = *opts;
  f.chunks_per_npu = tr.chunks_per_npu;
  f.packing = tr.packing;
  f.keep_ties = false; /* the halves' own pairs: the joined set's replay gives its own */
  schedule_t rs, ag;
  schedule_init(ar, TN_ALLREDUCE, t->npus, 1, size_bytes);
  tn_status_t st = halves_on(t, routes, p, size_bytes, &f, &rs, &ag, err);
  if (st == TN_OK) {
    schedule_free(ar);
    st = schedule_join_allreduce(&rs, &ag, ar, err);
  }
  if (st == TN_OK)
    st = opts->keep_ties ? schedule_replay_ties(t, ar, opts->tie_window_ps, err)
                         : schedule_replay(t, ar, err);
  schedule_free(&rs);
  schedule_free(&ag);
  if (st != TN_OK) {
    schedule_free(ar);
    schedule_init(ar, TN_ALLREDUCE, t->npus, 1, size_bytes);
  }
  return st;
}

tn_status_t forest_allreduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                             schedule_t *out, tn_err_t *err) {
  schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  forest_opts_t o = opts ? *opts : (forest_opts_t){.pace = true};
  forest_try_t tries[FOREST_TRIES] = {{o.chunks_per_npu, o.packing}};
  uint32_t ntries = o.chunks_per_npu ? 1 : forest_tries(t->npus, size_bytes, tries);
  packs_t p = {0};
  topo_routes_t *routes = NULL;
  bool have = false;
  st = topo_routes_create(t, &routes, err);
  for (uint32_t i = 0; st == TN_OK && i < ntries; i++) {
    if (i == 0 || tries[i].packing != tries[i - 1].packing) {
      forest_opts_t po = o;
      po.packing = tries[i].packing;
      packs_free(&p);
      st = packs_make(t, routes, &po, &p, err);
    }
    schedule_t s;
    if (st == TN_OK) st = allreduce_at(t, routes, &p, size_bytes, &o, tries[i], &s, err);
    if (st == TN_OK && (!have || s.time_ps < out->time_ps)) {
      schedule_free(out);
      *out = s;
      have = true;
    } else if (st == TN_OK) {
      schedule_free(&s);
    }
  }
  packs_free(&p);
  topo_routes_free(routes);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  }
  return st;
}

uint64_t forest_mem_estimate(uint32_t n, tn_coll_t coll, uint64_t size, uint32_t chunks_per_npu) {
  if (n < 2) return FOREST_MEM_BASE;
  /* the automatic chunking's largest count: the plan kept may be the finest tried */
  forest_try_t tries[FOREST_TRIES];
  uint64_t k = chunks_per_npu;
  for (uint32_t i = 0, m = chunks_per_npu ? 0 : forest_tries(n, size, tries); i < m; i++)
    if (tries[i].chunks_per_npu > k) k = tries[i].chunks_per_npu;
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
