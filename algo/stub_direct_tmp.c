/* algo/stub_direct_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "algo/algo.h"

tn_status_t algo_direct(tn_coll_t coll, uint32_t npus, uint64_t size_bytes, uint32_t k, algo_t **out, tn_err_t *err) {
  (void)coll, (void)npus, (void)size_bytes, (void)k;
  *out = NULL;
  return tn_err_set(err, TN_INTERNAL, "direct baseline not implemented yet");
}
