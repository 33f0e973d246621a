/* tests/fuzz/fuzz_workload.c — libFuzzer target for the Chakra workload reader: decodes any
 * bytes (plain or gzip) as rank 0 of a 4-rank workload; what it accepts is copied to the
 * other ranks and checked as a step (wl_check: cycles, collectives across ranks, p2p).
 * Must never crash, leak or read out of bounds; every rejection is a status and a message. */
#include <stdlib.h>

#include "emit/emit.h"
#include "workload/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Rank 0's nodes appended to rank r, dependencies and names as they are. */
static tn_status_t copy_rank(workload_t *w, uint32_t r, tn_err_t *err) {
  char name[WL_MAX_NAME + 1];
  tn_status_t st = TN_OK;
  for (uint32_t i = 0; i < wl_count(w, 0) && st == TN_OK; i++) {
    const wl_node_t *x = wl_node(w, 0, i);
    st = wl_add(w, r, x, wl_name(w, 0, x, name), wl_deps(w, 0, x), x->ndeps, NULL, err);
  }
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  workload_t *w = NULL;
  tn_err_t err = {0};
  if (wl_create(4, &w, &err) != TN_OK) return 0;
  if (emit_chakra_decode_workload(data, size, "fuzz.0.et", w, 0, &err) == TN_OK) {
    tn_status_t st = TN_OK;
    for (uint32_t r = 1; r < w->npus && st == TN_OK; r++)
      st = copy_rank(w, r, &err);
    wl_colls_t colls;
    if (st == TN_OK && wl_check(w, &colls, &err) == TN_OK) wl_colls_free(&colls);
    if (st != TN_OK && err.msg[0] == '\0') abort();
  } else if (err.msg[0] == '\0') {
    abort(); /* every failure names what went wrong */
  }
  wl_free(w);
  return 0;
}
