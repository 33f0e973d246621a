/* milp/status.c — names of the MILP outcome and of what stopped its search. */
#include "milp/milp.h"

const char *milp_status_name(milp_status_t s) {
  switch (s) {
  case MILP_OPTIMAL: return "optimal";
  case MILP_FEASIBLE: return "feasible";
  }
  return "unknown";
}

const char *milp_stop_name(milp_stop_t s) {
  switch (s) {
  case MILP_STOP_PROVEN: return "proven optimal";
  case MILP_STOP_NODES: return "node limit";
  case MILP_STOP_ITERS: return "iteration limit";
  case MILP_STOP_TIME: return "time limit";
  case MILP_STOP_SIZE: return "model too large";
  case MILP_STOP_MEM: return "memory share";
  }
  return "unknown";
}
