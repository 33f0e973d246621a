/* milp — optimal All-Gather synthesis as a time-indexed MILP over the TEN, solved by
 * GLPK (in the spirit of TACCL, NSDI 2023). Optional module (TENET_HAVE_MILP). Produces
 * a schedule_t like greedy/; the two never see each other (the caller passes the
 * greedy's schedule in as a warm start and horizon bound). Pipeline: topo → ten → milp. */
#ifndef TENET_MILP_H
#define TENET_MILP_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

typedef enum { MILP_OPTIMAL = 0, MILP_FEASIBLE = 1, MILP_TIMEOUT = 2 } milp_status_t;

typedef struct milp_opts {
  double time_limit_s;      /* default 60 */
  uint32_t chunks_per_npu;  /* >= 1 */
  const schedule_t *warm;   /* optional feasible All-Gather schedule (greedy's) */
  const char *log_path;     /* GLPK's terminal output goes here (NULL: discarded) */
  bool verbose;             /* GLPK output to stderr instead */
} milp_opts_t;

typedef struct milp_result {
  milp_status_t status;
  double solve_s;
  double gap;        /* relative MIP gap when FEASIBLE */
  uint64_t bound_ps; /* best proven lower bound on the completion time */
} milp_result_t;

/* Solves for an All-Gather schedule of size_bytes on t. TN_INFEASIBLE / TN_LIMIT when no
 * integer solution was found (never silently the warm start under the MILP's name: a
 * warm start returned as the answer is reported as FEASIBLE with its gap). */
tn_status_t milp_solve(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                       schedule_t *out, milp_result_t *res, tn_err_t *err);

const char *milp_status_name(milp_status_t s);

#endif
