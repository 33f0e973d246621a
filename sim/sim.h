/* sim — the event-driven analytical network simulator: runs an algo_t on a topo_t with
 * the congestion-aware model of docs/architecture.md §3 (it drives ten/'s engine, the same one
 * the planners use) and reports the collective time. Pipeline: algo → sim → cli. */
#ifndef TENET_SIM_H
#define TENET_SIM_H

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"
#include "workload/workload.h"

/* The order among events of one instant that a runtime is free to pick: nodes that
 * become ready together, and messages that reach one link together at a hop. tenet's
 * own order is ID (ascending node id, rank by rank; ascending link id); REVERSE takes
 * both backwards, RANDOM shuffles both by seed. A set whose time differs between them
 * leaves its order open (docs/architecture.md §3). */
typedef enum { SIM_TIES_ID = 0, SIM_TIES_REVERSE = 1, SIM_TIES_RANDOM = 2 } sim_ties_t;

/* Called when the SEND `second` (rank, node id) entered link's queue at the same instant
 * as the SEND `first`, so that the order between the two messages there was this run's
 * pick (ties), not the set's. A message enters its first link at its sender; one that
 * enters a later link of its route was forwarded there. */
typedef struct sim_tie {
  uint32_t link;
  uint32_t first_rank, first_id, second_rank, second_id;
  bool first_waited, second_waited; /* had queued behind another message before */
  /* The SEND whose issue time sets each message's time at the link (ten_tie_t's cause):
   * the message's own SEND, unless it queued on the way. */
  uint32_t first_cause_rank, first_cause_id, second_cause_rank, second_cause_id;
  uint64_t gap_ps; /* second entered this long after first (0: a tie) */
} sim_tie_t;
typedef void (*sim_tie_fn)(void *ctx, const sim_tie_t *tie);

typedef struct sim_opts {
  const char *trace_path; /* Chrome trace-event JSON timeline, or NULL: a track per link
                             (each transmission an "X" event named rank:node), and unless
                             trace_links_only a track per NPU (each node a "b"/"e" pair).
                             hierarchical-16x8 greedy All-Gather 64 MiB (520,192
                             transmissions, 780,160 nodes): 248 MB before records were
                             shortened, 205 MB, 52 MB links only */
  bool trace_links_only;  /* the link tracks alone */
  sim_ties_t ties;
  uint64_t seed;     /* SIM_TIES_RANDOM */
  sim_tie_fn on_tie; /* or NULL */
  void *tie_ctx;
  uint64_t tie_window_ps; /* on_tie also hears of pairs up to this far apart (0: ties) */
  /* When nonzero, the run stops at its first event later than this (a caller that only
   * wants to know whether the set beats a time): the result then has stopped set and
   * time_ps that event's time, a lower bound on the full run's; its other figures cover
   * the events run, and an error the rest of the run would have met goes unseen. */
  uint64_t stop_after_ps;
  /* When nonzero, every link's busy time and every hop's delay count in whole multiples of
   * it, rounded down (ten_engine_set_quantum): 1000 runs the set as ASTRA-sim's analytical
   * backend times it, in whole ns per delay. 0 (default): exact. */
  uint64_t quantum_ps;
  /* Worker threads for checking the set and building its graph, rank by rank (0 or 1: the
   * calling thread alone). The result does not depend on it. */
  unsigned threads;
} sim_opts_t;

/* Parses "id", "reverse" or "random". */
bool sim_ties_parse(const char *s, sim_ties_t *out);

typedef struct sim_link_use {
  uint32_t link;
  uint64_t bytes, busy_ps, messages;
} sim_link_use_t;

typedef struct sim_result {
  uint64_t time_ps;        /* finish of the last NPU */
  uint64_t *npu_finish_ps; /* npus entries (caller frees via sim_result_free) */
  uint32_t npus;
  sim_link_use_t *links; /* every link, sorted by busy time descending then id */
  uint32_t nlinks;
  uint64_t messages, events;
  bool stopped; /* the run passed opts->stop_after_ps and stopped there */
} sim_result_t;

/* Simulates a on t. An unmatched SEND/RECV, a dependency cycle, a deadlock or a peer
 * outside the topology ends the run with TN_PARSE naming rank, node and reason. A
 * disconnected fabric gives TN_INFEASIBLE. O((nodes + messages*hops) log pending). */
tn_status_t sim_run(const topo_t *t, const algo_t *a, const sim_opts_t *opts, sim_result_t *res,
                    tn_err_t *err);
void sim_result_free(sim_result_t *r);

/* A lower bound on sim_run's time for a on t without running it: the busiest link's
 * transmission time for every byte routed over it, plus its latency (0 when a has no
 * message or a route is missing; sim_run reports those). TN_NOMEM. O(nodes + routed
 * (source, destination) pairs x hops). */
tn_status_t sim_link_bound_ps(const topo_t *t, const algo_t *a, uint64_t *bound_ps, tn_err_t *err);

typedef struct sim_strict_report {
  uint64_t time_ps;   /* the returned set's simulated time (SIM_TIES_ID) */
  uint64_t first_ps;  /* the first run's time: the given set, with its start gates if any */
  uint32_t staggers;  /* COMPs added */
  uint32_t rounds;    /* simulations that found ties */
  uint32_t ties_left; /* ties in the returned set (0: its time is the same in every order) */
} sim_strict_report_t;

/* Makes *a order-proof (sim/strict.c): wherever two messages enter one link at the same
 * instant, a COMP of 0 µs (1 ns, as in ASTRA-sim) makes one of them wait, until no link
 * sees such a tie; *a is replaced by the new set (same nodes and ids, the COMPs appended
 * to their ranks). What sim_run reports on failure. */
tn_status_t sim_make_strict(const topo_t *t, algo_t **a, sim_strict_report_t *rep, tn_err_t *err);

/* The window of the first simulation of sim_make_strict: pairs of an NPU's own SENDs that
 * enter one link this close are ordered too (later gates move SENDs by nanoseconds). */
#define SIM_STRICT_FIRST_WINDOW_PS 32000u

/* A first run of a set known without simulating it (a plan's replay on the engine, which
 * runs as the simulator runs the set): its time and every pair of entries into one link at
 * most SIM_STRICT_FIRST_WINDOW_PS apart, in the order the run met them. */
typedef struct sim_first_run {
  uint64_t time_ps;
  const sim_tie_t *ties;
  size_t nties;
} sim_first_run_t;

/* Work on an order-proof set (a check, writing it out) that can run beside its last
 * simulation: what sim_make_strict_and calls. */
typedef tn_status_t (*sim_strict_fn)(void *ctx, const algo_t *a, tn_err_t *err);

/* sim_make_strict, and fn(ctx, set) on the set it returns. Each set rebuilt with gates is
 * handed to fn while it is simulated (on a second thread when tn_thread_count() > 1); when
 * that simulation still finds ties the set is rebuilt and fn called again, so fn's last
 * call is on the returned set (a set without any tie gets its one call after its run).
 * fn's first failure ends the call with its status and message (after the simulation's own
 * failure, which comes first); *a is then left as given. */
tn_status_t sim_make_strict_and(const topo_t *t, algo_t **a, sim_strict_fn fn, void *ctx,
                                sim_strict_report_t *rep, tn_err_t *err);
/* sim_make_strict_and that takes *first (when not NULL) for the first simulation of *a. */
tn_status_t sim_make_strict_from(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                                 sim_strict_fn fn, void *ctx, sim_strict_report_t *rep,
                                 tn_err_t *err);

/* Whether a run of run_ps misses a plan of plan_ps by enough to keep the plan's order: by
 * more than 0.1% (keeping it costs at least one more simulation, with every pair on every
 * link reported, for at most that gain). The one rule sim_make_strict_planned and synth/
 * use. */
bool sim_strict_plan_missed(uint64_t run_ps, uint64_t plan_ps);

/* sim_make_strict_from for a set whose SEND ids, per rank, follow the order of a plan that
 * takes plan_ps on every link (0: no plan, sim_make_strict_from itself): a lowering that
 * numbers SENDs by planned start, as algo_from_schedule does. The time-reversed half of a
 * Reduce-Scatter runs as soon as it can, and a SEND that becomes ready early can take its
 * link ahead of one the plan puts first. While a run misses the plan
 * (sim_strict_plan_missed), the set is run once more hearing of every pair, every link on
 * which an NPU's SENDs entered against their id order gets all that NPU's SENDs over it
 * ordered by id (gates, as for ties); from then on an NPU's own SENDs that tie are ordered
 * by id, and the orders of such pairs made before are turned to it, so no order the gates
 * keep is against the ids' and none closes a cycle. A set that keeps to its plan's order
 * on every link is no slower than the plan, but for the gates' nanoseconds. */
tn_status_t sim_make_strict_planned(const topo_t *t, algo_t **a, const sim_first_run_t *first,
                                    uint64_t plan_ps, sim_strict_fn fn, void *ctx,
                                    sim_strict_report_t *rep, tn_err_t *err);

#define SIM_SPREAD_SEEDS 4 /* random orders sim and verify try besides id and reverse */

typedef struct sim_spread {
  uint64_t id_ps, min_ps, max_ps; /* tenet's order; the fastest and slowest order tried */
  uint32_t orders;                /* orders tried */
} sim_spread_t;

/* Simulates a under SIM_TIES_ID, SIM_TIES_REVERSE and SIM_TIES_RANDOM with seeds 1..seeds,
 * and reports the spread of the collective time: min_ps == max_ps means no order tried
 * changes it. What sim_run reports on failure. */
tn_status_t sim_order_spread(const topo_t *t, const algo_t *a, uint32_t seeds, sim_spread_t *out,
                             tn_err_t *err);

/* ---- whole training steps (sim/step.c, docs/workload.md) --------------------------- */
typedef struct sim_step_result {
  uint64_t step_ps;    /* the last rank's finish */
  uint32_t last_rank;  /* that rank (the lowest of equals) */
  uint64_t exposed_ps; /* its step time not covered by its GPU compute (ASTRA-sim's
                          "exposed communication") */
  uint32_t npus;
  uint64_t *finish_ps;  /* per rank */
  uint64_t *compute_ps; /* per rank: GPU COMP time */
  uint32_t ncolls;
  uint64_t *coll_start_ps, *coll_end_ps; /* per collective of cs: first start, last end */
  uint64_t messages;                     /* SENDs: the workload's and the algorithms' */
  struct sim_alone *alone; /* with sim_step_opts_t.learn: per collective of cs (else NULL) */
} sim_step_result_t;

/* A collective's algorithm run alone in a step (sim/step.c, "running a collective apart"):
 * every rank of the collective issues its COLL at one instant of an idle network and
 * nothing else happens until it is done. Times from that instant. */
typedef struct sim_alone {
  uint32_t nranks;     /* 0: not known */
  uint64_t *fin_ps;    /* per rank of the collective, in cs order: its COLL done */
  uint64_t net_end_ps; /* its last message delivered (0: none) */
} sim_alone_t;

typedef struct sim_step_opts {
  /* Per collective of cs, or NULL: its algorithm's run alone on this fabric as an earlier
   * sim_step of it learned it (nranks 0: not known). A collective that then runs alone
   * takes these times without its algorithm being simulated; one that something else
   * meets in the network is simulated alone after all, and a run that differs from what
   * was given fails the step (TN_INVAL): give only what a step of the same algorithm on
   * the same fabric learned. The step's results are the same as without. */
  const sim_alone_t *known;
  /* res->alone: per collective, its algorithm's run alone where the step ran it so or
   * was given it (nranks 0 for the others). */
  bool learn;
} sim_step_opts_t;

/* Runs the step w (checked by wl_check, which gave cs) on t, collective k of cs running
 * algos[k]: an algo_t of t's NPU count with nodes only on the collective's ranks (a
 * group's algorithm placed with algo_embed), or NULL for a BROADCAST, which takes its
 * duration_micros as ASTRA-sim replays it. The rules are ASTRA-sim's (sim/step.c): per
 * rank one GPU COMP, one CPU COMP and one communication at a time, lowest id first; a
 * COLL runs its algorithm's rank part and is done with it. TN_INVAL when ranks differ
 * from t's NPUs or an algorithm does not fit its collective; TN_PARSE naming rank and node
 * on a deadlock. O((nodes + messages * hops) log pending). */
tn_status_t sim_step(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                     const algo_t *const *algos, sim_step_result_t *res, tn_err_t *err);
/* sim_step with opts (NULL: none). */
tn_status_t sim_step_with(const topo_t *t, const workload_t *w, const wl_colls_t *cs,
                          const algo_t *const *algos, const sim_step_opts_t *opts,
                          sim_step_result_t *res, tn_err_t *err);
void sim_step_result_free(sim_step_result_t *r);

#endif
