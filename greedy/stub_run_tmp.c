/* greedy/stub_run_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "greedy/greedy.h"

tn_status_t greedy_run(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts, schedule_t *out, tn_err_t *err) {
  (void)t, (void)size_bytes, (void)opts;
  schedule_init(out, TN_ALLGATHER, 0, 1, 0);
  return tn_err_set(err, TN_INTERNAL, "greedy not implemented yet");
}
