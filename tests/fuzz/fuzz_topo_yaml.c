/* tests/fuzz/fuzz_topo_yaml.c — libFuzzer target for the ASTRA-sim network YAML importer
 * (topo/yaml.c). Any input must either load or fail with a message and no fabric. */
#include <stdint.h>
#include <stdlib.h>

#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topo_t *t = NULL;
  tn_err_t err = {0};
  tn_status_t st = topo_load_yaml((const char *)data, size, "fuzz.yml", &t, &err);
  if (st == TN_OK) {
    if (t->npus == 0) abort();
    topo_free(t);
  } else if (t != NULL || err.msg[0] == '\0') {
    abort();
  }
  return 0;
}
