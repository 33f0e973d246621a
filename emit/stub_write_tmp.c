/* emit/stub_write_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "emit/emit.h"

tn_status_t emit_chakra_write(const algo_t *a, const char *prefix, tn_err_t *err) {
  (void)a, (void)prefix;
  return tn_err_set(err, TN_INTERNAL, "Chakra writer not implemented yet");
}
