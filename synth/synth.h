/* synth — "make algorithm X for collective C of size S on fabric F" behind one call.
 * Sits above the producers (greedy/, milp/, …) and algo/, below emit/ and cli/: it owns
 * how a collective is assembled from planned schedules (Reduce-Scatter as the reversed
 * All-Gather on the transposed fabric, All-Reduce from two schedules, the MILP's warm
 * start), the baselines' construction, and the portfolio that simulates every candidate
 * and keeps the fastest. Pipeline: producers → algo → synth → emit | sim | cli. */
#ifndef TENET_SYNTH_H
#define TENET_SYNTH_H

#include "algo/algo.h"
#include "common/common.h"
#include "topo/topo.h"

/* The methods, in the portfolio's order of preference among equal times. */
typedef enum {
  SYNTH_AUTO = 0, /* the portfolio: every applicable method below but the MILP, simulated,
                     the fastest kept */
  SYNTH_GREEDY,   /* TEN greedy (greedy/) */
  SYNTH_MILP,     /* time-indexed MILP warm-started by the greedy (milp/) */
  SYNTH_RING,     /* MSCCLang-style Ring baseline */
  SYNTH_DIRECT,   /* MSCCLang-style Direct baseline */
  SYNTH_TREES,    /* All-Reduce: reduce/broadcast over packed spanning trees (trees/);
                     direct-connect fabrics only */
  SYNTH_FOREST,   /* broadcast trees packed over switch routes (forest/): All-Gather down
                     them, Reduce-Scatter up them, All-Reduce both */
  SYNTH_TWOSTEP,  /* MSCCLang's Two-Step All-to-All baseline, on fabrics with servers */
  SYNTH_DIMS,     /* dimension by dimension on generated fabrics, one part of the data per
                     dimension in rotated order (dims/): All-Gather, Reduce-Scatter and
                     All-Reduce derived from it */
  SYNTH_NMETHODS
} synth_method_t;

/* "auto", "greedy", "milp", "ring", "direct", "trees", "forest", "twostep", "dims" (the name also
 * given to the algo_t). */
const char *synth_method_name(synth_method_t m);

/* Parses a method name. TN_INVAL with a did-you-mean naming `what` (e.g. "--algo") for an
 * unknown name, and for "milp" in a build without GLPK. */
tn_status_t synth_method_parse(const char *s, const char *what, synth_method_t *out, tn_err_t *err);

/* Whether method m makes collective coll at all (ring: no All-to-All; trees: All-Reduce
 * only; twostep: All-to-All only; forest, milp, dims: no All-to-All); when not, *why (may be
 * NULL) says so in one line. The one rule synth_run and batch's sweeps use. */
bool synth_method_applies(synth_method_t m, tn_coll_t coll, const char **why);

/* True when this build has the method (the MILP is optional). */
bool synth_method_available(synth_method_t m);

typedef struct synth_opts {
  synth_method_t method;
  uint64_t seed;           /* the greedy's tie-breaking seed */
  uint32_t seeds;          /* best of seeds: seed .. seed+seeds-1 (0 and 1: seed alone),
                              the fastest kept, the lowest seed among equal times; only
                              for the methods a seed changes (greedy, milp, auto) */
  uint32_t chunks_per_npu; /* 0 = chosen by the producer (the baselines: their fastest
                              configuration, see variant; milp: the greedy's choice) */
  double time_limit_s;     /* MILP's wall-clock safety net; 0 = its default (60 s) */
  uint32_t node_limit;     /* MILP's work limit in branch-and-bound nodes; 0 = default */
  uint64_t iter_limit;     /* MILP's work limit in simplex iterations; 0 = default */
  bool verbose;            /* MILP: solver output to stderr */
  bool exhaustive;         /* AUTO: simulate every candidate to its end, none pruned (the
                              choice is the same, only slower; for tests) */
  /* Work on the returned set (tenet synth: verify it, write it), or NULL. synth_run calls it
   * beside the simulation that times the set once made order-proof (on a second thread when
   * there is one), when it can: one seed, not the MILP, and a set made order-proof at the
   * end (result.on_set_done then says so; else the caller still has to call it). A set
   * given to it can still be rebuilt, with fresh calls: the last is on the returned set.
   * Its failure is synth_run's, with its message. */
  tn_status_t (*on_set)(void *ctx, const algo_t *a, tn_err_t *err);
  void *on_set_ctx;
} synth_opts_t;

typedef struct synth_result {
  algo_t *algo;          /* owned; free with synth_result_free */
  synth_method_t method; /* the method that made algo (the portfolio's choice for AUTO) */
  bool chosen;           /* method was chosen by the portfolio (AUTO) */
  uint64_t time_ps;      /* its simulated time when known (AUTO, or an All-Gather plan,
                            whose prediction is exact), else 0 */
  double synth_ms;       /* wall time of synthesis, lowering and the portfolio's sims */
  /* The MILP's outcome (NULL for other methods): "optimal" (proven for the chunk count,
   * in the discrete model), "feasible" (a stop came first; milp_gap bounds the distance
   * to optimal) or "greedy" (the MILP's algorithm simulated slower than the greedy's, or
   * its model was too large at the greedy's chunk count: the greedy's is returned). */
  const char *milp_status;
  const char *milp_stop; /* what ended the MILP's search (milp_stop_name), else NULL */
  double milp_gap;       /* relative gap of the MILP's makespan to its proven bound */
  char variant[48];      /* a baseline's configuration ("both directions, 8 chunks"), or "" */
  bool strict;           /* algo is order-proof already (sim_make_strict ran on it) */
  uint32_t pruned;       /* AUTO: candidates dropped before their simulation's end because
                            they could no longer be chosen */
  uint32_t settled;      /* AUTO: candidates not built because one before them (in the
                            order of preference) was within 0.1% of the lower bound */
  uint64_t seed;         /* the seed algo was made with (opts->seeds: the winner's) */
  uint32_t seeds_tried;  /* seeds synthesized (1 unless opts->seeds asked for more) */
  bool on_set_done;      /* opts->on_set ran on algo (its last call) */
  /* first_known: the plan's replay on the simulator's engine saw what a first simulation
   * of algo would report, its time (time_ps) and first_ties (sim_tie_t); order-proofing
   * then skips that run. */
  bool first_known;
  tn_vec_t first_ties;
  /* plan_ps: algo's SEND ids follow, on every link, the order of a plan that takes this
   * long (a Reduce-Scatter lowered time-reversed from an All-Gather plan); order-proofing
   * keeps that order where a run breaks it (sim_make_strict_planned). 0: none. */
  uint64_t plan_ps;
  /* The set's time before order-proofing (its first run, when synth made it order-proof;
   * else 0): time_ps minus this is what the gates cost (or, kept to its plan's order,
   * gained). */
  uint64_t unproofed_ps;
  /* The forest's: the chunks per NPU of the set its gates made it make again at half its
   * chunks (the first such set; both were held at once, whichever was kept), 0 when none
   * was (synth_i_make_strict). */
  uint32_t halved_from;
  /* The greedy's All-Reduce: its halves were list-scheduled (greedy_allreduce_listed; on
   * direct-connect fabrics, where that ends first); plan_ps is then the list's time. */
  bool listed;
  /* The MILP's: the larger milp_result_t.mem_bytes of its solves (the models it built),
   * else 0. */
  uint64_t milp_mem;
} synth_result_t;

#define SYNTH_MAX_SEEDS 1000u /* opts->seeds at most */

/* Builds the algorithm for coll of size_bytes (NCCL's meaning) on t with opts->method and
 * fills *out (zeroed first; out->algo NULL on failure). The MILP plans with the greedy's
 * chunk count unless opts->chunks_per_npu says otherwise, starts from the greedy's plan,
 * and is never slower than SYNTH_GREEDY with the same opts: both are built and the
 * faster kept (the MILP on a tie). Errors: TN_INFEASIBLE for a
 * disconnected fabric, TN_INVAL for a size below one byte per chunk or an unavailable
 * method, and whatever the producer reports (TN_LIMIT for caps, TN_SOLVER, TN_NOMEM).
 * Deterministic: same inputs, same algorithm, whatever the thread count and load (the
 * MILP stops on a work limit; only its wall-clock safety net could break this).
 * opts->seeds > 1 (at most SYNTH_MAX_SEEDS, else TN_INVAL) runs the method once per seed
 * and keeps the set with the lowest simulated (order-proof) time, the lowest seed on a tie;
 * out->seed names it, out->synth_ms covers every run. */
tn_status_t synth_run(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                      const synth_opts_t *opts, synth_result_t *out, tn_err_t *err);

void synth_result_free(synth_result_t *r);

/* The peak memory a synthesis with method m is estimated to need (the producer's own
 * estimate: greedy_mem_estimate, trees_mem_estimate, forest_mem_estimate,
 * algo_*_mem_estimate; the MILP's: the larger of the greedy's and milp_mem_estimate's from
 * the greedy's plan at that chunking, which it plans to know), the figure its
 * refusal over tn_mem_cap() compares. chunks_per_npu as the method takes it (0: the
 * largest configuration a baseline tries; the greedy's and the MILP's: their chunking, 1
 * when 0, which their search checks one by one). the greedy's All-to-All: its pieces
 * per block. 0 for auto (each candidate checks its own). At `threads` threads
 * (tn_mem_threads): a method refuses by its figure at 1, and synth_run makes on one thread
 * a run whose figure at tn_thread_count() is over the cap. */
uint64_t synth_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                            uint32_t chunks_per_npu, unsigned threads);

/* The figure that describes a run of m asked for chunks_per_npu `asked` (0: automatic) that
 * kept `kept` (its set's chunks_per_npu): what its checks compared. The forest's: the
 * larger of its planning's figure (every count tried) and the kept count's whole run,
 * each checked in turn (forest_mem_before, then forest_mem_estimate once kept); Direct's:
 * the larger of its largest configuration's trial and the kept one's whole run (checked
 * before building, then once kept); the greedy's and the MILP's: at the count kept (their
 * search checks every count); others: synth_mem_estimate at `asked`. */
uint64_t synth_mem_kept(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                        uint32_t asked, uint32_t kept, unsigned threads);

/* A baseline (SYNTH_RING or SYNTH_DIRECT) at its best configuration, as synth_run picks it,
 * without the order-proofing pass that every set synth_run returns goes through: for
 * comparisons (the step of `tenet sim --workload` with Ring for every collective), not for
 * files. out->time_ps is its simulated time, out->variant its configuration. TN_INVAL for
 * another method or a collective it does not make. */
tn_status_t synth_baseline(const topo_t *t, tn_coll_t coll, uint64_t size_bytes, synth_method_t m,
                           synth_result_t *out, tn_err_t *err);

#endif
