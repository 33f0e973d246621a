/* bench/bench_trees.c — the tree All-Reduce (trees/) against the fabric's ingress bound
 * 2(n-1)S / (total link bandwidth) and against the greedy's Reduce-Scatter + All-Gather, on
 * the meshes, torus, hypercube and a DGX-1-like hybrid cube-mesh, at 1 MiB, 64 MiB and 1 GiB:
 * simulated time, ratio to the bound, busbw and synthesis time (packing, planning and
 * lowering). Prints figures; not a test.
 *
 * Usage: bench_trees [FABRIC|all] [SIZE_MIB] [chunks_per_npu] [window_per_hop] [max_trees]
 *        (FABRIC as in the table below; 0 keeps a default; greedy rows only with "all").
 * With BENCH_TREES_LINKS set it also prints the busiest and mean link utilisation; with
 * BENCH_TREES_BUCKETS the plan's mean link utilisation in 20 time slices (fill and drain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "greedy/greedy.h"
#include "sim/sim.h"
#include "topo/topo.h"
#include "trees/trees.h"

static const uint64_t MiB = 1u << 20;

static void die(const char *what, const tn_err_t *err) {
  fprintf(stderr, "bench_trees: %s: %s\n", what, err->msg);
  exit(1);
}

/* DGX-1-like hybrid cube-mesh: two fully connected quads 0-3 and 4-7, NPU i linked to
 * i + 4; per NPU six 25 GB/s NVLinks, so one quad neighbour and the cross link are doubled
 * (50 GB/s). Latency 500 ns. */
static topo_t *dgx1(void) {
  static const uint32_t e[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1},
                                  {2, 3, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2},
                                  {5, 7, 1}, {6, 7, 1}, {0, 4, 2}, {1, 5, 2}, {2, 6, 2},
                                  {3, 7, 2}};
  topo_link_t l[32];
  uint32_t k = 0;
  for (size_t i = 0; i < sizeof e / sizeof *e; i++) {
    double bw = 25.0 * e[i][2];
    l[k++] = (topo_link_t){.src = e[i][0], .dst = e[i][1], .bandwidth_GBps = bw, .latency_ps = 500000};
    l[k++] = (topo_link_t){.src = e[i][1], .dst = e[i][0], .bandwidth_GBps = bw, .latency_ps = 500000};
  }
  tn_err_t err = {0};
  topo_t *t = NULL;
  if (topo_create("dgx1-like", 8, 0, l, k, &t, &err) != TN_OK) die("dgx1", &err);
  return t;
}

static topo_t *fabric(const char *name) {
  static const struct {
    const char *name, *kind, *dims;
  } f[] = {{"mesh-8x8", "mesh", "8x8"},       {"mesh3d-4x4x4", "mesh", "4x4x4"},
           {"torus-8x8", "torus", "8x8"},     {"mesh-16x8", "mesh", "16x8"},
           {"hypercube-64", "hypercube", "64"}};
  if (strcmp(name, "dgx1-like") == 0) return dgx1();
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    if (strcmp(name, f[i].name) == 0) {
      tn_err_t err = {0};
      topo_t *t = NULL;
      if (topo_gen_kind(f[i].kind, f[i].dims, 50.0, 500.0, &t, &err) != TN_OK) die(name, &err);
      return t;
    }
  fprintf(stderr, "bench_trees: unknown fabric %s\n", name);
  exit(1);
}

static uint64_t simulate(const topo_t *t, const algo_t *a) {
  tn_err_t err = {0};
  sim_result_t res;
  memset(&res, 0, sizeof res);
  if (sim_run(t, a, NULL, &res, &err) != TN_OK) die("sim", &err);
  uint64_t time = res.time_ps;
  if (getenv("BENCH_TREES_LINKS")) {
    double sum = 0;
    for (uint32_t i = 0; i < res.nlinks; i++)
      sum += (double)res.links[i].busy_ps;
    fprintf(stderr, "  links: busiest %.4f, mean %.4f of the time\n",
            (double)res.links[0].busy_ps / (double)time, sum / res.nlinks / (double)time);
  }
  sim_result_free(&res);
  return time;
}

static uint64_t greedy_ps(const topo_t *t, uint64_t size) {
  tn_err_t err = {0};
  greedy_opts_t o = {.seed = 1};
  schedule_t s;
  algo_t *a = NULL;
  if (greedy_run_for(t, TN_ALLREDUCE, size, &o, &s, &err) != TN_OK) die("greedy", &err);
  if (algo_from_schedule(&s, TN_ALLREDUCE, "greedy", &a, &err) != TN_OK) die("greedy", &err);
  uint64_t ps = simulate(t, a);
  algo_free(a);
  schedule_free(&s);
  return ps;
}

/* Debug: link utilisation of the plan in 20 time buckets, and chunk completion quantiles. */
static void buckets(const topo_t *t, const schedule_t *s) {
  double busy[20] = {0};
  double T = (double)s->time_ps;
  for (uint32_t i = 0; i < schedule_len(s); i++) {
    const sched_xfer_t *x = schedule_xfer(s, i);
    uint32_t l = topo_find_link(t, x->src, x->dst);
    uint64_t ps = 0; /* the plan ran, so its transfers' times fit */
    if (!tn_xfer_ps(x->bytes, t->links[l].bandwidth_GBps, &ps)) continue;
    double dur = (double)ps;
    double e = (double)x->end_ps - (double)t->links[l].latency_ps, b = e - dur;
    for (int k = 0; k < 20; k++) {
      double lo = T * k / 20, hi = T * (k + 1) / 20;
      double ov = (e < hi ? e : hi) - (b > lo ? b : lo);
      if (ov > 0) busy[k] += ov;
    }
  }
  fprintf(stderr, "  util:");
  for (int k = 0; k < 20; k++)
    fprintf(stderr, " %.2f", busy[k] / (T / 20) / t->nlinks);
  fprintf(stderr, "\n");
}

static void row(const char *name, const topo_t *t, uint64_t size, const trees_opts_t *o,
                bool greedy) {
  tn_err_t err = {0};
  schedule_t s;
  algo_t *a = NULL;
  double t0 = tn_wall_seconds();
  if (trees_allreduce(t, size, o, &s, &err) != TN_OK) die(name, &err);
  double t1 = tn_wall_seconds();
  if (algo_from_schedule(&s, TN_ALLREDUCE, "trees", &a, &err) != TN_OK) die(name, &err);
  double t2 = tn_wall_seconds();
  algo_verify_report_t rep;
  if (algo_verify(a, t, &rep, &err) != TN_OK) die(name, &err);
  if (getenv("BENCH_TREES_BUCKETS")) buckets(t, &s);
  uint64_t sim = simulate(t, a), lb = 0;
  if (topo_lower_bound_ps(t, TN_ALLREDUCE, size, &lb, &err) != TN_OK) die("lower bound", &err);
  double busbw = tn_gbps(size, sim) * 2.0 * (t->npus - 1) / t->npus;
  char sz[32];
  printf("  %-13s %7s K=%-3u xfers %8u  sim %11.3f us  plan %s  /bound %.4f  busbw %6.1f GB/s  "
         "synth %6.1f + lower %6.1f ms",
         name, tn_fmt_size(size, sz, sizeof sz), s.chunks_per_npu, schedule_len(&s),
         (double)sim / 1e6, sim == s.time_ps ? "==" : "!=", (double)sim / (double)lb, busbw,
         (t1 - t0) * 1e3, (t2 - t1) * 1e3);
  if (greedy) {
    uint64_t g = greedy_ps(t, size);
    printf("  greedy %11.3f us /bound %.4f", (double)g / 1e6, (double)g / (double)lb);
  }
  printf("\n");
  fflush(stdout);
  algo_free(a);
  schedule_free(&s);
}

static void packing_row(const char *name, const topo_t *t, uint32_t max_trees) {
  tn_err_t err = {0};
  trees_packing_t pk;
  double t0 = tn_wall_seconds();
  if (trees_pack(t, max_trees, &pk, &err) != TN_OK) die(name, &err);
  double ms = (tn_wall_seconds() - t0) * 1e3;
  double link_sum = 0;
  for (uint32_t l = 0; l < t->nlinks; l++)
    link_sum += t->links[l].bandwidth_GBps;
  double ideal = link_sum / (2.0 * (t->npus - 1));
  printf("%s: %u NPUs, packing %.4f GB/s (fractional %.4f) of ingress-ideal %.4f = %.4f, "
         "%u trees, %.1f ms\n",
         name, t->npus, pk.value_GBps, pk.fractional_GBps, ideal, pk.value_GBps / ideal, pk.ntrees,
         ms);
  trees_packing_free(&pk);
}

int main(int argc, char **argv) {
  static const char *all[] = {"mesh-8x8",  "mesh3d-4x4x4", "torus-8x8",
                              "mesh-16x8", "hypercube-64", "dgx1-like"};
  const char *which = argc > 1 ? argv[1] : "all";
  uint64_t only = argc > 2 ? strtoull(argv[2], NULL, 10) * MiB : 0;
  trees_opts_t o = {0};
  if (argc > 3) o.chunks_per_npu = (uint32_t)strtoul(argv[3], NULL, 10);
  if (argc > 4) o.window_per_hop = strtod(argv[4], NULL);
  if (argc > 5) o.max_trees = (uint32_t)strtoul(argv[5], NULL, 10);
  bool greedy = strcmp(which, "all") == 0;
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    if (!greedy && strcmp(which, all[i]) != 0) continue;
    topo_t *t = fabric(all[i]);
    packing_row(all[i], t, o.max_trees);
    static const uint64_t sizes[] = {1, 64, 1024};
    for (size_t j = 0; j < 3 && only == 0; j++)
      row(all[i], t, sizes[j] * MiB, &o, greedy);
    if (only) row(all[i], t, only, &o, greedy);
    topo_free(t);
  }
  return 0;
}
