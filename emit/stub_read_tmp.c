/* emit/stub_read_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "emit/emit.h"

tn_status_t emit_chakra_read(const char *prefix, uint32_t npus, algo_t **out, tn_err_t *err) {
  (void)prefix, (void)npus;
  *out = NULL;
  return tn_err_set(err, TN_INTERNAL, "Chakra reader not implemented yet");
}
