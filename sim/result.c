/* sim/result.c — freeing a simulation result. */
#include "sim/sim.h"

#include <stdlib.h>

void sim_result_free(sim_result_t *r) {
  if (r == NULL) return;
  free(r->npu_finish_ps);
  free(r->links);
  r->npu_finish_ps = NULL;
  r->links = NULL;
}
