/* greedy — the TEN greedy synthesizer (in the spirit of TACOS, MICRO 2024): expand the
 * fabric in time and, at every event, match free links to chunks their far end still
 * lacks. Produces an All-Gather schedule_t; algo/ lowers it (and derives Reduce-Scatter
 * and All-Reduce). Pipeline: topo → ten → greedy → algo. */
#ifndef TENET_GREEDY_H
#define TENET_GREEDY_H

#include "common/common.h"
#include "ten/ten.h"
#include "topo/topo.h"

typedef struct greedy_opts {
  uint64_t seed;           /* tie-breaking seed; same seed, same schedule */
  uint32_t chunks_per_npu; /* 0 = choose automatically for the size */
  /* With chunks_per_npu given: every NPU's own chunk j (of k) enters the plan at
   * j * stagger_ps instead of at 0, so that the plan run backwards (a Reduce-Scatter)
   * completes the chunks in turn rather than all at its end (greedy_allreduce_listed).
   * 0: all at once. */
  uint64_t stagger_ps;
  /* With chunks_per_npu given: the NPUs the plan's chunks start at instead of each at its
   * owner (NULL: owners). Own chunk j of NPU u (chunk u k + j) starts at
   * roots[(j n + u) mod nroots], so that every root starts about n k / nroots chunks and
   * each release of a staggered plan reaches every root. Such a plan is no All-Gather
   * (algo/'s lowering refuses a chunk that starts away from its owner); it serves
   * greedy_allreduce_listed, which reduces every chunk into the NPU it starts at and
   * copies it out from there: an All-Reduce may root a chunk anywhere, and one rooted
   * near the fabric's centre needs less time to gather and spread than one at a corner. */
  const uint32_t *roots;
  uint32_t nroots;
  /* An idle NPU -> NPU link takes, among the first GREEDY_RAREST_SCAN chunks waiting for it
   * that its far end lacks, the one fewest NPUs hold or await (then the earliest arrived,
   * then the seeded hash) instead of the earliest arrived: a chunk that has spread least
   * is the one the plan's end waits for (hypercube-64 All-Gather of 1 MiB at 16 chunks:
   * 4.19 us against 4.32). Such a plan is not its own replay: a link may send a chunk
   * before one that reached its sender earlier, so a set lowered from it keeps the plan's
   * order only once order-proofed against the plan (sim_make_strict_planned). Links into
   * switches choose as without it. */
  bool rarest;
#define GREEDY_RAREST_SCAN 64u
  /* greedy_alltoall: keep in out->ties the pairs its replay saw within this window
   * (schedule_replay_ties), for the simulator's order-proofing; false: none kept. */
  bool keep_ties;
  uint64_t tie_window_ps;
} greedy_opts_t;

/* Plans an All-Gather of size_bytes (gathered output) on t and fills *out (initialised
 * here; caller frees with schedule_free; left empty on failure). Refuses a disconnected
 * fabric (TN_INFEASIBLE), a size below one byte per chunk (TN_INVAL) and a case whose
 * greedy_mem_estimate is over the memory cap (tn_mem_cap; TN_LIMIT, with the figure).
 * out->time_ps is the predicted All-Gather time, equal to what the simulator measures on
 * algo_from_schedule(out, TN_ALLGATHER); a Reduce-Scatter or All-Reduce lowered from it is
 * timed by simulating it. For a Reduce-Scatter on an asymmetric fabric plan on
 * topo_transpose(t) (see algo_allreduce_from_schedules).
 *
 * The plan (TACOS-style link-chunk matching on ten/'s engine): at every instant, after all
 * deliveries of that instant are known, each idle link out of an NPU takes the chunk that
 * arrived earliest at its sender among those its far end neither holds nor awaits; chunks
 * that arrived at the same instant go rarest first (fewest NPUs hold or await them), then
 * by a hash seeded with opts->seed (opts->rarest: rarest first among the first
 * GREEDY_RAREST_SCAN waiting, whenever they arrived). A link into a switch carries one
 * routed message to an NPU beyond it: the earliest-arrived chunk some NPU there lacks, to
 * the one whose last link frees first. With chunks_per_npu 0 the chunking is chosen among
 * 1, 2, 3, ... 8, 16, 32 by predicted time under a deterministic work budget: coarsest first, a
 * finer one is kept only when faster than the best so far by 0.2% (so the choice is within 0.2% of
 * the best of 1..8), a doubling past 8 only by 1% (finer means proportionally more nodes to lower,
 * write, verify and simulate), the search ending at the first doubling that is not, or that close
 * to the bound (when no finer one could be kept). Candidates are planned two at a time on two
 * threads; the choice does not depend on it. (For a Reduce-Scatter or All-Reduce synth/ also times
 * its lowering at 1..8 chunks.) O(n^2 k (degree + log n)) per try. */
tn_status_t greedy_run(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                       schedule_t *out, tn_err_t *err);

/* greedy_run for a plan that will be lowered to coll. The same All-Gather planner; with
 * automatic chunking a Reduce-Scatter or All-Reduce plan uses at least 2 chunks per NPU
 * when the size allows (their halves overlap chunk by chunk, which one chunk per NPU
 * prevents), and the memory cap counts coll's larger lowering. greedy_run is this with
 * TN_ALLGATHER. */
tn_status_t greedy_run_for(const topo_t *t, tn_coll_t coll, uint64_t size_bytes,
                           const greedy_opts_t *opts, schedule_t *out, tn_err_t *err);

/* An All-Reduce from two All-Gather plans of one fabric with the same chunking
 * (greedy_run_for with TN_ALLREDUCE, on a symmetric fabric; rs_plan may be ag_plan, or a
 * plan with stagger_ps) as an explicit reduction schedule (ten.h) that overlaps its
 * halves: each rs_plan transfer as a reduction (receiver to sender, up the chunk's tree)
 * and each ag_plan transfer as a copy, list-scheduled work-conserving: whenever a link is
 * idle it takes, among the transfers whose dependencies are met, the one that comes first
 * in rs_plan run backwards and then ag_plan forwards (for one plan, what
 * algo_from_schedule(plan, TN_ALLREDUCE) numbers its SENDs by, 2 plan->time_ps + 1 ps
 * long) — or, with path_permille w > 0 (at most 1000), the least of (1000 - w) times that
 * place plus w times (P - p), p the longest chain of transfers from it to the end (links'
 * serialization and latency, reductions' COMPs) and P the longest of all, so that
 * transfers with more still behind them go earlier. A chunk reduced early is then copied
 * out while others still reduce. Times follow the simulator's model (tn_xfer_ps per link,
 * the link's latency, a reduction's COMP SCHED_COMP_PS after its arrival, serialised per
 * NPU and chunk); out->time_ps is the schedule's end, and its transfers are in start order
 * (algo_from_schedule numbers the SENDs so; order-proofing keeps that order). Fills *out
 * (initialised here, empty on failure). TN_INVAL unless every plan transfer carries one
 * chunk over one link whose reverse link is the route back (direct-connect fabrics: the
 * greedy's plans there), the plans agree in NPUs, chunking, size and length, start every
 * chunk at one NPU (both from owners, or both from the same roots) and path_permille is at
 * most 1000; TN_LIMIT past 2^30 transfers. O(T log T) time and O(T)
 * memory in the plans' T transfers. */
tn_status_t greedy_allreduce_listed(const topo_t *t, const schedule_t *rs_plan,
                                    const schedule_t *ag_plan, uint32_t path_permille,
                                    schedule_t *out, tn_err_t *err);

/* The peak memory of a synthesis of size_bytes with the greedy at k chunks per NPU lowered
 * to coll (All-Gather, Reduce-Scatter, All-Reduce): the whole `tenet synth -a greedy`
 * process (planning, lowering, order-proofing and simulating the set, verifying and
 * writing it), as measured per planned transfer (n (n - 1) k of them) at 32 to 256 NPUs,
 * on `threads` threads (tn_mem_threads); see bench_mem. Pieces (size / (n k)) that cross a
 * link within GREEDY_PAIR_WINDOW_PS cost more per message (order-proofing's pairs).
 * `searched`: a Reduce-Scatter or All-Reduce at automatic chunking, which synth/ also makes
 * at its other chunkings (greedy_reduction); false with the chunking given. greedy_run_for
 * refuses and chooses a chunking by its one-thread figure (synth/ runs on one thread what
 * fits only so). */
#define GREEDY_MEM_BASE ((uint64_t)9 << 20)
#define GREEDY_MEM_NEAR 150u         /* B per message crossing a link in the window */
#define GREEDY_MEM_NEAR_SWITCHED 60u /* the same on a fabric with switches */
#define GREEDY_PAIR_WINDOW_PS 32000u /* order-proofing's window: sim/'s (synth/ checks) */
uint64_t greedy_mem_estimate(const topo_t *t, uint64_t size_bytes, uint32_t k, tn_coll_t coll,
                             bool searched, unsigned threads);

/* Plans an All-to-All of size_bytes (each NPU's send buffer, SIZE/n of it to every NPU)
 * on t into *out: an explicit schedule (coll TN_ALLTOALL, copies only) whose pieces are
 * routed over load-balanced paths of logical edges and relayed by NPUs (see
 * greedy/alltoall.c). opts->chunks_per_npu, when not 0, is the pieces per (source,
 * destination) block; else the fastest of 1, 2, 4, 8 is kept (of those within the memory
 * cap; see greedy_alltoall_mem_estimate). Each count is a list schedule that relays the
 * piece with the longest flight ahead first, the set keeping that order. The kept count is
 * timed by schedule_replay, so out->time_ps is what the simulator measures on
 * algo_from_schedule(out, TN_ALLTOALL).
 * Errors: TN_INVAL for fewer than 2 NPUs or less than a byte per piece, TN_INFEASIBLE for a
 * disconnected fabric, TN_LIMIT over the memory cap. O(m n^3) for the paths plus the replay. */
tn_status_t greedy_alltoall(const topo_t *t, uint64_t size_bytes, const greedy_opts_t *opts,
                            schedule_t *out, tn_err_t *err);
/* The peak memory of a synthesis with greedy_alltoall (the whole `tenet synth -c alltoall -a
 * greedy` process) whose kept set has `pieces` per block (0: the largest of 1, 2, 4, 8 its
 * sweep plans), from the paths it routes for them (the same paths, at the first growth
 * rate): their transfers, the links those cross and the pieces. greedy_alltoall checks
 * every count it plans the same way, on its own paths, before building it: the first
 * (or the one asked for) over the cap (tn_mem_check) is refused, a finer one is not
 * planned; and before routing, the first count at its least transfers (every piece
 * crosses at least its hop distance), the figure returned here when that alone is over
 * the cap. tie_window_ps is the window of the pairs the run keeps (greedy_opts_t's, UINT64_MAX
 * for none): pieces that cross a link within it cost more. On `threads` threads
 * (tn_mem_threads: a second one holds more); greedy_alltoall refuses by its one-thread
 * figure. Builds the fabric's routes and logical edges (O(n^2) memory) and routes once
 * (O(m n) Dijkstras); 0 when they cannot be built. */
uint64_t greedy_alltoall_mem_estimate(const topo_t *t, uint64_t size_bytes, uint32_t pieces,
                                      uint64_t tie_window_ps, unsigned threads);
/* The figure greedy_alltoall's check gave the set it kept, from what that set shows: its
 * pieces per block and its transfers (the set's messages). The sweep may keep a count
 * planned at its second growth rate (random4reg-32 64 MiB: 49,230 transfers there against
 * 41,085 at the first), which greedy_alltoall_mem_estimate does not route: here the count
 * is routed at the first rate, then at the second when the first's transfers differ; the
 * first rate's figure when neither matches. For bench_mem, which measures the peak of a
 * run on `threads` threads and compares it with the estimate of the set that run kept. */
uint64_t greedy_alltoall_kept_mem(const topo_t *t, uint64_t size_bytes, uint32_t pieces,
                                  uint64_t transfers, uint64_t tie_window_ps, unsigned threads);

#endif
