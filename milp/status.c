/* milp/status.c — names of the MILP outcome. */
#include "milp/milp.h"

const char *milp_status_name(milp_status_t s) {
  switch (s) {
  case MILP_OPTIMAL: return "optimal";
  case MILP_FEASIBLE: return "feasible";
  case MILP_TIMEOUT: return "timeout";
  }
  return "unknown";
}
