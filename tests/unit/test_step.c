/* tests/unit/test_step.c — whole steps (sim_step) against hand-worked times: a step whose
 * collectives never overlap takes the compute chain plus each collective's own time (as
 * sim_run gives it), a pipeline takes its fill and drain, and the resource rules of
 * ASTRA-sim's workload layer (one COMP and one communication per rank at a time) hold. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "sim/sim.h"
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single),    cmocka_unit_test(test_dp_overlapped),
      cmocka_unit_test(test_dp_queued), cmocka_unit_test(test_pipeline),
      cmocka_unit_test(test_chain),     cmocka_unit_test(test_one_gpu),
      cmocka_unit_test(test_group),     cmocka_unit_test(test_deadlock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
