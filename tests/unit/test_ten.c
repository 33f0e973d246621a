/* tests/unit/test_ten.c — the shared timing model: link FIFOs, latency pipelining,
 * store-and-forward, event order, schedules and chunk sizes. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "ten/ten.h"
#include "topo/topo.h"

static tn_err_t tu_err_;

typedef struct fixture {
  topo_t *t;
  topo_routes_t *r;
  ten_engine_t *e;
} fixture_t;

static void setup_kind(fixture_t *f, const char *kind, const char *dims) {
  TU_OK(topo_gen_kind(kind, dims, 50.0, 500.0, &f->t, &tu_err_));
  TU_OK(topo_routes_create(f->t, &f->r, &tu_err_));
  TU_OK(ten_engine_create(f->t, f->r, &f->e, &tu_err_));
}

static void teardown(fixture_t *f) {
  ten_engine_free(f->e);
  topo_routes_free(f->r);
  topo_free(f->t);
}

static void one_message_takes_latency_plus_size_over_bandwidth(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "ring", "4");
  TU_OK(ten_send(f.e, 0, 1, 1u << 20, 7, &tu_err_));
  ten_event_t ev;
  assert_true(ten_next(f.e, &ev));
  assert_int_equal(ev.kind, TEN_EV_DELIVER);
  assert_int_equal(ev.cookie, 7);
  /* 2^20 B at 50 * 2^30 B/s = 19531.25 ns, plus 500 ns. */
  assert_int_equal(ev.time_ps, 500000 + 19531250);
  assert_false(ten_next(f.e, &ev));
  teardown(&f);
}

static void messages_on_one_link_queue_fifo_and_pipeline_latency(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "ring", "4");
  for (uint64_t k = 0; k < 3; k++) TU_OK(ten_send(f.e, 0, 1, 1u << 20, k, &tu_err_));
  ten_event_t ev;
  for (uint64_t k = 0; k < 3; k++) {
    assert_true(ten_next(f.e, &ev));
    assert_int_equal(ev.cookie, k);
    assert_int_equal(ev.time_ps, 500000 + (k + 1) * 19531250);
  }
  const ten_link_stats_t *s = ten_link_stats(f.e, topo_find_link(f.t, 0, 1));
  assert_int_equal(s->messages, 3);
  assert_int_equal(s->busy_ps, 3 * 19531250);
  teardown(&f);
}

static void multi_hop_messages_store_and_forward(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "mesh", "4x4");
  /* 0 -> 15: 6 hops, each latency + m/B. */
  TU_OK(ten_send(f.e, 0, 15, 1024, 1, &tu_err_));
  ten_event_t ev;
  assert_true(ten_next(f.e, &ev));
  uint64_t hop = 500000 + tu_xfer_ps(1024, 50.0);
  assert_int_equal(ev.time_ps, 6 * hop);
  teardown(&f);
}

static void switch_hop_goes_through_the_switch(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "switch", "8");
  TU_OK(ten_send(f.e, 2, 5, 4096, 1, &tu_err_));
  TU_OK(ten_send(f.e, 3, 5, 4096, 2, &tu_err_));
  ten_event_t ev;
  uint64_t hop = 500000 + tu_xfer_ps(4096, 50.0);
  /* Both arrive at the switch together; the switch->5 link serialises them, lower
   * incoming link id first. */
  assert_true(ten_next(f.e, &ev));
  assert_int_equal(ev.cookie, 1);
  assert_int_equal(ev.time_ps, 2 * hop);
  assert_true(ten_next(f.e, &ev));
  assert_int_equal(ev.cookie, 2);
  assert_int_equal(ev.time_ps, 2 * hop + tu_xfer_ps(4096, 50.0));
  teardown(&f);
}

/* A time past 2^62 ps is an error naming the figure, never a capped or wrapped time: a
 * message too large for its link, a queue that grows past the limit, a timer. */
static void engine_refuses_times_past_2_to_the_62_ps(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "ring", "4");
  tn_err_t err = {0};
  /* 2^62 ps at 50 GB/s is about 2.5e17 bytes. */
  assert_int_equal(ten_send(f.e, 0, 1, 1ull << 58, 1, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "sending 288230376151711744 bytes over link"));
  assert_non_null(strstr(err.msg, "passes 2^62 ps"));
  teardown(&f);
  /* Each message fits, the second queued behind the first does not. */
  setup_kind(&f, "ring", "4");
  uint64_t m = 1ull << 57; /* 2.9e18 ps each */
  TU_OK(ten_send(f.e, 0, 1, m, 1, &tu_err_));
  tn_err_t err2 = {0};
  assert_int_equal(ten_send(f.e, 0, 1, m, 2, &err2), TN_INVAL);
  assert_non_null(strstr(err2.msg, "the arrival of 144115188075855872 bytes over link"));
  tn_err_t err3 = {0};
  assert_int_equal(ten_timer(f.e, TN_TIME_MAX_PS + 1, 3, &err3), TN_INVAL);
  assert_non_null(strstr(err3.msg, "a wait of 4611686018427387905 ps"));
  TU_OK(ten_timer(f.e, TN_TIME_MAX_PS, 4, &tu_err_));
  teardown(&f);
}

static void timers_fire_after_deliveries_of_the_same_instant(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "ring", "4");
  uint64_t t1 = 500000 + tu_xfer_ps(100, 50.0);
  TU_OK(ten_timer(f.e, t1, 99, &tu_err_));
  TU_OK(ten_send(f.e, 0, 1, 100, 1, &tu_err_));
  ten_event_t ev;
  assert_true(ten_next(f.e, &ev));
  assert_int_equal(ev.kind, TEN_EV_DELIVER);
  assert_true(ten_next(f.e, &ev));
  assert_int_equal(ev.kind, TEN_EV_TIMER);
  assert_int_equal(ev.cookie, 99);
  assert_int_equal(ten_now(f.e), t1);
  teardown(&f);
}

static void send_to_self_or_unreachable_is_refused(void **state) {
  (void)state;
  fixture_t f;
  setup_kind(&f, "ring", "4");
  tn_err_t err = {0};
  assert_int_equal(ten_send(f.e, 1, 1, 10, 0, &err), TN_INVAL);
  tn_err_clear(&err);
  assert_int_equal(ten_send(f.e, 0, 9, 10, 0, &err), TN_INVAL);
  teardown(&f);
  /* A one-way pair: 1 cannot reach 0. */
  topo_link_t l = {0, 1, 50.0, 0, 0};
  topo_t *t = NULL;
  TU_OK(topo_create("oneway", 2, 0, &l, 1, &t, &tu_err_));
  topo_routes_t *r = NULL;
  ten_engine_t *e = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  TU_OK(ten_engine_create(t, r, &e, &tu_err_));
  tn_err_clear(&err);
  assert_int_equal(ten_send(e, 1, 0, 10, 0, &err), TN_INFEASIBLE);
  assert_non_null(strstr(err.msg, "cannot reach"));
  ten_engine_free(e);
  topo_routes_free(r);
  topo_free(t);
}

static void chunk_bytes_split_evenly_and_sum_to_size(void **state) {
  (void)state;
  uint64_t sum = 0;
  for (uint32_t c = 0; c < 24; c++) {
    uint64_t b = ten_chunk_bytes(1000003, 8, 3, c);
    assert_true(b == 1000003 / 24 || b == 1000003 / 24 + 1);
    sum += b;
  }
  assert_int_equal(sum, 1000003);
}

static void schedule_keeps_chunks_deps_and_time(void **state) {
  (void)state;
  schedule_t s;
  schedule_init(&s, TN_ALLGATHER, 4, 1, 4096);
  uint32_t ch[2] = {0, 3}, dep = 0, idx = 0;
  sched_xfer_t x = {0, 1, 2048, 0, 100, 0, 2, 0, 0};
  TU_OK(schedule_add(&s, &x, ch, NULL, &idx, &tu_err_));
  assert_int_equal(idx, 0);
  sched_xfer_t y = {1, 2, 1024, 100, 250, 0, 1, 0, 1};
  TU_OK(schedule_add(&s, &y, ch + 1, &dep, &idx, &tu_err_));
  assert_int_equal(idx, 1);
  assert_int_equal(schedule_len(&s), 2);
  const sched_xfer_t *p = schedule_xfer(&s, 1);
  assert_int_equal(TN_VEC_AT(&s.chunks, uint32_t, p->chunk_off), 3);
  assert_int_equal(TN_VEC_AT(&s.deps, uint32_t, p->dep_off), 0);
  assert_int_equal(s.time_ps, 250);
  schedule_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(one_message_takes_latency_plus_size_over_bandwidth),
      cmocka_unit_test(messages_on_one_link_queue_fifo_and_pipeline_latency),
      cmocka_unit_test(multi_hop_messages_store_and_forward),
      cmocka_unit_test(switch_hop_goes_through_the_switch),
      cmocka_unit_test(timers_fire_after_deliveries_of_the_same_instant),
      cmocka_unit_test(engine_refuses_times_past_2_to_the_62_ps),
      cmocka_unit_test(send_to_self_or_unreachable_is_refused),
      cmocka_unit_test(chunk_bytes_split_evenly_and_sum_to_size),
      cmocka_unit_test(schedule_keeps_chunks_deps_and_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
