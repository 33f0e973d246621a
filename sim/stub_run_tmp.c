/* sim/stub_run_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "sim/sim.h"

tn_status_t sim_run(const topo_t *t, const algo_t *a, const sim_opts_t *opts, sim_result_t *res, tn_err_t *err) {
  (void)t, (void)a, (void)opts, (void)res;
  return tn_err_set(err, TN_INTERNAL, "simulator not implemented yet");
}
