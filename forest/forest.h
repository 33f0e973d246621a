/* forest — All-Gather by packing broadcast trees (in the spirit of ForestColl, arXiv
 * 2402.06787): every NPU broadcasts its chunks down a few spanning trees over the NPUs,
 * whose edges are NPU-to-NPU routes through switches, packed so that no link carries more
 * than its share. Where the greedy sends a remote chunk across a slow shared uplink once
 * per destination, a tree crosses it once per server and fans out inside. A producer
 * beside greedy/: topo → ten → forest → algo (an All-Gather schedule_t; Reduce-Scatter
 * and All-Reduce are derived from it as from the greedy's, see synth/). */
#ifndef TENET_FOREST_H
#define TENET_FOREST_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

/* Fabrics above this many NPUs are refused (TN_LIMIT): the packing looks at every pair. */
#define FOREST_MAX_NPUS 512u

typedef struct forest_opts {
  uint32_t chunks_per_npu; /* 0 = chosen by size (see forest_run) */
  uint32_t trees_per_npu;  /* trees each NPU broadcasts over; 0 = FOREST_TREES */
  bool pace;               /* plan with an NPU's own chunks held back until deliveries
                              to it (see forest_run); the waits stay in the schedule as
                              timing-only dependencies, so it is lowered forward only */
  /* forest_run_reduce: keep in out->ties the pairs the kept plan's run saw within this
   * window (schedule_keep_ties), for the simulator's order-proofing. (The All-Gather's
   * pacings meet about 1.6 pairs per transfer: keeping them costs more than it spares.) */
  bool keep_ties;
  uint64_t tie_window_ps;
  uint32_t packing; /* which packing forest_tries names: 0 the usual one */
} forest_opts_t;

#define FOREST_TREES 8u

/* Plans an All-Gather of size_bytes (gathered output) on t into *out (initialised here;
 * caller frees with schedule_free; empty on failure).
 *
 * Packing: the logical edges are the NPU pairs (u, v) whose route from u to v crosses
 * switches only (on a direct-connect fabric: the links between NPUs). Each NPU in turn
 * takes the cheapest spanning tree rooted at it under the links' current lengths (Prim's
 * rule on the directed costs: the edge of least route length from the tree to a new NPU),
 * and every link the tree's routes cross gets longer in proportion to its use over its
 * bandwidth (multiplicative weights, as in Garg and Koenemann's packing); trees_per_npu
 * rounds, a tree weighted by how many rounds grew it. With GLPK and at most 64 NPUs,
 * the rounds also run with Prim's rule penalising depth (an edge from an NPU at depth d
 * costs 1 + p d times more, p in 0.05, 0.2, 0.5), and a linear program weighs all the
 * trees grown: the least busiest-link load (ForestColl's optimum restricted to them),
 * then among mixes within 0.1% of it, no tree above half its root's data and the
 * shallowest (see forest/lp.c). Deterministic: ties go to the lowest ids, the LP's
 * simplex is bounded by iterations, not time.
 *
 * Schedule: NPU r's k chunks are dealt to its trees by weight (interleaved); a chunk goes
 * down its tree, every NPU forwarding it to its children as soon as it arrives (chunks in
 * id order), planned on ten/'s engine, so out->time_ps is what the simulator measures on
 * algo_from_schedule(out, TN_ALLGATHER). With chunks_per_npu 0: 128 chunks per NPU, fewer
 * for small sizes (at least 16 KiB a chunk) and large fabrics (at most 2^19 transfers).
 *
 * Errors: TN_INFEASIBLE for a disconnected fabric or one where some NPU is reachable only
 * through another NPU's route; TN_INVAL for a size below one byte per chunk or fewer
 * than 2 NPUs; TN_LIMIT above FOREST_MAX_NPUS. O(rounds · n^2 · hops) for the packing
 * plus O(n^2 k log) for the plan. */
tn_status_t forest_run(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                       schedule_t *out, tn_err_t *err);

/* Plans a Reduce-Scatter of size_bytes (each NPU's input) on t into *out, an explicit
 * reduction schedule (coll TN_REDUCESCATTER, every transfer a SCHED_REDUCE; initialised
 * here, empty on failure). The trees are packed as above on the transposed fabric; chunk
 * c goes up its owner's tree, every NPU sending the sum of its children's contributions
 * and its own to its parent once the last of them is reduced. With pace (or opts NULL) an
 * NPU's sends of the chunks it is a leaf for are held back by its own receptions, as the
 * All-Gather's own chunks are (see forest/reduce.c); several pacings are planned and the
 * fastest kept. Planned on ten/'s engine with reductions 1 ns after arrival, so
 * out->time_ps is what the simulator measures on algo_from_schedule(out,
 * TN_REDUCESCATTER). 128 chunks per NPU by default, fewer as forest_run. Errors as
 * forest_run. */
tn_status_t forest_run_reduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *out, tn_err_t *err);

/* Both halves of an All-Reduce at once: *rs as forest_run_reduce and *ag as forest_run,
 * the same chunks per NPU, and one packing for both when t is symmetric. Both initialised here; on
 * failure both are empty (and the first error is reported). */
tn_status_t forest_run_halves(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                              schedule_t *rs, schedule_t *ag, tn_err_t *err);

/* The plans the automatic chunking tries for size on t's n NPUs: the usual chunk count on the
 * usual packing first. At a size where chunks of 16 KiB leave fewer than 128 per NPU, also
 * up to three doublings of the count (no chunk under 1 KiB, the transfers within the
 * budget), each on the usual packing and, with the LP (at most 32 NPUs), on three more:
 * 2 trees grown per NPU, and either count of trees with the LP free to go 10% above the
 * least busiest-link load for shallower trees. There a tree's depth costs a chunk's time
 * per level, so smaller chunks and shallower trees fill and drain it faster. Packing-major
 * order, then FOREST_PACK_LEVELS' counts where forest_levels_apply(t); returns how many
 * (1 .. FOREST_TRIES). forest_run, forest_run_reduce and forest_allreduce plan each and
 * keep the fastest, the first among equals. */
typedef struct forest_try {
  uint32_t chunks_per_npu, packing;
} forest_try_t;
#define FOREST_PACKINGS 4u
/* Packing FOREST_PACK_LEVELS is no packing but two-level trees (forest/levels.c): each
 * root sends to its own group (the NPUs on its switch) and to one relay in every other
 * group, which sends on inside its own. Tried after the others at the finest two of their
 * counts of at most 32 and one doubling more, on fabrics whose NPUs all link to switches and form
 * two groups or more (forest_levels_apply); passed over where a tree edge's route would cross an
 * NPU. */
#define FOREST_PACK_LEVELS FOREST_PACKINGS
#define FOREST_TRIES 21u
uint32_t forest_tries(const topo_t *t, uint64_t size, forest_try_t tries[FOREST_TRIES]);
/* Whether the two-level trees may apply on t: every NPU links to a switch, and grouped by
 * the switch of its fastest such link they form two groups or more. O(L + n); false on
 * out of memory. */
bool forest_levels_apply(const topo_t *t);

/* An All-Reduce of size_bytes on t into *out (coll TN_ALLREDUCE; initialised here, empty
 * on failure): forest_run_halves' two halves joined chunk by chunk
 * (schedule_join_allreduce) and timed on ten/'s engine as the simulator runs them, so
 * out->time_ps is the simulated time; with opts->keep_ties the run's pairs within
 * opts->tie_window_ps are kept (schedule_replay_ties). With the automatic chunking every
 * try of forest_tries is planned and the fastest kept, the first among equals. Errors as
 * forest_run. */
tn_status_t forest_allreduce(const topo_t *t, uint64_t size_bytes, const forest_opts_t *opts,
                             schedule_t *out, tn_err_t *err);

/* The peak memory of a synthesis with the forest for coll (All-Gather, Reduce-Scatter,
 * All-Reduce) of size bytes on t: the whole `tenet synth -a forest` process (packing,
 * planning, lowering, order-proofing, simulating, verifying, writing) on `threads` threads
 * (tn_mem_threads), from what such a process was measured to use per message and per NPU
 * pair (bench_mem). At chunks_per_npu k, the run that keeps k; at 0 (the automatic
 * chunking), the most any count it tries may need (the finest kept).
 *
 * The automatic chunking plans several counts and keeps one; only the kept set is lowered,
 * order-proofed, verified and written. forest_plan_mem_estimate is the planning's part
 * alone (the packing and every try planned, at the finest count). forest_mem_before is
 * what synth/ checks against the cap (tn_mem_cap, one-thread figures) before packing: with
 * k, forest_mem_estimate; at 0, the larger of the planning's figure and the whole run's
 * at the coarsest count (no kept count needs less). Once the forest has kept a count,
 * synth/ checks forest_mem_estimate at it before lowering; so a run that keeps a coarse
 * count is not refused for the finest. */
#define FOREST_MEM_BASE ((uint64_t)12 << 20)
uint64_t forest_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size,
                             uint32_t chunks_per_npu, unsigned threads);
uint64_t forest_plan_mem_estimate(const topo_t *t, tn_coll_t coll, uint64_t size,
                                  uint32_t chunks_per_npu, unsigned threads);
uint64_t forest_mem_before(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t chunks_per_npu,
                           unsigned threads);
/* A set at k chunks per NPU made again at k / 2 (synth/'s gate halving) holds the first set
 * while the second is made whole: the second's run and 11/20 of the first's messages' part
 * (measured, one and two threads: fattree-32-4to1 Reduce-Scatter 1 GiB from 256, leaf-32
 * Reduce-Scatter and All-Reduce, spine-4x8 and fattree-32-4to1 All-Gather 64 MiB from 128,
 * peaks 0.89 to 1.17 times the first's whole run), or the first's run when larger. */
uint64_t forest_mem_halving(const topo_t *t, tn_coll_t coll, uint64_t size, uint32_t k,
                            unsigned threads);

#endif
