/* tests/unit/test_bound.c — topo/bound.c: the lower bounds against closed forms (ring,
 * switch, mesh, torus, hypercube, hierarchical, a fat-tree with shared uplinks), the cut
 * search against brute force over every node set, and the property that no schedule beats
 * them: greedy, Ring and Direct, all three collectives, simulated on many random fabrics. */
#include "testutil.h"

#include "lp/lp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "greedy/greedy.h"
#include "sim/sim.h"
#include "topo/topo.h"

static tn_err_t tu_err_;

#define GIB (1ull << 30)
/* ps per byte through 1 GB/s. */
#define PSB (1e12 / TN_GIB)

static topo_t *gen_kind(const char *kind, const char *dims) {
  topo_t *t = NULL;
  TU_OK(topo_gen_kind(kind, dims, 50.0, 500.0, &t, &tu_err_));
  return t;
}

static topo_bounds_t bounds_of(const topo_t *t) {
  topo_bounds_t b;
  TU_OK(topo_bounds_compute(t, &b, &tu_err_));
  return b;
}

/* The bandwidth coefficient of coll equals want_per_GBps (seconds per GB of S, i.e. per
 * byte at 1 GB/s) to 1e-9. */
static void expect_coef(const topo_bounds_t *b, tn_coll_t c, double want_per_GBps,
                        const char *what) {
  double got = topo_bound_ps_per_byte(b, c) / PSB;
  if (fabs(got - want_per_GBps) > 1e-9 * want_per_GBps)
    fail_msg("%s %s: coefficient %.12g, want %.12g", what, tn_coll_name(c), got, want_per_GBps);
}

/* ---- closed forms ------------------------------------------------------------ */

static void bounds_of_rings_stars_tori_and_hypercubes_are_their_closed_forms(void **state) {
  (void)state;
  const double B = 50.0;
  for (uint32_t n = 3; n <= 9; n += 3) {
    char d[8];
    snprintf(d, sizeof d, "%u", n);
    topo_t *ring = gen_kind("ring", d), *star = gen_kind("switch", d);
    topo_bounds_t r = bounds_of(ring), s = bounds_of(star);
    /* Ring: (n-1)/n S through an NPU's two incoming links; All-Reduce 2(n-1) crossings per
     * element over all 2n links (singletons). Star: one link each way per NPU. */
    expect_coef(&r, TN_ALLGATHER, (n - 1.0) / n / (2 * B), "ring");
    expect_coef(&r, TN_REDUCESCATTER, (n - 1.0) / n / (2 * B), "ring");
    expect_coef(&r, TN_ALLREDUCE, 2.0 * (n - 1.0) / (2.0 * n * B), "ring");
    expect_coef(&s, TN_ALLGATHER, (n - 1.0) / n / B, "switch");
    expect_coef(&s, TN_ALLREDUCE, 2.0 * (n - 1.0) / (n * B), "switch");
    assert_int_equal(s.coll[TN_ALLREDUCE].kind, TOPO_BOUND_GOSSIP);
    assert_string_equal(s.coll[TN_ALLREDUCE].family, "singletons");
    topo_free(ring);
    topo_free(star);
  }
  topo_t *torus = gen_kind("torus", "8x8"), *cube = gen_kind("hypercube", "64");
  topo_bounds_t t = bounds_of(torus), h = bounds_of(cube);
  expect_coef(&t, TN_ALLGATHER, 63.0 / 64.0 / (4 * B), "torus");
  expect_coef(&t, TN_ALLREDUCE, 126.0 / (256 * B), "torus");
  expect_coef(&h, TN_ALLGATHER, 63.0 / 64.0 / (6 * B), "hypercube");
  expect_coef(&h, TN_ALLREDUCE, 126.0 / (384 * B), "hypercube");
  topo_free(torus);
  topo_free(cube);
}

static void allreduce_bound_on_meshes_counts_every_link(void **state) {
  (void)state;
  topo_t *m2 = gen_kind("mesh", "8x8"), *m3 = gen_kind("mesh", "4x4x4");
  topo_bounds_t a = bounds_of(m2), b = bounds_of(m3);
  /* 2 * 63 crossings per element over 224 (2D) and 288 (3D) links of 50 GB/s. */
  assert_true(fabs(topo_bound_ps_per_byte(&a, TN_ALLREDUCE) * GIB - 11.25e9) < 1.0);
  assert_true(fabs(topo_bound_ps_per_byte(&b, TN_ALLREDUCE) * GIB - 8.75e9) < 1.0);
  /* All-Gather: a corner NPU has 100 GB/s in. */
  expect_coef(&a, TN_ALLGATHER, 63.0 / 64.0 / 100.0, "mesh");
  topo_free(m2);
  topo_free(m3);
}

/* All-to-All: a(n - a)/n buffers through the narrowest cut. On a mesh its bisection (16
 * buffers through 8 links of 50 GB/s each way), found the same whether the fabric is
 * generated or written link by link; on a ring the halves (2 links); on a star a single
 * NPU's link ((n - 1)/n of S). */
static void alltoall_bound_is_the_narrowest_cut(void **state) {
  (void)state;
  topo_t *m = gen_kind("mesh", "8x8"), *r = gen_kind("ring", "8"), *s = gen_kind("switch", "8");
  topo_bounds_t bm = bounds_of(m), br = bounds_of(r), bs = bounds_of(s);
  expect_coef(&bm, TN_ALLTOALL, 16.0 / 400.0, "mesh");
  assert_int_equal(bm.coll[TN_ALLTOALL].kind, TOPO_BOUND_EXCHANGE);
  assert_int_equal(bm.coll[TN_ALLTOALL].cut_npus, 32);
  expect_coef(&br, TN_ALLTOALL, 2.0 / 100.0, "ring");
  expect_coef(&bs, TN_ALLTOALL, 7.0 / 8.0 / 50.0, "switch");
  /* The same mesh, link by link: no shape to read the halves from. */
  topo_t *e = NULL;
  TU_OK(topo_create("mesh-explicit", 64, 0, m->links, m->nlinks, &e, &tu_err_));
  topo_bounds_t be = bounds_of(e);
  expect_coef(&be, TN_ALLTOALL, 16.0 / 400.0, "explicit mesh");
  topo_free(e);
  topo_free(m);
  topo_free(r);
  topo_free(s);
}

static void latency_term_is_the_longest_shortest_path(void **state) {
  (void)state;
  topo_t *t = gen_kind("mesh", "16x8");
  topo_bounds_t b = bounds_of(t);
  /* 22 hops of 500 ns from corner to corner: 1 KiB cannot be gathered sooner. */
  assert_int_equal(b.latency_ps, 22u * 500000u);
  for (int c = 0; c < TN_NCOLLS; c++)
    assert_true(tu_bound_ps(&b, (tn_coll_t)c, 1024) >= 22u * 500000u);
  assert_true(tu_bound_ps(&b, TN_ALLGATHER, 1024) < 22u * 500000u + 100000u);
  topo_free(t);
}

/* Every NPU's eccentricity term counts, not only the farthest-reaching NPU's: on
 * torus-8x8-degraded every NPU is 4 us from its farthest, and the NPUs beside the dead
 * link send through 150 GB/s where the others have 200, so at 1 MiB the All-Reduce can
 * end no sooner than S / 150 GB/s + 4 us (above the 126-crossing gossip term, 9.75 us +
 * 500 ns); the farthest-reaching NPU of least id, 200 GB/s out, gave only 8.88 us. */
static void slowest_far_npu_gives_the_latency_term(void **state) {
  (void)state;
  topo_t *t = tu_shipped("torus-8x8-degraded");
  topo_bounds_t b = bounds_of(t);
  uint64_t S = 1u << 20;
  assert_int_equal(tu_bound_ps(&b, TN_ALLREDUCE, S), (uint64_t)((double)S * PSB / 150.0 + 4e6));
  topo_free(t);
}

/* Which NPU's eccentricity term is highest changes with the size. A star of four leaves
 * (10 GB/s at 100 ns, 20 at 800, 40 at 1000, 100 at 2000) around an NPU: the leaves reach
 * their farthest NPU in 2.1, 2.8, 3 and 3 us, so the 10 GB/s leaf's term is the highest at
 * large sizes, the 40 GB/s leaf's at the smallest, and the 20 GB/s leaf's where those two
 * cross (S / 20 GB/s + 2.8 us at S = 0.9 us x 40/3 GB/s); the others are below everywhere.
 * The All-Reduce bound is exactly the highest of the leaves' terms at every size (its
 * cuts and partitions are lower). */
static void every_npu_eccentricity_term_counts(void **state) {
  (void)state;
  const double bw[4] = {10.0, 20.0, 40.0, 100.0};
  const uint64_t lat[4] = {100000, 800000, 1000000, 2000000};
  topo_link_t l[8];
  for (uint32_t i = 0; i < 4; i++) {
    l[2 * i] = (topo_link_t){0, i + 1, bw[i], lat[i], 0};
    l[2 * i + 1] = (topo_link_t){i + 1, 0, bw[i], lat[i], 0};
  }
  topo_t *t = NULL;
  TU_OK(topo_create("uneven-star", 5, 0, l, 8, &t, &tu_err_));
  topo_bounds_t b = bounds_of(t);
  const double ecc[4] = {2.1e6, 2.8e6, 3.0e6, 3.0e6};
  const uint64_t cross = (uint64_t)(0.9e6 / (1.0 / 10 - 1.0 / 40) / PSB);
  const uint64_t sizes[] = {1, 1024, cross / 2, cross, 2 * cross, 1u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    double want = 0.0;
    for (uint32_t i = 0; i < 4; i++)
      want = fmax(want, (double)sizes[k] * PSB / bw[i] + ecc[i]);
    assert_int_equal(tu_bound_ps(&b, TN_ALLREDUCE, sizes[k]), (uint64_t)want);
  }
  /* at the crossing the 20 GB/s leaf is above the other two */
  assert_true(tu_bound_ps(&b, TN_ALLREDUCE, cross) >
              (uint64_t)((double)cross * PSB / 10.0 + ecc[0]) + 50000u);
  topo_free(t);
}

/* Nothing leaves a switch before something has reached it: on a star every byte an NPU
 * takes in crosses two links of 500 ns, so the bandwidth terms carry 1 us, not one link's
 * 500 ns (All-Gather, Reduce-Scatter, All-Reduce); a switch two hops up carries 1.5 us. */
static void bandwidth_terms_wait_for_data_to_reach_a_switch(void **state) {
  (void)state;
  topo_t *s = gen_kind("switch", "8");
  topo_bounds_t b = bounds_of(s);
  uint64_t S = 64u << 20;
  double gather = 7.0 / 8.0 * (double)S * PSB / 50.0, reduce = 2.0 * gather;
  assert_int_equal(tu_bound_ps(&b, TN_ALLGATHER, S), (uint64_t)(gather + 1e6));
  assert_int_equal(tu_bound_ps(&b, TN_REDUCESCATTER, S), (uint64_t)(gather + 1e6));
  assert_int_equal(tu_bound_ps(&b, TN_ALLREDUCE, S), (uint64_t)(reduce + 1e6));
  topo_free(s);
  /* Two servers of two NPUs, each on its own switch (4, 5) under a spine (6), 500 ns a
   * link: the best cut is a server, whose data enters through spine -> switch, reached
   * from an NPU through two links first. */
  topo_link_t l[12];
  uint32_t k = 0;
  const uint32_t up[6][2] = {{0, 4}, {1, 4}, {2, 5}, {3, 5}, {4, 6}, {5, 6}};
  for (uint32_t i = 0; i < 6; i++) {
    double bw = i < 4 ? 100.0 : 10.0;
    l[k++] = (topo_link_t){up[i][0], up[i][1], bw, 500000, 0};
    l[k++] = (topo_link_t){up[i][1], up[i][0], bw, 500000, 0};
  }
  topo_t *t = NULL;
  TU_OK(topo_create("two-servers", 4, 3, l, k, &t, &tu_err_));
  b = bounds_of(t);
  /* 2 blocks of S/4 into a server through one 10 GB/s link, then 1.5 us */
  assert_int_equal(tu_bound_ps(&b, TN_ALLGATHER, S),
                   (uint64_t)(0.5 * (double)S * PSB / 10.0 + 1.5e6));
  topo_free(t);
}

/* Own blocks first: on torus-8x8 an NPU's four neighbours can send it their own blocks
 * from the start, but any other block reaches a neighbour 500 ns in at the earliest and
 * then crosses a second link, so 59 of the 63 blocks arrive through 200 GB/s after 1 us:
 * at 1 MiB that is above the per-NPU term (63 blocks after one link) and the bound; a
 * fully connected fabric has no such term (every block may come straight from its NPU). */
static void neighbours_send_their_own_blocks_first(void **state) {
  (void)state;
  topo_t *t = gen_kind("torus", "8x8"), *fc = gen_kind("fc", "8");
  topo_bounds_t b = bounds_of(t), bf = bounds_of(fc);
  uint64_t S = 1u << 20;
  double own = 59.0 / 64.0 * (double)S * PSB / 200.0 + 1e6;
  assert_int_equal(tu_bound_ps(&b, TN_ALLGATHER, S), (uint64_t)own);
  assert_int_equal(tu_bound_ps(&b, TN_REDUCESCATTER, S), (uint64_t)own);
  /* fc-8: 7/8 S through 7 links of 50 GB/s after one link, or one block after the farthest */
  double one = 7.0 / 8.0 * (double)S * PSB / 350.0 + 5e5;
  assert_int_equal(tu_bound_ps(&bf, TN_ALLGATHER, S), (uint64_t)one);
  topo_free(t);
  topo_free(fc);
}

/* hierarchical-16x8: 16 servers of 8 NPUs on a 300 GB/s switch, 8 rails of 16 at 25. */
static void hierarchical_bounds_cut_one_server_off(void **state) {
  (void)state;
  topo_dim_t dims[2] = {{TOPO_DIM_SWITCH, 8, 300.0, 250.0, false},
                        {TOPO_DIM_SWITCH, 16, 25.0, 1000.0, false}};
  topo_t *t = NULL;
  TU_OK(topo_gen("h", dims, 2, &t, &tu_err_));
  topo_bounds_t b = bounds_of(t);
  /* All-Gather: 120 NPUs' blocks enter the last server through its 8 rail links. */
  expect_coef(&b, TN_ALLGATHER, 120.0 / 128.0 / 200.0, "hierarchical");
  assert_int_equal(b.coll[TN_ALLGATHER].kind, TOPO_BOUND_CUT);
  assert_int_equal(b.coll[TN_ALLGATHER].cut_npus, 120);
  assert_true(fabs(b.coll[TN_ALLGATHER].cut_GBps - 200.0) < 1e-9);
  /* All-Reduce: the 16 servers as groups, 2*15 crossings over 16*8 rail links. */
  expect_coef(&b, TN_ALLREDUCE, 30.0 / (128 * 25.0), "hierarchical");
  assert_int_equal(b.coll[TN_ALLREDUCE].cut_npus, 16);
  topo_free(t);
}

/* 4 leaves of 4 NPUs (100 GB/s each), each leaf one shared 50 GB/s uplink to a spine. */
static topo_t *shared_uplink_fattree(void) {
  topo_link_t l[64];
  uint32_t m = 0, spine = 20;
  for (uint32_t leaf = 0; leaf < 4; leaf++) {
    for (uint32_t i = 0; i < 4; i++) {
      l[m++] = (topo_link_t){leaf * 4 + i, 16 + leaf, 100.0, 500000, 0};
      l[m++] = (topo_link_t){16 + leaf, leaf * 4 + i, 100.0, 500000, 0};
    }
    l[m++] = (topo_link_t){16 + leaf, spine, 50.0, 500000, 0};
    l[m++] = (topo_link_t){spine, 16 + leaf, 50.0, 500000, 0};
  }
  topo_t *t = NULL;
  TU_OK(topo_create("fattree", 16, 5, l, m, &t, &tu_err_));
  return t;
}

static void fattree_bounds_count_the_shared_uplinks(void **state) {
  (void)state;
  topo_t *t = shared_uplink_fattree();
  topo_bounds_t b = bounds_of(t);
  /* All-Gather: the other 12 NPUs' blocks enter a leaf through its one uplink (the
   * per-NPU figure, 15/16 / 100 GB/s, is weaker). */
  expect_coef(&b, TN_ALLGATHER, 12.0 / 16.0 / 50.0, "fattree");
  expect_coef(&b, TN_REDUCESCATTER, 12.0 / 16.0 / 50.0, "fattree");
  /* All-Reduce: the 4 leaves as groups, 2*3 crossings over 4 uplinks. */
  expect_coef(&b, TN_ALLREDUCE, 6.0 / 200.0, "fattree");
  assert_int_equal(b.coll[TN_ALLREDUCE].kind, TOPO_BOUND_GOSSIP);
  assert_int_equal(b.coll[TN_ALLREDUCE].cut_npus, 4);
  topo_free(t);
}

/* The per-NPU bound alone (topo_npu_bound_ps) is never above the tight one, for every
 * collective: equal to the bandwidth term on a torus (each NPU's own links are its cut;
 * the tight bound adds the latency), below it where a shared uplink is the cut (the
 * fat-tree above: 15/16 of S through one NPU's 100 GB/s against 12/16 through 50); 0 for
 * one NPU. */
static void npu_bound_is_never_above_the_tight_one(void **state) {
  (void)state;
  topo_t *ts[3] = {gen_kind("torus", "4x4"), shared_uplink_fattree(), tu_random_fabric(9, 3, true)};
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < TN_NCOLLS; c++) {
      uint64_t npu = 0;
      TU_OK(topo_npu_bound_ps(ts[i], (tn_coll_t)c, GIB, &npu, &tu_err_));
      assert_true(npu > 0);
      assert_true(npu <= tu_lower_bound_ps(ts[i], (tn_coll_t)c, GIB));
    }
  uint64_t torus = 0, fat = 0;
  TU_OK(topo_npu_bound_ps(ts[0], TN_ALLGATHER, GIB, &torus, &tu_err_));
  assert_true(fabs((double)torus - 15.0 / 16.0 * (double)GIB / 200.0 * PSB) < 2.0);
  assert_true(tu_lower_bound_ps(ts[0], TN_ALLGATHER, GIB) > torus);
  TU_OK(topo_npu_bound_ps(ts[1], TN_ALLGATHER, GIB, &fat, &tu_err_));
  assert_true(fabs((double)fat - 15.0 / 16.0 * (double)GIB / 100.0 * PSB) < 2.0);
  assert_true((double)tu_lower_bound_ps(ts[1], TN_ALLGATHER, GIB) >
              12.0 / 16.0 * (double)GIB / 50.0 * PSB);
  for (int i = 0; i < 3; i++)
    topo_free(ts[i]);
  topo_t *one = NULL;
  TU_OK(topo_create("one", 1, 0, NULL, 0, &one, &tu_err_));
  uint64_t zero = 7;
  TU_OK(topo_npu_bound_ps(one, TN_ALLREDUCE, GIB, &zero, &tu_err_));
  assert_int_equal(zero, 0);
  topo_free(one);
}

static void bound_is_zero_for_one_npu_and_infinite_when_disconnected(void **state) {
  (void)state;
  topo_t *one = NULL;
  TU_OK(topo_create("one", 1, 0, NULL, 0, &one, &tu_err_));
  topo_bounds_t b = bounds_of(one);
  for (int c = 0; c < TN_NCOLLS; c++)
    assert_int_equal(tu_bound_ps(&b, (tn_coll_t)c, GIB), 0);
  topo_free(one);
  topo_link_t l[2] = {{0, 1, 50.0, 0, 0}, {1, 0, 50.0, 0, 0}};
  topo_t *t = NULL;
  TU_OK(topo_create("split", 3, 0, l, 2, &t, &tu_err_));
  b = bounds_of(t);
  assert_false(b.connected);
  assert_true(tu_bound_ps(&b, TN_ALLGATHER, 1024) == UINT64_MAX);
  assert_true(tu_lower_bound_ps(t, TN_ALLREDUCE, 1024) == UINT64_MAX);
  topo_free(t);
}

static void bound_rounds_down_and_grows_with_size(void **state) {
  (void)state;
  topo_t *t = gen_kind("mesh", "4x4");
  topo_bounds_t b = bounds_of(t);
  for (int c = 0; c < TN_NCOLLS; c++) {
    uint64_t prev = 0;
    for (uint64_t s = 1; s < GIB; s = s * 3 + 1) {
      uint64_t ps = tu_bound_ps(&b, (tn_coll_t)c, s);
      /* Gathers count whole blocks: S rounded down to a multiple of the 16 NPUs. */
      double whole = (double)(c == TN_ALLREDUCE ? s : s - s % 16), exact = 0.0;
      for (uint32_t i = 0; i < b.coll[c].nterms; i++)
        exact = fmax(exact, b.coll[c].terms[i].ps_per_byte * whole + b.coll[c].terms[i].ps);
      assert_true((double)ps <= exact && (double)ps > exact - 1.0);
      assert_true(ps >= prev);
      assert_int_equal(ps, tu_lower_bound_ps(t, (tn_coll_t)c, s));
      prev = ps;
    }
  }
  topo_free(t);
}

/* ---- random fabrics -------------------------------------------------------- */

typedef struct linkset {
  topo_link_t l[512];
  uint32_t m;
  uint8_t has[32][32];
} linkset_t;

static void add_link(linkset_t *s, tn_rng_t *r, uint32_t a, uint32_t b, bool both) {
  if (a == b || s->has[a][b]) return;
  double bw = 10.0 + (double)tn_rng_below(r, 90);
  uint64_t lat = tn_rng_below(r, 1000) * 1000u;
  s->has[a][b] = 1;
  s->l[s->m++] = (topo_link_t){a, b, bw, lat, 0};
  if (both && !s->has[b][a]) {
    s->has[b][a] = 1;
    s->l[s->m++] = (topo_link_t){b, a, bw, lat, 0};
  }
}

/* A random strongly connected fabric: a directed cycle over the NPUs in random order plus
 * random extra links (asymmetric, random figures); or, with switches, NPUs hung on random
 * switches (some on two) over a chain of switches, with a few NPU-NPU links. */
static topo_t *random_fabric(uint64_t seed, bool switches) {
  tn_rng_t r;
  tn_rng_seed(&r, seed);
  uint32_t n = 2 + (uint32_t)tn_rng_below(&r, 9),
           sw = switches ? 1 + (uint32_t)tn_rng_below(&r, 3) : 0;
  linkset_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  if (!switches) {
    uint32_t perm[16];
    for (uint32_t i = 0; i < n; i++)
      perm[i] = i;
    for (uint32_t i = n; i > 1; i--) {
      uint32_t j = (uint32_t)tn_rng_below(&r, i), x = perm[i - 1];
      perm[i - 1] = perm[j], perm[j] = x;
    }
    for (uint32_t i = 0; i < n; i++)
      add_link(s, &r, perm[i], perm[(i + 1) % n], tn_rng_below(&r, 2));
    for (uint32_t e = (uint32_t)tn_rng_below(&r, 2 * n); e > 0; e--)
      add_link(s, &r, (uint32_t)tn_rng_below(&r, n), (uint32_t)tn_rng_below(&r, n),
               tn_rng_below(&r, 2));
  } else {
    for (uint32_t i = 0; i + 1 < sw; i++)
      add_link(s, &r, n + i, n + i + 1, true);
    for (uint32_t v = 0; v < n; v++) {
      add_link(s, &r, v, n + (uint32_t)tn_rng_below(&r, sw), true);
      if (tn_rng_below(&r, 3) == 0) add_link(s, &r, v, n + (uint32_t)tn_rng_below(&r, sw), true);
    }
    for (uint32_t e = (uint32_t)tn_rng_below(&r, n); e > 0; e--)
      add_link(s, &r, (uint32_t)tn_rng_below(&r, n), (uint32_t)tn_rng_below(&r, n), true);
  }
  topo_t *t = NULL;
  char name[48];
  snprintf(name, sizeof name, "random-%llu%s", (unsigned long long)seed, switches ? "-sw" : "");
  TU_OK(topo_create(name, n, sw, s->l, s->m, &t, &tu_err_));
  free(s);
  return t;
}

/* max over node sets X with an NPU in and an NPU out of |X & NPUs| / B_out(X) (or B_in). */
static double brute_force_ratio(const topo_t *t, bool incoming) {
  uint32_t nodes = topo_nodes(t);
  double best = 0.0;
  for (uint32_t x = 1; x < (1u << nodes); x++) {
    uint32_t npus = (uint32_t)__builtin_popcount(x & ((1u << t->npus) - 1));
    if (npus == 0 || npus == t->npus) continue;
    double cap = 0.0;
    for (uint32_t i = 0; i < t->nlinks; i++) {
      bool s = (x >> t->links[i].src) & 1, d = (x >> t->links[i].dst) & 1;
      if (incoming ? (!s && d) : (s && !d)) cap += t->links[i].bandwidth_GBps;
    }
    best = fmax(best, npus / cap);
  }
  return best;
}

static void cut_search_finds_the_best_set_of_brute_force(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 60; seed++) {
    topo_t *t = random_fabric(seed, seed % 2 == 0);
    topo_bounds_t b = bounds_of(t);
    for (int rs = 0; rs < 2; rs++) {
      double want = brute_force_ratio(t, rs == 1) / t->npus * PSB;
      double got = b.coll[rs ? TN_REDUCESCATTER : TN_ALLGATHER].terms[0].ps_per_byte;
      if (fabs(got - want) > 1e-9 * want)
        fail_msg("%s %s: cut coefficient %.12g, brute force %.12g", t->name,
                 rs ? "reducescatter" : "allgather", got, want);
    }
    topo_free(t);
  }
}

/* min over node sets X with an NPU in and an NPU out of min(B_out(X), B_in(X)). */
static double brute_force_twosided(const topo_t *t) {
  uint32_t nodes = topo_nodes(t);
  double best = INFINITY;
  for (uint32_t x = 1; x < (1u << nodes); x++) {
    uint32_t npus = (uint32_t)__builtin_popcount(x & ((1u << t->npus) - 1));
    if (npus == 0 || npus == t->npus) continue;
    double out = 0.0, in = 0.0;
    for (uint32_t i = 0; i < t->nlinks; i++) {
      bool s = (x >> t->links[i].src) & 1, d = (x >> t->links[i].dst) & 1;
      if (s && !d) out += t->links[i].bandwidth_GBps;
      if (!s && d) in += t->links[i].bandwidth_GBps;
    }
    best = fmin(best, fmin(out, in));
  }
  return best;
}

/* The All-Reduce's two-sided cut term is the narrowest cut of all (docs/bounds.md §3), on
 * random fabrics with and without switches. */
static void twosided_cut_is_the_narrowest_of_brute_force(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 60; seed++) {
    topo_t *t = random_fabric(seed, seed % 2 == 0);
    topo_bounds_t b = bounds_of(t);
    double want = PSB / brute_force_twosided(t);
    double got = b.coll[TN_ALLREDUCE].terms[1].ps_per_byte;
    if (fabs(got - want) > 1e-9 * want)
      fail_msg("%s: two-sided cut coefficient %.12g, brute force %.12g", t->name, got, want);
    topo_free(t);
  }
}

/* hetero-ring-6: a ring of 6 at 50 GB/s whose pair 2-3 runs at 25 and link 5 -> 0 at 12.5.
 * The arc {3, 4, 5} sends out over 3 -> 2 and 5 -> 0 only, 37.5 GB/s, and every byte of
 * the sum must leave it: S / 37.5 GB/s, above the singletons' 10 S / 512.5 GB/s (the
 * bound the forest's schedule ran at 1.37 times before this cut was searched). */
static void allreduce_bound_on_hetero_ring_is_its_narrow_arc(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/topologies/hetero-ring-6.json", TENET_SOURCE_DIR);
  topo_t *t = NULL;
  TU_OK(topo_load(path, &t, &tu_err_));
  topo_bounds_t b = bounds_of(t);
  expect_coef(&b, TN_ALLREDUCE, 1.0 / 37.5, "hetero-ring-6");
  assert_int_equal(b.coll[TN_ALLREDUCE].kind, TOPO_BOUND_BISECT);
  topo_free(t);
}

/* Simulated time of a on t; *messages gets the message count. */
static uint64_t simulate(const algo_t *a, const topo_t *t, uint64_t *messages) {
  sim_result_t res;
  memset(&res, 0, sizeof res);
  TU_OK(sim_run(t, a, NULL, &res, &tu_err_));
  uint64_t time = res.time_ps;
  *messages = res.messages;
  sim_result_free(&res);
  return time;
}

/* The greedy's algorithm for coll, planned as cli does: the reversed half on the
 * transposed fabric when t is not symmetric. */
static algo_t *greedy_algo(const topo_t *t, tn_coll_t coll, uint64_t size, uint64_t seed) {
  greedy_opts_t o = {.seed = seed};
  schedule_t s, sT;
  topo_t *tt = NULL;
  bool sym = topo_is_symmetric(t);
  algo_t *a = NULL;
  if (coll == TN_ALLTOALL) {
    TU_OK(greedy_alltoall(t, size, &o, &s, &tu_err_));
    TU_OK(algo_from_schedule(&s, coll, "greedy", &a, &tu_err_));
    schedule_free(&s);
    return a;
  }
  TU_OK(greedy_run_for(t, coll, size, &o, &s, &tu_err_));
  if (!sym && coll != TN_ALLGATHER) {
    TU_OK(topo_transpose(t, &tt, &tu_err_));
    o.chunks_per_npu = s.chunks_per_npu;
    TU_OK(greedy_run_for(tt, coll, size, &o, &sT, &tu_err_));
  }
  const schedule_t *rs = sym ? &s : &sT;
  if (coll == TN_ALLGATHER)
    TU_OK(algo_from_schedule(&s, coll, "greedy", &a, &tu_err_));
  else if (coll == TN_REDUCESCATTER)
    TU_OK(algo_from_schedule(rs, coll, "greedy", &a, &tu_err_));
  else
    TU_OK(algo_allreduce_from_schedules(rs, &s, "greedy", &a, &tu_err_));
  if (!sym && coll != TN_ALLGATHER) schedule_free(&sT);
  schedule_free(&s);
  topo_free(tt);
  return a;
}

/* The per-NPU bound, computed here independently: the tight bound is never below it. */
static double npu_bound_ps(const topo_t *t, tn_coll_t c, uint64_t size) {
  double n = t->npus, s = (double)size, worst = 0.0;
  for (uint32_t v = 0; v < t->npus; v++) {
    double in = topo_ingress_GBps(t, v), out = topo_egress_GBps(t, v);
    double need = c == TN_ALLGATHER       ? (n - 1) / n * s / in
                  : c == TN_REDUCESCATTER ? (n - 1) / n * s / out
                  : c == TN_ALLTOALL      ? (n - 1) / n * s / fmin(in, out)
                                          : s / fmin(in, out);
    worst = fmax(worst, need * PSB);
  }
  return worst;
}

/* No schedule beats the bound. The simulator rounds each message's link time to the
 * nearest ps, so a schedule may undercut the exact figure by half a ps per message. */
static void check_no_schedule_beats_the_bound(const topo_t *t, uint64_t seed) {
  topo_bounds_t b = bounds_of(t);
  /* Multiples of n * 64, so every chunking the greedy tries splits the blocks evenly
   * (topo_bound_ps counts blocks of S/n bytes). */
  static const uint64_t sizes[] = {96 * 64, 49152 * 64};
  for (int c = 0; c < TN_NCOLLS; c++)
    for (size_t si = 0; si < 2; si++) {
      uint64_t size = sizes[si] * t->npus, bound = tu_bound_ps(&b, (tn_coll_t)c, size);
      assert_true((double)bound >= npu_bound_ps(t, (tn_coll_t)c, size) - 1.0);
      for (int k = 0; k < 3; k++) {
        algo_t *a = NULL;
        if (k == 0)
          a = greedy_algo(t, (tn_coll_t)c, size, seed);
        else if (k == 1 && c == TN_ALLTOALL)
          continue; /* no Ring All-to-All */
        else if (k == 1)
          TU_OK(algo_ring((tn_coll_t)c, t->npus, size, 1, &a, &tu_err_));
        else
          TU_OK(algo_direct((tn_coll_t)c, t->npus, size, 1, &a, &tu_err_));
        uint64_t msgs = 0, time = simulate(a, t, &msgs);
        if (bound > time + msgs / 2 + 1)
          fail_msg("%s %s %s %llu B: bound %llu ps beats simulated %llu ps", t->name,
                   tn_coll_name((tn_coll_t)c),
                   k == 0   ? "greedy"
                   : k == 1 ? "ring"
                            : "direct",
                   (unsigned long long)size, (unsigned long long)bound, (unsigned long long)time);
        algo_free(a);
      }
    }
}

static void no_schedule_beats_the_bound_on_random_graphs(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 80; seed++) {
    topo_t *t = random_fabric(1000 + seed, false);
    check_no_schedule_beats_the_bound(t, seed);
    topo_free(t);
  }
}

static void no_schedule_beats_the_bound_on_random_switch_fabrics(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 80; seed++) {
    topo_t *t = random_fabric(2000 + seed, true);
    check_no_schedule_beats_the_bound(t, seed);
    topo_free(t);
  }
}

static void no_schedule_beats_the_bound_on_generated_fabrics(void **state) {
  (void)state;
  static const char *const f[][2] = {{"ring", "6"},   {"mesh", "3x4"},     {"torus", "4x4"},
                                     {"switch", "8"}, {"hypercube", "16"}, {"fc", "5"}};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    topo_t *t = gen_kind(f[i][0], f[i][1]);
    check_no_schedule_beats_the_bound(t, 1);
    topo_free(t);
  }
  topo_t *t = shared_uplink_fattree();
  check_no_schedule_beats_the_bound(t, 1);
  topo_free(t);
}

static void no_schedule_beats_the_bound_on_shipped_cluster_fabrics(void **state) {
  (void)state;
  static const char *const names[] = {"spine-4x8",       "leaf-32", "rail-4x8",
                                      "fattree-32-4to1", "dgx1-8",  "torus-8x8-degraded",
                                      "random4reg-32"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    topo_t *t = tu_shipped(names[i]);
    check_no_schedule_beats_the_bound(t, 1);
    topo_free(t);
  }
}

/* With GLPK, the maximum concurrent flow is the exact All-to-All limit: on random4reg-32 it
 * is 15 ms for 1 GiB where the best cut found says 13.3 ms; on a ring it equals the
 * halves' cut. */
static void alltoall_flow_bound_is_exact_where_it_runs(void **state) {
  (void)state;
  if (!lp_available()) skip();
  topo_t *t = tu_shipped("random4reg-32"), *r = gen_kind("ring", "8");
  topo_bounds_t b = bounds_of(t), br = bounds_of(r);
  assert_int_equal(b.coll[TN_ALLTOALL].kind, TOPO_BOUND_FLOW);
  assert_true(b.coll[TN_ALLTOALL].exact);
  double got = topo_bound_ps_per_byte(&b, TN_ALLTOALL) / PSB;
  if (fabs(got - 0.015) > 1e-6) fail_msg("random4reg-32 alltoall: %.9g s per GiB", got);
  got = topo_bound_ps_per_byte(&br, TN_ALLTOALL) / PSB;
  if (fabs(got - 0.02) > 1e-6) fail_msg("ring-8 alltoall: %.9g s per GiB", got);
  assert_true(br.coll[TN_ALLTOALL].exact);
  topo_free(t);
  topo_free(r);
}

/* fattree-32-4to1: each leaf has an uplink to each of two spines, but every route between
 * leaves takes the lower spine (lowest id first), so a leaf's 6 buffers' worth leave through
 * one 50 GB/s link: 120 ms for 1 GiB, not the 60 ms the cut through both uplinks says. */
static void alltoall_flow_bound_follows_the_routes_through_switches(void **state) {
  (void)state;
  if (!lp_available()) skip();
  topo_t *t = tu_shipped("fattree-32-4to1");
  topo_bounds_t b = bounds_of(t);
  assert_int_equal(b.coll[TN_ALLTOALL].kind, TOPO_BOUND_FLOW);
  assert_true(b.coll[TN_ALLTOALL].exact);
  expect_coef(&b, TN_ALLTOALL, 6.0 / 50.0 * (1.0 - 1e-9), "fattree-32-4to1");
  topo_free(t);
}

/* The rate of a Direct All-to-All's flow over the routes (the most loaded link decides):
 * a feasible concurrent flow, so no bound may ask more than S/n over it. */
static double direct_flow_rate(const topo_t *t) {
  double *load = calloc(t->nlinks, sizeof *load), rate = INFINITY;
  assert_non_null(load);
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  for (uint32_t s = 0; s < t->npus; s++)
    for (uint32_t d = 0; d < t->npus; d++)
      for (uint32_t v = s; v != d;) {
        uint32_t l = topo_route_next(r, v, d);
        load[l] += 1.0;
        v = t->links[l].dst;
      }
  for (uint32_t l = 0; l < t->nlinks; l++)
    if (load[l] > 0.0) rate = fmin(rate, t->links[l].bandwidth_GBps / load[l]);
  topo_routes_free(r);
  free(load);
  return rate;
}

/* On many random fabrics (with and without switches) the All-to-All bound lies between
 * the best cut and the Direct flow's time; where it says exact, a flow was found at that
 * rate. Seeds whose routes' flow is itself optimal prove it at once; the others run the
 * column generation. */
static void alltoall_flow_bound_lies_between_the_cuts_and_direct(void **state) {
  (void)state;
  if (!lp_available()) skip();
  uint32_t exact = 0;
  for (uint64_t seed = 1; seed <= 120; seed++) {
    topo_t *t = random_fabric(3000 + seed, seed % 2 == 0);
    topo_bounds_t b = bounds_of(t);
    double got = topo_bound_ps_per_byte(&b, TN_ALLTOALL) / PSB;
    double direct = 1.0 / (t->npus * direct_flow_rate(t));
    if (got > direct * (1.0 + 1e-9))
      fail_msg("%s: bound %.12g s/GiB above the Direct flow's %.12g", t->name, got, direct);
    exact += b.coll[TN_ALLTOALL].exact;
    topo_free(t);
  }
  /* Small fabrics: the program is proved on nearly all (a check that it ran at all). */
  if (exact < 100) fail_msg("only %u of 120 random fabrics proved exact", exact);
}

/* The 128-NPU fabrics of the All-to-All targets get the exact limit without the full
 * program: mesh-16x8 because its dimension-order routes meet the bisection, torus-16x8
 * (whose half-way ties all go one way) by the one-source program of a fabric symmetric
 * under translations, hierarchical-16x8 by its routes through the rail switches. */
static void alltoall_bound_is_exact_on_128_npu_fabrics(void **state) {
  (void)state;
  if (!lp_available()) skip();
  static const struct {
    const char *name;
    double s_per_gib;
  } f[] = {{"mesh-16x8", 32.0 / 400.0},
           {"torus-16x8", 32.0 / 800.0},
           {"hierarchical-16x8", 7.5 / 200.0}};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    topo_t *t = tu_shipped(f[i].name);
    topo_bounds_t b = bounds_of(t);
    expect_coef(&b, TN_ALLTOALL, f[i].s_per_gib, f[i].name);
    if (!b.coll[TN_ALLTOALL].exact) fail_msg("%s: All-to-All bound not proved exact", f[i].name);
    char why[256];
    if (!strstr(topo_bound_explain(&b, TN_ALLTOALL, why, sizeof why), "exact"))
      fail_msg("%s: the explanation does not say exact: %s", f[i].name, why);
    topo_free(t);
  }
}

/* The cut search skips the sinks a generated fabric's symmetries make equal to a lower
 * one: the same fabric given link by link (no shape, every sink searched) has the same
 * All-Gather and Reduce-Scatter bounds and explanations; a fabric whose links were changed
 * after generation (an override) is searched whole. */
static void symmetric_sinks_give_the_bound_of_the_explicit_fabric(void **state) {
  (void)state;
  static const char *const shapes[][2] = {{"mesh", "5x4x3"},   {"torus", "6x4"}, {"torus", "5x3"},
                                          {"hypercube", "16"}, {"ring", "7"},    {"fc", "6"},
                                          {"switch", "9"},     {"mesh", "2x7"}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    topo_t *g = gen_kind(shapes[i][0], shapes[i][1]);
    for (int bend = 0; bend < 2; bend++) {
      topo_link_t *l = malloc(g->nlinks * sizeof *l);
      assert_non_null(l);
      memcpy(l, g->links, g->nlinks * sizeof *l);
      if (bend) l[g->nlinks / 2].bandwidth_GBps /= 3; /* breaks the symmetry */
      topo_t *x = NULL, *shaped = NULL;
      TU_OK(topo_create("explicit", g->npus, g->switches, l, g->nlinks, &x, &tu_err_));
      TU_OK(topo_create("shaped", g->npus, g->switches, l, g->nlinks, &shaped, &tu_err_));
      shaped->ndims = g->ndims; /* the generated shape, over the (maybe bent) links */
      memcpy(shaped->dims, g->dims, sizeof g->dims);
      for (tn_coll_t c = TN_ALLGATHER; c <= TN_REDUCESCATTER; c++) {
        uint64_t a = 0, b = 0;
        TU_OK(topo_lower_bound_ps(x, c, GIB, &a, &tu_err_));
        TU_OK(topo_lower_bound_ps(shaped, c, GIB, &b, &tu_err_));
        if (a != b)
          fail_msg("%s-%s%s %s: %llu ps with its shape, %llu link by link", shapes[i][0],
                   shapes[i][1], bend ? " (bent)" : "", tn_coll_name(c), (unsigned long long)b,
                   (unsigned long long)a);
      }
      topo_bounds_t bx, bs;
      TU_OK(topo_bounds_compute(x, &bx, &tu_err_));
      TU_OK(topo_bounds_compute(shaped, &bs, &tu_err_));
      char wx[256], ws[256];
      assert_string_equal(topo_bound_explain(&bx, TN_ALLGATHER, wx, sizeof wx),
                          topo_bound_explain(&bs, TN_ALLGATHER, ws, sizeof ws));
      topo_free(x);
      topo_free(shaped);
      free(l);
    }
    topo_free(g);
  }
  /* Servers of 8 behind a slow second switch, one NPU of the second server with a slower
   * uplink: the narrowest cut is around that server, found only from a sink inside it
   * (the shape's symmetries must not be taken for a fabric whose links were changed). */
  topo_dim_t d[2] = {{TOPO_DIM_SWITCH, 8, 300.0, 500.0, false},
                     {TOPO_DIM_SWITCH, 4, 10.0, 500.0, false}};
  topo_t *g = NULL, *x = NULL;
  TU_OK(topo_gen("servers", d, 2, &g, &tu_err_));
  topo_link_t *l = malloc(g->nlinks * sizeof *l);
  assert_non_null(l);
  memcpy(l, g->links, g->nlinks * sizeof *l);
  for (uint32_t i = 0; i < g->nlinks; i++)
    if (l[i].dst == 9 && l[i].dim == 1) l[i].bandwidth_GBps = 2.0;
  TU_OK(topo_create("explicit", g->npus, g->switches, l, g->nlinks, &x, &tu_err_));
  uint64_t a = 0, b = 0;
  TU_OK(topo_lower_bound_ps(x, TN_ALLGATHER, GIB, &a, &tu_err_));
  memcpy(g->links, l, g->nlinks * sizeof *l); /* the same links, with the shape */
  TU_OK(topo_lower_bound_ps(g, TN_ALLGATHER, GIB, &b, &tu_err_));
  assert_int_equal(a, b);
  topo_free(x);
  topo_free(g);
  free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(symmetric_sinks_give_the_bound_of_the_explicit_fabric),
      cmocka_unit_test(bounds_of_rings_stars_tori_and_hypercubes_are_their_closed_forms),
      cmocka_unit_test(allreduce_bound_on_meshes_counts_every_link),
      cmocka_unit_test(latency_term_is_the_longest_shortest_path),
      cmocka_unit_test(slowest_far_npu_gives_the_latency_term),
      cmocka_unit_test(every_npu_eccentricity_term_counts),
      cmocka_unit_test(bandwidth_terms_wait_for_data_to_reach_a_switch),
      cmocka_unit_test(neighbours_send_their_own_blocks_first),
      cmocka_unit_test(alltoall_bound_is_the_narrowest_cut),
      cmocka_unit_test(alltoall_flow_bound_is_exact_where_it_runs),
      cmocka_unit_test(alltoall_flow_bound_follows_the_routes_through_switches),
      cmocka_unit_test(alltoall_flow_bound_lies_between_the_cuts_and_direct),
      cmocka_unit_test(alltoall_bound_is_exact_on_128_npu_fabrics),
      cmocka_unit_test(hierarchical_bounds_cut_one_server_off),
      cmocka_unit_test(fattree_bounds_count_the_shared_uplinks),
      cmocka_unit_test(bound_is_zero_for_one_npu_and_infinite_when_disconnected),
      cmocka_unit_test(npu_bound_is_never_above_the_tight_one),
      cmocka_unit_test(bound_rounds_down_and_grows_with_size),
      cmocka_unit_test(cut_search_finds_the_best_set_of_brute_force),
      cmocka_unit_test(twosided_cut_is_the_narrowest_of_brute_force),
      cmocka_unit_test(allreduce_bound_on_hetero_ring_is_its_narrow_arc),
      cmocka_unit_test(no_schedule_beats_the_bound_on_random_graphs),
      cmocka_unit_test(no_schedule_beats_the_bound_on_random_switch_fabrics),
      cmocka_unit_test(no_schedule_beats_the_bound_on_generated_fabrics),
      cmocka_unit_test(no_schedule_beats_the_bound_on_shipped_cluster_fabrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
