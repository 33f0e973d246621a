/* tests/unit/test_topo.c — topo/: generators against closed forms, routes, the lower
 * bound, the JSON and YAML loaders (every error path names its item), save/load round
 * trips, resolution of shipped names, igraph analysis, and every shipped topology. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"
#include "topo/topo_internal.h"

static tn_err_t tu_err_;

/* ---- helpers --------------------------------------------------------------- */

static topo_t *gen_kind(const char *kind, const char *dims) {
  topo_t *t = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen_kind(kind, dims, 50.0, 500.0, &t, &tu_err_));
  return t;
}

static topo_t *load_ok(const char *json) {
  topo_t *t = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_load_json(json, strlen(json), "f.json", &t, &tu_err_));
  return t;
}

/* Loads json expecting failure with status st and a message containing every one of the
 * given fragments (NULL-terminated). */
static void expect_fail(const char *json, tn_status_t st, ...) {
  topo_t *t = NULL;
  tn_err_t err = {0};
  tn_status_t got = topo_load_json(json, strlen(json), "f.json", &t, &err);
  if (got != st)
    fail_msg("expected status %s, got %s (%s) for: %s", tn_status_str(st), tn_status_str(got),
             err.msg, json);
  assert_null(t);
  va_list ap;
  va_start(ap, st);
  for (const char *frag = va_arg(ap, const char *); frag; frag = va_arg(ap, const char *))
    if (strstr(err.msg, frag) == NULL)
      fail_msg("message '%s' lacks '%s'", err.msg, frag);
  va_end(ap);
}

static void expect_yaml_fail(const char *yaml, ...) {
  topo_t *t = NULL;
  tn_err_t err = {0};
  tn_status_t got = topo_load_yaml(yaml, strlen(yaml), "net.yml", &t, &err);
  if (got != TN_PARSE) fail_msg("expected a parse error, got %s (%s)", tn_status_str(got), err.msg);
  assert_null(t);
  va_list ap;
  va_start(ap, yaml);
  for (const char *frag = va_arg(ap, const char *); frag; frag = va_arg(ap, const char *))
    if (strstr(err.msg, frag) == NULL) fail_msg("message '%s' lacks '%s'", err.msg, frag);
  va_end(ap);
}

static topo_info_t info_of(const topo_t *t) {
  topo_info_t in;
  tn_err_clear(&tu_err_);
  TU_OK(topo_analyze(t, &in, &tu_err_));
  return in;
}

/* Checks the closed forms: counts, degrees and diameter. */
static void check_shape(const topo_t *t, uint32_t npus, uint32_t sw, uint32_t links,
                        uint32_t min_deg, uint32_t max_deg, uint32_t diameter) {
  topo_info_t in = info_of(t);
  if (in.npus != npus || in.switches != sw || in.links != links || in.min_in_degree != min_deg ||
      in.max_in_degree != max_deg || in.min_out_degree != min_deg ||
      in.max_out_degree != max_deg || in.diameter != diameter || !in.connected)
    fail_msg("%s: got npus %u sw %u links %u in %u..%u out %u..%u diam %u conn %d; want %u %u "
             "%u %u..%u diam %u", t->name, in.npus, in.switches, in.links, in.min_in_degree,
             in.max_in_degree, in.min_out_degree, in.max_out_degree, in.diameter, in.connected,
             npus, sw, links, min_deg, max_deg, diameter);
}

static void round_trip(const topo_t *t, bool explicit_links) {
  char *s = NULL;
  topo_t *u = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(topo_to_json(t, explicit_links, &s, &tu_err_));
  TU_OK(topo_load_json(s, strlen(s), "round.json", &u, &tu_err_));
  if (!topo_equal(t, u)) fail_msg("%s: round trip differs:\n%s", t->name, s);
  assert_string_equal(t->description, u->description);
  if (!explicit_links) {
    assert_int_equal(t->ndims, u->ndims);
    for (uint32_t d = 0; d < t->ndims; d++) {
      assert_int_equal(t->dims[d].kind, u->dims[d].kind);
      assert_int_equal(t->dims[d].size, u->dims[d].size);
      assert_int_equal(t->dims[d].unidirectional, u->dims[d].unidirectional);
    }
  }
  free(s);
  topo_free(u);
}

/* ---- generators ---------------------------------------------------------- */

static void gen_ring_matches_closed_forms(void **state) {
  (void)state;
  for (uint32_t n = 3; n <= 17; n++) {
    char d[16];
    snprintf(d, sizeof d, "%u", n);
    topo_t *t = gen_kind("ring", d);
    check_shape(t, n, 0, 2 * n, 2, 2, n / 2);
    topo_free(t);
  }
  topo_t *t = gen_kind("ring", "2");
  check_shape(t, 2, 0, 2, 1, 1, 1);
  topo_free(t);
}

static void gen_unidirectional_ring_has_one_link_per_npu(void **state) {
  (void)state;
  topo_dim_t dim = {TOPO_DIM_RING, 7, 50, 500, true};
  topo_t *t = NULL;
  TU_OK(topo_gen("uring", &dim, 1, &t, &tu_err_));
  check_shape(t, 7, 0, 7, 1, 1, 6);
  assert_int_not_equal(topo_find_link(t, 6, 0), TOPO_NO_LINK);
  assert_int_equal(topo_find_link(t, 0, 6), TOPO_NO_LINK);
  topo_free(t);
}

static void gen_fc_switch_match_closed_forms(void **state) {
  (void)state;
  for (uint32_t n = 2; n <= 12; n++) {
    char d[16];
    snprintf(d, sizeof d, "%u", n);
    topo_t *t = gen_kind("fc", d);
    check_shape(t, n, 0, n * (n - 1), n - 1, n - 1, 1);
    topo_free(t);
    t = gen_kind("switch", d);
    check_shape(t, n, 1, 2 * n, 1, 1, 2);
    topo_free(t);
  }
}

static void gen_mesh_and_torus_match_closed_forms(void **state) {
  (void)state;
  for (uint32_t a = 2; a <= 6; a++) {
    for (uint32_t b = 2; b <= 6; b++) {
      char d[32];
      snprintf(d, sizeof d, "%ux%u", a, b);
      topo_t *t = gen_kind("mesh", d);
      uint32_t maxdeg = (a > 2 ? 2u : 1u) + (b > 2 ? 2u : 1u);
      check_shape(t, a * b, 0, 2 * ((a - 1) * b + a * (b - 1)), 2, maxdeg, a + b - 2);
      topo_free(t);
      if (a >= 3 && b >= 3) {
        t = gen_kind("torus", d);
        check_shape(t, a * b, 0, 4 * a * b, 4, 4, a / 2 + b / 2);
        topo_free(t);
      }
    }
  }
  topo_t *t = gen_kind("mesh", "4x4x4");
  check_shape(t, 64, 0, 2 * 3 * 3 * 16, 3, 6, 9);
  topo_free(t);
  t = gen_kind("torus", "4x4x4");
  check_shape(t, 64, 0, 6 * 64, 6, 6, 6);
  topo_free(t);
  t = gen_kind("mesh", "8x8");
  check_shape(t, 64, 0, 224, 2, 4, 14);
  topo_free(t);
}

static void gen_hypercube_matches_closed_forms(void **state) {
  (void)state;
  for (uint32_t k = 1; k <= 7; k++) {
    char d[16];
    snprintf(d, sizeof d, "%u", 1u << k);
    topo_t *t = gen_kind("hypercube", d);
    check_shape(t, 1u << k, 0, k << k, k, k, k);
    topo_free(t);
  }
}

static void gen_composition_ring_switch_counts(void **state) {
  (void)state;
  topo_dim_t dims[2] = {{TOPO_DIM_RING, 4, 100, 100, false}, {TOPO_DIM_SWITCH, 3, 25, 1000, false}};
  topo_t *t = NULL;
  TU_OK(topo_gen("rs", dims, 2, &t, &tu_err_));
  /* 3 rings of 4 (8 links each) and 4 switches of 3 NPUs (6 links each). */
  check_shape(t, 12, 4, 24 + 24, 3, 3, 2 + 2);
  /* NPU 0's switch dimension link goes to the first switch; the bandwidths are per dim. */
  uint32_t l = topo_find_link(t, 0, 12);
  assert_int_not_equal(l, TOPO_NO_LINK);
  assert_true(t->links[l].bandwidth_GBps == 25.0);
  assert_int_equal(t->links[l].latency_ps, 1000000);
  topo_free(t);
}

static void gen_counts_match_what_gen_builds(void **state) {
  (void)state;
  topo_dim_t shapes[][3] = {
      {{TOPO_DIM_RING, 5, 1, 1, true}, {TOPO_DIM_SWITCH, 3, 1, 1, false}, {TOPO_DIM_FC, 4, 1, 1, false}},
      {{TOPO_DIM_LINE, 4, 1, 1, false}, {TOPO_DIM_RING, 2, 1, 1, false}, {TOPO_DIM_RING, 1, 1, 1, false}},
      {{TOPO_DIM_SWITCH, 1, 1, 1, false}, {TOPO_DIM_RING, 2, 1, 1, true}, {TOPO_DIM_LINE, 3, 1, 1, false}}};
  for (size_t k = 0; k < 3; k++) {
    uint64_t n = 0, sw = 0, l = 0;
    topo_i_gen_counts(shapes[k], 3, &n, &sw, &l);
    topo_t *t = NULL;
    TU_OK(topo_gen("c", shapes[k], 3, &t, &tu_err_));
    assert_int_equal(n, t->npus);
    assert_int_equal(sw, t->switches);
    assert_int_equal(l, t->nlinks);
    topo_free(t);
  }
}

static void gen_kind_rejects_bad_arguments(void **state) {
  (void)state;
  static const struct {
    const char *kind, *dims, *frag;
  } bad[] = {{"mesh", "8", "2 or 3 dimensions"}, {"ring", "8x8", "one size"},
             {"hypercube", "12", "power of two"},  {"tours", "8x8", "unknown KIND"},
             {"mesh", "8x", "ends with"},          {"mesh", "axb", "must look like"},
             {"ring", "1", ">= 2"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    topo_t *t = NULL;
    tn_err_t err = {0};
    assert_int_not_equal(topo_gen_kind(bad[i].kind, bad[i].dims, 50, 500, &t, &err), TN_OK);
    assert_null(t);
    if (strstr(err.msg, bad[i].frag) == NULL) fail_msg("'%s' lacks '%s'", err.msg, bad[i].frag);
  }
}

static void gen_refuses_absurd_sizes_before_allocating(void **state) {
  (void)state;
  topo_t *t = NULL;
  tn_err_t err = {0};
  /* A 60000-NPU fully connected fabric would need 3.6e9 links: a KIND and DIMS the caps
   * refuse are a bad argument (TN_INVAL, exit 1). */
  assert_int_equal(topo_gen_kind("fc", "60000", 50, 500, &t, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "3599940000 links, more than the cap of 4194304"));
  tn_err_clear(&err);
  assert_int_equal(topo_gen_kind("mesh", "1000x1000", 50, 500, &t, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "1000000 NPUs, more than the cap of 65536"));
  assert_null(t);
  /* topo_gen itself, for callers that build dims, says TN_LIMIT by the same rule. */
  topo_dim_t dims[2] = {{TOPO_DIM_RING, 300, 50, 500, false}, {TOPO_DIM_RING, 300, 50, 500, false}};
  tn_err_clear(&err);
  assert_int_equal(topo_gen("big", dims, 2, &t, &err), TN_LIMIT);
  assert_string_equal(err.msg,
                      "the fabric would have 90000 NPUs, more than the cap of 65536 (TOPO_MAX_NPUS)");
}

/* Every oversize or malformed shape fails with one message, before any allocation (the
 * hypercube of 512 once overflowed an array of TOPO_MAX_DIMS sizes). */
static void gen_kind_refuses_every_oversize_shape(void **state) {
  (void)state;
  static const struct {
    const char *kind, *dims, *msg;
  } bad[] = {
      {"hypercube", "512", "a hypercube has at most 2^8 = 256 NPUs, not 512"},
      {"hypercube", "1024", "a hypercube has at most 2^8 = 256 NPUs, not 1024"},
      {"hypercube", "4096", "a hypercube has at most 2^8 = 256 NPUs, not 4096"},
      {"hypercube", "65536", "a hypercube has at most 2^8 = 256 NPUs, not 65536"},
      {"hypercube", "131072",
       "DIMS '131072': the fabric would have more NPUs than the cap of 65536 (TOPO_MAX_NPUS)"},
      {"hypercube", "0", "a hypercube's NPU count must be a power of two >= 2, not 0"},
      {"hypercube", "1", "a hypercube's NPU count must be a power of two >= 2, not 1"},
      {"mesh", "2x2x2x2x2x2x2x2x2", "DIMS '2x2x2x2x2x2x2x2x2' has more than 8 dimensions"},
      {"torus", "2x2x2x2", "a torus takes 2 or 3 dimensions (like 8x8), not 4"},
      {"ring", "0", "every size must be >= 2, not 0"},
      {"switch", "1", "every size must be >= 2, not 1"},
      {"mesh", "4x1", "every size must be >= 2, not 1"},
      {"mesh", "300x300",
       "the fabric would have 90000 NPUs, more than the cap of 65536 (TOPO_MAX_NPUS)"},
      {"torus", "65536x65536x65536",
       "the fabric would have 281474976710656 NPUs, more than the cap of 65536 (TOPO_MAX_NPUS)"},
      {"ring", "65537",
       "DIMS '65537': the fabric would have more NPUs than the cap of 65536 (TOPO_MAX_NPUS)"},
      {"torus", "99999999999999999999999x2",
       "DIMS '99999999999999999999999x2': the fabric would have more NPUs than the cap of "
       "65536 (TOPO_MAX_NPUS)"},
      {"fc", "4096", "the fabric would have 16773120 links, more than the cap of 4194304 "
                     "(TOPO_MAX_LINKS)"},
      {"tours", "4x4", "unknown KIND 'tours' (did you mean 'torus'?)"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    topo_t *t = NULL;
    tn_err_t err = {0};
    assert_int_equal(topo_gen_kind(bad[i].kind, bad[i].dims, 50, 500, &t, &err), TN_INVAL);
    assert_null(t);
    if (strcmp(err.msg, bad[i].msg) != 0)
      fail_msg("%s %s: '%s', expected '%s'", bad[i].kind, bad[i].dims, err.msg, bad[i].msg);
  }
}

/* The JSON generator form goes through the same rules, with the file's location. */
static void load_generator_form_refuses_oversize_shapes_like_gen(void **state) {
  (void)state;
  expect_fail("{\"kind\": \"hypercube\", \"dims\": [512], \"bandwidth\": 1, \"latency\": 1}",
              TN_PARSE, "dims[0]: a hypercube has at most 2^8 = 256 NPUs, not 512", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [300, 300], \"bandwidth\": 1, \"latency\": 1}",
              TN_PARSE, "dims: the fabric would have 90000 NPUs, more than the cap of 65536", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 1], \"bandwidth\": 1, \"latency\": 1}",
              TN_PARSE, "dims: every size must be >= 2, not 1", NULL);
}

/* ---- routes ------------------------------------------------------------------ */

static uint32_t next_node(const topo_t *t, topo_routes_t *r, uint32_t at, uint32_t dst) {
  uint32_t l = topo_route_next(r, at, dst);
  assert_int_not_equal(l, TOPO_NO_LINK);
  return t->links[l].dst;
}

static void route_mesh_is_dimension_ordered(void **state) {
  (void)state;
  topo_t *t = gen_kind("mesh", "4x4");
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  /* 0 -> 15: along dimension 0 (x) first: 0,1,2,3, then up: 7,11,15. */
  uint32_t want[] = {1, 2, 3, 7, 11, 15}, at = 0;
  for (size_t i = 0; i < 6; i++) assert_int_equal(at = next_node(t, r, at, 15), want[i]);
  assert_int_equal(topo_route_hops(r, 0, 15), 6);
  assert_int_equal(topo_route_hops(r, 5, 5), 0);
  /* the route's latency: its 6 links of 500 ns */
  assert_int_equal(topo_route_latency_ps(r, 0, 15), 6 * 500000);
  assert_int_equal(topo_route_latency_ps(r, 5, 5), 0);
  topo_routes_free(r);
  topo_free(t);
}

static void route_ring_takes_shorter_direction_ties_increasing(void **state) {
  (void)state;
  topo_t *t = gen_kind("ring", "8");
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  assert_int_equal(next_node(t, r, 0, 6), 7); /* backwards is shorter */
  assert_int_equal(next_node(t, r, 0, 2), 1);
  assert_int_equal(next_node(t, r, 0, 4), 1); /* tie: increasing ids */
  assert_int_equal(topo_route_hops(r, 0, 4), 4);
  topo_routes_free(r);
  topo_free(t);
  /* Torus: ring rule per dimension, dimension 0 first. */
  t = gen_kind("torus", "4x4");
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  assert_int_equal(next_node(t, r, 0, 15), 3); /* x: 0 -> 3 backwards, then y */
  assert_int_equal(next_node(t, r, 3, 15), 15);
  topo_routes_free(r);
  topo_free(t);
}

static void route_hypercube_fixes_lowest_bit_first(void **state) {
  (void)state;
  topo_t *t = gen_kind("hypercube", "16");
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  uint32_t want[] = {1, 3, 7, 15}, at = 0;
  for (size_t i = 0; i < 4; i++) assert_int_equal(at = next_node(t, r, at, 15), want[i]);
  topo_routes_free(r);
  topo_free(t);
}

static void route_switch_goes_through_the_switch(void **state) {
  (void)state;
  topo_t *t = gen_kind("switch", "8");
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  assert_int_equal(next_node(t, r, 0, 5), 8);
  assert_int_equal(next_node(t, r, 8, 5), 5);
  assert_int_equal(topo_route_hops(r, 3, 6), 2);
  topo_routes_free(r);
  topo_free(t);
}

static void route_explicit_takes_lowest_id_shortest_path(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"npus\": 5, \"links\": ["
                      "{\"src\":0,\"dst\":2,\"bandwidth\":50,\"latency\":500},"
                      "{\"src\":0,\"dst\":1,\"bandwidth\":50,\"latency\":500},"
                      "{\"src\":2,\"dst\":3,\"bandwidth\":50,\"latency\":500},"
                      "{\"src\":1,\"dst\":3,\"bandwidth\":50,\"latency\":500},"
                      "{\"src\":3,\"dst\":4,\"bandwidth\":50,\"latency\":500}]}");
  assert_int_equal(t->ndims, 0);
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  assert_int_equal(next_node(t, r, 0, 4), 1);
  assert_int_equal(next_node(t, r, 1, 4), 3);
  assert_int_equal(topo_route_hops(r, 0, 4), 3);
  topo_routes_free(r);
  topo_free(t);
}

static void route_hops_agree_with_the_igraph_diameter(void **state) {
  (void)state;
  const char *kinds[][2] = {{"mesh", "3x5"}, {"torus", "4x6"}, {"hypercube", "32"},
                            {"ring", "9"},   {"fc", "5"},      {"switch", "6"}};
  for (size_t k = 0; k < 6; k++) {
    topo_t *t = gen_kind(kinds[k][0], kinds[k][1]);
    topo_routes_t *r = NULL;
    TU_OK(topo_routes_create(t, &r, &tu_err_));
    uint32_t worst = 0;
    for (uint32_t a = 0; a < t->npus; a++)
      for (uint32_t b = 0; b < t->npus; b++) {
        uint32_t h = topo_route_hops(r, a, b);
        assert_int_not_equal(h, UINT32_MAX);
        if (h > worst) worst = h;
      }
    /* Dimension-ordered routes are shortest on these shapes. */
    assert_int_equal(worst, info_of(t).diameter);
    topo_routes_free(r);
    topo_free(t);
  }
}

/* ---- JSON loading: the good forms ------------------------------------------------ */

static void load_explicit_defaults_to_bidirectional(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"name\": \"x\", \"description\": \"d\", \"npus\": 3, \"switches\": 1,"
                      " \"links\": [{\"src\": 0, \"dst\": 3, \"bandwidth\": 50, \"latency\": 500},"
                      " {\"src\": 1, \"dst\": 3, \"bandwidth\": 25.5, \"latency\": 0.5,"
                      "  \"bidirectional\": false}]}");
  assert_string_equal(t->name, "x");
  assert_string_equal(t->description, "d");
  assert_int_equal(t->nlinks, 3);
  assert_int_not_equal(topo_find_link(t, 3, 0), TOPO_NO_LINK);
  assert_int_equal(topo_find_link(t, 3, 1), TOPO_NO_LINK);
  assert_int_equal(t->links[topo_find_link(t, 1, 3)].latency_ps, 500);
  topo_free(t);
}

static void load_generator_form_keeps_the_shape(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"name\": \"m\", \"kind\": \"mesh\", \"dims\": [8, 8],"
                      " \"bandwidth\": [50, 25], \"latency\": 500}");
  topo_t *g = gen_kind("mesh", "8x8");
  assert_int_equal(t->ndims, 2);
  assert_int_equal(t->nlinks, g->nlinks);
  assert_true(t->links[topo_find_link(t, 0, 1)].bandwidth_GBps == 50.0);
  assert_true(t->links[topo_find_link(t, 0, 8)].bandwidth_GBps == 25.0);
  topo_free(g);
  topo_free(t);
  t = load_ok("{\"kind\": \"hypercube\", \"dims\": [64], \"bandwidth\": 50, \"latency\": 500}");
  assert_int_equal(t->ndims, 6);
  assert_string_equal(t->name, "f"); /* the file's base name */
  topo_free(t);
}

static void load_composition_with_top_level_defaults(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"dims\": [{\"kind\": \"ring\", \"size\": 8, \"bandwidth\": 50,"
                      " \"latency\": 500, \"bidirectional\": true},"
                      " {\"kind\": \"switch\", \"size\": 16}], \"bandwidth\": [1, 25],"
                      " \"latency\": 1000}");
  assert_int_equal(t->npus, 128);
  assert_int_equal(t->switches, 8);
  assert_int_equal(t->dims[0].kind, TOPO_DIM_RING);
  assert_true(t->dims[0].bandwidth_GBps == 50.0);
  assert_true(t->dims[1].bandwidth_GBps == 25.0);
  assert_true(t->dims[1].latency_ns == 1000.0);
  topo_free(t);
}

static void load_overrides_change_figures_and_keep_the_shape(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"kind\": \"ring\", \"dims\": [6], \"bandwidth\": 50, \"latency\": 500,"
                      " \"overrides\": [{\"src\": 2, \"dst\": 3, \"bandwidth\": 25},"
                      " {\"src\": 5, \"dst\": 0, \"latency\": 1000, \"bidirectional\": false}]}");
  assert_int_equal(t->ndims, 1);
  assert_true(t->links[topo_find_link(t, 2, 3)].bandwidth_GBps == 25.0);
  assert_true(t->links[topo_find_link(t, 3, 2)].bandwidth_GBps == 25.0);
  assert_int_equal(t->links[topo_find_link(t, 5, 0)].latency_ps, 1000000);
  assert_int_equal(t->links[topo_find_link(t, 0, 5)].latency_ps, 500000);
  assert_true(t->links[topo_find_link(t, 5, 0)].bandwidth_GBps == 50.0);
  round_trip(t, false);
  round_trip(t, true);
  topo_free(t);
}

/* ---- JSON loading: every error names its item ------------------------------------- */

#define LINK(s, d, bw, lat) "{\"src\": " #s ", \"dst\": " #d ", \"bandwidth\": " #bw ", \"latency\": " #lat "}"

static void load_rejects_malformed_json_with_line_and_column(void **state) {
  (void)state;
  expect_fail("{\n  \"npus\": 4,\n  \"links\": [,]\n}", TN_PARSE, "f.json:3:", "malformed JSON",
              NULL);
  expect_fail("{\"npus\": 4} x", TN_PARSE, "f.json:1:13", "after the JSON value", NULL);
  expect_fail("{\"npus\": NaN}", TN_PARSE, "f.json:1:", "malformed", NULL);
}

/* Names reach JSON output and one-line messages: they must be UTF-8 text on one line, and
 * a \u0000 (which cJSON turns into an early end of the string) is refused where it is. */
static void load_rejects_names_that_are_not_utf8_text(void **state) {
  (void)state;
#define LINKS ", \"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"bandwidth\": 50, \"latency\": 1}]}"
  expect_fail("{\"name\": \"bad\xffname\"" LINKS, TN_INVAL, "f.json", "name must be UTF-8",
              "byte 0xff at offset 3", NULL);
  expect_fail("{\"name\": \"two\\nlines\"" LINKS, TN_INVAL, "f.json", "without control",
              "byte 0x0a", NULL);
  expect_fail("{\"name\": \"\xc0\xaf\"" LINKS, TN_INVAL, "name must be UTF-8", NULL); /* overlong */
  expect_fail("{\"name\": \"a\\u0000b\"" LINKS, TN_PARSE, "f.json:1:12", "\\u0000", NULL);
  expect_fail("{\"description\": \"\xed\xa0\x80\"" LINKS, TN_INVAL, "f.json",
              "description must be UTF-8", NULL); /* a surrogate */
  /* Non-ASCII names, an escaped backslash before u0000 and multi-line descriptions are fine. */
  topo_t *t = load_ok("{\"name\": \"r\xc3\xa9seau \xe2\x86\x92 \\\\u0000\", \"description\": "
                      "\"l1\\nl2\"" LINKS);
  assert_string_equal(t->name, "r\xc3\xa9seau \xe2\x86\x92 \\u0000");
  topo_free(t);
#undef LINKS
  /* topo_gen's name and topo gen --name pass the same rule; a refusal leaves t as it was. */
  tn_err_t err = {0};
  t = gen_kind("ring", "4");
  assert_int_equal(topo_set_name(t, "x\x01", &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "byte 0x01 at offset 1"));
  assert_string_equal(t->name, "ring-4");
  topo_free(t);
  topo_dim_t ring = {TOPO_DIM_RING, 4, 50, 500, false};
  tn_err_t e2 = {0};
  assert_int_equal(topo_gen("\xfe", &ring, 1, &t, &e2), TN_INVAL);
  assert_null(t);
}

static void load_rejects_truncated_and_empty_files(void **state) {
  (void)state;
  expect_fail("{\"npus\": 4,\n \"links\": [", TN_PARSE, "f.json:2:", "unexpected end", NULL);
  expect_fail("", TN_PARSE, "f.json", "empty file", NULL);
  expect_fail("  \n\t ", TN_PARSE, "f.json", "empty file", NULL);
}

static void load_rejects_missing_file(void **state) {
  (void)state;
  topo_t *t = NULL;
  tn_err_t err = {0};
  assert_int_equal(topo_load("/nonexistent/dir/x.json", &t, &err), TN_IO);
  assert_null(t);
  assert_non_null(strstr(err.msg, "/nonexistent/dir/x.json"));
}

static void load_rejects_wrong_types(void **state) {
  (void)state;
  expect_fail("[1, 2]", TN_PARSE, "top level must be an object", NULL);
  expect_fail("{\"npus\": \"4\", \"links\": []}", TN_PARSE, "npus must be a number, not a string",
              NULL);
  expect_fail("{\"npus\": 2, \"links\": [{\"src\": \"0\", \"dst\": 1, \"bandwidth\": 5, "
              "\"latency\": 1}]}", TN_PARSE, "links[0].src must be a number", NULL);
  expect_fail("{\"npus\": 2, \"links\": {}}", TN_PARSE, "links must be an array", NULL);
  expect_fail("{\"npus\": 2, \"links\": [3]}", TN_PARSE, "links[0] must be an object", NULL);
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, 5, 1) "], \"name\": 7}", TN_PARSE,
              "name must be a string", NULL);
  char longname[400];
  memset(longname, 'a', sizeof longname);
  memcpy(longname, "{\"npus\": 1, \"links\": [], \"name\": \"", 34);
  memcpy(longname + 396, "\"}", 3);
  expect_fail(longname, TN_PARSE, "name is longer than 255 characters", NULL);
  expect_fail("{\"npus\": 1, \"links\": [], \"name\": \"\"}", TN_PARSE, "name must not be empty",
              NULL);
  expect_fail("{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"bandwidth\": 5, "
              "\"latency\": 1, \"bidirectional\": 1}]}", TN_PARSE,
              "links[0].bidirectional must be true or false", NULL);
  expect_fail("{\"kind\": 3, \"dims\": [4], \"bandwidth\": 5, \"latency\": 1}", TN_PARSE,
              "kind must be a string", NULL);
  expect_fail("{\"kind\": \"ring\", \"dims\": 4, \"bandwidth\": 5, \"latency\": 1}", TN_PARSE,
              "dims must be a non-empty list", NULL);
  expect_fail("{\"kind\": \"ring\", \"dims\": [4], \"bandwidth\": \"5\", \"latency\": 1}",
              TN_PARSE, "bandwidth must be a number or a list", NULL);
}

static void load_rejects_unknown_keys_with_did_you_mean(void **state) {
  (void)state;
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"bandwith\": 5, \"latency\": 1}",
              TN_PARSE, "unknown key 'bandwith'", "did you mean 'bandwidth'", NULL);
  expect_fail("{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"bandwidth\": 5, "
              "\"latncy\": 1}]}", TN_PARSE, "links[0]: unknown key 'latncy'",
              "did you mean 'latency'", NULL);
  expect_fail("{\"npus\": 2, \"links\": [], \"colour\": 1}", TN_PARSE, "unknown key 'colour'",
              NULL);
  expect_fail("{\"kind\": \"tours\", \"dims\": [4, 4], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "unknown kind 'tours'", "did you mean 'torus'", NULL);
  expect_fail("{\"dims\": [{\"kind\": \"rng\", \"size\": 4, \"bandwidth\": 5, \"latency\": 1}]}",
              TN_PARSE, "dims[0].kind: unknown kind 'rng'", "did you mean 'ring'", NULL);
  expect_fail("{\"dims\": [{\"kind\": \"ring\", \"sise\": 4, \"bandwidth\": 5, \"latency\": 1}]}",
              TN_PARSE, "dims[0]: unknown key 'sise'", "did you mean 'size'", NULL);
  expect_fail("{\"npus\": 2, \"npus\": 3, \"links\": []}", TN_PARSE, "'npus' is given twice",
              NULL);
}

static void load_rejects_missing_fields(void **state) {
  (void)state;
  expect_fail("{\"links\": []}", TN_PARSE, "missing key 'npus'", NULL);
  expect_fail("{\"npus\": 2}", TN_PARSE, "missing key 'links'", NULL);
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, 5, 1) ", {\"src\": 1, \"dst\": 0, "
              "\"bandwidth\": 5}]}", TN_PARSE, "links[1]: missing key 'latency'", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"latency\": 1}", TN_PARSE,
              "missing key 'bandwidth'", NULL);
  expect_fail("{\"dims\": [4, 4], \"bandwidth\": 5, \"latency\": 1}", TN_PARSE,
              "missing key 'kind'", NULL);
  expect_fail("{\"dims\": [{\"kind\": \"ring\", \"size\": 4, \"latency\": 1}]}", TN_PARSE,
              "dims[0]: missing key 'bandwidth'", NULL);
}

static void load_rejects_zero_negative_and_nonfinite_bandwidth(void **state) {
  (void)state;
  expect_fail("{\"npus\": 5, \"links\": [" LINK(0, 1, 5, 1) "," LINK(1, 2, 5, 1) "," LINK(2, 3, 5, 1)
              "," LINK(3, 4, 0, 1) "]}", TN_PARSE, "f.json: links[3].bandwidth must be > 0", NULL);
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, -5, 1) "]}", TN_PARSE,
              "links[0].bandwidth must be > 0", NULL);
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, 1e999, 1) "]}", TN_PARSE,
              "links[0].bandwidth must be a finite number", NULL);
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, 1e7, 1) "]}", TN_PARSE,
              "links[0].bandwidth", "exceeds the cap", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"bandwidth\": [5, 0], \"latency\": 1}",
              TN_PARSE, "bandwidth[1] must be > 0", NULL);
  /* NaN cannot be written in JSON; the API refuses it too. */
  topo_link_t l = {0, 1, NAN, 0, 0};
  topo_t *t = NULL;
  tn_err_t err = {0};
  assert_int_equal(topo_create("nan", 2, 0, &l, 1, &t, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "links[0]: bandwidth"));
}

static void load_rejects_negative_latency(void **state) {
  (void)state;
  expect_fail("{\"npus\": 2, \"links\": [" LINK(0, 1, 5, -1) "]}", TN_PARSE,
              "links[0].latency must be >= 0", NULL);
  expect_fail("{\"kind\": \"ring\", \"dims\": [4], \"bandwidth\": 5, \"latency\": -3}", TN_PARSE,
              "latency must be >= 0", NULL);
}

static void load_rejects_self_loops_and_endpoints_out_of_range(void **state) {
  (void)state;
  expect_fail("{\"npus\": 3, \"links\": [" LINK(0, 1, 5, 1) "," LINK(1, 2, 5, 1) "," LINK(1, 1, 5, 1)
              "]}", TN_PARSE, "links[2] is a self-loop on node 1", NULL);
  expect_fail("{\"npus\": 4, \"switches\": 1, \"links\": [" LINK(0, 9, 5, 1) "]}", TN_PARSE,
              "links[0].dst = 9 is out of range (nodes 0..4)", NULL);
  expect_fail("{\"npus\": 4, \"links\": [" LINK(-1, 2, 5, 1) "]}", TN_PARSE,
              "links[0].src must be at least 0", NULL);
  expect_fail("{\"npus\": 4, \"links\": [" LINK(1.5, 2, 5, 1) "]}", TN_PARSE,
              "links[0].src must be an integer", NULL);
}

static void load_rejects_duplicate_links(void **state) {
  (void)state;
  expect_fail("{\"npus\": 3, \"links\": [" LINK(0, 1, 5, 1) "," LINK(1, 2, 5, 1) "," LINK(1, 0, 5, 1)
              "]}", TN_PARSE, "links[2] duplicates links[0]", "link 0 -> 1", NULL);
}

static void load_rejects_zero_npus_and_absurd_sizes(void **state) {
  (void)state;
  expect_fail("{\"npus\": 0, \"links\": []}", TN_PARSE, "npus must be at least 1", NULL);
  expect_fail("{\"npus\": 1000000000, \"links\": []}", TN_PARSE,
              "npus = 1000000000 exceeds the cap of 65536", NULL);
  expect_fail("{\"npus\": 4, \"switches\": 1e9, \"links\": []}", TN_PARSE,
              "switches = 1000000000 exceeds the cap", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [0, 8], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "dims[0] must be at least 1", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [1000, 1000], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "dims: the fabric would have 1000000 NPUs", "cap", NULL);
  expect_fail("{\"kind\": \"fc\", \"dims\": [60000], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "links, more than the cap", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [2,2,2,2,2,2,2,2,2], \"bandwidth\": 5, "
              "\"latency\": 1}", TN_PARSE, "more than the cap of 8", NULL);
}

static void load_rejects_inconsistent_generator_forms(void **state) {
  (void)state;
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"npus\": 16, \"bandwidth\": 5, "
              "\"latency\": 1}", TN_PARSE, "npus: belongs to the explicit form", NULL);
  expect_fail("{\"npus\": 2, \"links\": [], \"bandwidth\": 5}", TN_PARSE,
              "bandwidth: belongs to the generator form", NULL);
  expect_fail("{\"kind\": \"ring\", \"dims\": [4, 4], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "a ring takes one size", NULL);
  expect_fail("{\"kind\": \"hypercube\", \"dims\": [12], \"bandwidth\": 5, \"latency\": 1}",
              TN_PARSE, "dims[0]: a hypercube's NPU count must be a power of two", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"bandwidth\": [5, 5, 5], \"latency\": 1}",
              TN_PARSE, "bandwidth has 3 entries but the fabric has 2 dimensions", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [4, 4], \"bandwidth\": 5, \"latency\": 1, "
              "\"bidirectional\": false}", TN_PARSE, "only a ring or a torus", NULL);
  expect_fail("{\"dims\": [{\"kind\": \"fc\", \"size\": 4, \"bandwidth\": 5, \"latency\": 1, "
              "\"bidirectional\": false}]}", TN_PARSE, "dims[0].bidirectional: only a ring", NULL);
  expect_fail("{\"dims\": [{\"kind\": \"fc\", \"size\": 4, \"bandwidth\": 5, \"latency\": 1}, 4]}",
              TN_PARSE, "dims[1] must be an object like dims[0]", NULL);
  expect_fail("{\"kind\": \"mesh\", \"dims\": [{\"kind\": \"fc\", \"size\": 4, \"bandwidth\": 5,"
              " \"latency\": 1}]}", TN_PARSE, "each dimension names its own kind", NULL);
}

static void load_rejects_bad_overrides(void **state) {
  (void)state;
  const char *head = "{\"kind\": \"ring\", \"dims\": [6], \"bandwidth\": 50, \"latency\": 500, "
                     "\"overrides\": ";
  char buf[512];
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 3, \"bandwidth\": 5}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[0]: the fabric has no link 0 -> 3", NULL);
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 1, \"bandwidth\": 5}, {\"src\": 1, "
           "\"dst\": 0, \"latency\": 5}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[1] changes link 1 -> 0 again (overrides[0] did)", NULL);
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 1}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[0]: give 'bandwidth' or 'latency'", NULL);
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 1, \"bandwidht\": 5}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[0]: unknown key 'bandwidht'", "did you mean", NULL);
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 1, \"bandwidth\": 0}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[0].bandwidth must be > 0", NULL);
  snprintf(buf, sizeof buf, "%s[{\"src\": 0, \"dst\": 6, \"bandwidth\": 1}]}", head);
  expect_fail(buf, TN_PARSE, "overrides[0].dst = 6 is out of range", NULL);
}

/* ---- round trips and shipped files --------------------------------------------------- */

/* Uniform shapes that no KIND rebuilds (a hypercube of 2, sizes of 1, a mesh or torus of
 * four dimensions) are written dimension by dimension and load back equal; the fuzzer
 * found the 2-NPU hypercube written as a one-dimensional "mesh" no loader accepts. */
static void save_writes_a_kind_only_when_its_rule_rebuilds_the_shape(void **state) {
  (void)state;
  static const struct {
    topo_dim_kind_t kind;
    uint32_t ndims, size;
    const char *expect; /* the "kind" written, or NULL for the dimension list */
  } shapes[] = {{TOPO_DIM_LINE, 1, 2, "\"kind\": \"hypercube\""},
                {TOPO_DIM_LINE, 1, 3, NULL},
                {TOPO_DIM_LINE, 2, 2, "\"kind\": \"mesh\""},
                {TOPO_DIM_LINE, 3, 2, "\"kind\": \"hypercube\""},
                {TOPO_DIM_LINE, 4, 3, NULL},
                {TOPO_DIM_RING, 4, 3, NULL},
                {TOPO_DIM_RING, 1, 1, NULL},
                {TOPO_DIM_FC, 1, 1, NULL},
                {TOPO_DIM_SWITCH, 1, 1, NULL},
                {TOPO_DIM_RING, 3, 3, "\"kind\": \"torus\""}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    topo_dim_t dims[TOPO_MAX_DIMS];
    for (uint32_t d = 0; d < shapes[i].ndims; d++)
      dims[d] = (topo_dim_t){shapes[i].kind, shapes[i].size, 50, 500, false};
    topo_t *t = NULL;
    char *s = NULL;
    TU_OK(topo_gen("shape", dims, shapes[i].ndims, &t, &tu_err_));
    TU_OK(topo_to_json(t, false, &s, &tu_err_));
    /* The top level's "kind" (the dimension list's entries are indented further). */
    if (shapes[i].expect ? strstr(s, shapes[i].expect) == NULL
                         : strstr(s, "\n  \"kind\": \"") != NULL)
      fail_msg("shape %zu written as:\n%s", i, s);
    free(s);
    round_trip(t, false);
    topo_free(t);
  }
}

static void save_then_load_round_trips(void **state) {
  (void)state;
  const char *kinds[][2] = {{"mesh", "8x8"}, {"mesh", "4x4x4"}, {"torus", "8x8"},
                            {"torus", "3x4x5"}, {"hypercube", "64"}, {"ring", "8"},
                            {"ring", "2"},      {"fc", "8"},         {"switch", "16"}};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    topo_t *t = gen_kind(kinds[k][0], kinds[k][1]);
    round_trip(t, false);
    round_trip(t, true);
    topo_free(t);
  }
  topo_dim_t dims[3] = {{TOPO_DIM_RING, 5, 50, 500, true},
                        {TOPO_DIM_SWITCH, 3, 25.5, 1000.25, false},
                        {TOPO_DIM_FC, 2, 0.1, 0, false}};
  topo_t *t = NULL;
  TU_OK(topo_gen("comp \"quoted\"", dims, 3, &t, &tu_err_));
  TU_OK(topo_set_description(t, "a\nmulti-line\tdescription, \xc3\xa9t\xc3\xa9", &tu_err_));
  round_trip(t, false);
  round_trip(t, true);
  /* A file on disk goes the same way (all-or-nothing write). */
  const char *dir = tu_tmpdir("topo_round_trip");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/c.json", dir);
  TU_OK(topo_save(t, path, false, &tu_err_));
  topo_t *u = NULL;
  TU_OK(topo_load(path, &u, &tu_err_));
  assert_true(topo_equal(t, u));
  topo_free(u);
  topo_free(t);
}

static void save_writes_overrides_for_changed_links(void **state) {
  (void)state;
  topo_t *t = gen_kind("mesh", "4x4");
  TU_OK(topo_set_link(t, 1, 2, 25, 500000, &tu_err_));
  TU_OK(topo_set_link(t, 2, 1, 25, 500000, &tu_err_));
  TU_OK(topo_set_link(t, 5, 6, 10, 7000, &tu_err_));
  char *s = NULL;
  TU_OK(topo_to_json(t, false, &s, &tu_err_));
  assert_non_null(strstr(s, "\"overrides\""));
  assert_non_null(strstr(s, "\"kind\": \"mesh\""));
  assert_non_null(strstr(s, "{\"src\": 1, \"dst\": 2, \"bandwidth\": 25, \"latency\": 500}"));
  assert_non_null(strstr(s, "\"bidirectional\": false"));
  free(s);
  round_trip(t, false);
  tn_err_t err = {0};
  assert_int_equal(topo_set_link(t, 0, 5, 1, 1, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "no link 0 -> 5"));
  topo_free(t);
}

static void every_shipped_topology_loads(void **state) {
  (void)state;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/topologies", TENET_SOURCE_DIR);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int count = 0;
  const char *required[] = {"mesh-8x8", "mesh3d-4x4x4", "torus-8x8", "torus3d-4x4x4",
                            "hypercube-64", "ring-8", "ring-64", "fc-8", "switch-16",
                            "mesh-16x8", "mesh3d-8x4x4", "torus-16x8"};
  int found = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n <= 5 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    topo_t *t = NULL;
    tn_err_clear(&tu_err_);
    TU_OK(topo_load(path, &t, &tu_err_));
    /* The name matches the file, it says what it models, and it is usable. */
    assert_int_equal(strncmp(t->name, e->d_name, n - 5), 0);
    assert_int_equal(strlen(t->name), n - 5);
    assert_true(strlen(t->description) > 20);
    assert_true(info_of(t).connected);
    TU_OK(topo_check_connected(t, &tu_err_));
    round_trip(t, false);
    for (size_t r = 0; r < sizeof required / sizeof *required; r++)
      found += strcmp(t->name, required[r]) == 0;
    topo_free(t);
    count++;
  }
  closedir(d);
  assert_true(count >= 20);
  assert_int_equal(found, (int)(sizeof required / sizeof *required));
}

static void shipped_mesh_8x8_has_the_papers_figures(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/topologies/mesh-8x8.json", TENET_SOURCE_DIR);
  topo_t *t = NULL;
  TU_OK(topo_load(path, &t, &tu_err_));
  check_shape(t, 64, 0, 224, 2, 4, 14);
  for (uint32_t i = 0; i < t->nlinks; i++) {
    assert_true(t->links[i].bandwidth_GBps == 50.0);
    assert_int_equal(t->links[i].latency_ps, 500000);
  }
  topo_free(t);
  snprintf(path, sizeof path, "%s/topologies/mesh-8x8-hetero.json", TENET_SOURCE_DIR);
  TU_OK(topo_load(path, &t, &tu_err_));
  int half = 0;
  for (uint32_t i = 0; i < t->nlinks; i++) half += t->links[i].bandwidth_GBps == 25.0;
  assert_int_equal(half, 16);
  topo_free(t);
}

/* ---- YAML ------------------------------------------------------------------------- */

static void yaml_imports_astra_sim_network_files(void **state) {
  (void)state;
  const char *y = "# ASTRA-sim analytical network\n"
                  "topology: [ Ring, Switch ]\n"
                  "npus_count: [ 8, 16 ]\n"
                  "bandwidth: [ 50.0, 25.0 ]  # GB/s\n"
                  "latency: [ 500.0, 1000.0 ]  # ns\n";
  topo_t *t = NULL;
  TU_OK(topo_load_yaml(y, strlen(y), "dir/net.yml", &t, &tu_err_));
  assert_string_equal(t->name, "net");
  assert_string_equal(t->description, "ASTRA-sim network: Ring 8 x Switch 16");
  assert_int_equal(t->npus, 128);
  assert_int_equal(t->switches, 8);
  assert_int_equal(t->ndims, 2);
  assert_int_equal(t->dims[0].kind, TOPO_DIM_RING);
  assert_true(t->dims[1].bandwidth_GBps == 25.0);
  topo_dim_t dims[2] = {{TOPO_DIM_RING, 8, 50, 500, false}, {TOPO_DIM_SWITCH, 16, 25, 1000, false}};
  topo_t *g = NULL;
  TU_OK(topo_gen("net", dims, 2, &g, &tu_err_));
  assert_true(topo_equal(t, g));
  topo_free(g);
  topo_free(t);
  const char *block = "topology:\n  - FullyConnected\nnpus_count:\n  - 4\nbandwidth:\n  - 100\n"
                      "latency:\n  - 0\n";
  TU_OK(topo_load_yaml(block, strlen(block), "fc.yaml", &t, &tu_err_));
  assert_int_equal(t->nlinks, 12);
  topo_free(t);
}

static void yaml_errors_carry_line_and_column(void **state) {
  (void)state;
  expect_yaml_fail("topology: [ Ring, Swich ]\nnpus_count: [8, 2]\nbandwidth: [1, 1]\n"
                   "latency: [1, 1]\n", "net.yml:1:19", "unknown kind 'Swich'",
                   "did you mean 'Switch'", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_cont: [8]\n", "net.yml:2:1",
                   "unknown key 'npus_cont'", "did you mean 'npus_count'", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [8, 4]\nbandwidth: [1]\nlatency: [1]\n",
                   "net.yml:2:1", "npus_count has 2 entries but topology has 1", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [8]\nbandwidth: [fast]\nlatency: [1]\n",
                   "net.yml:3:13", "bandwidth[0] must be a number", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [8]\nbandwidth: [0]\nlatency: [1]\n",
                   "bandwidth[0] must be > 0", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [8]\nbandwidth: [1]\nlatency: [-1]\n",
                   "latency[0] must be >= 0", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [0]\nbandwidth: [1]\nlatency: [1]\n",
                   "npus_count[0] must be an integer", NULL);
  expect_yaml_fail("topology: [ Ring ]\nnpus_count: [8]\nbandwidth: [1]\n",
                   "missing key 'latency'", NULL);
  expect_yaml_fail("topology: [ Ring\nnpus_count: [8]\n", "net.yml:", "malformed YAML", NULL);
  expect_yaml_fail("", "empty file", NULL);
  expect_yaml_fail("topology: Ring\n", "net.yml:1:11", "must be a list", NULL);
  expect_yaml_fail("topology: [ Ring, Ring, Ring ]\nnpus_count: [100, 100, 100]\n"
                   "bandwidth: [1, 1, 1]\nlatency: [1, 1, 1]\n", "more than the caps", NULL);
}

static void load_dispatches_yaml_by_extension(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("topo_yaml");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/n.yaml", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n", f);
  fclose(f);
  topo_t *t = NULL;
  TU_OK(topo_load(path, &t, &tu_err_));
  assert_int_equal(t->switches, 1);
  topo_free(t);
}

/* ---- analysis and resolution ------------------------------------------------------ */

static void analyze_reports_a_disconnected_fabric(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"name\": \"two\", \"npus\": 4, \"links\": [" LINK(0, 1, 5, 1) ","
                      LINK(2, 3, 5, 1) "]}");
  topo_info_t in = info_of(t);
  assert_false(in.connected);
  assert_int_equal(in.diameter, UINT32_MAX);
  topo_routes_t *r = NULL;
  TU_OK(topo_routes_create(t, &r, &tu_err_));
  assert_int_equal(topo_route_hops(r, 0, 2), UINT32_MAX);
  assert_true(topo_route_latency_ps(r, 0, 2) == UINT64_MAX);
  assert_int_equal(topo_route_latency_ps(r, 0, 1), 1000);
  topo_routes_free(r);
  tn_err_t err = {0};
  assert_int_equal(topo_check_connected(t, &err), TN_INFEASIBLE);
  assert_non_null(strstr(err.msg, "fabric 'two' is disconnected: NPU 0 cannot reach NPU 2"));
  topo_free(t);
  /* One-way reachability is not enough: 0 -> 1 only. */
  t = load_ok("{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"bandwidth\": 5, "
              "\"latency\": 1, \"bidirectional\": false}]}");
  tn_err_clear(&err);
  assert_int_equal(topo_check_connected(t, &err), TN_INFEASIBLE);
  assert_non_null(strstr(err.msg, "NPU 1 cannot reach NPU 0"));
  assert_false(info_of(t).connected);
  topo_free(t);
}

static void analyze_counts_switch_hops_and_bandwidth(void **state) {
  (void)state;
  topo_t *t = load_ok("{\"dims\": [{\"kind\": \"switch\", \"size\": 8, \"bandwidth\": 300, "
                      "\"latency\": 250}, {\"kind\": \"switch\", \"size\": 4, \"bandwidth\": 25,"
                      " \"latency\": 1000}]}");
  topo_info_t in = info_of(t);
  assert_int_equal(in.diameter, 4);
  assert_true(in.min_ingress_GBps == 325.0 && in.max_egress_GBps == 325.0);
  TU_OK(topo_check_connected(t, &tu_err_));
  topo_free(t);
}

static void resolve_finds_files_and_shipped_names(void **state) {
  (void)state;
  char dir[1024], *path = NULL;
  snprintf(dir, sizeof dir, "%s/topologies", TENET_SOURCE_DIR);
  TU_OK(topo_resolve("mesh-8x8", dir, &path, &tu_err_));
  assert_non_null(strstr(path, "topologies/mesh-8x8.json"));
  char *again = NULL;
  TU_OK(topo_resolve(path, NULL, &again, &tu_err_));
  assert_string_equal(again, path);
  free(again);
  free(path);
  tn_err_t err = {0};
  assert_int_equal(topo_resolve("mesh-8x9", dir, &path, &err), TN_IO);
  assert_null(path);
  assert_non_null(strstr(err.msg, "'mesh-8x9'"));
  assert_non_null(strstr(err.msg, "did you mean 'mesh-8x8'"));
  assert_non_null(strstr(err.msg, "tenet topo list"));
  tn_err_clear(&err);
  assert_int_equal(topo_resolve("zzzzzzzzzz", dir, &path, &err), TN_IO);
  assert_non_null(strstr(err.msg, "tenet topo list"));
  tn_err_clear(&err);
  assert_int_equal(topo_resolve("no/such/file.json", dir, &path, &err), TN_IO);
  assert_non_null(strstr(err.msg, "no/such/file.json: no such file"));
}

/* The slow links of the shipped fabrics are exactly the degraded ones (a link below half
 * of its siblings), none on healthy or merely heterogeneous fabrics (mesh-8x8-hetero's
 * half-speed links and dgx1-8's single NVLinks are half, not below), and a slow link
 * that the NPUs need is kept (no copy). */
static void slow_links_are_the_degraded_ones_and_only_where_the_rest_connects(void **state) {
  (void)state;
  static const struct {
    const char *name;
    uint32_t removed[4][2];
    uint32_t n;
  } f[] = {{"rail-4x8-degraded", {{22, 42}, {42, 22}}, 2},
           {"torus-8x8-degraded", {{36, 44}, {44, 36}}, 2},
           {"hetero-ring-6", {{5, 0}}, 1},
           {"rail-4x8", {{0}}, 0},
           {"mesh-8x8-hetero", {{0}}, 0},
           {"dgx1-8", {{0}}, 0},
           {"spine-4x8", {{0}}, 0},
           {"fattree-32-4to1", {{0}}, 0}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    topo_t *t = tu_shipped(f[i].name), *c = NULL;
    TU_OK(topo_without_slow_links(t, &c, &tu_err_));
    if (f[i].n == 0) {
      if (c != NULL) fail_msg("%s: slow links found", f[i].name);
    } else {
      if (c == NULL) fail_msg("%s: no slow links found", f[i].name);
      assert_int_equal(c->nlinks, t->nlinks - f[i].n);
      assert_string_equal(c->name, t->name);
      assert_int_equal(c->npus, t->npus);
      assert_int_equal(c->switches, t->switches);
      for (uint32_t k = 0; k < f[i].n; k++)
        assert_int_equal(topo_find_link(c, f[i].removed[k][0], f[i].removed[k][1]), TOPO_NO_LINK);
    }
    topo_free(c);
    topo_free(t);
  }
  /* A line 0 - 1 - 2 whose 1 <-> 2 is slow beside 1 <-> 0: the NPUs need it. */
  topo_link_t l[4] = {{.src = 0, .dst = 1, .bandwidth_GBps = 50, .latency_ps = 1},
                      {.src = 1, .dst = 0, .bandwidth_GBps = 50, .latency_ps = 1},
                      {.src = 1, .dst = 2, .bandwidth_GBps = 10, .latency_ps = 1},
                      {.src = 2, .dst = 1, .bandwidth_GBps = 10, .latency_ps = 1}};
  topo_t *t = NULL, *c = NULL;
  TU_OK(topo_create("line", 3, 0, l, 4, &t, &tu_err_));
  TU_OK(topo_without_slow_links(t, &c, &tu_err_));
  assert_null(c);
  topo_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gen_ring_matches_closed_forms),
      cmocka_unit_test(gen_unidirectional_ring_has_one_link_per_npu),
      cmocka_unit_test(gen_fc_switch_match_closed_forms),
      cmocka_unit_test(gen_mesh_and_torus_match_closed_forms),
      cmocka_unit_test(gen_hypercube_matches_closed_forms),
      cmocka_unit_test(gen_composition_ring_switch_counts),
      cmocka_unit_test(gen_counts_match_what_gen_builds),
      cmocka_unit_test(gen_kind_rejects_bad_arguments),
      cmocka_unit_test(gen_kind_refuses_every_oversize_shape),
      cmocka_unit_test(load_generator_form_refuses_oversize_shapes_like_gen),
      cmocka_unit_test(gen_refuses_absurd_sizes_before_allocating),
      cmocka_unit_test(route_mesh_is_dimension_ordered),
      cmocka_unit_test(route_ring_takes_shorter_direction_ties_increasing),
      cmocka_unit_test(route_hypercube_fixes_lowest_bit_first),
      cmocka_unit_test(route_switch_goes_through_the_switch),
      cmocka_unit_test(route_explicit_takes_lowest_id_shortest_path),
      cmocka_unit_test(route_hops_agree_with_the_igraph_diameter),
      cmocka_unit_test(load_explicit_defaults_to_bidirectional),
      cmocka_unit_test(load_generator_form_keeps_the_shape),
      cmocka_unit_test(load_composition_with_top_level_defaults),
      cmocka_unit_test(load_overrides_change_figures_and_keep_the_shape),
      cmocka_unit_test(load_rejects_malformed_json_with_line_and_column),
      cmocka_unit_test(load_rejects_truncated_and_empty_files),
      cmocka_unit_test(load_rejects_names_that_are_not_utf8_text),
      cmocka_unit_test(load_rejects_missing_file),
      cmocka_unit_test(load_rejects_wrong_types),
      cmocka_unit_test(load_rejects_unknown_keys_with_did_you_mean),
      cmocka_unit_test(load_rejects_missing_fields),
      cmocka_unit_test(load_rejects_zero_negative_and_nonfinite_bandwidth),
      cmocka_unit_test(load_rejects_negative_latency),
      cmocka_unit_test(load_rejects_self_loops_and_endpoints_out_of_range),
      cmocka_unit_test(load_rejects_duplicate_links),
      cmocka_unit_test(load_rejects_zero_npus_and_absurd_sizes),
      cmocka_unit_test(load_rejects_inconsistent_generator_forms),
      cmocka_unit_test(load_rejects_bad_overrides),
      cmocka_unit_test(save_then_load_round_trips),
      cmocka_unit_test(save_writes_a_kind_only_when_its_rule_rebuilds_the_shape),
      cmocka_unit_test(save_writes_overrides_for_changed_links),
      cmocka_unit_test(every_shipped_topology_loads),
      cmocka_unit_test(shipped_mesh_8x8_has_the_papers_figures),
      cmocka_unit_test(yaml_imports_astra_sim_network_files),
      cmocka_unit_test(yaml_errors_carry_line_and_column),
      cmocka_unit_test(load_dispatches_yaml_by_extension),
      cmocka_unit_test(analyze_reports_a_disconnected_fabric),
      cmocka_unit_test(analyze_counts_switch_hops_and_bandwidth),
      cmocka_unit_test(resolve_finds_files_and_shipped_names),
      cmocka_unit_test(slow_links_are_the_degraded_ones_and_only_where_the_rest_connects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
