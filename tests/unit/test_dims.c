/* tests/unit/test_dims.c — the dimension-by-dimension All-Gather (dims/): on random
 * generated fabrics (rings one- and two-way, lines, fully connected and switch dimensions,
 * mixed figures) every collective it makes verifies, an All-Gather's predicted time is the
 * simulated one, every order of same-instant events gives the same time, nothing beats the
 * bound and runs are identical; on meshes, tori and hypercubes it is at the bound; what it
 * cannot plan is refused. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "dims/dims.h"
#include "sim/sim.h"
#include "synth/synth.h"

static tn_err_t tu_err_;

static uint64_t simulate(const topo_t *t, const algo_t *a) {
  sim_result_t res = {0};
  TU_OK(sim_run(t, a, NULL, &res, &tu_err_));
  uint64_t time = res.time_ps;
  sim_result_free(&res);
  return time;
}

static void verify(const topo_t *t, const algo_t *a) {
  algo_verify_report_t rep;
  tn_err_t err = {0};
  if (algo_verify(a, t, &rep, &err) != TN_OK)
    fail_msg("%s %s: %s", t->name, tn_coll_name(a->coll), err.msg);
  assert_true(rep.semantics_checked);
}

/* The three collectives through synth/ with dims: verified, an All-Gather's prediction
 * the simulated time, none below the bound (a simulated time may undercut the exact figure
 * by half a ps per message). Returns the All-Gather's time over its bound. */
static double check_fabric(const topo_t *t, uint64_t size) {
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  double ag_ratio = 0;
  for (size_t c = 0; c < (topo_is_symmetric(t) ? 3u : 1u); c++) {
    synth_opts_t o = {.method = SYNTH_DIMS};
    synth_result_t r;
    TU_OK(synth_run(t, colls[c], size, &o, &r, &tu_err_));
    verify(t, r.algo);
    assert_int_equal(r.algo->chunks_per_npu, dims_chunks(t));
    uint64_t sim = simulate(t, r.algo);
    if (colls[c] == TN_ALLGATHER && sim != r.time_ps)
      fail_msg("%s: predicted %llu ps, simulated %llu ps", t->name, (unsigned long long)r.time_ps,
               (unsigned long long)sim);
    uint64_t lb = tu_lower_bound_ps(t, colls[c], size), slack = algo_send_count(r.algo) / 2 + 1;
    if (sim + slack < lb)
      fail_msg("%s %s: %llu ps beats the bound %llu ps", t->name, tn_coll_name(colls[c]),
               (unsigned long long)sim, (unsigned long long)lb);
    if (colls[c] == TN_ALLGATHER) ag_ratio = (double)sim / (double)lb;
    sim_spread_t sp; /* order-proof: the same time whatever order same-instant events take */
    TU_OK(sim_order_spread(t, r.algo, 3, &sp, &tu_err_));
    if (sp.min_ps != sp.max_ps || sp.id_ps != sim)
      fail_msg("%s %s: %llu..%llu ps over the orders tried", t->name, tn_coll_name(colls[c]),
               (unsigned long long)sp.min_ps, (unsigned long long)sp.max_ps);
    synth_result_free(&r);
  }
  return ag_ratio;
}

/* A random generated fabric: 1 to 3 dimensions of 1 to 5 NPUs, each a two-way or one-way
 * ring, a line, fully connected or a switch, with its own bandwidth and latency. */
static topo_t *random_dims(uint64_t seed) {
  srand((unsigned)seed);
  topo_dim_t d[3];
  uint32_t nd = 1 + (uint32_t)rand() % 3, npus = 1;
  for (uint32_t i = 0; i < nd; i++) {
    static const topo_dim_kind_t kinds[] = {TOPO_DIM_RING, TOPO_DIM_LINE, TOPO_DIM_FC,
                                            TOPO_DIM_SWITCH};
    d[i] = (topo_dim_t){.kind = kinds[rand() % 4],
                        .size = 1 + (uint32_t)rand() % 5,
                        .bandwidth_GBps = 10.0 + rand() % 90,
                        .latency_ns = rand() % 1000};
    if (d[i].kind == TOPO_DIM_RING && d[i].size >= 3) d[i].unidirectional = rand() % 4 == 0;
    if (d[i].kind != TOPO_DIM_RING && d[i].size == 1) d[i].size = 2;
    npus *= d[i].size;
  }
  if (npus < 2) d[0].size = 2;
  char name[32];
  snprintf(name, sizeof name, "dims-%llu", (unsigned long long)seed);
  topo_t *t = NULL;
  TU_OK(topo_gen(name, d, nd, &t, &tu_err_));
  return t;
}

static void dims_verifies_on_random_generated_fabrics(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    topo_t *t = random_dims(seed);
    if (t->npus >= 2) check_fabric(t, 1u << 20);
    topo_free(t);
  }
}

static topo_t *gen(const char *kind, const char *dims) {
  topo_t *t = NULL;
  TU_OK(topo_gen_kind(kind, dims, 50, 500, &t, &tu_err_));
  return t;
}

/* Square meshes, tori and hypercubes: every link dimension works throughout, so the
 * All-Gather is at the bound but for the pipeline's latency. */
static void dims_is_at_the_bound_on_meshes_tori_and_hypercubes(void **state) {
  (void)state;
  static const char *const shapes[][2] = {{"mesh", "8x8"},     {"torus", "8x8"},
                                          {"torus", "4x4x4"},  {"mesh", "4x4x4"},
                                          {"hypercube", "64"}, {"ring", "8"}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    topo_t *t = gen(shapes[i][0], shapes[i][1]);
    double r = check_fabric(t, 1ull << 30);
    if (r > 1.002) fail_msg("%s: All-Gather at %.4f of the bound", t->name, r);
    topo_free(t);
  }
}

static void dims_runs_are_identical(void **state) {
  (void)state;
  topo_t *t = gen("torus", "6x4");
  schedule_t a, b;
  TU_OK(dims_allgather(t, 1u << 24, 0, UINT64_MAX, &a, &tu_err_));
  TU_OK(dims_allgather(t, 1u << 24, 0, UINT64_MAX, &b, &tu_err_));
  assert_int_equal(a.xfers.len, b.xfers.len);
  assert_int_equal(a.time_ps, b.time_ps);
  assert_memory_equal(a.xfers.data, b.xfers.data, a.xfers.len * sizeof(sched_xfer_t));
  assert_memory_equal(a.chunks.data, b.chunks.data, a.chunks.len * sizeof(uint32_t));
  schedule_free(&a);
  schedule_free(&b);
  topo_free(t);
}

static void dims_refuses_what_it_cannot_plan(void **state) {
  (void)state;
  schedule_t s;
  tn_err_t err = {0};
  topo_t *r = tu_random_fabric(8, 3, false);
  assert_int_equal(dims_allgather(r, 1u << 20, 0, UINT64_MAX, &s, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "generated fabric"));
  assert_int_equal(s.xfers.len, 0);
  schedule_free(&s);
  topo_free(r);
  topo_t *t = gen("mesh", "4x4");
  err = (tn_err_t){0};
  assert_int_equal(dims_allgather(t, 1u << 20, 3, UINT64_MAX, &s, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "one chunk per dimension"));
  schedule_free(&s);
  err = (tn_err_t){0};
  assert_int_equal(dims_allgather(t, 31, 0, UINT64_MAX, &s, &err), TN_INVAL);
  schedule_free(&s);
  synth_opts_t o = {.method = SYNTH_DIMS};
  synth_result_t res;
  err = (tn_err_t){0};
  assert_int_equal(synth_run(t, TN_ALLTOALL, 1u << 20, &o, &res, &err), TN_INVAL);
  topo_free(t);
  /* A one-way ring: its All-Gather, but no reversed half on the transposed fabric. */
  topo_dim_t one = {.kind = TOPO_DIM_RING, .size = 5, .bandwidth_GBps = 50, .unidirectional = true};
  TU_OK(topo_gen("one-way", &one, 1, &t, &tu_err_));
  err = (tn_err_t){0};
  assert_int_equal(synth_run(t, TN_REDUCESCATTER, 1u << 20, &o, &res, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "two-way"));
  TU_OK(synth_run(t, TN_ALLGATHER, 1u << 20, &o, &res, &tu_err_));
  verify(t, res.algo);
  synth_result_free(&res);
  topo_free(t);
}

/* The estimate counts what is planned: more dimensions gathered in bigger blocks cost
 * more, an All-Reduce more than an All-Gather, an explicit fabric nothing. */
static void dims_memory_estimate_grows_with_the_plan(void **state) {
  (void)state;
  topo_t *a = gen("mesh", "8x8"), *b = gen("mesh", "16x16");
  topo_t *r = tu_random_fabric(8, 3, false);
  assert_true(dims_mem_estimate(b, TN_ALLGATHER, 1) > dims_mem_estimate(a, TN_ALLGATHER, 1));
  assert_true(dims_mem_estimate(a, TN_ALLREDUCE, 1) > dims_mem_estimate(a, TN_ALLGATHER, 1));
  assert_int_equal(dims_mem_estimate(r, TN_ALLGATHER, 1), 0);
  topo_free(a);
  topo_free(b);
  topo_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dims_verifies_on_random_generated_fabrics),
      cmocka_unit_test(dims_is_at_the_bound_on_meshes_tori_and_hypercubes),
      cmocka_unit_test(dims_runs_are_identical),
      cmocka_unit_test(dims_refuses_what_it_cannot_plan),
      cmocka_unit_test(dims_memory_estimate_grows_with_the_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
