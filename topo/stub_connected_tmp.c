/* topo/stub_connected_tmp.c — link placeholder until the real implementation lands; delete this file when
 * you implement the function below (a duplicate-symbol error points here). */
#include "topo/topo.h"

tn_status_t topo_check_connected(const topo_t *t, tn_err_t *err) {
  (void)t;
  return tn_err_set(err, TN_INTERNAL, "connectivity check not implemented yet");
}
