/* tests/unit/test_forest.c — the broadcast-tree packing (forest/): on random and shipped
 * switch fabrics every All-Gather plan verifies and its predicted time is the simulated
 * one, the derived Reduce-Scatter and All-Reduce verify, nothing beats the bound, runs are
 * identical, and on a spine with shared uplinks it is near the bound where the greedy is
 * not. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "forest/forest.h"
#include "lp/lp.h"
#include "greedy/greedy.h"
#include "sim/sim.h"
#include "synth/synth.h"

static void must(tn_status_t st, const tn_err_t *err) {
  if (st != TN_OK) fail_msg("%s: %s", tn_status_str(st), err->msg);
}

static uint64_t simulate(const topo_t *t, const algo_t *a) {
  tn_err_t err = {0};
  sim_result_t res = {0};
  must(sim_run(t, a, NULL, &res, &err), &err);
  uint64_t time = res.time_ps;
  sim_result_free(&res);
  return time;
}

static void verify(const topo_t *t, const algo_t *a) {
  tn_err_t err = {0};
  algo_verify_report_t rep;
  if (algo_verify(a, t, &rep, &err) != TN_OK)
    fail_msg("%s %s: %s", t->name, tn_coll_name(a->coll), err.msg);
  assert_true(rep.semantics_checked);
}

/* a (coll of size on t) verifies, simulates in predicted_ps and is not faster than the
 * bound (a simulated time may undercut the exact figure by half a ps per message). */
static void check_made(const topo_t *t, const algo_t *a, tn_coll_t coll, uint64_t size,
                       uint64_t predicted_ps) {
  verify(t, a);
  uint64_t sim = simulate(t, a);
  if (sim != predicted_ps)
    fail_msg("%s %s: predicted %llu ps, simulated %llu ps", t->name, tn_coll_name(coll),
             (unsigned long long)predicted_ps, (unsigned long long)sim);
  uint64_t lb = tu_lower_bound_ps(t, coll, size), slack = algo_send_count(a) / 2 + 1;
  if (sim + slack < lb)
    fail_msg("%s %s: %llu ps beats the bound %llu ps", t->name, tn_coll_name(coll),
             (unsigned long long)sim, (unsigned long long)lb);
}

/* All three collectives through synth/ with the forest (check_made). */
static void check_fabric(const topo_t *t, uint64_t size) {
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (size_t c = 0; c < 3; c++) {
    tn_err_t err = {0};
    synth_opts_t o = {.method = SYNTH_FOREST};
    synth_result_t r;
    must(synth_run(t, colls[c], size, &o, &r, &err), &err);
    check_made(t, r.algo, colls[c], size, r.time_ps);
    synth_result_free(&r);
  }
}

static void forest_plans_verify_and_match_simulation_on_random_fabrics(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 16; seed++) {
    topo_t *t = tu_random_fabric(3 + (uint32_t)(seed % 8), seed, seed % 2 == 0);
    check_fabric(t, (seed % 3 ? 1u : 37u) << 16);
    topo_free(t);
  }
}

static void forest_plans_verify_on_shipped_switch_fabrics(void **state) {
  (void)state;
  static const char *const names[] = {"switch-8", "hierarchical-4x4", "spine-4x8",
                                      "rail-4x8", "leaf-32",          "fattree-32-4to1"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    topo_t *t = tu_shipped(names[i]);
    check_fabric(t, 4u << 20);
    topo_free(t);
  }
}

static void forest_runs_are_identical(void **state) {
  (void)state;
  topo_t *t = tu_shipped("fattree-32-4to1");
  tn_err_t err = {0};
  forest_opts_t o = {.pace = true};
  schedule_t a, b;
  must(forest_run(t, 8u << 20, &o, &a, &err), &err);
  must(forest_run(t, 8u << 20, &o, &b, &err), &err);
  algo_t *x = NULL, *y = NULL;
  must(algo_from_schedule(&a, TN_ALLGATHER, "forest", &x, &err), &err);
  must(algo_from_schedule(&b, TN_ALLGATHER, "forest", &y, &err), &err);
  assert_int_equal(a.time_ps, b.time_ps);
  assert_true(algo_equal(x, y));
  algo_free(x);
  algo_free(y);
  schedule_free(&a);
  schedule_free(&b);
  topo_free(t);
}

/* With threads the pacings are planned side by side: the plan kept is the one-thread
 * loop's, on a switch fabric (routes built per destination on first use) and a torus, for
 * the All-Gather and the paced Reduce-Scatter. */
static void forest_pacings_are_identical_for_any_thread_count(void **state) {
  (void)state;
  tn_err_t err = {0};
  topo_t *ts[2] = {tu_shipped("fattree-32-4to1"), NULL};
  must(topo_gen_kind("torus", "8x8", 50.0, 500.0, &ts[1], &err), &err);
  static const char *threads[] = {"1", "2", "3"};
  forest_opts_t o = {.pace = true};
  for (size_t f = 0; f < 2; f++)
    for (int reduce = 0; reduce < 2; reduce++) {
      schedule_t ref;
      algo_t *x = NULL;
      for (size_t i = 0; i < 3; i++) {
        setenv("TENET_THREADS", threads[i], 1);
        schedule_t s;
        must(reduce ? forest_run_reduce(ts[f], 8u << 20, &o, &s, &err)
                    : forest_run(ts[f], 8u << 20, &o, &s, &err),
             &err);
        algo_t *y = NULL;
        must(algo_from_schedule(&s, reduce ? TN_REDUCESCATTER : TN_ALLGATHER, "forest", &y, &err),
             &err);
        if (x == NULL) {
          ref = s, x = y;
          continue;
        }
        assert_int_equal(s.time_ps, ref.time_ps);
        if (!algo_equal(x, y))
          fail_msg("forest %s on %s: %s threads differ from 1", reduce ? "reduce" : "gather",
                   ts[f]->name, threads[i]);
        algo_free(y);
        schedule_free(&s);
      }
      algo_free(x);
      schedule_free(&ref);
    }
  unsetenv("TENET_THREADS");
  topo_free(ts[0]);
  topo_free(ts[1]);
}

/* 4 servers of 8 GPUs, one 50 GB/s uplink each: the greedy sends a remote chunk across an
 * uplink once per GPU; the trees cross it once per server. */
static void forest_is_near_the_bound_on_a_spine_with_shared_uplinks(void **state) {
  (void)state;
  topo_t *t = tu_shipped("spine-4x8");
  tn_err_t err = {0};
  uint64_t size = 64u << 20, lb = tu_lower_bound_ps(t, TN_ALLGATHER, size);
  forest_opts_t o = {.pace = true};
  schedule_t s;
  must(forest_run(t, size, &o, &s, &err), &err);
  double ratio = (double)s.time_ps / (double)lb;
  if (ratio > 1.10) fail_msg("forest on spine-4x8: %.4f times the bound", ratio);
  greedy_opts_t g = {.seed = 1};
  schedule_t gs;
  must(greedy_run(t, size, &g, &gs, &err), &err);
  assert_true(s.time_ps < gs.time_ps);
  schedule_free(&gs);
  schedule_free(&s);
  topo_free(t);
}

/* The Reduce-Scatter planned up the trees keeps its pacing: on the 4:1 oversubscribed
 * fat-tree the All-Gather plan run backwards took 1.35 times the bound. Runs are
 * identical. */
static void forest_reduce_is_near_the_bound_on_an_oversubscribed_fat_tree(void **state) {
  (void)state;
  topo_t *t = tu_shipped("fattree-32-4to1");
  tn_err_t err = {0};
  uint64_t size = 64u << 20, lb = tu_lower_bound_ps(t, TN_REDUCESCATTER, size);
  schedule_t a, b;
  must(forest_run_reduce(t, size, NULL, &a, &err), &err);
  must(forest_run_reduce(t, size, NULL, &b, &err), &err);
  assert_int_equal(a.coll, TN_REDUCESCATTER);
  double ratio = (double)a.time_ps / (double)lb;
  if (ratio > 1.10)
    fail_msg("forest Reduce-Scatter on fattree-32-4to1: %.4f times the bound", ratio);
  algo_t *x = NULL, *y = NULL;
  must(algo_from_schedule(&a, TN_REDUCESCATTER, "forest", &x, &err), &err);
  must(algo_from_schedule(&b, TN_REDUCESCATTER, "forest", &y, &err), &err);
  assert_true(algo_equal(x, y));
  verify(t, x);
  assert_int_equal(simulate(t, x), a.time_ps);
  algo_free(x);
  algo_free(y);
  schedule_free(&a);
  schedule_free(&b);
  topo_free(t);
}

/* At a size where 16 KiB chunks leave few per NPU, finer chunkings and other packings are
 * planned too and the fastest kept: on leaf-32 at 1 MiB (16 KiB chunks give 2 per NPU)
 * each half is the best of the plans forest_tries names, and faster than the usual one
 * alone; at 64 MiB there is one. */
static void forest_tries_finer_chunks_and_shallower_trees_at_small_sizes(void **state) {
  (void)state;
  topo_t *t = tu_shipped("leaf-32");
  tn_err_t err = {0};
  uint64_t size = 1u << 20;
  forest_try_t tries[FOREST_TRIES];
  assert_int_equal(forest_tries(t, 64u << 20, tries), 1);
  uint32_t m = forest_tries(t, size, tries);
  assert_int_equal(tries[0].chunks_per_npu, 2);
  assert_int_equal(tries[0].packing, 0);
  assert_int_equal(tries[3].chunks_per_npu, 16);
  /* then the two-level trees at the finest two of those counts and at 32 */
  assert_int_equal(m, (lp_available() ? 4 * FOREST_PACKINGS : 4) + 3);
  assert_int_equal(tries[m - 3].chunks_per_npu, 8);
  assert_int_equal(tries[m - 1].chunks_per_npu, 32);
  assert_int_equal(tries[m - 1].packing, FOREST_PACK_LEVELS);
  for (int reduce = 0; reduce < 2; reduce++) {
    schedule_t best;
    must(reduce ? forest_run_reduce(t, size, NULL, &best, &err)
                : forest_run(t, size, NULL, &best, &err),
         &err);
    uint64_t least = UINT64_MAX;
    for (uint32_t i = 0; i < m; i++) {
      forest_opts_t o = {
          .chunks_per_npu = tries[i].chunks_per_npu, .packing = tries[i].packing, .pace = reduce};
      schedule_t s;
      must(reduce ? forest_run_reduce(t, size, &o, &s, &err) : forest_run(t, size, &o, &s, &err),
           &err);
      if (s.time_ps < least) least = s.time_ps;
      if (i == 0 && best.time_ps >= s.time_ps)
        fail_msg("%s: the other tries gained nothing (%llu ps)",
                 reduce ? "Reduce-Scatter" : "All-Gather", (unsigned long long)s.time_ps);
      schedule_free(&s);
    }
    assert_int_equal(best.time_ps, least);
    algo_t *a = NULL;
    must(algo_from_schedule(&best, reduce ? TN_REDUCESCATTER : TN_ALLGATHER, "forest", &a, &err),
         &err);
    verify(t, a);
    algo_free(a);
    schedule_free(&best);
  }
  topo_free(t);
}

/* The group switch of NPU v on the fabrics below: its fastest switch link's far end. */
static uint32_t group_of(const topo_t *t, uint32_t v) {
  uint32_t best = UINT32_MAX;
  double bw = 0;
  for (uint32_t i = t->out_off[v]; i < t->out_off[v + 1]; i++) {
    const topo_link_t *l = &t->links[t->out_link[i]];
    if (l->dst >= t->npus && (best == UINT32_MAX || l->bandwidth_GBps > bw))
      best = l->dst, bw = l->bandwidth_GBps;
  }
  return best;
}

/* Groups of random sizes (1 to 5 NPUs) on switches of their own, joined through a spine;
 * with rails, NPU i of every group also on a slower rail switch i. Random bandwidths and
 * latencies. */
static topo_t *grouped_fabric(uint64_t seed, bool rails) {
  tn_rng_t rng;
  tn_rng_seed(&rng, seed);
  uint32_t groups = 2 + (uint32_t)tn_rng_below(&rng, 3), size[4], n = 0, most = 0;
  for (uint32_t g = 0; g < groups; g++) {
    size[g] = 1 + (uint32_t)tn_rng_below(&rng, 5);
    n += size[g];
    if (size[g] > most) most = size[g];
  }
  uint32_t spine = n + groups, switches = groups + 1 + (rails ? most : 0), m = 0;
  topo_link_t links[256];
  static const double bws[] = {100, 200, 300};
#define BOTH_WAYS(a, b, bw)                                                                        \
  do {                                                                                             \
    uint64_t lat = 100000 + 100000 * tn_rng_below(&rng, 9);                                        \
    links[m++] = (topo_link_t){.src = (a), .dst = (b), .bandwidth_GBps = (bw), .latency_ps = lat}; \
    links[m++] = (topo_link_t){.src = (b), .dst = (a), .bandwidth_GBps = (bw), .latency_ps = lat}; \
  } while (0)
  for (uint32_t g = 0, v = 0; g < groups; g++) {
    for (uint32_t i = 0; i < size[g]; i++, v++) {
      BOTH_WAYS(v, n + g, bws[tn_rng_below(&rng, 3)]);
      if (rails) BOTH_WAYS(v, spine + 1 + i, 25.0 + 25.0 * (double)tn_rng_below(&rng, 3));
    }
    BOTH_WAYS(n + g, spine, 25.0 + 25.0 * (double)tn_rng_below(&rng, 4));
  }
#undef BOTH_WAYS
  tn_err_t err = {0};
  topo_t *t = NULL;
  char name[64];
  snprintf(name, sizeof name, "grouped-%llu%s", (unsigned long long)seed, rails ? "-rails" : "");
  must(topo_create(name, n, switches, links, m, &t, &err), &err);
  return t;
}

/* A tree per root, as forest_run plans it at FOREST_PACK_LEVELS: every chunk reaches the
 * other n - 1 NPUs once and crosses into every other group once. */
static void check_levels_gather(const topo_t *t, const schedule_t *s) {
  uint32_t n = t->npus, nchunks = n * s->chunks_per_npu, groups = 0;
  uint32_t *seen = calloc(nchunks, sizeof *seen), *across = calloc(nchunks, sizeof *across);
  uint8_t *sw = calloc(topo_nodes(t), 1);
  assert_non_null(seen);
  assert_non_null(across);
  assert_non_null(sw);
  for (uint32_t v = 0; v < n; v++)
    if (!sw[group_of(t, v)]++) groups++;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = &TN_VEC_AT(&s->xfers, sched_xfer_t, i);
    uint32_t c = TN_VEC_AT(&s->chunks, uint32_t, x->chunk_off);
    seen[c]++;
    across[c] += group_of(t, x->src) != group_of(t, x->dst);
  }
  for (uint32_t c = 0; c < nchunks; c++) {
    assert_int_equal(seen[c], n - 1);
    assert_int_equal(across[c], groups - 1);
  }
  free(seen);
  free(across);
  free(sw);
}

/* Two-level trees at small sizes: on the 4:1 fat-tree at 1 MiB the packing's trees chain
 * through NPUs (1.46 times the bound); the two-level ones cross each leaf boundary once per
 * chunk and come near the bound, and forest_run's search keeps them. */
static void forest_two_level_trees_cross_between_groups_once(void **state) {
  (void)state;
  topo_t *t = tu_shipped("fattree-32-4to1");
  tn_err_t err = {0};
  uint64_t size = 1u << 20, lb = tu_lower_bound_ps(t, TN_ALLGATHER, size);
  assert_true(forest_levels_apply(t));
  forest_opts_t o = {.chunks_per_npu = 16, .packing = FOREST_PACK_LEVELS};
  schedule_t s, best, usual;
  must(forest_run(t, size, &o, &s, &err), &err);
  check_levels_gather(t, &s);
  double ratio = (double)s.time_ps / (double)lb;
  if (ratio > 1.10) fail_msg("two-level trees on fattree-32-4to1: %.4f times the bound", ratio);
  must(forest_run(t, size, NULL, &best, &err), &err);
  assert_true(best.time_ps <= s.time_ps);
  o.packing = 0;
  must(forest_run(t, size, &o, &usual, &err), &err);
  assert_true(best.time_ps < usual.time_ps);
  algo_t *a = NULL;
  must(algo_from_schedule(&s, TN_ALLGATHER, "forest", &a, &err), &err);
  check_made(t, a, TN_ALLGATHER, size, s.time_ps);
  algo_free(a);
  schedule_free(&s);
  schedule_free(&best);
  schedule_free(&usual);
  topo_free(t);
}

/* Every half and the All-Reduce on the two-level trees, on random grouped fabrics with and
 * without rails: verified, predicted = simulated, never below the bound; the All-Gather's
 * chunks cross into each other group once. */
static void forest_two_level_trees_verify_on_random_grouped_fabrics(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    topo_t *t = grouped_fabric(seed, seed % 2 == 0);
    uint64_t size = (seed % 3 ? 1u : 37u) << 16;
    uint32_t k = 1u << (seed % 4);
    const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
    for (size_t c = 0; c < 3; c++) {
      tn_err_t err = {0};
      forest_opts_t o = {.chunks_per_npu = k, .packing = FOREST_PACK_LEVELS, .pace = true};
      schedule_t s;
      tn_status_t st = c == 0   ? forest_run(t, size, &o, &s, &err)
                       : c == 1 ? forest_run_reduce(t, size, &o, &s, &err)
                                : forest_allreduce(t, size, &o, &s, &err);
      must(st, &err);
      if (c == 0) check_levels_gather(t, &s);
      algo_t *a = NULL;
      must(algo_from_schedule(&s, colls[c], "forest", &a, &err), &err);
      check_made(t, a, colls[c], size, s.time_ps);
      algo_free(a);
      schedule_free(&s);
    }
    check_fabric(t, (seed % 3 ? 1u : 37u) << 16); /* the whole search, through synth/ */
    topo_free(t);
  }
}

/* The two-level trees' unpaced All-Gather run backwards (schedule_reverse) is a
 * Reduce-Scatter that verifies and simulates at its replay's time; the All-Reduce on those
 * trees is never slower than it joined to that All-Gather (leaf-32, 1 MiB, 16 chunks). */
static void forest_two_level_gather_runs_backwards(void **state) {
  (void)state;
  topo_t *t = tu_shipped("leaf-32");
  tn_err_t err = {0};
  uint64_t size = 1u << 20;
  forest_opts_t o = {.chunks_per_npu = 16, .packing = FOREST_PACK_LEVELS};
  schedule_t ag, rs, both, ar;
  must(forest_run(t, size, &o, &ag, &err), &err);
  must(schedule_reverse(&ag, &rs, &err), &err);
  assert_int_equal(schedule_len(&rs), schedule_len(&ag));
  must(schedule_join_allreduce(&rs, &ag, &both, &err), &err);
  must(schedule_replay(t, &both, &err), &err);
  must(schedule_replay(t, &rs, &err), &err);
  algo_t *a = NULL;
  must(algo_from_schedule(&rs, TN_REDUCESCATTER, "forest", &a, &err), &err);
  check_made(t, a, TN_REDUCESCATTER, size, rs.time_ps);
  algo_free(a);
  o.pace = true;
  must(forest_allreduce(t, size, &o, &ar, &err), &err);
  assert_true(ar.time_ps <= both.time_ps);
  must(algo_from_schedule(&ar, TN_ALLREDUCE, "forest", &a, &err), &err);
  check_made(t, a, TN_ALLREDUCE, size, ar.time_ps);
  algo_free(a);
  schedule_free(&ag);
  schedule_free(&rs);
  schedule_free(&both);
  schedule_free(&ar);
  topo_free(t);
}

/* Where they do not apply (an NPU on no switch, or one group) the two-level trees are
 * refused when asked for and passed over by the search. */
static void forest_two_level_trees_are_passed_over_where_they_do_not_apply(void **state) {
  (void)state;
  tn_err_t err = {0};
  topo_t *ts[2] = {NULL, NULL};
  must(topo_gen_kind("torus", "4x4", 50.0, 500.0, &ts[0], &err), &err);
  must(topo_gen_kind("switch", "8", 50.0, 500.0, &ts[1], &err), &err);
  const char *why[2] = {"links to no switch", "one group"};
  for (size_t i = 0; i < 2; i++) {
    assert_false(forest_levels_apply(ts[i]));
    forest_try_t tries[FOREST_TRIES];
    uint32_t m = forest_tries(ts[i], 1u << 20, tries);
    for (uint32_t j = 0; j < m; j++)
      assert_int_not_equal(tries[j].packing, FOREST_PACK_LEVELS);
    forest_opts_t o = {.chunks_per_npu = 4, .packing = FOREST_PACK_LEVELS};
    schedule_t s;
    tn_err_t e = {0};
    assert_int_equal(forest_run(ts[i], 1u << 20, &o, &s, &e), TN_INFEASIBLE);
    assert_non_null(strstr(e.msg, why[i]));
    assert_int_equal(schedule_len(&s), 0);
    schedule_free(&s);
    must(forest_run(ts[i], 1u << 20, NULL, &s, &err), &err);
    assert_true(schedule_len(&s) > 0);
    schedule_free(&s);
    topo_free(ts[i]);
  }
}

static void forest_refuses_what_it_cannot_plan(void **state) {
  (void)state;
  tn_err_t err = {0};
  topo_t *t = NULL;
  schedule_t s;
  must(topo_gen_kind("switch", "8", 50.0, 500.0, &t, &err), &err);
  forest_opts_t o = {.chunks_per_npu = 4};
  assert_int_equal(forest_run(t, 31, &o, &s, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "one byte per chunk"));
  assert_int_equal(schedule_len(&s), 0);
  schedule_free(&s);
  assert_int_equal(forest_run_reduce(t, 31, &o, &s, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "one byte per chunk"));
  assert_int_equal(schedule_len(&s), 0);
  schedule_free(&s);
  topo_free(t);
  const topo_link_t links[] = {{.src = 0, .dst = 1, .bandwidth_GBps = 50},
                               {.src = 1, .dst = 0, .bandwidth_GBps = 50},
                               {.src = 2, .dst = 3, .bandwidth_GBps = 50},
                               {.src = 3, .dst = 2, .bandwidth_GBps = 50}};
  must(topo_create("split", 4, 0, links, 4, &t, &err), &err);
  tn_err_t e2 = {0};
  assert_int_equal(forest_run(t, 1u << 20, NULL, &s, &e2), TN_INFEASIBLE);
  assert_non_null(strstr(e2.msg, "disconnected"));
  schedule_free(&s);
  topo_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(forest_plans_verify_and_match_simulation_on_random_fabrics),
      cmocka_unit_test(forest_plans_verify_on_shipped_switch_fabrics),
      cmocka_unit_test(forest_runs_are_identical),
      cmocka_unit_test(forest_is_near_the_bound_on_a_spine_with_shared_uplinks),
      cmocka_unit_test(forest_reduce_is_near_the_bound_on_an_oversubscribed_fat_tree),
      cmocka_unit_test(forest_refuses_what_it_cannot_plan),
      cmocka_unit_test(forest_tries_finer_chunks_and_shallower_trees_at_small_sizes),
      cmocka_unit_test(forest_two_level_trees_cross_between_groups_once),
      cmocka_unit_test(forest_two_level_trees_verify_on_random_grouped_fabrics),
      cmocka_unit_test(forest_two_level_trees_are_passed_over_where_they_do_not_apply),
      cmocka_unit_test(forest_two_level_gather_runs_backwards),
      cmocka_unit_test(forest_pacings_are_identical_for_any_thread_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
