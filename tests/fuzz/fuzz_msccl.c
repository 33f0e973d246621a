/* tests/fuzz/fuzz_msccl.c — libFuzzer target for the MSCCL-IR importer: any bytes must give
 * an algorithm or an error, never a crash; an algorithm the exporter accepts must come back
 * equal from its own XML (the round-trip property of emit/msccl/export.c). */
#include <stdint.h>
#include <stdlib.h>

#include "emit/emit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tn_err_t err = {0};
  algo_t *a = NULL;
  emit_msccl_opts_t o = {3, NULL};
  if (emit_msccl_import_mem_opts((const char *)data, size, "fuzz.xml", 1u << 20, &o, &a, &err) !=
      TN_OK)
    return 0;
  char *xml = NULL;
  size_t len = 0;
  tn_err_t e2 = {0};
  if (emit_msccl_export_mem(a, &xml, &len, &e2) == TN_OK) {
    algo_t *b = NULL;
    tn_err_t e3 = {0};
    if (emit_msccl_import_mem_opts(xml, len, "rt.xml", 1u << 20, &o, &b, &e3) == TN_OK &&
        !algo_equal(a, b))
      abort(); /* the export lost or changed something */
    algo_free(b);
    free(xml);
  }
  algo_free(a);
  return 0;
}
