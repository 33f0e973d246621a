/* forest/forest.c — the entry points: pack the trees once (pack.c), plan each half on
 * them (plan.c, reduce.c). A Reduce-Scatter's trees are packed on the transposed fabric,
 * which on a symmetric fabric carries the same loads as the fabric itself, so there one
 * packing serves both halves of an All-Reduce. */
#include "forest/forest_internal.h"

/* Packing opts->packing on t (forest_i_packing). */
static tn_status_t pack(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                        forest_pack_t *pk, tn_err_t *err) {
  if (opts && opts->packing == FOREST_PACK_LEVELS) return forest_i_pack_levels(t, routes, pk, err);
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

/* What a search plans: one half, or both joined into an All-Reduce. */
typedef enum { GATHER, REDUCE, BOTH } what_t;

static tn_coll_t coll_of(what_t w) {
  return w == GATHER ? TN_ALLGATHER : w == REDUCE ? TN_REDUCESCATTER : TN_ALLREDUCE;
}

/* The packings a plan of w needs, on packing opts->packing: pk on t for an All-Gather (and
 * for a Reduce-Scatter on a symmetric t, whose transpose carries the same loads), tpk on
 * t's transpose for a Reduce-Scatter elsewhere. */
typedef struct packs {
  forest_pack_t pk, tpk;
  bool symmetric;
} packs_t;

static void packs_free(packs_t *p) {
  forest_i_pack_free(&p->pk);
  forest_i_pack_free(&p->tpk);
}

static tn_status_t packs_make(const topo_t *t, topo_routes_t *routes, const forest_opts_t *opts,
                              what_t w, packs_t *p, tn_err_t *err) {
  packs_free(p);
  p->symmetric = topo_is_symmetric(t);
  tn_status_t st = TN_OK;
  if (w != REDUCE || p->symmetric) st = pack(t, routes, opts, &p->pk, err);
  if (st == TN_OK && w != GATHER && !p->symmetric) st = pack_reduce(t, routes, opts, &p->tpk, err);
  return st;
}

static const forest_pack_t *reduce_pack(const packs_t *p) {
  return p->symmetric ? &p->pk : &p->tpk;
}

/* Both halves on the packings p at opts' chunking (forest_run_halves after its packing):
 * the All-Gather at the Reduce-Scatter's chunk count. */
static tn_status_t halves_on(const topo_t *t, topo_routes_t *routes, const packs_t *p,
                             uint64_t size_bytes, const forest_opts_t *opts, schedule_t *rs,
                             schedule_t *ag, tn_err_t *err) {
  schedule_init(ag, TN_ALLGATHER, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_plan_reduce(t, routes, reduce_pack(p), size_bytes, opts, rs, err);
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

/* On the two-level trees of a symmetric fabric, the All-Reduce whose Reduce-Scatter is the
 * unpaced All-Gather run backwards (schedule_reverse), joined to that All-Gather: up the
 * trees the forward planner waits at every relay for the slowest of its group, run
 * backwards the plan does not. Replaces *out (a joined, replayed All-Reduce) when faster.
 * o: the try's options (keep: its ties wanted). Up to BACKWARDS_MAX_NPUS NPUs: at 1 MiB it
 * took rail-4x8-degraded from 1.566 of the bound to 1.312 and leaf-32 from 1.169 to 1.156
 * for about 0.15 s; hierarchical-16x8 (128 NPUs) gained nothing for 1.4 s of CPU. */
#define BACKWARDS_MAX_NPUS 64u
static tn_status_t levels_backwards(const topo_t *t, topo_routes_t *routes, const packs_t *p,
                                    uint64_t size_bytes, const forest_opts_t *o, bool keep,
                                    schedule_t *out, tn_err_t *err) {
  forest_opts_t u = *o;
  u.pace = false;
  u.keep_ties = false;
  schedule_t ag, rs, both;
  schedule_init(&rs, TN_REDUCESCATTER, t->npus, 1, size_bytes);
  schedule_init(&both, TN_ALLREDUCE, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_plan_gather(t, routes, &p->pk, size_bytes, &u, &ag, err);
  if (st == TN_OK) {
    schedule_free(&rs);
    st = schedule_reverse(&ag, &rs, err);
  }
  if (st == TN_OK) {
    schedule_free(&both);
    st = schedule_join_allreduce(&rs, &ag, &both, err);
  }
  if (st == TN_OK)
    st = keep ? schedule_replay_ties(t, &both, o->tie_window_ps, err)
              : schedule_replay(t, &both, err);
  if (st == TN_OK && both.time_ps < out->time_ps) {
    schedule_free(out);
    *out = both;
  } else {
    schedule_free(&both);
  }
  schedule_free(&ag);
  schedule_free(&rs);
  return st;
}

/* One plan of w at try tr on the packings p into *out (initialised; empty on failure):
 * a half by its planner, an All-Reduce as both halves joined chunk by chunk and replayed,
 * its pairs kept when opts->keep_ties. opts as the caller gave them (NULL: each planner's
 * default, as forest_run and forest_run_reduce take NULL). */
static tn_status_t plan_try(const topo_t *t, topo_routes_t *routes, const packs_t *p,
                            uint64_t size_bytes, const forest_opts_t *opts, what_t w,
                            forest_try_t tr, schedule_t *out, tn_err_t *err) {
  forest_opts_t o = opts ? *opts : (forest_opts_t){.pace = w != GATHER};
  o.chunks_per_npu = tr.chunks_per_npu;
  o.packing = tr.packing;
  if (w == GATHER) return forest_i_plan_gather(t, routes, &p->pk, size_bytes, &o, out, err);
  if (w == REDUCE) return forest_i_plan_reduce(t, routes, reduce_pack(p), size_bytes, &o, out, err);
  bool keep = o.keep_ties;
  o.keep_ties = false; /* the halves' own pairs: the joined set's replay gives its own */
  schedule_t rs, ag;
  schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  tn_status_t st = halves_on(t, routes, p, size_bytes, &o, &rs, &ag, err);
  if (st == TN_OK) {
    schedule_free(out);
    st = schedule_join_allreduce(&rs, &ag, out, err);
  }
  if (st == TN_OK)
    st = keep ? schedule_replay_ties(t, out, o.tie_window_ps, err) : schedule_replay(t, out, err);
  schedule_free(&rs);
  schedule_free(&ag);
  if (st == TN_OK && tr.packing == FOREST_PACK_LEVELS && p->symmetric &&
      t->npus <= BACKWARDS_MAX_NPUS)
    st = levels_backwards(t, routes, p, size_bytes, &o, keep, out, err);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, TN_ALLREDUCE, t->npus, 1, size_bytes);
  }
  return st;
}

/* Plans w at the caller's chunking, or at every try forest_tries gives (a half also at a
 * second, finer count where FINER_MIN_CHUNK_BYTES allows), packing once per packing, and
 * keeps the fastest, the first among equals. A caller's packing other than the usual
 * restricts the tries to the counts on it. */
static tn_status_t search(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts, what_t w,
                          schedule_t *out, tn_err_t *err) {
  tn_coll_t coll = coll_of(w);
  schedule_init(out, coll, t->npus, 1, size_bytes);
  tn_status_t st = forest_i_check(t, size_bytes, 1, err);
  if (st != TN_OK) return st;
  uint32_t packing = opts ? opts->packing : 0;
  forest_try_t tries[FOREST_TRIES + 1];
  uint32_t ntries = 1;
  if (opts && opts->chunks_per_npu) {
    tries[0] = (forest_try_t){opts->chunks_per_npu, packing};
  } else {
    ntries = forest_tries(t, size_bytes, tries);
    uint32_t fine = 2 * tries[0].chunks_per_npu, usual = 0;
    for (uint32_t i = 0; i < ntries; i++)
      usual += tries[i].packing != FOREST_PACK_LEVELS;
    if (w != BOTH && usual == 1 && forest_i_chunks(t->npus, size_bytes, fine) == fine &&
        size_bytes / ((uint64_t)t->npus * fine) >= FINER_MIN_CHUNK_BYTES)
      tries[ntries++] = (forest_try_t){fine, 0};
    uint32_t m = 0;
    for (uint32_t i = 0; i < ntries; i++)
      if (packing == 0 || tries[i].packing == 0)
        tries[m++] = (forest_try_t){tries[i].chunks_per_npu, packing ? packing : tries[i].packing};
    ntries = m;
  }
  packs_t p = {0};
  topo_routes_t *routes = NULL;
  bool have = false;
  tn_err_t le = {0}; /* why the two-level trees were passed over */
  st = topo_routes_create(t, &routes, err);
  for (uint32_t i = 0; st == TN_OK && i < ntries; i++) {
    if (i == 0 || tries[i].packing != tries[i - 1].packing) {
      forest_opts_t po = opts ? *opts : (forest_opts_t){0};
      po.packing = tries[i].packing;
      /* the two-level trees are passed over where they do not apply */
      st = packs_make(t, routes, &po, w, &p, po.packing == FOREST_PACK_LEVELS ? &le : err);
      if (st == TN_INFEASIBLE && po.packing == FOREST_PACK_LEVELS) {
        while (i + 1 < ntries && tries[i + 1].packing == FOREST_PACK_LEVELS)
          i++;
        st = TN_OK;
        continue;
      }
      if (st != TN_OK && po.packing == FOREST_PACK_LEVELS) st = tn_err_set(err, st, "%s", le.msg);
    }
    schedule_t s;
    if (st == TN_OK) st = plan_try(t, routes, &p, size_bytes, opts, w, tries[i], &s, err);
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
  if (st == TN_OK && !have) st = tn_err_set(err, TN_INFEASIBLE, "forest: %s", le.msg);
  if (st != TN_OK) {
    schedule_free(out);
    schedule_init(out, coll, t->npus, 1, size_bytes);
  }
  return st;
}

tn_status_t forest_run(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                       schedule_t *out, tn_err_t *err) {
  return search(t, size_bytes, opts, GATHER, out, err);
}

tn_status_t forest_run_reduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *out, tn_err_t *err) {
  return search(t, size_bytes, opts, REDUCE, out, err);
}

tn_status_t forest_allreduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                             schedule_t *out, tn_err_t *err) {
  forest_opts_t o = opts ? *opts : (forest_opts_t){.pace = true};
  return search(t, size_bytes, &o, BOTH, out, err);
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
  if (st == TN_OK) st = packs_make(t, routes, opts, BOTH, &p, err);
  if (st == TN_OK) {
    schedule_free(rs);
    schedule_free(ag);
    st = halves_on(t, routes, &p, size_bytes, opts, rs, ag, err);
  }
  packs_free(&p);
  topo_routes_free(routes);
  return st;
}

/* Whether t is a star: one switch with a link to every NPU, and no other link from an NPU
 * (leaf-32's NPUs also reach server switches, and cost what other switched fabrics do). */
static bool star(const topo_t *t) {
  for (uint32_t s = t->npus; s < topo_nodes(t); s++) {
    uint32_t npus = 0;
    for (uint32_t i = t->out_off[s]; i < t->out_off[s + 1]; i++)
      npus += t->links[t->out_link[i]].dst < t->npus;
    if (npus < t->npus) continue;
    bool only = true;
    for (uint32_t v = 0; v < t->npus && only; v++)
      for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1] && only; i++)
        only = t->links[t->out_link[i]].dst == s;
    return only;
  }
  return false;
}

/* The counts the automatic chunking plans for coll (forest_tries, and search()'s finer try
 * for a half): the coarsest in *lo, the finest in *hi. */
static void try_counts(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t *lo, uint32_t *hi) {
  forest_try_t tries[FOREST_TRIES];
  uint32_t n = t->npus, m = forest_tries(t, size, tries);
  *lo = UINT32_MAX, *hi = 0;
  for (uint32_t i = 0; i < m; i++) {
    if (tries[i].chunks_per_npu < *lo) *lo = tries[i].chunks_per_npu;
    if (tries[i].chunks_per_npu > *hi) *hi = tries[i].chunks_per_npu;
  }
  uint32_t fine = m == 1 ? 2 * tries[0].chunks_per_npu : 0;
  if (coll != TN_ALLREDUCE && fine > *hi && forest_i_chunks(n, size, fine) == fine &&
      size / ((uint64_t)n * fine) >= FINER_MIN_CHUNK_BYTES)
    *hi = fine;
  if (*lo > *hi) *lo = *hi;
}

static uint64_t messages(uint32_t n, tn_coll_t coll, uint64_t k) {
  return (uint64_t)n * (n - 1) * k * (coll == TN_ALLREDUCE ? 2u : 1u);
}

/* The whole `tenet synth -a forest` process at k chunks per NPU, per message (B), fitted on
 * measured peaks (bench_mem, 32 to 256 NPUs, meshes, tori, a hypercube and switched
 * fabrics, 1 MiB to 1 GiB, one and two threads), plus the packing per NPU pair; a fabric
 * with switches costs more per message (its trees' edges cross two links or more). On a
 * star (a switch with a link to every NPU) an All-Reduce costs more per message the more
 * NPUs (its halves' trees all meet at the switch; one thread: switch-128 2,095 B per
 * message at 1 GiB and 2,145 at 1 MiB, switch-256 3,299 at 1 MiB), 9 n B more. A second thread
 * plans the pacings side by side and verifies and writes beside the last simulation. Where
 * the two-level trees may be kept (forest_levels_apply, at most LEVELS_MAX_CHUNKS chunks)
 * a message costs more again (their All-Gather's pacings and unpaced plan, the All-Reduce's
 * backwards join): measured at 1 MiB on one and two threads, the peaks over this figure
 * without it were fattree-64-2to1 All-Gather 1.46 and 1.35, All-Reduce 1.09 and 1.10;
 * leaf-32, rail-4x8, rail-4x8-degraded, spine-4x8 and fattree-32-4to1 All-Reduce up to
 * 1.10, spine-4x8 Reduce-Scatter 1.03. */
static uint64_t run_mem(const topo_t *t, tn_coll_t coll, uint64_t k, unsigned threads) {
  uint32_t n = t->npus;
  uint64_t base = (uint64_t)10 << 20, per = 490, pack = 200, sw = 50, beside = 21, lv = 60;
  if (coll == TN_REDUCESCATTER)
    base = (uint64_t)23 << 19, per = 709, pack = 500, sw = 30, beside = 27, lv = 10;
  if (coll == TN_ALLREDUCE)
    base = (uint64_t)12 << 20, per = 592, pack = 600, sw = 55, beside = 21, lv = 20;
  if (t->switches > 0) per += per * sw / 100;
  if (k <= LEVELS_MAX_CHUNKS && forest_levels_apply(t)) per += per * lv / 100;
  if (coll == TN_ALLREDUCE && star(t)) per += 9 * (uint64_t)n;
  return tn_mem_threads(base, messages(n, coll, k) * per + (uint64_t)n * n * pack, (uint32_t)beside,
                        threads);
}

/* The planning alone at k (the packing, then the tries, the fastest so far held beside the
 * one being planned): per message of the plan at k, fitted on the peaks of runs stopped as
 * the search returns (1 MiB, the same fabrics, one and two threads). The packing's LP (at
 * most FOREST_LP_MAX_NPUS NPUs) peaks before any plan, at 11.4 (rail-4x8) to 20.3 MB
 * (hypercube-64) with the process, whatever the count: counted as 15 MiB. */
static uint64_t plan_mem(const topo_t *t, tn_coll_t coll, uint64_t k, unsigned threads) {
  uint32_t n = t->npus;
  uint64_t base = (uint64_t)10 << 20, per = 170, sw = 15, beside = 35;
  if (coll == TN_REDUCESCATTER) base = (uint64_t)23 << 19, per = 340, sw = 60, beside = 30;
  if (coll == TN_ALLREDUCE) base = (uint64_t)12 << 20, per = 245, sw = 60, beside = 12;
  if (t->switches > 0) per += per * sw / 100;
  if (coll == TN_ALLREDUCE && star(t)) per += 5 * (uint64_t)n;
  uint64_t plans = tn_mem_threads(base, messages(n, coll, k) * per, (uint32_t)beside, threads);
  uint64_t packing = n <= FOREST_LP_MAX_NPUS ? ((uint64_t)15 << 20) : 0;
  return plans > packing ? plans : packing;
}

uint64_t forest_plan_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size,
                                  uint32_t chunks_per_npu, unsigned threads) {
  uint32_t lo = chunks_per_npu, hi = chunks_per_npu;
  if (t->npus < 2) return FOREST_MEM_BASE;
  if (hi == 0) try_counts(t, coll, size, &lo, &hi);
  return plan_mem(t, coll, hi, threads);
}

uint64_t forest_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size,
                             uint32_t chunks_per_npu, unsigned threads) {
  uint32_t lo = chunks_per_npu, hi = chunks_per_npu;
  if (t->npus < 2) return FOREST_MEM_BASE;
  if (hi == 0) try_counts(t, coll, size, &lo, &hi);
  uint64_t run = run_mem(t, coll, hi, threads), plan = plan_mem(t, coll, hi, threads);
  return run > plan ? run : plan;
}

uint64_t forest_mem_halving(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k,
                            unsigned threads) {
  if (t->npus < 2 || k < 2) return forest_mem_estimate(t, coll, size, k, threads);
  uint64_t first = run_mem(t, coll, k, threads), none = run_mem(t, coll, 0, threads);
  uint64_t both = run_mem(t, coll, k / 2, threads) + (first - none) / 20 * 11;
  return both > first ? both : first;
}

uint64_t forest_mem_before(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t chunks_per_npu,
                           unsigned threads) {
  if (chunks_per_npu != 0 || t->npus < 2)
    return forest_mem_estimate(t, coll, size, chunks_per_npu, threads);
  uint32_t lo, hi;
  try_counts(t, coll, size, &lo, &hi);
  uint64_t run = run_mem(t, coll, lo, threads), plan = plan_mem(t, coll, hi, threads);
  return run > plan ? run : plan;
}
