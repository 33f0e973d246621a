/* algo/stub_lower_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "algo/algo.h"

tn_status_t algo_from_schedule(const schedule_t *s, tn_coll_t coll, const char *name, algo_t **out, tn_err_t *err) {
  (void)s, (void)coll, (void)name;
  *out = NULL;
  return tn_err_set(err, TN_INTERNAL, "lowering not implemented yet");
}
