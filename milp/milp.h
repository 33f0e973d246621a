/* milp — optimal All-Gather synthesis as a time-indexed MILP over the TEN, solved by
 * GLPK (in the spirit of TACCL, NSDI 2023). Optional module (TENET_HAVE_MILP). Produces
 * a schedule_t like greedy/; the two never see each other (the caller passes the
 * greedy's schedule in as a warm start and horizon bound). Pipeline: topo → ten → milp.
 *
 * Formulation (milp/solve.c has the details): time is cut into steps of step_ps, the
 * time one chunk takes on the fastest link the model uses divided by a resolution of
 * 1 to 16 (a link carries a chunk in ceil(xfer/step) steps; a hop's latency is added
 * and the sum rounded up to whole steps, so the discrete model is exact when every link
 * has the same bandwidth and the latency is a multiple of the step, e.g. 0, and slightly
 * pessimistic otherwise: "optimal" is proven for the discrete model). A binary x[c,e,t]
 * says chunk c starts over "virtual link" e at step t, where e is an NPU pair joined by
 * a direct link or by a route whose intermediate nodes are all switches (NPU → switch →
 * NPU: nothing is stored at a switch, every hop's link is reserved at its own offset).
 * A node sends c only once it holds it; every NPU receives every chunk exactly once; a
 * link carries one chunk at a time; the objective is the makespan plus a tiny term that
 * prefers early transfers and short routes.
 *
 * Solve: a starting plan (the MILP's own list schedule, or the caller's warm start
 * re-timed, whichever is shorter) gives the horizon and GLPK's first incumbent. On a
 * fabric with translation symmetry (rings, tori, hypercubes, fully connected, switch
 * stars: milp/fabric.c checks it link by link) a symmetric model whose variables are
 * NPU 0's chunks, each standing for all its translates, is solved first (1/n of the
 * size); if it meets the lower bound (the farthest chunk, and each NPU's ingress) the
 * answer is optimal outright, else it seeds the full model and is the fallback answer
 * (FEASIBLE, with its gap) should the full model run out of time.
 *
 * Output: the plan is replayed through ten's engine exactly as the simulator will run
 * the lowered algorithm, so out->time_ps is the true (simulated) time; with exact steps
 * it equals res->objective_ps when opts->gate_sends is set. Each transfer carries one
 * chunk; its deps are the transfer that brought the chunk to src (none when src owns it)
 * and, with gate_sends, optionally one delivery to src that holds the send back to its
 * planned time (milp/replay.c), so the simulator's first-come, first-served links keep
 * the plan's order. Without gates a plan that holds a chunk back may replay a little
 * slower than its objective (out->time_ps is still the true time). */
#ifndef TENET_MILP_H
#define TENET_MILP_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

/* Caps checked before any model is built (larger requests fail with TN_LIMIT). */
#define MILP_MAX_NPUS 64u /* the MILP is meant for small fabrics */
#define MILP_MAX_CHUNKS_PER_NPU 16u
#define MILP_MAX_STEPS 4096u  /* horizon of the time-indexed model */
#define MILP_MAX_COLS 400000u /* variables handed to GLPK */
#define MILP_MAX_HOPS 8u      /* switch hops of one NPU-to-NPU route */

typedef enum { MILP_OPTIMAL = 0, MILP_FEASIBLE = 1, MILP_TIMEOUT = 2 } milp_status_t;

typedef struct milp_opts {
  double time_limit_s;     /* default 60; must be > 0 */
  uint32_t chunks_per_npu; /* >= 1 (0 is refused) */
  const schedule_t *warm;  /* optional feasible All-Gather schedule (greedy's), borrowed;
                              re-timed in the discrete model and used when shorter than
                              the MILP's own list schedule; ignored when a transfer is
                              routed through another NPU (the model cannot express it) */
  const char *log_path;    /* GLPK's terminal output goes here (NULL: discarded) */
  bool verbose;            /* GLPK output to stderr instead */
  bool gate_sends;         /* allow a second, timing-only dependency per transfer (see
                              above) so the replay keeps the plan's times exactly. Only
                              for All-Gather lowering: algo_from_schedule's
                              Reduce-Scatter reversal reads every dependency as data. */
  uint32_t steps_per_xfer; /* time resolution: steps per chunk transfer on the fastest
                              link, 1..16; 0 = automatic: the smallest of 1..4 whose
                              rounding overestimates no hop by more than 5%, else the
                              most accurate of them. Finer is more exact, slower. */
} milp_opts_t;

typedef struct milp_result {
  milp_status_t status;
  double solve_s;          /* wall time of the whole call */
  double gap;              /* relative MIP gap of the makespan (0 when OPTIMAL) */
  uint64_t bound_ps;       /* best proven lower bound on the discrete model's makespan */
  uint64_t objective_ps;   /* the MILP's makespan: steps × step_ps */
  uint64_t step_ps;        /* length of one time step */
  uint32_t steps;          /* the MILP's makespan in steps */
  uint32_t horizon;        /* horizon in steps (best starting schedule) */
  uint64_t start_ps;       /* time of the starting schedule (warm start or own heuristic)
                              in the discrete model: horizon × step_ps */
  bool warm_used;          /* the caller's warm start gave the horizon */
  bool incumbent_is_start; /* GLPK accepted the starting schedule and found no better */
  bool symmetric;          /* the answer is GLPK's solution of the symmetric model */
  bool gated;              /* some transfer has a timing-only dependency */
  uint32_t cols, rows;     /* size of the last model GLPK solved */
} milp_result_t;

/* Fills o with the defaults (60 s, 1 chunk per NPU, no warm start, output discarded). */
void milp_opts_init(milp_opts_t *o);

/* Solves for an All-Gather schedule of size_bytes on t (borrowed) and fills *out
 * (initialised here; caller frees with schedule_free; on failure it is left empty, as
 * greedy_run leaves it, and freeing it is harmless) and *res.
 * Errors: TN_INVAL for bad options (chunks_per_npu 0, a time limit <= 0, a size smaller
 * than one byte per chunk, a warm start for another collective or fabric);
 * TN_LIMIT when the fabric or model exceeds the caps above, or when GLPK found no
 * integer solution within the time limit (res->status = MILP_TIMEOUT; the warm start is
 * never returned under the MILP's name unless GLPK accepted it as its incumbent, and
 * then the status is FEASIBLE with its gap or OPTIMAL when proven); TN_INFEASIBLE for a
 * disconnected fabric; TN_IO when log_path cannot be opened; TN_SOLVER when GLPK fails.
 * Exponential in the worst case; bounded by time_limit_s plus model building (GLPK
 * checks the clock between LP solves, so a long one can overrun the limit somewhat).
 * Deterministic when it finishes before the limit; a FEASIBLE answer cut short by the
 * limit depends on the machine's speed. */
tn_status_t milp_solve(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                       schedule_t *out, milp_result_t *res, tn_err_t *err);

const char *milp_status_name(milp_status_t s);

#endif
