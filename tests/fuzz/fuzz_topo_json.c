/* tests/fuzz/fuzz_topo_json.c — libFuzzer target for the topology JSON loader (topo/json.c).
 * Any input must either load or fail with a message; what loads must save and load back
 * equal in both forms (a crash, leak or mismatch is a finding). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must_round_trip(const topo_t *t, bool explicit_links) {
  char *s = NULL;
  topo_t *u = NULL;
  tn_err_t err = {0};
  if (topo_to_json(t, explicit_links, &s, &err) != TN_OK) abort();
  if (topo_load_json(s, strlen(s), "round", &u, &err) != TN_OK || !topo_equal(t, u)) abort();
  topo_free(u);
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topo_t *t = NULL;
  tn_err_t err = {0};
  tn_status_t st = topo_load_json((const char *)data, size, "fuzz.json", &t, &err);
  if (st == TN_OK) {
    /* Keep the fuzzer fast: round-trip only fabrics of moderate size. */
    if (t->nlinks <= 100000) {
      must_round_trip(t, false);
      must_round_trip(t, true);
    }
    topo_free(t);
  } else if (t != NULL || err.msg[0] == '\0') {
    abort(); /* a failure always explains itself and returns nothing */
  }
  return 0;
}
