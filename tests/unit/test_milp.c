/* tests/unit/test_milp.c — the GLPK MILP: optimal on small fabrics where the bound is
 * known, never worse than a starting schedule, schedules valid and equal to the engine's
 * replay, clear errors on bad input, a deterministic stop on a work limit, any stop
 * returning a schedule, and no GLPK environment left on worker threads. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "greedy/greedy.h"
#include "milp/milp.h"
#include "sim/sim.h"
#include "ten/ten.h"
#include "topo/topo.h"

static tn_err_t tu_err_;

static topo_t *gen(const char *kind, const char *dims, double lat_ns) {
  topo_t *t = NULL;
  TU_OK(topo_gen_kind(kind, dims, 50.0, lat_ns, &t, &tu_err_));
  return t;
}

/* Checks s independently of milp/: every transfer carries one chunk its source owns or
 * got from its dependency (delivered to the source no later than the transfer starts);
 * every NPU receives every chunk; and injecting every transfer at its start time into a
 * fresh engine gives back the recorded delivery times, with links never carrying two
 * messages at once (the observer sees the FIFO intervals). Returns the last delivery. */
typedef struct busy {
  uint64_t *end; /* per link: end of the last transmission */
  bool overlap;
} busy_t;

static void on_xmit(void *ctx, uint32_t link, uint64_t start, uint64_t end, uint64_t bytes,
                    uint64_t cookie) {
  busy_t *b = ctx;
  (void)bytes, (void)cookie;
  if (start < b->end[link]) b->overlap = true;
  b->end[link] = end;
}

static uint64_t check_schedule(const topo_t *t, const schedule_t *s) {
  uint32_t n = s->npus, k = s->chunks_per_npu, nc = n * k;
  bool *has = calloc((size_t)nc * n, 1);
  assert_non_null(has);
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    assert_int_equal(x->nchunks, 1);
    uint32_t c = TN_VEC_AT(&s->chunks, uint32_t, x->chunk_off);
    assert_true(c < nc);
    assert_true(x->end_ps > x->start_ps);
    /* deps[0] brought c to src (none when src owns c); any other dependency (a gate) is
     * a delivery to src; all are delivered before the transfer starts */
    if (c / k != x->src) {
      assert_true(x->ndeps >= 1);
      const sched_xfer_t *d = schedule_xfer(s, TN_VEC_AT(&s->deps, uint32_t, x->dep_off));
      assert_int_equal(TN_VEC_AT(&s->chunks, uint32_t, d->chunk_off), c);
    }
    for (uint32_t j = 0; j < x->ndeps; j++) {
      const sched_xfer_t *d = schedule_xfer(s, TN_VEC_AT(&s->deps, uint32_t, x->dep_off + j));
      assert_int_equal(d->dst, x->src);
      assert_true(d->end_ps <= x->start_ps);
    }
    has[(size_t)c * n + x->dst] = true;
  }
  for (uint32_t c = 0; c < nc; c++)
    for (uint32_t v = 0; v < n; v++)
      if (v != c / k && !has[(size_t)c * n + v]) fail_msg("NPU %u never gets chunk %u", v, c);
  free(has);
  /* replay at the recorded issue times */
  topo_routes_t *r = NULL;
  ten_engine_t *e = NULL;
  busy_t b = {calloc(t->nlinks, sizeof(uint64_t)), false};
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  TU_OK(ten_engine_create(t, r, &e, &tu_err_));
  ten_engine_set_observer(e, on_xmit, &b);
  uint32_t next = 0, done = 0;
  uint64_t last = 0;
  while (done < schedule_len(s)) {
    uint64_t now = ten_peek_time(e);
    if (next < schedule_len(s) && schedule_xfer(s, next)->start_ps <= now) {
      /* all events before this issue time are drained: issue everything at it */
      uint64_t at = schedule_xfer(s, next)->start_ps;
      ten_event_t ev;
      while (ten_peek_time(e) == at && ten_next(e, &ev)) {
        assert_int_equal(ev.time_ps, schedule_xfer(s, (uint32_t)ev.cookie)->end_ps);
        done++;
      }
      while (next < schedule_len(s) && schedule_xfer(s, next)->start_ps == at) {
        const sched_xfer_t *x = schedule_xfer(s, next);
        TU_OK(ten_send(e, x->src, x->dst, x->bytes, next, &tu_err_));
        next++;
      }
      continue;
    }
    ten_event_t ev;
    assert_true(ten_next(e, &ev));
    assert_int_equal(ev.time_ps, schedule_xfer(s, (uint32_t)ev.cookie)->end_ps);
    if (ev.time_ps > last) last = ev.time_ps;
    done++;
  }
  assert_false(b.overlap);
  ten_engine_free(e);
  topo_routes_free(r);
  free(b.end);
  return s->time_ps;
}

/* The schedule lowers to an All-Gather
 * that verifies and simulates to exactly s->time_ps; without gates, Reduce-Scatter and
 * All-Reduce lower and verify too. */
static void check_pipeline(const topo_t *t, const schedule_t *s, bool gated) {
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (size_t i = 0; i < (gated ? 1u : 3u); i++) {
    algo_t *a = NULL;
    tn_err_t e = {0};
    tn_status_t st = algo_from_schedule(s, colls[i], "milp", &a, &e);
    if (st != TN_OK) fail_msg("lowering %s: %s", tn_coll_name(colls[i]), e.msg);
    algo_verify_report_t rep;
    st = algo_verify(a, t, &rep, &e);
    if (st != TN_OK) fail_msg("verify %s: %s", tn_coll_name(colls[i]), e.msg);
    if (colls[i] == TN_ALLGATHER) {
      sim_opts_t so = {0};
      sim_result_t res = {0};
      st = sim_run(t, a, &so, &res, &e);
      if (st != TN_OK) fail_msg("sim: %s", e.msg);
      assert_int_equal(res.time_ps, s->time_ps);
      sim_result_free(&res);
    }
    algo_free(a);
  }
}

/* The greedy's time on t. */
static uint64_t greedy_time(const topo_t *t, uint64_t size, uint32_t k) {
  greedy_opts_t g = {.seed = 1, .chunks_per_npu = k};
  schedule_t s;
  tn_err_t e = {0};
  tn_status_t st = greedy_run(t, size, &g, &s, &e);
  uint64_t time = s.time_ps;
  schedule_free(&s);
  if (st != TN_OK) fail_msg("greedy: %s", e.msg);
  return time;
}

static tn_status_t solve_g(const topo_t *t, uint64_t size, uint32_t k, double limit,
                           const schedule_t *warm, bool gates, schedule_t *s, milp_result_t *res) {
  milp_opts_t o;
  milp_opts_init(&o);
  o.gate_sends = gates;
  o.chunks_per_npu = k;
  o.time_limit_s = limit;
  o.warm = warm;
  memset(&tu_err_, 0, sizeof tu_err_);
  return milp_solve(t, size, &o, s, res, &tu_err_);
}

static tn_status_t solve(const topo_t *t, uint64_t size, uint32_t k, double limit,
                         const schedule_t *warm, schedule_t *s, milp_result_t *res) {
  return solve_g(t, size, k, limit, warm, true, s, res);
}

/* Solves, checks optimality at `steps` (0: just optimal), the schedule, and that the
 * engine replay equals the MILP's objective (exact discretisation: latency 0). */
static void expect_optimal(const char *kind, const char *dims, uint32_t k, uint32_t steps) {
  topo_t *t = gen(kind, dims, 0.0);
  schedule_t s;
  milp_result_t res;
  uint64_t size = (uint64_t)t->npus * k * 65536;
  TU_OK(solve_g(t, size, k, 20.0, NULL, true, &s, &res));
  if (res.status != MILP_OPTIMAL) fail_msg("%s-%s: %s", kind, dims, milp_status_name(res.status));
  if (steps) assert_int_equal(res.steps, steps);
  assert_true(res.steps <= res.horizon);
  assert_int_equal(res.bound_ps, res.objective_ps);
  assert_true(res.gap == 0.0);
  assert_int_equal(check_schedule(t, &s), res.objective_ps);
  assert_int_equal(s.time_ps, res.objective_ps);
  uint64_t g = greedy_time(t, size, k);
  assert_true(s.time_ps <= g);
  check_pipeline(t, &s, res.gated);
  schedule_free(&s);
  topo_free(t);
}

/* Bidirectional ring: ceil((n-1)/2) steps. */
static void milp_ring4_reaches_bidirectional_bound(void **st) {
  (void)st;
  expect_optimal("ring", "4", 1, 2);
}
static void milp_ring8_reaches_bidirectional_bound(void **st) {
  (void)st;
  expect_optimal("ring", "8", 1, 4);
}
/* Fully connected: every chunk in one step (k chunks: k steps). */
static void milp_fc4_takes_one_step_per_chunk(void **st) {
  (void)st;
  expect_optimal("fc", "4", 1, 1);
  expect_optimal("fc", "4", 2, 2);
}
static void milp_mesh_2x2_and_2x4_are_optimal(void **st) {
  (void)st;
  expect_optimal("mesh", "2x2", 1, 2);
  expect_optimal("mesh", "2x4", 1, 0);
}
/* Switch: one down-link per NPU, 3 chunks, first arrival after 2 steps: 4 steps. */
static void milp_switch4_routes_through_the_switch(void **st) {
  (void)st;
  expect_optimal("switch", "4", 1, 4);
}

/* A unidirectional-ring schedule as warm start: n-1 steps, valid on the ring. */
static void ring_schedule(const topo_t *t, uint64_t size, schedule_t *s) {
  uint32_t n = t->npus;
  uint64_t bytes = size / n, busy = tu_xfer_ps(bytes, 50.0);
  schedule_init(s, TN_ALLGATHER, n, 1, size);
  for (uint32_t step = 0; step + 1 < n; step++)
    for (uint32_t r = 0; r < n; r++) {
      uint32_t c = (r + n - step) % n, dep = (step - 1) * n + (r + n - 1) % n;
      sched_xfer_t x = {r, (r + 1) % n, bytes, step * busy,   (step + 1) * busy,
                        0, 1,           0,     step ? 1u : 0u};
      TU_OK(schedule_add(s, &x, &c, &dep, NULL, &tu_err_));
    }
}

static void milp_is_never_worse_than_its_warm_start(void **st) {
  (void)st;
  topo_t *t = gen("ring", "6", 0.0);
  schedule_t w, s;
  milp_result_t res;
  uint64_t size = 6 * 65536;
  ring_schedule(t, size, &w);
  assert_int_equal(check_schedule(t, &w), w.time_ps);
  TU_OK(solve(t, size, 1, 20.0, &w, &s, &res));
  assert_int_equal(res.status, MILP_OPTIMAL);
  assert_true(s.time_ps <= w.time_ps);
  assert_int_equal(res.steps, 3);
  schedule_free(&w);
  schedule_free(&s);
  topo_free(t);
}

static void milp_with_latency_replays_no_slower_than_its_objective(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 500.0);
  schedule_t s;
  milp_result_t res;
  TU_OK(solve(t, 4 * 65536, 1, 20.0, NULL, &s, &res));
  assert_int_equal(res.status, MILP_OPTIMAL);
  assert_int_equal(check_schedule(t, &s), s.time_ps);
  assert_true(s.time_ps <= res.objective_ps);
  uint64_t g = greedy_time(t, 4 * 65536, 1);
  assert_true(s.time_ps <= g);
  check_pipeline(t, &s, res.gated);
  schedule_free(&s);
  topo_free(t);
}

static void milp_handles_heterogeneous_links(void **st) {
  (void)st;
  /* a 4-ring with one fast chord pair and one slow ring link */
  topo_link_t l[] = {{0, 1, 100, 0, 0}, {1, 0, 100, 0, 0}, {1, 2, 50, 0, 0}, {2, 1, 50, 0, 0},
                     {2, 3, 25, 0, 0},  {3, 2, 25, 0, 0},  {3, 0, 50, 0, 0}, {0, 3, 50, 0, 0},
                     {0, 2, 100, 0, 0}, {2, 0, 100, 0, 0}};
  topo_t *t = NULL;
  TU_OK(topo_create("hetero-4", 4, 0, l, 10, &t, &tu_err_));
  schedule_t s;
  milp_result_t res;
  TU_OK(solve(t, 4 * 2 * 65536, 2, 20.0, NULL, &s, &res));
  assert_true(res.status == MILP_OPTIMAL || res.status == MILP_FEASIBLE);
  assert_int_equal(check_schedule(t, &s), s.time_ps);
  assert_true(s.time_ps <= res.objective_ps);
  assert_true(res.steps <= res.horizon);
  check_pipeline(t, &s, res.gated);
  schedule_free(&s);
  topo_free(t);
}

/* The greedy's plan as warm start (as the CLI passes it): never worse than it. */
static void milp_takes_the_greedy_as_warm_start(void **st) {
  (void)st;
  const char *fabrics[][2] = {{"torus", "4x4"}, {"mesh", "2x4"}, {"switch", "4"}};
  for (uint32_t i = 0; i < 3; i++) {
    topo_t *t = gen(fabrics[i][0], fabrics[i][1], 500.0);
    uint32_t k = i == 1 ? 1 : 2; /* mesh-2x4 has no symmetry: keep its model small */
    uint64_t size = (uint64_t)t->npus * k * 65536;
    greedy_opts_t go = {.seed = 1, .chunks_per_npu = k};
    schedule_t g, s;
    tn_err_t e = {0};
    tn_status_t rc = greedy_run(t, size, &go, &g, &e);
    TU_OK(rc);
    milp_result_t res;
    TU_OK(solve(t, size, k, 10.0, &g, &s, &res));
    assert_true(s.time_ps <= g.time_ps);
    assert_int_equal(check_schedule(t, &s), s.time_ps);
    check_pipeline(t, &s, res.gated);
    schedule_free(&g);
    schedule_free(&s);
    topo_free(t);
  }
}

/* True when every link's chunk time and latency are whole steps (the model is exact). */
static bool exact_steps(const topo_t *t, uint64_t size, uint32_t k, uint64_t step) {
  for (uint32_t i = 0; i < t->nlinks; i++) {
    uint64_t busy = tu_xfer_ps(ten_chunk_bytes(size, t->npus, k, 0), t->links[i].bandwidth_GBps);
    if (busy % step != 0 || t->links[i].latency_ps % step != 0) return false;
  }
  return true;
}

/* Property over random small fabrics (a ring for connectivity plus random chords, random
 * bandwidths and latencies): the schedule is valid, replays no slower than the MILP's
 * objective, and lowers, verifies and simulates; without gates every collective lowers. */
static void milp_schedules_random_fabrics_validly(void **st) {
  (void)st;
  tn_rng_t rng;
  tn_rng_seed(&rng, 6);
  for (int round = 0; round < 6; round++) {
    uint32_t n = 4 + (uint32_t)tn_rng_below(&rng, 3), nl = 0;
    topo_link_t l[64];
    for (uint32_t a = 0; a < n; a++)
      for (uint32_t b = 0; b < n; b++) {
        bool ring = b == (a + 1) % n || a == (b + 1) % n;
        if (a == b || (!ring && tn_rng_below(&rng, 4) != 0)) continue;
        double bw = 25.0 * (double)(1 + tn_rng_below(&rng, 4));
        l[nl++] = (topo_link_t){a, b, bw, 100000 * tn_rng_below(&rng, 6), 0};
      }
    topo_t *t = NULL;
    TU_OK(topo_create("random", n, 0, l, nl, &t, &tu_err_));
    uint32_t k = 1 + (uint32_t)tn_rng_below(&rng, 2);
    uint64_t size = (uint64_t)n * k * 65536;
    schedule_t s;
    milp_result_t res;
    TU_OK(solve(t, size, k, 3.0, NULL, &s, &res));
    assert_true(res.status == MILP_OPTIMAL || res.status == MILP_FEASIBLE);
    assert_int_equal(check_schedule(t, &s), s.time_ps);
    assert_true(s.time_ps <= res.objective_ps);
    assert_true(res.bound_ps <= res.objective_ps);
    /* MILP <= greedy is a promise of the discrete model: checked where it is exact
     * (bench_milp shows the real-time ratios on the yardstick fabrics) */
    uint64_t g = greedy_time(t, size, k);
    if (res.status == MILP_OPTIMAL && exact_steps(t, size, k, res.step_ps))
      assert_true(s.time_ps <= g);
    check_pipeline(t, &s, res.gated);
    schedule_free(&s);
    /* without gates: one dependency per transfer, and every collective lowers */
    TU_OK(solve_g(t, size, k, 10.0, NULL, false, &s, &res));
    assert_false(res.gated);
    for (uint32_t i = 0; i < schedule_len(&s); i++)
      assert_true(schedule_xfer(&s, i)->ndeps <= 1);
    assert_int_equal(check_schedule(t, &s), s.time_ps);
    check_pipeline(t, &s, false);
    schedule_free(&s);
    topo_free(t);
  }
}

static void milp_rejects_zero_chunks(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 0.0);
  schedule_t s;
  milp_result_t res;
  assert_int_equal(solve(t, 4096, 0, 5.0, NULL, &s, &res), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "chunks per NPU"));
  schedule_free(&s);
  topo_free(t);
}

static void milp_rejects_fabric_above_the_cap(void **st) {
  (void)st;
  topo_t *t = gen("ring", "100", 0.0);
  schedule_t s;
  milp_result_t res;
  assert_int_equal(solve(t, 1 << 20, 1, 5.0, NULL, &s, &res), TN_LIMIT);
  assert_non_null(strstr(tu_err_.msg, "100 NPUs"));
  assert_non_null(strstr(tu_err_.msg, "cap"));
  schedule_free(&s);
  topo_free(t);
}

/* A latency of 2^32 + 21 steps of one chunk's time must be refused, not wrap to 21 steps
 * and be "solved" (a 4-byte All-Gather on a 4-ring: one step is 19 ps). */
static void milp_rejects_a_latency_past_the_step_cap_without_wrapping(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 81604379.0);
  schedule_t s;
  milp_result_t res;
  assert_int_equal(solve(t, 4, 1, 5.0, NULL, &s, &res), TN_LIMIT);
  assert_non_null(strstr(tu_err_.msg, "time steps of"));
  assert_non_null(strstr(tu_err_.msg, "larger size"));
  schedule_free(&s);
  topo_free(t);
}

static void milp_rejects_links_too_different_in_speed(void **st) {
  (void)st;
  topo_link_t l[] = {{0, 1, 1000, 0, 0}, {1, 0, 1000, 0, 0}, {1, 2, 0.1, 0, 0}, {2, 1, 0.1, 0, 0}};
  topo_t *t = NULL;
  TU_OK(topo_create("skewed-3", 3, 0, l, 4, &t, &tu_err_));
  schedule_t s;
  milp_result_t res;
  assert_int_equal(solve(t, 3 * 65536, 1, 5.0, NULL, &s, &res), TN_LIMIT);
  assert_non_null(strstr(tu_err_.msg, "1 -> 2"));
  schedule_free(&s);
  topo_free(t);
}

static void milp_rejects_bad_size_time_limit_and_warm_start(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 0.0);
  schedule_t s, w;
  milp_result_t res;
  assert_int_equal(solve(t, 3, 1, 5.0, NULL, &s, &res), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "size 3 B"));
  schedule_free(&s);
  assert_int_equal(solve(t, 4096, 1, 0.0, NULL, &s, &res), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "time limit"));
  schedule_free(&s);
  schedule_init(&w, TN_ALLGATHER, 4, 2, 4096);
  assert_int_equal(solve(t, 4096, 1, 5.0, &w, &s, &res), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "warm start"));
  schedule_free(&s);
  schedule_free(&w);
  topo_free(t);
}

static void milp_writes_glpk_output_to_its_log(void **st) {
  (void)st;
  const char *dir = tu_tmpdir("test_milp_log");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/glpk.log", dir);
  topo_t *t = gen("mesh", "2x2", 0.0);
  milp_opts_t o;
  milp_opts_init(&o);
  o.log_path = path;
  schedule_t s;
  milp_result_t res;
  TU_OK(milp_solve(t, 4 * 65536, &o, &s, &res, &tu_err_));
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[256];
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  schedule_free(&s);
  topo_free(t);
}

static void milp_rejects_an_unwritable_log(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 0.0);
  milp_opts_t o;
  milp_opts_init(&o);
  o.log_path = "/nonexistent-dir/glpk.log";
  schedule_t s;
  milp_result_t res;
  memset(&tu_err_, 0, sizeof tu_err_);
  assert_int_equal(milp_solve(t, 4096, &o, &s, &res, &tu_err_), TN_IO);
  assert_non_null(strstr(tu_err_.msg, "/nonexistent-dir/glpk.log"));
  schedule_free(&s);
  topo_free(t);
}

/* Any stop returns a schedule: a wall-clock limit far too short for the search. */
static void milp_time_limit_returns_the_best_schedule_known(void **st) {
  (void)st;
  topo_t *t = gen("torus", "4x4", 0.0);
  schedule_t s;
  milp_result_t res;
  TU_OK(solve(t, 16 * 2 * 65536, 2, 0.05, NULL, &s, &res));
  assert_true(res.status == MILP_FEASIBLE || res.status == MILP_OPTIMAL);
  assert_int_equal(check_schedule(t, &s), s.time_ps);
  schedule_free(&s);
  topo_free(t);
}

/* Copies the transfers of s (src, dst, bytes, start, end) for a byte comparison. */
static sched_xfer_t *xfers_of(const schedule_t *s) {
  sched_xfer_t *x = calloc(schedule_len(s) + 1, sizeof *x);
  assert_non_null(x);
  for (uint32_t i = 0; i < schedule_len(s); i++)
    x[i] = *schedule_xfer(s, i);
  return x;
}

/* The stop is a count of GLPK's work, not the clock: a solve cut short by its iteration
 * limit says so, gives the same schedule every time (a generous time limit never comes
 * into play), and its gap is positive. mesh-2x4 with 2 chunks needs thousands of
 * iterations; 100 stop it in milliseconds. */
static void milp_stops_on_its_work_limit_with_identical_answers(void **st) {
  (void)st;
  topo_t *t = gen("mesh", "2x4", 500.0);
  uint64_t size = 8 * 2 * 65536;
  milp_opts_t o;
  milp_opts_init(&o);
  o.chunks_per_npu = 2;
  o.iter_limit = 100;
  o.time_limit_s = 1000.0;
  o.gate_sends = true;
  schedule_t s[3];
  milp_result_t res[3];
  for (int i = 0; i < 3; i++) {
    memset(&tu_err_, 0, sizeof tu_err_);
    TU_OK(milp_solve(t, size, &o, &s[i], &res[i], &tu_err_));
    assert_int_equal(res[i].status, MILP_FEASIBLE);
    assert_int_equal(res[i].stop, MILP_STOP_ITERS);
    assert_string_equal(milp_stop_name(res[i].stop), "iteration limit");
    assert_true(res[i].gap > 0.0);
    assert_true(res[i].iters >= 100);
  }
  for (int i = 1; i < 3; i++) {
    assert_int_equal(schedule_len(&s[i]), schedule_len(&s[0]));
    assert_int_equal(s[i].time_ps, s[0].time_ps);
    sched_xfer_t *a = xfers_of(&s[0]), *b = xfers_of(&s[i]);
    assert_memory_equal(a, b, schedule_len(&s[0]) * sizeof *a);
    free(a);
    free(b);
  }
  for (int i = 0; i < 3; i++)
    schedule_free(&s[i]);
  /* a node limit stops it too, as deterministically */
  o.iter_limit = 0;
  o.node_limit = 1;
  TU_OK(milp_solve(t, size, &o, &s[0], &res[0], &tu_err_));
  assert_true(res[0].stop == MILP_STOP_NODES || res[0].stop == MILP_STOP_PROVEN);
  assert_true(res[0].nodes <= 2);
  schedule_free(&s[0]);
  topo_free(t);
}

/* A warm-started solve that GLPK cannot even start (one simplex iteration) returns its
 * starting plan (the warm start re-timed, or the MILP's own list schedule when shorter)
 * as a feasible answer with its gap, never "no integer solution". */
static void milp_stopped_before_any_solution_returns_the_warm_start(void **st) {
  (void)st;
  topo_t *t = gen("mesh", "2x4", 500.0);
  uint64_t size = 8 * 2 * 65536;
  greedy_opts_t go = {.seed = 1, .chunks_per_npu = 2};
  schedule_t g, s;
  tn_err_t e = {0};
  TU_OK(greedy_run(t, size, &go, &g, &e));
  milp_opts_t o;
  milp_opts_init(&o);
  o.chunks_per_npu = 2;
  o.iter_limit = 1;
  o.warm = &g;
  o.gate_sends = true;
  milp_result_t res;
  memset(&tu_err_, 0, sizeof tu_err_);
  TU_OK(milp_solve(t, size, &o, &s, &res, &tu_err_));
  assert_int_equal(res.status, MILP_FEASIBLE);
  assert_int_equal(res.stop, MILP_STOP_ITERS);
  assert_true(res.incumbent_is_start);
  assert_int_equal(res.steps, res.horizon);
  assert_int_equal(res.objective_ps, res.start_ps);
  assert_true(res.gap > 0.0);
  assert_int_equal(check_schedule(t, &s), s.time_ps);
  schedule_free(&g);
  schedule_free(&s);
  topo_free(t);
}

static void milp_rejects_an_iteration_limit_past_int_max(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 0.0);
  milp_opts_t o;
  milp_opts_init(&o);
  o.iter_limit = (uint64_t)1 << 40;
  schedule_t s;
  milp_result_t res;
  memset(&tu_err_, 0, sizeof tu_err_);
  assert_int_equal(milp_solve(t, 4096, &o, &s, &res, &tu_err_), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "iteration limit"));
  schedule_free(&s);
  o.iter_limit = 0;
  o.node_limit = 0;
  memset(&tu_err_, 0, sizeof tu_err_);
  assert_int_equal(milp_solve(t, 4096, &o, &s, &res, &tu_err_), TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "node limit"));
  schedule_free(&s);
  topo_free(t);
}

/* GLPK keeps an environment per thread: a worker thread that solved must leave none
 * behind (LeakSanitizer, in the ASan build, reports it at exit otherwise). */
static void *solve_on_thread(void *arg) {
  const topo_t *t = arg;
  milp_opts_t o;
  milp_opts_init(&o);
  schedule_t s;
  milp_result_t res;
  tn_err_t e = {0};
  tn_status_t rc = milp_solve(t, 4 * 65536, &o, &s, &res, &e);
  schedule_free(&s);
  return rc == TN_OK ? arg : NULL;
}

static void milp_on_worker_threads_leaves_no_glpk_environment(void **st) {
  (void)st;
  topo_t *t = gen("ring", "4", 500.0);
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, solve_on_thread, t), 0);
  for (int i = 0; i < 2; i++) {
    void *ok = NULL;
    assert_int_equal(pthread_join(th[i], &ok), 0);
    assert_ptr_equal(ok, t);
  }
  topo_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(milp_ring4_reaches_bidirectional_bound),
      cmocka_unit_test(milp_ring8_reaches_bidirectional_bound),
      cmocka_unit_test(milp_fc4_takes_one_step_per_chunk),
      cmocka_unit_test(milp_mesh_2x2_and_2x4_are_optimal),
      cmocka_unit_test(milp_switch4_routes_through_the_switch),
      cmocka_unit_test(milp_is_never_worse_than_its_warm_start),
      cmocka_unit_test(milp_with_latency_replays_no_slower_than_its_objective),
      cmocka_unit_test(milp_handles_heterogeneous_links),
      cmocka_unit_test(milp_takes_the_greedy_as_warm_start),
      cmocka_unit_test(milp_schedules_random_fabrics_validly),
      cmocka_unit_test(milp_rejects_zero_chunks),
      cmocka_unit_test(milp_rejects_fabric_above_the_cap),
      cmocka_unit_test(milp_rejects_a_latency_past_the_step_cap_without_wrapping),
      cmocka_unit_test(milp_rejects_links_too_different_in_speed),
      cmocka_unit_test(milp_rejects_bad_size_time_limit_and_warm_start),
      cmocka_unit_test(milp_writes_glpk_output_to_its_log),
      cmocka_unit_test(milp_rejects_an_unwritable_log),
      cmocka_unit_test(milp_time_limit_returns_the_best_schedule_known),
      cmocka_unit_test(milp_stops_on_its_work_limit_with_identical_answers),
      cmocka_unit_test(milp_stopped_before_any_solution_returns_the_warm_start),
      cmocka_unit_test(milp_rejects_an_iteration_limit_past_int_max),
      cmocka_unit_test(milp_on_worker_threads_leaves_no_glpk_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
