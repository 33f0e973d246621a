/* algo/stub_verify_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "algo/algo.h"

tn_status_t algo_verify(const algo_t *a, const topo_t *t, algo_verify_report_t *report, tn_err_t *err) {
  (void)a, (void)t, (void)report;
  return tn_err_set(err, TN_INTERNAL, "verifier not implemented yet");
}
