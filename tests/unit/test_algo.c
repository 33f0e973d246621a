/* tests/unit/test_algo.c — the Ring and Direct baselines and the verifier: every baseline
 * verifies for n = 2..64, and each kind of broken set is rejected naming rank and node. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "greedy/greedy.h"

static tn_err_t tu_err_;

typedef tn_status_t (*builder_t)(tn_coll_t, uint32_t, uint64_t, uint32_t, algo_t **, tn_err_t *);

static const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};

/* An edit applied while copying a set: drop a node (ids after it shift down, dependencies
 * on it vanish), replace its dependencies, or strip its chunk bookkeeping. */
typedef struct edit {
  uint32_t rank, id;
  bool drop, strip;
  const uint32_t *deps;
  uint32_t ndeps;
} edit_t;

static const edit_t *find_edit(const edit_t *ed, size_t ned, uint32_t r, uint32_t i) {
  for (size_t e = 0; e < ned; e++)
    if (ed[e].rank == r && ed[e].id == i) return &ed[e];
  return NULL;
}

static algo_t *copy_edit(const algo_t *a, const edit_t *ed, size_t ned) {
  algo_t *b = NULL;
  tn_err_clear(&tu_err_);
  if (a->has_coll)
    TU_OK(algo_create(a->name, a->coll, a->npus, a->chunks_per_npu, a->size_bytes, &b, &tu_err_));
  else
    TU_OK(algo_create_unknown(a->name, a->npus, &b, &tu_err_));
  for (uint32_t r = 0; r < a->npus; r++) {
    uint32_t len = algo_rank_len(a, r), next = 0;
    uint32_t *map = calloc(len + 1, sizeof *map), *deps = calloc(len + 8, sizeof *deps);
    assert_non_null(map);
    assert_non_null(deps);
    for (uint32_t i = 0; i < len; i++) {
      const edit_t *e = find_edit(ed, ned, r, i);
      map[i] = e && e->drop ? UINT32_MAX : next++;
    }
    for (uint32_t i = 0; i < len; i++) {
      const edit_t *e = find_edit(ed, ned, r, i);
      if (e && e->drop) continue;
      algo_node_t nd = *algo_node(a, r, i);
      const uint32_t *src = algo_node_deps(a, r, &nd);
      uint32_t nsrc = nd.ndeps;
      if (e && e->deps) src = e->deps, nsrc = e->ndeps;
      nd.ndeps = 0;
      for (uint32_t j = 0; j < nsrc; j++)
        if (src[j] >= len || map[src[j]] != UINT32_MAX)
          deps[nd.ndeps++] = src[j] >= len ? src[j] : map[src[j]];
      if (e && e->strip) nd.nchunks = 0;
      TU_OK(algo_add(b, r, &nd, deps, algo_node_chunks(a, r, algo_node(a, r, i)), NULL, &tu_err_));
    }
    free(map);
    free(deps);
  }
  return b;
}

static algo_node_t *node_mut(algo_t *a, uint32_t r, uint32_t i) {
  return &TN_VEC_AT(&a->ranks[r].nodes, algo_node_t, i);
}

/* The first node of rank r with op (and, for RECV/SEND, peer), or fails. */
static uint32_t find_node(const algo_t *a, uint32_t r, algo_op_t op, int32_t peer) {
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
    const algo_node_t *nd = algo_node(a, r, i);
    if (nd->op == op && (op == ALGO_COMP || nd->peer == peer)) return i;
  }
  fail_msg("rank %u has no %d node for peer %d", r, (int)op, peer);
  return 0;
}

static void expect_reject(const algo_t *a, const char *needle1, const char *needle2) {
  tn_err_t err = {0};
  algo_verify_report_t rep;
  tn_status_t st = algo_verify(a, NULL, &rep, &err);
  if (st != TN_PARSE || strstr(err.msg, needle1) == NULL ||
      (needle2 && strstr(err.msg, needle2) == NULL))
    fail_msg("expected TN_PARSE with \"%s\" / \"%s\", got %d: %s", needle1, needle2 ? needle2 : "",
             (int)st, err.msg);
}

static void verify_ok(const algo_t *a, bool semantics) {
  algo_verify_report_t rep;
  tn_err_clear(&tu_err_);
  TU_OK(algo_verify(a, NULL, &rep, &tu_err_));
  assert_int_equal(rep.semantics_checked, semantics);
  assert_int_equal(rep.nodes, algo_node_count(a));
}

/* Every n in 2..nmax with K = 1; K = 2 and 3 for every n up to 24 and then around the
 * powers of two and at the top (the sweep stays a few seconds under ASan). */
static bool sweep_k(uint32_t n, uint32_t k, uint32_t nmax) {
  if (k == 1 || n <= 24 || n + 1 >= nmax) return true;
  return n == 31 || n == 32 || n == 33 || n == 48;
}

static void check_baseline(builder_t build, const char *name, uint32_t nmax, uint32_t kmax) {
  for (uint32_t n = 2; n <= nmax; n++)
    for (uint32_t k = 1; k <= kmax; k++)
      for (size_t c = 0; c < 3 && sweep_k(n, k, nmax); c++) {
        algo_t *a = NULL;
        tn_err_t err = {0};
        /* A size that does not divide evenly, so chunk sizes differ by one byte. */
        uint64_t size = (uint64_t)n * k * 1000 + 7;
        if (build(colls[c], n, size, k, &a, &err) != TN_OK) fail_msg("%s: %s", name, err.msg);
        algo_verify_report_t rep;
        if (algo_verify(a, NULL, &rep, &err) != TN_OK)
          fail_msg("%s %s n=%u K=%u: %s", name, tn_coll_name(colls[c]), n, k, err.msg);
        assert_true(rep.semantics_checked);
        algo_free(a);
      }
}

static void ring_baselines_verify_for_2_to_64_npus(void **state) {
  (void)state;
  check_baseline(algo_ring, "ring", 64, 3);
}

static void direct_baselines_verify_for_2_to_64_npus(void **state) {
  (void)state;
  check_baseline(algo_direct, "direct", 64, 3);
}

static void ring_allgather_moves_chunk_r_minus_s_to_the_next_rank(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_ALLGATHER, 4, 4096, 1, &a, &tu_err_));
  /* Rank 2: step 0 sends chunk 2, step 1 chunk 1, step 2 chunk 0, all to rank 3. */
  uint32_t expect[] = {2, 1, 0}, seen = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, 2); i++) {
    const algo_node_t *nd = algo_node(a, 2, i);
    if (nd->op != ALGO_SEND) continue;
    assert_int_equal(nd->peer, 3);
    assert_int_equal(nd->bytes, 1024);
    assert_int_equal(algo_node_chunks(a, 2, nd)[0], expect[seen++]);
  }
  assert_int_equal(seen, 3);
  assert_int_equal(algo_send_count(a), 12);
  algo_free(a);
}

static void ring_allreduce_has_2n_minus_2_steps(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_ALLREDUCE, 8, 8 * 3 * 64, 3, &a, &tu_err_));
  assert_int_equal(algo_send_count(a), 8u * 2 * 7 * 3);
  algo_free(a);
}

static void baselines_reject_a_size_below_one_byte_per_chunk(void **state) {
  (void)state;
  algo_t *a = NULL;
  tn_err_t err = {0};
  assert_int_equal(algo_ring(TN_ALLGATHER, 8, 15, 2, &a, &err), TN_INVAL);
  assert_null(a);
  assert_non_null(strstr(err.msg, "16 chunks"));
  tn_err_clear(&err);
  assert_int_equal(algo_direct(TN_ALLREDUCE, 0, 1024, 1, &a, &err), TN_INVAL);
}

static void baselines_of_one_npu_are_one_idle_node(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_ALLREDUCE, 1, 100, 1, &a, &tu_err_));
  assert_int_equal(algo_node_count(a), 1);
  verify_ok(a, true);
  algo_free(a);
}

static void verify_rejects_an_empty_algorithm(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("test", TN_ALLGATHER, 3, 1, 3072, &a, &tu_err_));
  TU_OK(algo_fill_idle(a, &tu_err_));
  expect_reject(a, "rank 0 ends without chunk 1", NULL);
  algo_free(a);
}

/* The two counter-rotating rings: every collective, ring sizes 2..9, even and odd piece
 * counts, verifies (each chunk reaches every rank it must, every contribution once). */
static void bidirectional_ring_verifies(void **state) {
  (void)state;
  for (uint32_t n = 2; n <= 9; n++)
    for (size_t c = 0; c < 3; c++)
      for (uint32_t k = 2; k <= 5; k++) {
        algo_t *a = NULL;
        TU_OK(algo_ring_both(colls[c], n, (uint64_t)n * k * 64, k, true, &a, &tu_err_));
        algo_verify_report_t rep;
        tn_err_t e = {0};
        if (algo_verify(a, NULL, &rep, &e) != TN_OK)
          fail_msg("ring both ways, %u NPUs, %s, %u pieces: %s", n, tn_coll_name(colls[c]), k,
                   e.msg);
        assert_true(rep.semantics_checked);
        algo_free(a);
      }
  algo_t *a = NULL;
  tn_err_t e = {0};
  assert_int_equal(algo_ring_both(TN_ALLGATHER, 4, 4096, 1, true, &a, &e), TN_INVAL);
}

static void baselines_are_deterministic_and_equal_compares_content(void **state) {
  (void)state;
  algo_t *a = NULL, *b = NULL, *c = NULL;
  TU_OK(algo_ring(TN_ALLREDUCE, 16, 1 << 20, 2, &a, &tu_err_));
  TU_OK(algo_ring(TN_ALLREDUCE, 16, 1 << 20, 2, &b, &tu_err_));
  TU_OK(algo_direct(TN_ALLREDUCE, 16, 1 << 20, 2, &c, &tu_err_));
  assert_true(algo_equal(a, b));
  assert_false(algo_equal(a, c));
  node_mut(b, 5, 3)->tag++;
  assert_false(algo_equal(a, b));
  algo_free(a);
  algo_free(b);
  algo_free(c);
  TU_OK(algo_direct(TN_REDUCESCATTER, 9, 1 << 16, 3, &a, &tu_err_));
  TU_OK(algo_direct(TN_REDUCESCATTER, 9, 1 << 16, 3, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  algo_free(a);
  algo_free(b);
}

/* ---- rejections --------------------------------------------------------------- */

static algo_t *ring(tn_coll_t c, uint32_t n) {
  algo_t *a = NULL;
  tn_err_clear(&tu_err_);
  TU_OK(algo_ring(c, n, (uint64_t)n * 1024, 1, &a, &tu_err_));
  return a;
}

static void verify_rejects_a_removed_message(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 4);
  /* The last node of rank 2 is its last RECV (from rank 1); nothing depends on it. */
  edit_t e = {2, algo_rank_len(a, 2) - 1, true, false, NULL, 0};
  algo_t *b = copy_edit(a, &e, 1);
  const algo_node_t *gone = algo_node(a, 2, e.id);
  assert_int_equal(gone->op, ALGO_RECV);
  char want[64];
  uint32_t send = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, 1); i++)
    if (algo_node(a, 1, i)->op == ALGO_SEND && algo_node(a, 1, i)->tag == gone->tag) send = i;
  snprintf(want, sizeof want, "rank 1 node %u: SEND to 2 tag %d", send, gone->tag);
  expect_reject(b, want, "no matching RECV on rank 2");
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_changed_size(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 4);
  uint32_t s = find_node(a, 0, ALGO_SEND, 1);
  node_mut(a, 0, s)->bytes += 1;
  char want[64];
  snprintf(want, sizeof want, "rank 0 node %u: SEND of 1025 B", s);
  expect_reject(a, want, "chunks of 1024 B");
  /* Without bookkeeping the same change is a SEND without its RECV. */
  edit_t strip[64];
  size_t ns = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      strip[ns++] = (edit_t){r, i, false, true, NULL, 0};
  algo_t *b = copy_edit(a, strip, ns);
  snprintf(want, sizeof want, "rank 0 node %u: SEND to 1 tag 0 (1025 B)", s);
  expect_reject(b, want, "no matching RECV");
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_dependency_cycle(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 4);
  /* Rank 3: the step-1 SEND depends on the step-0 RECV; close the loop. */
  uint32_t recv0 = find_node(a, 3, ALGO_RECV, 2), send1 = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, 3); i++) {
    const algo_node_t *nd = algo_node(a, 3, i);
    if (nd->op == ALGO_SEND && nd->ndeps == 1 && algo_node_deps(a, 3, nd)[0] == recv0) send1 = i;
  }
  assert_true(send1 > 0);
  edit_t e = {3, recv0, false, false, &send1, 1};
  algo_t *b = copy_edit(a, &e, 1);
  expect_reject(b, "rank 3 node 1: dependency cycle through node 2", NULL);
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_tag_out_of_range(void **state) {
  (void)state;
  algo_t *a = ring(TN_REDUCESCATTER, 3);
  node_mut(a, 1, 0)->tag = ALGO_MAX_TAG + 1;
  expect_reject(a, "rank 1 node 0: tag 500000000 out of range", NULL);
  node_mut(a, 1, 0)->tag = -1;
  expect_reject(a, "rank 1 node 0: tag -1 out of range", NULL);
  algo_free(a);
}

static void verify_rejects_a_peer_out_of_range(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLREDUCE, 5);
  uint32_t r = find_node(a, 4, ALGO_RECV, 3);
  node_mut(a, 4, r)->peer = 5;
  char want[64];
  snprintf(want, sizeof want, "rank 4 node %u: RECV source 5 out of range", r);
  expect_reject(a, want, NULL);
  node_mut(a, 4, r)->peer = 4;
  expect_reject(a, "RECV from itself", NULL);
  algo_free(a);
}

static void verify_rejects_a_peer_that_is_no_npu_of_the_topology(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 4);
  topo_link_t links[] = {{0, 1, 50, 1000, 0}, {1, 2, 50, 1000, 0}};
  topo_t *t = NULL;
  TU_OK(topo_create("small", 3, 0, links, 2, &t, &tu_err_));
  tn_err_t err = {0};
  assert_int_equal(algo_verify(a, t, NULL, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "4 ranks but small has 3 NPUs"));
  topo_free(t);
  algo_free(a);
}

static void verify_rejects_a_chunk_missing_at_the_end(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_direct(TN_ALLGATHER, 4, 4096, 1, &a, &tu_err_));
  /* Drop rank 0's SEND to rank 1 and rank 1's RECV from rank 0. */
  edit_t e[] = {{0, find_node(a, 0, ALGO_SEND, 1), true, false, NULL, 0},
                {1, find_node(a, 1, ALGO_RECV, 0), true, false, NULL, 0}};
  algo_t *b = copy_edit(a, e, 2);
  expect_reject(b, "rank 1 ends without chunk 0", NULL);
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_contribution_counted_twice(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_direct(TN_REDUCESCATTER, 4, 4096, 1, &a, &tu_err_));
  /* Rank 2's COMP lists the RECV from rank 1 twice among its dependencies. */
  uint32_t comp = find_node(a, 2, ALGO_COMP, -1), from1 = find_node(a, 2, ALGO_RECV, 1);
  const algo_node_t *cn = algo_node(a, 2, comp);
  uint32_t deps[8];
  memcpy(deps, algo_node_deps(a, 2, cn), cn->ndeps * sizeof *deps);
  deps[cn->ndeps] = from1;
  edit_t e = {2, comp, false, false, deps, cn->ndeps + 1};
  algo_t *b = copy_edit(a, &e, 1);
  char want[96];
  snprintf(want, sizeof want,
           "rank 2 node %u: chunk 2 reduced twice with contribution of "
           "rank 1",
           comp);
  expect_reject(b, want, NULL);
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_missing_contribution(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_REDUCESCATTER, 4, 4096, 1, &a, &tu_err_));
  /* A copy RECV instead of a reduce RECV loses the partial sum: its COMP then has
   * nothing to add. */
  uint32_t rv = find_node(a, 1, ALGO_RECV, 0);
  node_mut(a, 1, rv)->reduce = false;
  expect_reject(a, "rank 1 node", "no reduce-RECV it depends on carries it");
  algo_free(a);
}

/* Two ranks whose first node is a RECV of what the other sends only afterwards. */
static void verify_rejects_a_deadlock(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  for (uint32_t r = 0; r < 2; r++) {
    uint32_t other = 1 - r, dep = 0;
    TU_OK(algo_add_recv(a, r, other, 0, 1024, false, NULL, 0, &other, 1, NULL, &tu_err_));
    TU_OK(algo_add_send(a, r, other, 0, 1024, &dep, 1, &r, 1, NULL, &tu_err_));
  }
  expect_reject(a, "rank 0 node 0: deadlock: RECV from 1 tag 0 waits for rank 1 node 1", NULL);
  algo_free(a);
}

static void verify_rejects_a_race_on_a_slot(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  /* Rank 1 receives chunk 0 twice with nothing ordering the two writes. */
  uint32_t c0 = 0, c1 = 1;
  for (int32_t tag = 0; tag < 2; tag++) {
    TU_OK(algo_add_send(a, 0, 1, tag, 1024, NULL, 0, &c0, 1, NULL, &tu_err_));
    TU_OK(algo_add_recv(a, 1, 0, tag, 1024, false, NULL, 0, &c0, 1, NULL, &tu_err_));
  }
  TU_OK(algo_add_send(a, 1, 0, 0, 1024, NULL, 0, &c1, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 0, 1, 0, 1024, false, NULL, 0, &c1, 1, NULL, &tu_err_));
  expect_reject(a, "rank 1 node 1: race on chunk 0: node 0 writes it", NULL);
  algo_free(a);
}

/* A read and then a write of one slot in one round, by two nodes of rank 1: its SEND of
 * chunk 0 (behind a COMP of no chunks, so in round 1) and its RECV overwriting chunk 0
 * from rank 2 (whose SEND runs in round 0 after rank 1's COMP), with nothing ordering the
 * two. */
static void verify_rejects_a_read_racing_a_write(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("test", TN_ALLREDUCE, 3, 1, 3072, &a, &tu_err_));
  uint32_t c0 = 0, wait = 0;
  TU_OK(algo_add_recv(a, 0, 1, 1, 1024, false, NULL, 0, &c0, 1, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 1, 0, NULL, 0, NULL, 0, &wait, &tu_err_));
  TU_OK(algo_add_send(a, 1, 0, 1, 1024, &wait, 1, &c0, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 2, 0, 1024, false, NULL, 0, &c0, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 2, 1, 0, 1024, NULL, 0, &c0, 1, NULL, &tu_err_));
  expect_reject(a, "race on chunk 0: node 1 reads it", NULL);
  algo_free(a);
}

static void verify_rejects_sending_a_chunk_not_held(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 3);
  /* Rank 0's first SEND claims chunk 1 (same size), which rank 0 does not have yet. */
  TN_VEC_AT(&a->ranks[0].chunks, uint32_t, algo_node(a, 0, 0)->chunk_off) = 1;
  expect_reject(a, "rank 0 node 0: sends chunk 1, which it does not hold", NULL);
  algo_free(a);
}

static void verify_rejects_mixed_bookkeeping(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 3);
  edit_t e = {1, 0, false, true, NULL, 0};
  algo_t *b = copy_edit(a, &e, 1);
  expect_reject(b, "rank 1 node 0: lacks chunk bookkeeping", "mixed files");
  algo_free(a);
  algo_free(b);
}

static void verify_without_bookkeeping_checks_matching_only(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLREDUCE, 6);
  edit_t strip[256];
  size_t ns = 0;
  for (uint32_t r = 0; r < a->npus; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
      strip[ns++] = (edit_t){r, i, false, true, NULL, 0};
  algo_t *b = copy_edit(a, strip, ns);
  verify_ok(b, false);
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_partial_reduction_at_the_end(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_REDUCESCATTER, 4, 4096, 1, &a, &tu_err_));
  /* Rank 0's last node is the COMP that adds rank 3's partial of chunk 0. */
  edit_t e = {0, algo_rank_len(a, 0) - 1, true, false, NULL, 0};
  assert_int_equal(algo_node(a, 0, e.id)->op, ALGO_COMP);
  algo_t *b = copy_edit(a, &e, 1);
  expect_reject(b, "rank 0 ends with chunk 0 missing the contribution of rank 1 (1 of 4)", NULL);
  algo_free(a);
  algo_free(b);
}

static void verify_rejects_a_recv_listing_other_chunks(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 4);
  uint32_t rv = find_node(a, 1, ALGO_RECV, 0);
  TN_VEC_AT(&a->ranks[1].chunks, uint32_t, algo_node(a, 1, rv)->chunk_off) = 3;
  char want[64];
  snprintf(want, sizeof want, "rank 1 node %u: RECV lists other chunks than its SEND", rv);
  expect_reject(a, want, "(rank 0 node 0)");
  algo_free(a);
}

static void verify_rejects_bad_chunk_ids_sizes_and_dependencies(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  uint32_t bad = 2, twice[] = {0, 0}, dep = 7;
  TU_OK(algo_add_send(a, 0, 1, 0, 1024, NULL, 0, &bad, 1, NULL, &tu_err_));
  expect_reject(a, "rank 0 node 0: chunk 2 out of range (2 chunks)", NULL);
  algo_free(a);
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 0, 2048, NULL, 0, twice, 2, NULL, &tu_err_));
  expect_reject(a, "rank 0 node 0: lists chunk 0 twice", NULL);
  algo_free(a);
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  TU_OK(algo_add_send(a, 1, 0, 0, 0, NULL, 0, NULL, 0, NULL, &tu_err_));
  expect_reject(a, "rank 1 node 0: SEND of 0 bytes", NULL);
  algo_free(a);
  TU_OK(algo_create("test", TN_ALLGATHER, 2, 1, 2048, &a, &tu_err_));
  TU_OK(algo_add_comp(a, 0, 0, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_comp(a, 0, 0, &dep, 1, NULL, 0, NULL, &tu_err_));
  expect_reject(a, "rank 0 node 1: dependency on node 7 out of range (2 nodes)", NULL);
  algo_free(a);
}

static void verify_accepts_a_fitting_topology(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLREDUCE, 4);
  topo_link_t links[] = {
      {0, 1, 50, 1000, 0}, {1, 2, 50, 1000, 0}, {2, 3, 50, 1000, 0}, {3, 0, 50, 1000, 0}};
  topo_t *t = NULL;
  TU_OK(topo_create("ring4", 4, 0, links, 4, &t, &tu_err_));
  algo_verify_report_t rep;
  TU_OK(algo_verify(a, t, &rep, &tu_err_));
  assert_true(rep.semantics_checked);
  assert_int_equal(rep.messages, 4u * 2 * 3);
  topo_free(t);
  algo_free(a);
}

static void verify_of_an_unknown_collective_skips_semantics(void **state) {
  (void)state;
  algo_t *a = ring(TN_ALLGATHER, 3), *b = NULL;
  TU_OK(algo_create_unknown("chakra", 3, &b, &tu_err_));
  for (uint32_t r = 0; r < 3; r++)
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *nd = algo_node(a, r, i);
      TU_OK(
          algo_add(b, r, nd, algo_node_deps(a, r, nd), algo_node_chunks(a, r, nd), NULL, &tu_err_));
    }
  verify_ok(b, false);
  algo_free(a);
  algo_free(b);
}

/* Random single-field corruptions of valid sets: the verifier must answer OK or TN_PARSE
 * (never crash, never an internal error), a rejection names a rank, and every corruption
 * that breaks a message's matching (another peer, tag or size on a SEND or RECV) is
 * rejected; so is most of the rest (a moved dependency or chunk may still be valid). */
static void verify_survives_random_corruptions(void **state) {
  (void)state;
  unsigned corrupted = 0, rejected = 0;
  tn_rng_t rng;
  tn_rng_seed(&rng, 42);
  for (int it = 0; it < 400; it++) {
    algo_t *a = NULL;
    uint32_t n = 2 + (uint32_t)tn_rng_below(&rng, 5), k = 1 + (uint32_t)tn_rng_below(&rng, 2);
    tn_coll_t c = colls[tn_rng_below(&rng, 3)];
    tn_err_clear(&tu_err_);
    if (tn_rng_below(&rng, 2))
      TU_OK(algo_ring(c, n, (uint64_t)n * k * 100 + 3, k, &a, &tu_err_));
    else
      TU_OK(algo_direct(c, n, (uint64_t)n * k * 100 + 3, k, &a, &tu_err_));
    uint32_t r = (uint32_t)tn_rng_below(&rng, n);
    uint32_t i = (uint32_t)tn_rng_below(&rng, algo_rank_len(a, r));
    algo_node_t *nd = node_mut(a, r, i);
    algo_node_t was = *nd;
    bool msg = nd->op != ALGO_COMP, pool_changed = false;
    switch (tn_rng_below(&rng, 7)) {
    case 0: nd->op = (algo_op_t)tn_rng_below(&rng, 4); break;
    case 1: nd->peer = (int32_t)tn_rng_below(&rng, n + 3) - 1; break;
    case 2: nd->tag = (int32_t)tn_rng_below(&rng, 8) - 1; break;
    case 3: nd->bytes = tn_rng_below(&rng, 3) ? nd->bytes + 1 : 0; break;
    case 4: nd->reduce = !nd->reduce; break;
    case 5:
      if (nd->ndeps) {
        uint32_t *d = &TN_VEC_AT(&a->ranks[r].deps, uint32_t, nd->dep_off), old = *d;
        *d = (uint32_t)tn_rng_below(&rng, algo_rank_len(a, r) + 1);
        pool_changed = *d != old;
      }
      break;
    default:
      if (nd->nchunks) {
        uint32_t *ch = &TN_VEC_AT(&a->ranks[r].chunks, uint32_t, nd->chunk_off), old = *ch;
        *ch = (uint32_t)tn_rng_below(&rng, n * k + 1);
        pool_changed = *ch != old;
      }
    }
    bool breaks_matching =
        msg && (nd->peer != was.peer || nd->tag != was.tag || nd->bytes != was.bytes);
    bool changed = pool_changed || nd->op != was.op || nd->peer != was.peer || nd->tag != was.tag ||
                   nd->bytes != was.bytes || nd->reduce != was.reduce;
    tn_err_t err = {0};
    tn_status_t st = algo_verify(a, NULL, NULL, &err);
    if (st != TN_OK && (st != TN_PARSE || strstr(err.msg, "rank") == NULL))
      fail_msg("iteration %d: status %d: %s", it, (int)st, err.msg);
    if (breaks_matching && st == TN_OK)
      fail_msg("iteration %d: rank %u node %u: peer %d->%d tag %d->%d bytes %llu->%llu accepted",
               it, r, i, was.peer, nd->peer, was.tag, nd->tag, (unsigned long long)was.bytes,
               (unsigned long long)nd->bytes);
    corrupted += changed;
    rejected += changed && st != TN_OK;
    algo_free(a);
  }
  /* Of the corruptions that changed anything, the verifier turned most away. */
  print_message("%u of %u corrupted sets rejected\n", rejected, corrupted);
  assert_true(corrupted > 200);
  assert_true(rejected * 10 >= corrupted * 7);
}

/* n = 200: contribution sets are stored as interval lists (wrapping arcs are two
 * intervals), not bitsets; both verify, and a double count is still found. */
static void verify_handles_interval_sets_of_a_large_ring(void **state) {
  (void)state;
  algo_t *a = NULL;
  TU_OK(algo_ring(TN_REDUCESCATTER, 200, 200 * 64, 1, &a, &tu_err_));
  verify_ok(a, true);
  /* Rank 7's last COMP adds the partial of its reduce-RECV twice. */
  uint32_t last = algo_rank_len(a, 7) - 1;
  uint32_t rv = algo_node_deps(a, 7, algo_node(a, 7, last))[0], deps[2] = {rv, rv};
  edit_t e = {7, last, false, false, deps, 2};
  algo_t *b = copy_edit(a, &e, 1);
  char want[96];
  snprintf(want, sizeof want, "rank 7 node %u: chunk 7 reduced twice with contribution of rank 0",
           last);
  expect_reject(b, want, NULL);
  algo_free(a);
  algo_free(b);
}

/* n = 100 on a 10x10 mesh: the greedy's reduction trees leave partial sums of scattered
 * ranks, stored as bitsets and combined word by word; the set verifies, and a double
 * count is still found. */
static void verify_handles_bitset_sets_of_a_mesh_reduction(void **state) {
  (void)state;
  topo_t *t = NULL;
  TU_OK(topo_gen_kind("mesh", "10x10", 50.0, 500.0, &t, &tu_err_));
  greedy_opts_t g = {.seed = 1, .chunks_per_npu = 2};
  schedule_t s;
  TU_OK(greedy_run_for(t, TN_REDUCESCATTER, 100 * 2 * 4096, &g, &s, &tu_err_));
  algo_t *a = NULL;
  TU_OK(algo_from_schedule(&s, TN_REDUCESCATTER, "greedy", &a, &tu_err_));
  schedule_free(&s);
  verify_ok(a, true);
  /* Rank 7's first COMP that reduces a RECV's partial adds it twice. */
  uint32_t id = 0, rv = UINT32_MAX;
  for (; id < algo_rank_len(a, 7) && rv == UINT32_MAX; id++) {
    const algo_node_t *n = algo_node(a, 7, id);
    if (n->op != ALGO_COMP || n->ndeps == 0) continue;
    for (uint32_t k = 0; k < n->ndeps && rv == UINT32_MAX; k++) {
      uint32_t d = algo_node_deps(a, 7, n)[k];
      if (algo_node(a, 7, d)->op == ALGO_RECV && algo_node(a, 7, d)->reduce) rv = d;
    }
  }
  assert_int_not_equal(rv, UINT32_MAX);
  uint32_t deps[2] = {rv, rv};
  edit_t e = {7, id - 1, false, false, deps, 2};
  algo_t *b = copy_edit(a, &e, 1);
  expect_reject(b, "reduced twice with contribution of rank", NULL);
  algo_free(a);
  algo_free(b);
  topo_free(t);
}

/* The stand-ins of node d as the plain definition walks them: depth first, each node
 * once per walk (stamp), kept nodes appended as met. The reference for algo_drop_gates. */
static void ref_stand_ins(const algo_t *a, uint32_t d, const uint32_t *map, uint32_t *stamp,
                          uint32_t mark, uint32_t *out, uint32_t *n) {
  if (stamp[d] == mark) return;
  stamp[d] = mark;
  if (map[d] != UINT32_MAX) {
    out[(*n)++] = map[d];
    return;
  }
  const algo_node_t *nd = algo_node(a, 0, d);
  for (uint32_t k = 0; k < nd->ndeps; k++)
    ref_stand_ins(a, algo_node_deps(a, 0, nd)[k], map, stamp, mark, out, n);
}

static void drop_gates_lists_stand_ins_in_walk_order(void **state) {
  (void)state;
  tn_rng_t rng;
  tn_rng_seed(&rng, 7);
  for (int round = 0; round < 40; round++) {
    algo_t *a = NULL, *g = NULL;
    TU_OK(algo_create_unknown("gates", 1, &a, &tu_err_));
    uint32_t n = 20 + (uint32_t)tn_rng_below(&rng, 200), map[256], stamp[256] = {0}, kept = 0;
    /* Chains of gates (one dependency: delay chains; several: a gate on the previous
     * gate and more), among kept COMPs of 1 us; dependencies on earlier nodes only. */
    for (uint32_t i = 0; i < n; i++) {
      bool gate = i > 0 && tn_rng_below(&rng, 10) < 6;
      uint32_t deps[4], nd = i == 0 ? 0 : (uint32_t)tn_rng_below(&rng, 4);
      for (uint32_t k = 0; k < nd; k++)
        deps[k] = k == 0 && gate ? i - 1 : (uint32_t)tn_rng_below(&rng, i);
      TU_OK(algo_add_comp(a, 0, gate ? 0 : 1, deps, nd, NULL, 0, NULL, &tu_err_));
      map[i] = gate ? UINT32_MAX : kept++;
    }
    if (kept == 0) map[0] = kept++;
    TU_OK(algo_drop_gates(a, &g, &tu_err_));
    assert_int_equal(algo_rank_len(g, 0), kept);
    for (uint32_t i = 0; i < n; i++) {
      if (map[i] == UINT32_MAX) continue;
      uint32_t want[256], nw = 0;
      const algo_node_t *nd = algo_node(a, 0, i);
      for (uint32_t k = 0; k < nd->ndeps; k++)
        ref_stand_ins(a, algo_node_deps(a, 0, nd)[k], map, stamp, i + 1, want, &nw);
      const algo_node_t *m = algo_node(g, 0, map[i]);
      assert_int_equal(m->ndeps, nw);
      for (uint32_t k = 0; k < nw; k++)
        assert_int_equal(algo_node_deps(g, 0, m)[k], want[k]);
    }
    algo_free(a);
    algo_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ring_baselines_verify_for_2_to_64_npus),
      cmocka_unit_test(direct_baselines_verify_for_2_to_64_npus),
      cmocka_unit_test(ring_allgather_moves_chunk_r_minus_s_to_the_next_rank),
      cmocka_unit_test(ring_allreduce_has_2n_minus_2_steps),
      cmocka_unit_test(baselines_reject_a_size_below_one_byte_per_chunk),
      cmocka_unit_test(baselines_of_one_npu_are_one_idle_node),
      cmocka_unit_test(verify_rejects_an_empty_algorithm),
      cmocka_unit_test(baselines_are_deterministic_and_equal_compares_content),
      cmocka_unit_test(verify_rejects_a_removed_message),
      cmocka_unit_test(verify_rejects_a_changed_size),
      cmocka_unit_test(verify_rejects_a_dependency_cycle),
      cmocka_unit_test(verify_rejects_a_tag_out_of_range),
      cmocka_unit_test(verify_rejects_a_peer_out_of_range),
      cmocka_unit_test(verify_rejects_a_peer_that_is_no_npu_of_the_topology),
      cmocka_unit_test(verify_rejects_a_chunk_missing_at_the_end),
      cmocka_unit_test(verify_rejects_a_contribution_counted_twice),
      cmocka_unit_test(verify_rejects_a_missing_contribution),
      cmocka_unit_test(verify_rejects_a_deadlock),
      cmocka_unit_test(verify_rejects_a_race_on_a_slot),
      cmocka_unit_test(verify_rejects_a_read_racing_a_write),
      cmocka_unit_test(verify_rejects_sending_a_chunk_not_held),
      cmocka_unit_test(verify_rejects_mixed_bookkeeping),
      cmocka_unit_test(verify_without_bookkeeping_checks_matching_only),
      cmocka_unit_test(verify_rejects_a_partial_reduction_at_the_end),
      cmocka_unit_test(verify_rejects_a_recv_listing_other_chunks),
      cmocka_unit_test(verify_rejects_bad_chunk_ids_sizes_and_dependencies),
      cmocka_unit_test(verify_accepts_a_fitting_topology),
      cmocka_unit_test(verify_of_an_unknown_collective_skips_semantics),
      cmocka_unit_test(verify_survives_random_corruptions),
      cmocka_unit_test(verify_handles_interval_sets_of_a_large_ring),
      cmocka_unit_test(verify_handles_bitset_sets_of_a_mesh_reduction),
      cmocka_unit_test(bidirectional_ring_verifies),
      cmocka_unit_test(drop_gates_lists_stand_ins_in_walk_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
