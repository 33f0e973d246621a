/* tests/fuzz/fuzz_spec.c — libFuzzer target for the command line's small parsers: sizes
 * (common/units.c: "1MiB", "64KB", lists and ranges "1KiB..1GiB") and KIND-DIMS generator
 * names ("mesh-8x8", "hypercube-512", topo/gen.c's one rule). The input is split at its
 * first newline: the first line is parsed as a size and a size list, the rest as a
 * KIND-DIMS name, both as the commands' TOPO argument and as `topo gen KIND DIMS`. Anything
 * must either parse or fail with a message (a refused shape with TN_INVAL: exit 1); a size
 * that parses prints and parses back to itself; a built fabric has the NPUs its sizes
 * multiply to. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sizes(const char *s) {
  tn_err_t err = {0};
  uint64_t v = 0;
  if (tn_parse_size(s, &v, &err) == TN_OK) {
    char buf[64];
    uint64_t w = 0;
    tn_err_t e2 = {0};
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    if (tn_parse_size(buf, &w, &e2) != TN_OK || w != v) abort();
  } else if (err.msg[0] == '\0') {
    abort();
  }
  uint64_t *list = NULL;
  size_t n = 0;
  tn_err_t e3 = {0};
  if (cli_parse_sizes(s, &list, &n, &e3) == TN_OK && n == 0) abort();
  free(list);
}

/* Product of the decimal numbers in s (saturating): the NPUs a spec would generate. */
static uint64_t npus_of(const char *s) {
  uint64_t prod = 1, v = 0;
  bool in = false;
  for (;; s++) {
    if (*s >= '0' && *s <= '9') {
      v = v > UINT32_MAX ? v : v * 10 + (uint64_t)(*s - '0');
      in = true;
    } else {
      if (in) prod = prod > UINT32_MAX || v > UINT32_MAX ? UINT64_MAX : prod * (v ? v : 1);
      in = false, v = 0;
      if (*s == '\0') return prod;
    }
  }
}

static void spec(const char *s) {
  topo_t *t = NULL;
  tn_err_t err = {0};
  /* Only generator names: a spec that names a file or shipped topology is not generated.
   * Fabrics of 257..65,536 NPUs (a fully connected one of thousands has millions of links)
   * take milliseconds or more to build: skipped here (the size
   * checks beyond the caps are unit-tested), so the fuzzer explores the parser. */
  if (strchr(s, '/') != NULL || strlen(s) > 64) return;
  uint64_t n = npus_of(s);
  if (n > 256 && n <= 65536) return;
  tn_status_t st = cli_load_topo_spec(s, &t, &err);
  if (st == TN_OK && (t == NULL || t->npus == 0)) abort();
  if (st != TN_OK && err.msg[0] == '\0') abort();
  topo_free(t);
  /* The KIND DIMS path directly (what `tenet topo gen KIND DIMS` calls): every shape it
   * refuses is a bad argument with a message (TN_INVAL, exit 1), never a limit or a
   * crash; a fabric it builds has as many NPUs as its sizes multiply to. */
  const char *dash = strchr(s, '-');
  if (dash == NULL || dash - s >= 16) return;
  char kind[16];
  memcpy(kind, s, (size_t)(dash - s));
  kind[dash - s] = '\0';
  t = NULL;
  tn_err_t e2 = {0};
  st = topo_gen_kind(kind, dash + 1, 50.0, 500.0, &t, &e2);
  if (st != TN_OK && (st != TN_INVAL || e2.msg[0] == '\0' || t != NULL)) abort();
  if (st == TN_OK && t->npus != n) abort();
  topo_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256) return 0;
  char *s = malloc(size + 1);
  if (s == NULL) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  char *nl = memchr(s, '\n', size);
  if (nl != NULL) *nl = '\0';
  sizes(s);
  if (nl != NULL) spec(nl + 1);
  free(s);
  return 0;
}
