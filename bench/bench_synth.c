/* bench/bench_synth.c — the portfolio against the tight bound on every fabric class: per
 * fabric and collective (All-to-All included, against Direct and, on fabrics with servers,
 * MSCCLang's Two-Step), at 1 MiB, 64 MiB and 1 GiB, the method `auto` chose, its simulated
 * time over the lower bound, its time over the better baseline, and the wall time of
 * synthesis (all candidates and their simulations). Prints figures; not a test.
 *
 * Usage: bench_synth [FABRIC ...]   (default: every shipped topology, those without switches
 * first, each group by name; a fabric is anything `tenet` takes as TOPO: a shipped name, a
 * file, or KIND-DIMS) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "synth/synth.h"

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
  tn_err_t err = {0};
  char **shipped = NULL;
  size_t n = (size_t)(argc - 1);
  if (argc == 1 && cli_shipped_names(cli_topology_dir(), &shipped, &n, &err) != TN_OK)
    die("the shipped topologies", &err);
  topo_t **topos = NULL;
  if (tn_calloc(n + 1, sizeof *topos, &topos, &err) != TN_OK) die("topologies", &err);
  for (size_t i = 0; i < n; i++) {
    const char *name = shipped ? shipped[i] : argv[i + 1];
    if (cli_load_topo_spec(name, &topos[i], &err) != TN_OK) die(name, &err);
  }
  const tn_coll_t colls[] = {TN_ALLGATHER, TN_REDUCESCATTER, TN_ALLREDUCE, TN_ALLTOALL};
  printf("portfolio (auto) against the lower bound and the better of Ring and Direct "
         "(All-to-All: Direct and Two-Step)\n");
  /* the shipped ones without switches first; named ones in the order given */
  for (int pass = 0; pass < (shipped ? 2 : 1); pass++)
    for (size_t i = 0; i < n; i++) {
      if (shipped && (topos[i]->switches > 0) != (pass == 1)) continue;
      for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
          row(topos[i], colls[c], sizes[z]);
    }
  for (size_t i = 0; i < n; i++) {
    topo_free(topos[i]);
    if (shipped) free(shipped[i]);
  }
  free(topos);
  free(shipped);
  return 0;
}
