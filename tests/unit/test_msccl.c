/* tests/unit/test_msccl.c — MSCCL-IR import and export (emit/msccl/import.c,
 * emit/msccl/export.c): every fixture (tests/fixtures/msccl_fixtures.py writes them into
 * $TENET_MSCCL_FIXTURES) imports, verifies and simulates; with the argument "corpus" the
 * same for every file of an external corpus in $TENET_MSCCL_CORPUS (exit 77, skipped,
 * when it is not set); the ring
 * imports match tenet's Ring baseline and ASTRA-sim's figure; export → import is exact;
 * every error class names gpu, tb and step. Parts that need the verifier, the simulator
 * or the baselines skip (and say so) while those are link placeholders. */
#include "testutil.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "emit/emit.h"
#include "greedy/greedy.h"
#include "sim/sim.h"
#include "topo/topo.h"

static tn_err_t tu_err_;

#define MiB 1048576u
#define SKIPPED 77 /* ctest's SKIP_RETURN_CODE for this test */

/* Where the fixtures are: $TENET_MSCCL_FIXTURES (ctest sets it; the fixtures test writes
 * the files there first). */
static const char *fixture_dir(void) {
  const char *d = getenv("TENET_MSCCL_FIXTURES");
  if (d == NULL || *d == '\0') fail_msg("TENET_MSCCL_FIXTURES is not set (run through ctest)");
  return d;
}

static char *data_path(const char *name) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", fixture_dir(), name);
  return buf;
}

static algo_t *import_path(const char *path, uint64_t size, uint64_t comp_us) {
  algo_t *a = NULL;
  emit_msccl_opts_t o = {comp_us, NULL};
  tn_err_clear(&tu_err_);
  TU_OK(emit_msccl_import_opts(path, size, &o, &a, &tu_err_));
  return a;
}

static algo_t *import_file(const char *name, uint64_t size, uint64_t comp_us) {
  return import_path(data_path(name), size, comp_us);
}

static algo_t *import_str(const char *xml, uint64_t size, tn_status_t *st) {
  algo_t *a = NULL;
  tn_err_clear(&tu_err_);
  *st = emit_msccl_import_mem(xml, strlen(xml), "t.xml", size, &a, &tu_err_);
  return a;
}

static topo_t *ring(uint32_t n) {
  topo_t *t = NULL;
  topo_dim_t d = {TOPO_DIM_RING, n, 50.0, 500.0, false};
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("ring", &d, 1, &t, &tu_err_));
  return t;
}

static topo_t *fc(uint32_t n) {
  topo_t *t = NULL;
  topo_dim_t d = {TOPO_DIM_FC, n, 50.0, 500.0, false};
  tn_err_clear(&tu_err_);
  TU_OK(topo_gen("fc", &d, 1, &t, &tu_err_));
  return t;
}

/* Runs the verifier; the test fails unless a verifies with its semantics checked. */
static bool verify_ok(const algo_t *a, const topo_t *t) {
  algo_verify_report_t rep = {0};
  tn_err_t err = {0};
  tn_status_t st = algo_verify(a, t, &rep, &err);
  if (st != TN_OK) fail_msg("verify: %s", err.msg);
  assert_true(rep.semantics_checked);
  return true;
}

/* Simulated time in ps; the test fails when a does not simulate. */
static uint64_t sim_ps(const topo_t *t, const algo_t *a) {
  sim_result_t r = {0};
  tn_err_t err = {0};
  tn_status_t st = sim_run(t, a, NULL, &r, &err);
  if (st != TN_OK) fail_msg("sim: %s", err.msg);
  uint64_t ps = r.time_ps;
  sim_result_free(&r);
  assert_true(ps > 0);
  return ps;
}

static uint32_t count_op(const algo_t *a, uint32_t r, algo_op_t op) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < algo_rank_len(a, r); i++)
    c += algo_node(a, r, i)->op == op;
  return c;
}

/* ---- shipped files ------------------------------------------------------- */

/* Imports every .xml file of dir: each verifies (semantics checked) and simulates on a
 * fully connected fabric. Returns how many there were. */
static unsigned import_every_file(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) fail_msg("cannot open %s", dir);
  struct dirent *e;
  unsigned files = 0;
  char path[2048];
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".xml") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    algo_t *a = import_path(path, MiB, 0);
    assert_true(a->has_coll);
    assert_true(algo_send_count(a) > 0);
    for (uint32_t r = 0; r < a->npus; r++)
      for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
        const algo_node_t *n = algo_node(a, r, i);
        if (n->op != ALGO_COMP) assert_true(n->bytes > 0 && n->nchunks > 0);
        assert_true(n->tag >= 0 && n->tag <= ALGO_MAX_TAG);
      }
    topo_t *t = fc(a->npus);
    if (verify_ok(a, t)) print_message("%s verifies\n", e->d_name);
    uint64_t ps = sim_ps(t, a);
    if (ps) print_message("%s: %.3f us on fc-%u\n", e->d_name, (double)ps / 1e6, a->npus);
    topo_free(t);
    algo_free(a);
    files++;
  }
  closedir(d);
  return files;
}

static void msccl_import_reads_verifies_and_simulates_every_fixture(void **state) {
  (void)state;
  assert_true(import_every_file(fixture_dir()) >= 12);
}

/* Only with the argument "corpus": real files from public repositories, when
 * TENET_MSCCL_CORPUS names a folder of them. */
static void msccl_import_reads_verifies_and_simulates_every_corpus_file(void **state) {
  (void)state;
  const char *dir = getenv("TENET_MSCCL_CORPUS");
  assert_true(import_every_file(dir) >= 1);
}

static void msccl_import_splits_fused_ring_allreduce_like_collectiveapi(void **state) {
  (void)state;
  /* collectiveapi: 14 SEND + 14 RECV + 7 COMP of 7 us per rank, every message 131,072 B,
   * one serial chain per rank. */
  const char *files[] = {"mscclang_allreduce_ring_8gpu_1ch_1inst.xml"};
  algo_t *a = import_file(files[0], MiB, 7);
  assert_int_equal(a->coll, TN_ALLREDUCE);
  assert_int_equal(a->chunks_per_npu, 1);
  for (uint32_t r = 0; r < 8; r++) {
    assert_int_equal(count_op(a, r, ALGO_SEND), 14);
    assert_int_equal(count_op(a, r, ALGO_RECV), 14);
    assert_int_equal(count_op(a, r, ALGO_COMP), 7);
    for (uint32_t i = 0; i < algo_rank_len(a, r); i++) {
      const algo_node_t *n = algo_node(a, r, i);
      if (n->op == ALGO_COMP)
        assert_int_equal(n->duration_us, 7);
      else
        assert_int_equal(n->bytes, 131072);
      /* One chain: node i depends on exactly node i-1. */
      if (i == 0)
        assert_int_equal(n->ndeps, 0);
      else {
        assert_int_equal(n->ndeps, 1);
        assert_int_equal(algo_node_deps(a, r, n)[0], i - 1);
      }
    }
  }
  algo_free(a);
}

static void msccl_import_unfused_and_fused_ring_allreduce_agree(void **state) {
  (void)state;
  algo_t *f = import_file("mscclang_allreduce_ring_4gpu_1ch_1inst.xml", MiB, 7);
  algo_t *u = import_file("mscclang_allreduce_ring_4gpu_unfused_collectiveapi_style.xml", MiB, 7);
  /* rrs = RECV -> COMP -> SEND and rrc; s produce the same chain. */
  assert_true(algo_equal(f, u));
  algo_free(f);
  algo_free(u);
}

static void msccl_import_folds_nops_into_dependencies(void **state) {
  (void)state;
  /* gpu 0 tb 0 of the Direct All-Reduce: nop(tb2.1), nop(tb3.1), re(tb1.1), re, re: one
   * COMP depending on the three reduce RECVs. */
  algo_t *a = import_file("mscclang_allreduce_allpairs_4gpu_1inst.xml", MiB, 0);
  const algo_node_t *n = algo_node(a, 0, 0);
  assert_int_equal(n->op, ALGO_COMP);
  assert_int_equal(n->ndeps, 3);
  for (uint32_t k = 0; k < 3; k++) {
    const algo_node_t *d = algo_node(a, 0, algo_node_deps(a, 0, n)[k]);
    assert_int_equal(d->op, ALGO_RECV);
    assert_true(d->reduce);
  }
  assert_int_equal(n->nchunks, 1);
  assert_int_equal(algo_node_chunks(a, 0, n)[0], 0);
  algo_free(a);
}

static void msccl_import_sizes_messages_from_the_collective_buffer(void **state) {
  (void)state;
  /* Out-of-place All-Gather, o_chunks 16 on 4 GPUs: a chunk is S/16. */
  algo_t *a = import_file("out_of_place_allgather_4gpu_4ch.xml", 16 * 1000, 0);
  assert_int_equal(a->chunks_per_npu, 4);
  for (uint32_t i = 0; i < algo_rank_len(a, 0); i++)
    if (algo_node(a, 0, i)->op == ALGO_SEND) assert_int_equal(algo_node(a, 0, i)->bytes, 1000);
  algo_free(a);
  /* All-Reduce, i_chunks 64 on 8 GPUs (K = 8). */
  a = import_file("allpairs_allreduce_8gpu.xml", 64 * 100, 0);
  assert_int_equal(a->chunks_per_npu, 8);
  algo_free(a);
}

static void msccl_import_reports_the_xml_step_of_every_node(void **state) {
  (void)state;
  emit_msccl_origin_t org = {0};
  emit_msccl_opts_t o = {0, &org};
  algo_t *a = NULL;
  TU_OK(emit_msccl_import_opts(data_path("mscclang_allreduce_ring_4gpu_1ch_1inst.xml"), MiB, &o, &a,
                               &tu_err_));
  assert_int_equal(org.npus, 4);
  /* gpu 0: s | rrs = RECV, COMP, SEND | ...: node 3 is the SEND of step 1 (line 5). */
  assert_int_equal(org.at[0][3].tb, 0);
  assert_int_equal(org.at[0][3].step, 1);
  assert_int_equal(org.at[0][3].line, 5);
  assert_int_equal(org.at[0][0].step, 0);
  emit_msccl_origin_free(&org);
  emit_msccl_origin_free(&org); /* safe twice */
  algo_free(a);
}

/* ---- timing ---------------------------------------------------------------- */

static void msccl_ring_allgather_import_times_like_the_ring_baseline(void **state) {
  (void)state;
  uint64_t size = 8 * MiB;
  algo_t *m = import_file("mscclang_allgather_ring_8gpu_1ch_1inst.xml", size, 0);
  algo_t *b = NULL;
  tn_err_t err = {0};
  if (algo_ring(TN_ALLGATHER, 8, size, 1, &b, &err) != TN_OK) fail_msg("ring: %s", err.msg);
  topo_t *t = ring(8);
  uint64_t pm = sim_ps(t, m), pb = sim_ps(t, b);
  if (pm && pb) {
    print_message("MSCCLang ring AG %.3f us, tenet Ring %.3f us\n", (double)pm / 1e6,
                  (double)pb / 1e6);
    assert_int_equal(pm, pb);
    /* docs/chakra-format.md: 140,217 ns for 1 MiB shards on a ring of 8. */
    assert_true(pm > 140217000 - 701000 && pm < 140217000 + 701000);
  }
  topo_free(t);
  algo_free(m);
  algo_free(b);
}

static void msccl_ring_allreduce_collectiveapi_way_matches_astrasim(void **state) {
  (void)state;
  const char *files[] = {"mscclang_allreduce_ring_8gpu_1ch_1inst.xml"};
  algo_t *a = import_file(files[0], MiB, 7);
  topo_t *t = ring(8);
  uint64_t ps = sim_ps(t, a);
  if (ps) {
    double ns = (double)ps / 1e3;
    print_message("ring All-Reduce (7 us COMP, 1 MiB) on ring-8: %.1f ns (ASTRA-sim 90,174)\n", ns);
    assert_true(ns > 90174.0 * 0.995 && ns < 90174.0 * 1.005);
  }
  topo_free(t);
  algo_free(a);
}

/* ---- export ---------------------------------------------------------------- */

static void round_trip(const algo_t *a, uint64_t comp_us) {
  char *x1 = NULL, *x2 = NULL;
  size_t l1 = 0, l2 = 0;
  algo_t *b = NULL;
  emit_msccl_opts_t o = {comp_us, NULL};
  tn_err_clear(&tu_err_);
  TU_OK(emit_msccl_export_mem(a, &x1, &l1, &tu_err_));
  TU_OK(emit_msccl_import_mem_opts(x1, l1, "rt.xml", a->size_bytes, &o, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  /* Deterministic: the same algorithm gives the same bytes. */
  TU_OK(emit_msccl_export_mem(a, &x2, &l2, &tu_err_));
  assert_int_equal(l1, l2);
  assert_memory_equal(x1, x2, l1);
  free(x1);
  free(x2);
  algo_free(b);
}

static void msccl_export_round_trip_is_exact_on_imported_files(void **state) {
  (void)state;
  const char *files[] = {
      "mscclang_allgather_ring_8gpu_1ch_1inst.xml",
      "mscclang_allgather_allpairs_4gpu_1inst.xml",
      "mscclang_allreduce_ring_8gpu_1ch_1inst.xml",
      "hierarchical_allgather_8gpu.xml",
      "ring_allreduce_8gpu_4ch.xml",
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    algo_t *a = import_file(files[i], MiB, 7);
    round_trip(a, 7);
    algo_free(a);
  }
}

/* Ring (which == 0) or Direct baseline of coll on n ranks; fails the test on error. */
static algo_t *baseline(int which, tn_coll_t coll, uint32_t n, uint64_t size, uint32_t k) {
  algo_t *a = NULL;
  tn_err_t err = {0};
  tn_status_t st =
      which == 0 ? algo_ring(coll, n, size, k, &a, &err) : algo_direct(coll, n, size, k, &a, &err);
  if (st != TN_OK) fail_msg("baseline: %s", err.msg);
  return a;
}

static void msccl_export_round_trip_is_exact_on_baselines(void **state) {
  (void)state;
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (int which = 0; which < 2; which++)
    for (size_t c = 0; c < 3; c++)
      for (uint32_t k = 1; k <= 2; k++) {
        algo_t *a = baseline(which, colls[c], 6, 6 * MiB, k);
        uint64_t comp = 0;
        for (uint32_t i = 0; i < algo_rank_len(a, 0); i++)
          if (algo_node(a, 0, i)->op == ALGO_COMP) comp = algo_node(a, 0, i)->duration_us;
        round_trip(a, comp);
        topo_t *t = ring(6);
        char *x = NULL;
        size_t l = 0;
        algo_t *b = NULL;
        emit_msccl_opts_t o = {comp, NULL};
        TU_OK(emit_msccl_export_mem(a, &x, &l, &tu_err_));
        TU_OK(emit_msccl_import_mem_opts(x, l, "rt.xml", a->size_bytes, &o, &b, &tu_err_));
        assert_int_equal(sim_ps(t, a), sim_ps(t, b));
        free(x);
        algo_free(b);
        topo_free(t);
        algo_free(a);
      }
}

static void msccl_export_round_trip_is_exact_on_greedy(void **state) {
  (void)state;
  const char *kinds[][2] = {{"ring", "6"}, {"fc", "5"}, {"mesh", "3x3"}, {"torus", "3x3"}};
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (uint32_t cpn = 0; cpn <= 2; cpn += 2) {
      topo_t *t = NULL;
      TU_OK(topo_gen_kind(kinds[k][0], kinds[k][1], 50.0, 500.0, &t, &tu_err_));
      schedule_t sch;
      greedy_opts_t go = {.seed = 7, .chunks_per_npu = cpn};
      tn_err_t err = {0};
      uint64_t size = (uint64_t)t->npus * 4 * MiB;
      tn_status_t st = greedy_run(t, size, &go, &sch, &err);
      if (st != TN_OK) fail_msg("greedy: %s", err.msg);
      for (size_t c = 0; c < 3; c++) {
        algo_t *a = NULL;
        TU_OK(algo_from_schedule(&sch, colls[c], "greedy", &a, &tu_err_));
        round_trip(a, 0);
        char *x = NULL;
        size_t l = 0;
        algo_t *b = NULL;
        TU_OK(emit_msccl_export_mem(a, &x, &l, &tu_err_));
        TU_OK(emit_msccl_import_mem(x, l, "rt.xml", a->size_bytes, &b, &tu_err_));
        verify_ok(b, t);
        assert_int_equal(sim_ps(t, a), sim_ps(t, b));
        free(x);
        algo_free(b);
        algo_free(a);
      }
      schedule_free(&sch);
      topo_free(t);
    }
}

/* A producer name read from foreign files may hold XML's special characters: both export
 * modes write it so that the XML still parses (and imports back). */
static void msccl_export_keeps_the_xml_well_formed_whatever_the_producer_name(void **state) {
  (void)state;
  algo_t *a = baseline(0, TN_ALLREDUCE, 4, 4 * MiB, 1);
  snprintf(a->name, sizeof a->name, "%s", "r&<--\"x");
  for (int exact = 0; exact < 2; exact++) {
    emit_msccl_export_opts_t o = {exact != 0, false, {0, 0, 0, 0, 0}, 0};
    char *x = NULL;
    size_t l = 0;
    algo_t *b = NULL;
    TU_OK(emit_msccl_export_mem_opts(a, &o, &x, &l, NULL, &tu_err_));
    assert_non_null(strstr(x, "name=\"tenet_r_____x_allreduce\""));
    TU_OK(emit_msccl_import_mem(x, l, "rt.xml", a->size_bytes, &b, &tu_err_));
    free(x);
    algo_free(b);
  }
  algo_free(a);
}

static void msccl_export_rejects_foreign_sets_without_bookkeeping(void **state) {
  (void)state;
  algo_t *a = NULL;
  tn_err_t err = {0};
  TU_OK(algo_create_unknown("chakra", 2, &a, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 0, 100, NULL, 0, NULL, 0, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 100, false, NULL, 0, NULL, 0, NULL, &tu_err_));
  char *x = NULL;
  size_t l = 0;
  assert_int_equal(emit_msccl_export_mem(a, &x, &l, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "bookkeeping"));
  assert_null(x);
  algo_free(a);
}

static void msccl_export_writes_the_file_all_or_nothing(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("msccl_export");
  assert_non_null(dir);
  char path[1100];
  snprintf(path, sizeof path, "%s/sub/ring.xml", dir);
  algo_t *a = import_file("mscclang_allgather_ring_4gpu_1ch_1inst.xml", MiB, 0);
  TU_OK(emit_msccl_export(a, path, &tu_err_));
  algo_t *b = NULL;
  TU_OK(emit_msccl_import(path, MiB, &b, &tu_err_));
  assert_true(algo_equal(a, b));
  algo_free(a);
  algo_free(b);
}

/* ---- runtime-fit export ------------------------------------------------------ */

/* What a runtime checks of a tb layout, read back from the XML: tb ids 0..n-1 per GPU, at
 * most lim tbs per GPU, channels < 32, steps numbered 0..k-1 and at most 64 per tb, one tb
 * per (channel, send peer) and per (channel, receive peer), sends only in tbs with a send
 * peer, receives only in tbs with a receive peer, at most 32 sending (and receiving) tbs
 * per channel. *max_tbs gets the most tbs of a GPU. */
static void check_runtime_limits(const char *xml, uint32_t *max_tbs, uint32_t *max_chan) {
  enum { MAXT = 256 };
  int send[MAXT], recv[MAXT], chan[MAXT];
  int ntb = 0, nsteps = 0, cur_send = -1, cur_recv = -1, id = 0, s = 0;
  *max_tbs = 0;
  *max_chan = 0;
  for (const char *p = xml; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    while (*p == ' ')
      p++;
    if (strncmp(p, "<gpu ", 5) == 0) ntb = 0;
    if (strncmp(p, "</gpu>", 6) == 0) {
      /* one tb per (channel, peer) and direction; at most 32 per channel and direction */
      for (int i = 0; i < ntb; i++) {
        int ns = 0, nr = 0;
        for (int j = 0; j < ntb; j++) {
          if (chan[j] != chan[i]) continue;
          ns += send[j] >= 0;
          nr += recv[j] >= 0;
          if (j != i && send[i] >= 0) assert_false(send[j] == send[i]);
          if (j != i && recv[i] >= 0) assert_false(recv[j] == recv[i]);
        }
        assert_true(ns <= EMIT_MSCCL_MAX_TBS_PER_CHANNEL && nr <= EMIT_MSCCL_MAX_TBS_PER_CHANNEL);
      }
      if ((uint32_t)ntb > *max_tbs) *max_tbs = (uint32_t)ntb;
    }
    if (strncmp(p, "<tb ", 4) == 0) {
      assert_int_equal(sscanf(p, "<tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\"", &id,
                              &cur_send, &cur_recv, &chan[ntb]),
                       4);
      assert_int_equal(id, ntb);
      assert_true(ntb < MAXT && chan[ntb] >= 0 && chan[ntb] < EMIT_MSCCL_MAX_CHANNELS);
      if ((uint32_t)chan[ntb] > *max_chan) *max_chan = (uint32_t)chan[ntb];
      send[ntb] = cur_send;
      recv[ntb] = cur_recv;
      ntb++;
      nsteps = 0;
    }
    if (strncmp(p, "<step ", 6) == 0) {
      char type[8] = "";
      assert_int_equal(sscanf(p, "<step s=\"%d\" type=\"%7[a-z]\"", &s, type), 2);
      assert_int_equal(s, nsteps);
      nsteps++;
      assert_true(nsteps <= EMIT_MSCCL_MAX_STEPS);
      bool sends = strcmp(type, "s") == 0 || strcmp(type, "rcs") == 0 || strcmp(type, "rrs") == 0 ||
                   strcmp(type, "rrcs") == 0;
      bool recvs = type[0] == 'r' && strcmp(type, "re") != 0;
      if (sends) assert_true(cur_send >= 0);
      if (recvs) assert_true(cur_recv >= 0);
    }
  }
  assert_true(*max_tbs <= EMIT_MSCCL_MAX_TBS);
}

/* Runtime-fit export of a: deterministic, within the limits, imports, verifies on t and
 * simulates; returns the simulated time of the import (0 when the simulator is missing). */
static uint64_t runtime_round(const algo_t *a, const topo_t *t, emit_msccl_export_stats_t *st) {
  emit_msccl_export_opts_t o = {false, false, {0, 0, 0, 0, 0}, 0};
  char *x1 = NULL, *x2 = NULL;
  size_t l1 = 0, l2 = 0;
  tn_err_clear(&tu_err_);
  TU_OK(emit_msccl_export_mem_opts(a, &o, &x1, &l1, st, &tu_err_));
  TU_OK(emit_msccl_export_mem_opts(a, &o, &x2, &l2, NULL, &tu_err_));
  assert_int_equal(l1, l2);
  assert_memory_equal(x1, x2, l1);
  uint32_t tbs = 0, ch = 0;
  check_runtime_limits(x1, &tbs, &ch);
  assert_int_equal(tbs, st->tbs_max);
  assert_true(ch < st->channels && st->channels <= EMIT_MSCCL_MAX_CHANNELS);
  assert_true(st->steps_max <= EMIT_MSCCL_MAX_STEPS);
  algo_t *b = NULL;
  TU_OK(emit_msccl_import_mem(x1, l1, "rt.xml", a->size_bytes, &b, &tu_err_));
  verify_ok(b, t);
  uint64_t ps = sim_ps(t, b);
  free(x1);
  free(x2);
  algo_free(b);
  return ps;
}

static void msccl_runtime_export_of_baselines_fits_imports_and_verifies(void **state) {
  (void)state;
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (int which = 0; which < 2; which++)
    for (size_t c = 0; c < 3; c++)
      for (uint32_t k = 1; k <= 2; k++) {
        algo_t *a = baseline(which, colls[c], 8, 8 * MiB, k);
        topo_t *t = which == 0 ? ring(8) : fc(8);
        emit_msccl_export_stats_t rs = {0};
        uint64_t rt = runtime_round(a, t, &rs);
        /* Ring: one tb per GPU and direction pair, every forward fused, same time as the
         * set; Direct: one tb per peer, no fusion possible. */
        if (which == 0) {
          assert_true(rs.tbs_max <= 2 * rs.channels);
          assert_true(rs.fused > 0);
          assert_int_equal(rt, sim_ps(t, a));
        } else {
          assert_int_equal(rs.tbs_max, 7);
        }
        topo_free(t);
        algo_free(a);
      }
}

static void msccl_runtime_export_of_greedy_fits_imports_and_verifies(void **state) {
  (void)state;
  const char *kinds[][2] = {{"ring", "8"}, {"mesh", "2x4"}, {"torus", "4x4"}, {"fc", "8"}};
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    topo_t *t = NULL;
    TU_OK(topo_gen_kind(kinds[k][0], kinds[k][1], 50.0, 500.0, &t, &tu_err_));
    schedule_t sch;
    greedy_opts_t go = {.seed = 7};
    tn_err_t err = {0};
    tn_status_t st = greedy_run(t, (uint64_t)t->npus * MiB, &go, &sch, &err);
    if (st != TN_OK) fail_msg("greedy: %s", err.msg);
    for (size_t c = 0; c < 3; c++) {
      algo_t *a = NULL;
      TU_OK(algo_from_schedule(&sch, colls[c], "greedy", &a, &tu_err_));
      emit_msccl_export_stats_t rs = {0};
      runtime_round(a, t, &rs);
      algo_free(a);
    }
    schedule_free(&sch);
    topo_free(t);
  }
}

/* The exact form needs one tb per node; the runtime-fit form of the same Ring All-Reduce
 * has a few, and both import to algorithms that verify. */
static void msccl_runtime_export_uses_far_fewer_threadblocks_than_exact(void **state) {
  (void)state;
  algo_t *a = NULL;
  tn_err_t err = {0};
  tn_status_t st = algo_ring(TN_ALLREDUCE, 8, 8 * MiB, 1, &a, &err);
  TU_OK(st);
  emit_msccl_export_opts_t ex = {true, false, {0, 0, 0, 0, 0}, 0};
  emit_msccl_export_stats_t se = {0}, sr = {0};
  char *x = NULL;
  size_t l = 0;
  TU_OK(emit_msccl_export_mem_opts(a, &ex, &x, &l, &se, &tu_err_));
  free(x);
  topo_t *t = ring(8);
  runtime_round(a, t, &sr);
  assert_int_equal(se.tbs_max, 35); /* the exact form: one tb per node */
  assert_int_equal(se.channels, 14);
  assert_true(sr.tbs_max <= 4 && sr.channels <= 2);
  topo_free(t);
  algo_free(a);
}

static void msccl_runtime_export_refuses_what_exceeds_the_limits(void **state) {
  (void)state;
  algo_t *a = NULL;
  tn_err_t err = {0};
  tn_status_t st = algo_direct(TN_ALLGATHER, 8, 8 * MiB, 1, &a, &err);
  TU_OK(st);
  char *x = NULL;
  size_t l = 0;
  /* Direct needs 7 tbs per GPU (one per peer). */
  emit_msccl_export_opts_t o = {false, false, {0, 6, 0, 0, 0}, 0};
  assert_int_equal(emit_msccl_export_mem_opts(a, &o, &x, &l, NULL, &err), TN_LIMIT);
  assert_non_null(strstr(err.msg, "threadblocks (limit 6)"));
  assert_null(x);
  /* Ring All-Reduce with K = 2 has 28 steps on one tb with 1 channel, 14 with 2. */
  algo_free(a);
  a = NULL;
  TU_OK(algo_ring(TN_ALLREDUCE, 8, 8 * MiB, 2, &a, &tu_err_));
  emit_msccl_export_opts_t o2 = {false, false, {1, 0, 0, 3, 0}, 0};
  tn_err_clear(&err);
  assert_int_equal(emit_msccl_export_mem_opts(a, &o2, &x, &l, NULL, &err), TN_LIMIT);
  assert_non_null(strstr(err.msg, "steps (limit 3 per threadblock)"));
  assert_null(x);
  /* Chunks per step. */
  emit_msccl_export_opts_t o3 = {false, false, {0, 0, 0, 0, 1}, 0};
  algo_free(a);
  a = NULL;
  tn_err_clear(&err);
  TU_OK(algo_create("t", TN_ALLGATHER, 2, 2, 4 * MiB, &a, &tu_err_));
  const uint32_t c01[] = {0, 1}, c23[] = {2, 3};
  TU_OK(algo_add_send(a, 0, 1, 0, 2 * MiB, NULL, 0, c01, 2, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, 2 * MiB, false, NULL, 0, c01, 2, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 1, 0, 0, 2 * MiB, NULL, 0, c23, 2, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 0, 1, 0, 2 * MiB, false, NULL, 0, c23, 2, NULL, &tu_err_));
  assert_int_equal(emit_msccl_export_mem_opts(a, &o3, &x, &l, NULL, &err), TN_LIMIT);
  assert_non_null(strstr(err.msg, "rank 0 node 0: moves 2 chunks"));
  algo_free(a);
}

/* Rank 1 takes the second message before the first: with one buffered message per
 * connection that deadlocks on one channel (refused, naming the second send, which never
 * runs), and fits on two. */
static void msccl_runtime_export_refuses_what_could_deadlock(void **state) {
  (void)state;
  algo_t *a = NULL;
  tn_err_t err = {0};
  TU_OK(algo_create("t", TN_ALLGATHER, 2, 2, 4 * MiB, &a, &tu_err_));
  const uint32_t c0[] = {0}, c1[] = {1}, c2[] = {2}, c3[] = {3}, d0[] = {0};
  TU_OK(algo_add_send(a, 0, 1, 0, MiB, NULL, 0, c0, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 0, 1, 1, MiB, NULL, 0, c1, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 0, 1, 0, MiB, false, NULL, 0, c2, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 0, 1, 1, MiB, false, NULL, 0, c3, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 1, MiB, false, NULL, 0, c1, 1, NULL, &tu_err_));
  TU_OK(algo_add_recv(a, 1, 0, 0, MiB, false, d0, 1, c0, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 1, 0, 0, MiB, NULL, 0, c2, 1, NULL, &tu_err_));
  TU_OK(algo_add_send(a, 1, 0, 1, MiB, NULL, 0, c3, 1, NULL, &tu_err_));
  char *x = NULL;
  size_t l = 0;
  emit_msccl_export_opts_t one = {false, false, {1, 0, 0, 0, 0}, 0};
  assert_int_equal(emit_msccl_export_mem_opts(a, &one, &x, &l, NULL, &err), TN_INFEASIBLE);
  assert_non_null(strstr(err.msg, "deadlock"));
  assert_non_null(strstr(err.msg, "rank 0 node 1: never runs"));
  assert_null(x);
  emit_msccl_export_opts_t two = {false, false, {0, 0, 0, 0, 0}, 0};
  emit_msccl_export_stats_t st = {0};
  TU_OK(emit_msccl_export_mem_opts(a, &two, &x, &l, &st, &tu_err_));
  assert_int_equal(st.channels, 2);
  algo_t *b = NULL;
  TU_OK(emit_msccl_import_mem(x, l, "rt.xml", a->size_bytes, &b, &tu_err_));
  free(x);
  algo_free(b);
  algo_free(a);
}

/* ---- hand-written programs ------------------------------------------------------ */

/* A 2-GPU Reduce-Scatter (1 chunk each): each GPU sends the other's chunk and reduces the
 * one it receives. */
#define RS2(coll)                                                                                  \
  "<algo name=\"rs\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" "           \
  "coll=\"" coll "\" inplace=\"1\">\n"                                                             \
  " <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">\n"                                 \
  "  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"                                             \
  "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "     \
  "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"                                                      \
  "   <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" "             \
  "cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"                                            \
  "  </tb>\n </gpu>\n"                                                                             \
  " <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">\n"                                 \
  "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"                                             \
  "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "     \
  "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"                                                      \
  "   <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" "             \
  "cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"                                            \
  "  </tb>\n </gpu>\n</algo>\n"

static void msccl_import_accepts_both_reduce_scatter_spellings(void **state) {
  (void)state;
  tn_status_t st;
  algo_t *a = import_str(RS2("reduce_scatter"), 2000, &st);
  TU_OK(st);
  algo_t *b = import_str(RS2("reducescatter"), 2000, &st);
  TU_OK(st);
  assert_int_equal(a->coll, TN_REDUCESCATTER);
  assert_true(algo_equal(a, b));
  assert_int_equal(algo_node(a, 0, 0)->bytes, 1000);
  assert_true(algo_node(a, 0, 1)->reduce);
  topo_t *t = ring(2);
  verify_ok(a, t);
  round_trip(a, 0);
  topo_free(t);
  algo_free(a);
  algo_free(b);
}

/* An MSCCL alltoall (all pairs, 2 pieces per block, out of place) imports as tenet's
 * All-to-All: chunks per NPU n * K, every NPU ending with what was addressed to it; a
 * program that sends a piece to the wrong output slot is refused, naming the slot. */
static void msccl_import_reads_alltoall(void **state) {
  (void)state;
  algo_t *a = import_file("allpairs_alltoall_4gpu_2chunks.xml", 8 * 1000, 0);
  assert_int_equal(a->coll, TN_ALLTOALL);
  assert_int_equal(a->chunks_per_npu, 8);
  topo_t *t = fc(4);
  verify_ok(a, t);
  /* Each NPU's 8000 B buffer is 8 pieces of 1000 B (4 peers x 2). */
  for (uint32_t i = 0; i < algo_rank_len(a, 0); i++)
    if (algo_node(a, 0, i)->op == ALGO_SEND) assert_int_equal(algo_node(a, 0, i)->bytes, 1000);
  sim_ps(t, a);
  const char *bad =
      "<algo name=\"x\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"alltoall\" inplace=\"0\">"
      "<gpu id=\"0\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">"
      "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">"
      "<step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/></tb>"
      "<tb id=\"1\" send=\"1\" recv=\"1\" chan=\"0\">"
      "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>"
      "<step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/></tb></gpu>"
      "<gpu id=\"1\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">"
      "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">"
      "<step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/></tb>"
      "<tb id=\"1\" send=\"0\" recv=\"0\" chan=\"0\">"
      "<step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>"
      "<step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/></tb></gpu></algo>";
  tn_status_t st;
  algo_t *b = import_str(bad, 4000, &st);
  assert_int_equal(st, TN_PARSE);
  assert_null(b);
  assert_non_null(strstr(tu_err_.msg, "output slot"));
  topo_free(t);
  algo_free(a);
}

/* All-to-All exports out of place (exact form): the greedy's relayed pieces and Direct's
 * come back with every node as written plus one pure-time COMP per rank (the cpy of the
 * piece a rank keeps), verify, and simulate in the same time. The runtime-fit form of the
 * same sets keeps within the runtime's limits, imports and verifies (runtime_round). */
static void msccl_export_alltoall_round_trips(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    topo_t *t = tu_random_fabric(3 + (uint32_t)(seed % 5), seed, seed % 2 == 0);
    uint64_t size = (uint64_t)t->npus * 4096;
    algo_t *a = NULL;
    if (seed % 3 == 0) {
      TU_OK(algo_direct(TN_ALLTOALL, t->npus, size, 2, &a, &tu_err_));
    } else {
      greedy_opts_t g = {.chunks_per_npu = 1 + (uint32_t)(seed % 2)};
      schedule_t sc;
      TU_OK(greedy_alltoall(t, size, &g, &sc, &tu_err_));
      TU_OK(algo_from_schedule(&sc, TN_ALLTOALL, "greedy", &a, &tu_err_));
      schedule_free(&sc);
    }
    TU_OK(algo_fill_idle(a, &tu_err_));
    char *x = NULL;
    size_t l = 0;
    TU_OK(emit_msccl_export_mem(a, &x, &l, &tu_err_));
    algo_t *b = NULL;
    TU_OK(emit_msccl_import_mem(x, l, "a2a.xml", size, &b, &tu_err_));
    assert_int_equal(b->coll, TN_ALLTOALL);
    for (uint32_t r = 0; r < a->npus; r++) {
      uint32_t la = algo_rank_len(a, r), lb = algo_rank_len(b, r);
      assert_true(lb == la + 1 || (lb == la && la == 1));
      const algo_node_t *last = algo_node(b, r, lb - 1);
      assert_true(last->op == ALGO_COMP && last->nchunks == 0 && last->ndeps == 0);
      for (uint32_t i = 0; i + 1 < lb; i++) {
        const algo_node_t *p = algo_node(a, r, i), *q = algo_node(b, r, i);
        assert_int_equal(p->op, q->op);
        assert_int_equal(p->peer, q->peer);
        assert_int_equal(p->bytes, q->bytes);
      }
    }
    verify_ok(b, t);
    assert_int_equal(sim_ps(t, a), sim_ps(t, b));
    emit_msccl_export_stats_t rs = {0};
    runtime_round(a, t, &rs);
    free(x);
    algo_free(a);
    algo_free(b);
    topo_free(t);
  }
}

/* The greedy All-to-All on a 4x4 mesh relays most pieces through NPUs: runtime-fit, each
 * relay is one rcs step into scratch (so some steps fuse and some pieces sit in scratch),
 * every GPU copies the piece it keeps in one cpy, and the whole uses far fewer
 * threadblocks than the exact form's one per node. */
static void msccl_runtime_export_of_alltoall_relays_through_scratch(void **state) {
  (void)state;
  topo_t *t = NULL;
  TU_OK(topo_gen_kind("mesh", "4x4", 50.0, 500.0, &t, &tu_err_));
  greedy_opts_t g = {.chunks_per_npu = 2};
  schedule_t sc;
  algo_t *a = NULL;
  TU_OK(greedy_alltoall(t, 16 * MiB, &g, &sc, &tu_err_));
  TU_OK(algo_from_schedule(&sc, TN_ALLTOALL, "greedy", &a, &tu_err_));
  schedule_free(&sc);
  emit_msccl_export_stats_t rs = {0}, es = {0};
  runtime_round(a, t, &rs);
  emit_msccl_export_opts_t fit = {.exact = false}, ex = {.exact = true};
  char *x = NULL, *y = NULL;
  size_t l = 0, ly = 0;
  TU_OK(emit_msccl_export_mem_opts(a, &fit, &x, &l, NULL, &tu_err_));
  TU_OK(emit_msccl_export_mem_opts(a, &ex, &y, &ly, &es, &tu_err_));
  assert_true(rs.fused > 0);
  assert_non_null(strstr(x, "type=\"rcs\" srcbuf=\"s\""));
  uint32_t cpy = 0;
  for (const char *p = x; (p = strstr(p, "type=\"cpy\" srcbuf=\"i\"")) != NULL; p++)
    cpy++;
  assert_int_equal(cpy, t->npus);
  if (rs.tbs_max * 4 > es.tbs_max)
    fail_msg("runtime-fit %u threadblocks per GPU, exact %u", rs.tbs_max, es.tbs_max);
  free(x);
  free(y);
  algo_free(a);
  topo_free(t);
}

/* ---- the steps of an exported file, for checks on its structure ---- */

#define XMAX_STEPS 200000

typedef struct xstep {
  int gpu, tb, send, recv, s, tag;
  char type[8], sb, db;
  long long so, doff, cnt;
  long long scratch; /* the gpu's s_chunks */
} xstep_t;

/* Every step of xml (written by the exporters: one element per line) into *out; returns
 * the count. */
static size_t xml_steps(const char *xml, xstep_t **out) {
  xstep_t *v = calloc(XMAX_STEPS, sizeof *v);
  assert_non_null(v);
  size_t n = 0;
  int gpu = -1, tb = -1, send = -1, recv = -1;
  long long sc = 0;
  for (const char *p = xml; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    while (*p == ' ')
      p++;
    int ic = 0, oc = 0, chan = 0;
    if (strncmp(p, "<gpu ", 5) == 0)
      assert_int_equal(sscanf(p, "<gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"%lld\"",
                              &gpu, &ic, &oc, &sc),
                       4);
    if (strncmp(p, "<tb ", 4) == 0)
      assert_int_equal(
          sscanf(p, "<tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\"", &tb, &send, &recv, &chan),
          4);
    if (strncmp(p, "<step ", 6) != 0) continue;
    assert_true(n < XMAX_STEPS);
    xstep_t *x = &v[n++];
    *x = (xstep_t){.gpu = gpu, .tb = tb, .send = send, .recv = recv, .tag = -1, .scratch = sc};
    assert_int_equal(sscanf(p,
                            "<step s=\"%d\" type=\"%7[a-z]\" srcbuf=\"%c\" srcoff=\"%lld\" "
                            "dstbuf=\"%c\" dstoff=\"%lld\" cnt=\"%lld\"",
                            &x->s, x->type, &x->sb, &x->so, &x->db, &x->doff, &x->cnt),
                     7);
    const char *t = strstr(p, " tag=\"");
    const char *e = strchr(p, '\n');
    if (t && (!e || t < e)) x->tag = atoi(t + 6);
  }
  *out = v;
  return n;
}

/* In the exact form (tag on every message), every send names the slot its receive fills:
 * the k-th s from a to b with tag t pairs with the k-th r at b from a with tag t. Returns
 * the messages received into scratch. */
static size_t check_sends_name_receivers_slot(const char *xml) {
  xstep_t *v = NULL;
  size_t n = xml_steps(xml, &v), paired = 0;
  bool *used = calloc(n + 1, sizeof *used);
  assert_non_null(used);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].type, "s") != 0) continue;
    assert_true(v[i].tag >= 0);
    size_t j = 0;
    for (; j < n; j++)
      if (!used[j] && strcmp(v[j].type, "r") == 0 && v[j].gpu == v[i].send &&
          v[j].recv == v[i].gpu && v[j].tag == v[i].tag)
        break;
    if (j == n) fail_msg("gpu %d tb %d step %d: no receive", v[i].gpu, v[i].tb, v[i].s);
    used[j] = true;
    if (v[i].db != v[j].db || v[i].doff != v[j].doff)
      fail_msg("gpu %d tb %d step %d sends to %c[%lld], its receive (gpu %d tb %d step %d) "
               "fills %c[%lld]",
               v[i].gpu, v[i].tb, v[i].s, v[i].db, v[i].doff, v[j].gpu, v[j].tb, v[j].s, v[j].db,
               v[j].doff);
    paired += v[j].db == 's';
  }
  free(used);
  free(v);
  return paired;
}

/* The exact form's sends name the slot the receive fills, at every rank, lower or higher
 * (a reduce RECV's scratch in All-Reduce, a relay's in the greedy All-to-All): the scratch
 * of every rank is laid out before any rank is written. */
static void msccl_exact_export_sends_name_the_receivers_slot(void **state) {
  (void)state;
  topo_t *t = NULL;
  TU_OK(topo_gen_kind("mesh", "4x4", 50.0, 500.0, &t, &tu_err_));
  for (int c = 0; c < 2; c++) {
    algo_t *a = NULL;
    if (c == 0) {
      TU_OK(algo_ring(TN_ALLREDUCE, 8, 8 * MiB, 1, &a, &tu_err_));
    } else {
      greedy_opts_t g = {.chunks_per_npu = 1};
      schedule_t sc;
      TU_OK(greedy_alltoall(t, 16 * MiB, &g, &sc, &tu_err_));
      TU_OK(algo_from_schedule(&sc, TN_ALLTOALL, "greedy", &a, &tu_err_));
      schedule_free(&sc);
    }
    char *x = NULL;
    size_t l = 0;
    TU_OK(emit_msccl_export_mem(a, &x, &l, &tu_err_));
    assert_true(check_sends_name_receivers_slot(x) > 0);
    free(x);
    algo_free(a);
  }
  topo_free(t);
}

/* A staged export of Two-Step: every send (all_staged; else every send from scratch) moves one
 * scratch range, filled by the cpys just before it in its tb (in order, tiling it); every receive
 * into scratch is followed by the cpys of the pieces addressed to the GPU, from inside the range it
 * filled, into o. Returns the receives that land straight in o. */
static uint32_t check_staged(const char *xml, bool all_staged) {
  xstep_t *v = NULL;
  size_t n = xml_steps(xml, &v);
  uint32_t sends = 0, direct = 0, to_o = 0;
  for (size_t i = 0; i < n; i++) {
    const xstep_t *x = &v[i];
    if (strcmp(x->type, "s") == 0 && (all_staged || x->sb == 's')) {
      sends++;
      if (x->sb != 's' || x->cnt < 2 || x->so < 0 || x->so + x->cnt > x->scratch)
        fail_msg("gpu %d tb %d step %d: a gathered send from %c[%lld..+%lld)", x->gpu, x->tb, x->s,
                 x->sb, x->so, x->cnt);
      long long end = x->so + x->cnt; /* the cpys before it fill [so, end) back to front */
      size_t j = i;
      while (end > x->so) {
        assert_true(j > 0);
        const xstep_t *c = &v[--j];
        if (c->gpu != x->gpu || c->tb != x->tb || strcmp(c->type, "cpy") != 0 || c->db != 's' ||
            c->doff + c->cnt != end)
          fail_msg("gpu %d tb %d step %d: s[%lld..%lld) not filled by the cpys before it", x->gpu,
                   x->tb, x->s, x->so, end);
        end = c->doff;
      }
      assert_int_equal(end, x->so);
    } else if (strcmp(x->type, "r") == 0 && x->db == 'o') {
      direct++;
    } else if (strcmp(x->type, "r") == 0) {
      assert_int_equal(x->db, 's');
      assert_true(x->doff + x->cnt <= x->scratch);
      for (size_t j = i + 1;
           j < n && v[j].tb == x->tb && v[j].gpu == x->gpu && strcmp(v[j].type, "cpy") == 0; j++) {
        assert_int_equal(v[j].sb, 's');
        assert_int_equal(v[j].db, 'o');
        assert_true(v[j].so >= x->doff && v[j].so + v[j].cnt <= x->doff + x->cnt);
        to_o++;
      }
    }
  }
  assert_true(sends > 0 && to_o > 0);
  free(v);
  return direct;
}

/* Two-Step All-to-All (algo_two_step): its messages gather pieces whose chunk ids are not one
 * range. Both forms stage them in scratch (check_staged), import back, verify and simulate:
 * the exact form in the set's time but for the cpys (at most 1 ns for each), the
 * runtime-fit form within the runtime's limits (runtime_round) without fusing a gathered message.
 * On hierarchical-4x4 with servers in order, the second step's messages land straight in o (one
 * range of it); with servers interleaved (fc-8, NPUs 0 2 4 6 and 7 5 3 1, two pieces per block:
 * every first-step message gathered too) they land in scratch and are cpy'd to o. With
 * servers {0, 3} and {1, 2} (fc-4) a first-step message is one range of chunk ids, but its
 * receiver keeps one piece and relays the other: staged too (the import failed on a receive
 * past the end of o otherwise). */
static void msccl_export_stages_two_step_gathered_messages(void **state) {
  (void)state;
  for (int c = 0; c < 3; c++) {
    topo_t *t = NULL;
    algo_t *a = NULL;
    if (c == 2) {
      t = fc(4);
      const uint32_t member[4] = {0, 3, 1, 2};
      TU_OK(algo_two_step(4, member, 2, 4 * 4096, 1, &a, &tu_err_));
    } else if (c == 0) {
      char path[512];
      snprintf(path, sizeof path, "%s/topologies/hierarchical-4x4.json", TENET_SOURCE_DIR);
      TU_OK(topo_load(path, &t, &tu_err_));
      uint32_t member[16];
      for (uint32_t i = 0; i < 16; i++)
        member[i] = i;
      TU_OK(algo_two_step(16, member, 4, MiB, 1, &a, &tu_err_));
    } else {
      t = fc(8);
      const uint32_t member[8] = {0, 2, 4, 6, 7, 5, 3, 1};
      TU_OK(algo_two_step(8, member, 2, 8 * 4096, 2, &a, &tu_err_));
    }
    verify_ok(a, t);
    uint64_t set_ps = sim_ps(t, a);
    for (int exact = 0; exact < 2; exact++) {
      emit_msccl_export_opts_t o = {.exact = exact == 1};
      emit_msccl_export_stats_t st = {0};
      char *x = NULL;
      size_t l = 0;
      TU_OK(emit_msccl_export_mem_opts(a, &o, &x, &l, &st, &tu_err_));
      uint32_t direct = check_staged(x, c < 2);
      if (c == 0) /* 16 NPUs: 4 x 3 remote messages straight into o per 4 GPUs */
        assert_int_equal(direct, 16 * 3);
      if (c == 1) assert_int_equal(direct, 0);
      if (exact) assert_true(check_sends_name_receivers_slot(x) > 0);
      algo_t *b = NULL;
      TU_OK(emit_msccl_import_mem(x, l, "twostep.xml", a->size_bytes, &b, &tu_err_));
      assert_int_equal(b->coll, TN_ALLTOALL);
      verify_ok(b, t);
      uint64_t ps = sim_ps(t, b);
      uint64_t cpys = 0; /* 1 ns each in the simulator */
      for (const char *p = x; (p = strstr(p, "type=\"cpy\"")) != NULL; p++)
        cpys++;
      if (exact && (ps < set_ps || ps > set_ps + 1000 * cpys))
        fail_msg("exact form %llu ps, the set %llu ps, %llu cpys", (unsigned long long)ps,
                 (unsigned long long)set_ps, (unsigned long long)cpys);
      if (!exact) {
        emit_msccl_export_stats_t rs = {0};
        assert_int_equal(runtime_round(a, t, &rs), ps);
        assert_int_equal(rs.fused, 0);
      }
      algo_free(b);
      free(x);
    }
    algo_free(a);
    topo_free(t);
  }
}

/* A gathered send of a piece its GPU never received (no RECV it depends on carries it), or
 * whose receive carries other chunks, is refused in both forms with a one-line message
 * naming rank and node; nothing is written. */
static void msccl_export_refuses_gathered_pieces_it_cannot_place(void **state) {
  (void)state;
  for (int bad = 0; bad < 2; bad++) {
    algo_t *a = NULL;
    TU_OK(algo_create("hand", TN_ALLTOALL, 4, 4, 4 * 4096, &a, &tu_err_));
    /* Rank 0 sends its piece for 1 and rank 1's piece for 2 (chunk 6), never received. */
    const uint32_t sent[2] = {1, 6}, got[2] = {1, bad ? 2u : 6u};
    TU_OK(algo_add_send(a, 0, 1, 0, 8192, NULL, 0, sent, 2, NULL, &tu_err_));
    TU_OK(algo_add_recv(a, 1, 0, 0, 8192, false, NULL, 0, got, 2, NULL, &tu_err_));
    TU_OK(algo_fill_idle(a, &tu_err_));
    for (int exact = 0; exact < 2; exact++) {
      emit_msccl_export_opts_t o = {.exact = exact == 1};
      char *x = NULL;
      size_t l = 0;
      tn_err_t err = {0};
      assert_int_equal(emit_msccl_export_mem_opts(a, &o, &x, &l, NULL, &err), TN_INFEASIBLE);
      assert_null(x);
      assert_non_null(strstr(err.msg, "rank 0 node 0"));
      assert_non_null(strstr(err.msg, bad ? "differ from those of the RECV" : "relays chunk 6"));
      assert_null(strchr(err.msg, '\n'));
    }
    algo_free(a);
  }
}

/* Attributes are matched by name whatever their order (the importer guesses each
 * position from the previous element); unknown and namespace-prefixed ones are ignored. */
static void msccl_import_reads_attributes_in_any_order(void **state) {
  (void)state;
  const char *xml =
      "<algo xmlns:t=\"urn:tenet-test\" coll=\"reduce_scatter\" ngpus=\"2\" inplace=\"1\" "
      "name=\"rs\">\n"
      " <gpu s_chunks=\"0\" o_chunks=\"0\" i_chunks=\"2\" id=\"0\">\n"
      "  <tb chan=\"0\" recv=\"1\" send=\"1\" id=\"0\">\n"
      "   <step hasdep=\"0\" deps=\"-1\" depid=\"-1\" cnt=\"1\" dstoff=\"1\" dstbuf=\"i\" "
      "srcoff=\"1\" srcbuf=\"i\" type=\"s\" s=\"0\"/>\n"
      "   <step s=\"1\" t:cnt=\"9\" type=\"rrc\" extra=\"x\" srcbuf=\"i\" srcoff=\"0\" "
      "dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "  </tb>\n </gpu>\n"
      " <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">\n"
      "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
      "   <step cnt=\"1\" s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step type=\"rrc\" s=\"1\" dstoff=\"1\" dstbuf=\"i\" srcoff=\"1\" srcbuf=\"i\" "
      "hasdep=\"0\" cnt=\"1\"/>\n"
      "  </tb>\n </gpu>\n</algo>\n";
  tn_status_t st;
  algo_t *a = import_str(xml, 2000, &st);
  TU_OK(st);
  algo_t *b = import_str(RS2("reduce_scatter"), 2000, &st);
  TU_OK(st);
  assert_true(algo_equal(a, b));
  algo_free(a);
  algo_free(b);
}

/* Checks an import of xml fails with st and a message containing every needle. */
static void expect_error(const char *xml, tn_status_t want, const char *n1, const char *n2) {
  tn_status_t st;
  algo_t *a = import_str(xml, MiB, &st);
  assert_null(a);
  if (st != want) fail_msg("status %d, want %d: %s", st, want, tu_err_.msg);
  if (n1 && !strstr(tu_err_.msg, n1)) fail_msg("'%s' lacks '%s'", tu_err_.msg, n1);
  if (n2 && !strstr(tu_err_.msg, n2)) fail_msg("'%s' lacks '%s'", tu_err_.msg, n2);
  print_message("  rejected: %s\n", tu_err_.msg);
}

/* RS2 with one substring replaced. */
static char *rs2_with(const char *from, const char *to) {
  static char buf[4096];
  const char *src = RS2("reduce_scatter");
  const char *p = strstr(src, from);
  assert_non_null(p);
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(p - src), src, to, p + strlen(from));
  return buf;
}

static void msccl_import_reads_out_of_place_reduce_scatter(void **state) {
  (void)state;
  /* Out of place: each GPU reduces into its output buffer (o_chunks = its share). */
  char xml[4096];
  snprintf(xml, sizeof xml, "%s", RS2("reduce_scatter"));
  const char *from[] = {"inplace=\"1\"", "o_chunks=\"0\"", "o_chunks=\"0\"",
                        "srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\"",
                        ("srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
                         "deps=\"-1\" hasdep=\"0\"/>\n  </tb>\n </gpu>\n</algo>")};
  const char *to[] = {"inplace=\"0\"", "o_chunks=\"1\"", "o_chunks=\"1\"",
                      "srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\"",
                      ("srcoff=\"1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
                       "deps=\"-1\" hasdep=\"0\"/>\n  </tb>\n </gpu>\n</algo>")};
  for (size_t k = 0; k < 5; k++) {
    char *p = strstr(xml, from[k]);
    assert_non_null(p);
    char rest[4096];
    snprintf(rest, sizeof rest, "%s", p + strlen(from[k]));
    snprintf(p, sizeof xml - (size_t)(p - xml), "%s%s", to[k], rest);
  }
  tn_status_t st;
  algo_t *a = import_str(xml, 2000, &st);
  TU_OK(st);
  topo_t *t = ring(2);
  verify_ok(a, t);
  topo_free(t);
  algo_free(a);
  /* Out of place with no output buffer declared. */
  expect_error(rs2_with("inplace=\"1\"", "inplace=\"0\""), TN_PARSE, "gpu 0", "needs o_chunks=1");
}

static void msccl_import_rejects_malformed_xml(void **state) {
  (void)state;
  expect_error("<algo ngpus=\"2\" coll=\"allgather\"><gpu id=\"0\"", TN_PARSE, "t.xml:1",
               "malformed XML");
  expect_error("", TN_PARSE, "malformed XML", NULL);
  expect_error("<nope/>", TN_PARSE, "<algo>", NULL);
}

static void msccl_import_rejects_unknown_op_naming_gpu_tb_step(void **state) {
  (void)state;
  expect_error(rs2_with("type=\"rrc\"", "type=\"xyz\""), TN_PARSE, "gpu 0 tb 0 step 1",
               "unknown op type 'xyz'");
}

static void msccl_import_rejects_missing_and_invalid_attributes(void **state) {
  (void)state;
  expect_error(rs2_with(" cnt=\"1\"", ""), TN_PARSE, "gpu 0 tb 0 step 0",
               "missing attribute 'cnt'");
  expect_error(rs2_with("srcoff=\"1\"", "srcoff=\"one\""), TN_PARSE, "gpu 0 tb 0 step 0", "srcoff");
  expect_error(rs2_with("dstbuf=\"i\"", "dstbuf=\"q\""), TN_PARSE, "gpu 0 tb 0 step 0", "dstbuf");
  expect_error(rs2_with("ngpus=\"2\"", ""), TN_PARSE, "ngpus", NULL);
  expect_error(rs2_with("send=\"1\"", "send=\"7\""), TN_PARSE, "gpu 0 tb 0", "send peer 7");
  expect_error(rs2_with("coll=\"reduce_scatter\"", "coll=\"alltoall\""), TN_PARSE, "alltoall",
               NULL);
  expect_error(rs2_with("depid=\"-1\" deps=\"-1\"", "depid=\"-1\" deps=\"0\""), TN_PARSE,
               "gpu 0 tb 0 step 0", "depid and deps");
  expect_error(rs2_with("depid=\"-1\" deps=\"-1\"", "depid=\"3\" deps=\"0\""), TN_PARSE,
               "gpu 0 tb 0 step 0", "depid 3");
}

static void msccl_import_rejects_cnt_of_zero_or_less(void **state) {
  (void)state;
  expect_error(rs2_with("cnt=\"1\"", "cnt=\"0\""), TN_PARSE, "gpu 0 tb 0 step 0", "cnt");
  expect_error(rs2_with("cnt=\"1\"", "cnt=\"-2\""), TN_PARSE, "gpu 0 tb 0 step 0", "cnt");
}

static void msccl_import_rejects_out_of_range_buffers_and_offsets(void **state) {
  (void)state;
  expect_error(rs2_with("srcoff=\"1\"", "srcoff=\"2\""), TN_PARSE, "gpu 0 tb 0 step 0",
               "out of range");
  expect_error(rs2_with("srcbuf=\"i\"", "srcbuf=\"s\""), TN_PARSE, "gpu 0 tb 0 step 0",
               "s[1..2) is out of range");
}

static void msccl_import_rejects_unmatched_sends_and_receives(void **state) {
  (void)state;
  /* gpu 1's tb receives on channel 1: gpu 0's send on channel 0 finds no partner. */
  const char *src = RS2("reduce_scatter");
  const char *p = strstr(src, "<tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">");
  assert_non_null(p);
  char buf[4096];
  snprintf(buf, sizeof buf, "%.*s<tb id=\"0\" send=\"0\" recv=\"0\" chan=\"1\">%s", (int)(p - src),
           src, p + strlen("<tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">"));
  expect_error(buf, TN_PARSE, "gpu 0 tb 0 step 0", "no matching receive");
  /* gpu 1 sends instead of receiving: gpu 0's send is left without a receive. */
  expect_error(
      rs2_with("type=\"rrc\" srcbuf=\"i\" srcoff=\"1\"", "type=\"s\" srcbuf=\"i\" srcoff=\"1\""),
      TN_PARSE, "gpu 0 tb 0 step 0", "no matching receive");
  /* gpu 1 receives twice from gpu 0, which sends once. */
  expect_error(
      rs2_with("type=\"s\" srcbuf=\"i\" srcoff=\"0\"", "type=\"r\" srcbuf=\"i\" srcoff=\"0\""),
      TN_PARSE, "gpu 1 tb 0 step 1", "no matching send");
}

static void msccl_import_rejects_dependency_cycles(void **state) {
  (void)state;
  /* gpu 0 step 0 waits on its own tb's step 1, which follows it. */
  expect_error(rs2_with("depid=\"-1\" deps=\"-1\"", "depid=\"0\" deps=\"1\""), TN_PARSE,
               "gpu 0 tb 0 step", "cycle");
  /* Both GPUs receive before they send: a deadlock through the pairs. */
  const char *dead = "<algo name=\"d\" ngpus=\"2\" coll=\"allgather\" inplace=\"1\">\n"
                     " <gpu id=\"0\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"0\">\n"
                     "  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
                     "   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
                     "dstoff=\"1\" cnt=\"1\"/>\n"
                     "   <step s=\"1\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                     "dstoff=\"0\" cnt=\"1\"/>\n"
                     "  </tb>\n </gpu>\n"
                     " <gpu id=\"1\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"0\">\n"
                     "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
                     "   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                     "dstoff=\"0\" cnt=\"1\"/>\n"
                     "   <step s=\"1\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
                     "dstoff=\"1\" cnt=\"1\"/>\n"
                     "  </tb>\n </gpu>\n</algo>\n";
  expect_error(dead, TN_PARSE, "gpu 0 tb 0 step 0", "cycle");
}

static void msccl_import_rejects_programs_that_miss_the_collective(void **state) {
  (void)state;
  /* gpu 1 reduces into chunk 0 instead of its own chunk 1. */
  expect_error(rs2_with("type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\"",
                        "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\""),
               TN_PARSE, "gpu 1 tb 0 step 1", "chunk");
  /* A size smaller than the chunk count. */
  tn_status_t st;
  algo_t *a = import_str(RS2("reduce_scatter"), 1, &st);
  assert_null(a);
  assert_int_equal(st, TN_INVAL);
  assert_non_null(strstr(tu_err_.msg, "2 chunks"));
}

static void msccl_import_rejects_disagreeing_tag_attributes(void **state) {
  (void)state;
  /* tenet's tag="N" must be on both sides of a message, with the same N. */
  expect_error(rs2_with("hasdep=\"0\"/>", "hasdep=\"0\" tag=\"5\"/>"), TN_PARSE,
               "gpu 0 tb 0 step 0", "tag=\"5\" differs");
  tn_status_t st;
  algo_t *a = import_str(rs2_with("cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>",
                                  "cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\" tag=\"9\"/>"),
                         2000, &st);
  assert_null(a); /* the first step (gpu 0's send) got the tag, its receive did not */
}

static void msccl_import_rejects_shared_connections(void **state) {
  (void)state;
  /* Two tbs of gpu 0 both send to gpu 1 on channel 0. */
  const char *xml = "<algo name=\"x\" ngpus=\"2\" coll=\"allgather\" inplace=\"1\">\n"
                    " <gpu id=\"0\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"0\">\n"
                    "  <tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
                    "   <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                    "dstoff=\"0\" cnt=\"1\"/>\n"
                    "  </tb>\n"
                    "  <tb id=\"1\" send=\"1\" recv=\"1\" chan=\"0\">\n"
                    "   <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                    "dstoff=\"0\" cnt=\"1\"/>\n"
                    "   <step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
                    "dstoff=\"1\" cnt=\"1\"/>\n"
                    "  </tb>\n </gpu>\n"
                    " <gpu id=\"1\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"0\">\n"
                    "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
                    "   <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" "
                    "dstoff=\"1\" cnt=\"1\"/>\n"
                    "   <step s=\"1\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                    "dstoff=\"0\" cnt=\"1\"/>\n"
                    "   <step s=\"2\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" "
                    "dstoff=\"0\" cnt=\"1\"/>\n"
                    "  </tb>\n </gpu>\n</algo>\n";
  expect_error(xml, TN_PARSE, "gpu 0 tb 1 step 0", "one tb");
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(msccl_import_reads_verifies_and_simulates_every_fixture),
      cmocka_unit_test(msccl_import_splits_fused_ring_allreduce_like_collectiveapi),
      cmocka_unit_test(msccl_import_unfused_and_fused_ring_allreduce_agree),
      cmocka_unit_test(msccl_import_folds_nops_into_dependencies),
      cmocka_unit_test(msccl_import_sizes_messages_from_the_collective_buffer),
      cmocka_unit_test(msccl_import_reports_the_xml_step_of_every_node),
      cmocka_unit_test(msccl_ring_allgather_import_times_like_the_ring_baseline),
      cmocka_unit_test(msccl_ring_allreduce_collectiveapi_way_matches_astrasim),
      cmocka_unit_test(msccl_export_round_trip_is_exact_on_imported_files),
      cmocka_unit_test(msccl_export_round_trip_is_exact_on_baselines),
      cmocka_unit_test(msccl_export_round_trip_is_exact_on_greedy),
      cmocka_unit_test(msccl_export_keeps_the_xml_well_formed_whatever_the_producer_name),
      cmocka_unit_test(msccl_export_rejects_foreign_sets_without_bookkeeping),
      cmocka_unit_test(msccl_export_writes_the_file_all_or_nothing),
      cmocka_unit_test(msccl_runtime_export_of_baselines_fits_imports_and_verifies),
      cmocka_unit_test(msccl_runtime_export_of_greedy_fits_imports_and_verifies),
      cmocka_unit_test(msccl_runtime_export_uses_far_fewer_threadblocks_than_exact),
      cmocka_unit_test(msccl_runtime_export_refuses_what_exceeds_the_limits),
      cmocka_unit_test(msccl_runtime_export_refuses_what_could_deadlock),
      cmocka_unit_test(msccl_import_accepts_both_reduce_scatter_spellings),
      cmocka_unit_test(msccl_import_reads_alltoall),
      cmocka_unit_test(msccl_export_alltoall_round_trips),
      cmocka_unit_test(msccl_runtime_export_of_alltoall_relays_through_scratch),
      cmocka_unit_test(msccl_exact_export_sends_name_the_receivers_slot),
      cmocka_unit_test(msccl_export_stages_two_step_gathered_messages),
      cmocka_unit_test(msccl_export_refuses_gathered_pieces_it_cannot_place),
      cmocka_unit_test(msccl_import_reads_attributes_in_any_order),
      cmocka_unit_test(msccl_import_reads_out_of_place_reduce_scatter),
      cmocka_unit_test(msccl_import_rejects_malformed_xml),
      cmocka_unit_test(msccl_import_rejects_unknown_op_naming_gpu_tb_step),
      cmocka_unit_test(msccl_import_rejects_missing_and_invalid_attributes),
      cmocka_unit_test(msccl_import_rejects_cnt_of_zero_or_less),
      cmocka_unit_test(msccl_import_rejects_out_of_range_buffers_and_offsets),
      cmocka_unit_test(msccl_import_rejects_unmatched_sends_and_receives),
      cmocka_unit_test(msccl_import_rejects_dependency_cycles),
      cmocka_unit_test(msccl_import_rejects_programs_that_miss_the_collective),
      cmocka_unit_test(msccl_import_rejects_disagreeing_tag_attributes),
      cmocka_unit_test(msccl_import_rejects_shared_connections),
  };
  const struct CMUnitTest corpus[] = {
      cmocka_unit_test(msccl_import_reads_verifies_and_simulates_every_corpus_file),
  };
  if (argc > 1 && strcmp(argv[1], "corpus") == 0) {
    const char *dir = getenv("TENET_MSCCL_CORPUS");
    if (dir == NULL || *dir == '\0') {
      printf("TENET_MSCCL_CORPUS is not set: no external MSCCL-IR corpus to read (skipped)\n");
      return SKIPPED;
    }
    return cmocka_run_group_tests(corpus, NULL, NULL);
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
