/* tests/fuzz/fuzz_chakra.c — libFuzzer target for the Chakra ET reader: decodes any bytes as
 * rank 0 of an 8-rank set (plain or gzip), then dumps what it accepted as JSON and DOT.
 * Must never crash, leak or read out of bounds; every rejection is a status. */
#include <stdio.h>
#include <stdlib.h>

#include "emit/emit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  algo_t *a = NULL;
  tn_err_t err = {0};
  if (algo_create_unknown("fuzz", 8, &a, &err) != TN_OK) return 0;
  if (emit_chakra_decode(data, size, "fuzz.0.et", a, 0, &err) == TN_OK) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
      emit_json_dump(a, f, &err);
      emit_dot(a, 0, f, &err);
      fclose(f);
    }
    free(buf);
  } else if (err.msg[0] == '\0') {
    abort(); /* every failure names what went wrong */
  }
  algo_free(a);
  return 0;
}
