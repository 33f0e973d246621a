/* bench/bench_greedy.c — quick scratch */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "greedy/greedy.h"
int main(int argc, char **argv) {
  const char *kind = argc > 1 ? argv[1] : "mesh", *dims = argc > 2 ? argv[2] : "8x8";
  uint64_t size = argc > 3 ? strtoull(argv[3], NULL, 10) : (1u << 20);
  uint32_t k = argc > 4 ? (uint32_t)atoi(argv[4]) : 0;
  tn_err_t err = {0};
  topo_t *t = NULL;
  if (topo_gen_kind(kind, dims, 50, 500, &t, &err)) { printf("%s\n", err.msg); return 1; }
  greedy_opts_t o = {.seed = 1, .chunks_per_npu = k};
  schedule_t s;
  double t0 = tn_wall_seconds();
  if (greedy_run(t, size, &o, &s, &err)) { printf("%s\n", err.msg); return 1; }
  double t1 = tn_wall_seconds();
  uint64_t lb = topo_lower_bound_ps(t, TN_ALLGATHER, size);
  printf("%s %s size %llu K %u time %.3f us bound %.3f us ratio %.4f xfers %u synth %.1f ms\n", kind, dims,
         (unsigned long long)size, s.chunks_per_npu, (double)s.time_ps / 1e6, (double)lb / 1e6, (double)lb / (double)s.time_ps,
         schedule_len(&s), (t1 - t0) * 1e3);
  schedule_free(&s);
  topo_free(t);
  return 0;
}
