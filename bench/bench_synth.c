/* bench/bench_synth.c — the portfolio against the tight bound on every fabric class: per
 * fabric and collective (All-to-All included, against Direct and, on fabrics with servers,
 * MSCCLang's Two-Step), at 1 MiB, 64 MiB and 1 GiB, the method `auto` chose, its simulated
 * time over the lower bound, its time over the better baseline, and the wall time of
 * synthesis (all candidates and their simulations). Prints figures; not a test.
 *
 * Usage: bench_synth [FABRIC ...]   (default: every fabric below; a fabric is anything
 * `tenet` takes as TOPO: a shipped name, a file, or KIND-DIMS) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "synth/synth.h"

/* Every topology shipped in topologies/ (tests/cli/topo.sh checks that none is missing). */
static const char *const default_fabrics[] = {
    /* direct-connect */
    "mesh-8x8", "torus-8x8", "mesh3d-4x4x4", "hypercube-64", "mesh-16x8", "ring-8", "hetero-ring-6",
    "mesh-8x8-hetero", "dgx1-8", "torus-8x8-degraded", "random4reg-32", "mesh-2x4", "torus-4x4",
    "hypercube-16", "fc-8", "ring-4", "ring-64", "torus3d-4x4x4", "torus-16x8", "mesh3d-8x4x4",
    /* switch fabrics */
    "switch-8", "switch-16", "hierarchical-4x4", "hierarchical-16x8", "spine-4x8", "leaf-32",
    "rail-4x8", "rail-4x8-degraded", "fattree-32-4to1", "fattree-64-2to1"};

static const uint64_t sizes[] = {1u << 20, 64u << 20, 1024u << 20};

static void die(const char *what, const tn_err_t *err) {
  fprintf(stderr, "bench_synth: %s: %s\n", what, err->msg);
  exit(1);
}

/* Simulated time of method m (auto's own figure is already simulated). */
static uint64_t time_of(const topo_t *t, tn_coll_t coll, uint64_t size, synth_method_t m,
                        synth_result_t *r, double *ms) {
  tn_err_t err = {0};
  synth_opts_t o = {.method = m, .seed = CLI_DEFAULT_SEED};
  if (synth_run(t, coll, size, &o, r, &err) != TN_OK) die(synth_method_name(m), &err);
  if (ms) *ms = r->synth_ms;
  if (r->time_ps) return r->time_ps;
  sim_result_t s = {0};
  if (sim_run(t, r->algo, NULL, &s, &err) != TN_OK) die("sim", &err);
  uint64_t ps = s.time_ps;
  sim_result_free(&s);
  return ps;
}

static void row(const topo_t *t, tn_coll_t coll, uint64_t size) {
  /* An All-to-All's size is n equal blocks (cut into up to 8 pieces): round down. */
  if (coll == TN_ALLTOALL) size -= size % ((uint64_t)t->npus * 8);
  synth_result_t a = {0}, ring = {0}, direct = {0}, two = {0};
  double ms = 0;
  uint64_t ta = time_of(t, coll, size, SYNTH_AUTO, &a, &ms);
  /* No Ring All-to-All: Direct is its baseline, and Two-Step where the fabric has servers
   * (TN_INVAL elsewhere: no such baseline). */
  uint64_t tr = coll == TN_ALLTOALL ? UINT64_MAX : time_of(t, coll, size, SYNTH_RING, &ring, NULL);
  uint64_t td = time_of(t, coll, size, SYNTH_DIRECT, &direct, NULL);
  if (coll == TN_ALLTOALL) {
    tn_err_t e = {0};
    synth_opts_t o = {.method = SYNTH_TWOSTEP, .seed = CLI_DEFAULT_SEED};
    if (synth_run(t, coll, size, &o, &two, &e) == TN_OK && two.time_ps < tr) tr = two.time_ps;
  }
  uint64_t lb = 0, base = tr < td ? tr : td;
  tn_err_t err = {0};
  if (topo_lower_bound_ps(t, coll, size, &lb, &err) != TN_OK) die("lower bound", &err);
  char sz[32];
  printf("  %-14s %-13s %6s  %-7s time %12.3f us  bound %12.3f us  time/bound %6.3f  "
         "time/best-baseline %5.3f  synth %8.1f ms\n",
         t->name, tn_coll_name(coll), tn_fmt_size(size, sz, sizeof sz), synth_method_name(a.method),
         (double)ta / 1e6, (double)lb / 1e6, lb ? (double)ta / (double)lb : 0.0,
         (double)ta / (double)base, ms);
  fflush(stdout);
  synth_result_free(&a);
  synth_result_free(&ring);
  synth_result_free(&direct);
  synth_result_free(&two);
}

int main(int argc, char **argv) {
  tn_alloc_setup(); /* synthesis in-process, with the allocator a tenet process has */
  size_t n = argc > 1 ? (size_t)(argc - 1) : sizeof default_fabrics / sizeof default_fabrics[0];
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE, TN_ALLTOALL};
  printf("portfolio (auto) against the lower bound and the better of Ring and Direct "
         "(All-to-All: Direct and Two-Step)\n");
  for (size_t i = 0; i < n; i++) {
    const char *name = argc > 1 ? argv[i + 1] : default_fabrics[i];
    tn_err_t err = {0};
    topo_t *t = NULL;
    if (cli_load_topo_spec(name, &t, &err) != TN_OK) die(name, &err);
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        row(t, colls[c], sizes[s]);
    topo_free(t);
  }
  return 0;
}
