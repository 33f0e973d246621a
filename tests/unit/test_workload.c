/* tests/unit/test_workload.c — workload/'s model and wl_check: a step that ASTRA-sim can run
 * passes and its collectives are grouped; every way a step would hang or be misread there
 * (cycles, unmatched messages, collectives that differ or miss ranks, types ASTRA-sim does
 * not run, inconsistent process groups) is refused naming the rank and node. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

static tn_err_t tu_err_;

static workload_t *make(uint32_t npus) {
  workload_t *w = NULL;
  TU_OK(wl_create(npus, &w, &tu_err_));
  return w;
}

static uint32_t put(workload_t *w, uint32_t r, wl_node_t x, const uint32_t *deps, uint32_t n) {
  uint32_t at = 0;
  TU_OK(wl_add(w, r, &x, "n", deps, n, &at, &tu_err_));
  return at;
}

static wl_node_t comp(uint64_t id) {
  return (wl_node_t){.id = id, .op = WL_COMP, .duration_us = 10};
}

static wl_node_t coll(uint64_t id, int64_t type, uint64_t bytes, int64_t pg) {
  return (wl_node_t){.id = id, .op = WL_COLL, .comm_type = type, .bytes = bytes, .pg = pg};
}

static wl_node_t p2p(uint64_t id, wl_op_t op, uint32_t peer, int32_t tag, uint64_t bytes) {
  return (wl_node_t){.id = id, .op = op, .peer = peer, .tag = tag, .bytes = bytes};
}

/* wl_check fails with TN_PARSE and needle in its message; frees w. */
static void expect_check_error(workload_t *w, const char *needle) {
  wl_colls_t c;
  tn_err_t err = {0};
  assert_int_equal(wl_check(w, &c, &err), TN_PARSE);
  if (strstr(err.msg, needle) == NULL) fail_msg("expected \"%s\" in: %s", needle, err.msg);
  assert_null(c.c);
  wl_free(w);
}

/* Data parallel on n ranks: per layer a COMP and an ALL_REDUCE after it (each COMP after
 * the previous one), then an ALL_GATHER after every ALL_REDUCE. */
static workload_t *dp(uint32_t n, uint32_t layers) {
  workload_t *w = make(n);
  for (uint32_t r = 0; r < n; r++) {
    uint32_t prev = UINT32_MAX, ars[8];
    for (uint32_t l = 0; l < layers; l++) {
      uint32_t c = put(w, r, comp(10 * l), &prev, prev == UINT32_MAX ? 0 : 1);
      ars[l] = put(w, r, coll(10 * l + 1, WL_CT_ALL_REDUCE, 1u << 20, 0), &c, 1);
      prev = c;
    }
    put(w, r, coll(1000, WL_CT_ALL_GATHER, 4096, 0), ars, layers);
  }
  return w;
}

static void wl_check_accepts_a_data_parallel_step_and_groups_its_collectives(void **state) {
  (void)state;
  workload_t *w = dp(4, 3);
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 4);
  for (uint32_t i = 0; i < 3; i++) {
    assert_int_equal(c.c[i].id, 10 * i + 1);
    assert_true(c.c[i].synthesizable);
    assert_int_equal(c.c[i].coll, TN_ALLREDUCE);
    assert_int_equal(c.c[i].nranks, 4);
    for (uint32_t k = 0; k < 4; k++) {
      assert_int_equal(c.c[i].ranks[k], k);
      assert_int_equal(c.c[i].index[k], 2 * i + 1);
      assert_int_equal(c.of[c.rank_off[k] + 2 * i + 1], i);
      assert_int_equal(c.of[c.rank_off[k] + 2 * i], UINT32_MAX); /* a COMP */
    }
  }
  assert_int_equal(c.c[3].coll, TN_ALLGATHER);
  assert_int_equal(c.c[3].bytes, 4096);
  wl_colls_free(&c);
  wl_colls_free(&c); /* twice is harmless */
  wl_free(w);
}

static void wl_check_names_a_dependency_cycle(void **state) {
  (void)state;
  workload_t *w = make(2);
  put(w, 0, comp(1), NULL, 0);
  uint32_t d2[] = {3}, d3[] = {1}, d4[] = {2}; /* 1 -> 3 -> 2 -> 1 by index (ids 7, 9, 12) */
  put(w, 1, comp(5), NULL, 0);
  put(w, 1, comp(7), d2, 1);
  put(w, 1, comp(9), d3, 1);
  put(w, 1, comp(12), d4, 1);
  expect_check_error(w, "rank 1: dependency cycle through nodes ");
  w = make(1);
  put(w, 0, comp(1), NULL, 0);
  uint32_t self[] = {1};
  put(w, 0, comp(2), self, 1);
  expect_check_error(w, "rank 0 node 2: dependency on itself");
  w = make(1);
  uint32_t far[] = {5};
  put(w, 0, comp(2), far, 1);
  expect_check_error(w, "rank 0 node 2: dependency out of range");
}

static void wl_check_cycle_message_lists_the_cycle_s_nodes(void **state) {
  (void)state;
  workload_t *w = make(1);
  uint32_t d0[] = {2}, d1[] = {0}, d2[] = {1};
  put(w, 0, comp(7), d0, 1);
  put(w, 0, comp(9), d1, 1);
  put(w, 0, comp(12), d2, 1);
  wl_colls_t c;
  tn_err_t err = {0};
  assert_int_equal(wl_check(w, &c, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "rank 0: dependency cycle through nodes"));
  assert_non_null(strstr(err.msg, "7"));
  assert_non_null(strstr(err.msg, "9"));
  assert_non_null(strstr(err.msg, "12"));
  wl_free(w);
}

static void wl_check_rejects_an_unmatched_send_or_recv(void **state) {
  (void)state;
  workload_t *w = make(2);
  put(w, 0, p2p(5, WL_SEND, 1, 3, 100), NULL, 0);
  put(w, 1, comp(1), NULL, 0);
  expect_check_error(
      w, "rank 0 node 5: SEND to rank 1 (tag 3, 100 bytes) has no matching RECV on rank 1");
  w = make(2);
  put(w, 0, p2p(5, WL_SEND, 1, 3, 100), NULL, 0);
  put(w, 1, p2p(6, WL_RECV, 0, 3, 200), NULL, 0); /* another size */
  expect_check_error(w, "has no matching");
  w = make(2);
  put(w, 0, comp(1), NULL, 0);
  put(w, 1, p2p(6, WL_RECV, 0, 4, 100), NULL, 0);
  expect_check_error(
      w, "rank 1 node 6: RECV from rank 0 (tag 4, 100 bytes) has no matching SEND on rank 0");
  /* Matched pairs pass, whatever their order. */
  w = make(2);
  put(w, 0, p2p(1, WL_SEND, 1, 0, 8), NULL, 0);
  put(w, 0, p2p(2, WL_SEND, 1, 1, 8), NULL, 0);
  put(w, 1, p2p(1, WL_RECV, 0, 1, 8), NULL, 0);
  put(w, 1, p2p(2, WL_RECV, 0, 0, 8), NULL, 0);
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 0);
  wl_colls_free(&c);
  wl_free(w);
}

static void wl_check_rejects_bad_peers_and_sizes(void **state) {
  (void)state;
  workload_t *w = make(2);
  put(w, 0, p2p(5, WL_SEND, 0, 0, 100), NULL, 0);
  put(w, 1, comp(1), NULL, 0);
  expect_check_error(w, "rank 0 node 5: SEND to rank 0, its own rank");
  w = make(2);
  put(w, 0, comp(1), NULL, 0);
  put(w, 1, p2p(5, WL_RECV, 7, 0, 100), NULL, 0);
  expect_check_error(w, "rank 1 node 5: RECV from rank 7, outside the workload's ranks");
  w = make(2);
  put(w, 0, p2p(5, WL_SEND, 1, 0, 0), NULL, 0);
  put(w, 1, comp(1), NULL, 0);
  expect_check_error(w, "rank 0 node 5: comm_size 0 outside 1..");
  w = make(2);
  for (uint32_t r = 0; r < 2; r++)
    put(w, r, coll(3, WL_CT_ALL_REDUCE, 0, 0), NULL, 0);
  expect_check_error(w, "rank 0 node 3: comm_size 0 outside 1..");
  w = make(1);
  wl_node_t x = comp(4);
  x.duration_us = WL_MAX_DURATION_US + 1;
  put(w, 0, x, NULL, 0);
  expect_check_error(w, "rank 0 node 4: duration_micros");
}

static void wl_check_rejects_a_rank_with_no_node(void **state) {
  (void)state;
  workload_t *w = make(3);
  put(w, 0, comp(1), NULL, 0);
  put(w, 2, comp(1), NULL, 0);
  expect_check_error(w, "rank 1: no node");
}

static void wl_check_rejects_a_collective_whose_size_differs_across_ranks(void **state) {
  (void)state;
  workload_t *w = make(3);
  for (uint32_t r = 0; r < 3; r++)
    put(w, r, coll(8, WL_CT_ALL_GATHER, r == 2 ? 200 : 100, 0), NULL, 0);
  expect_check_error(w, "node 8: collective of 100 bytes on rank 0 but 200 bytes on rank 2");
}

static void wl_check_rejects_a_collective_whose_type_or_size_differs(void **state) {
  (void)state;
  workload_t *w = make(2);
  put(w, 0, coll(8, WL_CT_ALL_GATHER, 100, 0), NULL, 0);
  put(w, 1, coll(8, WL_CT_REDUCE_SCATTER, 100, 0), NULL, 0);
  expect_check_error(w, "node 8: ALL_GATHER on rank 0 but REDUCE_SCATTER on rank 1");
  /* The first collective of each rank, under different ids. */
  w = make(2);
  put(w, 0, coll(8, WL_CT_ALL_GATHER, 100, 0), NULL, 0);
  put(w, 1, coll(9, WL_CT_ALL_GATHER, 200, 0), NULL, 0);
  expect_check_error(w, "node 8: collective of 100 bytes on rank 0 but 200 bytes on rank 1 (its "
                        "node 9)");
}
/* ASTRA-sim pairs collectives by the order each rank issues them, not by id: its own
 * microbenchmarks give rank r's one collective the id r. */
static void wl_check_pairs_collectives_by_order(void **state) {
  (void)state;
  workload_t *w = make(4);
  for (uint32_t r = 0; r < 4; r++) {
    put(w, r, comp(100 + r), NULL, 0);
    put(w, r, coll(200 + 10 * r, WL_CT_ALL_REDUCE, 64, 0), NULL, 0);
    put(w, r, coll(201 + 10 * r, WL_CT_ALL_GATHER, 32, 0), NULL, 0);
  }
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 2);
  assert_int_equal(c.c[0].comm_type, WL_CT_ALL_REDUCE);
  assert_int_equal(c.c[0].nranks, 4);
  assert_int_equal(c.c[0].id, 200);
  assert_int_equal(c.c[1].index[3], 2);
  assert_int_equal(c.of[c.rank_off[3] + 2], 1);
  wl_colls_free(&c);
  wl_free(w);
}

static void wl_check_rejects_a_collective_missing_on_a_rank(void **state) {
  (void)state;
  workload_t *w = make(3);
  put(w, 0, coll(8, WL_CT_ALL_REDUCE, 100, 0), NULL, 0);
  put(w, 1, coll(8, WL_CT_ALL_REDUCE, 100, 0), NULL, 0);
  put(w, 2, comp(1), NULL, 0);
  expect_check_error(w, "every rank (no process group): rank 2 holds 0 of its collectives but "
                        "rank 0 holds 1");
  w = make(3); /* also within a process group: its ranks hold as many */
  put(w, 0, coll(8, WL_CT_ALL_REDUCE, 100, 4), NULL, 0);
  put(w, 0, coll(9, WL_CT_ALL_REDUCE, 100, 4), NULL, 0);
  put(w, 1, coll(8, WL_CT_ALL_REDUCE, 100, 4), NULL, 0);
  put(w, 2, comp(8), NULL, 0);
  expect_check_error(w, "process group 4: rank 1 holds 1 of its collectives but rank 0 holds 2");
}

static void wl_check_rejects_collective_types_astra_sim_does_not_run(void **state) {
  (void)state;
  const int64_t refused[] = {
      WL_CT_REDUCE, WL_CT_GATHER, WL_CT_SCATTER, WL_CT_REDUCE_SCATTER_BLOCK, WL_CT_BARRIER, 42};
  const char *names[] = {"REDUCE,",  "GATHER,", "SCATTER,", "REDUCE_SCATTER_BLOCK,",
                         "BARRIER,", "code 42,"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    workload_t *w = make(2);
    for (uint32_t r = 0; r < 2; r++)
      put(w, r, coll(3, refused[i], 64, 0), NULL, 0);
    char needle[96];
    snprintf(needle, sizeof needle, "rank 0 node 3: collective %s which ASTRA-sim does not run",
             names[i]);
    expect_check_error(w, needle);
  }
  /* BROADCAST runs (replayed by its duration) without a size; it is not synthesized. */
  workload_t *w = make(2);
  for (uint32_t r = 0; r < 2; r++)
    put(w, r, (wl_node_t){.id = 3, .op = WL_COLL, .comm_type = WL_CT_BROADCAST, .duration_us = 5},
        NULL, 0);
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 1);
  assert_false(c.c[0].synthesizable);
  wl_colls_free(&c);
  wl_free(w);
}

static void wl_check_keeps_a_process_group_to_the_same_ranks(void **state) {
  (void)state;
  /* Group 5 is ranks {0, 1} and group 6 ranks {2, 3}: fine. */
  workload_t *w = make(4);
  for (uint32_t r = 0; r < 4; r++) {
    uint64_t base = r < 2 ? 10 : 30;
    int64_t pg = r < 2 ? 5 : 6;
    put(w, r, coll(base, WL_CT_ALL_GATHER, 64, pg), NULL, 0);
    put(w, r, coll(base + 10, WL_CT_REDUCE_SCATTER, 64, pg), NULL, 0);
  }
  wl_colls_t c;
  TU_OK(wl_check(w, &c, &tu_err_));
  assert_int_equal(c.n, 4);
  assert_int_equal(c.c[2].pg, 6);
  assert_int_equal(c.c[2].ranks[0], 2);
  wl_colls_free(&c);
  wl_free(w);
  /* Group 5 is {0, 1} in node 10 and {0, 2} in node 20. */
  w = make(3);
  put(w, 0, coll(10, WL_CT_ALL_GATHER, 64, 5), NULL, 0);
  put(w, 0, coll(20, WL_CT_ALL_GATHER, 64, 5), NULL, 0);
  put(w, 1, coll(10, WL_CT_ALL_GATHER, 64, 5), NULL, 0);
  put(w, 2, coll(20, WL_CT_ALL_GATHER, 64, 5), NULL, 0);
  expect_check_error(w, "process group 5: rank 1 holds 1 of its collectives but rank 0 holds 2");
}

static void wl_add_keeps_ids_ascending_and_merges_repeated_deps(void **state) {
  (void)state;
  workload_t *w = make(2);
  put(w, 0, comp(1), NULL, 0);
  put(w, 0, comp(2), NULL, 0);
  uint32_t deps[] = {1, 0, 1, 0};
  uint32_t at = put(w, 0, comp(3), deps, 4);
  assert_int_equal(wl_node(w, 0, at)->ndeps, 2);
  assert_int_equal(wl_deps(w, 0, wl_node(w, 0, at))[0], 0);
  assert_int_equal(wl_deps(w, 0, wl_node(w, 0, at))[1], 1);
  wl_node_t x = comp(3);
  tn_err_t err = {0};
  assert_int_equal(wl_add(w, 0, &x, NULL, NULL, 0, NULL, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 0: node ids must ascend (3 after 3)"));
  tn_err_clear(&err);
  assert_int_equal(wl_add(w, 2, &x, NULL, NULL, 0, NULL, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "rank 2 out of range"));
  char longname[WL_MAX_NAME + 40], buf[WL_MAX_NAME + 1];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  x.id = 9;
  TU_OK(wl_add(w, 1, &x, longname, NULL, 0, &at, &tu_err_));
  assert_int_equal(strlen(wl_name(w, 1, wl_node(w, 1, at), buf)), WL_MAX_NAME);
  wl_free(w);
  wl_free(NULL);
}

static void wl_comm_type_names_and_synthesizable_types(void **state) {
  (void)state;
  char buf[24];
  assert_string_equal(wl_comm_type_name(WL_CT_REDUCE_SCATTER, buf), "REDUCE_SCATTER");
  assert_string_equal(wl_comm_type_name(-1, buf), "code -1");
  tn_coll_t c;
  assert_true(wl_comm_type_coll(WL_CT_ALL_TO_ALL, &c));
  assert_int_equal(c, TN_ALLTOALL);
  assert_false(wl_comm_type_coll(WL_CT_BROADCAST, &c));
  workload_t *w = NULL;
  tn_err_t err = {0};
  assert_int_equal(wl_create(0, &w, &err), TN_INVAL);
  assert_null(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wl_check_accepts_a_data_parallel_step_and_groups_its_collectives),
      cmocka_unit_test(wl_check_names_a_dependency_cycle),
      cmocka_unit_test(wl_check_cycle_message_lists_the_cycle_s_nodes),
      cmocka_unit_test(wl_check_rejects_an_unmatched_send_or_recv),
      cmocka_unit_test(wl_check_rejects_bad_peers_and_sizes),
      cmocka_unit_test(wl_check_rejects_a_rank_with_no_node),
      cmocka_unit_test(wl_check_rejects_a_collective_whose_size_differs_across_ranks),
      cmocka_unit_test(wl_check_rejects_a_collective_whose_type_or_size_differs),
      cmocka_unit_test(wl_check_pairs_collectives_by_order),
      cmocka_unit_test(wl_check_rejects_a_collective_missing_on_a_rank),
      cmocka_unit_test(wl_check_rejects_collective_types_astra_sim_does_not_run),
      cmocka_unit_test(wl_check_keeps_a_process_group_to_the_same_ranks),
      cmocka_unit_test(wl_add_keeps_ids_ascending_and_merges_repeated_deps),
      cmocka_unit_test(wl_comm_type_names_and_synthesizable_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
