/* tests/unit/test_sim.c — the simulator against ASTRA-sim's reference figures
 * (docs/chakra-format.md), closed forms of the network model, its errors and determinism.
 * Sets are built with algo_add_* the way the Chakra producers write them. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "sim/sim.h"
#include "topo/topo.h"

static tn_err_t tu_err_;

#define MIB (1024u * 1024u)

static topo_t *gen1(topo_dim_kind_t kind, uint32_t n, bool unidirectional) {
  topo_dim_t d = {kind, n, 50.0, 500.0, unidirectional};
  topo_t *t = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("t", &d, 1, &t, &tu_err_));
  return t;
}

static uint64_t run_ok(const topo_t *t, const algo_t *a, sim_result_t *res) {
  tn_err_clear(&tu_err_);
  TU_OK(sim_run(t, a, NULL, res, &tu_err_));
  return res->time_ps;
}

static void assert_within(uint64_t got_ps, double want_ns, double tol) {
  double got = (double)got_ps / 1000.0;
  double rel = (got - want_ns) / want_ns;
  if (rel < -tol || rel > tol)
    fail_msg("simulated %.3f ns, expected %.3f ns (off by %.4f%%)", got, want_ns, rel * 100.0);
}

/* Ring All-Gather as MSCCLang's ring / tenet's baseline write it: at step s rank r sends
 * chunk (r - s) to r + dir and receives chunk (r - s - 1)·dir from r - dir; every send after
 * the first waits for the previous receive; tags count messages per pair. half picks the
 * chunk of a bidirectional split (k = 2 chunks per NPU). */
static void add_ring_ag(algo_t *a, uint32_t n, uint64_t bytes, uint32_t k, uint32_t half, int dir) {
  for (uint32_t r = 0; r < n; r++) {
    uint32_t next = (uint32_t)((int)r + dir + (int)n) % n;
    uint32_t prev = (uint32_t)((int)r - dir + (int)n) % n;
    uint32_t last_recv = 0;
    for (uint32_t s = 0; s + 1 < n; s++) {
      uint32_t owner = (uint32_t)(((int)r - dir * (int)s) % (int)n + (int)n) % n;
      uint32_t from = (uint32_t)(((int)r - dir * (int)(s + 1)) % (int)n + (int)n) % n;
      uint32_t cs = owner * k + half, cr = from * k + half;
      TU_OK(algo_add_send(a, r, next, (int32_t)s, bytes, &last_recv, s ? 1 : 0, &cs, 1, NULL,
                          &tu_err_));
      TU_OK(algo_add_recv(a, r, prev, (int32_t)s, bytes, false, NULL, 0, &cr, 1, &last_recv,
                          &tu_err_));
    }
  }
}

static algo_t *ring_ag(uint32_t n, uint64_t shard, bool bidir) {
  algo_t *a = NULL;
  uint32_t k = bidir ? 2 : 1;
  TU_OK(algo_create("ring", TN_ALLGATHER, n, k, shard * n, &a, &tu_err_));
  if (bidir) {
    add_ring_ag(a, n, shard / 2, 2, 0, +1);
    add_ring_ag(a, n, shard / 2, 2, 1, -1);
  } else {
    add_ring_ag(a, n, shard, 1, 0, +1);
  }
  return a;
}

static void check_ring_ag(uint32_t n, bool unidirectional_ring, double want_ns) {
  topo_t *t = gen1(TOPO_DIM_RING, n, unidirectional_ring);
  algo_t *a = ring_ag(n, MIB, false);
  sim_result_t res;
  assert_within(run_ok(t, a, &res), want_ns, 0.005);
  assert_int_equal(res.messages, (uint64_t)n * (n - 1));
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

static void sim_matches_astra_ring_allgather_4_8_16(void **state) {
  (void)state;
  check_ring_ag(4, false, 60093.0);
  check_ring_ag(8, false, 140217.0);
  check_ring_ag(16, false, 300465.0);
  /* Messages to r + 1 use only the clockwise links: a unidirectional ring agrees. */
  check_ring_ag(4, true, 60093.0);
  check_ring_ag(8, true, 140217.0);
  check_ring_ag(16, true, 300465.0);
}

static void sim_matches_astra_bidirectional_ring_allgather_4(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 4, false);
  algo_t *a = ring_ag(4, MIB, true);
  sim_result_t res;
  assert_within(run_ok(t, a, &res), 30795.0, 0.005);
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

/* collectiveapi's conversion of MSCCLang's 8-NPU ring All-Reduce (1 MB): one thread block
 * per rank, so one serial chain: send, then 7 × (recv, reduce, send) — the last of them
 * recv-reduce-copy-send, which starts the All-Gather — then 6 × (recv, send), then a final
 * recv. Every message 131,072 B with tag 0; reductions cost 7 µs. */
static algo_t *collectiveapi_ring_allreduce(uint32_t n, uint64_t bytes, uint64_t comp_us) {
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", n, &a, &tu_err_));
  for (uint32_t r = 0; r < n; r++) {
    uint32_t next = (r + 1) % n, prev = (r + n - 1) % n, last = 0;
    TU_OK(algo_add_send(a, r, next, 0, bytes, NULL, 0, NULL, 0, &last, &tu_err_));
    for (uint32_t s = 0; s + 1 < n; s++) {
      TU_OK(algo_add_recv(a, r, prev, 0, bytes, true, &last, 1, NULL, 0, &last, &tu_err_));
      TU_OK(algo_add_comp(a, r, comp_us, &last, 1, NULL, 0, &last, &tu_err_));
      TU_OK(algo_add_send(a, r, next, 0, bytes, &last, 1, NULL, 0, &last, &tu_err_));
    }
    for (uint32_t s = 0; s + 2 < n; s++) {
      TU_OK(algo_add_recv(a, r, prev, 0, bytes, false, &last, 1, NULL, 0, &last, &tu_err_));
      TU_OK(algo_add_send(a, r, next, 0, bytes, &last, 1, NULL, 0, &last, &tu_err_));
    }
    TU_OK(algo_add_recv(a, r, prev, 0, bytes, false, &last, 1, NULL, 0, &last, &tu_err_));
  }
  return a;
}

static void sim_matches_astra_collectiveapi_ring_allreduce_8(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 8, false);
  algo_t *a = collectiveapi_ring_allreduce(8, 131072, 7);
  assert_int_equal(algo_rank_len(a, 3), 14 + 14 + 7);
  sim_result_t res;
  assert_within(run_ok(t, a, &res), 90174.0, 0.005);
  assert_int_equal(res.messages, 8 * 14);
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

/* Direct All-Gather: every rank sends its shard straight to every other rank. On a fully
 * connected fabric each link carries one message: latency + shard / B. */
static algo_t *direct_ag(uint32_t n, uint64_t shard, bool foreign) {
  algo_t *a = NULL;
  if (foreign)
    TU_OK(algo_create_unknown("chakra", n, &a, &tu_err_));
  else
    TU_OK(algo_create("direct", TN_ALLGATHER, n, 1, shard * n, &a, &tu_err_));
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t p = 0; p < n; p++) {
      if (p == r) continue;
      /* Foreign producers use any tag scheme; here an arbitrary but consistent one. */
      int32_t ts = foreign ? (int32_t)((r * 7919u + p * 104729u) % 400000000u) : 0;
      int32_t tr = foreign ? (int32_t)((p * 7919u + r * 104729u) % 400000000u) : 0;
      uint32_t cs = r, cr = p;
      TU_OK(algo_add_send(a, r, p, ts, shard, NULL, 0, foreign ? NULL : &cs, foreign ? 0 : 1, NULL,
                          &tu_err_));
      TU_OK(algo_add_recv(a, r, p, tr, shard, false, NULL, 0, foreign ? NULL : &cr, foreign ? 0 : 1,
                          NULL, &tu_err_));
    }
  return a;
}

static void sim_direct_allgather_on_fc_is_latency_plus_shard_time(void **state) {
  (void)state;
  for (uint32_t n = 2; n <= 16; n *= 2) {
    topo_t *t = gen1(TOPO_DIM_FC, n, false);
    algo_t *a = direct_ag(n, MIB, false);
    sim_result_t res;
    assert_int_equal(run_ok(t, a, &res), 500000u + tu_xfer_ps(MIB, 50.0));
    for (uint32_t r = 0; r < n; r++)
      assert_int_equal(res.npu_finish_ps[r], res.time_ps);
    assert_int_equal(res.links[0].messages, 1);
    sim_result_free(&res);
    algo_free(a);
    topo_free(t);
  }
}

static void sim_runs_foreign_set_with_arbitrary_tags(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_FC, 8, false);
  algo_t *a = direct_ag(8, 4096, true);
  assert_false(a->has_coll);
  sim_result_t res;
  assert_int_equal(run_ok(t, a, &res), 500000u + tu_xfer_ps(4096, 50.0));
  assert_int_equal(res.messages, 56);
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

static topo_t *explicit_topo(uint32_t npus, uint32_t switches, const topo_link_t *links,
                             uint32_t nlinks) {
  topo_t *t = NULL;
  TU_OK(topo_create("x", npus, switches, links, nlinks, &t, &tu_err_));
  return t;
}

/* k messages from 0 to 1 on the single link 0 -> 1: they queue FIFO, the last leaves
 * after k·m/B and arrives latency later. */
static void sim_contention_on_one_link_is_k_transfers_plus_latency(void **state) {
  (void)state;
  topo_link_t l[2] = {{0, 1, 25.0, 700000, 0}, {1, 0, 25.0, 700000, 0}};
  topo_t *t = explicit_topo(2, 0, l, 2);
  const uint64_t m = 300000;
  for (uint32_t k = 1; k <= 8; k++) {
    algo_t *a = NULL;
    TU_OK(algo_create_unknown("chakra", 2, &a, &tu_err_));
    for (uint32_t i = 0; i < k; i++) {
      TU_OK(algo_add_send(a, 0, 1, (int32_t)i, m, NULL, 0, NULL, 0, NULL, &tu_err_));
      TU_OK(algo_add_recv(a, 1, 0, (int32_t)i, m, false, NULL, 0, NULL, 0, NULL, &tu_err_));
    }
    sim_result_t res;
    assert_int_equal(run_ok(t, a, &res), k * tu_xfer_ps(m, 25.0) + 700000u);
    assert_int_equal(res.links[0].link, topo_find_link(t, 0, 1));
    assert_int_equal(res.links[0].messages, k);
    assert_int_equal(res.links[0].bytes, k * m);
    assert_int_equal(res.links[0].busy_ps, k * tu_xfer_ps(m, 25.0));
    assert_int_equal(res.links[1].messages, 0);
    sim_result_free(&res);
    algo_free(a);
  }
  topo_free(t);
}

/* Through a switch a message is stored and forwarded: two hops of m/B + latency; k
 * back-to-back messages pipeline, so the last arrives after k·m/B + L + m/B + L. */
static void sim_switch_hop_is_store_and_forward(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_SWITCH, 4, false);
  assert_int_equal(t->switches, 1);
  const uint64_t m = MIB, x = tu_xfer_ps(MIB, 50.0);
  for (uint32_t k = 1; k <= 4; k++) {
    algo_t *a = NULL;
    TU_OK(algo_create_unknown("chakra", 4, &a, &tu_err_));
    for (uint32_t i = 0; i < k; i++) {
      TU_OK(algo_add_send(a, 0, 3, (int32_t)i, m, NULL, 0, NULL, 0, NULL, &tu_err_));
      TU_OK(algo_add_recv(a, 3, 0, (int32_t)i, m, false, NULL, 0, NULL, 0, NULL, &tu_err_));
    }
    TU_OK(algo_fill_idle(a, &tu_err_));
    sim_result_t res;
    assert_int_equal(run_ok(t, a, &res), k * x + 500000u + x + 500000u);
    assert_int_equal(res.npu_finish_ps[1], 1000); /* idle rank: one COMP of 0 µs = 1 ns */
    assert_int_equal(res.events, 2 * k + 2);
    sim_result_free(&res);
    algo_free(a);
  }
  topo_free(t);
}

/* Eager sends: the SEND completes at delivery even if the RECV is posted later, and the
 * RECV then completes at once. */
static void sim_send_is_eager_and_late_recv_completes_at_once(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 2, false);
  algo_t *a = NULL;
  uint32_t c = 0;
  TU_OK(algo_create_unknown("chakra", 2, &a, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 0, 1024, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 1, 10, NULL, 0, NULL, 0, &c, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 1024, false, &c, 1, NULL, 0, NULL, &tu_err_));
  sim_result_t res;
  run_ok(t, a, &res);
  assert_int_equal(res.npu_finish_ps[0], 500000u + tu_xfer_ps(1024, 50.0));
  assert_int_equal(res.npu_finish_ps[1], 10000000u);
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

/* Same key, FIFO: two messages 0 -> 1 with tag 0 and equal size match RECVs in order. */
static void sim_matches_same_key_fifo(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 2, false);
  algo_t *a = collectiveapi_ring_allreduce(2, 4096, 0);
  sim_result_t res;
  uint64_t x = tu_xfer_ps(4096, 50.0) + 500000u;
  /* send, recv, comp(1 ns), send, recv: two serial message times plus one ns. */
  assert_int_equal(run_ok(t, a, &res), 2 * x + 1000u);
  sim_result_free(&res);
  algo_free(a);
  topo_free(t);
}

/* Sends of one rank that become ready at one instant enter their link in ascending id
 * order: rank 1's reduction waits for the message of tag 1, queued behind or ahead of a
 * 1 MiB message depending on the ids. */
static void sim_issues_ready_sends_in_ascending_id(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 2, false);
  const uint64_t big = MIB, small = 1024, lat = 500000;
  for (int big_first = 0; big_first < 2; big_first++) {
    algo_t *a = NULL;
    uint32_t r = 0;
    TU_OK(algo_create_unknown("chakra", 2, &a, &tu_err_));
    for (int k = 0; k < 2; k++) {
      bool is_big = (k == 0) == (big_first != 0);
      TU_OK(algo_add_send(a, 0, 1, is_big ? 0 : 1, is_big ? big : small, NULL, 0, NULL, 0, NULL,
                          &tu_err_));
    }
    TU_OK(algo_add_recv(a, 1, 0, 1, small, false, NULL, 0, NULL, 0, &r, &tu_err_));
    TU_OK(algo_add_comp(a, 1, 100, &r, 1, NULL, 0, NULL, &tu_err_));
    TU_OK(algo_add_recv(a, 1, 0, 0, big, false, NULL, 0, NULL, 0, NULL, &tu_err_));
    sim_result_t res;
    run_ok(t, a, &res);
    uint64_t small_at = tu_xfer_ps(small, 50.0) + lat;
    if (big_first) small_at += tu_xfer_ps(big, 50.0);
    assert_int_equal(res.npu_finish_ps[1], small_at + 100000000u);
    sim_result_free(&res);
    algo_free(a);
  }
  topo_free(t);
}

/* The same error, word for word, whether the checks run on the calling thread alone or
 * rank by rank on several workers (sim_opts_t.threads). */
static void expect_error(const topo_t *t, const algo_t *a, tn_status_t want, const char *what1,
                         const char *what2) {
  char first[sizeof(((tn_err_t *)0)->msg)] = "";
  for (unsigned threads = 0; threads <= 3; threads += 3) {
    sim_result_t res;
    tn_err_t err = {0};
    sim_opts_t so = {.threads = threads};
    assert_int_equal(sim_run(t, a, threads ? &so : NULL, &res, &err), want);
    assert_int_equal(err.status, want);
    if (strstr(err.msg, what1) == NULL || (what2 && strstr(err.msg, what2) == NULL))
      fail_msg("message '%s' lacks '%s' / '%s'", err.msg, what1, what2 ? what2 : "");
    if (threads == 0)
      snprintf(first, sizeof first, "%s", err.msg);
    else
      assert_string_equal(err.msg, first);
    assert_null(res.npu_finish_ps);
    assert_null(res.links);
  }
}

static algo_t *pair_set(void) {
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", 3, &a, &tu_err_));
  TU_OK(algo_add_comp(a, 2, 0, NULL, 0, NULL, 0, NULL, &tu_err_));
  return a;
}

static void sim_rejects_unmatched_send(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  TU_OK(algo_add_send(a, 0, 1, 5, 64, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 6, 64, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 5, 64, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 0 node 1: unmatched SEND", "tag 6");
  algo_free(a);
  topo_free(t);
}

static void sim_rejects_unmatched_recv_with_other_size(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  TU_OK(algo_add_send(a, 0, 1, 5, 64, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 5, 65, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 0 node 0: unmatched SEND", "64 bytes");
  algo_free(a);
  a = pair_set();
  TU_OK(algo_add_recv(a, 1, 0, 5, 64, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 1 node 0: unmatched RECV", "src 0, dst 1, tag 5");
  algo_free(a);
  topo_free(t);
}

static void sim_rejects_dependency_on_missing_node(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  uint32_t dep = 7;
  TU_OK(algo_add_comp(a, 1, 1, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 1, 1, &dep, 1, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 1 node 1: depends on missing node 7", NULL);
  algo_free(a);
  topo_free(t);
}

static void sim_rejects_dependency_cycle(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  uint32_t d2 = 2, d0 = 0, d1 = 1;
  TU_OK(algo_add_comp(a, 1, 1, NULL, 0, NULL, 0, NULL, &tu_err_)); /* 0: fine */
  TU_OK(algo_add_comp(a, 1, 1, &d2, 1, NULL, 0, NULL, &tu_err_));  /* 1 <- 2 */
  TU_OK(algo_add_comp(a, 1, 1, &d1, 1, NULL, 0, NULL, &tu_err_));  /* 2 <- 1 */
  TU_OK(algo_add_comp(a, 1, 1, &d0, 1, NULL, 0, NULL, &tu_err_));  /* 3 <- 0 */
  expect_error(t, a, TN_PARSE, "rank 1 node 1: dependency cycle", NULL);
  algo_free(a);
  a = pair_set();
  TU_OK(algo_add_comp(a, 0, 1, &d0, 1, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 0 node 0: dependency cycle", NULL);
  algo_free(a);
  topo_free(t);
}

/* Both ranks first wait to receive, then send: matched and acyclic, yet stuck. */
static void sim_reports_deadlock(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  uint32_t r0 = 0;
  for (uint32_t r = 0; r < 2; r++) {
    TU_OK(algo_add_recv(a, r, 1 - r, 0, 64, false, NULL, 0, NULL, 0, &r0, &tu_err_));
    TU_OK(algo_add_send(a, r, 1 - r, 0, 64, &r0, 1, NULL, 0, NULL, &tu_err_));
  }
  expect_error(t, a, TN_PARSE, "rank 0 node 0: deadlock", "rank 1 node 1");
  algo_free(a);
  topo_free(t);
}

static void sim_rejects_peer_outside_topology(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 3, false);
  algo_t *a = pair_set();
  TU_OK(algo_add_send(a, 1, 3, 0, 64, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 1 node 0: SEND to rank 3, outside the topology", NULL);
  algo_free(a);
  a = pair_set();
  TU_OK(algo_add_recv(a, 1, 1, 0, 64, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_PARSE, "rank 1 node 0: RECV from itself", NULL);
  algo_free(a);
  /* More ranks than the fabric has NPUs. */
  topo_t *t2 = gen1(TOPO_DIM_RING, 2, false);
  a = pair_set();
  expect_error(t2, a, TN_PARSE, "rank 2: outside the topology", NULL);
  algo_free(a);
  topo_free(t2);
  topo_free(t);
}

static void sim_rejects_disconnected_fabric(void **state) {
  (void)state;
  topo_link_t l[2] = {{0, 1, 50.0, 500000, 0}, {1, 0, 50.0, 500000, 0}};
  topo_t *t = explicit_topo(3, 0, l, 2);
  algo_t *a = pair_set();
  TU_OK(algo_add_send(a, 0, 1, 0, 64, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 64, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_error(t, a, TN_INFEASIBLE, "disconnected", "NPU 0 cannot reach NPU 2");
  algo_free(a);
  topo_free(t);
}

static void sim_two_runs_are_identical(void **state) {
  (void)state;
  topo_dim_t d[2] = {{TOPO_DIM_LINE, 4, 50.0, 500.0, false},
                     {TOPO_DIM_LINE, 4, 25.0, 300.0, false}};
  topo_t *t = NULL;
  TU_OK(topo_gen("mesh", d, 2, &t, &tu_err_));
  algo_t *a = direct_ag(16, 100000, false); /* multi-hop with contention on a mesh */
  sim_result_t x, y, z;
  run_ok(t, a, &x);
  run_ok(t, a, &y);
  assert_int_equal(x.time_ps, y.time_ps);
  assert_int_equal(x.events, y.events);
  assert_memory_equal(x.npu_finish_ps, y.npu_finish_ps, 16 * sizeof(uint64_t));
  assert_memory_equal(x.links, y.links, t->nlinks * sizeof(sim_link_use_t));
  /* The same with the checks and the graph built rank by rank on three workers. */
  sim_opts_t so = {.threads = 3};
  TU_OK(sim_run(t, a, &so, &z, &tu_err_));
  assert_int_equal(x.time_ps, z.time_ps);
  assert_int_equal(x.events, z.events);
  assert_memory_equal(x.npu_finish_ps, z.npu_finish_ps, 16 * sizeof(uint64_t));
  assert_memory_equal(x.links, z.links, t->nlinks * sizeof(sim_link_use_t));
  sim_result_free(&z);
  for (uint32_t i = 1; i < x.nlinks; i++)
    assert_true(
        x.links[i - 1].busy_ps > x.links[i].busy_ps ||
        (x.links[i - 1].busy_ps == x.links[i].busy_ps && x.links[i - 1].link < x.links[i].link));
  /* Every link exactly once, and more than one busy time (the sort had work to do). */
  uint8_t seen[64] = {0};
  assert_true(x.nlinks <= 64);
  for (uint32_t i = 0; i < x.nlinks; i++) {
    assert_true(x.links[i].link < x.nlinks && !seen[x.links[i].link]);
    seen[x.links[i].link] = 1;
  }
  assert_true(x.links[0].busy_ps > x.links[x.nlinks - 1].busy_ps);
  assert_true(x.time_ps > 500000u + tu_xfer_ps(100000, 50.0));
  sim_result_free(&x);
  sim_result_free(&y);
  algo_free(a);
  topo_free(t);
}

static void sim_writes_chrome_trace(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_sim_trace");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  topo_t *t = gen1(TOPO_DIM_SWITCH, 4, false);
  algo_t *a = direct_ag(4, 1000, false);
  sim_opts_t o = {.trace_path = path};
  sim_result_t res;
  tn_err_clear(&tu_err_);
  TU_OK(sim_run(t, a, &o, &res, &tu_err_));
  char *text = NULL;
  size_t len = 0;
  TU_OK(tn_read_file(path, 1u << 24, &text, &len, &tu_err_));
  cJSON *j = cJSON_Parse(text);
  assert_non_null(j);
  cJSON *evs = cJSON_GetObjectItem(j, "traceEvents");
  assert_true(cJSON_IsArray(evs));
  int xs = 0, begins = 0, ends = 0;
  cJSON *ev;
  cJSON_ArrayForEach(ev, evs) {
    const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "ph"));
    assert_non_null(ph);
    if (strcmp(ph, "X") == 0) {
      xs++;
      assert_int_equal(cJSON_GetObjectItem(ev, "pid")->valueint, 0);
    }
    begins += strcmp(ph, "b") == 0;
    ends += strcmp(ph, "e") == 0;
  }
  assert_int_equal(xs, 12 * 2); /* 12 messages, 2 hops each through the switch */
  assert_int_equal(begins, 24);
  assert_int_equal(ends, 24);
  cJSON_Delete(j);
  free(text);
  sim_result_free(&res);
  /* A failing run leaves no trace file behind. */
  remove(path);
  TU_OK(algo_add_send(a, 0, 1, 9, 5, NULL, 0, NULL, 0, NULL, &tu_err_));
  tn_err_t err = {0};
  assert_int_equal(sim_run(t, a, &o, &res, &err), TN_PARSE);
  FILE *f = fopen(path, "r");
  assert_null(f);
  algo_free(a);
  topo_free(t);
}

/* A set whose time depends on the order of same-instant events: rank 0 sends a big and a
 * small message to rank 1 at once on a line 0-1-2; rank 1 forwards the small one to 2.
 * The id order puts the small one first, reverse the big one. */
static algo_t *order_open_set(void) {
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", 3, &a, &tu_err_));
  uint32_t got = 0;
  TU_OK(algo_add_send(a, 0, 1, 1, 1000, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 2, MIB, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 2, MIB, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 1, 1000, false, NULL, 0, NULL, 0, &got, &tu_err_));
  TU_OK(algo_add_send(a, 1, 2, 3, 1000, &got, 1, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 2, 1, 3, 1000, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  return a;
}

/* order_open_set with rank 0's two SENDs issued on a token from rank 1 instead of at the
 * start. */
static algo_t *order_open_after_token(void) {
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", 3, &a, &tu_err_));
  uint32_t tok = 0, got = 0;
  TU_OK(algo_add_send(a, 1, 0, 9, 1000, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 0, 1, 9, 1000, false, NULL, 0, NULL, 0, &tok, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 1, 1000, &tok, 1, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 2, MIB, &tok, 1, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 2, MIB, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 1, 1000, false, NULL, 0, NULL, 0, &got, &tu_err_));
  TU_OK(algo_add_send(a, 1, 2, 3, 1000, &got, 1, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 2, 1, 3, 1000, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  return a;
}

static uint64_t run_ties(const topo_t *t, const algo_t *a, sim_ties_t ties, uint64_t seed) {
  sim_opts_t o = {.ties = ties, .seed = seed};
  sim_result_t res = {0};
  tn_err_clear(&tu_err_);
  TU_OK(sim_run(t, a, &o, &res, &tu_err_));
  uint64_t time = res.time_ps;
  sim_result_free(&res);
  return time;
}

static void sim_ties_change_an_open_order_and_strict_sets_resist(void **state) {
  (void)state;
  sim_ties_t ties = SIM_TIES_ID;
  assert_true(sim_ties_parse("reverse", &ties) && ties == SIM_TIES_REVERSE);
  assert_true(sim_ties_parse("random", &ties) && ties == SIM_TIES_RANDOM);
  assert_false(sim_ties_parse("fifo", &ties));
  topo_t *t = gen1(TOPO_DIM_LINE, 3, false);
  algo_t *a = order_open_set();
  uint64_t id = run_ties(t, a, SIM_TIES_ID, 0), rev = run_ties(t, a, SIM_TIES_REVERSE, 0);
  assert_true(rev > id); /* the small message waits behind the big one */
  sim_spread_t sp;
  TU_OK(sim_order_spread(t, a, 4, &sp, &tu_err_));
  assert_int_equal(sp.id_ps, id);
  assert_int_equal(sp.max_ps, rev);
  assert_int_equal(sp.orders, 6);
  sim_strict_report_t rep;
  TU_OK(sim_make_strict(t, &a, &rep, &tu_err_));
  assert_int_equal(rep.ties_left, 0);
  assert_int_equal(rep.staggers, 1); /* the second SEND gated: the first keeps its time */
  assert_int_equal(rep.time_ps, id); /* the planned order, at no cost: the second queues */
  TU_OK(sim_order_spread(t, a, 4, &sp, &tu_err_));
  assert_int_equal(sp.min_ps, sp.max_ps);
  assert_int_equal(sp.id_ps, rep.time_ps);
  algo_verify_report_t vr;
  TU_OK(algo_verify(a, t, &vr, &tu_err_));
  /* Dropping the gates gives back the original nodes and order. */
  algo_t *g = NULL, *o = order_open_set();
  TU_OK(algo_drop_gates(a, &g, &tu_err_));
  assert_true(algo_equal(g, o));
  algo_free(g);
  algo_free(o);
  algo_free(a);
  topo_free(t);
}

/* Of two SENDs of one NPU that tie on its link, the first keeps its time and only the
 * second is gated, also when the first is issued on a dependency. */
static void sim_strict_gates_only_the_second_of_an_ordered_pair(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_LINE, 3, false);
  algo_t *a = order_open_after_token();
  uint64_t id = run_ties(t, a, SIM_TIES_ID, 0), rev = run_ties(t, a, SIM_TIES_REVERSE, 0);
  assert_true(rev > id);
  sim_strict_report_t rep;
  TU_OK(sim_make_strict(t, &a, &rep, &tu_err_));
  assert_int_equal(rep.ties_left, 0);
  assert_int_equal(rep.staggers, 1); /* the second SEND's gate */
  assert_int_equal(rep.time_ps, id); /* the planned order at no cost: the second queues */
  sim_spread_t sp;
  TU_OK(sim_order_spread(t, a, 4, &sp, &tu_err_));
  assert_int_equal(sp.min_ps, sp.max_ps);
  assert_int_equal(sp.id_ps, id);
  algo_free(a);
  topo_free(t);
}

/* A SEND at the start whose message takes under 1 ns (16 B at 50 GB/s: ASTRA-sim aborts
 * on it) gets a gate of 1 ns although it ties with nothing; one of 1000 B keeps its time. */
static void sim_strict_gates_a_sub_ns_send_at_the_start(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_LINE, 2, false);
  static const uint64_t bytes[] = {16, 1000};
  for (size_t k = 0; k < 2; k++) {
    algo_t *a = NULL;
    TU_OK(algo_create_unknown("chakra", 2, &a, &tu_err_));
    TU_OK(algo_add_send(a, 0, 1, 1, bytes[k], NULL, 0, NULL, 0, NULL, &tu_err_));
    TU_OK(algo_add_recv(a, 1, 0, 1, bytes[k], false, NULL, 0, NULL, 0, NULL, &tu_err_));
    uint64_t id = run_ties(t, a, SIM_TIES_ID, 0);
    sim_strict_report_t rep;
    TU_OK(sim_make_strict(t, &a, &rep, &tu_err_));
    assert_int_equal(rep.ties_left, 0);
    assert_int_equal(rep.staggers, k == 0 ? 1 : 0);
    assert_int_equal(rep.time_ps, k == 0 ? id + 1000 : id);
    assert_int_equal(algo_rank_len(a, 0), k == 0 ? 2 : 1); /* the SEND and its gate */
    algo_free(a);
  }
  topo_free(t);
}

/* 79 NPUs send to NPU 0 at once through one switch: their messages reach the switch's
 * port to NPU 0 at one instant, and one round parts them as a chain, 1 ns apart, up to
 * 77 ns: past the 64 ns a SEND could collect before, which left ties after every run. */
static void sim_strict_parts_a_pile_of_79_at_one_switch_port(void **state) {
  (void)state;
  enum { N = 80 };
  topo_t *t = gen1(TOPO_DIM_SWITCH, N, false);
  algo_t *a = NULL;
  TU_OK(algo_create_unknown("chakra", N, &a, &tu_err_));
  for (uint32_t r = 1; r < N; r++) {
    TU_OK(algo_add_send(a, r, 0, (int32_t)r, 4096, NULL, 0, NULL, 0, NULL, &tu_err_));
    TU_OK(algo_add_recv(a, 0, r, (int32_t)r, 4096, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  }
  sim_strict_report_t rep;
  TU_OK(sim_make_strict(t, &a, &rep, &tu_err_));
  assert_int_equal(rep.ties_left, 0);
  sim_spread_t sp;
  TU_OK(sim_order_spread(t, a, 4, &sp, &tu_err_));
  assert_int_equal(sp.min_ps, sp.max_ps);
  algo_free(a);
  topo_free(t);
}

/* The baselines on fabrics of every kind: the busiest link's time never passes the
 * simulated time, and is not vacuous (at least that link's transmission time). */
static void sim_link_bound_is_below_every_simulated_time(void **state) {
  (void)state;
  static const char *const f[][2] = {
      {"ring", "8"}, {"mesh", "4x3"}, {"torus", "4x4"}, {"switch", "6"}, {"hypercube", "8"}};
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE, TN_ALLTOALL};
  for (size_t i = 0; i < sizeof f / sizeof f[0] + 3; i++) {
    topo_t *t = NULL;
    if (i < sizeof f / sizeof f[0])
      TU_OK(topo_gen_kind(f[i][0], f[i][1], 50.0, 500.0, &t, &tu_err_));
    else
      t = tu_random_fabric(5 + (uint32_t)i, 100 + i, i % 2 == 0);
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
      for (uint32_t k = 1; k <= 4; k += 3) {
        algo_t *a = NULL;
        uint64_t size = (uint64_t)t->npus * 8 * 4096;
        if (colls[c] == TN_ALLTOALL)
          TU_OK(algo_direct(colls[c], t->npus, size, k, &a, &tu_err_));
        else
          TU_OK(algo_ring_both(colls[c], t->npus, size, k, false, &a, &tu_err_));
        sim_result_t res = {0};
        uint64_t time = run_ok(t, a, &res), bound = 0;
        TU_OK(sim_link_bound_ps(t, a, &bound, &tu_err_));
        if (bound > time || bound == 0)
          fail_msg("%s %s k=%u: bound %llu ps, simulated %llu ps", t->name, tn_coll_name(colls[c]),
                   k, (unsigned long long)bound, (unsigned long long)time);
        sim_result_free(&res);
        algo_free(a);
      }
    topo_free(t);
  }
}

/* A run told to stop after time T stops at its first later event, reporting that time;
 * told to stop after its own time, it runs to the end with the same figures. */
static void sim_stops_after_the_time_it_is_given(void **state) {
  (void)state;
  topo_t *t = gen1(TOPO_DIM_RING, 8, false);
  algo_t *a = NULL;
  TU_OK(algo_ring_both(TN_ALLGATHER, 8, 8 * MIB, 2, true, &a, &tu_err_));
  sim_result_t full = {0}, cut = {0}, same = {0};
  uint64_t time = run_ok(t, a, &full);
  sim_opts_t o = {.stop_after_ps = time / 2};
  TU_OK(sim_run(t, a, &o, &cut, &tu_err_));
  assert_true(cut.stopped);
  assert_true(cut.time_ps > time / 2 && cut.time_ps <= time);
  o.stop_after_ps = time;
  TU_OK(sim_run(t, a, &o, &same, &tu_err_));
  assert_false(same.stopped);
  assert_int_equal(same.time_ps, time);
  assert_int_equal(same.events, full.events);
  sim_result_free(&full);
  sim_result_free(&cut);
  sim_result_free(&same);
  algo_free(a);
  topo_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sim_matches_astra_ring_allgather_4_8_16),
      cmocka_unit_test(sim_matches_astra_bidirectional_ring_allgather_4),
      cmocka_unit_test(sim_matches_astra_collectiveapi_ring_allreduce_8),
      cmocka_unit_test(sim_direct_allgather_on_fc_is_latency_plus_shard_time),
      cmocka_unit_test(sim_runs_foreign_set_with_arbitrary_tags),
      cmocka_unit_test(sim_ties_change_an_open_order_and_strict_sets_resist),
      cmocka_unit_test(sim_strict_gates_only_the_second_of_an_ordered_pair),
      cmocka_unit_test(sim_strict_parts_a_pile_of_79_at_one_switch_port),
      cmocka_unit_test(sim_strict_gates_a_sub_ns_send_at_the_start),
      cmocka_unit_test(sim_contention_on_one_link_is_k_transfers_plus_latency),
      cmocka_unit_test(sim_switch_hop_is_store_and_forward),
      cmocka_unit_test(sim_send_is_eager_and_late_recv_completes_at_once),
      cmocka_unit_test(sim_matches_same_key_fifo),
      cmocka_unit_test(sim_issues_ready_sends_in_ascending_id),
      cmocka_unit_test(sim_rejects_unmatched_send),
      cmocka_unit_test(sim_rejects_unmatched_recv_with_other_size),
      cmocka_unit_test(sim_rejects_dependency_on_missing_node),
      cmocka_unit_test(sim_rejects_dependency_cycle),
      cmocka_unit_test(sim_reports_deadlock),
      cmocka_unit_test(sim_rejects_peer_outside_topology),
      cmocka_unit_test(sim_rejects_disconnected_fabric),
      cmocka_unit_test(sim_two_runs_are_identical),
      cmocka_unit_test(sim_writes_chrome_trace),
      cmocka_unit_test(sim_link_bound_is_below_every_simulated_time),
      cmocka_unit_test(sim_stops_after_the_time_it_is_given),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
