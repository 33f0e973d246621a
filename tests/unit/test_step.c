/* tests/unit/test_step.c — whole steps (sim_step) against hand-worked times: a step whose
 * collectives never overlap takes the compute chain plus each collective's own time (as
 * sim_run gives it), a pipeline takes its fill and drain, and the resource rules of
 * ASTRA-sim's workload layer (one COMP and one communication per rank at a time) hold. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "sim/sim.h"
#include "sim/sim_internal.h"
#include "synth/synth.h"
#include "topo/topo.h"
#include "workload/workload.h"

static tn_err_t tu_err_;

#define MIB (1024u * 1024u)
#define US 1000000ull /* ps */

static topo_t *ring(uint32_t n) {
  topo_dim_t d = {TOPO_DIM_RING, n, 50.0, 500.0, false};
  topo_t *t = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("t", &d, 1, &t, &tu_err_));
  return t;
}

static uint64_t alone(const topo_t *t, const algo_t *a) {
  sim_result_t r;
  tn_err_clear(&tu_err_);
  TU_OK(sim_run(t, a, NULL, &r, &tu_err_));
  uint64_t ps = r.time_ps;
  sim_result_free(&r);
  return ps;
}

/* Ring algorithms for every collective of cs (every collective spans all ranks). */
static algo_t **ring_algos(const wl_colls_t *cs, uint32_t npus) {
  algo_t **a = calloc(cs->n + 1u, sizeof *a);
  for (uint32_t k = 0; k < cs->n; k++) {
    tn_err_clear(&tu_err_);
    TU_OK(algo_ring(cs->c[k].coll, npus, cs->c[k].bytes, 1, &a[k], &tu_err_));
  }
  return a;
}

static void free_algos(algo_t **a, uint32_t n) {
  for (uint32_t k = 0; k < n; k++)
    algo_free(a[k]);
  free(a);
}

static workload_t *example(wl_example_t kind, uint32_t npus, uint32_t layers, uint64_t bytes,
                           uint64_t us) {
  wl_example_opts_t o = {npus, layers, bytes, us, 1};
  workload_t *w = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(wl_example(kind, &o, &w, &tu_err_));
  return w;
}

/* dp: backward l runs [l U, (l+1) U]; All-Reduce l starts when backward l is done and the
 * previous All-Reduce has left the rank's communication free; the All-Gather follows the
 * last. With All-Reduces shorter than U each starts at (l+1) U; longer ones queue. */
static void dp_case(uint64_t compute_us, uint32_t layers) {
  topo_t *t = ring(4);
  workload_t *w = example(WL_EX_DP, 4, layers, 4 * MIB, compute_us);
  wl_colls_t cs;
  tn_err_clear(&tu_err_);
  TU_OK(wl_check(w, &cs, &tu_err_));
  assert_int_equal(cs.n, layers + 1);
  algo_t **a = ring_algos(&cs, 4);
  uint64_t ar = alone(t, a[0]), ag = alone(t, a[layers]), u = compute_us * US;
  uint64_t free_at = 0;
  for (uint32_t l = 0; l < layers; l++) {
    uint64_t start = (l + 1) * u > free_at ? (l + 1) * u : free_at;
    free_at = start + ar;
  }
  uint64_t want = free_at + ag;
  sim_step_result_t r;
  tn_err_clear(&tu_err_);
  TU_OK(sim_step(t, w, &cs, (const algo_t *const *)a, &r, &tu_err_));
  assert_int_equal(r.step_ps, want);
  assert_int_equal(r.compute_ps[0], layers * u);
  assert_int_equal(r.exposed_ps, want - layers * u);
  assert_int_equal(r.coll_start_ps[0], u);
  assert_int_equal(r.coll_end_ps[layers], want);
  sim_step_result_free(&r);
  free_algos(a, cs.n);
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
}

static void test_dp_overlapped(void **state) {
  (void)state;
  dp_case(1000, 4); /* All-Reduces (~200 µs) hide under 1 ms of compute */
}

static void test_dp_queued(void **state) {
  (void)state;
  dp_case(10, 4); /* All-Reduces queue behind each other on the rank's communication */
}

/* pp: micro-batch m leaves rank r when its forward is done and reaches r+1 a hop later
 * (latency + bytes / bandwidth); with messages shorter than the compute the last rank
 * ends at (M + n - 1) U + (n - 1) m. */
static void test_pipeline(void **state) {
  (void)state;
  topo_t *t = ring(4);
  uint32_t mb = 5;
  workload_t *w = example(WL_EX_PP, 4, mb, MIB, 100);
  wl_colls_t cs;
  tn_err_clear(&tu_err_);
  TU_OK(wl_check(w, &cs, &tu_err_));
  assert_int_equal(cs.n, 0);
  sim_step_result_t r;
  tn_err_clear(&tu_err_);
  TU_OK(sim_step(t, w, &cs, NULL, &r, &tu_err_));
  uint64_t m = 500000 + 19531250; /* 500 ns + 1 MiB at 50 GiB/s, in ps */
  assert_int_equal(r.step_ps, (mb + 3) * 100 * US + 3 * m);
  assert_int_equal(r.last_rank, 3);
  sim_step_result_free(&r);
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
}

/* tp is one chain: the sum of its parts. */
static void test_chain(void **state) {
  (void)state;
  topo_t *t = ring(8);
  workload_t *w = example(WL_EX_TP, 8, 3, 8 * MIB, 50);
  wl_colls_t cs;
  tn_err_clear(&tu_err_);
  TU_OK(wl_check(w, &cs, &tu_err_));
  algo_t **a = ring_algos(&cs, 8);
  uint64_t want = 3 * (alone(t, a[0]) + alone(t, a[1]) + 50 * US);
  sim_step_result_t r;
  tn_err_clear(&tu_err_);
  TU_OK(sim_step(t, w, &cs, (const algo_t *const *)a, &r, &tu_err_));
  assert_int_equal(r.step_ps, want);
  sim_step_result_free(&r);
  free_algos(a, cs.n);
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
}

/* Two COMPs ready together on one rank run one after the other (one GPU), lowest id
 * first; a CPU COMP runs beside them. */
static void test_one_gpu(void **state) {
  (void)state;
  topo_t *t = ring(2);
  workload_t *w = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(wl_create(2, &w, &tu_err_));
  for (uint32_t r = 0; r < 2; r++) {
    wl_node_t a = {.id = 1, .op = WL_COMP, .duration_us = 7};
    wl_node_t b = {.id = 2, .op = WL_COMP, .duration_us = 5};
    wl_node_t c = {.id = 3, .op = WL_COMP, .duration_us = 9, .cpu = true};
    TU_OK(wl_add(w, r, &a, "a", NULL, 0, NULL, &tu_err_));
    TU_OK(wl_add(w, r, &b, "b", NULL, 0, NULL, &tu_err_));
    TU_OK(wl_add(w, r, &c, "c", NULL, 0, NULL, &tu_err_));
  }
  wl_colls_t cs;
  TU_OK(wl_check(w, &cs, &tu_err_));
  sim_step_result_t r;
  TU_OK(sim_step(t, w, &cs, NULL, &r, &tu_err_));
  assert_int_equal(r.step_ps, 12 * US);
  assert_int_equal(r.compute_ps[1], 12 * US);
  sim_step_result_free(&r);
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
}

/* A group's collective runs on its ranks only, placed with algo_embed. */
static void test_group(void **state) {
  (void)state;
  topo_t *t = ring(4);
  workload_t *w = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(wl_create(4, &w, &tu_err_));
  for (uint32_t r = 0; r < 4; r++) {
    wl_node_t c = {.id = 1, .op = WL_COMP, .duration_us = 3};
    TU_OK(wl_add(w, r, &c, NULL, NULL, 0, NULL, &tu_err_));
    if (r == 1 || r == 2) {
      wl_node_t x = {.id = 2, .op = WL_COLL, .comm_type = WL_CT_ALL_REDUCE, .bytes = MIB, .pg = 5};
      uint32_t d = 0;
      TU_OK(wl_add(w, r, &x, NULL, &d, 1, NULL, &tu_err_));
    }
  }
  wl_colls_t cs;
  TU_OK(wl_check(w, &cs, &tu_err_));
  assert_int_equal(cs.n, 1);
  assert_int_equal(cs.c[0].nranks, 2);
  algo_t *pair = NULL, *placed = NULL;
  TU_OK(algo_ring(TN_ALLREDUCE, 2, MIB, 1, &pair, &tu_err_));
  TU_OK(algo_embed(pair, cs.c[0].ranks, 4, &placed, &tu_err_));
  topo_t *t2 = ring(2);
  uint64_t ar = alone(t2, pair); /* ranks 1 and 2 are neighbours, as 0 and 1 of ring-2 */
  sim_step_result_t r;
  const algo_t *as[1] = {placed};
  TU_OK(sim_step(t, w, &cs, as, &r, &tu_err_));
  assert_int_equal(r.step_ps, 3 * US + ar);
  assert_int_equal(r.finish_ps[0], 3 * US);
  sim_step_result_free(&r);
  algo_free(pair);
  algo_free(placed);
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
  topo_free(t2);
}

/* A RECV whose SEND waits behind it on the same rank never completes: a clear deadlock. */
static void test_deadlock(void **state) {
  (void)state;
  topo_t *t = ring(2);
  workload_t *w = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(wl_create(2, &w, &tu_err_));
  for (uint32_t r = 0; r < 2; r++) {
    wl_node_t rv = {.id = 1, .op = WL_RECV, .peer = 1 - r, .bytes = 64};
    wl_node_t sd = {.id = 2, .op = WL_SEND, .peer = 1 - r, .bytes = 64};
    uint32_t d = 0;
    TU_OK(wl_add(w, r, &rv, NULL, NULL, 0, NULL, &tu_err_));
    TU_OK(wl_add(w, r, &sd, NULL, &d, 1, NULL, &tu_err_));
  }
  wl_colls_t cs;
  TU_OK(wl_check(w, &cs, &tu_err_));
  sim_step_result_t r;
  assert_int_equal(sim_step(t, w, &cs, NULL, &r, &tu_err_), TN_PARSE);
  assert_non_null(strstr(tu_err_.msg, "deadlock"));
  wl_colls_free(&cs);
  wl_free(w);
  topo_free(t);
}

/* A step of one collective and nothing else takes what sim_run gives the set alone. */
static void test_single(void **state) {
  (void)state;
  for (int c = 0; c < TN_NCOLLS; c++) {
    topo_t *t = ring(4);
    workload_t *w = NULL;
    tn_err_clear(&tu_err_);
    TU_OK(wl_create(4, &w, &tu_err_));
    static const int64_t ct[] = {WL_CT_ALL_GATHER, WL_CT_REDUCE_SCATTER, WL_CT_ALL_REDUCE,
                                 WL_CT_ALL_TO_ALL};
    for (uint32_t r = 0; r < 4; r++) {
      wl_node_t x = {.id = 5, .op = WL_COLL, .comm_type = ct[c], .bytes = MIB};
      TU_OK(wl_add(w, r, &x, NULL, NULL, 0, NULL, &tu_err_));
    }
    wl_colls_t cs;
    TU_OK(wl_check(w, &cs, &tu_err_));
    algo_t *a = NULL;
    TU_OK(algo_direct((tn_coll_t)c, 4, MIB, 2, &a, &tu_err_));
    sim_step_result_t r;
    const algo_t *as[1] = {a};
    TU_OK(sim_step(t, w, &cs, as, &r, &tu_err_));
    assert_int_equal(r.step_ps, alone(t, a));
    sim_step_result_free(&r);
    if (c != TN_ALLTOALL) {
      algo_free(a);
      TU_OK(algo_ring((tn_coll_t)c, 4, MIB, 1, &a, &tu_err_));
      as[0] = a;
      TU_OK(sim_step(t, w, &cs, as, &r, &tu_err_));
      assert_int_equal(r.step_ps, alone(t, a));
      sim_step_result_free(&r);
    }
    algo_free(a);
    wl_colls_free(&cs);
    wl_free(w);
    topo_free(t);
  }
}

/* ---- running collectives apart (sim/step.c) gives the same step ---------------------- */

static void same_result(const sim_step_result_t *a, const sim_step_result_t *b) {
  assert_int_equal(a->step_ps, b->step_ps);
  assert_int_equal(a->last_rank, b->last_rank);
  assert_int_equal(a->exposed_ps, b->exposed_ps);
  assert_int_equal(a->messages, b->messages);
  assert_int_equal(a->npus, b->npus);
  assert_int_equal(a->ncolls, b->ncolls);
  for (uint32_t r = 0; r < a->npus; r++) {
    assert_int_equal(a->finish_ps[r], b->finish_ps[r]);
    assert_int_equal(a->compute_ps[r], b->compute_ps[r]);
  }
  for (uint32_t k = 0; k < a->ncolls; k++) {
    assert_int_equal(a->coll_start_ps[k], b->coll_start_ps[k]);
    assert_int_equal(a->coll_end_ps[k], b->coll_end_ps[k]);
  }
}

static void same_alone(const sim_step_result_t *a, const sim_step_result_t *b) {
  for (uint32_t k = 0; k < a->ncolls; k++) {
    assert_int_equal(a->alone[k].nranks, b->alone[k].nranks);
    assert_int_equal(a->alone[k].net_end_ps, b->alone[k].net_end_ps);
    for (uint32_t j = 0; j < a->alone[k].nranks; j++)
      assert_int_equal(a->alone[k].fin_ps[j], b->alone[k].fin_ps[j]);
  }
}

/* Runs w on t with and without the shortcut, checks the results are equal to the
 * picosecond, and adds what the shortcut did to *sum. The shortcut's run learns each
 * collective's run alone; a third run given those (sim_step_opts_t.known) is the same
 * step too and learns them again, and one given them a picosecond off where some must be
 * simulated fails. */
static void both_ways(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                      const algo_t *const *a, sim_i_step_stats_t *sum) {
  sim_step_result_t on, off, again;
  sim_i_step_stats_t st = {0}, st_off = {0}, sg = {0};
  sim_step_opts_t learn = {.learn = true};
  tn_err_clear(&tu_err_);
  TU_OK(sim_i_step(t, w, cs, a, NULL, SIM_I_STEP_KEEP, &off, &st_off, &tu_err_));
  TU_OK(sim_i_step(t, w, cs, a, &learn, SIM_I_STEP_APART, &on, &st, &tu_err_));
  assert_int_equal(st_off.apart, 0);
  assert_int_equal(st_off.reused, 0);
  assert_int_equal(st.given, 0);
  same_result(&on, &off);
  sim_step_opts_t given = {.known = on.alone, .learn = true};
  TU_OK(sim_i_step(t, w, cs, a, &given, SIM_I_STEP_APART, &again, &sg, &tu_err_));
  same_result(&again, &off);
  same_alone(&again, &on);
  if (sg.detailed > 0) { /* a run alone that does not match is met */
    for (uint32_t k = 0; k < cs->n; k++)
      for (uint32_t j = 0; j < on.alone[k].nranks; j++)
        on.alone[k].fin_ps[j]++;
    sim_step_result_t bad;
    tn_err_clear(&tu_err_);
    assert_int_equal(sim_i_step(t, w, cs, a, &given, SIM_I_STEP_APART, &bad, NULL, &tu_err_),
                     TN_INVAL);
    assert_non_null(strstr(tu_err_.msg, "other times than the ones given"));
    tn_err_clear(&tu_err_);
  }
  sum->apart += st.apart;
  sum->carried += st.carried;
  sum->placed += st.placed;
  sum->reused += st.reused;
  sum->grown += st.grown;
  sum->given += sg.given;
  sum->detailed += sg.detailed;
  sim_step_result_free(&on);
  sim_step_result_free(&off);
  sim_step_result_free(&again);
}

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A step on 8 ranks from seed: per layer a COMP (a chain; short ones make the next
 * communications queue and overlap, long ones leave the network idle) and, after it, a
 * collective of every rank, one per half of the ranks (process groups 1 and 2, at once)
 * or a SEND to the next rank and a RECV from the previous one. */
static workload_t *random_step(uint64_t seed, uint32_t layers) {
  workload_t *w = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(wl_create(8, &w, &tu_err_));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  static const int64_t ct[] = {WL_CT_ALL_GATHER, WL_CT_REDUCE_SCATTER, WL_CT_ALL_REDUCE,
                               WL_CT_ALL_TO_ALL};
  uint32_t last_comp[8] = {0}, count[8] = {0};
  uint64_t id = 1;
  for (uint32_t l = 0; l < layers; l++) {
    uint64_t us = rnd(&x) % 3 == 0 ? 1 + rnd(&x) % 3 : 40 + rnd(&x) % 30;
    uint32_t kind = (uint32_t)(rnd(&x) % 4); /* 0, 1: all ranks; 2: groups; 3: send/recv */
    int64_t type = ct[rnd(&x) % 4], type2 = ct[rnd(&x) % 4];
    uint64_t bytes = (64u << 10) << (rnd(&x) % 2), bytes2 = (64u << 10) << (rnd(&x) % 2);
    for (uint32_t r = 0; r < 8; r++) {
      wl_node_t c = {.id = id, .op = WL_COMP, .duration_us = us};
      uint32_t d = last_comp[r];
      TU_OK(wl_add(w, r, &c, NULL, &d, l ? 1 : 0, &last_comp[r], &tu_err_));
      count[r]++;
      d = last_comp[r];
      if (kind < 2) {
        wl_node_t y = {.id = id + 1, .op = WL_COLL, .comm_type = type, .bytes = bytes};
        TU_OK(wl_add(w, r, &y, NULL, &d, 1, NULL, &tu_err_));
      } else if (kind == 2) {
        wl_node_t y = {.id = id + 1 + r / 4,
                       .op = WL_COLL,
                       .comm_type = r < 4 ? type : type2,
                       .bytes = r < 4 ? bytes : bytes2,
                       .pg = 1 + r / 4};
        TU_OK(wl_add(w, r, &y, NULL, &d, 1, NULL, &tu_err_));
      } else {
        wl_node_t sd = {
            .id = id + 1, .op = WL_SEND, .peer = (r + 1) % 8, .bytes = bytes, .tag = (int32_t)l};
        wl_node_t rv = {
            .id = id + 2, .op = WL_RECV, .peer = (r + 7) % 8, .bytes = bytes, .tag = (int32_t)l};
        TU_OK(wl_add(w, r, &sd, NULL, &d, 1, NULL, &tu_err_));
        TU_OK(wl_add(w, r, &rv, NULL, &d, 1, NULL, &tu_err_));
      }
    }
    id += 3;
  }
  return w;
}

/* One algorithm per distinct (type, size, ranks), Ring (All-to-All: Direct), Direct, or
 * (greedy, with t) tenet's greedy for the collectives of every rank (its reductions are
 * COMPs), shared by the collectives that need it as tenet workload shares its sets. */
static algo_t **shared_algos(const wl_colls_t *cs, uint32_t npus, bool ring_algo,
                             const topo_t *greedy, uint32_t *nmade) {
  algo_t **made = calloc(cs->n + 1u, sizeof *made);
  algo_t **a = calloc(cs->n + 1u, sizeof *a);
  *nmade = 0;
  for (uint32_t k = 0; k < cs->n; k++) {
    const wl_coll_t *c = &cs->c[k];
    for (uint32_t j = 0; j < k && !a[k]; j++)
      if (cs->c[j].coll == c->coll && cs->c[j].bytes == c->bytes && cs->c[j].nranks == c->nranks &&
          memcmp(cs->c[j].ranks, c->ranks, c->nranks * sizeof *c->ranks) == 0)
        a[k] = a[j];
    if (a[k]) continue;
    algo_t *own = NULL;
    tn_err_clear(&tu_err_);
    if (greedy && c->nranks == npus) {
      synth_opts_t so = {.method = SYNTH_GREEDY, .seed = 1};
      synth_result_t sr;
      TU_OK(synth_run(greedy, c->coll, c->bytes, &so, &sr, &tu_err_));
      a[k] = sr.algo;
      sr.algo = NULL;
      synth_result_free(&sr);
      made[(*nmade)++] = a[k];
      continue;
    }
    if (ring_algo && c->coll != TN_ALLTOALL)
      TU_OK(algo_ring(c->coll, c->nranks, c->bytes, 1, &own, &tu_err_));
    else
      TU_OK(algo_direct(c->coll, c->nranks, c->bytes, 1, &own, &tu_err_));
    TU_OK(algo_embed(own, c->ranks, npus, &a[k], &tu_err_));
    algo_free(own);
    made[(*nmade)++] = a[k];
  }
  free(made);
  return a;
}

static void free_shared(algo_t **a, uint32_t n) {
  for (uint32_t k = 0; k < n; k++) {
    bool first = true;
    for (uint32_t j = 0; j < k && first; j++)
      first = a[j] != a[k];
    if (first) algo_free(a[k]);
  }
  free(a);
}

/* Steps whose collectives overlap, queue behind each other, run in process groups at
 * once and share the network with SENDs and RECVs: the same times with the shortcut as
 * with every collective in the network, and the shortcut is taken (collectives apart, some
 * carried into the network with messages in flight, which go back on their links). */
static void test_apart_random(void **state) {
  (void)state;
  topo_dim_t d[2] = {{TOPO_DIM_RING, 2, 50.0, 500.0, false},
                     {TOPO_DIM_LINE, 4, 25.0, 700.0, false}};
  topo_dim_t sw = {TOPO_DIM_SWITCH, 8, 40.0, 300.0, false};
  topo_t *star = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("t3", &sw, 1, &star, &tu_err_));
  topo_t *mesh = NULL, *r8 = ring(8);
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("t2", d, 2, &mesh, &tu_err_));
  sim_i_step_stats_t sum = {0};
  for (uint64_t seed = 1; seed <= 12; seed++) {
    workload_t *w = random_step(seed, 40);
    wl_colls_t cs;
    tn_err_clear(&tu_err_);
    TU_OK(wl_check(w, &cs, &tu_err_));
    const topo_t *t = seed % 3 == 0 ? mesh : seed % 3 == 1 ? r8 : star;
    for (int mode = 0; mode < 3; mode++) { /* Direct, Ring, greedy */
      uint32_t nmade = 0;
      algo_t **a = shared_algos(&cs, 8, mode == 1, mode == 2 ? t : NULL, &nmade);
      both_ways(t, w, &cs, (const algo_t *const *)a, &sum);
      free_shared(a, cs.n);
    }
    wl_colls_free(&cs);
    wl_free(w);
  }
  assert_true(sum.apart > 20);
  assert_true(sum.carried > 5);
  assert_true(sum.placed > 50);
  /* Finished collectives' memory was taken again, and the arrays grew to fit. */
  assert_true(sum.reused > 100);
  assert_true(sum.grown > 20);
  /* Given runs alone were taken, and some simulated after all when met in the network. */
  assert_true(sum.given > 20);
  assert_true(sum.detailed > 3);
  fprintf(stderr, "apart %u carried %u placed %llu reused %u grown %u given %u detailed %u\n",
          sum.apart, sum.carried, (unsigned long long)sum.placed, sum.reused, sum.grown, sum.given,
          sum.detailed);
  topo_free(mesh);
  topo_free(r8);
  topo_free(star);
}

/* The example steps (dp with queued All-Reduces, tp, the mixed one) agree too. */
static void test_apart_examples(void **state) {
  (void)state;
  topo_t *t = ring(8);
  sim_i_step_stats_t sum = {0};
  static const struct {
    wl_example_t kind;
    uint32_t layers;
    uint64_t bytes, us;
  } ex[] = {{WL_EX_DP, 6, 4 * MIB, 10},      {WL_EX_DP, 6, MIB, 1000},
            {WL_EX_TP, 4, 2 * MIB, 20},      {WL_EX_MIXED, 30, 4 * MIB, 30},
            {WL_EX_MIXED, 30, 2 * MIB, 200}, {WL_EX_PP, 6, MIB, 5}};
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    workload_t *w = example(ex[i].kind, 8, ex[i].layers, ex[i].bytes, ex[i].us);
    wl_colls_t cs;
    tn_err_clear(&tu_err_);
    TU_OK(wl_check(w, &cs, &tu_err_));
    for (int ring_algo = 0; ring_algo < 2; ring_algo++) {
      uint32_t nmade = 0;
      algo_t **a = shared_algos(&cs, 8, ring_algo, NULL, &nmade);
      both_ways(t, w, &cs, (const algo_t *const *)a, &sum);
      free_shared(a, cs.n);
    }
    wl_colls_free(&cs);
    wl_free(w);
  }
  assert_true(sum.apart > 20);
  topo_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single),       cmocka_unit_test(test_dp_overlapped),
      cmocka_unit_test(test_dp_queued),    cmocka_unit_test(test_pipeline),
      cmocka_unit_test(test_chain),        cmocka_unit_test(test_one_gpu),
      cmocka_unit_test(test_group),        cmocka_unit_test(test_deadlock),
      cmocka_unit_test(test_apart_random), cmocka_unit_test(test_apart_examples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
