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
 * re-timed, whichever is shorter) gives the horizon and GLPK's first incumbent, and it is
 * the answer of last resort: whatever stops the search, the result is never worse than
 * it. On a fabric with translation symmetry (rings, tori, hypercubes, fully connected,
 * switch stars: milp/fabric.c checks it link by link) a symmetric model whose variables
 * are NPU 0's chunks, each standing for all its translates, is solved first (1/n of the
 * size); if it meets the lower bound (the farthest chunk, and each NPU's ingress) the
 * answer is optimal outright, else it seeds the full model.
 *
 * Stopping: the search stops on a work limit — simplex iterations (the root LP's and
 * every node's, counted by GLPK) and branch-and-bound nodes — checked in GLPK's
 * branch-and-cut callback, so the same input gives the same answer on any machine under
 * any load. The symmetric model may use up to half of each budget, the full model what is
 * left (an automatic iteration limit is computed for each model from its size). A start
 * that already meets the lower bound is optimal without GLPK. The wall-clock limit is only a safety
 * net; an answer it cut short depends on the machine's speed, and res->stop says so.
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

/* Default work limits. A simplex iteration costs about (rows + columns) of the model, so
 * by default each model GLPK solves gets MILP_AUTO_ITER_WORK / (rows + columns)
 * iterations, clamped to [MILP_AUTO_ITER_MIN, MILP_AUTO_ITER_MAX] (the symmetric model
 * half of its own). Measured on two shared cores: ring-8 All-Gather of 1 MiB at the
 * greedy's 2 chunks per NPU is proven optimal in 455 iterations; hetero-ring-6 at 8
 * (102,233 columns, 89,443 rows: ~1 ms an iteration) stops after 1,000, in 2 s;
 * mesh-2x4 at 4 (17,917 rows and columns) after 2,790 in 0.5 s, where 11,162 took 45 s
 * (the branch-and-cut around the node LPs costs more than their iterations). */
#define MILP_DEFAULT_NODE_LIMIT 1000u
#define MILP_AUTO_ITER_WORK 50000000u
#define MILP_AUTO_ITER_MIN 1000u
#define MILP_AUTO_ITER_MAX 100000u

/* Memory: the process around the MILP (the greedy's warm start, lowering, verifying and
 * writing a set of 8 to 16 NPUs), and per model what GLPK holds for its LP (its problem,
 * LU factors and simplex work space: 82.5 B per nonzero and 399 B per row and column by
 * its own count, glp_mem_usage, on models of 8 thousand to 1.1 million nonzeros) with our
 * triplets: per nonzero of the constraint matrix, and per row and column. GLPK's
 * branch-and-bound (its cut generators' and tree's memory, the node LPs' work space) added
 * 52-63% to that on ring-8 and mesh-2x4 at 1 and 2 chunks per NPU: MILP_MEM_BNB_PCT of the
 * model is granted it, when the root LP can finish (see milp_i_model_bytes), and GLPK's
 * count is held to the model's share and that (MILP_STOP_MEM past it). Measured with
 * bench_mem on ring-8, mesh-2x4, mesh-4x4, torus-4x4 and hypercube-16 at 1 to 16 chunks
 * per NPU (see milp_mem_estimate). */
#define MILP_MEM_BASE ((uint64_t)9 << 20)
#define MILP_MEM_PER_NZ 104u
#define MILP_MEM_PER_ROWCOL 420u
#define MILP_MEM_BNB_PCT 60u

/* OPTIMAL: proven optimal in the discrete model for the given chunk count. FEASIBLE: a
 * stop (res->stop) came first; res->gap bounds how far from optimal the answer is. */
typedef enum { MILP_OPTIMAL = 0, MILP_FEASIBLE = 1 } milp_status_t;

/* What ended the search. */
typedef enum {
  MILP_STOP_PROVEN = 0, /* optimality proven */
  MILP_STOP_NODES,      /* the node limit */
  MILP_STOP_ITERS,      /* the simplex iteration limit */
  MILP_STOP_TIME,       /* the wall-clock safety net (machine-dependent) */
  MILP_STOP_SIZE,       /* the model passed MILP_MAX_COLS: the starting plan stands */
  MILP_STOP_MEM         /* GLPK reached the memory the estimate grants it (see
                           MILP_MEM_BNB_PCT); deterministic, as GLPK counts its bytes */
} milp_stop_t;

typedef struct milp_opts {
  double time_limit_s;     /* wall-clock safety net, default 60; must be > 0 */
  uint32_t node_limit;     /* branch-and-bound nodes, default MILP_DEFAULT_NODE_LIMIT; >= 1 */
  uint64_t iter_limit;     /* simplex iterations of the root LP and all nodes together,
                              both models; 0 (default) = scaled to each model's size (see
                              MILP_AUTO_ITER_WORK); at most INT_MAX */
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
  milp_stop_t stop;        /* what ended the search (PROVEN exactly when OPTIMAL) */
  double solve_s;          /* wall time of the whole call */
  uint64_t iters;          /* simplex iterations used, both models */
  uint32_t nodes;          /* branch-and-bound nodes used, both models */
  double gap;              /* relative MIP gap of the makespan (0 when OPTIMAL) */
  uint64_t bound_ps;       /* best proven lower bound on the discrete model's makespan */
  uint64_t objective_ps;   /* the MILP's makespan: steps × step_ps */
  uint64_t step_ps;        /* length of one time step */
  uint32_t steps;          /* the MILP's makespan in steps */
  uint32_t horizon;        /* horizon in steps (best starting schedule) */
  uint64_t start_ps;       /* time of the starting schedule (warm start or own heuristic)
                              in the discrete model: horizon × step_ps */
  bool warm_used;          /* the caller's warm start gave the horizon */
  bool incumbent_is_start; /* the answer is the starting schedule (GLPK found no better,
                              or stopped before it had an integer solution) */
  bool symmetric;          /* the answer is GLPK's solution of the symmetric model */
  bool gated;              /* some transfer has a timing-only dependency */
  bool model_too_large;    /* TN_LIMIT came from the model's size caps, not the fabric's */
  bool over_mem_cap;       /* TN_LIMIT came from the memory cap (tn_mem_cap): a model's
                              estimate, checked before GLPK is given it */
  uint32_t cols, rows;     /* size of the last model GLPK solved */
  /* MILP_MEM_BASE plus the largest model GLPK was given (each checked against the cap as
   * milp_mem_estimate counts it ahead): what this solve held, where milp_mem_estimate
   * also counts the full model that a proof by the symmetric one leaves unbuilt. */
  uint64_t mem_bytes;
} milp_result_t;

/* Fills o with the defaults (60 s safety net, the default work limits, 1 chunk per NPU,
 * no warm start, output discarded). */
void milp_opts_init(milp_opts_t *o);

/* Solves for an All-Gather schedule of size_bytes on t (borrowed) and fills *out
 * (initialised here; caller frees with schedule_free; on failure it is left empty, as
 * greedy_run leaves it, and freeing it is harmless) and *res.
 * Errors: TN_INVAL for bad options (chunks_per_npu 0, a time or work limit out of range,
 * a size smaller than one byte per chunk, a warm start for another collective or
 * fabric); TN_LIMIT when the fabric or model exceeds the caps above (res->model_too_large
 * says it was the model); TN_INFEASIBLE for a disconnected fabric; TN_IO when log_path
 * cannot be opened; TN_SOLVER when GLPK fails. A stop is no error: the answer is then
 * the best schedule known (GLPK's incumbent, or the starting plan, the warm start's when
 * given) with status FEASIBLE and its gap.
 * Exponential in the worst case; bounded by the work limits plus model building (and by
 * time_limit_s, which GLPK checks between LP solves, so a long one can overrun it).
 * Deterministic unless res->stop is MILP_STOP_TIME. Every thread that calls it leaves
 * no GLPK environment behind. */
tn_status_t milp_solve(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts,
                       schedule_t *out, milp_result_t *res, tn_err_t *err);

/* The peak memory of a synthesis with milp_solve at opts->chunks_per_npu from opts->warm
 * (the whole `tenet synth -a milp` process beside the greedy's own): MILP_MEM_BASE plus
 * the largest model GLPK is given, by its nonzeros, rows and columns and the share of its
 * branch-and-bound (each model, GLPK's environment with it, is freed before the next is
 * built: torus-4x4 at 4 chunks per NPU peaks at 247 MiB, its full model's GLPK 231 MiB of
 * it, the symmetric one's 65 MiB not added). Builds the
 * discretised fabric, the starting plan and each model's rows as milp_solve does, without
 * GLPK: the symmetric model (fabrics with translation symmetry) and the full one unless
 * the start meets the lower bound already. When the symmetric model's solution is optimal
 * milp_solve builds no full model, so there the figure is above the peak. milp_solve
 * checks each model the same way (tn_mem_check, before GLPK sees it) and refuses over the
 * cap (TN_LIMIT, res->over_mem_cap). 0 when the request is refused for another reason. */
uint64_t milp_mem_estimate(const topo_t *t, uint64_t size_bytes, const milp_opts_t *opts);

const char *milp_status_name(milp_status_t s);
/* "proven optimal", "node limit", "iteration limit", "time limit", "model too large",
 * "memory share". */
const char *milp_stop_name(milp_stop_t s);

#endif
