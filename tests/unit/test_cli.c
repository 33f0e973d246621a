/* tests/unit/test_cli.c — the CLI's pure helpers: option parsing, tables, lists, shards,
 * manifests, batch plans, result JSON/CSV, plots and the heatmap from synthetic data,
 * progress text and the thread pool. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/batch.h"
#include "cli/cli.h"

static tn_err_t tu_err_;

static bool file_starts_with(const char *path, const void *magic, size_t n) {
  unsigned char buf[64] = {0};
  FILE *f = fopen(path, "rb");
  if (f == NULL) return false;
  size_t got = fread(buf, 1, n, f);
  fclose(f);
  return got == n && memcmp(buf, magic, n) == 0;
}

static bool exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* No "*.tmp.*" file left in dir. */
static bool no_temp_files(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '\\.tmp\\.'", dir);
  return system(cmd) != 0;
}

/* ---- cli_parse ------------------------------------------------------------ */

static void cli_parse_accepts_long_short_and_equals_forms(void **state) {
  (void)state;
  const char *t = NULL, *sizes = NULL, *jobs = NULL;
  bool json = false;
  const cli_opt_t opts[] = {{"topology", 't', &t, NULL},
                            {"sizes", 0, &sizes, NULL},
                            {"jobs", 'j', &jobs, NULL},
                            {"json", 0, NULL, &json}};
  char a[][32] = {"compare", "-t",     "mesh-8x8", "--sizes=1KiB..1MiB",
                  "--json",  "--jobs", "2",        "extra"};
  char *argv[] = {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]};
  const char *pos[2];
  size_t npos = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse(8, argv, opts, 4, pos, 2, &npos, &err), TN_OK);
  assert_string_equal(t, "mesh-8x8");
  assert_string_equal(sizes, "1KiB..1MiB");
  assert_string_equal(jobs, "2");
  assert_true(json);
  assert_int_equal(npos, 1);
  assert_string_equal(pos[0], "extra");
}

static void cli_parse_rejects_unknown_option_with_suggestion(void **state) {
  (void)state;
  const char *sizes = NULL;
  const cli_opt_t opts[] = {{"sizes", 0, &sizes, NULL}};
  char a[][16] = {"compare", "--size", "1MiB"};
  char *argv[] = {a[0], a[1], a[2]};
  const char *pos[1];
  size_t npos = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse(3, argv, opts, 1, pos, 0, &npos, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--size"));
  assert_non_null(strstr(err.msg, "did you mean '--sizes'"));
}

static void cli_parse_rejects_missing_value(void **state) {
  (void)state;
  const char *out = NULL;
  const cli_opt_t opts[] = {{"output", 'o', &out, NULL}};
  char a[][16] = {"batch", "-o"};
  char *argv[] = {a[0], a[1]};
  const char *pos[1];
  size_t npos = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse(2, argv, opts, 1, pos, 0, &npos, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--output"));
  assert_non_null(strstr(err.msg, "needs a value"));
}

/* ---- tables --------------------------------------------------------------- */

static void table_widths_cover_header_and_cells(void **state) {
  (void)state;
  static const char *const headers[] = {"size", "time"};
  cli_table_t t;
  tn_err_t err = {0};
  assert_int_equal(cli_table_init(&t, headers, "lr", 2, &err), TN_OK);
  const char *r1[] = {"1KiB", "7.00 us"}, *r2[] = {"1GiB", "123.45 ms"};
  assert_int_equal(cli_table_add(&t, r1, &err), TN_OK);
  assert_int_equal(cli_table_add(&t, r2, &err), TN_OK);
  assert_int_equal(cli_table_width(&t, 0), 4);
  assert_int_equal(cli_table_width(&t, 1), 9);
  char buf[512] = {0};
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  assert_non_null(f);
  cli_table_print(&t, f);
  fclose(f);
  assert_string_equal(buf, "size       time\n"
                           "---------------\n"
                           "1KiB    7.00 us\n"
                           "1GiB  123.45 ms\n");
  cli_table_free(&t);
}

static void table_init_rejects_alignment_of_wrong_length(void **state) {
  (void)state;
  static const char *const headers[] = {"a", "b"};
  cli_table_t t;
  tn_err_t err = {0};
  assert_int_equal(cli_table_init(&t, headers, "l", 2, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "alignment"));
  cli_table_free(&t);
}

/* ---- lists, sizes, shards ----------------------------------------------------- */

static void split_list_trims_and_rejects_empty_and_repeated_items(void **state) {
  (void)state;
  char **items = NULL;
  size_t n = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_split_list("a, b ,c", "--topos", &items, &n, &err), TN_OK);
  assert_int_equal(n, 3);
  assert_string_equal(items[1], "b");
  cli_list_free(items, n);
  assert_int_equal(cli_split_list("a,,b", "--topos", &items, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--topos"));
  assert_null(items);
  tn_err_clear(&err);
  assert_int_equal(cli_split_list("a,b,a", "--topos", &items, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "'a' is listed twice"));
}

static void parse_algos_rejects_unknown_algorithm(void **state) {
  (void)state;
  char **items = NULL;
  size_t n = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse_algos("greedy,ring,direct,milp", &items, &n, &err), TN_OK);
  assert_int_equal(n, 4);
  cli_list_free(items, n);
  assert_int_equal(cli_parse_algos("greedy,tacos", &items, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "'tacos'"));
  assert_null(items);
}

static void parse_colls_accepts_aliases_and_rejects_repeats(void **state) {
  (void)state;
  tn_coll_t *c = NULL;
  size_t n = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse_colls("ag,allreduce", &c, &n, &err), TN_OK);
  assert_int_equal(n, 2);
  assert_int_equal(c[0], TN_ALLGATHER);
  assert_int_equal(c[1], TN_ALLREDUCE);
  free(c);
  assert_int_equal(cli_parse_colls("ag,all-gather", &c, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "allgather twice"));
  tn_err_clear(&err);
  assert_int_equal(cli_parse_colls("allgather,broadcast", &c, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "broadcast"));
}

static void parse_sizes_expands_ranges_and_rejects_repeats(void **state) {
  (void)state;
  uint64_t *s = NULL;
  size_t n = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse_sizes("1KiB..1GiB", &s, &n, &err), TN_OK);
  assert_int_equal(n, 21);
  assert_int_equal(s[0], 1024);
  assert_int_equal(s[20], 1073741824ull);
  free(s);
  assert_int_equal(cli_parse_sizes("1MiB,64MiB,1GiB", &s, &n, &err), TN_OK);
  assert_int_equal(n, 3);
  free(s);
  assert_int_equal(cli_parse_sizes("1MiB,1048576", &s, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "1MiB is listed twice"));
  assert_null(s);
  tn_err_clear(&err);
  assert_int_equal(cli_parse_sizes("1MiB,2XB", &s, &n, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--sizes"));
}

static void parse_shard_accepts_index_below_count_only(void **state) {
  (void)state;
  uint32_t i = 9, n = 9;
  tn_err_t err = {0};
  assert_int_equal(cli_parse_shard("1/2", &i, &n, &err), TN_OK);
  assert_int_equal(i, 1);
  assert_int_equal(n, 2);
  assert_int_equal(cli_parse_shard("0/1", &i, &n, &err), TN_OK);
  static const char *const bad[] = {"2/2", "1/0", "x/2", "1/", "/2", "1", "-1/2", "1/2/3"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    tn_err_clear(&err);
    assert_int_equal(cli_parse_shard(bad[k], &i, &n, &err), TN_INVAL);
    assert_non_null(strstr(err.msg, "--shard"));
  }
}

static void parse_jobs_takes_1_to_1024(void **state) {
  (void)state;
  unsigned j = 0;
  tn_err_t err = {0};
  assert_int_equal(cli_parse_jobs("4", &j, &err), TN_OK);
  assert_int_equal(j, 4);
  assert_int_equal(cli_parse_jobs("0", &j, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "--jobs"));
}

static void topo_label_strips_folder_and_extension(void **state) {
  (void)state;
  char b[128];
  cli_topo_label("topologies/mesh-8x8.json", b, sizeof b);
  assert_string_equal(b, "mesh-8x8");
  cli_topo_label("/x/y/net.yml", b, sizeof b);
  assert_string_equal(b, "net");
  cli_topo_label("ring-8", b, sizeof b);
  assert_string_equal(b, "ring-8");
}

static void topo_spec_generates_kind_dims_fabrics(void **state) {
  (void)state;
  topo_t *t = NULL;
  tn_err_t err = {0};
  assert_int_equal(cli_load_topo_spec("mesh3d-4x4x4", &t, &err), TN_OK);
  assert_int_equal(t->npus, 64);
  assert_int_equal(t->ndims, 3);
  topo_free(t);
  assert_int_equal(cli_topo_spec_check("ring-8", &err), TN_OK);
  assert_int_not_equal(cli_topo_spec_check("no-such-fabric.json", &err), TN_OK);
}

/* ---- manifests and batch plans ------------------------------------------------ */

static void manifest_parse_reads_every_key(void **state) {
  (void)state;
  const char *text = "# sweep\n"
                     "topos  ring-8   # generated\n"
                     "topos: fc-8\n"
                     "\n"
                     "colls = allgather, allreduce\n"
                     "sizes 1MiB,64MiB\n"
                     "algos greedy,ring\n"
                     "seed 7\n";
  cli_batch_plan_t p;
  tn_err_t err = {0};
  TU_OK(cli_batch_manifest_parse(text, "m.txt", &p, &tu_err_));
  assert_int_equal(p.ntopos, 2);
  assert_string_equal(p.topos[1], "fc-8");
  assert_int_equal(p.ncolls, 2);
  assert_int_equal(p.nsizes, 2);
  assert_int_equal(p.sizes[1], 67108864ull);
  assert_int_equal(p.nalgos, 2);
  assert_int_equal(p.seed, 7);
  size_t n = 0;
  assert_int_equal(cli_batch_count(&p, &n, &err), TN_OK);
  assert_int_equal(n, 16);
  cli_batch_plan_free(&p);
}

static void manifest_parse_rejects_unknown_key_naming_line(void **state) {
  (void)state;
  cli_batch_plan_t p;
  tn_err_t err = {0};
  const char *text = "topos ring-8\ncolls allgather\ntopo fc-8\nsizes 1MiB\nalgos ring\n";
  assert_int_equal(cli_batch_manifest_parse(text, "m.txt", &p, &err), TN_PARSE);
  assert_string_equal(err.msg, "m.txt:3: unknown key 'topo' (did you mean 'topos'?)");
}

static void manifest_parse_rejects_missing_key_and_bad_values(void **state) {
  (void)state;
  cli_batch_plan_t p;
  tn_err_t err = {0};
  assert_int_equal(
      cli_batch_manifest_parse("topos ring-8\ncolls ag\nsizes 1MiB\n", "m.txt", &p, &err),
      TN_PARSE);
  assert_non_null(strstr(err.msg, "m.txt: no 'algos' line"));
  tn_err_clear(&err);
  assert_int_equal(cli_batch_manifest_parse("topos ring-8\ncolls ag\nsizes 1MiB\nalgos ring\n"
                                            "seed 1\nseed 2\n",
                                            "m.txt", &p, &err),
                   TN_PARSE);
  assert_non_null(strstr(err.msg, "m.txt:6: seed is given twice"));
  tn_err_clear(&err);
  assert_int_equal(cli_batch_manifest_parse("topos ring-8\ncolls ag\nsizes 1QB\nalgos ring\n",
                                            "m.txt", &p, &err),
                   TN_PARSE);
  assert_non_null(strstr(err.msg, "m.txt: --sizes"));
  tn_err_clear(&err);
  assert_int_equal(
      cli_batch_manifest_parse("topos ring-8\ncolls\nsizes 1MiB\nalgos ring\n", "m.txt", &p, &err),
      TN_PARSE);
  assert_non_null(strstr(err.msg, "m.txt:2: 'colls' needs a value"));
}

static void manifest_load_takes_topology_paths_relative_to_its_folder(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_manifest");
  char path[1200];
  snprintf(path, sizeof path, "%s/fabrics/x.json", dir);
  TU_OK(tn_mkdir_parents(path, &tu_err_));
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"name\": \"x\", \"npus\": 2, \"switches\": 0, \"links\": [{\"src\": 0, "
        "\"dst\": 1, \"bandwidth\": 50, \"latency\": 500}]}\n",
        f);
  fclose(f);
  snprintf(path, sizeof path, "%s/sweep.txt", dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("topos fabrics/x.json, ring-4\ncolls ag\nsizes 1MiB\nalgos ring\n", f);
  fclose(f);
  cli_batch_plan_t p;
  TU_OK(cli_batch_manifest_load(path, &p, &tu_err_));
  char want[1200];
  snprintf(want, sizeof want, "%s/fabrics/x.json", dir);
  assert_string_equal(p.topos[0], want);
  assert_string_equal(p.labels[0], "x");
  assert_string_equal(p.topos[1], "ring-4");
  cli_batch_plan_free(&p);
}

static void batch_cases_run_topology_major_algorithm_minor(void **state) {
  (void)state;
  cli_batch_plan_t p;
  TU_OK(cli_batch_plan_from_lists("ring-8,fc-8", "allgather,allreduce", "1MiB,1GiB",
                                  "greedy,ring,direct", 1, &p, &tu_err_));
  size_t n = 0;
  TU_OK(cli_batch_count(&p, &n, &tu_err_));
  assert_int_equal(n, 24);
  cli_batch_case_t c = cli_batch_case(&p, 0);
  assert_true(c.topo == 0 && c.coll == 0 && c.size == 0 && c.algo == 0);
  c = cli_batch_case(&p, 1);
  assert_true(c.topo == 0 && c.coll == 0 && c.size == 0 && c.algo == 1);
  c = cli_batch_case(&p, 3);
  assert_true(c.topo == 0 && c.coll == 0 && c.size == 1 && c.algo == 0);
  c = cli_batch_case(&p, 23);
  assert_true(c.topo == 1 && c.coll == 1 && c.size == 1 && c.algo == 2);
  char dir[256];
  cli_batch_case_dir(&p, &c, dir, sizeof dir);
  assert_string_equal(dir, "cases/fc-8/allreduce/1GiB/direct");
  cli_batch_plan_free(&p);
}

static void batch_plan_rejects_colliding_folder_names(void **state) {
  (void)state;
  cli_batch_plan_t p;
  tn_err_t err = {0};
  assert_int_equal(
      cli_batch_plan_from_lists("ring-8,x/ring-8.json", "ag", "1MiB", "ring", 1, &p, &err),
      TN_INVAL);
  assert_non_null(strstr(err.msg, "share the folder 'ring-8'"));
}

static void batch_plan_json_round_trips(void **state) {
  (void)state;
  cli_batch_plan_t p, q;
  TU_OK(cli_batch_plan_from_lists("ring-8,mesh-4x4", "reducescatter", "1KiB..4KiB", "direct", 42,
                                  &p, &tu_err_));
  char *a = NULL, *b = NULL;
  TU_OK(cli_batch_plan_json(&p, &a, &tu_err_));
  TU_OK(cli_batch_plan_parse_json(a, "batch.json", &q, &tu_err_));
  TU_OK(cli_batch_plan_json(&q, &b, &tu_err_));
  assert_string_equal(a, b);
  assert_int_equal(q.seed, 42);
  assert_int_equal(q.nsizes, 3);
  free(a);
  free(b);
  cli_batch_plan_free(&p);
  cli_batch_plan_free(&q);
}

static void batch_plan_json_keeps_seed_an_exact_number(void **state) {
  (void)state;
  cli_batch_plan_t p, q;
  TU_OK(cli_batch_plan_from_lists("ring-8", "ag", "1KiB", "ring", UINT64_MAX, &p, &tu_err_));
  char *a = NULL;
  TU_OK(cli_batch_plan_json(&p, &a, &tu_err_));
  assert_non_null(strstr(a, "\"seed\":\t18446744073709551615"));
  TU_OK(cli_batch_plan_parse_json(a, "batch.json", &q, &tu_err_));
  assert_true(q.seed == UINT64_MAX);
  cli_batch_plan_free(&q);
  /* A number that is not spelled as a whole number is refused. */
  char *text = strstr(a, "\"seed\":\t");
  memcpy(text + strlen("\"seed\":\t"), "1.5e19              ", 20);
  tn_err_t err = {0};
  assert_int_equal(cli_batch_plan_parse_json(a, "batch.json", &q, &err), TN_PARSE);
  assert_non_null(strstr(err.msg, "batch.json: 'seed' must be a whole number"));
  free(a);
  cli_batch_plan_free(&p);
}

/* A mixed sweep: 16..64 NPUs, the greedy against the baselines, three collectives. */
static void mixed_plan(cli_batch_plan_t *p, cli_batch_fabric_t **f, size_t *n) {
  TU_OK(cli_batch_plan_from_lists("hypercube-16,torus-4x4,ring-32,mesh-4x8,spine-4x8,mesh-8x8,"
                                  "torus-8x8,ring-64,switch-64",
                                  "allgather,allreduce,alltoall", "64KiB,4MiB,256MiB",
                                  "greedy,ring,direct", 1, p, &tu_err_));
  TU_OK(cli_batch_count(p, n, &tu_err_));
  TU_OK(cli_batch_fabrics(p, f, &tu_err_));
}

static void batch_cost_ranks_greedy_and_big_fabrics_higher(void **state) {
  (void)state;
  cli_batch_plan_t p;
  cli_batch_fabric_t *f = NULL;
  size_t n = 0;
  mixed_plan(&p, &f, &n);
  /* case numbers: ((topo * 3 + coll) * 3 + size) * 3 + algo */
  cli_batch_case_t mesh16_ag_greedy = cli_batch_case(&p, ((0 * 3 + 0) * 3 + 1) * 3 + 0);
  cli_batch_case_t mesh16_ag_ring = cli_batch_case(&p, ((0 * 3 + 0) * 3 + 1) * 3 + 1);
  cli_batch_case_t mesh64_a2a_greedy = cli_batch_case(&p, ((5 * 3 + 2) * 3 + 1) * 3 + 0);
  uint64_t g16 = cli_batch_case_cost_us(&p, f, &mesh16_ag_greedy);
  assert_true(g16 > cli_batch_case_cost_us(&p, f, &mesh16_ag_ring));
  assert_true(cli_batch_case_cost_us(&p, f, &mesh64_a2a_greedy) > 10 * g16);
  /* spine-4x8's bounds (an explicit fabric) may need column generation for All-to-All's
   * flow, which a generated fabric of as many NPUs (ring-32) settles without. */
  assert_true(f[4].bounds_us > 5 * f[2].bounds_us);
  free(f);
  cli_batch_plan_free(&p);
}

static void batch_deal_balances_estimated_cost_deterministically(void **state) {
  (void)state;
  cli_batch_plan_t p;
  cli_batch_fabric_t *f = NULL;
  size_t n = 0;
  mixed_plan(&p, &f, &n);
  uint32_t *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  for (uint32_t nshards = 2; nshards <= 8; nshards++) {
    for (int by_group = 0; by_group <= 1; by_group++) {
      TU_OK(cli_batch_deal(&p, f, n, nshards, by_group, a, &tu_err_));
      TU_OK(cli_batch_deal(&p, f, n, nshards, by_group, b, &tu_err_));
      assert_memory_equal(a, b, n * sizeof *a);
      double load[8] = {0}, total = 0, max = 0;
      for (size_t i = 0; i < n; i++) {
        cli_batch_case_t c = cli_batch_case(&p, i);
        assert_true(a[i] < nshards);
        if (by_group) assert_int_equal(a[i], a[i - i % p.nalgos]);
        load[a[i]] += (double)cli_batch_case_cost_us(&p, f, &c);
      }
      for (uint32_t s = 0; s < nshards; s++)
        total += load[s], max = load[s] > max ? load[s] : max;
      assert_true(max / (total / nshards) <= 1.2);
    }
  }
  free(a);
  free(b);
  free(f);
  cli_batch_plan_free(&p);
}

static void batch_case_inputs_change_with_every_input(void **state) {
  (void)state;
  cli_batch_plan_t p;
  TU_OK(cli_batch_plan_from_lists("ring-8", "ag", "1KiB,2KiB", "ring,direct", 1, &p, &tu_err_));
  cli_batch_fabric_t f = {.digest = 7, .digested = true};
  char keys[6][17];
  cli_batch_case_t c0 = cli_batch_case(&p, 0), c1 = cli_batch_case(&p, 1),
                   c2 = cli_batch_case(&p, 2);
  cli_batch_case_inputs(&p, &f, &c0, keys[0]);
  cli_batch_case_inputs(&p, &f, &c1, keys[1]); /* another algorithm */
  cli_batch_case_inputs(&p, &f, &c2, keys[2]); /* another size */
  f.digest = 8;                                /* the fabric file changed */
  cli_batch_case_inputs(&p, &f, &c0, keys[3]);
  f.digest = 7;
  p.seed = 2;
  cli_batch_case_inputs(&p, &f, &c0, keys[4]);
  p.seed = 1;
  cli_batch_case_inputs(&p, &f, &c0, keys[5]); /* all as before */
  assert_int_equal(strlen(keys[0]), 16);
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      assert_string_not_equal(keys[i], keys[j]);
  assert_string_equal(keys[0], keys[5]);
  cli_batch_plan_free(&p);
}

/* ---- results: JSON, CSV, speed-ups ---------------------------------------------- */

static void fake_rows(cli_result_t *rows) {
  memset(rows, 0, 4 * sizeof *rows);
  const char *algos[] = {"greedy", "ring"};
  for (int i = 0; i < 4; i++) {
    cli_result_t *r = &rows[i];
    snprintf(r->topology, sizeof r->topology, "mesh-8x8");
    snprintf(r->algorithm, sizeof r->algorithm, "%s", algos[i % 2]);
    r->npus = 64;
    r->coll = TN_ALLGATHER;
    r->size_bytes = i < 2 ? 1048576u : 67108864u;
    r->ok = true;
    r->time_ps = (uint64_t)(i % 2 ? 4 : 1) * r->size_bytes * 10;
    r->lower_bound_ps = r->size_bytes * 9;
    r->algbw_GBps = tn_gbps(r->size_bytes, r->time_ps);
    r->busbw_GBps = r->algbw_GBps * tn_coll_busbw_factor(r->coll, r->npus);
    r->ratio_to_bound = (double)r->time_ps / (double)r->lower_bound_ps;
    r->speedup_vs_ring = -1;
  }
}

static void results_speedups_compare_with_ring_of_same_size(void **state) {
  (void)state;
  cli_result_t rows[4];
  fake_rows(rows);
  cli_results_set_speedups(rows, 4);
  assert_true(rows[0].speedup_vs_ring > 3.999 && rows[0].speedup_vs_ring < 4.001);
  assert_true(rows[1].speedup_vs_ring > 0.999 && rows[1].speedup_vs_ring < 1.001);
  cli_results_set_speedups(rows, 1); /* no ring row: unknown */
  assert_true(rows[0].speedup_vs_ring < 0);
}

static void results_json_has_one_row_per_result_with_contract_keys(void **state) {
  (void)state;
  cli_result_t rows[4];
  fake_rows(rows);
  cli_results_set_speedups(rows, 2); /* rows 2,3 get none: null */
  char *text = NULL;
  TU_OK(cli_results_json(rows, 4, &text, &tu_err_));
  cJSON *o = cJSON_Parse(text);
  assert_non_null(o);
  assert_int_equal(cJSON_GetArraySize(o->child), 4);
  assert_string_equal(o->child->string, "rows");
  assert_null(o->child->next);
  const cJSON *r0 = cJSON_GetArrayItem(o->child, 0);
  static const char *const keys[] = {
      "npus",       "collective", "algorithm",      "size_bytes",     "time_ns",
      "algbw_GBps", "busbw_GBps", "lower_bound_ns", "ratio_to_bound", "speedup_vs_ring"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    assert_non_null(cJSON_GetObjectItemCaseSensitive(r0, keys[k]));
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(r0, "size_bytes")->valuedouble, 1048576);
  assert_true(cJSON_IsNull(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o->child, 3), "speedup_vs_ring")));
  cJSON_Delete(o);
  free(text);
}

static void results_csv_is_all_or_nothing(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_csv");
  cli_result_t rows[4];
  fake_rows(rows);
  char path[1200];
  snprintf(path, sizeof path, "%s/r.csv", dir);
  TU_OK(cli_results_csv(rows, 4, path, &tu_err_));
  char *text = NULL;
  size_t len = 0;
  TU_OK(tn_read_file(path, 1 << 20, &text, &len, &tu_err_));
  assert_true(strncmp(text, "topology,npus,collective,algorithm,size_bytes,time_ns,", 54) == 0);
  size_t lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += text[i] == '\n';
  assert_int_equal(lines, 5);
  free(text);
  tn_err_t err = {0};
  snprintf(path, sizeof path, "%s/no/such/dir/r.csv", dir);
  assert_int_equal(cli_results_csv(rows, 4, path, &err), TN_IO);
  assert_non_null(strstr(err.msg, "r.csv"));
  assert_true(no_temp_files(dir));
}

static void csv_text_quotes_and_doubles_quotes(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  cli_csv_text(f, "a\"b,c\nd");
  fputc(',', f);
  cli_csv_text(f, "");
  fclose(f);
  assert_string_equal(buf, "\"a\"\"b,c d\",\"\"");
  free(buf);
}

static void fmt_time_and_duration_pick_units(void **state) {
  (void)state;
  char b[32];
  assert_string_equal(cli_fmt_time_ns(812, b, sizeof b), "812 ns");
  assert_string_equal(cli_fmt_time_ns(12345, b, sizeof b), "12.35 us");
  assert_string_equal(cli_fmt_time_ns(3.1e6, b, sizeof b), "3.10 ms");
  assert_string_equal(cli_fmt_time_ns(1.2041e9, b, sizeof b), "1.204 s");
  assert_string_equal(cli_fmt_duration(42, b, sizeof b), "0:42");
  assert_string_equal(cli_fmt_duration(3725, b, sizeof b), "1:02:05");
}

static void progress_bar_shows_counts_failures_and_eta(void **state) {
  (void)state;
  cli_progress_t p;
  cli_progress_init(&p, "batch", 4, false, false);
  p.start_s = 100.0;
  cli_progress_step(&p, NULL, true, false, 1.0);
  cli_progress_step(&p, NULL, false, false, 1.0);
  char b[160];
  cli_progress_bar(&p, 110.0, b, sizeof b);
  assert_string_equal(b, "[############............] 2/4, 1 failed  ETA 0:10");
}

static void progress_eta_weighs_remaining_work_not_item_count(void **state) {
  (void)state;
  /* Three quick items done in 10 s, one 97 times longer left: 0:10 by count would be
   * wrong by far; by work it is 10 s / 3 units x 97 units. */
  cli_progress_t p;
  cli_progress_init(&p, "batch", 4, false, false);
  cli_progress_set_work(&p, 100);
  p.start_s = 100.0;
  for (int i = 0; i < 3; i++)
    cli_progress_step_work(&p, NULL, true, false, 1.0, 1);
  char b[160];
  cli_progress_bar(&p, 110.0, b, sizeof b);
  assert_string_equal(b, "[##################......] 3/4  ETA 5:23");
  /* Skipped items add to the work done, not to the rate. */
  cli_progress_init(&p, "batch", 4, false, false);
  cli_progress_set_work(&p, 100);
  p.start_s = 100.0;
  cli_progress_step_work(&p, NULL, true, true, 0.0, 50);
  cli_progress_step_work(&p, NULL, true, false, 1.0, 10);
  cli_progress_bar(&p, 110.0, b, sizeof b);
  assert_string_equal(b, "[############............] 2/4  ETA 0:40");
}

/* ---- pictures ------------------------------------------------------------------ */

static void plot_busbw_writes_png_and_svg(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_plot");
  cli_result_t rows[4];
  fake_rows(rows);
  char png[1200], svg[1200];
  snprintf(png, sizeof png, "%s/p.png", dir);
  snprintf(svg, sizeof svg, "%s/p.svg", dir);
  TU_OK(cli_plot_busbw(rows, 4, "mesh-8x8: allgather, 64 NPUs", png, CLI_PLOT_Y_AUTO, &tu_err_));
  TU_OK(cli_plot_busbw(rows, 4, "mesh-8x8: allgather, 64 NPUs", svg, CLI_PLOT_Y_AUTO, &tu_err_));
  assert_true(file_starts_with(png, "\x89PNG\r\n\x1a\n", 8));
  assert_true(file_starts_with(svg, "<?xml", 5));
  assert_true(no_temp_files(dir));
}

static void plot_busbw_rejects_unknown_format_and_empty_data(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_plot_bad");
  cli_result_t rows[4];
  fake_rows(rows);
  tn_err_t err = {0};
  char path[1200];
  snprintf(path, sizeof path, "%s/p.pdf", dir);
  assert_int_equal(cli_plot_busbw(rows, 4, "t", path, CLI_PLOT_Y_AUTO, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, ".png or .svg"));
  for (int i = 0; i < 4; i++)
    rows[i].ok = false;
  tn_err_clear(&err);
  snprintf(path, sizeof path, "%s/p.png", dir);
  assert_int_equal(cli_plot_busbw(rows, 4, "t", path, CLI_PLOT_Y_AUTO, &err), TN_INVAL);
  assert_non_null(strstr(err.msg, "no successful result"));
  assert_false(exists(path));
  tn_err_clear(&err);
  fake_rows(rows);
  snprintf(path, sizeof path, "%s/missing/p.png", dir);
  assert_int_equal(cli_plot_busbw(rows, 4, "t", path, CLI_PLOT_Y_AUTO, &err), TN_IO);
  assert_non_null(strstr(err.msg, "missing/p.png"));
}

static bool same_file(const char *x, const char *y) {
  FILE *f = fopen(x, "rb"), *g = fopen(y, "rb");
  bool same = f && g;
  for (int c = 0, d = 0; same && (c != EOF || d != EOF);) {
    c = fgetc(f);
    d = fgetc(g);
    same = c == d;
  }
  if (f) fclose(f);
  if (g) fclose(g);
  return same;
}

static void plot_busbw_series_have_distinct_markers_and_dashes(void **state) {
  (void)state;
  for (size_t i = 0; i < 8; i++)
    for (size_t j = i + 1; j < 8; j++) {
      const char *mi = NULL, *mj = NULL;
      int di = 0, dj = 0;
      cli_plot_series_style(i, &mi, &di);
      cli_plot_series_style(j, &mj, &dj);
      assert_true(strcmp(mi, mj) != 0);
      assert_int_not_equal(di, dj);
      assert_true(di >= 1 && di <= 8);
    }
}

static void plot_busbw_goes_log_when_busbw_spans_over_10x(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_plot_log");
  cli_result_t rows[4];
  fake_rows(rows); /* ring 4x slower than greedy: linear */
  char a[1200], l[1200], g[1200];
  snprintf(a, sizeof a, "%s/auto.png", dir);
  snprintf(l, sizeof l, "%s/linear.png", dir);
  snprintf(g, sizeof g, "%s/log.png", dir);
  TU_OK(cli_plot_busbw(rows, 4, "t", a, CLI_PLOT_Y_AUTO, &tu_err_));
  TU_OK(cli_plot_busbw(rows, 4, "t", l, CLI_PLOT_Y_LINEAR, &tu_err_));
  TU_OK(cli_plot_busbw(rows, 4, "t", g, CLI_PLOT_Y_LOG, &tu_err_));
  assert_true(same_file(a, l));
  assert_false(same_file(a, g));
  for (int i = 1; i < 4; i += 2) { /* ring 100x slower: log */
    rows[i].time_ps *= 25;
    rows[i].busbw_GBps /= 25;
  }
  TU_OK(cli_plot_busbw(rows, 4, "t", a, CLI_PLOT_Y_AUTO, &tu_err_));
  TU_OK(cli_plot_busbw(rows, 4, "t", l, CLI_PLOT_Y_LINEAR, &tu_err_));
  TU_OK(cli_plot_busbw(rows, 4, "t", g, CLI_PLOT_Y_LOG, &tu_err_));
  assert_true(same_file(a, g));
  assert_false(same_file(a, l));
}

static void heatmap_draws_busiest_links(void **state) {
  (void)state;
  const char *dir = tu_tmpdir("test_cli_heatmap");
  topo_t *t = NULL;
  TU_OK(topo_gen_kind("mesh", "4x4", 50, 500, &t, &tu_err_));
  sim_result_t r = {0};
  r.time_ps = 1000000;
  r.nlinks = t->nlinks;
  TU_OK(tn_calloc(t->nlinks, sizeof *r.links, &r.links, &tu_err_));
  for (uint32_t i = 0; i < t->nlinks; i++) {
    r.links[i].link = i;
    r.links[i].busy_ps = r.time_ps - (uint64_t)i * r.time_ps / t->nlinks;
  }
  char path[1200];
  snprintf(path, sizeof path, "%s/heat.png", dir);
  TU_OK(cli_heatmap_write(t, &r, "mesh-4x4: allgather 1MiB greedy", path, &tu_err_));
  assert_true(file_starts_with(path, "\x89PNG\r\n\x1a\n", 8));
  snprintf(path, sizeof path, "%s/heat.svg", dir);
  TU_OK(cli_heatmap_write(t, &r, "mesh-4x4", path, &tu_err_));
  assert_true(file_starts_with(path, "<?xml", 5));
  tn_err_t err = {0};
  r.time_ps = 0;
  assert_int_equal(cli_heatmap_write(t, &r, "x", path, &err), TN_INVAL);
  sim_result_free(&r);
  topo_free(t);
}

/* ---- thread pool ---------------------------------------------------------------- */

typedef struct count_ctx {
  int hits[100];
  volatile sig_atomic_t stop;
} count_ctx_t;

static void count_job(void *arg, size_t i, unsigned worker) {
  (void)worker;
  count_ctx_t *c = arg;
  c->hits[i]++;
  if (i == 10) c->stop = 1;
}

static void parallel_runs_every_index_once_and_honours_stop(void **state) {
  (void)state;
  count_ctx_t c;
  memset(&c, 0, sizeof c);
  TU_OK(cli_parallel(100, 3, count_job, &c, NULL, &tu_err_));
  for (int i = 0; i < 100; i++)
    assert_int_equal(c.hits[i], 1);
  memset(&c, 0, sizeof c);
  TU_OK(cli_parallel(100, 1, count_job, &c, &c.stop, &tu_err_));
  assert_int_equal(c.hits[10], 1);
  assert_int_equal(c.hits[11], 0);
}

/* JSON text: integers and picosecond times exact (cJSON alone prints 2^53 as
 * 9.00719925474099e+15), and valid UTF-8 whatever bytes went in. */
static void cli_json_prints_exact_integers_and_valid_utf8(void **state) {
  (void)state;
  cJSON *o = cJSON_CreateObject();
  assert_non_null(o);
  assert_non_null(cli_json_add_u64(o, "two53", 9007199254740993ull));
  assert_non_null(cli_json_add_u64(o, "max", UINT64_MAX));
  assert_non_null(cli_json_add_ns(o, "a", 7824500));
  assert_non_null(cli_json_add_ns(o, "b", 1000));
  assert_non_null(cli_json_add_ns(o, "c", 9007199254740993ull));
  assert_non_null(cli_json_add_ns(o, "d", 5));
  assert_non_null(cJSON_AddStringToObject(o, "name", "x\xffy"));
  char *text = cli_json_text(o, false);
  assert_non_null(text);
  assert_string_equal(text, "{\"two53\":9007199254740993,\"max\":18446744073709551615,"
                            "\"a\":7824.5,\"b\":1,\"c\":9007199254740.993,\"d\":0.005,"
                            "\"name\":\"x\xef\xbf\xbdy\"}");
  assert_true(tn_text_ok(text, false, NULL));
  cJSON *back = cJSON_Parse(text);
  assert_non_null(back);
  assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(back, "two53")));
  cJSON_Delete(back);
  free(text);
  cJSON_Delete(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cli_parse_accepts_long_short_and_equals_forms),
      cmocka_unit_test(cli_json_prints_exact_integers_and_valid_utf8),
      cmocka_unit_test(cli_parse_rejects_unknown_option_with_suggestion),
      cmocka_unit_test(cli_parse_rejects_missing_value),
      cmocka_unit_test(table_widths_cover_header_and_cells),
      cmocka_unit_test(table_init_rejects_alignment_of_wrong_length),
      cmocka_unit_test(split_list_trims_and_rejects_empty_and_repeated_items),
      cmocka_unit_test(parse_algos_rejects_unknown_algorithm),
      cmocka_unit_test(parse_colls_accepts_aliases_and_rejects_repeats),
      cmocka_unit_test(parse_sizes_expands_ranges_and_rejects_repeats),
      cmocka_unit_test(parse_shard_accepts_index_below_count_only),
      cmocka_unit_test(parse_jobs_takes_1_to_1024),
      cmocka_unit_test(topo_label_strips_folder_and_extension),
      cmocka_unit_test(topo_spec_generates_kind_dims_fabrics),
      cmocka_unit_test(manifest_parse_reads_every_key),
      cmocka_unit_test(manifest_parse_rejects_unknown_key_naming_line),
      cmocka_unit_test(manifest_parse_rejects_missing_key_and_bad_values),
      cmocka_unit_test(manifest_load_takes_topology_paths_relative_to_its_folder),
      cmocka_unit_test(batch_cases_run_topology_major_algorithm_minor),
      cmocka_unit_test(batch_plan_rejects_colliding_folder_names),
      cmocka_unit_test(batch_plan_json_round_trips),
      cmocka_unit_test(batch_plan_json_keeps_seed_an_exact_number),
      cmocka_unit_test(batch_cost_ranks_greedy_and_big_fabrics_higher),
      cmocka_unit_test(batch_deal_balances_estimated_cost_deterministically),
      cmocka_unit_test(batch_case_inputs_change_with_every_input),
      cmocka_unit_test(results_speedups_compare_with_ring_of_same_size),
      cmocka_unit_test(results_json_has_one_row_per_result_with_contract_keys),
      cmocka_unit_test(results_csv_is_all_or_nothing),
      cmocka_unit_test(csv_text_quotes_and_doubles_quotes),
      cmocka_unit_test(fmt_time_and_duration_pick_units),
      cmocka_unit_test(progress_bar_shows_counts_failures_and_eta),
      cmocka_unit_test(progress_eta_weighs_remaining_work_not_item_count),
      cmocka_unit_test(plot_busbw_writes_png_and_svg),
      cmocka_unit_test(plot_busbw_rejects_unknown_format_and_empty_data),
      cmocka_unit_test(plot_busbw_series_have_distinct_markers_and_dashes),
      cmocka_unit_test(plot_busbw_goes_log_when_busbw_spans_over_10x),
      cmocka_unit_test(heatmap_draws_busiest_links),
      cmocka_unit_test(parallel_runs_every_index_once_and_honours_stop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
