/* tests/unit/testutil.c — scratch directories and random fabrics for unit tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *tu_tmpdir(const char *test_name) {
  static char path[1024];
  const char *base = getenv("TENET_TMP");
  if (base == NULL || *base == '\0') base = "/tmp";
  mkdir(base, 0777);
  snprintf(path, sizeof path, "%s/%s", base, test_name);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
  if (system(cmd) != 0) return NULL;
  return path;
}

/* Links of a fabric being drawn: each (src, dst) at most once. */
typedef struct draw {
  tn_rng_t rng;
  uint32_t nodes, m;
  uint8_t *has;
  topo_link_t *links;
} draw_t;

static void add_link(draw_t *d, uint32_t a, uint32_t b) {
  if (a == b || d->has[(size_t)a * d->nodes + b]) return;
  d->has[(size_t)a * d->nodes + b] = 1;
  double bw = 10.0 + (double)tn_rng_below(&d->rng, 90); /* drawn before the latency */
  uint64_t lat = tn_rng_below(&d->rng, 1000) * 1000u;
  d->links[d->m++] = (topo_link_t){.src = a, .dst = b, .bandwidth_GBps = bw, .latency_ps = lat};
}

topo_t *tu_random_fabric(uint32_t n, uint64_t seed, bool with_switch) {
  draw_t d = {.nodes = n + 1};
  tn_rng_seed(&d.rng, seed);
  uint32_t *perm = calloc(n, sizeof *perm);
  d.has = calloc((size_t)d.nodes * d.nodes, 1);
  d.links = calloc((size_t)d.nodes * d.nodes, sizeof *d.links);
  assert_non_null(perm);
  assert_non_null(d.has);
  assert_non_null(d.links);
  for (uint32_t i = 0; i < n; i++)
    perm[i] = i;
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = (uint32_t)tn_rng_below(&d.rng, i), x = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = x;
  }
  for (uint32_t i = 0; i < n; i++)
    add_link(&d, perm[i], perm[(i + 1) % n]);
  uint32_t extra = n + (uint32_t)tn_rng_below(&d.rng, n + 1);
  for (uint32_t e = 0; e < extra; e++) {
    uint32_t a = (uint32_t)tn_rng_below(&d.rng, n); /* drawn in this order */
    add_link(&d, a, (uint32_t)tn_rng_below(&d.rng, n));
  }
  for (uint32_t v = 0; with_switch && v < n; v++)
    if (tn_rng_below(&d.rng, 2)) {
      add_link(&d, v, n);
      add_link(&d, n, v);
    }
  topo_t *t = NULL;
  char name[64];
  snprintf(name, sizeof name, "random-%u-%llu%s", n, (unsigned long long)seed,
           with_switch ? "-sw" : "");
  tn_err_t err = {0};
  if (topo_create(name, n, with_switch ? 1 : 0, d.links, d.m, &t, &err) != TN_OK)
    fail_msg("tu_random_fabric: %s", err.msg);
  free(perm);
  free(d.has);
  free(d.links);
  return t;
}

topo_t *tu_shipped(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/topologies/%s.json", TENET_SOURCE_DIR, name);
  tn_err_t err = {0};
  topo_t *t = NULL;
  if (topo_load(path, &t, &err) != TN_OK) fail_msg("%s: %s", path, err.msg);
  return t;
}

uint64_t tu_xfer_ps(uint64_t bytes, double gbps) {
  uint64_t ps = 0;
  if (!tn_xfer_ps(bytes, gbps, &ps))
    fail_msg("%llu bytes at %g GB/s do not fit in 2^62 ps", (unsigned long long)bytes, gbps);
  return ps;
}

uint64_t tu_bound_ps(const topo_bounds_t *b, tn_coll_t c, uint64_t size) {
  uint64_t ps = 0;
  tn_err_t err = {0};
  if (topo_bound_ps(b, c, size, &ps, &err) != TN_OK) fail_msg("%s", err.msg);
  return ps;
}

uint64_t tu_lower_bound_ps(const topo_t *t, tn_coll_t c, uint64_t size) {
  uint64_t ps = 0;
  tn_err_t err = {0};
  if (topo_lower_bound_ps(t, c, size, &ps, &err) != TN_OK) fail_msg("%s", err.msg);
  return ps;
}
