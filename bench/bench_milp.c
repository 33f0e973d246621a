/* bench/bench_milp.c — the yardstick of issue 6: the GLPK MILP against the greedy on
 * small fabrics at 1 and 2 chunks per NPU (status, times, greedy/MILP ratio, solve time).
 * Usage: bench_milp [time_limit_s=20] [latency_ns=500] [size=1MiB] [steps_per_xfer=0 (auto)]
 * Not a test: it prints a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "greedy/greedy.h"
#include "milp/milp.h"
#include "topo/topo.h"

typedef struct fabric {
  const char *kind, *dims; /* NULL kind: the heterogeneous one */
} fabric_t;

static tn_status_t make(const fabric_t *f, double lat, topo_t **t, tn_err_t *err) {
  if (f->kind) return topo_gen_kind(f->kind, f->dims, 50.0, lat, t, err);
  /* 4 x 2 torus-like fabric: fast rings of 4 (100 GB/s), slow pairs (25 GB/s). */
  topo_dim_t d[2] = {{TOPO_DIM_RING, 4, 100.0, lat, false}, {TOPO_DIM_RING, 2, 25.0, lat, false}};
  return topo_gen("hetero-4x2", d, 2, t, err);
}

int main(int argc, char **argv) {
  double limit = argc > 1 ? atof(argv[1]) : 20.0, lat = argc > 2 ? atof(argv[2]) : 500.0;
  uint64_t size = 1u << 20;
  tn_err_t err = {0};
  if (argc > 3 && tn_parse_size(argv[3], &size, &err) != TN_OK) {
    fprintf(stderr, "bench_milp: %s\n", err.msg);
    return 1;
  }
  uint32_t res_steps = argc > 4 ? (uint32_t)atoi(argv[4]) : 0;
  const fabric_t fabrics[] = {{"ring", "8"},   {"fc", "8"},      {"switch", "8"},
                              {"mesh", "2x4"}, {"torus", "4x4"}, {"hypercube", "16"},
                              {NULL, "4x2"}};
  printf("MILP vs greedy, All-Gather of %llu B, 50 GB/s links, latency %g ns, time limit %g s "
         "per case, %u step(s) per transfer (0: auto)\n",
         (unsigned long long)size, lat, limit, res_steps);
  printf(
      "milp_ns: the MILP's schedule replayed by the engine (= simulated time); obj_ns and\n"
      "bound_ns: its objective and proven bound in the discrete model (steps x step); start_ns:\n"
      "the starting plan (greedy re-timed or the MILP's own list schedule) in that model.\n");
  printf("%-14s %2s %-9s %11s %11s %11s %11s %11s %7s %7s %7s %6s\n", "fabric", "k", "status",
         "milp_ns", "obj_ns", "bound_ns", "greedy_ns", "start_ns", "g/milp", "gap", "solve_s",
         "vars");
  for (size_t i = 0; i < sizeof fabrics / sizeof *fabrics; i++)
    for (uint32_t k = 1; k <= 2; k++) {
      topo_t *t = NULL;
      memset(&err, 0, sizeof err);
      if (make(&fabrics[i], lat, &t, &err) != TN_OK) {
        fprintf(stderr, "bench_milp: %s\n", err.msg);
        return 1;
      }
      schedule_t g, m;
      greedy_opts_t go = {.seed = 1, .chunks_per_npu = k};
      tn_err_t gerr = {0};
      bool have_g = greedy_run(t, size, &go, &g, &gerr) == TN_OK;
      milp_opts_t o;
      milp_opts_init(&o);
      o.time_limit_s = limit;
      o.chunks_per_npu = k;
      o.steps_per_xfer = res_steps;
      o.gate_sends = true; /* an All-Gather yardstick: keep the plan's times */
      o.warm = have_g ? &g : NULL;
      milp_result_t r;
      tn_status_t st = milp_solve(t, size, &o, &m, &r, &err);
      char gbuf[32] = "n/a", ratio[16] = "n/a";
      if (have_g) snprintf(gbuf, sizeof gbuf, "%.1f", (double)g.time_ps / 1e3);
      if (have_g && st == TN_OK)
        snprintf(ratio, sizeof ratio, "%.3f", (double)g.time_ps / (double)m.time_ps);
      if (st == TN_OK)
        printf("%-14s %2u %-9s %11.1f %11.1f %11.1f %11s %11.1f %7s %6.1f%% %7.2f %6u%s\n", t->name,
               k, milp_status_name(r.status), (double)m.time_ps / 1e3, (double)r.objective_ps / 1e3,
               (double)r.bound_ps / 1e3, gbuf, (double)r.start_ps / 1e3, ratio, 100.0 * r.gap,
               r.solve_s, r.cols, r.symmetric ? " sym" : "");
      else
        printf("%-14s %2u %-9s %11s %11s %11s %11s %11s %7s %7s %7.2f  (%s)\n", t->name, k,
               st == TN_LIMIT ? "limit" : "error", "-", "-", "-", gbuf, "-", "-", "-", r.solve_s,
               err.msg);
      fflush(stdout);
      if (have_g) schedule_free(&g);
      schedule_free(&m);
      topo_free(t);
    }
  return 0;
}
